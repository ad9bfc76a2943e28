/*
 * conv_depthwise.h — the CPU's direct F32 depthwise convolution (groups
 * = C = OC: one input and one output channel per group; also M output
 * channels per group, OC = M*C, each its own plane), any stride,
 * padding and dilation, 1 to 3 spatial dims (internal; the conv entries in
 * cpu_conv_entry.c try it before the implicit GEMM, whose one-row panels
 * waste most of each product on a depthwise layer).
 *
 * Each (image, channel) plane is copied once into a zero-padded frame
 * that covers every read (so negative padding and output sizes beyond the
 * padding's need no special case), with each row split into SW phases
 * (padded column k*SW + p at phase p, index k): the tap j of output column
 * ox then reads phase (j*DW) % SW at index ox + (j*DW) / SW, a contiguous
 * run for any stride.  The output columns are computed in blocks of
 * DW_BLOCK accumulators (the frame's rows are long enough for whole
 * blocks; only the stored part of the last block is cut).
 *
 *   forward   y[o] = bias + the taps in (kz, i, j) order; the frame of an
 *             input plane serves its M output planes
 *   dx        stride 1 in every dim: the same kernel on g, padded by
 *             DIL*(K-1) - P (possibly negative), with the kernel flipped,
 *             the M output planes' sums added in order; otherwise the
 *             taps scattered into a padded dx frame (the M planes, output
 *             rows and taps in order), then the frame's interior copied out
 *   dw, db    per output channel, images in order: each tap's products
 *             summed in DW_BLOCK lanes over the rows, the lanes added in
 *             order
 *
 * Work is split by input plane for y and dx and by output channel for dw
 * and db, so every output element has one writer and a summation order
 * fixed by the shapes: the results do not depend on the thread count.
 * The order differs from the other paths: results agree to F32 rounding
 * relative to sum |w| |x|.
 */
#ifndef FOUNDRY_CONV_DEPTHWISE_H
#define FOUNDRY_CONV_DEPTHWISE_H

#include "../../tensor/core/tensor_impl.h"

#include <stdbool.h>

/* Whether the kernel takes this convolution (F32, G = C, non-empty,
 * positive strides and dilations, a plane's padded frame of reasonable
 * size) in the forward (OC = C) or the backward (OC = M*C, a few outputs
 * per input channel; C = 1 is an ordinary convolution).  The kernels
 * compute any M; the limits are where they are faster than the GEMM
 * paths. */
bool tm__conv_dw_ok(const tm_conv_geom *q, tm_dtype dt, bool backward);

/* The conv / conv_backward entries' contracts (foundry/backend.h) for the
 * convolutions tm__conv_dw_ok accepts; x, w, y, g, dx, dw, db are dense
 * F32 host arrays (NULL: not wanted / absent bias; x is read only for dw,
 * w only for dx). */
tm_status tm__conv_dw_forward(const tm_conv_geom *q, float *y,
                              const float *x, const float *w,
                              const float *bias);
tm_status tm__conv_dw_backward(const tm_conv_geom *q, float *dx, float *dw,
                               float *db, const float *g, const float *x,
                               const float *w);

#endif
