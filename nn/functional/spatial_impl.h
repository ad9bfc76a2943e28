/* spatial_impl.h (internal) — what the composed spatial ops (adaptive
 * pooling, unpooling, interpolation, pad modes; nn/functional/) share:
 * small host-built index and weight tensors, and resampling one dim as
 * a weighted sum of gathered taps.  Every op built on these is made of
 * public ops, so autograd and every device come with them. */
#ifndef FOUNDRY_SPATIAL_IMPL_H
#define FOUNDRY_SPATIAL_IMPL_H

#include "foundry/nn_functional.h"

#include "../../tensor/core/tensor_impl.h"

/* An I64 tensor [n] holding v, on dev (a new reference). */
tm_tensor *tm__host_i64(const int64_t *v, int64_t n, tm_device dev);

/* A tensor of shape [n, 1 x ones] holding w (n values), in dtype dt on
 * dev (a new reference). */
tm_tensor *tm__host_column(const double *w, int64_t n, int ones,
                           tm_dtype dt, tm_device dev);

/* x resampled along dim d to length o: out[.., i, ..] = sum over
 * t < k of w[i*k + t] * x[.., idx[i*k + t], ..], or (w NULL, k 1) the
 * plain selection x[.., idx[i], ..].  idx entries are in range.  A new
 * reference. */
tm_tensor *tm__resample_dim(const tm_tensor *x, int d, int64_t o, int64_t k,
                            const int64_t *idx, const double *w);

#endif
