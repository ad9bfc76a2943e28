/*
 * clip.c — gradient clipping by global norm and by value
 * (torch.nn.utils.clip_grad_norm_ / clip_grad_value_).
 *
 * Nothing here reads or writes gradient elements, so gradients on any
 * device are clipped where they live.  The norm is one call of the
 * backend's `grad_norm` entry over every gradient (foundry/backend.h; the
 * CPU's, in cpu/optim/clip_kern.c, sums fixed chunks in a fixed order, so
 * the norm is the same for any thread count).  The clip coefficient
 * min(max_norm / (norm + 1e-6), 1) is then computed on the device from
 * that 0-d result, and every gradient is multiplied in place by it,
 * converted to the gradient's dtype first (as PyTorch does): no value
 * travels to the host unless the caller asks for the norm.  Multiplying
 * by a coefficient clamped to 1 leaves an unclipped gradient's bits as
 * they were.  Clipping by value is the clamp op.
 */
#include "optim_impl.h"

#include <math.h>

/* The gradient of params[i] if it can be clipped in place, NULL when it
 * has none (*st TM_OK) or on error (*st set). */
static tm_tensor *grad_of(const char *fn, tm_tensor *const *params, int i,
                          tm_status *st)
{
    *st = TM_OK;
    if (!params[i]) {
        *st = tm__errf(TM_EINVAL, fn, "parameter %d is NULL", i);
        return NULL;
    }
    tm_tensor *g = tm_grad(params[i]);
    if (!g) return NULL;
    tm_dtype dt = tm_dtype_of(g);
    if (dt != TM_F32 && dt != TM_F64) {
        *st = tm__errf(TM_EDTYPE, fn, "gradient %d is %s: only F32 and F64 "
                       "gradients are clipped", i, tm_dtype_name(dt));
        return NULL;
    }
    if (!tm_is_contiguous(g)) {
        *st = tm__errf(TM_EINVAL, fn, "gradient %d is not contiguous", i);
        return NULL;
    }
    if ((*st = tm__check_writable(fn, g)) != TM_OK) return NULL;
    return g;
}

/* Checks every gradient; the ones to clip go to gs (borrowed, in order;
 * may be NULL to only check) and their count to *ng.  With `one_device`
 * they must share a device. */
static tm_status check_all(const char *fn, tm_tensor *const *params, int n,
                           tm_tensor **gs, int *ng, bool one_device)
{
    if (n < 0 || (n > 0 && !params))
        return tm__errf(TM_EINVAL, fn, "params is NULL or n (%d) < 0", n);
    tm_status st;
    const tm_tensor *first = NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(fn, params, i, &st);
        if (st != TM_OK) return st;
        if (!g) continue;
        if (one_device && first &&
            !tm_device_eq(tm_device_of(g), tm_device_of(first)))
            return tm__errf(TM_EDEVICE, fn, "gradient %d is on %s, an "
                            "earlier one on %s: the norm is taken over one "
                            "device's gradients", i,
                            tm_device_name(tm_device_of(g)),
                            tm_device_name(tm_device_of(first)));
        if (!first) first = g;
        if (gs) gs[k] = g;
        k++;
    }
    *ng = k;
    return TM_OK;
}

/* out (F64, 0-d) = the norm of gs[0..ng) by one grad_norm call.  The
 * entry takes any number of buffers, more than tm__stage holds, so the
 * dtype fallback of tensor_impl.h is applied here with the same rule:
 * when the backend declines the dtypes, every operand goes as F32. */
static tm_status norm_of(const char *fn, tm_tensor *out, tm_tensor **gs,
                         int ng, tm_norm_kind kind, double p)
{
    tm_ctx *cx = tm__ctx(out);
    tm_status st = TM_OK;
    tm_buf *bufs = tm__alloc((size_t)ng * sizeof *bufs, fn);
    tm_dtype *dts = tm__alloc((size_t)(ng + 1) * sizeof *dts, fn);
    tm_tensor **tmp = tm__calloc((size_t)(ng + 1) * sizeof *tmp, fn);
    if (!bufs || !dts || !tmp) {
        st = TM_ENOMEM;
        goto done;
    }
    dts[0] = TM_F64;
    for (int i = 0; i < ng; i++) dts[i + 1] = tm_dtype_of(gs[i]);
    bool staged = false;
    if (cx->backend->supports &&
        !cx->backend->supports(cx, TM_ENTRY_GRAD_NORM, 0, dts, ng + 1)) {
        for (int i = 0; i <= ng; i++) dts[i] = TM_F32;
        if (!cx->backend->supports(cx, TM_ENTRY_GRAD_NORM, 0, dts, ng + 1)) {
            st = tm__errf(TM_EUNSUPPORTED, fn, "device %s does not run "
                          "'grad_norm' on these gradients' dtypes, nor on "
                          "F32 copies", tm_device_name(cx->device));
            goto done;
        }
        staged = true;
    }
    for (int i = 0; i < ng; i++) {
        const tm_tensor *g = gs[i];
        if (staged && tm_dtype_of(g) != TM_F32) {
            if (!(tmp[i + 1] = tm_to_dtype(g, TM_F32))) {
                st = tm_last_status();
                goto done;
            }
            g = tmp[i + 1];
        }
        bufs[i] = tm__buf(g);
    }
    tm_tensor *o = out;
    if (staged) {
        if (!(tmp[0] = tm__tensor_new(fn, NULL, 0, TM_F32, cx->device))) {
            st = tm_last_status();
            goto done;
        }
        o = tmp[0];
    }
    tm_buf ob = tm__buf(o);
    st = TM__CALL(fn, cx, grad_norm, &ob, bufs, ng, kind, p);
    if (!st && staged) st = tm_copy_(out, o);
done:
    if (tmp)
        for (int i = 0; i <= ng; i++) tm_free(tmp[i]);
    tm__dealloc(bufs);
    tm__dealloc(dts);
    tm__dealloc(tmp);
    return st;
}

/* The clip coefficient min(max_norm / (norm + 1e-6), 1) from the 0-d F64
 * norm, on its device (a new reference); NaN stays NaN. */
static tm_tensor *clip_coef(const tm_tensor *norm, double max_norm)
{
    tm_tensor *d = tm_add_scalar(norm, 1e-6);
    tm_tensor *c = d ? tm_binary_rscalar(TM_OP_DIV, max_norm, d) : NULL;
    tm_free(d);
    if (c && tm_clamp_(c, NAN, 1.0)) {
        tm_free(c);
        c = NULL;
    }
    return c;
}

tm_status tm_clip_grad_norm_(tm_tensor *const *params, int n,
                             double max_norm, double norm_type,
                             double *total_norm_out)
{
    static const char *fn = "tm_clip_grad_norm_";
    if (!(max_norm >= 0))
        return TM_ERR(TM_EINVAL, "max_norm %g must be >= 0", max_norm);
    if (!(norm_type > 0))
        return TM_ERR(TM_EINVAL, "norm_type %g must be > 0 (or INFINITY)",
                      norm_type);
    int ng = 0;
    tm_status st = check_all(fn, params, n, NULL, &ng, true);
    if (st != TM_OK) return st;
    if (ng == 0) { /* nothing to clip; the norm of nothing is 0 */
        if (total_norm_out) *total_norm_out = 0;
        return TM_OK;
    }
    tm_norm_kind kind = isinf(norm_type)    ? TM_NORM_INF
                        : norm_type == 2 ? TM_NORM_L2
                        : norm_type == 1 ? TM_NORM_L1
                                         : TM_NORM_P;
    tm_tensor **gs = tm__alloc((size_t)ng * sizeof *gs, fn);
    if (!gs) return TM_ENOMEM;
    check_all(fn, params, n, gs, &ng, true);
    bool prev = tm_no_grad_begin();
    tm_tensor *norm = tm__tensor_new(fn, NULL, 0, TM_F64,
                                     tm_device_of(gs[0]));
    tm_tensor *coef = NULL, *as[2] = {NULL, NULL}; /* coef as F32, F64 */
    st = norm ? norm_of(fn, norm, gs, ng, kind, norm_type)
              : tm_last_status();
    if (!st && !(coef = clip_coef(norm, max_norm))) st = tm_last_status();
    for (int i = 0; !st && i < ng; i++) {
        tm_dtype dt = tm_dtype_of(gs[i]);
        tm_tensor **c = &as[dt == TM_F64];
        if (!*c && !(*c = tm_to_dtype(coef, dt))) {
            st = tm_last_status();
            break;
        }
        st = tm_mul_(gs[i], *c);
    }
    /* the one host synchronization, and only when the norm is wanted */
    if (!st && total_norm_out) st = tm_item(norm, total_norm_out);
    tm_free(as[0]);
    tm_free(as[1]);
    tm_free(coef);
    tm_free(norm);
    tm__dealloc(gs);
    tm_no_grad_end(prev);
    return st ? tm__relabel_error(fn, st) : TM_OK;
}

tm_status tm_clip_grad_value_(tm_tensor *const *params, int n,
                              double clip_value)
{
    static const char *fn = "tm_clip_grad_value_";
    if (!(clip_value >= 0))
        return TM_ERR(TM_EINVAL, "clip_value %g must be >= 0", clip_value);
    int ng = 0;
    tm_status st = check_all(fn, params, n, NULL, &ng, false);
    if (st != TM_OK) return st;
    for (int i = 0; i < n; i++) {
        tm_tensor *g = grad_of(fn, params, i, &st);
        if (!g) continue;
        if ((st = tm_clamp_(g, -clip_value, clip_value)) != TM_OK)
            return tm__relabel_error(fn, st);
    }
    return TM_OK;
}
