/* conv_impl.h — what the convolution front ends (conv.c,
 * conv_transpose.c) share; defined in conv_geom.c.
 *
 * Internally every convolution has 3 spatial slots (depth, height,
 * width): an nd-dim one uses the last nd slots and leaves the leading
 * ones at size 1, stride 1, padding 0, dilation 1, which is how
 * tm_conv_geom describes 1-D and 2-D convolutions. */
#ifndef FOUNDRY_CONV_IMPL_H
#define FOUNDRY_CONV_IMPL_H

#include "foundry/backend.h"
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

/* A node's settings in slots: stride, padding, dilation, groups, nd. */
typedef struct tm__conv_set {
    int64_t s[3], p[3], dl[3];
    int64_t g;
    int nd;
} tm__conv_set;

/* F64 computes in F64, the other float dtypes in F32. */
tm_dtype tm__conv_compute(tm_dtype dt);
/* t as a contiguous tensor of dtype dt (new reference; NULL for NULL). */
tm_tensor *tm__conv_dense(const tm_tensor *t, tm_dtype dt);

/* x and weight present, bias optional; one device; one float dtype. */
tm_status tm__conv_check_tensors(const char *fn, const tm_tensor *x,
                                 const tm_tensor *w, const tm_tensor *b);
/* nd in 1..3, x of rank nd+1 or nd+2 (*batched says which), weight of
 * rank nd+2. */
tm_status tm__conv_check_ranks(const char *fn, const tm_tensor *x,
                               const tm_tensor *w, int nd, bool *batched);
/* The spatial sizes of the last nd dims of shape in slots (leading 1). */
void tm__conv_slots(const int64_t *shape_tail, int nd, int64_t *slots);
/* The used (last nd) values of a slot array: sizes as "7x3", settings
 * as "{1,0}". */
const char *tm__conv_fmt(const int64_t *slots, int nd, bool sizes,
                         char *buf, size_t cap);

/* The geometry of the convolution x [n, c, *in] * weight [oc, c/g, *k]
 * -> [n, oc, *out] (slots). */
tm_conv_geom tm__conv_geom(const tm__conv_set *cs, int64_t n, int64_t c,
                           const int64_t *in, int64_t oc, const int64_t *k,
                           const int64_t *out);

/* The conv entry: y = conv(x, w) + b (b may be NULL); contiguous, of y's
 * dtype, on y's device. */
tm_status tm__conv_run(const char *fn, const tm_conv_geom *q, tm_tensor *y,
                       const tm_tensor *x, const tm_tensor *w,
                       const tm_tensor *b);
/* The conv_backward entry: the gradients that are not NULL, from g;
 * x is needed for dw, w for dx. */
tm_status tm__conv_run_backward(const char *fn, const tm_conv_geom *q,
                                tm_tensor *dx, tm_tensor *dw, tm_tensor *db,
                                const tm_tensor *g, const tm_tensor *x,
                                const tm_tensor *w);

/* f on x with a batch dim of 1 added, the result with it removed. */
typedef tm_tensor *(*tm__conv_batched_fn)(const char *fn, const tm_tensor *x,
                                          const tm_tensor *w,
                                          const tm_tensor *b, int nd,
                                          const void *opts);
tm_tensor *tm__conv_unbatched(const char *fn, tm__conv_batched_fn f,
                              const tm_tensor *x, const tm_tensor *w,
                              const tm_tensor *b, int nd, const void *opts);

#endif
