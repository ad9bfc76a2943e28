/*
 * qmatmul.h — shared by the quantized entries (quant_entry.c) and their
 * drivers (qmatmul.c, qmatmul_backward.c).  Internal to cpu/quant/.
 */
#ifndef FOUNDRY_QMATMUL_H
#define FOUNDRY_QMATMUL_H

#include "qkern.h"

/* The byte address of row r of a checked 2-D buffer, float or quantized. */
char *tm__qbuf_row(const tm_buf *b, int64_t r);
/* Checks that b is a present 2-D F32 buffer with a unit last stride. */
tm_status tm__qcheck_f32(const char *fn, const char *what, const tm_buf *b);
/* Checks that b is a present 2-D quantized buffer (a weight format when
 * `weight`) of whole blocks, rows starting on blocks. */
tm_status tm__qcheck_q(const char *fn, const char *what, const tm_buf *b,
                       bool weight);

/* The drivers, on checked buffers of fitting shapes. */
tm_status tm__qmatmul_run(const tm_buf *y, const tm_buf *x, const tm_buf *w,
                          bool accumulate);
tm_status tm__qmatmul_backward_run(const tm_buf *dx, const tm_buf *dy,
                                   const tm_buf *w, bool accumulate);

/* dx[i] = dx[i] + c[0] * b[0][i] + ... + c[nr-1] * b[nr-1][i] for i < n,
 * left to right without fused multiply-adds (so the sum equals nr
 * separate axpys in order, on every ISA); b rows `bstride` floats apart,
 * 1 <= nr <= 4. */
typedef void (*tm__qaxpy_fn)(float *dx, const float *b, int64_t bstride,
                             const float *c, int nr, int64_t n);
void tm__qaxpy_portable(float *dx, const float *b, int64_t bstride,
                        const float *c, int nr, int64_t n);
void tm__qaxpy_avx2(float *dx, const float *b, int64_t bstride,
                    const float *c, int nr, int64_t n);
void tm__qaxpy_neon(float *dx, const float *b, int64_t bstride,
                    const float *c, int nr, int64_t n);
/* The one this CPU's family runs. */
tm__qaxpy_fn tm__qaxpy_current(void);

#endif
