/*
 * dropout.c — tm_dropout and its backward ("NativeDropoutBackward").
 * Composed from ops (run under no-grad, one node recorded for the whole):
 * an F32 uniform per element, a compare and a scale make the mask, and
 * x * mask is the result, so it has no element loop of its own.  Every
 * temporary is made on x's device.
 */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

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
        mask = tm_zeros_like(x);
        out = mask ? tm_zeros_like(x) : NULL;
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
