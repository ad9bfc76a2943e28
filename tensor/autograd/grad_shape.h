/*
 * grad_shape.h — backward functions of views, copies, indexing and shaping
 * ops (internal; implemented in grad_shape.c).
 *
 * The front ends record with tm__ag_record: after computing `out` they
 * pass it through, with the node's name, backward function, the integer
 * parameters it needs (copied to n->i) and an optional tensor to save.
 */
#ifndef FOUNDRY_GRAD_SHAPE_H
#define FOUNDRY_GRAD_SHAPE_H

#include "autograd_impl.h"

/* Records `name` on out when grad mode is on and one of ins[nin] requires
 * grad; n->i[0 .. ni) = ip, and `save` (may be NULL) goes to slot 0.
 * Returns out, or NULL with out freed and the error set (out NULL: NULL). */
tm_tensor *tm__ag_record(tm_tensor *out, int nin,
                         const tm_tensor *const *ins, const char *name,
                         tm__backward_fn fn, const int64_t *ip, int ni,
                         const tm_tensor *save);
/* The same for a one-input op. */
tm_tensor *tm__ag_record1(tm_tensor *out, const tm_tensor *t,
                          const char *name, tm__backward_fn fn,
                          const int64_t *ip, int ni);

/* as_strided's recording: saves the geometry of out and t (not t). */
tm_tensor *tm__ag_record_as_strided(tm_tensor *out, const tm_tensor *t);

/* Views. */
tm_status tm__gb_transpose(tm__node *n, const tm_tensor *g, tm_tensor **gi);
tm_status tm__gb_permute(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* view, reshape, flatten, squeeze, unsqueeze: g reshaped back */
tm_status tm__gb_reshape(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* i = {dim, start, step} */
tm_status tm__gb_slice(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* i = {dim, index} */
tm_status tm__gb_select(tm__node *n, const tm_tensor *g, tm_tensor **gi);
tm_status tm__gb_expand(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* saved 0: an I64 CPU tensor [out offset, out strides..., in offset, in
 * strides...] (geometry only, so later writes to the storage are fine) */
tm_status tm__gb_as_strided(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* clone, contiguous: g itself; to_dtype: g converted to the input dtype;
 * to (device): i = {input device} */
tm_status tm__gb_clone(tm__node *n, const tm_tensor *g, tm_tensor **gi);
tm_status tm__gb_to_dtype(tm__node *n, const tm_tensor *g, tm_tensor **gi);
tm_status tm__gb_to_device(tm__node *n, const tm_tensor *g, tm_tensor **gi);

/* Indexing and shaping; i[0] = dim, saved 0 = index. */
tm_status tm__gb_gather(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* inputs {t, src} (scatter_value: {t}) */
tm_status tm__gb_scatter(tm__node *n, const tm_tensor *g, tm_tensor **gi);
tm_status tm__gb_scatter_add(tm__node *n, const tm_tensor *g,
                             tm_tensor **gi);
tm_status tm__gb_index_select(tm__node *n, const tm_tensor *g,
                              tm_tensor **gi);
/* n inputs; i[0] = dim */
tm_status tm__gb_cat(tm__node *n, const tm_tensor *g, tm_tensor **gi);
tm_status tm__gb_stack(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* i[k] = padding before dim k (negative: cropped) */
tm_status tm__gb_pad(tm__node *n, const tm_tensor *g, tm_tensor **gi);
/* i[k] = repeats[k] (g has nrep dims) */
tm_status tm__gb_repeat(tm__node *n, const tm_tensor *g, tm_tensor **gi);

/* Zeros of shape/dt on g's device with g (of the same ndim) copied into
 * the window starting at start[] with steps step[] (either may be NULL:
 * 0 / 1).  New reference. */
tm_tensor *tm__gsh_place(const tm_tensor *g, const int64_t *shape, int ndim,
                        tm_dtype dt, const int64_t *start,
                        const int64_t *step);

#endif
