/*
 * loss_distance.c — normalize, binary cross entropy on probabilities,
 * kl_div, cosine_similarity, pairwise_distance, triplet_margin_loss.
 *
 * All but binary_cross_entropy are composed from recorded ops.  Binary
 * cross entropy has its own node: its log terms are clamped at -100 (as
 * PyTorch's), and the composed derivative of clamp(log(x)) at x == 0 is
 * 0 * inf = NaN, where PyTorch's rule (x - y) / max(x (1 - x), 1e-12)
 * stays finite.
 */
#include "foundry/nn_functional.h"

#include "functional_impl.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

#include <math.h>

static bool check_reduction(const char *fn, tm_reduction red, bool batchmean)
{
    if (red == TM_REDUCTION_MEAN || red == TM_REDUCTION_SUM ||
        red == TM_REDUCTION_NONE || (batchmean && red == TM_REDUCTION_BATCHMEAN))
        return true;
    tm__errf(TM_EINVAL, fn, "invalid reduction %d", (int)red);
    return false;
}

static tm_tensor *finish(tm__scratch *s, const char *fn, tm_tensor *r)
{
    if (!r && !s->st) tm__sc_keep(s, NULL);
    if (tm__sc_done(s, fn)) {
        tm_free(r);
        return NULL;
    }
    return r;
}

/* Consumes `l` (NULL passes through); the reduced loss, recorded.
 * BATCHMEAN divides the sum by the size of dim 0 (1 for a 0-d l). */
static tm_tensor *reduce(tm_tensor *l, tm_reduction red, int64_t batch)
{
    if (!l || red == TM_REDUCTION_NONE) return l;
    tm_tensor *r = red == TM_REDUCTION_MEAN ? tm_mean(l, NULL, 0, false)
                                            : tm_sum(l, NULL, 0, false);
    tm_free(l);
    if (r && red == TM_REDUCTION_BATCHMEAN) {
        tm_tensor *q = tm_div_scalar(r, (double)batch);
        tm_free(r);
        r = q;
    }
    return r;
}

static bool same_shape(const tm_tensor *a, const tm_tensor *b)
{
    if (tm_ndim(a) != tm_ndim(b)) return false;
    for (int i = 0; i < tm_ndim(a); i++)
        if (tm_shape(a)[i] != tm_shape(b)[i]) return false;
    return true;
}

/* The broadcast shape of a and b into shape (TM_MAX_DIMS); its ndim, or
 * -1 with an error when they do not broadcast. */
static int broadcast_shape(const char *fn, const tm_tensor *a,
                           const tm_tensor *b, int64_t *shape)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    int na = tm_ndim(a), nb = tm_ndim(b), n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : tm_shape(a)[i - (n - na)];
        int64_t db = i < n - nb ? 1 : tm_shape(b)[i - (n - nb)];
        if (da != db && da != 1 && db != 1) {
            tm__errf(TM_ESHAPE, fn, "shapes %s and %s do not broadcast",
                     tm__fmt_shape(tm_shape(a), na, sa, sizeof sa),
                     tm__fmt_shape(tm_shape(b), nb, sb, sizeof sb));
            return -1;
        }
        shape[i] = da == 1 ? db : da;
    }
    return n;
}

/* ------------------------------------------------------------- normalize */

tm_tensor *tm_normalize(const tm_tensor *x, double p, int dim, double eps)
{
    if (!tm__nn_check_float(__func__, x, "input")) return NULL;
    int d;
    if (tm__wrap_dim(__func__, dim, tm_ndim(x), &d)) return NULL;
    if (isnan(eps) || isnan(p)) {
        tm__errf(TM_EINVAL, __func__, "p (%g) and eps (%g) must not be NaN",
                 p, eps);
        return NULL;
    }
    tm__scratch s = {0};
    int nd = tm_ndim(x) > 0;
    tm_tensor *n = tm__sc_keep(&s, tm_norm(x, &d, nd, p, true));
    tm_tensor *c = s.st ? NULL : tm__sc_keep(&s, tm_clamp(n, eps, NAN));
    return finish(&s, __func__, s.st ? NULL : tm_div(x, c));
}

/* -------------------------------------------------- binary cross entropy */

/* Saved: x (slot 0), y (slot 1).  PyTorch's rules:
 *   d/dx = (x - y) / max(x (1 - x), 1e-12)
 *   d/dy = max(log1p(-x), -100) - max(log(x), -100). */
static tm_status bce_backward(tm__node *n, const tm_tensor *g,
                              tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm_tensor *x = tm__ag_saved(n, 0), *y = tm__ag_saved(n, 1);
    if (n->edges[0].needed) {
        tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, x, y);
        tm_tensor *om = tm__sc_rscalar(&s, TM_OP_SUB, 1.0, x);
        tm_tensor *v = tm__sc_binary(&s, TM_OP_MUL, x, om);
        /* PyTorch's floor is the float 1e-12 */
        tm_tensor *m = tm__sc_scalar(&s, TM_OP_MAXIMUM, v, (double)1e-12f);
        tm_tensor *q = tm__sc_binary(&s, TM_OP_DIV, d, m);
        tm_tensor *r = tm__sc_binary(&s, TM_OP_MUL, q, g);
        gin[0] = tm__sc_grad_for(&s, r, &n->edges[0]);
    }
    if (n->edges[1].needed) {
        tm_tensor *nx = tm__sc_unary(&s, TM_OP_NEG, x);
        tm_tensor *l1 = tm__sc_unary(&s, TM_OP_LOG1P, nx);
        l1 = tm__sc_scalar(&s, TM_OP_MAXIMUM, l1, -100.0);
        tm_tensor *l0 = tm__sc_unary(&s, TM_OP_LOG, x);
        l0 = tm__sc_scalar(&s, TM_OP_MAXIMUM, l0, -100.0);
        tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, l1, l0);
        tm_tensor *r = tm__sc_binary(&s, TM_OP_MUL, d, g);
        gin[1] = tm__sc_grad_for(&s, r, &n->edges[1]);
    }
    return tm__sc_done(&s, n->name);
}

/* Fails unless every element of x lies in [0, 1] (NaN does not). */
static bool check_unit(const char *fn, const tm_tensor *x)
{
    if (tm_numel(x) == 0) return true;
    tm__scratch s = {0};
    double ok = 0;
    bool prev = tm_no_grad_begin();
    tm_tensor *a = tm__sc_scalar(&s, TM_OP_GE, x, 0.0);
    tm_tensor *b = tm__sc_scalar(&s, TM_OP_LE, x, 1.0);
    tm_tensor *in = tm__sc_binary(&s, TM_OP_LOGICAL_AND, a, b);
    tm_tensor *all = s.st ? NULL : tm__sc_keep(&s, tm_all(in, NULL, 0,
                                                          false));
    if (all && tm_item(all, &ok)) tm__sc_keep(&s, NULL);
    tm_no_grad_end(prev);
    if (tm__sc_done(&s, fn)) return false;
    if (!ok) {
        tm__errf(TM_EINVAL, fn, "all elements of input should be between 0 "
                 "and 1");
        return false;
    }
    return true;
}

tm_tensor *tm_binary_cross_entropy(const tm_tensor *x, const tm_tensor *y,
                                   const tm_tensor *weight,
                                   tm_reduction reduction)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    if (!tm__nn_check_float(__func__, x, "input") ||
        !tm__nn_check_float(__func__, y, "target") ||
        (weight && !tm__nn_check_float(__func__, weight, "weight")) ||
        !check_reduction(__func__, reduction, false))
        return NULL;
    const tm_tensor *all[3] = {x, y, weight};
    if (tm__check_same_device(__func__, all, 3)) return NULL;
    if (!same_shape(x, y)) {
        tm__errf(TM_ESHAPE, __func__, "target shape %s must equal input "
                 "shape %s",
                 tm__fmt_shape(tm_shape(y), tm_ndim(y), sa, sizeof sa),
                 tm__fmt_shape(tm_shape(x), tm_ndim(x), sb, sizeof sb));
        return NULL;
    }
    if (weight) {
        int64_t bs[TM_MAX_DIMS];
        int n = broadcast_shape(__func__, x, weight, bs);
        if (n < 0) return NULL;
        bool ok = n == tm_ndim(x);
        for (int i = 0; ok && i < n; i++) ok = bs[i] == tm_shape(x)[i];
        if (!ok) {
            tm__errf(TM_ESHAPE, __func__, "weight shape %s must broadcast "
                     "to the input shape %s",
                     tm__fmt_shape(tm_shape(weight), tm_ndim(weight), sa,
                                   sizeof sa),
                     tm__fmt_shape(tm_shape(x), tm_ndim(x), sb, sizeof sb));
            return NULL;
        }
    }
    if (!check_unit(__func__, x)) return NULL;
    /* (y - 1) max(log1p(-x), -100) - y max(log(x), -100) */
    tm__scratch s = {0};
    tm_tensor *out = NULL;
    bool prev = tm_no_grad_begin();
    tm_tensor *nx = tm__sc_unary(&s, TM_OP_NEG, x);
    tm_tensor *l1 = tm__sc_unary(&s, TM_OP_LOG1P, nx);
    l1 = tm__sc_scalar(&s, TM_OP_MAXIMUM, l1, -100.0);
    tm_tensor *l0 = tm__sc_unary(&s, TM_OP_LOG, x);
    l0 = tm__sc_scalar(&s, TM_OP_MAXIMUM, l0, -100.0);
    tm_tensor *ym = tm__sc_scalar(&s, TM_OP_SUB, y, 1.0);
    tm_tensor *a = tm__sc_binary(&s, TM_OP_MUL, ym, l1);
    tm_tensor *b = tm__sc_binary(&s, TM_OP_MUL, y, l0);
    if (!s.st) out = tm_sub(a, b);
    tm_no_grad_end(prev);
    if (!out) tm__sc_keep(&s, NULL);
    if (tm__sc_done(&s, __func__)) return NULL;
    const tm_tensor *ins[2] = {x, y};
    tm__record r = {.name = "BinaryCrossEntropyBackward",
                    .backward = bce_backward, .nin = 2, .in = ins,
                    .save = {x, y}};
    if (tm__ag_record(&r, out)) {
        tm_free(out);
        return NULL;
    }
    if (weight) { /* PyTorch does not differentiate the weight */
        tm_tensor *w = tm_detach(weight);
        tm_tensor *o = w ? tm_mul(out, w) : NULL;
        tm_free(w);
        tm_free(out);
        out = o;
    }
    return reduce(out, reduction, 1);
}

/* ---------------------------------------------------------------- kl_div */

tm_tensor *tm_kl_div(const tm_tensor *x, const tm_tensor *y,
                     tm_reduction reduction, bool log_target)
{
    if (!tm__nn_check_float(__func__, x, "input") ||
        !tm__nn_check_float(__func__, y, "target") ||
        !check_reduction(__func__, reduction, true))
        return NULL;
    const tm_tensor *both[2] = {x, y};
    if (tm__check_same_device(__func__, both, 2)) return NULL;
    int64_t bs[TM_MAX_DIMS];
    if (broadcast_shape(__func__, x, y, bs) < 0) return NULL;
    tm__scratch s = {0};
    tm_tensor *l = NULL;
    if (log_target) { /* exp(y) (y - x) */
        tm_tensor *e = tm__sc_unary(&s, TM_OP_EXP, y);
        tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, y, x);
        l = s.st ? NULL : tm_mul(e, d);
    } else {
        /* xlogy(y, y) - y x: y log y is 0 where y == 0, and log sees 1
         * there so that no 0 * inf reaches the gradient */
        tm_tensor *z = tm__sc_scalar(&s, TM_OP_EQ, y, 0.0);
        tm_tensor *one = s.st ? NULL : tm__sc_keep(&s, tm__scalar_on(
            __func__, 1.0, tm_dtype_of(y), tm_device_of(y)));
        tm_tensor *safe = tm__sc_where(&s, z, one, y);
        tm_tensor *lg = tm__sc_unary(&s, TM_OP_LOG, safe);
        tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, lg, x);
        l = s.st ? NULL : tm_mul(y, d);
    }
    l = finish(&s, __func__, l);
    int64_t batch = tm_ndim(x) > 0 ? tm_shape(x)[0] : 1;
    return reduce(l, reduction, batch);
}

/* ---------------------------------------------------------- distances */

tm_tensor *tm_cosine_similarity(const tm_tensor *x1, const tm_tensor *x2,
                                int dim, double eps)
{
    if (!tm__nn_check_float(__func__, x1, "x1") || !tm__nn_check_float(__func__, x2, "x2"))
        return NULL;
    const tm_tensor *both[2] = {x1, x2};
    if (tm__check_same_device(__func__, both, 2)) return NULL;
    int64_t bs[TM_MAX_DIMS];
    int nb = broadcast_shape(__func__, x1, x2, bs), d;
    if (nb < 0 || tm__wrap_dim(__func__, dim, nb, &d)) return NULL;
    if (isnan(eps)) {
        tm__errf(TM_EINVAL, __func__, "eps must not be NaN");
        return NULL;
    }
    tm__scratch s = {0};
    const tm_tensor *in[2] = {x1, x2};
    tm_tensor *u[2] = {NULL, NULL};
    int nd = nb > 0;
    for (int i = 0; i < 2; i++) {
        tm_tensor *e = s.st ? NULL : tm__sc_keep(&s, tm_expand(in[i], bs, nb));
        tm_tensor *n = s.st ? NULL : tm__sc_keep(&s, tm_norm(e, &d, nd, 2.0,
                                                             true));
        /* PyTorch clamps each norm at eps in place under no_grad: the
         * value is max(norm, eps), the gradient that of the norm */
        tm_tensor *delta = NULL;
        if (!s.st) {
            bool prev = tm_no_grad_begin();
            tm_tensor *c = tm__sc_keep(&s, tm_clamp(n, eps, NAN));
            delta = tm__sc_binary(&s, TM_OP_SUB, c, n);
            tm_no_grad_end(prev);
        }
        tm_tensor *nn = tm__sc_binary(&s, TM_OP_ADD, n, delta);
        u[i] = tm__sc_binary(&s, TM_OP_DIV, e, nn);
    }
    tm_tensor *p = tm__sc_binary(&s, TM_OP_MUL, u[0], u[1]);
    return finish(&s, __func__, s.st ? NULL : tm_sum(p, &d, nd, false));
}

/* ||x1 - x2 + eps||_p over the last dim of the broadcast shape. */
static tm_tensor *pdist(const char *fn, const tm_tensor *x1,
                        const tm_tensor *x2, double p, double eps,
                        bool keepdim)
{
    int64_t bs[TM_MAX_DIMS];
    int nb = broadcast_shape(fn, x1, x2, bs);
    if (nb < 0) return NULL;
    tm__scratch s = {0};
    tm_tensor *df = tm__sc_binary(&s, TM_OP_SUB, x1, x2);
    df = tm__sc_scalar(&s, TM_OP_ADD, df, eps);
    int d = nb - 1;
    return finish(&s, fn, s.st ? NULL : tm_norm(df, &d, nb > 0, p, keepdim));
}

tm_tensor *tm_pairwise_distance(const tm_tensor *x1, const tm_tensor *x2,
                                double p, double eps, bool keepdim)
{
    if (!tm__nn_check_float(__func__, x1, "x1") || !tm__nn_check_float(__func__, x2, "x2"))
        return NULL;
    const tm_tensor *both[2] = {x1, x2};
    if (tm__check_same_device(__func__, both, 2)) return NULL;
    if (isnan(p) || isnan(eps)) {
        tm__errf(TM_EINVAL, __func__, "p (%g) and eps (%g) must not be NaN",
                 p, eps);
        return NULL;
    }
    return pdist(__func__, x1, x2, p, eps, keepdim);
}

tm_tensor *tm_triplet_margin_loss(const tm_tensor *anchor,
                                  const tm_tensor *positive,
                                  const tm_tensor *negative, double margin,
                                  double p, double eps, bool swap,
                                  tm_reduction reduction)
{
    if (!tm__nn_check_float(__func__, anchor, "anchor") ||
        !tm__nn_check_float(__func__, positive, "positive") ||
        !tm__nn_check_float(__func__, negative, "negative") ||
        !check_reduction(__func__, reduction, false))
        return NULL;
    const tm_tensor *all[3] = {anchor, positive, negative};
    if (tm__check_same_device(__func__, all, 3)) return NULL;
    if (tm_ndim(anchor) != tm_ndim(positive) ||
        tm_ndim(anchor) != tm_ndim(negative)) {
        tm__errf(TM_ESHAPE, __func__, "the anchor, positive, and negative "
                 "tensors are expected to have the same number of "
                 "dimensions, but got: anchor %dD, positive %dD, and "
                 "negative %dD inputs", tm_ndim(anchor), tm_ndim(positive),
                 tm_ndim(negative));
        return NULL;
    }
    if (!(margin > 0.0) || isnan(p) || isnan(eps)) {
        tm__errf(TM_EINVAL, __func__, "margin must be greater than 0 and p, "
                 "eps not NaN, got margin %g, p %g, eps %g", margin, p, eps);
        return NULL;
    }
    tm__scratch s = {0};
    tm_tensor *dap = tm__sc_keep(&s, pdist(__func__, anchor, positive, p,
                                           eps, false));
    tm_tensor *dan = s.st ? NULL : tm__sc_keep(&s, pdist(
        __func__, anchor, negative, p, eps, false));
    if (swap && !s.st) {
        tm_tensor *dpn = tm__sc_keep(&s, pdist(__func__, positive, negative,
                                               p, eps, false));
        dan = tm__sc_binary(&s, TM_OP_MINIMUM, dan, dpn);
    }
    tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, dap, dan);
    d = tm__sc_scalar(&s, TM_OP_ADD, d, margin);
    tm_tensor *l = finish(&s, __func__, s.st ? NULL : tm_clamp(d, 0.0, NAN));
    return reduce(l, reduction, 1);
}
