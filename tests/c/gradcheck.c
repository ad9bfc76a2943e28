/* gradcheck.c — see gradcheck.h. */
#include "gradcheck.h"

#include <stdlib.h>

tm_tensor *tt_leaf(const int64_t *shape, int ndim, uint64_t seed)
{
    tm_rng r = tm_rng_new(seed);
    tm_tensor *t = tm_empty(shape, ndim, TM_F64);
    if (!t || tm_normal_(t, 0.0, 1.0, &r) || tm_requires_grad_(t, true)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

/* sum(f(in) * R) with grad mode as the caller set it; *out_keep receives
 * the output when wanted. */
static tm_tensor *tt_loss(tt_gc_fn f, void *ctx, tm_tensor *const *in,
                          tm_tensor **R, uint64_t seed)
{
    tm_tensor *out = f(in, ctx);
    if (!out) return NULL;
    if (!*R) {
        tm_rng r = tm_rng_new(seed);
        *R = tm_empty(tm_shape(out), tm_ndim(out), tm_dtype_of(out));
        bool prev = tm_no_grad_begin();
        if (*R && tm_normal_(*R, 0.0, 1.0, &r)) {
            tm_free(*R);
            *R = NULL;
        }
        tm_no_grad_end(prev);
        if (!*R) {
            tm_free(out);
            return NULL;
        }
    }
    tm_tensor *p = tm_mul(out, *R);
    tm_tensor *l = p ? tm_sum(p, NULL, 0, false) : NULL;
    tm_free(p);
    tm_free(out);
    return l;
}

bool tt_gradcheck_at(const char *file, int line, const char *name,
                     tt_gc_fn f, void *ctx, tm_tensor *const *inputs, int n,
                     double tol)
{
    const double h = 1e-6;
    tm_tensor *R = NULL;
    bool ok = true;
    for (int i = 0; i < n; i++) tm_zero_grad(inputs[i]);
    tm_tensor *l = tt_loss(f, ctx, inputs, &R, 99);
    if (!l || tm_backward(l)) {
        tt_fail(file, line, "%s: forward/backward failed: %s", name,
                tm_last_error());
        tm_free(l);
        tm_free(R);
        return false;
    }
    tm_free(l);
    bool prev = tm_no_grad_begin();
    for (int i = 0; i < n && ok; i++) {
        tm_tensor *x = inputs[i];
        if (!tm_requires_grad(x)) continue;
        tm_tensor *g = tm_grad(x);
        int64_t numel = tm_numel(x);
        if (!g && numel > 0) {
            tt_fail(file, line, "%s: input %d got no gradient", name, i);
            ok = false;
            break;
        }
        int nd = tm_ndim(x);
        int64_t idx[TM_MAX_DIMS];
        for (int64_t j = 0; j < numel && ok; j++) {
            int64_t rem = j;
            for (int d = nd - 1; d >= 0; d--) {
                idx[d] = rem % tm_shape(x)[d];
                rem /= tm_shape(x)[d];
            }
            double x0, lp, lm, an;
            tm_get(x, idx, &x0);
            tm_set(x, idx, x0 + h);
            tm_tensor *a = tt_loss(f, ctx, inputs, &R, 99);
            tm_set(x, idx, x0 - h);
            tm_tensor *b = tt_loss(f, ctx, inputs, &R, 99);
            tm_set(x, idx, x0);
            if (!a || !b || tm_item(a, &lp) || tm_item(b, &lm) ||
                tm_get(g, idx, &an)) {
                tt_fail(file, line, "%s: evaluation failed: %s", name,
                        tm_last_error());
                ok = false;
            } else {
                double num = (lp - lm) / (2 * h);
                if (!(fabs(an - num) <= tol * (1 + fabs(num)))) {
                    tt_fail(file, line,
                            "%s: d/d input %d element %lld: analytic %.12g, "
                            "numeric %.12g", name, i, (long long)j, an, num);
                    ok = false;
                }
            }
            tm_free(a);
            tm_free(b);
        }
    }
    tm_no_grad_end(prev);
    for (int i = 0; i < n; i++) tm_zero_grad(inputs[i]);
    tm_free(R);
    return ok;
}

double *tt_values(const tm_tensor *t)
{
    size_t n = (size_t)tm_numel(t);
    double *v = malloc(sizeof(double) * (n ? n : 1));
    if (v && tm_copy_to_buffer(t, v, sizeof(double) * n, TM_F64)) {
        free(v);
        return NULL;
    }
    return v;
}
