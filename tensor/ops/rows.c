/* rows.c — row ops: softmax and log_softmax along a dim, layer_norm and
 * rms_norm over the last dim.  Argument checks and result allocation; the
 * kernels (backend softmax / norm_rows) see rows along the last dim, so
 * softmax along another dim hands them the input and the output with that
 * dim moved last (views of the same memory; the result itself is a fresh
 * contiguous tensor of the input's shape and dtype). */
#include "../core/grad_hooks.h"

#include <math.h>
#include <string.h>

static tm_status tm__check_float(const char *fn, const tm_tensor *t,
                                 const char *what)
{
    if (tm__check_dense_operand(fn, t, what)) return tm_last_status();
    if (!tm_dtype_is_float(t->dtype))
        return tm__errf(TM_EDTYPE, fn,
                        "%s has dtype %s; a float dtype (f32, f64, f16, "
                        "bf16) is required", what, tm_dtype_name(t->dtype));
    return TM_OK;
}

/* Moves dim d of b to the end (the others keep their order). */
static void tm__dim_last(tm_buf *b, int d)
{
    int64_t s = b->shape[d], st = b->strides[d];
    for (int k = d; k + 1 < b->ndim; k++) {
        b->shape[k] = b->shape[k + 1];
        b->strides[k] = b->strides[k + 1];
    }
    b->shape[b->ndim - 1] = s;
    b->strides[b->ndim - 1] = st;
}

static tm_tensor *tm__softmax(const char *fn, const tm_tensor *t, int dim,
                              bool log)
{
    int d;
    if (tm__check_float(fn, t, "tensor") ||
        tm__wrap_dim(fn, dim, t->ndim, &d))
        return NULL;
    tm_ctx *cx = tm__ctx(t);
    tm_tensor *o = tm__tensor_new(fn, t->shape, t->ndim, t->dtype,
                                  tm_device_of(t));
    if (!o) return NULL;
    if (tm_numel(o) == 0) goto done;
    tm_buf ob = tm__buf(o), ib = tm__buf(t);
    if (t->ndim == 0) { /* one element along a size-1 dim: 1 (log: 0) */
        ob.ndim = ib.ndim = 1;
        ob.shape[0] = ib.shape[0] = 1;
        ob.strides[0] = ib.strides[0] = 0;
    } else {
        tm__dim_last(&ob, d);
        tm__dim_last(&ib, d);
    }
    tm__stage sg = {0};
    tm__stage_out(&sg, &ob);
    tm__stage_in(&sg, &ib);
    if (TM__CALL_STAGED(fn, cx, &sg, SOFTMAX, 0, softmax, &ob, &ib, log)) {
        tm__relabel_error(fn, tm_last_status());
        tm_free(o);
        return NULL;
    }
done:
    return tm__grad_softmax(o, t, d, log);
}

tm_tensor *tm_softmax(const tm_tensor *t, int dim)
{
    return tm__softmax(__func__, t, dim, false);
}

tm_tensor *tm_log_softmax(const tm_tensor *t, int dim)
{
    return tm__softmax(__func__, t, dim, true);
}

/* weight / bias (may be NULL): 1-D of length C and x's dtype. */
static tm_status tm__check_affine(const char *fn, const tm_tensor *x,
                                  const tm_tensor *p, const char *what)
{
    if (!p) return TM_OK;
    int64_t c = x->shape[x->ndim - 1];
    if (p->ndim != 1 || p->shape[0] != c) {
        char s[TM_SHAPE_BUF], xs[TM_SHAPE_BUF];
        return tm__errf(TM_ESHAPE, fn,
                        "%s has shape %s; expected [%lld] (the last dim of "
                        "input shape %s)", what,
                        tm__fmt_shape(p->shape, p->ndim, s, sizeof s),
                        (long long)c,
                        tm__fmt_shape(x->shape, x->ndim, xs, sizeof xs));
    }
    if (p->dtype != x->dtype)
        return tm__errf(TM_EDTYPE, fn,
                        "%s has dtype %s but the input has dtype %s", what,
                        tm_dtype_name(p->dtype), tm_dtype_name(x->dtype));
    return TM_OK;
}

static tm_tensor *tm__norm(const char *fn, const tm_tensor *x,
                           const tm_tensor *weight, const tm_tensor *bias,
                           double eps, bool rms)
{
    if (tm__check_float(fn, x, "input")) return NULL;
    if (x->ndim < 1) {
        tm__errf(TM_ESHAPE, fn,
                 "input is 0-d; normalizing over the last dim needs at "
                 "least 1 dim");
        return NULL;
    }
    if (tm__check_affine(fn, x, weight, "weight") ||
        tm__check_affine(fn, x, bias, "bias"))
        return NULL;
    if (!(eps >= 0) || isinf(eps)) {
        tm__errf(TM_EINVAL, fn, "eps %g must be finite and >= 0", eps);
        return NULL;
    }
    const tm_tensor *ts[3] = {x, weight, bias};
    if (tm__check_same_device(fn, ts, 3)) return NULL;
    tm_ctx *cx = tm__ctx(x);
    tm_tensor *o = tm__tensor_new(fn, x->shape, x->ndim, x->dtype,
                                  tm_device_of(x));
    if (!o) return NULL;
    if (tm_numel(o) == 0) goto done;
    tm_buf ob = tm__buf(o), ib = tm__buf(x), wb, bb;
    memset(&wb, 0, sizeof wb);
    memset(&bb, 0, sizeof bb);
    if (weight) wb = tm__buf(weight);
    if (bias) bb = tm__buf(bias);
    tm__stage sg = {0};
    tm__stage_out(&sg, &ob);
    tm__stage_in(&sg, &ib);
    tm__stage_in(&sg, &wb);
    tm__stage_in(&sg, &bb);
    if (TM__CALL_STAGED(fn, cx, &sg, NORM_ROWS, 0, norm_rows, &ob, &ib, &wb,
                        &bb, eps, rms)) {
        tm__relabel_error(fn, tm_last_status());
        tm_free(o);
        return NULL;
    }
done:
    return tm__grad_norm(o, x, weight, bias, eps, rms);
}

tm_tensor *tm_layer_norm(const tm_tensor *x, const tm_tensor *weight,
                         const tm_tensor *bias, double eps)
{
    return tm__norm(__func__, x, weight, bias, eps, false);
}

tm_tensor *tm_rms_norm(const tm_tensor *x, const tm_tensor *weight,
                       double eps)
{
    return tm__norm(__func__, x, weight, NULL, eps, true);
}
