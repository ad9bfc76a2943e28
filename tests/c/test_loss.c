/* test_loss.c — losses (cross_entropy, nll_loss,
 * binary_cross_entropy_with_logits, mse, l1, smooth_l1, huber), dropout
 * and embedding: central-difference gradient checks in F64 (gradcheck.h;
 * tol 1e-6 everywhere: every loss is smooth at the random points used —
 * the kinks of l1 / smooth_l1 / huber sit on sets the random values miss
 * by far more than h = 1e-6), exact hand-computed values, fused vs
 * composed cross entropy in F32, and error paths with their messages. */
#include "gradcheck.h"

#include <math.h>

#define TOL 1e-6

static const tm_reduction REDS[3] = {TM_REDUCTION_MEAN, TM_REDUCTION_SUM,
                                     TM_REDUCTION_NONE};

static tm_tensor *itensor(const double *v, const int64_t *shape, int nd,
                          tm_dtype dt)
{
    return tt_tensor(v, shape, nd, dt);
}

static double item(const tm_tensor *t)
{
    double v = NAN;
    if (t) tm_item(t, &v);
    return v;
}

/* ------------------------------------------------------ cross entropy */

typedef struct {
    bool nll;
    tm_tensor *target; /* class indices (NULL: in[1] holds probabilities) */
    tm_cross_entropy_opts o;
    bool transpose; /* logits leaf is [C, N]; f transposes it */
} cectx;

static tm_tensor *f_ce(tm_tensor *const *in, void *vc)
{
    const cectx *c = vc;
    tm_tensor *x = c->transpose ? tm_transpose(in[0], 0, 1) : tm_retain(in[0]);
    if (!x) return NULL;
    const tm_tensor *t = c->target ? c->target : in[1];
    tm_tensor *r = c->nll ? tm_nll_loss(x, t, c->o.reduction, c->o.ignore_index)
                          : tm_cross_entropy(x, t, &c->o);
    tm_free(x);
    return r;
}

TEST(cross_entropy_grad_class_index)
{
    tm_tensor *x = TT_LEAF(1, 4, 5), *xt = TT_LEAF(2, 5, 4);
    tm_tensor *t = itensor((double[]){1, 4, 0, 1}, (int64_t[]){4}, 1, TM_I64);
    tm_tensor *ti = itensor((double[]){1, -100, 3, 2}, (int64_t[]){4}, 1,
                            TM_I32);
    REQUIRE(x && xt && t && ti);
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 4; k++) {
            cectx c = {false, k == 1 ? ti : t, tm_cross_entropy_defaults(),
                       k == 3};
            c.o.reduction = REDS[r];
            if (k == 2) c.o.label_smoothing = 0.2;
            tm_tensor *in = k == 3 ? xt : x;
            CHECK(GRADCHECK("cross_entropy", f_ce, &c, &in, 1, TOL));
        }
    }
    tm_free(x);
    tm_free(xt);
    tm_free(t);
    tm_free(ti);
}

TEST(cross_entropy_grad_probabilities)
{
    tm_tensor *x = TT_LEAF(3, 3, 4), *y = TT_LEAF(4, 3, 4);
    REQUIRE(x && y);
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 2; k++) {
            cectx c = {false, NULL, tm_cross_entropy_defaults(), false};
            c.o.reduction = REDS[r];
            c.o.label_smoothing = k ? 0.1 : 0.0;
            tm_tensor *in[2] = {x, y};
            CHECK(GRADCHECK("cross_entropy prob", f_ce, &c, in, 2, TOL));
        }
    }
    tm_free(x);
    tm_free(y);
}

TEST(cross_entropy_grad_spatial_and_1d)
{
    /* [N, C, d] = [2, 3, 4] with targets [2, 4]; probabilities too */
    tm_tensor *x = TT_LEAF(5, 2, 3, 4), *y = TT_LEAF(6, 2, 3, 4);
    tm_tensor *t = itensor((double[]){0, 1, 2, 1, 2, -100, 0, 0},
                           (int64_t[]){2, 4}, 2, TM_I64);
    tm_tensor *x1 = TT_LEAF(7, 5);
    tm_tensor *t0 = itensor((double[]){3}, NULL, 0, TM_I64);
    REQUIRE(x && y && t && x1 && t0);
    for (int r = 0; r < 3; r++) {
        cectx c = {false, t, tm_cross_entropy_defaults(), false};
        c.o.reduction = REDS[r];
        c.o.label_smoothing = 0.05;
        CHECK(GRADCHECK("cross_entropy [N,C,d]", f_ce, &c, &x, 1, TOL));
        cectx cp = c;
        cp.target = NULL;
        tm_tensor *in[2] = {x, y};
        CHECK(GRADCHECK("cross_entropy [N,C,d] prob", f_ce, &cp, in, 2, TOL));
        cectx c1 = {false, t0, tm_cross_entropy_defaults(), false};
        c1.o.reduction = REDS[r];
        CHECK(GRADCHECK("cross_entropy [C]", f_ce, &c1, &x1, 1, TOL));
    }
    tm_free(x);
    tm_free(y);
    tm_free(t);
    tm_free(x1);
    tm_free(t0);
}

TEST(nll_loss_grad)
{
    tm_tensor *x = TT_LEAF(8, 4, 3), *x3 = TT_LEAF(9, 2, 3, 2);
    tm_tensor *t = itensor((double[]){2, 0, 7, 1}, (int64_t[]){4}, 1, TM_I64);
    tm_tensor *t3 = itensor((double[]){0, 2, 1, 1}, (int64_t[]){2, 2}, 2,
                            TM_I32);
    REQUIRE(x && x3 && t && t3);
    for (int r = 0; r < 3; r++) {
        cectx c = {true, t, tm_cross_entropy_defaults(), false};
        c.o.reduction = REDS[r];
        c.o.ignore_index = 7;
        CHECK(GRADCHECK("nll_loss", f_ce, &c, &x, 1, TOL));
        cectx c3 = {true, t3, tm_cross_entropy_defaults(), false};
        c3.o.reduction = REDS[r];
        CHECK(GRADCHECK("nll_loss [N,C,d]", f_ce, &c3, &x3, 1, TOL));
    }
    tm_free(x);
    tm_free(x3);
    tm_free(t);
    tm_free(t3);
}

TEST(cross_entropy_exact_values)
{
    /* uniform logits: every sample's loss is log C */
    tm_tensor *z = tm_zeros((int64_t[]){2, 4}, 2, TM_F64);
    tm_tensor *t = itensor((double[]){1, 3}, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *l = tm_cross_entropy(z, t, NULL);
    CHECK_NEAR(item(l), log(4.0), 1e-15);
    tm_free(l);
    /* [[1, 2, 3]], target 2: log(e + e^2 + e^3) - 3 */
    tm_tensor *x = itensor((double[]){1, 2, 3}, (int64_t[]){1, 3}, 2, TM_F64);
    tm_tensor *t2 = itensor((double[]){2}, (int64_t[]){1}, 1, TM_I64);
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    l = tm_cross_entropy(x, t2, NULL);
    CHECK_NEAR(item(l), lse - 3.0, 1e-14);
    tm_free(l);
    /* label smoothing 0.3 with C = 3: lse - 0.7 x_t - 0.1 sum(x) */
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.label_smoothing = 0.3;
    l = tm_cross_entropy(x, t2, &o);
    CHECK_NEAR(item(l), lse - 0.7 * 3.0 - 0.1 * 6.0, 1e-14);
    tm_free(l);
    /* sum over samples, and mean over the non-ignored ones only */
    tm_tensor *ti = itensor((double[]){1, -100}, (int64_t[]){2}, 1, TM_I64);
    o = tm_cross_entropy_defaults();
    l = tm_cross_entropy(z, ti, &o);
    CHECK_NEAR(item(l), log(4.0), 1e-15);
    tm_free(l);
    o.reduction = TM_REDUCTION_NONE;
    l = tm_cross_entropy(z, ti, &o);
    CHECK_VALUES(l, ((double[]){log(4.0), 0.0}), 2, 0, 1e-15);
    tm_free(l);
    o.reduction = TM_REDUCTION_SUM;
    l = tm_cross_entropy(z, t, &o);
    CHECK_NEAR(item(l), 2 * log(4.0), 1e-15);
    tm_free(l);
    /* all ignored: mean is 0/0 = NaN, as PyTorch */
    tm_tensor *ta = itensor((double[]){-100, -100}, (int64_t[]){2}, 1, TM_I64);
    l = tm_cross_entropy(z, ta, NULL);
    CHECK(isnan(item(l)));
    tm_free(l);
    /* probability targets: the uniform distribution on uniform logits */
    tm_tensor *q = tm_full((int64_t[]){2, 4}, 2, 0.25, TM_F64);
    l = tm_cross_entropy(z, q, NULL);
    CHECK_NEAR(item(l), log(4.0), 1e-15);
    tm_free(l);
    tm_free(z);
    tm_free(t);
    tm_free(x);
    tm_free(t2);
    tm_free(ti);
    tm_free(ta);
    tm_free(q);
}

TEST(cross_entropy_empty_batch)
{
    /* N = 0: none gives [0], sum 0, mean 0/0 = NaN (PyTorch) */
    tm_tensor *x = tm_zeros((int64_t[]){0, 3}, 2, TM_F32);
    tm_tensor *t = tm_zeros((int64_t[]){0}, 1, TM_I64);
    REQUIRE(x && t);
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    tm_tensor *l = tm_cross_entropy(x, t, &o);
    CHECK(l && isnan(item(l)));
    tm_free(l);
    o.reduction = TM_REDUCTION_SUM;
    l = tm_cross_entropy(x, t, &o);
    CHECK_NEAR(item(l), 0.0, 0.0);
    tm_free(l);
    o.reduction = TM_REDUCTION_NONE;
    l = tm_cross_entropy(x, t, &o);
    REQUIRE(l);
    CHECK_SHAPE(l, 0);
    tm_free(l);
    tm_free(x);
    tm_free(t);
}

TEST(cross_entropy_exact_gradient)
{
    /* mean over one sample of uniform logits [1, 4], target 0:
     * softmax - onehot = [0.25 - 1, 0.25, 0.25, 0.25] */
    tm_tensor *x = tm_zeros((int64_t[]){1, 4}, 2, TM_F32);
    tm_tensor *t = itensor((double[]){0}, (int64_t[]){1}, 1, TM_I64);
    REQUIRE(x && t && tm_requires_grad_(x, true) == TM_OK);
    tm_tensor *l = tm_cross_entropy(x, t, NULL);
    REQUIRE(l);
    CHECK(strcmp(tm_grad_fn_name(l), "CrossEntropyLossBackward") == 0);
    REQUIRE(tm_backward(l) == TM_OK);
    tm_tensor *g = tm_grad(x);
    REQUIRE(g);
    CHECK(tm_dtype_of(g) == TM_F32);
    CHECK_VALUES(g, ((double[]){-0.75, 0.25, 0.25, 0.25}), 4, 0, 1e-7);
    tm_free(l);
    tm_free(x);
    tm_free(t);
}

/* Fused cross entropy against nll_loss(log_softmax(x)) in F32: values and
 * gradients within 1e-6 relative (both compute the row in float with
 * double sums; they differ only in rounding). */
TEST(cross_entropy_matches_composed_f32)
{
    int64_t n = 16, c = 37;
    tm_rng g = tm_rng_new(11);
    tm_tensor *x1 = tm_empty((int64_t[]){n, c}, 2, TM_F32);
    tm_tensor *ti = tm_empty((int64_t[]){n}, 1, TM_I64);
    REQUIRE(x1 && ti);
    REQUIRE(tm_normal_(x1, 0.0, 3.0, &g) == TM_OK);
    REQUIRE(tm_randint_(ti, 0, c, &g) == TM_OK);
    tm_tensor *x2 = tm_clone(x1);
    REQUIRE(x2);
    tm_requires_grad_(x1, true);
    tm_requires_grad_(x2, true);
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.reduction = TM_REDUCTION_NONE;
    tm_tensor *a = tm_cross_entropy(x1, ti, &o);
    tm_tensor *lp = tm_log_softmax(x2, 1);
    tm_tensor *b = lp ? tm_nll_loss(lp, ti, TM_REDUCTION_NONE, -100) : NULL;
    REQUIRE(a && b);
    double va[64], vb[64];
    REQUIRE(tm_copy_to_buffer(a, va, sizeof va, TM_F64) == TM_OK);
    REQUIRE(tm_copy_to_buffer(b, vb, sizeof vb, TM_F64) == TM_OK);
    for (int64_t i = 0; i < n; i++)
        CHECK(fabs(va[i] - vb[i]) <= 1e-6 * fabs(vb[i]) + 1e-7);
    CHECK(tm_requires_grad(lp)); /* log_softmax is differentiable */
    if (tm_requires_grad(lp)) {
        tm_tensor *sa = tm_sum(a, NULL, 0, false);
        tm_tensor *sb = tm_sum(b, NULL, 0, false);
        REQUIRE(sa && sb);
        REQUIRE(tm_backward(sa) == TM_OK);
        REQUIRE(tm_backward(sb) == TM_OK);
        double ga[16 * 37], gb[16 * 37];
        REQUIRE(tm_copy_to_buffer(tm_grad(x1), ga, sizeof ga, TM_F64) == 0);
        REQUIRE(tm_copy_to_buffer(tm_grad(x2), gb, sizeof gb, TM_F64) == 0);
        for (int64_t i = 0; i < n * c; i++)
            CHECK(fabs(ga[i] - gb[i]) <= 1e-6 * fabs(gb[i]) + 1e-7);
        tm_free(sa);
        tm_free(sb);
    }
    tm_free(a);
    tm_free(b);
    tm_free(lp);
    tm_free(x1);
    tm_free(x2);
    tm_free(ti);
}

/* The F32 fast path (vectorized exp) against the F64 loop on the same
 * values, for every target kind: per-row losses and gradients within
 * 1e-5 relative (F32 rounding of x - lse and of exp, ~1e-6, with margin),
 * on a row longer than one exp block (300 > 256 classes). */
static void f32_vs_f64(bool prob, bool nll, double eps)
{
    int64_t n = 5, c = 300;
    tm_rng g = tm_rng_new(17);
    tm_tensor *x64 = tm_empty((int64_t[]){n, c}, 2, TM_F64);
    tm_tensor *y64 = tm_empty((int64_t[]){n, c}, 2, TM_F64);
    tm_tensor *ti = itensor((double[]){3, -100, 299, 0, 150}, (int64_t[]){n},
                            1, TM_I64);
    REQUIRE(x64 && y64 && ti);
    tm_normal_(x64, 0, 3, &g);
    tm_uniform_(y64, 0, 0.01, &g);
    tm_tensor *x32 = tm_to_dtype(x64, TM_F32), *y32 = tm_to_dtype(y64, TM_F32);
    tm_tensor *xr = tm_to_dtype(x32, TM_F64); /* same values as x32 */
    tm_tensor *yr = tm_to_dtype(y32, TM_F64);
    REQUIRE(x32 && y32 && xr && yr);
    tm_requires_grad_(x32, true);
    tm_requires_grad_(xr, true);
    tm_requires_grad_(y32, prob);
    tm_requires_grad_(yr, prob);
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.reduction = TM_REDUCTION_NONE;
    o.label_smoothing = eps;
    tm_tensor *la = nll ? tm_nll_loss(x32, ti, TM_REDUCTION_NONE, -100)
                        : tm_cross_entropy(x32, prob ? y32 : ti, &o);
    tm_tensor *lb = nll ? tm_nll_loss(xr, ti, TM_REDUCTION_NONE, -100)
                        : tm_cross_entropy(xr, prob ? yr : ti, &o);
    tm_tensor *sa = la ? tm_sum(la, NULL, 0, false) : NULL;
    tm_tensor *sb = lb ? tm_sum(lb, NULL, 0, false) : NULL;
    REQUIRE(sa && sb && tm_backward(sa) == TM_OK && tm_backward(sb) == TM_OK);
    double va[5], vb[5];
    static double ga[1500], gb[1500];
    REQUIRE(tm_copy_to_buffer(la, va, sizeof va, TM_F64) == TM_OK);
    REQUIRE(tm_copy_to_buffer(lb, vb, sizeof vb, TM_F64) == TM_OK);
    for (int i = 0; i < 5; i++)
        CHECK(fabs(va[i] - vb[i]) <= 1e-5 * fabs(vb[i]) + 1e-6);
    for (int k = 0; k < (prob ? 2 : 1); k++) {
        const tm_tensor *a = k ? y32 : x32, *b = k ? yr : xr;
        REQUIRE(tm_grad(a) && tm_grad(b));
        CHECK(tm_dtype_of(tm_grad(a)) == TM_F32);
        REQUIRE(tm_copy_to_buffer(tm_grad(a), ga, sizeof ga, TM_F64) == 0);
        REQUIRE(tm_copy_to_buffer(tm_grad(b), gb, sizeof gb, TM_F64) == 0);
        for (int i = 0; i < 1500; i++)
            CHECK(fabs(ga[i] - gb[i]) <= 1e-5 * fabs(gb[i]) + 1e-7);
    }
    tm_free(sa);
    tm_free(sb);
    tm_free(la);
    tm_free(lb);
    tm_free(x64);
    tm_free(y64);
    tm_free(x32);
    tm_free(y32);
    tm_free(xr);
    tm_free(yr);
    tm_free(ti);
}

TEST(cross_entropy_f32_fast_path_matches_f64)
{
    f32_vs_f64(false, false, 0.0);
    f32_vs_f64(false, false, 0.1);
    f32_vs_f64(true, false, 0.0);
    f32_vs_f64(true, false, 0.2);
    f32_vs_f64(false, true, 0.0);
}

TEST(cross_entropy_f32_f16_and_threads)
{
    /* F16 logits: computed in F32, F16 result, F16 gradient */
    tm_tensor *x = tm_zeros((int64_t[]){3, 4}, 2, TM_F16);
    tm_tensor *t = itensor((double[]){0, 1, 2}, (int64_t[]){3}, 1, TM_I32);
    REQUIRE(x && t && tm_requires_grad_(x, true) == TM_OK);
    tm_tensor *l = tm_cross_entropy(x, t, NULL);
    REQUIRE(l);
    CHECK(tm_dtype_of(l) == TM_F16);
    CHECK_NEAR(item(l), log(4.0), 1e-3);
    REQUIRE(tm_backward(l) == TM_OK);
    CHECK(tm_grad(x) && tm_dtype_of(tm_grad(x)) == TM_F16);
    CHECK_SHAPE(tm_grad(x), 3, 4);
    tm_free(l);
    tm_free(x);
    tm_free(t);
    /* per-row results are independent of the thread count (bitwise) */
    tm_rng g = tm_rng_new(5);
    tm_tensor *big = tm_empty((int64_t[]){300, 211}, 2, TM_F32);
    tm_tensor *tb = tm_empty((int64_t[]){300}, 1, TM_I64);
    REQUIRE(big && tb);
    tm_normal_(big, 0, 2, &g);
    tm_randint_(tb, 0, 211, &g);
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.reduction = TM_REDUCTION_NONE;
    tm_set_num_threads(1);
    tm_tensor *a = tm_cross_entropy(big, tb, &o);
    tm_set_num_threads(3);
    tm_tensor *b = tm_cross_entropy(big, tb, &o);
    tm_set_num_threads(0);
    REQUIRE(a && b);
    CHECK(memcmp(tm_data(a), tm_data(b), 300 * sizeof(float)) == 0);
    tm_free(a);
    tm_free(b);
    tm_free(big);
    tm_free(tb);
}

TEST(cross_entropy_errors)
{
    tm_tensor *x = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *t = itensor((double[]){0, 3}, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *tn = itensor((double[]){0, -1}, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *t3 = itensor((double[]){0, 1, 2}, (int64_t[]){3}, 1, TM_I64);
    tm_tensor *tf = tm_zeros((int64_t[]){2, 4}, 2, TM_F32);
    tm_tensor *tb = tm_zeros((int64_t[]){2}, 1, TM_BOOL);
    tm_tensor *xi = tm_zeros((int64_t[]){2, 3}, 2, TM_I64);
    REQUIRE(x && t && tn && t3 && tf && tb && xi);
    CHECK_NULL_ERR(tm_cross_entropy(x, t, NULL), TM_ERANGE,
                   "tm_cross_entropy: target 3 at position 1 is out of range "
                   "for 3 classes");
    CHECK_NULL_ERR(tm_cross_entropy(x, tn, NULL), TM_ERANGE, "target -1");
    CHECK_NULL_ERR(tm_nll_loss(x, t, TM_REDUCTION_SUM, -100), TM_ERANGE,
                   "tm_nll_loss: target 3");
    CHECK_NULL_ERR(tm_cross_entropy(x, t3, NULL), TM_ESHAPE,
                   "target shape [3] does not match input shape [2,3]");
    CHECK_NULL_ERR(tm_cross_entropy(x, tf, NULL), TM_ESHAPE,
                   "target shape [2,4]");
    CHECK_NULL_ERR(tm_cross_entropy(x, tb, NULL), TM_EDTYPE,
                   "target must be I64 or I32");
    CHECK_NULL_ERR(tm_nll_loss(x, x, TM_REDUCTION_MEAN, -100), TM_EDTYPE,
                   "tm_nll_loss: target must be I64 or I32");
    CHECK_NULL_ERR(tm_cross_entropy(xi, t, NULL), TM_EDTYPE,
                   "input must be a float tensor");
    CHECK_NULL_ERR(tm_cross_entropy(NULL, t, NULL), TM_EINVAL, "input");
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.label_smoothing = 1.5;
    CHECK_NULL_ERR(tm_cross_entropy(x, t3, &o), TM_EINVAL,
                   "label_smoothing must be in [0, 1], got 1.5");
    o = tm_cross_entropy_defaults();
    o.reduction = (tm_reduction)7;
    CHECK_NULL_ERR(tm_cross_entropy(x, t3, &o), TM_EINVAL,
                   "invalid reduction 7");
    tm_free(x);
    tm_free(t);
    tm_free(tn);
    tm_free(t3);
    tm_free(tf);
    tm_free(tb);
    tm_free(xi);
}

/* ------------------------------------------------- pointwise losses */

enum { L_BCE, L_MSE, L_L1, L_SMOOTH, L_HUBER };

typedef struct {
    int kind;
    tm_reduction red;
    double p;
    bool tr; /* in[0] is [4, 3]; f transposes it (non-contiguous x) */
} pctx;

static tm_tensor *f_pw(tm_tensor *const *in, void *vc)
{
    const pctx *c = vc;
    tm_tensor *x = c->tr ? tm_transpose(in[0], 0, 1) : tm_retain(in[0]), *r;
    if (!x) return NULL;
    switch (c->kind) {
    case L_BCE: r = tm_binary_cross_entropy_with_logits(x, in[1], c->red); break;
    case L_MSE: r = tm_mse_loss(x, in[1], c->red); break;
    case L_L1: r = tm_l1_loss(x, in[1], c->red); break;
    case L_SMOOTH: r = tm_smooth_l1_loss(x, in[1], c->red, c->p); break;
    default: r = tm_huber_loss(x, in[1], c->red, c->p); break;
    }
    tm_free(x);
    return r;
}

TEST(pointwise_losses_grad)
{
    tm_tensor *x = TT_LEAF(21, 3, 4), *y = TT_LEAF(22, 3, 4);
    tm_tensor *yb = TT_LEAF(23, 1, 4), *xt = TT_LEAF(24, 4, 3);
    REQUIRE(x && y && yb && xt);
    static const double ps[] = {0, 0, 0, 0.7, 0.9};
    for (int k = L_BCE; k <= L_HUBER; k++) {
        for (int r = 0; r < 3; r++) {
            pctx c = {k, REDS[r], ps[k], false};
            tm_tensor *in[2] = {x, y};
            CHECK(GRADCHECK("pointwise loss", f_pw, &c, in, 2, TOL));
            pctx ct = {k, REDS[r], ps[k], true};
            tm_tensor *it[2] = {xt, y};
            CHECK(GRADCHECK("pointwise loss (transposed)", f_pw, &ct, it, 2,
                            TOL));
            if (k != L_BCE) { /* bce needs equal shapes */
                tm_tensor *ib[2] = {x, yb};
                CHECK(GRADCHECK("pointwise loss (broadcast)", f_pw, &c, ib, 2,
                                TOL));
            }
        }
    }
    tm_free(x);
    tm_free(y);
    tm_free(yb);
    tm_free(xt);
}

TEST(pointwise_losses_exact_values)
{
    tm_tensor *x = itensor((double[]){0, 2, -3, 0.25}, (int64_t[]){4}, 1,
                           TM_F64);
    tm_tensor *y = itensor((double[]){0.3, 1, 0, 0}, (int64_t[]){4}, 1,
                           TM_F64);
    REQUIRE(x && y && tm_requires_grad_(x, true) == TM_OK);
    /* bce at x = 0 is log 2 and its gradient sigmoid(0) - y = 0.5 - y */
    tm_tensor *l = tm_binary_cross_entropy_with_logits(x, y,
                                                        TM_REDUCTION_NONE);
    REQUIRE(l);
    double want[4];
    for (int i = 0; i < 4; i++) {
        double xv = ((double[]){0, 2, -3, 0.25})[i];
        double yv = ((double[]){0.3, 1, 0, 0})[i];
        want[i] = fmax(xv, 0) - xv * yv + log1p(exp(-fabs(xv)));
    }
    CHECK_VALUES(l, want, 4, 1e-15, 0);
    tm_tensor *s = tm_sum(l, NULL, 0, false);
    REQUIRE(s && tm_backward(s) == TM_OK);
    double g0 = NAN;
    tm_get(tm_grad(x), (int64_t[]){0}, &g0);
    CHECK_NEAR(g0, 0.2, 1e-15);
    tm_free(s);
    tm_free(l);
    /* mse, l1 (mean), smooth_l1 (beta 1) and huber (delta 2), sum:
     * d = x - y = [-0.3, 1, -3, 0.25] */
    tm_tensor *m = tm_mse_loss(x, y, TM_REDUCTION_MEAN);
    CHECK_NEAR(item(m), (0.09 + 1 + 9 + 0.0625) / 4, 1e-15);
    tm_free(m);
    m = tm_l1_loss(x, y, TM_REDUCTION_SUM);
    CHECK_NEAR(item(m), 0.3 + 1 + 3 + 0.25, 1e-15);
    tm_free(m);
    m = tm_smooth_l1_loss(x, y, TM_REDUCTION_SUM, 1.0);
    CHECK_NEAR(item(m), 0.045 + 0.5 + 2.5 + 0.03125, 1e-15);
    tm_free(m);
    m = tm_huber_loss(x, y, TM_REDUCTION_SUM, 2.0);
    CHECK_NEAR(item(m), 0.045 + 0.5 + 2 * (3 - 1) + 0.03125, 1e-15);
    tm_free(m);
    /* beta 0 is l1 */
    m = tm_smooth_l1_loss(x, y, TM_REDUCTION_SUM, 0.0);
    CHECK_NEAR(item(m), 4.55, 1e-15);
    tm_free(m);
    /* bce is stable for huge logits */
    tm_tensor *xb = itensor((double[]){1000, -1000}, (int64_t[]){2}, 1,
                            TM_F32);
    tm_tensor *yb = itensor((double[]){1, 0}, (int64_t[]){2}, 1, TM_F32);
    m = tm_binary_cross_entropy_with_logits(xb, yb, TM_REDUCTION_SUM);
    CHECK_NEAR(item(m), 0.0, 0.0);
    tm_free(m);
    tm_free(xb);
    tm_free(yb);
    tm_free(x);
    tm_free(y);
}

TEST(pointwise_losses_errors)
{
    tm_tensor *x = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *y = tm_zeros((int64_t[]){1, 3}, 2, TM_F32);
    tm_tensor *yi = tm_zeros((int64_t[]){2, 3}, 2, TM_I32);
    REQUIRE(x && y && yi);
    CHECK_NULL_ERR(tm_binary_cross_entropy_with_logits(x, y,
                                                       TM_REDUCTION_MEAN),
                   TM_ESHAPE,
                   "tm_binary_cross_entropy_with_logits: target shape [1,3] "
                   "must equal input shape [2,3]");
    CHECK_NULL_ERR(tm_mse_loss(x, yi, TM_REDUCTION_MEAN), TM_EDTYPE,
                   "tm_mse_loss: input and target must be float tensors");
    CHECK_NULL_ERR(tm_huber_loss(x, y, TM_REDUCTION_MEAN, 0.0), TM_EINVAL,
                   "tm_huber_loss: delta must be finite and > 0, got 0");
    CHECK_NULL_ERR(tm_smooth_l1_loss(x, y, TM_REDUCTION_MEAN, -1.0),
                   TM_EINVAL, "beta must be finite and >= 0, got -1");
    CHECK_NULL_ERR(tm_l1_loss(x, NULL, TM_REDUCTION_MEAN), TM_EINVAL,
                   "target");
    CHECK_NULL_ERR(tm_l1_loss(x, y, (tm_reduction)-1), TM_EINVAL,
                   "invalid reduction -1");
    tm_free(x);
    tm_free(y);
    tm_free(yi);
}

/* ----------------------------------------------------------- dropout */

TEST(dropout_seeded_and_mask_consistent)
{
    int64_t n = 10000;
    double p = 0.3;
    tm_tensor *x = tm_full((int64_t[]){n}, 1, 1.0, TM_F32);
    tm_tensor *x64 = tm_full((int64_t[]){n}, 1, 1.0, TM_F64);
    REQUIRE(x && x64 && tm_requires_grad_(x, true) == TM_OK);
    tm_rng g1 = tm_rng_new(42), g2 = tm_rng_new(42), g3 = tm_rng_new(42);
    tm_tensor *a = tm_dropout(x, p, true, &g1);
    tm_tensor *b = tm_dropout(x, p, true, &g2);
    tm_tensor *c = tm_dropout(x64, p, true, &g3);
    REQUIRE(a && b && c);
    CHECK(strcmp(tm_grad_fn_name(a), "NativeDropoutBackward") == 0);
    CHECK(memcmp(tm_data(a), tm_data(b), (size_t)n * sizeof(float)) == 0);
    /* every element is 0 or 1 / (1 - p); about 1 - p are kept; the same
     * seed keeps the same elements in F64 */
    const float *av = tm_data(a);
    const double *cv = tm_data(c);
    int64_t kept = 0, bad = 0, differ = 0;
    for (int64_t i = 0; i < n; i++) {
        if (av[i] != 0.0f) kept++;
        if (av[i] != 0.0f && av[i] != (float)(1.0 / 0.7)) bad++;
        if ((av[i] != 0.0f) != (cv[i] != 0.0)) differ++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(differ, 0);
    /* binomial sd is sqrt(n p (1-p)) ~ 46: 0.03 n is > 6 sd */
    CHECK(fabs((double)kept / (double)n - 0.7) < 0.03);
    /* backward multiplies by the saved mask: d sum(a) / dx = a (x = 1) */
    tm_tensor *s = tm_sum(a, NULL, 0, false);
    REQUIRE(s && tm_backward(s) == TM_OK);
    REQUIRE(tm_grad(x));
    CHECK(memcmp(tm_data(tm_grad(x)), av, (size_t)n * sizeof(float)) == 0);
    /* a different seed gives a different mask */
    tm_rng g4 = tm_rng_new(43);
    tm_tensor *d = tm_dropout(x, p, true, &g4);
    REQUIRE(d);
    CHECK(memcmp(tm_data(a), tm_data(d), (size_t)n * sizeof(float)) != 0);
    tm_free(s);
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tm_free(d);
    tm_free(x);
    tm_free(x64);
}

static tm_tensor *f_drop(tm_tensor *const *in, void *vc)
{
    tm_rng g = tm_rng_new(*(const uint64_t *)vc); /* same mask every call */
    tm_tensor *t = tm_transpose(in[0], 0, 1);
    tm_tensor *r = t ? tm_dropout(t, 0.4, true, &g) : NULL;
    tm_free(t);
    return r;
}

TEST(dropout_grad_eval_and_edges)
{
    uint64_t seed = 7;
    tm_tensor *x = TT_LEAF(31, 5, 6);
    REQUIRE(x);
    CHECK(GRADCHECK("dropout", f_drop, &seed, &x, 1, TOL));
    /* eval and p == 0 give x itself */
    tm_tensor *e = tm_dropout(x, 0.5, false, NULL);
    tm_tensor *z = tm_dropout(x, 0.0, true, NULL);
    CHECK(e == x && z == x);
    tm_free(e);
    tm_free(z);
    /* p == 1: zeros, and a zero gradient */
    tm_tensor *o = tm_dropout(x, 1.0, true, NULL);
    REQUIRE(o);
    double zero[30] = {0};
    CHECK_VALUES(o, zero, 30, 0, 0);
    tm_tensor *s = tm_sum(o, NULL, 0, false);
    REQUIRE(s && tm_backward(s) == TM_OK);
    CHECK_VALUES(tm_grad(x), zero, 30, 0, 0);
    tm_free(s);
    tm_free(o);
    CHECK_NULL_ERR(tm_dropout(x, 1.5, true, NULL), TM_EINVAL,
                   "tm_dropout: p must be in [0, 1], got 1.5");
    CHECK_NULL_ERR(tm_dropout(x, NAN, true, NULL), TM_EINVAL, "got nan");
    tm_tensor *xi = tm_zeros((int64_t[]){3}, 1, TM_I32);
    CHECK_NULL_ERR(tm_dropout(xi, 0.5, true, NULL), TM_EDTYPE,
                   "input must be a float tensor");
    tm_free(xi);
    tm_free(x);
}

/* --------------------------------------------------------- embedding */

static tm_tensor *f_emb(tm_tensor *const *in, void *vc)
{
    return tm_embedding(in[0], (const tm_tensor *)vc);
}

/* The weight leaf is [D, V]; f uses its transpose (non-contiguous). */
static tm_tensor *f_emb_t(tm_tensor *const *in, void *vc)
{
    tm_tensor *w = tm_transpose(in[0], 0, 1);
    tm_tensor *r = w ? tm_embedding(w, (const tm_tensor *)vc) : NULL;
    tm_free(w);
    return r;
}

TEST(embedding_forward_and_grad)
{
    tm_tensor *w = TT_LEAF(41, 5, 3);
    tm_tensor *ix = itensor((double[]){4, 0, 4, 2, 4, 1}, (int64_t[]){2, 3},
                            2, TM_I32);
    REQUIRE(w && ix);
    tm_tensor *out = tm_embedding(w, ix);
    REQUIRE(out);
    CHECK_SHAPE(out, 2, 3, 3);
    CHECK(strcmp(tm_grad_fn_name(out), "EmbeddingBackward") == 0);
    for (int j = 0; j < 3; j++) {
        double a = NAN, b = NAN;
        tm_get(out, (int64_t[]){1, 0, j}, &a);
        tm_get(w, (int64_t[]){2, j}, &b);
        CHECK(a == b);
    }
    CHECK(GRADCHECK("embedding", f_emb, ix, &w, 1, TOL));
    tm_tensor *wt = TT_LEAF(42, 3, 5);
    REQUIRE(wt);
    CHECK(GRADCHECK("embedding (transposed weight)", f_emb_t, ix, &wt, 1,
                    TOL));
    tm_free(wt);
    /* repeated rows accumulate: d sum(out) / dW counts each index */
    tm_tensor *s = tm_sum(out, NULL, 0, false);
    REQUIRE(s && tm_backward(s) == TM_OK);
    double want[15] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 3, 3, 3};
    CHECK_VALUES(tm_grad(w), want, 15, 0, 0);
    tm_free(s);
    /* 0-d indices give [D]; F32 weights give an F32 gradient */
    tm_tensor *w32 = tm_zeros((int64_t[]){4, 2}, 2, TM_F32);
    tm_tensor *i0 = itensor((double[]){3}, NULL, 0, TM_I64);
    REQUIRE(w32 && i0 && tm_requires_grad_(w32, true) == TM_OK);
    tm_tensor *o0 = tm_embedding(w32, i0);
    REQUIRE(o0);
    CHECK_SHAPE(o0, 2);
    tm_tensor *s0 = tm_sum(o0, NULL, 0, false);
    REQUIRE(s0 && tm_backward(s0) == TM_OK);
    CHECK(tm_dtype_of(tm_grad(w32)) == TM_F32);
    CHECK_VALUES(tm_grad(w32), ((double[]){0, 0, 0, 0, 0, 0, 1, 1}), 8, 0, 0);
    tm_free(s0);
    tm_free(o0);
    tm_free(w32);
    tm_free(i0);
    tm_free(out);
    tm_free(w);
    tm_free(ix);
}

TEST(embedding_errors)
{
    tm_tensor *w = tm_zeros((int64_t[]){5, 3}, 2, TM_F32);
    tm_tensor *big = itensor((double[]){1, 5}, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *neg = itensor((double[]){-1}, (int64_t[]){1}, 1, TM_I64);
    tm_tensor *fi = tm_zeros((int64_t[]){2}, 1, TM_F32);
    tm_tensor *w1 = tm_zeros((int64_t[]){5}, 1, TM_F32);
    REQUIRE(w && big && neg && fi && w1);
    CHECK_NULL_ERR(tm_embedding(w, big), TM_ERANGE,
                   "tm_embedding: index 5 at position 1 is out of range for "
                   "5 embeddings");
    CHECK_NULL_ERR(tm_embedding(w, neg), TM_ERANGE, "index -1");
    CHECK_NULL_ERR(tm_embedding(w, fi), TM_EDTYPE,
                   "indices must be an integer tensor");
    CHECK_NULL_ERR(tm_embedding(w1, neg), TM_ESHAPE,
                   "weight must be 2-D [V, D], got [5]");
    CHECK_NULL_ERR(tm_embedding(NULL, neg), TM_EINVAL, "weight");
    tm_free(w);
    tm_free(big);
    tm_free(neg);
    tm_free(fi);
    tm_free(w1);
}

/* ------------------------------------------------- allocation failures */

#define STEP(var, expr)                                                       \
    do {                                                                      \
        if (!((var) = (expr))) goto fail;                                     \
    } while (0)

/* Forward and backward of every op here, with grad recording on. */
static tm_status run_losses(void)
{
    tm_tensor *t[20] = {0};
    tm_status st = TM_OK;
    tm_rng rng = tm_rng_new(3);
    STEP(t[0], tm_zeros((int64_t[]){2, 3, 4}, 3, TM_F32));
    if ((st = tm_requires_grad_(t[0], true))) goto done;
    STEP(t[1], tm_zeros((int64_t[]){2, 4}, 2, TM_I64));
    STEP(t[2], tm_cross_entropy(t[0], t[1], NULL));
    STEP(t[3], tm_full((int64_t[]){2, 3, 4}, 3, 0.25, TM_F32));
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.label_smoothing = 0.1;
    STEP(t[4], tm_cross_entropy(t[0], t[3], &o));
    STEP(t[5], tm_nll_loss(t[0], t[1], TM_REDUCTION_SUM, -100));
    STEP(t[6], tm_binary_cross_entropy_with_logits(t[0], t[3],
                                                   TM_REDUCTION_MEAN));
    STEP(t[7], tm_huber_loss(t[0], t[3], TM_REDUCTION_SUM, 0.5));
    STEP(t[8], tm_dropout(t[0], 0.5, true, &rng));
    STEP(t[9], tm_sum(t[8], NULL, 0, false));
    STEP(t[11], tm_zeros((int64_t[]){2}, 1, TM_I32));
    STEP(t[12], tm_reshape(t[0], (int64_t[]){6, 4}, 2));
    STEP(t[10], tm_embedding(t[12], t[11]));
    STEP(t[13], tm_sum(t[10], NULL, 0, false));
    for (int i = 0; i < 5; i++) {
        tm_tensor *l = t[(int[]){2, 4, 5, 6, 7}[i]];
        if ((st = tm_backward_ex(l, NULL, false))) goto done;
    }
    if ((st = tm_backward(t[9]))) goto done;
    if ((st = tm_backward(t[13]))) goto done;
    goto done;
fail:
    st = tm_last_status();
done:
    for (int i = 0; i < 20; i++) tm_free(t[i]);
    return st;
}

TEST(loss_allocation_failures_are_clean)
{
    CHECK_EVERY_ALLOC_FAILURE(run_losses, 60);
}
