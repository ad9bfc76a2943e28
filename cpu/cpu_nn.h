/*
 * cpu_nn.h — CPU kernels of the nn ops (internal): the convolution loops
 * the CPU's conv and conv_backward entries are built from (im2col,
 * col2im, bias; the entries are in cpu_conv_entry.c, their contracts in
 * foundry/backend.h), and the redraw step of the truncated-normal
 * initialiser.
 *
 * Convolution, pooling (cpu_pool.c) and embedding (cpu_embedding.c) reach
 * the CPU through the backend table.  The initialiser is still called
 * directly by its front end (nn/init.c), which accepts CPU tensors
 * only.  Every array here is dense, row-major, and (where a dtype
 * `dt` is taken) holds float for TM_F32 or double for TM_F64.  Kernels
 * that split work over the thread pool give every output element one
 * writer and a fixed summation order, so results do not depend on the
 * thread count.
 */
#ifndef FOUNDRY_CPU_NN_H
#define FOUNDRY_CPU_NN_H

#include "foundry/backend.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------- convolution */

/* x is (B, C, H, W) (B = nb images), with R = C*KH*KW and L = OH*OW:
 *   wide false: cols is (B, R, L)
 *   wide true:  cols is (R, B, L), i.e. (R, B*L), image b in columns
 *               [b*L, (b+1)*L)
 * Row r = (c*KH + i)*KW + j of image b holds, at l = oy*OW + ox,
 * x[b, c, oy*SH - PH + i*DH, ox*SW - PW + j*DW] (0 outside x).  Split by
 * (image, row). */
void tm__conv_im2col(const tm_conv_geom *q, tm_dtype dt, const void *x,
                     void *cols, int64_t nb, bool wide);

/* dcols is (B, R, L), dx is (B, C, H, W): dx += every dcols entry at the
 * position im2col took it from, added in row order r.  Split by
 * (image, channel) plane. */
void tm__conv_col2im(const tm_conv_geom *q, tm_dtype dt, const void *dcols,
                     void *dx, int64_t nb);

/* y is (N, OC, L), bias is (OC): y[n, o, :] += bias[o].  Split by
 * (n, o) row. */
void tm__conv_bias_add(const tm_conv_geom *q, tm_dtype dt, void *y,
                       const void *bias);

/* g is (N, OC, L), db is (OC): db[o] = sum of g[n, o, l] over n and l,
 * accumulated in double, n-major, rounded once.  Split by o. */
void tm__conv_bias_grad(const tm_conv_geom *q, tm_dtype dt, const void *g,
                        void *db);

/* g is (B, OC, L), gt is (OC, B, L): gt[o, b, :] = g[b, o, :] (es bytes an
 * element).  The dw product reads the chunk's images side by side. */
void tm__conv_regroup(const void *g, void *gt, int64_t nb, int64_t oc,
                      int64_t l, size_t es);

/* ------------------------------------------------- truncated normal init */

/* v is (N): how many v[i] are not in [a, b] (NaN is not). */
int64_t tm__trunc_count_outside(const double *v, int64_t n, double a,
                                double b);

/* v is (N), m is (M) with M = tm__trunc_count_outside(v, n, a, b): the
 * k-th v[i] not in [a, b], in order of i, becomes m[k]. */
void tm__trunc_replace_outside(double *v, int64_t n, double a, double b,
                               const double *m);

#endif
