/* view.c — views: new shape/strides/offset over the same storage. */
#include "grad_hooks.h"

#include <string.h>

tm_tensor *tm_transpose(const tm_tensor *t, int dim0, int dim1)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int a, b;
    if (t->ndim == 0)
        return tm__grad_reshape(tm__view_of(__func__, t, NULL, NULL, 0,
                                            t->offset),
                                t, "TransposeBackward");
    if (tm__wrap_dim(__func__, dim0, t->ndim, &a) ||
        tm__wrap_dim(__func__, dim1, t->ndim, &b))
        return NULL;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    memcpy(sh, t->shape, sizeof sh);
    memcpy(st, t->strides, sizeof st);
    sh[a] = t->shape[b], sh[b] = t->shape[a];
    st[a] = t->strides[b], st[b] = t->strides[a];
    return tm__grad_transpose(tm__view_of(__func__, t, sh, st, t->ndim,
                                          t->offset),
                              t, a, b);
}

tm_tensor *tm_permute(const tm_tensor *t, const int *dims, int ndim)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    if (ndim != t->ndim) {
        TM_ERR(TM_EINVAL, "got %d dims for a %d-d tensor", ndim, t->ndim);
        return NULL;
    }
    if (ndim > 0 && !dims) {
        TM_ERR(TM_EINVAL, "dims is NULL");
        return NULL;
    }
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    int ip[TM_MAX_DIMS];
    bool seen[TM_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d;
        if (tm__wrap_dim(__func__, dims[i], ndim, &d)) return NULL;
        if (seen[d]) {
            TM_ERR(TM_EINVAL, "dim %d appears twice", d);
            return NULL;
        }
        seen[d] = true;
        ip[i] = d;
        sh[i] = t->shape[d];
        st[i] = t->strides[d];
    }
    return tm__grad_permute(tm__view_of(__func__, t, sh, st, ndim, t->offset),
                            t, ip);
}

/* Resolves one -1 entry of `shape` against numel into out. */
static tm_status tm__infer_shape(const char *fn, const tm_tensor *t,
                                 const int64_t *shape, int ndim,
                                 int64_t *out)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    if (ndim < 0 || ndim > TM_MAX_DIMS)
        return tm__errf(TM_EINVAL, fn, "ndim %d is outside [0, %d]", ndim,
                        TM_MAX_DIMS);
    if (ndim > 0 && !shape)
        return tm__errf(TM_EINVAL, fn, "shape is NULL");
    int infer = -1;
    int64_t known = 1, numel = tm_numel(t);
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0)
                return tm__errf(TM_EINVAL, fn, "only one dim may be -1");
            infer = i;
        } else if (shape[i] < 0) {
            return tm__errf(TM_EINVAL, fn, "shape %s has a negative size",
                            tm__fmt_shape(shape, ndim, a, sizeof a));
        } else if (shape[i] != 0 && known > INT64_MAX / shape[i]) {
            return tm__errf(TM_EOVERFLOW, fn,
                            "shape %s: element count overflows",
                            tm__fmt_shape(shape, ndim, a, sizeof a));
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return tm__errf(TM_ESHAPE, fn,
                            "shape %s is invalid for %lld elements",
                            tm__fmt_shape(shape, ndim, a, sizeof a),
                            (long long)numel);
        out[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return tm__errf(TM_ESHAPE, fn,
                        "cannot view %s (%lld elements) as %s",
                        tm__fmt_shape(t->shape, t->ndim, b, sizeof b),
                        (long long)numel,
                        tm__fmt_shape(shape, ndim, a, sizeof a));
    return TM_OK;
}

/* Strides for viewing t as `shape` without copying, if possible: each
 * group of new dims must map onto a run of old dims that is contiguous
 * within itself (the algorithm PyTorch calls computeStride). */
static bool tm__view_strides(const tm_tensor *t, const int64_t *shape,
                             int ndim, int64_t *st)
{
    if (tm_numel(t) == 0 || t->ndim == 0) {
        tm__contiguous_strides(shape, ndim, st);
        return true;
    }
    int view_d = ndim - 1;
    int64_t base = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int od = t->ndim - 1; od >= 0; od--) {
        tensor_numel *= t->shape[od];
        /* a run of old dims ends where the one before is not contiguous
         * with it (size-1 dims never break a run) */
        if (od == 0 || (t->shape[od - 1] != 1 &&
                        t->strides[od - 1] != tensor_numel * base)) {
            while (view_d >= 0 &&
                   (view_numel < tensor_numel || shape[view_d] == 1)) {
                st[view_d] = view_numel * base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (od > 0) {
                base = t->strides[od - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

tm_tensor *tm_view(const tm_tensor *t, const int64_t *shape, int ndim)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    if (tm__infer_shape(__func__, t, shape, ndim, sh)) return NULL;
    if (!tm__view_strides(t, sh, ndim, st)) {
        char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
        TM_ERR(TM_ESHAPE,
               "cannot view %s with strides %s as %s without copying; use "
               "tm_reshape",
               tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
               tm__fmt_shape(t->strides, t->ndim, b, sizeof b),
               tm__fmt_shape(sh, ndim, a + 96, sizeof a - 96));
        return NULL;
    }
    return tm__grad_reshape(tm__view_of(__func__, t, sh, st, ndim, t->offset),
                            t, "ViewBackward");
}

tm_tensor *tm_reshape(const tm_tensor *t, const int64_t *shape, int ndim)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    if (tm__infer_shape(__func__, t, shape, ndim, sh)) return NULL;
    tm_tensor *v;
    if (tm__view_strides(t, sh, ndim, st)) {
        v = tm__view_of(__func__, t, sh, st, ndim, t->offset);
    } else { /* the copy is recorded as part of this node, not on its own */
        bool prev = tm_no_grad_begin();
        tm_tensor *c = tm_contiguous(t);
        tm_no_grad_end(prev);
        if (!c) return NULL;
        tm__contiguous_strides(sh, ndim, st);
        v = tm__view_of(__func__, c, sh, st, ndim, c->offset);
        tm_free(c);
    }
    return tm__grad_reshape(v, t, "ReshapeBackward");
}

tm_tensor *tm_flatten(const tm_tensor *t, int start_dim, int end_dim)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    if (t->ndim == 0) return tm_reshape(t, (int64_t[]){1}, 1);
    int s, e;
    if (tm__wrap_dim(__func__, start_dim, t->ndim, &s) ||
        tm__wrap_dim(__func__, end_dim, t->ndim, &e))
        return NULL;
    if (s > e) {
        TM_ERR(TM_EINVAL, "start_dim %d comes after end_dim %d", s, e);
        return NULL;
    }
    int64_t sh[TM_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s; i++) sh[n++] = t->shape[i];
    int64_t m = 1;
    for (int i = s; i <= e; i++) m *= t->shape[i];
    sh[n++] = m;
    for (int i = e + 1; i < t->ndim; i++) sh[n++] = t->shape[i];
    return tm_reshape(t, sh, n);
}

tm_tensor *tm_slice(const tm_tensor *t, int dim, int64_t start, int64_t stop,
                    int64_t step)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int d;
    if (t->ndim == 0) {
        TM_ERR(TM_EINVAL, "cannot slice a 0-d tensor");
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim, t->ndim, &d)) return NULL;
    if (step < 1) {
        TM_ERR(TM_EINVAL, "step %lld must be >= 1", (long long)step);
        return NULL;
    }
    int64_t n = t->shape[d];
    if (start < 0) start = start < -n ? 0 : start + n;
    if (start > n) start = n;
    if (stop < 0) stop = stop < -n ? 0 : stop + n;
    if (stop > n) stop = n;
    int64_t len = stop > start ? (stop - start + step - 1) / step : 0;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    memcpy(sh, t->shape, sizeof sh);
    memcpy(st, t->strides, sizeof st);
    sh[d] = len;
    st[d] = t->strides[d] * step;
    int64_t off = t->offset + (len > 0 ? start * t->strides[d] : 0);
    return tm__grad_slice(tm__view_of(__func__, t, sh, st, t->ndim, off), t,
                          "SliceBackward", d, len > 0 ? start : 0, step);
}

tm_tensor *tm_narrow(const tm_tensor *t, int dim, int64_t start,
                     int64_t length)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int d;
    if (t->ndim == 0) {
        TM_ERR(TM_EINVAL, "cannot narrow a 0-d tensor");
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim, t->ndim, &d)) return NULL;
    int64_t n = t->shape[d];
    if (start < 0 && start >= -n) start += n;
    if (start < 0 || start > n || length < 0 || length > n - start) {
        TM_ERR(TM_ERANGE,
               "start %lld and length %lld do not fit dim %d of size %lld",
               (long long)start, (long long)length, d, (long long)n);
        return NULL;
    }
    return tm_slice(t, d, start, start + length, 1);
}

tm_tensor *tm_select(const tm_tensor *t, int dim, int64_t index)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int d;
    if (t->ndim == 0) {
        TM_ERR(TM_EINVAL, "cannot select from a 0-d tensor");
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim, t->ndim, &d)) return NULL;
    int64_t n = t->shape[d];
    if (index < -n || index >= n) {
        TM_ERR(TM_ERANGE, "index %lld is out of range for dim %d of size %lld",
               (long long)index, d, (long long)n);
        return NULL;
    }
    if (index < 0) index += n;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d) continue;
        sh[k] = t->shape[i];
        st[k++] = t->strides[i];
    }
    return tm__grad_select(tm__view_of(__func__, t, sh, st, k,
                                       t->offset + index * t->strides[d]),
                           t, d, index);
}

tm_tensor *tm_squeeze(const tm_tensor *t, int dim)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int d;
    if (tm__wrap_dim(__func__, dim, t->ndim, &d)) return NULL;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d && t->shape[i] == 1) continue;
        sh[k] = t->shape[i];
        st[k++] = t->strides[i];
    }
    return tm__grad_reshape(tm__view_of(__func__, t, sh, st, k, t->offset), t,
                            "SqueezeBackward");
}

tm_tensor *tm_squeeze_all(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 1) continue;
        sh[k] = t->shape[i];
        st[k++] = t->strides[i];
    }
    return tm__grad_reshape(tm__view_of(__func__, t, sh, st, k, t->offset), t,
                            "SqueezeBackward");
}

tm_tensor *tm_unsqueeze(const tm_tensor *t, int dim)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    int d;
    if (t->ndim >= TM_MAX_DIMS) {
        TM_ERR(TM_EINVAL, "a %d-d tensor cannot gain a dim (max %d)", t->ndim,
               TM_MAX_DIMS);
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim, t->ndim + 1, &d)) return NULL;
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i <= t->ndim; i++) {
        if (i == d) {
            sh[k] = 1;
            st[k++] = i < t->ndim ? t->strides[i] * t->shape[i] : 1;
        }
        if (i < t->ndim) {
            sh[k] = t->shape[i];
            st[k++] = t->strides[i];
        }
    }
    return tm__grad_reshape(tm__view_of(__func__, t, sh, st, k, t->offset), t,
                            "UnsqueezeBackward");
}

static tm_tensor *tm__expand(const char *fn, const tm_tensor *t,
                             const int64_t *shape, int ndim, bool allow_neg)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, t, "tensor")) return NULL;
    if (ndim < t->ndim || ndim > TM_MAX_DIMS || (ndim > 0 && !shape)) {
        tm__errf(TM_EINVAL, fn, "cannot expand a %d-d tensor to %d dims",
                 t->ndim, ndim);
        return NULL;
    }
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int j = i - lead;
        int64_t want = shape[i];
        if (want == -1 && allow_neg && j >= 0) want = t->shape[j];
        if (want < 0) {
            tm__errf(TM_EINVAL, fn, "target shape %s has a negative size",
                     tm__fmt_shape(shape, ndim, a, sizeof a));
            return NULL;
        }
        if (j < 0) {
            sh[i] = want;
            st[i] = 0;
        } else if (t->shape[j] == want) {
            sh[i] = want;
            st[i] = t->strides[j];
        } else if (t->shape[j] == 1) {
            sh[i] = want;
            st[i] = 0;
        } else {
            tm__errf(TM_ESHAPE, fn,
                     "shape %s cannot broadcast to %s: dim %d is %lld, "
                     "not 1 or %lld",
                     tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
                     tm__fmt_shape(shape, ndim, b, sizeof b), j,
                     (long long)t->shape[j], (long long)want);
            return NULL;
        }
    }
    if (tm__check_shape(fn, sh, ndim, t->dtype, NULL)) return NULL;
    return tm__grad_expand(tm__view_of(fn, t, sh, st, ndim, t->offset), t);
}

tm_tensor *tm_expand(const tm_tensor *t, const int64_t *shape, int ndim)
{
    return tm__expand(__func__, t, shape, ndim, true);
}

tm_tensor *tm_broadcast_to(const tm_tensor *t, const int64_t *shape, int ndim)
{
    return tm__expand(__func__, t, shape, ndim, false);
}

tm_tensor *tm_as_strided(const tm_tensor *t, const int64_t *shape,
                         const int64_t *strides, int ndim, int64_t offset)
{
    if (tm__check_tensor(__func__, t, "tensor") ||
        tm__q_refuse(__func__, t, "tensor"))
        return NULL;
    if (ndim > 0 && !strides) {
        TM_ERR(TM_EINVAL, "strides is NULL");
        return NULL;
    }
    tm_tensor *v = tm_tensor_from_storage(t->storage, offset, shape, strides,
                                          ndim, t->dtype);
    if (!v) {
        tm__relabel_error(__func__, tm_last_status());
        return NULL;
    }
    return tm__grad_as_strided(v, t);
}

tm_status tm_broadcast_shapes(const int64_t *a, int na, const int64_t *b,
                              int nb, int64_t *out, int *out_ndim)
{
    char x[TM_SHAPE_BUF], y[TM_SHAPE_BUF];
    if (na < 0 || nb < 0 || na > TM_MAX_DIMS || nb > TM_MAX_DIMS ||
        (na && !a) || (nb && !b) || !out || !out_ndim)
        return TM_ERR(TM_EINVAL, "bad arguments (ndims %d and %d)", na, nb);
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) out[i] = da;
        else if (da == 1) out[i] = db;
        else
            return TM_ERR(TM_ESHAPE,
                          "shapes %s and %s do not broadcast: %lld vs %lld",
                          tm__fmt_shape(a, na, x, sizeof x),
                          tm__fmt_shape(b, nb, y, sizeof y), (long long)da,
                          (long long)db);
    }
    *out_ndim = n;
    return TM_OK;
}
