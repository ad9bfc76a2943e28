/*
 * loss_margin.c — margin and count losses: margin_ranking_loss,
 * hinge_embedding_loss, soft_margin_loss, cosine_embedding_loss,
 * poisson_nll_loss, gaussian_nll_loss.
 *
 * Composed from recorded ops (autograd derives the gradients), with
 * PyTorch's formulas, except soft_margin_loss, which is softplus(-y x)
 * rather than PyTorch's log1p(exp(-y x)): the same values where the latter
 * is finite, and finite where exp overflows.
 */
#include "foundry/nn_functional.h"

#include "functional_impl.h"

#include "../../tensor/autograd/backward.h"

#include <math.h>

#define TWO_PI 6.283185307179586476925

/* x, y (and z unless NULL) float tensors on one device; a valid
 * reduction. */
static bool check_args(const char *fn, const tm_tensor *x, const char *xn,
                       const tm_tensor *y, const char *yn, const tm_tensor *z,
                       const char *zn, tm_reduction red)
{
    if (!tm__nn_check_float(fn, x, xn) || !tm__nn_check_float(fn, y, yn) ||
        (zn && !tm__nn_check_float(fn, z, zn)))
        return false;
    const tm_tensor *all[3] = {x, y, z};
    if (tm__check_same_device(fn, all, 3)) return false;
    if (red != TM_REDUCTION_MEAN && red != TM_REDUCTION_SUM &&
        red != TM_REDUCTION_NONE) {
        tm__errf(TM_EINVAL, fn, "invalid reduction %d", (int)red);
        return false;
    }
    return true;
}

/* Hands back the reduced r (consumed) unless a step failed. */
static tm_tensor *finish(tm__scratch *s, const char *fn, tm_tensor *r,
                         tm_reduction red)
{
    if (!r && !s->st) tm__sc_keep(s, NULL);
    if (tm__sc_done(s, fn)) {
        tm_free(r);
        return NULL;
    }
    if (red == TM_REDUCTION_NONE) return r;
    tm_tensor *o = red == TM_REDUCTION_SUM ? tm_sum(r, NULL, 0, false)
                                           : tm_mean(r, NULL, 0, false);
    tm_free(r);
    return o;
}

tm_tensor *tm_margin_ranking_loss(const tm_tensor *x1, const tm_tensor *x2,
                                  const tm_tensor *y, double margin,
                                  tm_reduction reduction)
{
    if (!check_args(__func__, x1, "input1", x2, "input2", y, "target",
                    reduction))
        return NULL;
    if (tm_ndim(x1) != tm_ndim(x2) || tm_ndim(x1) != tm_ndim(y)) {
        tm__errf(TM_ESHAPE, __func__, "all input tensors should have the "
                 "same number of dims, got input1 %d-d, input2 %d-d, target "
                 "%d-d", tm_ndim(x1), tm_ndim(x2), tm_ndim(y));
        return NULL;
    }
    /* max(0, -y (x1 - x2) + margin) */
    tm__scratch s = {0};
    tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, x1, x2);
    tm_tensor *p = tm__sc_binary(&s, TM_OP_MUL, y, d);
    tm_tensor *m = tm__sc_rscalar(&s, TM_OP_SUB, margin, p);
    return finish(&s, __func__, s.st ? NULL : tm_clamp(m, 0.0, NAN),
                  reduction);
}

tm_tensor *tm_hinge_embedding_loss(const tm_tensor *x, const tm_tensor *y,
                                   double margin, tm_reduction reduction)
{
    if (!check_args(__func__, x, "input", y, "target", NULL, NULL,
                    reduction))
        return NULL;
    /* where(y != 1, max(margin - x, 0), 0) + where(y != -1, x, 0) */
    tm__scratch s = {0};
    tm_tensor *zero = s.st ? NULL : tm__sc_keep(&s, tm__scalar_on(
        __func__, 0.0, tm_dtype_of(x), tm_device_of(x)));
    tm_tensor *mx = tm__sc_rscalar(&s, TM_OP_SUB, margin, x);
    tm_tensor *mc = s.st ? NULL : tm__sc_keep(&s, tm_clamp(mx, 0.0, NAN));
    tm_tensor *n1 = tm__sc_scalar(&s, TM_OP_NE, y, 1.0);
    tm_tensor *nm = tm__sc_scalar(&s, TM_OP_NE, y, -1.0);
    tm_tensor *a = tm__sc_where(&s, n1, mc, zero);
    tm_tensor *b = tm__sc_where(&s, nm, x, zero);
    return finish(&s, __func__, s.st ? NULL : tm_add(a, b), reduction);
}

tm_tensor *tm_soft_margin_loss(const tm_tensor *x, const tm_tensor *y,
                               tm_reduction reduction)
{
    if (!check_args(__func__, x, "input", y, "target", NULL, NULL,
                    reduction))
        return NULL;
    tm__scratch s = {0};
    tm_tensor *p = tm__sc_binary(&s, TM_OP_MUL, x, y);
    tm_tensor *n = tm__sc_unary(&s, TM_OP_NEG, p);
    return finish(&s, __func__, s.st ? NULL : tm_softplus(n, 1.0, INFINITY),
                  reduction);
}

tm_tensor *tm_cosine_embedding_loss(const tm_tensor *x1, const tm_tensor *x2,
                                    const tm_tensor *y, double margin,
                                    tm_reduction reduction)
{
    if (!check_args(__func__, x1, "input1", x2, "input2", y, "target",
                    reduction))
        return NULL;
    int ty = tm_ndim(y);
    if (ty > 1) {
        tm__errf(TM_ESHAPE, __func__, "0-d or 1-d target expected, got "
                 "%d-d (multi-target is not supported)", ty);
        return NULL;
    }
    if (tm_ndim(x1) != ty + 1 || tm_ndim(x2) != ty + 1) {
        tm__errf(TM_ESHAPE, __func__, "a %d-d target expects %d-d inputs, "
                 "got %d-d and %d-d", ty, ty + 1, tm_ndim(x1), tm_ndim(x2));
        return NULL;
    }
    /* PyTorch's cos: sum(x1 x2) / sqrt((sum(x1^2) + 1e-12)
     * (sum(x2^2) + 1e-12)) over the last dim */
    int d = ty;
    tm__scratch s = {0};
    tm_tensor *p = tm__sc_binary(&s, TM_OP_MUL, x1, x2);
    tm_tensor *ps = s.st ? NULL : tm__sc_keep(&s, tm_sum(p, &d, 1, false));
    tm_tensor *q1 = tm__sc_unary(&s, TM_OP_SQUARE, x1);
    tm_tensor *s1 = s.st ? NULL : tm__sc_keep(&s, tm_sum(q1, &d, 1, false));
    s1 = tm__sc_scalar(&s, TM_OP_ADD, s1, 1e-12);
    tm_tensor *q2 = tm__sc_unary(&s, TM_OP_SQUARE, x2);
    tm_tensor *s2 = s.st ? NULL : tm__sc_keep(&s, tm_sum(q2, &d, 1, false));
    s2 = tm__sc_scalar(&s, TM_OP_ADD, s2, 1e-12);
    tm_tensor *den = tm__sc_binary(&s, TM_OP_MUL, s1, s2);
    den = tm__sc_unary(&s, TM_OP_SQRT, den);
    tm_tensor *cos = tm__sc_binary(&s, TM_OP_DIV, ps, den);
    tm_tensor *zero = s.st ? NULL : tm__sc_keep(&s, tm__scalar_on(
        __func__, 0.0, tm_dtype_of(cos), tm_device_of(cos)));
    tm_tensor *pos = tm__sc_rscalar(&s, TM_OP_SUB, 1.0, cos);
    tm_tensor *neg = tm__sc_scalar(&s, TM_OP_SUB, cos, margin);
    neg = s.st ? NULL : tm__sc_keep(&s, tm_clamp(neg, 0.0, NAN));
    tm_tensor *e1 = tm__sc_scalar(&s, TM_OP_EQ, y, 1.0);
    tm_tensor *em = tm__sc_scalar(&s, TM_OP_EQ, y, -1.0);
    tm_tensor *a = tm__sc_where(&s, e1, pos, zero);
    tm_tensor *b = tm__sc_where(&s, em, neg, zero);
    return finish(&s, __func__, s.st ? NULL : tm_add(a, b), reduction);
}

tm_tensor *tm_poisson_nll_loss(const tm_tensor *x, const tm_tensor *y,
                               bool log_input, bool full, double eps,
                               tm_reduction reduction)
{
    if (!check_args(__func__, x, "input", y, "target", NULL, NULL,
                    reduction))
        return NULL;
    if (isnan(eps)) {
        tm__errf(TM_EINVAL, __func__, "eps must not be NaN");
        return NULL;
    }
    tm__scratch s = {0};
    tm_tensor *l;
    if (log_input) { /* exp(x) - y x */
        tm_tensor *e = tm__sc_unary(&s, TM_OP_EXP, x);
        tm_tensor *yx = tm__sc_binary(&s, TM_OP_MUL, y, x);
        l = tm__sc_binary(&s, TM_OP_SUB, e, yx);
    } else { /* x - y log(x + eps) */
        tm_tensor *xe = tm__sc_scalar(&s, TM_OP_ADD, x, eps);
        tm_tensor *lg = tm__sc_unary(&s, TM_OP_LOG, xe);
        tm_tensor *ylg = tm__sc_binary(&s, TM_OP_MUL, y, lg);
        l = tm__sc_binary(&s, TM_OP_SUB, x, ylg);
    }
    if (full) {
        /* Stirling's term y log y - y + log(2 pi y) / 2 where y > 1; log
         * sees 1 elsewhere so that no NaN reaches the gradient */
        tm_tensor *big = tm__sc_scalar(&s, TM_OP_GT, y, 1.0);
        tm_tensor *one = s.st ? NULL : tm__sc_keep(&s, tm__scalar_on(
            __func__, 1.0, tm_dtype_of(y), tm_device_of(y)));
        tm_tensor *zero = s.st ? NULL : tm__sc_keep(&s, tm__scalar_on(
            __func__, 0.0, tm_dtype_of(y), tm_device_of(y)));
        tm_tensor *ys = tm__sc_where(&s, big, y, one);
        tm_tensor *lg = tm__sc_unary(&s, TM_OP_LOG, ys);
        tm_tensor *t = tm__sc_binary(&s, TM_OP_MUL, ys, lg);
        t = tm__sc_binary(&s, TM_OP_SUB, t, ys);
        tm_tensor *l2 = tm__sc_scalar(&s, TM_OP_MUL, ys, TWO_PI);
        l2 = tm__sc_unary(&s, TM_OP_LOG, l2);
        l2 = tm__sc_scalar(&s, TM_OP_MUL, l2, 0.5);
        t = tm__sc_binary(&s, TM_OP_ADD, t, l2);
        t = tm__sc_where(&s, big, t, zero);
        l = tm__sc_binary(&s, TM_OP_ADD, l, t);
    }
    /* l is kept by the scratch arena: hand back a reference of its own */
    return finish(&s, __func__, s.st || !l ? NULL : tm_retain(l), reduction);
}

/* var's shape against x's (PyTorch's rules): x's shape; x's without the
 * last dim (then unsqueezed, *unsq set); or x's ndim with exactly one
 * other dim, of size 1 in var. */
static bool gauss_var_shape(const char *fn, const tm_tensor *x,
                            const tm_tensor *var, bool *unsq)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    int nx = tm_ndim(x), nv = tm_ndim(var);
    const int64_t *xs = tm_shape(x), *vs = tm_shape(var);
    *unsq = false;
    if (nx == nv) {
        int64_t off = 0;
        for (int i = 0; i < nx; i++)
            if (xs[i] != vs[i]) off += vs[i];
        if (off <= 1) return true;
    } else if (nv == nx - 1) {
        bool same = true;
        for (int i = 0; i < nv; i++) same = same && xs[i] == vs[i];
        if (same) return *unsq = true;
    }
    tm__errf(TM_ESHAPE, fn, "var is of incorrect size: %s for input %s",
             tm__fmt_shape(vs, nv, sa, sizeof sa),
             tm__fmt_shape(xs, nx, sb, sizeof sb));
    return false;
}

tm_tensor *tm_gaussian_nll_loss(const tm_tensor *x, const tm_tensor *y,
                                const tm_tensor *var, bool full, double eps,
                                tm_reduction reduction)
{
    bool unsq;
    if (!check_args(__func__, x, "input", y, "target", var, "var",
                    reduction) ||
        !gauss_var_shape(__func__, x, var, &unsq))
        return NULL;
    if (isnan(eps)) {
        tm__errf(TM_EINVAL, __func__, "eps must not be NaN");
        return NULL;
    }
    tm__scratch s = {0};
    double neg = 0;
    if (tm_numel(var) > 0) { /* a host read, as PyTorch's check */
        bool prev = tm_no_grad_begin();
        tm_tensor *lt = tm__sc_scalar(&s, TM_OP_LT, var, 0.0);
        tm_tensor *any = s.st ? NULL : tm__sc_keep(&s, tm_any(lt, NULL, 0,
                                                              false));
        if (any && tm_item(any, &neg)) tm__sc_keep(&s, NULL);
        tm_no_grad_end(prev);
    }
    if (!s.st && neg) {
        tm__sc_done(&s, __func__);
        tm__errf(TM_EINVAL, __func__, "var has negative entry/entries");
        return NULL;
    }
    const tm_tensor *v = var;
    if (unsq && !s.st) v = tm__sc_keep(&s, tm_unsqueeze(var, -1));
    /* PyTorch clamps var at eps in place under no_grad: the value is
     * max(var, eps), the gradient that of var */
    tm_tensor *delta = NULL;
    if (!s.st) {
        bool prev = tm_no_grad_begin();
        tm_tensor *c = tm__sc_keep(&s, tm_clamp(v, eps, NAN));
        delta = tm__sc_binary(&s, TM_OP_SUB, c, v);
        tm_no_grad_end(prev);
    }
    tm_tensor *vc = tm__sc_binary(&s, TM_OP_ADD, v, delta);
    tm_tensor *lg = tm__sc_unary(&s, TM_OP_LOG, vc);
    tm_tensor *d = tm__sc_binary(&s, TM_OP_SUB, x, y);
    tm_tensor *q = tm__sc_unary(&s, TM_OP_SQUARE, d);
    q = tm__sc_binary(&s, TM_OP_DIV, q, vc);
    tm_tensor *l = tm__sc_binary(&s, TM_OP_ADD, lg, q);
    l = tm__sc_scalar(&s, TM_OP_MUL, l, 0.5);
    if (full) l = tm__sc_scalar(&s, TM_OP_ADD, l, 0.5 * log(TWO_PI));
    return finish(&s, __func__, s.st || !l ? NULL : tm_retain(l), reduction);
}
