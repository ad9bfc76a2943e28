/*
 * quant_kernels.h — the CPU backend's quantized kernels (cpu/quant/):
 * activation quantizers, block dot products per ISA, the threaded matmul
 * and its backward, and the three backend entries.  Not installed.
 */
#ifndef FOUNDRY_QUANT_KERNELS_H
#define FOUNDRY_QUANT_KERNELS_H

#include "../../quantize/quant_impl.h"
#include "foundry/backend.h"

/* The CPU backend's entries (registered in cpu/cpu_backend.c). */
tm_status tm__cpu_quantize(tm_ctx *ctx, const tm_buf *dst, const tm_buf *src);
tm_status tm__cpu_qmatmul(tm_ctx *ctx, const tm_buf *y, const tm_buf *x,
                          const tm_buf *w, bool accumulate);
tm_status tm__cpu_qmatmul_backward(tm_ctx *ctx, const tm_buf *dx,
                                   const tm_buf *dy, const tm_buf *w,
                                   bool accumulate);

/* s = sum over the n values (n a multiple of the block) of one weight row
 * `w` of dtype `wt` times one activation row `a` of type
 * tm__qtraits_of(wt)->act: per block, the integer dot product scaled by
 * both blocks' scales, summed in block order.  The reference (portable C,
 * the oracle for every ISA's kernel). */
float tm__qdot_ref(tm_dtype wt, const void *w, const void *a, int64_t n);

#endif
