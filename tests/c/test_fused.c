/* test_fused.c — the fused layer_norm, rms_norm and softmax-cross-entropy
 * against their composed formulas, forward and backward, in F32.  The comparison is norm-wise, ||fused - composed|| /
 * ||composed|| <= 1e-6: both sides round every F32 step (~6e-8 each) and
 * the composed side takes ~10 steps, so 1e-6 holds with margin while a
 * wrong formula (a missing term, a wrong eps placement) is far above it. */
#include "harness.h"

static double rel_err(const tm_tensor *a, const tm_tensor *b)
{
    tm_tensor *d = tm_sub(a, b);
    tm_tensor *nd = d ? tm_norm(d, NULL, 0, 2, false) : NULL;
    tm_tensor *nb = tm_norm(b, NULL, 0, 2, false);
    double x = 1e30, y = 1;
    if (nd && nb) {
        tm_item(nd, &x);
        tm_item(nb, &y);
    }
    tm_free(d); tm_free(nd); tm_free(nb);
    return y > 0 ? x / y : x;
}

static tm_tensor *leaf32(const int64_t *shape, int nd, uint64_t seed,
                         double shift)
{
    tm_rng r = tm_rng_new(seed);
    tm_tensor *t = tm_empty(shape, nd, TM_F32);
    if (!t || tm_normal_(t, shift, 1.0, &r) || tm_requires_grad_(t, true)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

/* Backward of sum(y * R) for a fixed R; returns new references to the
 * gradients of the three leaves (NULL entries allowed). */
static void grads(tm_tensor *y, tm_tensor *const *leaves, int n,
                  tm_tensor **out)
{
    tm_rng r = tm_rng_new(5);
    tm_tensor *R = tm_empty(tm_shape(y), tm_ndim(y), TM_F32);
    bool prev = tm_no_grad_begin();
    tm_normal_(R, 0, 1, &r);
    tm_no_grad_end(prev);
    tm_tensor *p = tm_mul(y, R), *l = p ? tm_sum(p, NULL, 0, false) : NULL;
    for (int i = 0; i < n; i++) tm_zero_grad(leaves[i]);
    if (l) tm_backward(l);
    for (int i = 0; i < n; i++) out[i] = tm_retain(tm_grad(leaves[i]));
    tm_free(l); tm_free(p); tm_free(R);
}

static tm_tensor *composed_layer_norm(tm_tensor *x, tm_tensor *w,
                                      tm_tensor *b, double eps, bool rms)
{
    int last[1] = {-1};
    tm_tensor *xc = rms ? tm_retain(x) : NULL, *mu = NULL;
    if (!rms) {
        mu = tm_mean(x, last, 1, true);
        xc = tm_sub(x, mu);
    }
    tm_tensor *sq = tm_mul(xc, xc), *var = tm_mean(sq, last, 1, true);
    tm_tensor *ve = tm_add_scalar(var, eps), *rs = tm_rsqrt(ve);
    tm_tensor *n = tm_mul(xc, rs), *nw = tm_mul(n, w);
    tm_tensor *y = b ? tm_add(nw, b) : tm_retain(nw);
    tm_free(mu); tm_free(xc); tm_free(sq); tm_free(var); tm_free(ve);
    tm_free(rs); tm_free(n); tm_free(nw);
    return y;
}

static void check_norm(bool rms, double shift)
{
    int64_t xs[2] = {33, 257}, ws[1] = {257};
    tm_tensor *x = leaf32(xs, 2, 1, shift), *w = leaf32(ws, 1, 2, 1.0);
    tm_tensor *b = rms ? NULL : leaf32(ws, 1, 3, 0.0);
    REQUIRE(x && w && (rms || b));
    tm_tensor *leaves[3] = {x, w, b};
    int nl = rms ? 2 : 3;
    tm_tensor *yf = rms ? tm_rms_norm(x, w, 1e-5)
                        : tm_layer_norm(x, w, b, 1e-5);
    tm_tensor *yc = composed_layer_norm(x, w, b, 1e-5, rms);
    REQUIRE(yf && yc);
    CHECK(rel_err(yf, yc) <= 1e-6);
    tm_tensor *gf[3] = {0}, *gc[3] = {0};
    grads(yf, leaves, nl, gf);
    grads(yc, leaves, nl, gc);
    for (int i = 0; i < nl; i++) {
        REQUIRE(gf[i] && gc[i]);
        double e = rel_err(gf[i], gc[i]);
        if (!(e <= 1e-6))
            tt_fail(__FILE__, __LINE__, "%s grad %d: relative error %g",
                    rms ? "rms_norm" : "layer_norm", i, e);
    }
    for (int i = 0; i < 3; i++) { tm_free(gf[i]); tm_free(gc[i]); }
    tm_free(yf); tm_free(yc); tm_free(x); tm_free(w); tm_free(b);
}

TEST(fused_layer_norm_matches_composed_formula)
{
    check_norm(false, 0.0);
    check_norm(false, 3.0); /* a mean away from 0 */
}

TEST(fused_rms_norm_matches_composed_formula)
{
    check_norm(true, 0.5);
}

TEST(fused_cross_entropy_matches_log_softmax_and_gather)
{
    int64_t ls[2] = {64, 1000};
    tm_tensor *logits = leaf32(ls, 2, 7, 0.0);
    tm_tensor *t = tm_randint(0, 1000, (int64_t[]){64}, 1, TM_I64);
    REQUIRE(logits && t);
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    tm_tensor *lf = tm_cross_entropy(logits, t, &o);
    tm_tensor *lsm = tm_log_softmax(logits, 1);
    tm_tensor *tc = tm_unsqueeze(t, 1);
    tm_tensor *picked = lsm && tc ? tm_gather(lsm, 1, tc) : NULL;
    tm_tensor *m = picked ? tm_mean(picked, NULL, 0, false) : NULL;
    tm_tensor *lc = m ? tm_neg(m) : NULL;
    REQUIRE(lf && lc);
    CHECK(rel_err(lf, lc) <= 1e-6);
    tm_tensor *gf = NULL, *gc = NULL, *leaves[1] = {logits};
    grads(lf, leaves, 1, &gf);
    grads(lc, leaves, 1, &gc);
    REQUIRE(gf && gc);
    CHECK(rel_err(gf, gc) <= 1e-6);
    tm_free(gf); tm_free(gc); tm_free(lf); tm_free(lc); tm_free(m);
    tm_free(picked); tm_free(tc); tm_free(lsm); tm_free(t); tm_free(logits);
}
