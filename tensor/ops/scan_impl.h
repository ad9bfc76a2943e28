/*
 * scan_impl.h — the running sums and log-sum-exps from the end of a dim
 * that the scans' gradients are written with (internal; ops/scan.c).
 */
#ifndef FOUNDRY_SCAN_IMPL_H
#define FOUNDRY_SCAN_IMPL_H

#include "../core/tensor_impl.h"

/* out[i] = sum of t[j] for j >= i along dim (float t); records no
 * gradient.  A new reference, or NULL with the error set. */
tm_tensor *tm__cumsum_reverse(const tm_tensor *t, int dim);
/* out[i] = log(sum of exp(t[j]) for j >= i) along dim (float t); records
 * no gradient. */
tm_tensor *tm__logcumsumexp_reverse(const tm_tensor *t, int dim);

#endif
