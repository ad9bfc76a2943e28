/*
 * conv_igemm.h — the CPU's implicit-GEMM convolution for F32 with unit
 * strides (internal; used by the conv entries in cpu_conv_entry.c, which
 * keep the im2col path for everything else).
 *
 * The input is copied once into a zero-padded layout (each image's planes
 * grown by the padding), and an output position is numbered in that
 * padded frame: l' = (oz*Hp + oy)*Wp + ox.  With unit strides the patch
 * element k = (c, kz, i, j) of output l' then sits at xp[koff[k] + l'],
 * koff[k] = c*Dp*Hp*Wp + kz*DD*Hp*Wp + i*DH*Wp + j*DW: the im2col matrix's
 * row k is a contiguous run of xp, so the GEMM's B panels are packed
 * straight from xp (a copy of NR contiguous values per row) and the
 * GEMM's micro-kernels and blocking run on them.  The frame's extra
 * columns (ox >= OW, oy >= OH) are computed and dropped when the tile is
 * written out, where the bias is added.
 *
 *   forward   y = w · patches(x)
 *   dx        the same kernel on g, padded by DIL*(K-1) - P, with the
 *             weight flipped and its channel dims swapped (the transposed
 *             convolution, exact for unit strides)
 *   dw, db    dw[o, k] = sum over images and l' of gp[o, l'] *
 *             xp[koff[k] + l'] (gp: g in the padded frame, 0 in its extra
 *             columns); db is one more column of that product against
 *             ones.  Summed per fixed chunk of images, then the chunks in
 *             order.
 *
 * Work is split by (image, column block) for y and dx and by image chunk
 * for dw (and, when there are fewer chunks than threads, by column range
 * of a chunk); each output tile is summed in an order fixed by the
 * shapes alone, so the results do not depend on the thread count.  Accumulation order differs from the im2col path: results
 * agree to F32 rounding relative to sum |w| |x|.
 */
#ifndef FOUNDRY_CONV_IGEMM_H
#define FOUNDRY_CONV_IGEMM_H

#include "../../tensor/core/tensor_impl.h"

#include <stdbool.h>

/* Whether the forward kernel takes this convolution (F32, unit strides,
 * non-empty, scratch of reasonable size). */
bool tm__conv_igemm_fwd_ok(const tm_conv_geom *q, tm_dtype dt);
/* Whether the backward kernel takes it with these gradients wanted (also:
 * for dx, padding <= DIL*(K-1) in every dim). */
bool tm__conv_igemm_bwd_ok(const tm_conv_geom *q, tm_dtype dt, bool want_dx,
                           bool want_dw, bool want_db);

/* The conv / conv_backward entries' contracts (foundry/backend.h), for
 * the convolutions the _ok functions accept; x, weight, y, g, dx, dw, db
 * are dense F32 host arrays (NULL: not wanted / absent bias). */
tm_status tm__conv_igemm_forward(const tm_conv_geom *q, float *y,
                                 const float *x, const float *w,
                                 const float *bias);
tm_status tm__conv_igemm_backward(const tm_conv_geom *q, float *dx,
                                  float *dw, float *db, const float *g,
                                  const float *x, const float *w);

#endif
