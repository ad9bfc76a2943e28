/* test_losses2.c — nn/functional/loss_distance.c: central-difference
 * gradient checks in F64 (gradcheck.h; tol 1e-6: each function is smooth
 * at the random points used — probabilities come through a sigmoid or
 * softmax, so they stay inside (0, 1), and the triplet hinge's kink is
 * missed by far more than h), exact values, and the errors of bad input. */
#include "gradcheck.h"

#include <math.h>
#include <string.h>

#define TOL 1e-6

static const tm_reduction REDS[3] = {TM_REDUCTION_MEAN, TM_REDUCTION_SUM,
                                     TM_REDUCTION_NONE};

static double item(const tm_tensor *t)
{
    double v = NAN;
    if (t) tm_item(t, &v);
    return v;
}

typedef struct {
    tm_reduction red;
    int k;     /* variant */
    double p;  /* norm order */
    int dim;
    bool flag; /* log_target / swap / keepdim */
} lctx;

static tm_tensor *f_normalize(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    return tm_normalize(in[0], c->p, c->dim, 1e-12);
}

TEST(normalize_grad)
{
    tm_tensor *x = TT_LEAF(1, 3, 4, 2);
    REQUIRE(x);
    double ps[4] = {2.0, 1.0, 3.0, 0.7};
    for (int i = 0; i < 4; i++)
        for (int d = -1; d < 3; d++) {
            lctx c = {TM_REDUCTION_NONE, 0, ps[i], d, false};
            CHECK(GRADCHECK("normalize", f_normalize, &c, &x, 1, TOL));
        }
    tm_free(x);
}

/* bce(sigmoid(in[0]), sigmoid(in[1])) with an optional [C] weight */
static tm_tensor *f_bce(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    tm_tensor *x = tm_sigmoid(in[0]), *y = tm_sigmoid(in[1]);
    tm_tensor *w = c->k ? tm_full((int64_t[]){3}, 1, 0.7, TM_F64) : NULL;
    tm_tensor *r = x && y && (w || !c->k)
                       ? tm_binary_cross_entropy(x, y, w, c->red) : NULL;
    tm_free(x);
    tm_free(y);
    tm_free(w);
    return r;
}

TEST(binary_cross_entropy_grad)
{
    tm_tensor *in[2] = {TT_LEAF(2, 4, 3), TT_LEAF(3, 4, 3)};
    REQUIRE(in[0] && in[1]);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++) {
            lctx c = {REDS[r], k, 0, 0, false};
            CHECK(GRADCHECK("binary_cross_entropy", f_bce, &c, in, 2, TOL));
        }
    tm_tensor *x = tm_sigmoid(in[0]);
    tm_tensor *l = x ? tm_binary_cross_entropy(x, x, NULL,
                                               TM_REDUCTION_NONE) : NULL;
    CHECK(l && tm_grad_fn_name(l) &&
          strcmp(tm_grad_fn_name(l), "BinaryCrossEntropyBackward") == 0);
    tm_free(l);
    tm_free(x);
    tm_free(in[0]);
    tm_free(in[1]);
}

/* kl_div(log_softmax(in[0]), softmax(in[1]) or log_softmax(in[1])) */
static tm_tensor *f_kl(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    tm_tensor *x = tm_log_softmax(in[0], 1);
    tm_tensor *y = c->flag ? tm_log_softmax(in[1], 1) : tm_softmax(in[1], 1);
    tm_tensor *r = x && y ? tm_kl_div(x, y, c->red, c->flag) : NULL;
    tm_free(x);
    tm_free(y);
    return r;
}

TEST(kl_div_grad)
{
    tm_tensor *in[2] = {TT_LEAF(4, 3, 5), TT_LEAF(5, 3, 5)};
    REQUIRE(in[0] && in[1]);
    tm_reduction reds[4] = {TM_REDUCTION_MEAN, TM_REDUCTION_SUM,
                            TM_REDUCTION_NONE, TM_REDUCTION_BATCHMEAN};
    for (int r = 0; r < 4; r++)
        for (int lt = 0; lt < 2; lt++) {
            lctx c = {reds[r], 0, 0, 0, lt == 1};
            CHECK(GRADCHECK("kl_div", f_kl, &c, in, 2, TOL));
        }
    tm_free(in[0]);
    tm_free(in[1]);
}

static tm_tensor *f_cos(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    return tm_cosine_similarity(in[0], in[1], c->dim, 1e-8);
}

static tm_tensor *f_pdist(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    return tm_pairwise_distance(in[0], in[1], c->p, 1e-6, c->flag);
}

TEST(distances_grad_with_broadcast)
{
    tm_tensor *a = TT_LEAF(6, 3, 4), *b = TT_LEAF(7, 3, 4), *v = TT_LEAF(8, 4);
    REQUIRE(a && b && v);
    for (int d = -2; d < 2; d++) {
        lctx c = {TM_REDUCTION_NONE, 0, 0, d, false};
        tm_tensor *in[2] = {a, b};
        CHECK(GRADCHECK("cosine_similarity", f_cos, &c, in, 2, TOL));
    }
    lctx cb = {TM_REDUCTION_NONE, 0, 0, -1, false};
    tm_tensor *ib[2] = {a, v};
    CHECK(GRADCHECK("cosine_similarity broadcast", f_cos, &cb, ib, 2, TOL));
    double ps[4] = {2.0, 1.0, 3.0, 1.5};
    for (int i = 0; i < 4; i++)
        for (int kd = 0; kd < 2; kd++) {
            lctx c = {TM_REDUCTION_NONE, 0, ps[i], 0, kd == 1};
            tm_tensor *in[2] = {a, b};
            CHECK(GRADCHECK("pairwise_distance", f_pdist, &c, in, 2, TOL));
            CHECK(GRADCHECK("pairwise_distance broadcast", f_pdist, &c, ib,
                            2, TOL));
        }
    tm_free(a);
    tm_free(b);
    tm_free(v);
}

static tm_tensor *f_triplet(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    return tm_triplet_margin_loss(in[0], in[1], in[2], 1.5, c->p, 1e-6,
                                  c->flag, c->red);
}

TEST(triplet_margin_loss_grad)
{
    tm_tensor *in[3] = {TT_LEAF(9, 5, 3), TT_LEAF(10, 5, 3),
                        TT_LEAF(11, 5, 3)};
    REQUIRE(in[0] && in[1] && in[2]);
    for (int r = 0; r < 3; r++)
        for (int sw = 0; sw < 2; sw++) {
            lctx c = {REDS[r], 0, 2.0, 0, sw == 1};
            CHECK(GRADCHECK("triplet_margin_loss", f_triplet, &c, in, 3,
                            TOL));
            c.p = 1.0;
            CHECK(GRADCHECK("triplet_margin_loss p=1", f_triplet, &c, in, 3,
                            TOL));
        }
    tm_free(in[0]);
    tm_free(in[1]);
    tm_free(in[2]);
}

static tm_tensor *vec(const double *v, int64_t n)
{
    return tt_tensor(v, (int64_t[]){n}, 1, TM_F64);
}

TEST(losses2_exact_values)
{
    tm_tensor *x = vec((double[]){0.0, 1.0, 0.25}, 3);
    tm_tensor *y = vec((double[]){1.0, 1.0, 0.5}, 3);
    REQUIRE(x && y);
    /* log(0) is clamped at -100 */
    tm_tensor *l = tm_binary_cross_entropy(x, y, NULL, TM_REDUCTION_NONE);
    CHECK_VALUES(l, ((double[]){100.0, 0.0,
                                -(0.5 * log(0.25) + 0.5 * log(0.75))}),
                 3, 1e-15, 0);
    tm_free(l);
    /* y log(y / x) with y == 0 contributing 0; batchmean divides by 3 */
    tm_tensor *lx = vec((double[]){log(0.5), log(0.25), log(0.25)}, 3);
    tm_tensor *t = vec((double[]){0.5, 0.5, 0.0}, 3);
    REQUIRE(lx && t);
    l = tm_kl_div(lx, t, TM_REDUCTION_BATCHMEAN, false);
    CHECK_NEAR(item(l), 0.5 * log(2.0) / 3.0, 1e-15);
    tm_free(l);
    tm_tensor *a = vec((double[]){3.0, 4.0}, 2);
    tm_tensor *b = vec((double[]){4.0, 3.0}, 2);
    REQUIRE(a && b);
    l = tm_cosine_similarity(a, b, 0, 1e-8);
    CHECK_NEAR(item(l), 24.0 / 25.0, 1e-15);
    tm_free(l);
    l = tm_pairwise_distance(a, b, 1.0, 0.0, false);
    CHECK_NEAR(item(l), 2.0, 0);
    tm_free(l);
    l = tm_normalize(a, 2.0, 0, 1e-12);
    CHECK_VALUES(l, ((double[]){0.6, 0.8}), 2, 1e-15, 0);
    tm_free(l);
    tm_free(x);
    tm_free(y);
    tm_free(lx);
    tm_free(t);
    tm_free(a);
    tm_free(b);
}

TEST(losses2_bad_input)
{
    tm_tensor *p = tm_full((int64_t[]){3}, 1, 0.5, TM_F32);
    tm_tensor *q = tm_full((int64_t[]){3}, 1, 1.5, TM_F32);
    tm_tensor *z1 = tm_zeros((int64_t[]){1}, 1, TM_F32);
    tm_tensor *z23 = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *zi = tm_zeros((int64_t[]){3}, 1, TM_I64);
    tm_tensor *z2 = tm_zeros((int64_t[]){2}, 1, TM_F32);
    REQUIRE(p && q && z1 && z23 && zi && z2);
    CHECK_NULL_ERR(tm_binary_cross_entropy(q, p, NULL, TM_REDUCTION_MEAN),
                   TM_EINVAL, "between 0 and 1");
    CHECK_NULL_ERR(tm_binary_cross_entropy(p, z1, NULL, TM_REDUCTION_MEAN),
                   TM_ESHAPE, "target shape [1]");
    CHECK_NULL_ERR(tm_binary_cross_entropy(p, p, z23, TM_REDUCTION_MEAN),
                   TM_ESHAPE, "weight shape [2,3]");
    CHECK_NULL_ERR(tm_binary_cross_entropy(p, p, NULL,
                                           TM_REDUCTION_BATCHMEAN),
                   TM_EINVAL, "reduction 3");
    CHECK_NULL_ERR(tm_binary_cross_entropy(zi, p, NULL, TM_REDUCTION_MEAN),
                   TM_EDTYPE, "float");
    CHECK_NULL_ERR(tm_mse_loss(p, p, TM_REDUCTION_BATCHMEAN), TM_EINVAL,
                   "reduction");
    CHECK_NULL_ERR(tm_kl_div(p, NULL, TM_REDUCTION_SUM, false), TM_EINVAL,
                   "target");
    CHECK_NULL_ERR(tm_kl_div(p, z2, TM_REDUCTION_SUM, false), TM_ESHAPE,
                   "broadcast");
    CHECK_NULL_ERR(tm_cosine_similarity(p, p, 1, 1e-8), TM_ERANGE, "dim 1");
    CHECK_NULL_ERR(tm_normalize(p, NAN, 0, 1e-12), TM_EINVAL, "NaN");
    CHECK_NULL_ERR(tm_triplet_margin_loss(z23, p, z23, 1.0, 2, 1e-6, false,
                                          TM_REDUCTION_MEAN),
                   TM_ESHAPE, "anchor 2D, positive 1D");
    CHECK_NULL_ERR(tm_triplet_margin_loss(p, p, p, 0.0, 2, 1e-6, false,
                                          TM_REDUCTION_MEAN),
                   TM_EINVAL, "margin");
    CHECK_NULL_ERR(tm_pairwise_distance(p, NULL, 2, 1e-6, false), TM_EINVAL,
                   "x2");
    tm_free(p);
    tm_free(q);
    tm_free(z1);
    tm_free(z23);
    tm_free(zi);
    tm_free(z2);
}

/* ------------------------------------------------ margin and count losses */

static tm_tensor *pm1(const double *v, const int64_t *shape, int nd, int n)
{
    double s[16];
    for (int i = 0; i < n; i++) s[i] = v[i] < 0 ? -1.0 : 1.0;
    return tt_tensor(s, shape, nd, TM_F64);
}

typedef struct {
    int k;         /* which loss */
    tm_reduction red;
    const tm_tensor *y; /* targets (not differentiated) */
    bool flag;
} mctx;

static tm_tensor *f_margin(tm_tensor *const *in, void *vc)
{
    const mctx *c = vc;
    switch (c->k) {
    case 0: return tm_margin_ranking_loss(in[0], in[1], c->y, 0.3, c->red);
    case 1: return tm_hinge_embedding_loss(in[0], c->y, 0.8, c->red);
    case 2: return tm_soft_margin_loss(in[0], c->y, c->red);
    case 3: return tm_cosine_embedding_loss(in[0], in[1], c->y, 0.1, c->red);
    default: return tm_poisson_nll_loss(in[0], c->y, !c->flag, true, 1e-8,
                                        c->red);
    }
}

TEST(margin_losses_grad)
{
    static const double r[12] = {0.3, -1.2, 0.8, -0.1, 2.0, -0.7,
                                 0.4, 0.9, -1.5, 0.2, -0.3, 1.1};
    tm_tensor *a = TT_LEAF(12, 4, 3), *b = TT_LEAF(13, 4, 3);
    tm_tensor *y = pm1(r, (int64_t[]){4, 3}, 2, 12);
    tm_tensor *yn = pm1(r, (int64_t[]){4}, 1, 4);
    tm_tensor *counts = tt_tensor((double[]){0, 1, 2, 5, 3, 1, 0, 4, 2, 7, 1,
                                             3}, (int64_t[]){4, 3}, 2, TM_F64);
    tm_tensor *pos = TT_LEAF(14, 4, 3);
    bool prev = tm_no_grad_begin(); /* a fresh leaf of positive values */
    tm_tensor *ap = pos ? tm_abs(pos) : NULL;
    tm_tensor *apos = ap ? tm_add_scalar(ap, 0.5) : NULL;
    tm_no_grad_end(prev);
    REQUIRE(a && b && y && yn && counts && apos);
    REQUIRE(!tm_requires_grad_(apos, true));
    tm_tensor *in[2] = {a, b};
    for (int red = 0; red < 3; red++) {
        for (int k = 0; k < 4; k++) {
            mctx c = {k, REDS[red], k == 3 ? yn : y, false};
            CHECK(GRADCHECK("margin loss", f_margin, &c, in, k == 0 || k == 3
                            ? 2 : 1, TOL));
        }
        mctx c = {4, REDS[red], counts, false};
        CHECK(GRADCHECK("poisson_nll_loss log_input", f_margin, &c, in, 1,
                        TOL));
        c.flag = true;
        CHECK(GRADCHECK("poisson_nll_loss", f_margin, &c, &apos, 1, TOL));
    }
    tm_free(a);
    tm_free(b);
    tm_free(y);
    tm_free(yn);
    tm_free(counts);
    tm_free(pos);
    tm_free(ap);
    tm_free(apos);
}

TEST(margin_losses_bad_input)
{
    tm_tensor *v3 = tm_zeros((int64_t[]){3}, 1, TM_F32);
    tm_tensor *m31 = tm_zeros((int64_t[]){3, 1}, 2, TM_F32);
    tm_tensor *m23 = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    REQUIRE(v3 && m31 && m23);
    CHECK_NULL_ERR(tm_margin_ranking_loss(v3, m31, v3, 0, TM_REDUCTION_MEAN),
                   TM_ESHAPE, "input2 2-d");
    CHECK_NULL_ERR(tm_cosine_embedding_loss(m23, m23, m31, 0,
                                            TM_REDUCTION_MEAN),
                   TM_ESHAPE, "multi-target");
    CHECK_NULL_ERR(tm_cosine_embedding_loss(m23, m23, m23, 0,
                                            TM_REDUCTION_MEAN),
                   TM_ESHAPE, "2-d");
    CHECK_NULL_ERR(tm_cosine_embedding_loss(v3, v3, v3, 0,
                                            TM_REDUCTION_MEAN),
                   TM_ESHAPE, "expects 2-d inputs");
    CHECK_NULL_ERR(tm_soft_margin_loss(v3, NULL, TM_REDUCTION_MEAN),
                   TM_EINVAL, "target");
    CHECK_NULL_ERR(tm_hinge_embedding_loss(v3, v3, 1.0, (tm_reduction)7),
                   TM_EINVAL, "reduction 7");
    CHECK_NULL_ERR(tm_poisson_nll_loss(v3, v3, true, false, NAN,
                                       TM_REDUCTION_MEAN),
                   TM_EINVAL, "eps");
    tm_free(v3);
    tm_free(m31);
    tm_free(m23);
}

/* gaussian_nll(in[0], in[1], |in[2]| + 0.1) with var of shape vshape */
static tm_tensor *f_gauss(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    tm_tensor *a = tm_abs(in[2]);
    tm_tensor *v = a ? tm_add_scalar(a, 0.1) : NULL;
    tm_tensor *r = v ? tm_gaussian_nll_loss(in[0], in[1], v, c->flag, 1e-6,
                                            c->red) : NULL;
    tm_free(a);
    tm_free(v);
    return r;
}

TEST(gaussian_nll_loss_grad)
{
    tm_tensor *x = TT_LEAF(15, 3, 4), *y = TT_LEAF(16, 3, 4);
    tm_tensor *vars[3] = {TT_LEAF(17, 3, 4), TT_LEAF(18, 3), TT_LEAF(19, 3, 1)};
    REQUIRE(x && y && vars[0] && vars[1] && vars[2]);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            lctx c = {REDS[r], 0, 0, 0, k == 1};
            tm_tensor *in[3] = {x, y, vars[k]};
            CHECK(GRADCHECK("gaussian_nll_loss", f_gauss, &c, in, 3, TOL));
        }
    tm_tensor *neg = tm_full((int64_t[]){3, 4}, 2, -1.0, TM_F64);
    tm_tensor *bad = tm_full((int64_t[]){2, 4}, 2, 1.0, TM_F64);
    REQUIRE(neg && bad);
    CHECK_NULL_ERR(tm_gaussian_nll_loss(x, y, neg, false, 1e-6,
                                        TM_REDUCTION_MEAN),
                   TM_EINVAL, "negative");
    CHECK_NULL_ERR(tm_gaussian_nll_loss(x, y, bad, false, 1e-6,
                                        TM_REDUCTION_MEAN),
                   TM_ESHAPE, "var is of incorrect size: [2,4]");
    tm_free(neg);
    tm_free(bad);
    tm_free(x);
    tm_free(y);
    for (int k = 0; k < 3; k++) tm_free(vars[k]);
}
