/*
 * cpu_fill.h — fills of host tensors that the front ends call directly
 * (internal): the values of arange, linspace and eye, and the keep-mask
 * of tril/triu.  They have no backend-table entry; their front ends build
 * the tensor on the CPU (and move it to another device when asked).
 */
#ifndef FOUNDRY_CPU_FILL_H
#define FOUNDRY_CPU_FILL_H

#include "../tensor/core/tensor_impl.h"

/* dst (1-D, contiguous) [i] = start + i * step, computed in double and
 * rounded once to dst's dtype. */
void tm__cpu_arange(const tm_buf *dst, double start, double step);
/* dst (1-D, contiguous, n elements) [i] = start + i * (end - start) /
 * (n - 1), and exactly end at i = n - 1 (n > 1). */
void tm__cpu_linspace(const tm_buf *dst, double start, double end);
/* dst (2-D [n, m], contiguous, already zero) gets 1 on its diagonal. */
void tm__cpu_eye(const tm_buf *dst);
/* dst (BOOL [rows, cols], contiguous) [i, j] = j - i >= k when upper,
 * else j - i <= k: the elements tril/triu keep. */
void tm__cpu_tri_mask(const tm_buf *dst, int64_t k, bool upper);

#endif
