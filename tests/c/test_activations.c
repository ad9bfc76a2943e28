/* test_activations.c — the activations of nn/functional/activation.c:
 * central-difference gradient checks in F64 (gradcheck.h; tol 1e-6: each
 * activation is smooth at the N(0, 1) points used, whose distance to the
 * kinks at 0, +-1, +-3, 6 and the shrink thresholds is far above h =
 * 1e-6), on contiguous and transposed inputs; exact values at the
 * branches and for large |x|; and the errors of bad input. */
#include "gradcheck.h"

#include <math.h>
#include <string.h>

#define TOL 1e-6

typedef enum {
    A_ELU, A_SELU, A_CELU, A_RELU6, A_HARDTANH, A_HARDSIGMOID, A_HARDSWISH,
    A_MISH, A_SOFTSIGN, A_LOGSIGMOID, A_SOFTMIN, A_GLU, A_RRELU, A_THRESHOLD,
    A_TANHSHRINK, A_SOFTSHRINK, A_HARDSHRINK, A_COUNT
} act;

static const char *const NAMES[A_COUNT] = {
    "elu", "selu", "celu", "relu6", "hardtanh", "hardsigmoid", "hardswish",
    "mish", "softsign", "logsigmoid", "softmin", "glu", "rrelu", "threshold",
    "tanhshrink", "softshrink", "hardshrink"};

typedef struct {
    act a;
    bool transpose;
    double scale; /* the leaf is multiplied by it, to reach every branch */
} actx;

static tm_tensor *apply(act a, const tm_tensor *x)
{
    switch (a) {
    case A_ELU: return tm_elu(x, 0.7);
    case A_SELU: return tm_selu(x);
    case A_CELU: return tm_celu(x, 1.3);
    case A_RELU6: return tm_relu6(x);
    case A_HARDTANH: return tm_hardtanh(x, -0.5, 2.0);
    case A_HARDSIGMOID: return tm_hardsigmoid(x);
    case A_HARDSWISH: return tm_hardswish(x);
    case A_MISH: return tm_mish(x);
    case A_SOFTSIGN: return tm_softsign(x);
    case A_LOGSIGMOID: return tm_logsigmoid(x);
    case A_SOFTMIN: return tm_softmin(x, -1);
    case A_GLU: return tm_glu(x, 0);
    case A_RRELU: return tm_rrelu(x, 0.1, 0.3, false, NULL);
    case A_THRESHOLD: return tm_threshold(x, 0.2, -4.0);
    case A_TANHSHRINK: return tm_tanhshrink(x);
    case A_SOFTSHRINK: return tm_softshrink(x, 0.7);
    case A_HARDSHRINK: return tm_hardshrink(x, 0.3);
    default: return NULL;
    }
}

static tm_tensor *f_act(tm_tensor *const *in, void *vc)
{
    const actx *c = vc;
    tm_tensor *x = c->transpose ? tm_transpose(in[0], 0, 1) : tm_retain(in[0]);
    tm_tensor *xs = x ? tm_mul_scalar(x, c->scale) : NULL;
    tm_tensor *r = xs ? apply(c->a, xs) : NULL;
    tm_free(xs);
    tm_free(x);
    return r;
}

TEST(activations_grad)
{
    tm_tensor *x = TT_LEAF(1, 4, 6), *xt = TT_LEAF(2, 6, 4);
    REQUIRE(x && xt);
    for (int a = 0; a < A_COUNT; a++) {
        for (int k = 0; k < 2; k++) {
            actx c = {(act)a, k == 1, 3.0};
            tm_tensor *in = k == 1 ? xt : x;
            CHECK(GRADCHECK(NAMES[a], f_act, &c, &in, 1, TOL));
        }
    }
    tm_free(x);
    tm_free(xt);
}

TEST(activations_grad_zero_d)
{
    tm_tensor *x = tt_leaf(NULL, 0, 3);
    REQUIRE(x);
    for (int a = 0; a < A_COUNT; a++) {
        if (a == A_GLU) continue;
        actx c = {(act)a, false, 1.0};
        CHECK(GRADCHECK(NAMES[a], f_act, &c, &x, 1, TOL));
    }
    tm_free(x);
}

static tm_tensor *f_prelu(tm_tensor *const *in, void *vc)
{
    (void)vc;
    return tm_prelu(in[0], in[1]);
}

TEST(prelu_grad_input_and_weight)
{
    tm_tensor *x = TT_LEAF(4, 2, 3, 4), *w3 = TT_LEAF(5, 3), *w1 = TT_LEAF(6, 1);
    tm_tensor *x1 = TT_LEAF(7, 5);
    REQUIRE(x && w3 && w1 && x1);
    tm_tensor *in[2] = {x, w3};
    CHECK(GRADCHECK("prelu per channel", f_prelu, NULL, in, 2, TOL));
    in[1] = w1;
    CHECK(GRADCHECK("prelu one slope", f_prelu, NULL, in, 2, TOL));
    in[0] = x1;
    CHECK(GRADCHECK("prelu 1-d", f_prelu, NULL, in, 2, TOL));
    tm_free(x);
    tm_free(w3);
    tm_free(w1);
    tm_free(x1);
}

static tm_tensor *vec(const double *v, int64_t n)
{
    return tt_tensor(v, (int64_t[]){n}, 1, TM_F64);
}

TEST(activations_exact_values)
{
    tm_tensor *x = vec((double[]){-200.0, -2.0, 0.0, 0.5, 3.5, 1e4}, 6);
    REQUIRE(x);
    tm_tensor *y = tm_logsigmoid(x);
    CHECK_VALUES(y, ((double[]){-200.0, -2.0 - log1p(exp(-2.0)), -log(2.0),
                                -log1p(exp(-0.5)), -log1p(exp(-3.5)), 0.0}),
                 6, 1e-15, 0);
    tm_free(y);
    y = tm_elu(x, 2.0);
    CHECK_VALUES(y, ((double[]){2.0 * expm1(-200.0), 2.0 * expm1(-2.0), 0.0,
                                0.5, 3.5, 1e4}), 6, 1e-15, 0);
    tm_free(y);
    y = tm_hardtanh(x, -1.0, 1.0);
    CHECK_VALUES(y, ((double[]){-1, -1, 0, 0.5, 1, 1}), 6, 0, 0);
    tm_free(y);
    y = tm_relu6(x);
    CHECK_VALUES(y, ((double[]){0, 0, 0, 0.5, 3.5, 6}), 6, 0, 0);
    tm_free(y);
    y = tm_hardswish(x);
    CHECK_VALUES(y, ((double[]){0, -2.0 / 6, 0, 0.5 * 3.5 / 6, 3.5, 1e4}), 6,
                 1e-15, 0);
    tm_free(y);
    y = tm_softshrink(x, 1.0);
    CHECK_VALUES(y, ((double[]){-199, -1, 0, 0, 2.5, 1e4 - 1}), 6, 0, 0);
    tm_free(y);
    y = tm_hardshrink(x, 1.0);
    CHECK_VALUES(y, ((double[]){-200, -2, 0, 0, 3.5, 1e4}), 6, 0, 0);
    tm_free(y);
    y = tm_threshold(x, 0.0, 7.0);
    CHECK_VALUES(y, ((double[]){7, 7, 7, 0.5, 3.5, 1e4}), 6, 0, 0);
    tm_free(y);
    y = tm_mish(x);
    CHECK(y && tm_numel(y) == 6);
    CHECK_VALUES(y, ((double[]){-200 * tanh(log1p(exp(-200.0))),
                                -2 * tanh(log1p(exp(-2.0))), 0,
                                0.5 * tanh(log1p(exp(0.5))),
                                3.5 * tanh(log1p(exp(3.5))), 1e4}), 6,
                 1e-14, 1e-300);
    tm_free(y);
    tm_free(x);
}

TEST(elu_gradient_finite_for_large_inputs)
{
    /* exp(1e4) is inf; the unpicked branch must not turn 0 * inf into NaN */
    tm_tensor *x = vec((double[]){1e4, -1e4}, 2);
    REQUIRE(x && !tm_requires_grad_(x, true));
    tm_tensor *y = tm_selu(x);
    tm_tensor *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    REQUIRE(l && !tm_backward(l));
    const double scale = 1.0507009873554804934193349852946;
    CHECK_VALUES(tm_grad(x), ((double[]){scale, 0.0}), 2, 1e-15, 0);
    tm_free(l);
    tm_free(y);
    tm_free(x);
}

TEST(rrelu_training_slopes)
{
    tm_rng r = tm_rng_new(11);
    tm_tensor *x = tm_full((int64_t[]){256}, 1, -1.0, TM_F64);
    REQUIRE(x);
    tm_tensor *y = tm_rrelu(x, 0.2, 0.25, true, &r);
    REQUIRE(y);
    const double *v = tm_data(y);
    REQUIRE(v);
    bool in_range = true;
    for (int i = 0; i < 256; i++) in_range = in_range && -v[i] >= 0.2 &&
                                             -v[i] < 0.25;
    CHECK(in_range);
    CHECK(v[0] != v[1]);
    tm_free(y);
    tm_free(x);
}

TEST(activations_bad_input)
{
    tm_tensor *x = tm_zeros((int64_t[]){3}, 1, TM_F32);
    tm_tensor *xi = tm_zeros((int64_t[]){3}, 1, TM_I64);
    tm_tensor *w2 = tm_zeros((int64_t[]){2}, 1, TM_F32);
    tm_tensor *x23 = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *s = tm_scalar(1.0, TM_F32);
    REQUIRE(x && xi && w2 && x23 && s);
    CHECK_NULL_ERR(tm_elu(NULL, 1.0), TM_EINVAL, "input");
    CHECK_NULL_ERR(tm_mish(xi), TM_EDTYPE, "float");
    CHECK_NULL_ERR(tm_hardtanh(x, 2.0, 1.0), TM_EINVAL, "min_val (2)");
    CHECK_NULL_ERR(tm_celu(x, 0.0), TM_EINVAL, "alpha");
    CHECK_NULL_ERR(tm_softshrink(x, -1.0), TM_EINVAL, "lambd");
    CHECK_NULL_ERR(tm_rrelu(x, 0.5, 0.1, false, NULL), TM_EINVAL, "lower");
    CHECK_NULL_ERR(tm_glu(x, 0), TM_ESHAPE, "even");
    CHECK_NULL_ERR(tm_glu(s, 0), TM_ESHAPE, "0-d");
    CHECK_NULL_ERR(tm_glu(x23, 2), TM_ERANGE, "dim 2");
    CHECK_NULL_ERR(tm_prelu(x23, w2), TM_ESHAPE, "channel size 3");
    CHECK_NULL_ERR(tm_softmin(x, 1), TM_ERANGE, "dim 1");
    tm_free(x);
    tm_free(xi);
    tm_free(w2);
    tm_free(x23);
    tm_free(s);
}
