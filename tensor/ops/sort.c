/* sort.c — tm_sort, tm_argsort, tm_topk: stable sorting along one dim. */
#include "../core/grad_hooks.h"

#include <string.h>

/* The kernel view of `t` with dim `d` moved to the end (a 0-d tensor is
 * seen as one row of one element). */
static tm_buf tm__sort_buf(const tm_tensor *t, int d)
{
    tm_buf b, s = tm__buf(t);
    memset(&b, 0, sizeof b);
    b.dtype = s.dtype;
    b.handle = s.handle;
    b.offset = s.offset;
    if (s.ndim == 0) {
        b.ndim = 1;
        b.shape[0] = 1;
        b.strides[0] = 1;
        return b;
    }
    b.ndim = s.ndim;
    int j = 0;
    for (int i = 0; i < s.ndim; i++) {
        if (i == d) continue;
        b.shape[j] = s.shape[i];
        b.strides[j++] = s.strides[i];
    }
    b.shape[j] = s.shape[d];
    b.strides[j] = s.strides[d];
    return b;
}

/* Sorts t along dim into new tensors *values / *indices (either pointer
 * may be NULL, then that output is not made).  Errors name `fn`. */
static tm_status tm__sort(const char *fn, const tm_tensor *t, int dim,
                          bool descending, tm_tensor **values,
                          tm_tensor **indices)
{
    tm_tensor *v = NULL, *ix = NULL;
    int d;
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (tm__check_dense_operand(fn, t, "tensor")) return tm_last_status();
    if (!values && !indices)
        return tm__errf(TM_EINVAL, fn, "values and indices are both NULL");
    if (tm__wrap_dim(fn, dim, t->ndim, &d)) return tm_last_status();
    if (!tm_dtype_is_valid(t->dtype))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported",
                        tm_dtype_name(t->dtype));
    tm_device dev = tm_device_of(t);
    if (values && !(v = tm__tensor_new(fn, t->shape, t->ndim, t->dtype, dev)))
        goto fail;
    if (indices &&
        !(ix = tm__tensor_new(fn, t->shape, t->ndim, TM_I64, dev)))
        goto fail;
    if (tm_numel(t) > 0) {
        tm_ctx *cx = tm__ctx(t);
        /* An output not wanted is passed absent (handle NULL). */
        tm_buf in = tm__sort_buf(t, d), vb = in, ib = in;
        vb.handle = NULL;
        ib.handle = NULL;
        ib.dtype = TM_I64;
        if (v) vb = tm__sort_buf(v, d);
        if (ix) ib = tm__sort_buf(ix, d);
        tm__stage sg = {0};
        tm__stage_out(&sg, &vb);
        tm__stage_out(&sg, &ib);
        tm__stage_in(&sg, &in);
        if (TM__CALL_STAGED(fn, cx, &sg, SORT, 0, sort, &vb, &ib, &in,
                            descending)) goto fail;
    }
    if (values) *values = v;
    if (indices) *indices = ix;
    return TM_OK;
fail:
    tm_free(v);
    tm_free(ix);
    return tm_last_status();
}

tm_status tm_sort(const tm_tensor *t, int dim, bool descending,
                  tm_tensor **values, tm_tensor **indices)
{
    /* Recording the values needs the indices, wanted or not. */
    bool rec = values && t && tm__ag_requires(t);
    tm_tensor *ix = NULL;
    if (indices) *indices = NULL;
    tm_status st = tm__sort(__func__, t, dim, descending, values,
                            indices || rec ? &ix : NULL);
    if (st) return st;
    if (rec && !(*values = tm__grad_sort(*values, "SortBackward", t, dim,
                                         ix))) {
        tm_free(ix);
        return tm_last_status();
    }
    if (indices) *indices = ix;
    else tm_free(ix);
    return TM_OK;
}

tm_tensor *tm_argsort(const tm_tensor *t, int dim, bool descending)
{
    tm_tensor *ix = NULL;
    tm__sort(__func__, t, dim, descending, NULL, &ix);
    return ix;
}

/* The first k entries of *r along dim, as a new contiguous tensor that
 * replaces *r. */
static tm_status tm__topk_cut(tm_tensor **r, int dim, int64_t k)
{
    if (!*r || tm_ndim(*r) == 0) return TM_OK;
    tm_tensor *n = tm_narrow(*r, dim, 0, k);
    tm_tensor *c = n ? tm_contiguous(n) : NULL;
    tm_free(n);
    tm_free(*r);
    *r = c;
    return c ? TM_OK : tm_last_status();
}

tm_status tm_topk(const tm_tensor *t, int64_t k, int dim, bool largest,
                  tm_tensor **values, tm_tensor **indices)
{
    tm_tensor *v = NULL, *ix = NULL;
    int d;
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (tm__check_dense_operand(__func__, t, "tensor")) return tm_last_status();
    if (tm__wrap_dim(__func__, dim, t->ndim, &d)) return tm_last_status();
    int64_t size = t->ndim ? t->shape[d] : 1;
    if (t->ndim == 0 && k != 1)
        return TM_ERR(TM_EINVAL, "k %lld is out of range for a 0-d tensor "
                      "(expected 1)", (long long)k);
    if (k < 0 || k > size)
        return TM_ERR(TM_EINVAL, "k %lld is out of range for dim %d of size "
                      "%lld", (long long)k, d, (long long)size);
    /* A full stable sort: descending for the largest puts ties in index
     * order and NaN (the largest) first, as PyTorch's topk does.
     * Recording the values needs the indices, wanted or not. */
    bool rec = values && tm__ag_requires(t);
    tm_status st = tm__sort(__func__, t, d, largest, values ? &v : NULL,
                            indices || rec ? &ix : NULL);
    if (st) return st;
    if (tm__topk_cut(&v, d, k) || tm__topk_cut(&ix, d, k)) {
        tm_free(v);
        tm_free(ix);
        return TM_ERR(tm_last_status(), "%s", tm_last_error());
    }
    if (rec && !(v = tm__grad_sort(v, "TopkBackward", t, d, ix))) {
        tm_free(ix);
        return tm_last_status();
    }
    if (values) *values = v;
    if (indices) *indices = ix;
    else tm_free(ix);
    return TM_OK;
}
