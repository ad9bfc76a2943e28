/*
 * loss_pointwise.c — elementwise losses: binary cross entropy with logits,
 * mse, l1, smooth_l1, huber.
 *
 * These are composed from recorded ops (the memory traffic is that of a
 * few elementwise passes, and autograd gets their gradients for free),
 * except binary_cross_entropy_with_logits: its stable form goes through
 * |x| and max(x, 0), whose composed derivative at x == 0 would be wrong,
 * so it has its own node with d/dx = sigmoid(x) - y and d/dy = -x.
 */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

#include <math.h>

static bool check_args(const char *fn, const tm_tensor *x, const tm_tensor *y,
                       tm_reduction red)
{
    if (tm__check_tensor(fn, x, "input") || tm__check_tensor(fn, y, "target"))
        return false;
    const tm_tensor *both[2] = {x, y};
    if (tm__check_same_device(fn, both, 2)) return false;
    if (!tm_dtype_is_float(tm_dtype_of(x)) ||
        !tm_dtype_is_float(tm_dtype_of(y))) {
        tm__errf(TM_EDTYPE, fn, "input and target must be float tensors, "
                 "got %s and %s", tm_dtype_name(tm_dtype_of(x)),
                 tm_dtype_name(tm_dtype_of(y)));
        return false;
    }
    if (red != TM_REDUCTION_MEAN && red != TM_REDUCTION_SUM &&
        red != TM_REDUCTION_NONE) {
        tm__errf(TM_EINVAL, fn, "invalid reduction %d", (int)red);
        return false;
    }
    return true;
}

/* Consumes `l` (NULL passes through); the reduced loss, recorded. */
static tm_tensor *reduce(tm_tensor *l, tm_reduction red)
{
    if (!l || red == TM_REDUCTION_NONE) return l;
    tm_tensor *r = red == TM_REDUCTION_SUM ? tm_sum(l, NULL, 0, false)
                                           : tm_mean(l, NULL, 0, false);
    tm_free(l);
    return r;
}

/* ------------------------------------------------------------------- bce */

/* Saved: x (slot 0), y (slot 1). */
static tm_status bce_backward(tm__node *n, const tm_tensor *g,
                              tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm_tensor *x = tm__ag_saved(n, 0), *y = tm__ag_saved(n, 1);
    if (n->edges[0].needed) {
        tm_tensor *p = tm__sc_keep(&s, tm_sigmoid(x));
        tm_tensor *d = tm__sc_keep(&s, tm_sub(p, y));
        tm_tensor *r = tm__sc_keep(&s, tm_mul(d, g));
        if (r && !(gin[0] = tm__sc_as(r, n->edges[0].dtype)))
            tm__sc_keep(&s, NULL);
    }
    if (n->edges[1].needed) {
        tm_tensor *r = tm__sc_keep(&s, tm_mul(x, g));
        tm_tensor *q = tm__sc_keep(&s, r ? tm_neg(r) : NULL);
        if (q && !(gin[1] = tm__sc_as(q, n->edges[1].dtype)))
            tm__sc_keep(&s, NULL);
    }
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm_binary_cross_entropy_with_logits(const tm_tensor *x,
                                               const tm_tensor *y,
                                               tm_reduction reduction)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    if (!check_args(__func__, x, y, reduction)) return NULL;
    bool same = tm_ndim(x) == tm_ndim(y);
    for (int i = 0; same && i < tm_ndim(x); i++)
        same = tm_shape(x)[i] == tm_shape(y)[i];
    if (!same) {
        tm__errf(TM_ESHAPE, __func__, "target shape %s must equal input "
                 "shape %s",
                 tm__fmt_shape(tm_shape(y), tm_ndim(y), sa, sizeof sa),
                 tm__fmt_shape(tm_shape(x), tm_ndim(x), sb, sizeof sb));
        return NULL;
    }
    /* max(x, 0) - x y + log1p(exp(-|x|)) */
    tm__scratch s = {0};
    tm_tensor *out = NULL;
    bool prev = tm_no_grad_begin();
    tm_tensor *a = tm__sc_keep(&s, tm_abs(x));
    tm_tensor *na = tm__sc_keep(&s, a ? tm_neg(a) : NULL);
    tm_tensor *e = tm__sc_keep(&s, na ? tm_exp(na) : NULL);
    tm_tensor *sp = tm__sc_keep(&s, e ? tm_log1p(e) : NULL);
    tm_tensor *rl = tm__sc_keep(&s, tm_relu(x));
    tm_tensor *xy = tm__sc_keep(&s, tm_mul(x, y));
    tm_tensor *d = tm__sc_keep(&s, rl && xy ? tm_sub(rl, xy) : NULL);
    if (d && sp) out = tm_add(d, sp);
    tm_no_grad_end(prev);
    if (!out) tm__sc_keep(&s, NULL);
    if (tm__sc_done(&s, __func__)) return NULL;
    const tm_tensor *ins[2] = {x, y};
    tm__record r = {.name = "BinaryCrossEntropyWithLogitsBackward",
                    .backward = bce_backward, .nin = 2, .in = ins,
                    .save = {x, y}};
    if (tm__ag_record(&r, out)) {
        tm_free(out);
        return NULL;
    }
    return reduce(out, reduction);
}

/* ------------------------------------------------ mse, l1, smooth_l1, huber */

tm_tensor *tm_mse_loss(const tm_tensor *x, const tm_tensor *y,
                       tm_reduction reduction)
{
    if (!check_args(__func__, x, y, reduction)) return NULL;
    tm_tensor *d = tm_sub(x, y);
    tm_tensor *l = d ? tm_square(d) : NULL;
    tm_free(d);
    return reduce(l, reduction);
}

tm_tensor *tm_l1_loss(const tm_tensor *x, const tm_tensor *y,
                      tm_reduction reduction)
{
    if (!check_args(__func__, x, y, reduction)) return NULL;
    tm_tensor *d = tm_sub(x, y);
    tm_tensor *l = d ? tm_abs(d) : NULL;
    tm_free(d);
    return reduce(l, reduction);
}

/* where(|d| < t, a2 * d^2, a1 * (|d| - b1)): the quadratic branch uses d^2
 * (not |d|^2) so that the gradient at d == 0 is exactly 0. */
static tm_tensor *piecewise(const char *fn, const tm_tensor *x,
                            const tm_tensor *y, tm_reduction red, double t,
                            double a2, double a1, double b1)
{
    tm__scratch s = {0};
    tm_tensor *d = tm__sc_keep(&s, tm_sub(x, y));
    tm_tensor *ad = tm__sc_keep(&s, d ? tm_abs(d) : NULL);
    tm_tensor *tt = tm__sc_keep(
        &s, d ? tm__scalar_on(fn, t, tm_dtype_of(d), tm_device_of(d)) : NULL);
    tm_tensor *c = tm__sc_keep(&s, ad && tt ? tm_lt(ad, tt) : NULL);
    tm_tensor *sq = tm__sc_keep(&s, d ? tm_square(d) : NULL);
    tm_tensor *q = tm__sc_keep(&s, sq ? tm_mul_scalar(sq, a2) : NULL);
    tm_tensor *lm = tm__sc_keep(&s, ad ? tm_sub_scalar(ad, b1) : NULL);
    tm_tensor *li = tm__sc_keep(&s, lm ? tm_mul_scalar(lm, a1) : NULL);
    tm_tensor *l = c && q && li ? tm_where(c, q, li) : NULL;
    if (!l) tm__sc_keep(&s, NULL);
    if (tm__sc_done(&s, fn)) return NULL;
    return reduce(l, red);
}

tm_tensor *tm_smooth_l1_loss(const tm_tensor *x, const tm_tensor *y,
                             tm_reduction reduction, double beta)
{
    if (!check_args(__func__, x, y, reduction)) return NULL;
    if (!(beta >= 0.0) || beta == INFINITY) {
        tm__errf(TM_EINVAL, __func__, "beta must be finite and >= 0, got %g",
                 beta);
        return NULL;
    }
    if (beta == 0.0) return tm_l1_loss(x, y, reduction);
    return piecewise(__func__, x, y, reduction, beta, 0.5 / beta, 1.0,
                     0.5 * beta);
}

tm_tensor *tm_huber_loss(const tm_tensor *x, const tm_tensor *y,
                         tm_reduction reduction, double delta)
{
    if (!check_args(__func__, x, y, reduction)) return NULL;
    if (!(delta > 0.0) || delta == INFINITY) {
        tm__errf(TM_EINVAL, __func__, "delta must be finite and > 0, got %g",
                 delta);
        return NULL;
    }
    return piecewise(__func__, x, y, reduction, delta, 0.5, delta,
                     0.5 * delta);
}
