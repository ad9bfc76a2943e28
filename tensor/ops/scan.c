/* scan.c — cumulative ops along one dim beyond cumsum (reduce.c):
 * cumprod, cummax, cummin and logcumsumexp, run by the backend's `scan`
 * entry.  The front end checks the dim and dtype, allocates the result
 * (and indices) and records the gradient. */
#include "scan_impl.h"
#include "../core/grad_hooks.h"

#include <string.h>

/* A 0-d tensor's kernel view: one element along a size-1 dim. */
static void tm__scan_0d(tm_buf *b)
{
    b->ndim = 1;
    b->shape[0] = 1;
    b->strides[0] = 0;
}

/* The result dtype of `kind` on dtype dt, or TM_EDTYPE naming fn. */
static tm_status tm__scan_dtype(const char *fn, tm_scan_kind kind,
                                tm_dtype dt, tm_dtype *out)
{
    bool fl = tm_dtype_is_float(dt);
    if (!tm_dtype_is_valid(dt))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported",
                        tm_dtype_name(dt));
    if (kind == TM_SCAN_LOGSUMEXP && !fl)
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: "
                        "logcumsumexp takes a float tensor",
                        tm_dtype_name(dt));
    if (kind == TM_SCAN_SUM || kind == TM_SCAN_PROD)
        *out = fl ? dt : TM_I64;
    else
        *out = dt;
    return TM_OK;
}

/* Runs `kind` along dim of t into new tensors *out and (max/min, when
 * ix is not NULL) *ix.  Records nothing. */
static tm_status tm__scan(const char *fn, tm_scan_kind kind,
                          const tm_tensor *t, int dim, bool reverse,
                          tm_tensor **out, tm_tensor **ix, int *dwrapped)
{
    tm_tensor *o = NULL, *x = NULL;
    tm_dtype odt = TM_F32;
    int d;
    *out = NULL;
    if (ix) *ix = NULL;
    if (tm__check_dense_operand(fn, t, "tensor") ||
        tm__wrap_dim(fn, dim, t->ndim, &d) ||
        tm__scan_dtype(fn, kind, t->dtype, &odt))
        return tm_last_status();
    tm_device dev = tm_device_of(t);
    if (!(o = tm__tensor_new(fn, t->shape, t->ndim, odt, dev))) goto fail;
    if (ix && !(x = tm__tensor_new(fn, t->shape, t->ndim, TM_I64, dev)))
        goto fail;
    tm_buf ob = tm__buf(o), ib = tm__buf(t), xb;
    memset(&xb, 0, sizeof xb); /* absent: handle NULL */
    xb.dtype = TM_I64;
    if (x) xb = tm__buf(x);
    if (t->ndim == 0) {
        tm__scan_0d(&ob);
        tm__scan_0d(&ib);
        if (x) tm__scan_0d(&xb);
    }
    tm__stage sg = {0};
    tm__stage_out(&sg, &ob);
    tm__stage_out(&sg, &xb);
    tm__stage_in(&sg, &ib);
    if (TM__CALL_STAGED(fn, tm__ctx(t), &sg, SCAN, (int)kind, scan, kind, &ob,
                        &xb, &ib, d, reverse))
        goto fail;
    *out = o;
    if (ix) *ix = x;
    if (dwrapped) *dwrapped = d;
    return TM_OK;
fail:
    tm_free(o);
    tm_free(x);
    return tm_last_status();
}

tm_tensor *tm_cumprod(const tm_tensor *t, int dim)
{
    tm_tensor *o;
    int d;
    if (tm__scan(__func__, TM_SCAN_PROD, t, dim, false, &o, NULL, &d))
        return NULL;
    return tm__grad_cumprod(o, t, d);
}

tm_tensor *tm_logcumsumexp(const tm_tensor *t, int dim)
{
    tm_tensor *o;
    int d;
    if (tm__scan(__func__, TM_SCAN_LOGSUMEXP, t, dim, false, &o, NULL, &d))
        return NULL;
    return tm__grad_logcumsumexp(o, t, d);
}

static tm_status tm__cumextreme(const char *fn, bool is_max,
                                const tm_tensor *t, int dim,
                                tm_tensor **values, tm_tensor **indices)
{
    tm_tensor *v = NULL, *ix = NULL;
    int d;
    if (indices) *indices = NULL;
    if (!values) return tm__errf(TM_EINVAL, fn, "values is NULL");
    tm_status st = tm__scan(fn, is_max ? TM_SCAN_MAX : TM_SCAN_MIN, t, dim,
                            false, &v, &ix, &d);
    *values = NULL;
    if (st) return st;
    /* the gradient lands at the indices, like max over a dim */
    if (!(v = tm__grad_cummax(v, is_max, t, d, ix))) {
        tm_free(ix);
        return tm_last_status();
    }
    *values = v;
    if (indices) *indices = ix;
    else tm_free(ix);
    return TM_OK;
}

tm_status tm_cummax(const tm_tensor *t, int dim, tm_tensor **values,
                    tm_tensor **indices)
{
    return tm__cumextreme(__func__, true, t, dim, values, indices);
}

tm_status tm_cummin(const tm_tensor *t, int dim, tm_tensor **values,
                    tm_tensor **indices)
{
    return tm__cumextreme(__func__, false, t, dim, values, indices);
}

tm_tensor *tm__cumsum_reverse(const tm_tensor *t, int dim)
{
    tm_tensor *o;
    return tm__scan(__func__, TM_SCAN_SUM, t, dim, true, &o, NULL, NULL)
               ? NULL : o;
}

tm_tensor *tm__logcumsumexp_reverse(const tm_tensor *t, int dim)
{
    tm_tensor *o;
    return tm__scan(__func__, TM_SCAN_LOGSUMEXP, t, dim, true, &o, NULL,
                    NULL)
               ? NULL : o;
}
