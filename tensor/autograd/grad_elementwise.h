/*
 * grad_elementwise.h — autograd recording for the elementwise ops
 * (internal).  Each function is called by its op's front end once the
 * output exists; it records a node when grad mode is on and an input
 * requires grad (and the output is a float tensor), and otherwise does
 * nothing.  On failure the error is set and the caller frees `out`.
 */
#ifndef FOUNDRY_GRAD_ELEMENTWISE_H
#define FOUNDRY_GRAD_ELEMENTWISE_H

#include "../core/tensor_impl.h"

/* out = op(t) with parameters p0, p1 (as passed to the backend). */
tm_status tm__grad_unary(tm_unary_op op, const tm_tensor *t, tm_tensor *out,
                         double p0, double p1);
/* out = a op b. */
tm_status tm__grad_binary(tm_binary_op op, const tm_tensor *a,
                          const tm_tensor *b, tm_tensor *out);
/* out = t op s, or s op t when rev. */
tm_status tm__grad_binary_scalar(tm_binary_op op, const tm_tensor *t,
                                 double s, bool rev, tm_tensor *out);
/* out = min(max(t, lo), hi) (lo or hi may be NULL). */
tm_status tm__grad_clamp_tensor(const tm_tensor *t, const tm_tensor *lo,
                                const tm_tensor *hi, tm_tensor *out);
/* out = cond ? a : b. */
tm_status tm__grad_where(const tm_tensor *cond, const tm_tensor *a,
                         const tm_tensor *b, tm_tensor *out);
/* out = mask ? value : t. */
tm_status tm__grad_masked_fill(const tm_tensor *t, const tm_tensor *mask,
                               tm_tensor *out);
/* out = tril(t, k) or triu(t, k). */
tm_status tm__grad_tri(const tm_tensor *t, int64_t k, bool upper,
                       tm_tensor *out);

#endif
