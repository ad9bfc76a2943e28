/*
 * nn_func.c — dropout and embedding (forward + backward).
 */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

#include <math.h>

/* --------------------------------------------------------------- dropout */

/* dx = g * mask.  Saved: mask (slot 0, x's dtype, 0 or 1 / (1 - p)). */
static tm_status dropout_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__scratch s = {0};
    tm_tensor *r = tm__sc_keep(&s, tm_mul(g, tm__ag_saved(n, 0)));
    if (r && !(gin[0] = tm__sc_as(r, n->edges[0].dtype)))
        tm__sc_keep(&s, NULL);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm_dropout(const tm_tensor *x, double p, bool train, tm_rng *rng)
{
    if (tm__check_tensor(__func__, x, "input")) return NULL;
    tm_dtype dt = tm_dtype_of(x);
    if (!tm_dtype_is_float(dt)) {
        tm__errf(TM_EDTYPE, __func__, "input must be a float tensor, got %s",
                 tm_dtype_name(dt));
        return NULL;
    }
    if (!(p >= 0.0 && p <= 1.0)) {
        tm__errf(TM_EINVAL, __func__, "p must be in [0, 1], got %g", p);
        return NULL;
    }
    if (!train || p == 0.0) return tm_retain((tm_tensor *)x);
    tm__scratch s = {0};
    tm_tensor *mask = NULL, *out = NULL;
    bool prev = tm_no_grad_begin();
    if (p == 1.0) {
        mask = tm_zeros(tm_shape(x), tm_ndim(x), dt);
        out = mask ? tm_zeros(tm_shape(x), tm_ndim(x), dt) : NULL;
    } else {
        /* one F32 uniform per element, whatever x's dtype: the same seed
         * gives the same mask in every dtype */
        tm_tensor *u = tm__sc_keep(&s, tm__tensor_new(__func__, tm_shape(x),
                                                      tm_ndim(x), TM_F32,
                                                      tm_device_of(x)));
        if (u && tm_uniform_(u, 0.0, 1.0, rng)) tm__sc_keep(&s, NULL);
        tm_tensor *th = tm__sc_keep(
            &s, tm__scalar_on(__func__, 1.0 - p, TM_F32, tm_device_of(x)));
        tm_tensor *keep = tm__sc_keep(&s, !s.st && th ? tm_lt(u, th) : NULL);
        mask = keep ? tm_to_dtype(keep, dt) : NULL;
        if (mask && tm_mul_scalar_(mask, 1.0 / (1.0 - p))) {
            tm_free(mask);
            mask = NULL;
        }
        out = mask ? tm_mul(x, mask) : NULL;
    }
    tm_no_grad_end(prev);
    if (!out) tm__sc_keep(&s, NULL);
    if (tm__sc_done(&s, __func__)) goto fail;
    tm__record r = {.name = "NativeDropoutBackward",
                    .backward = dropout_backward, .nin = 1, .in = &x,
                    .save = {mask}};
    if (tm__ag_record(&r, out)) goto fail;
    tm_free(mask);
    return out;
fail:
    tm_free(mask);
    tm_free(out);
    return NULL;
}

/* ------------------------------------------------------------- embedding */

/* dW[idx[k], :] += g[k, :] in order of k (deterministic), accumulated in
 * F32 (F64 for F64 weights).  Saved: the indices (slot 0, I64 [K]
 * contiguous). */
static tm_status embedding_backward(tm__node *n, const tm_tensor *g,
                                    tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *ew = &n->edges[0];
    tm_dtype cd = ew->dtype == TM_F64 ? TM_F64 : TM_F32;
    const tm_tensor *ix = tm__ag_saved(n, 0);
    int64_t k = tm_numel(ix), dd = ew->shape[1];
    tm_tensor *gw = tm__sc_keep(&s, tm_zeros(ew->shape, 2, cd));
    tm_tensor *g2 = tm__sc_keep(&s, tm_reshape(g, (int64_t[]){k, dd}, 2));
    tm_tensor *gc = tm__sc_keep(
        &s, !g2                       ? NULL
            : tm_dtype_of(g2) == cd ? tm_contiguous(g2)
                                    : tm_to_dtype(g2, cd));
    if (s.st) return tm__sc_done(&s, n->name);
    const int64_t *iv = tm_data(ix);
    if (cd == TM_F64) {
        double *w = tm_data(gw);
        const double *gv = tm_data(gc);
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < dd; j++) w[iv[r] * dd + j] += gv[r * dd + j];
    } else {
        float *w = tm_data(gw);
        const float *gv = tm_data(gc);
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < dd; j++) w[iv[r] * dd + j] += gv[r * dd + j];
    }
    if (!(gin[0] = tm__sc_as(gw, ew->dtype))) tm__sc_keep(&s, NULL);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm_embedding(const tm_tensor *weight, const tm_tensor *indices)
{
    const char *fn = __func__;
    char sa[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, weight, "weight") ||
        tm__check_tensor(fn, indices, "indices"))
        return NULL;
    const tm_tensor *both[2] = {weight, indices};
    if (tm__check_same_device(fn, both, 2)) return NULL;
    if (tm_device_of(weight) != TM_CPU) {
        tm__errf(TM_EUNSUPPORTED, fn, "only CPU tensors are supported");
        return NULL;
    }
    if (!tm_dtype_is_float(tm_dtype_of(weight))) {
        tm__errf(TM_EDTYPE, fn, "weight must be a float tensor, got %s",
                 tm_dtype_name(tm_dtype_of(weight)));
        return NULL;
    }
    if (!tm_dtype_is_integer(tm_dtype_of(indices))) {
        tm__errf(TM_EDTYPE, fn, "indices must be an integer tensor, got %s",
                 tm_dtype_name(tm_dtype_of(indices)));
        return NULL;
    }
    if (tm_ndim(weight) != 2) {
        tm__errf(TM_ESHAPE, fn, "weight must be 2-D [V, D], got %s",
                 tm__fmt_shape(tm_shape(weight), tm_ndim(weight), sa,
                               sizeof sa));
        return NULL;
    }
    int ni = tm_ndim(indices);
    if (ni + 1 > TM_MAX_DIMS) {
        tm__errf(TM_ESHAPE, fn, "indices have too many dims (%d)", ni);
        return NULL;
    }
    int64_t v = tm_shape(weight)[0], d = tm_shape(weight)[1];
    int64_t k = tm_numel(indices);
    tm_tensor *ix = NULL, *flat = NULL, *rows = NULL, *out = NULL;
    bool prev = tm_no_grad_begin();
    ix = tm_to_dtype(indices, TM_I64); /* contiguous */
    if (!ix) goto fail;
    const int64_t *iv = tm_data(ix);
    for (int64_t r = 0; r < k; r++) {
        if (iv[r] < 0 || iv[r] >= v) {
            tm__errf(TM_ERANGE, fn, "index %lld at position %lld is out of "
                     "range for %lld embeddings", (long long)iv[r],
                     (long long)r, (long long)v);
            goto fail;
        }
    }
    flat = tm_reshape(ix, (int64_t[]){k}, 1);
    rows = flat ? tm_index_select(weight, 0, flat) : NULL;
    int64_t shp[TM_MAX_DIMS];
    for (int i = 0; i < ni; i++) shp[i] = tm_shape(indices)[i];
    shp[ni] = d;
    out = rows ? tm_reshape(rows, shp, ni + 1) : NULL;
    if (!out) goto fail;
    tm_no_grad_end(prev);
    tm__record r = {.name = "EmbeddingBackward",
                    .backward = embedding_backward, .nin = 1, .in = &weight,
                    .save = {flat}};
    if (tm__ag_record(&r, out)) goto fail_rec;
    tm_free(ix);
    tm_free(flat);
    tm_free(rows);
    return out;
fail:
    tm_no_grad_end(prev);
fail_rec:
    tm_free(ix);
    tm_free(flat);
    tm_free(rows);
    tm_free(out);
    return NULL;
}
