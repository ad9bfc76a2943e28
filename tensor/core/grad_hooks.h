/*
 * grad_hooks.h — how the core's and the op front ends' ops record
 * themselves for autograd (internal).
 *
 * One hook per op (or op family).  The front end calls it once the result
 * exists; the hook records the node when grad mode is on, the result has
 * a float dtype and an input requires grad, and otherwise does nothing.
 * Each hook is defined beside the op's backward rule, in
 * tensor/autograd/<front-end file>_backward.c (the hooks of view.c in
 * view_backward.c, of unary.c in unary_backward.c, ...): this header is
 * the only place where the lower layers name the autograd layer above
 * them, and it names functions only.
 *
 * Every hook takes the result first and returns it, or NULL with the
 * error set and the result freed; a NULL result passes through, so a
 * front end can end with `return tm__grad_exp(tm_new_result(...), ...)`.
 * Inputs are borrowed.
 */
#ifndef FOUNDRY_GRAD_HOOKS_H
#define FOUNDRY_GRAD_HOOKS_H

#include "tensor_impl.h"

/* ------------------------------------------------------ core/view.c */

/* out is t with another shape, same elements (view, reshape, squeeze,
 * unsqueeze; `name` is the node's name). */
tm_tensor *tm__grad_reshape(tm_tensor *out, const tm_tensor *t,
                            const char *name);
tm_tensor *tm__grad_transpose(tm_tensor *out, const tm_tensor *t, int dim0,
                              int dim1);
/* dims: t's ndim wrapped dims, out dim i = t dim dims[i]. */
tm_tensor *tm__grad_permute(tm_tensor *out, const tm_tensor *t,
                            const int *dims);
/* out = t's elements start, start + step, ... along dim (slice, split;
 * `name` is the node's name). */
tm_tensor *tm__grad_slice(tm_tensor *out, const tm_tensor *t,
                          const char *name, int dim, int64_t start,
                          int64_t step);
tm_tensor *tm__grad_select(tm_tensor *out, const tm_tensor *t, int dim,
                           int64_t index);
tm_tensor *tm__grad_expand(tm_tensor *out, const tm_tensor *t);
tm_tensor *tm__grad_as_strided(tm_tensor *out, const tm_tensor *t);

/* ------------------------------------------------------ core/copy.c */

/* out is t's values in out's dtype (clone, contiguous, to_dtype). */
tm_tensor *tm__grad_to_dtype(tm_tensor *out, const tm_tensor *t,
                             const char *name);
/* out is t copied from device `from` to out's device. */
tm_tensor *tm__grad_to_device(tm_tensor *out, const tm_tensor *t,
                              tm_device from);

/* -------------------------------------------------------- ops/unary.c */

tm_tensor *tm__grad_unary(tm_tensor *out, tm_unary_op op, const tm_tensor *t,
                          double p0, double p1);

/* ------------------------------------------------------- ops/binary.c */

tm_tensor *tm__grad_binary(tm_tensor *out, tm_binary_op op,
                           const tm_tensor *a, const tm_tensor *b);
/* out = t op s, or s op t when rev. */
tm_tensor *tm__grad_binary_scalar(tm_tensor *out, tm_binary_op op,
                                  const tm_tensor *t, double s, bool rev);
/* out = min(max(t, lo), hi) (lo or hi may be NULL). */
tm_tensor *tm__grad_clamp_tensor(tm_tensor *out, const tm_tensor *t,
                                 const tm_tensor *lo, const tm_tensor *hi);

/* -------------------------------------------------------- ops/where.c */

tm_tensor *tm__grad_where(tm_tensor *out, const tm_tensor *cond,
                          const tm_tensor *a, const tm_tensor *b);
/* out = mask ? value : t. */
tm_tensor *tm__grad_masked_fill(tm_tensor *out, const tm_tensor *t,
                                const tm_tensor *mask);
/* out = tril(t, k), or triu(t, k) when upper. */
tm_tensor *tm__grad_tri(tm_tensor *out, const tm_tensor *t, int64_t k,
                        bool upper);

/* ------------------------------------------------------- ops/reduce.c */

/* out = op over the dims d of t with red[d] set (keepdim or not). */
tm_tensor *tm__grad_reduce(tm_tensor *out, tm_reduce_op op,
                           const tm_tensor *t, const bool *red, double p);
/* values, indices = max/min of t along dim d (wrapped). */
tm_tensor *tm__grad_minmax_dim(tm_tensor *values, bool is_max,
                               const tm_tensor *t, int d, bool keepdim,
                               const tm_tensor *indices);
tm_tensor *tm__grad_cumsum(tm_tensor *out, const tm_tensor *t, int d);

/* --------------------------------------------------------- ops/scan.c */

/* out = cumprod / logcumsumexp of t along dim d (wrapped). */
tm_tensor *tm__grad_cumprod(tm_tensor *out, const tm_tensor *t, int d);
tm_tensor *tm__grad_logcumsumexp(tm_tensor *out, const tm_tensor *t, int d);
/* values, indices = cummax (is_max) or cummin of t along dim d. */
tm_tensor *tm__grad_cummax(tm_tensor *values, bool is_max,
                           const tm_tensor *t, int d,
                           const tm_tensor *indices);

/* --------------------------------------------------------- ops/sort.c */

/* values, indices = sort or topk of t along dim (`name` is the node's
 * name; values keep t's dims). */
tm_tensor *tm__grad_sort(tm_tensor *values, const char *name,
                         const tm_tensor *t, int dim,
                         const tm_tensor *indices);

/* ------------------------------------------------------- ops/matmul.c */

tm_tensor *tm__grad_matmul(tm_tensor *out, const tm_tensor *a,
                           const tm_tensor *b);
tm_tensor *tm__grad_linear(tm_tensor *out, const tm_tensor *x,
                           const tm_tensor *w, const tm_tensor *bias);

/* --------------------------------------------------------- ops/rows.c */

tm_tensor *tm__grad_softmax(tm_tensor *out, const tm_tensor *t, int dim,
                            bool log);
tm_tensor *tm__grad_norm(tm_tensor *out, const tm_tensor *x,
                         const tm_tensor *weight, const tm_tensor *bias,
                         double eps, bool rms);

/* -------------------------------------------------------- ops/index.c */

tm_tensor *tm__grad_gather(tm_tensor *out, const tm_tensor *t, int dim,
                           const tm_tensor *index);
/* out = t with src (NULL: a value) written (or added) at index. */
tm_tensor *tm__grad_scatter(tm_tensor *out, const tm_tensor *t, int dim,
                            const tm_tensor *index, const tm_tensor *src,
                            bool add);
tm_tensor *tm__grad_index_select(tm_tensor *out, const tm_tensor *t,
                                 int dim, const tm_tensor *index);
/* out = scatter_reduce(t, dim, index, src, kind, include_self) (ops/
 * scatter_reduce.c; kind a tm_scatter_reduce_kind). */
tm_tensor *tm__grad_scatter_reduce(tm_tensor *out, const tm_tensor *t,
                                   int dim, const tm_tensor *index,
                                   const tm_tensor *src, int kind,
                                   bool include_self);

/* -------------------------------------------------------- ops/shape.c */

tm_tensor *tm__grad_cat(tm_tensor *out, tm_tensor *const *ts, int n,
                        int dim);
tm_tensor *tm__grad_stack(tm_tensor *out, tm_tensor *const *ts, int n,
                          int dim);
/* before[d]: the padding before t's dim d (negative: cropped). */
tm_tensor *tm__grad_pad(tm_tensor *out, const tm_tensor *t,
                        const int64_t *before);
tm_tensor *tm__grad_repeat(tm_tensor *out, const tm_tensor *t,
                           const int64_t *repeats, int nrep);

/* --------------------------------------------------------- ops/diag.c */

/* out is the diagonal `offset` of t's dims dim1, dim2 (wrapped). */
tm_tensor *tm__grad_diagonal(tm_tensor *out, const tm_tensor *t,
                             int64_t offset, int dim1, int dim2);

#endif
