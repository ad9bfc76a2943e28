/*
 * cpu_nn.h — the convolution loops the CPU's conv and conv_backward
 * entries are built from (internal): im2col, col2im, the bias and its
 * gradient, and the regrouping of the output gradient.
 *
 * The nn front ends (nn/functional/conv.c, pool.c, embedding.c) reach
 * the CPU only through the backend table: the conv, conv_backward, pool,
 * pool_backward and embedding_backward entries (contracts in
 * foundry/backend.h, CPU versions in cpu_conv_entry.c, cpu_pool.c and
 * cpu_embedding.c).  Those entries chunk the images, run the products
 * with the CPU's gemm entry and call the loops below; nothing outside
 * cpu/ includes this header.
 *
 * Every array here is dense, row-major, and holds float for TM_F32 or
 * double for TM_F64 (the entries receive only those dtypes).  The loops
 * split their work over the thread pool so that every output element has
 * one writer and a fixed summation order: results do not depend on the
 * thread count.
 */
#ifndef FOUNDRY_CPU_NN_H
#define FOUNDRY_CPU_NN_H

#include "foundry/backend.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* x is (B, C, D, H, W) (B = nb images; 2-D has D = 1), with
 * R = C*KD*KH*KW and L = OD*OH*OW:
 *   wide false: cols is (B, R, L)
 *   wide true:  cols is (R, B, L), i.e. (R, B*L), image b in columns
 *               [b*L, (b+1)*L)
 * Row r = ((c*KD + l)*KH + i)*KW + j of image b holds, at
 * (oz*OH + oy)*OW + ox, x[b, c, oz*SD - PD + l*DD, oy*SH - PH + i*DH,
 * ox*SW - PW + j*DW] (0 outside x).  Split by (image, row). */
void tm__conv_im2col(const tm_conv_geom *q, tm_dtype dt, const void *x,
                     void *cols, int64_t nb, bool wide);

/* dcols is (B, R, L), dx is (B, C, D, H, W): dx += every dcols entry at
 * the position im2col took it from, added in row order r.  Split by
 * (image, channel) volume. */
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

#endif
