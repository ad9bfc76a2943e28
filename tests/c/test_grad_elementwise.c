/* test_grad_elementwise.c — gradients of the elementwise ops: unary,
 * binary and their scalar forms, clamp (scalar and tensor bounds), where,
 * masked_fill, tril/triu.
 *
 * Every differentiable op passes GRADCHECK (central differences in F64,
 * tol 1e-6: see gradcheck.h) on contiguous inputs, non-contiguous inputs
 * (leaves that are a transposed view or a slice with step 2 of a larger
 * tensor, so the op itself reads strided memory), broadcast inputs and 0-d
 * inputs.  Random inputs are moved away from kinks (relu/abs at 0) and
 * into the domain of log, sqrt, pow; the PyTorch conventions at kinks,
 * ties and 0^b are tested with exact values.  One F32 case per op checks
 * that the gradient has the input's shape and dtype. */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TOL 1e-6

/* ----------------------------------------------------------- helpers */

/* Domains that keep random inputs away from kinks and poles. */
enum { D_ANY, D_POS, D_AWAY0, D_LO, D_HI, D_UNIT, D_GT1 };
/* Leaf layouts: contiguous, transposed view, slice with step 2, 0-d. */
enum { L_CONTIG, L_TRANS, L_STEP, L_0D, L_COUNT };
static const char *const layout_names[L_COUNT] = {"contiguous", "transposed",
                                                  "step2", "0-d"};

static double in_domain(double v, int dom)
{
    switch (dom) {
    case D_POS: return fabs(v) + 0.5;
    case D_AWAY0: return v >= 0 ? v + 0.3 : v - 0.3;
    case D_LO: return 0.3 * v - 0.6;
    case D_HI: return 0.3 * v + 0.6;
    /* inside (-0.8, 0.8): away from asin's / atanh's edges and tan's poles */
    case D_UNIT: return 0.8 * tanh(v);
    case D_GT1: return fabs(v) + 1.5; /* acosh: away from its edge at 1 */
    default: return v;
    }
}

static void set_domain(tm_tensor *t, int dom)
{
    if (dom == D_ANY) return;
    bool prev = tm_no_grad_begin();
    int nd = tm_ndim(t);
    int64_t idx[TM_MAX_DIMS];
    for (int64_t j = 0; j < tm_numel(t); j++) {
        int64_t rem = j;
        for (int d = nd - 1; d >= 0; d--) {
            idx[d] = rem % tm_shape(t)[d];
            rem /= tm_shape(t)[d];
        }
        double v;
        tm_get(t, idx, &v);
        tm_set(t, idx, in_domain(v, dom));
    }
    tm_no_grad_end(prev);
}

/* An F64 leaf requiring grad of shape[nd] in the given layout (L_TRANS and
 * L_STEP need nd == 2; L_0D ignores the shape). */
static tm_tensor *mk(uint64_t seed, int layout, const int64_t *shape, int nd,
                     int dom)
{
    tm_tensor *x = NULL;
    int64_t none[1] = {1};
    if (layout == L_CONTIG) {
        x = tt_leaf(shape, nd, seed);
    } else if (layout == L_0D) {
        x = tt_leaf(none, 0, seed);
    } else {
        int64_t bs[2] = {shape[1], shape[0]};
        if (layout == L_STEP) bs[0] = 2 * shape[0], bs[1] = shape[1];
        tm_tensor *base = tt_leaf(bs, 2, seed);
        if (!base) return NULL;
        tm_requires_grad_(base, false);
        x = layout == L_TRANS ? tm_transpose(base, 0, 1)
                              : tm_slice(base, 0, 0, bs[0], 2);
        tm_free(base);
        if (x && tm_requires_grad_(x, true)) {
            tm_free(x);
            x = NULL;
        }
    }
    if (x) set_domain(x, dom);
    return x;
}

#define MK(seed, layout, dom, ...)                                            \
    mk((seed), (layout), (int64_t[]){__VA_ARGS__},                            \
       (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (dom))

/* An F32 leaf requiring grad (values from the F64 stream, in dom). */
static tm_tensor *mk32(uint64_t seed, const int64_t *shape, int nd, int dom)
{
    tm_tensor *x = mk(seed, L_CONTIG, shape, nd, dom);
    if (!x) return NULL;
    bool prev = tm_no_grad_begin();
    tm_tensor *y = tm_to_dtype(x, TM_F32);
    tm_no_grad_end(prev);
    tm_free(x);
    if (y && tm_requires_grad_(y, true)) {
        tm_free(y);
        y = NULL;
    }
    return y;
}

/* Backpropagates ones from out (consumed). */
static tm_status back_ones(tm_tensor *out)
{
    if (!out) return tm_last_status();
    tm_tensor *ones = tm_ones_like(out);
    tm_status st = ones ? tm_backward_ex(out, ones, false) : tm_last_status();
    tm_free(ones);
    tm_free(out);
    return st;
}

/* The gradient of x exists with x's shape and dtype. */
static void check_grad_like(const char *file, int line, const char *what,
                            const tm_tensor *x)
{
    const tm_tensor *g = tm_grad(x);
    if (!g) {
        tt_fail(file, line, "%s: no gradient [%s]", what, tm_last_error());
        return;
    }
    if (tm_dtype_of(g) != tm_dtype_of(x))
        tt_fail(file, line, "%s: gradient dtype %s, input %s", what,
                tm_dtype_name(tm_dtype_of(g)), tm_dtype_name(tm_dtype_of(x)));
    tt_check_shape(file, line, g, tm_shape(x), tm_ndim(x));
}
#define CHECK_GRAD_LIKE(what, x) check_grad_like(__FILE__, __LINE__, what, x)

static double grad_at(const tm_tensor *x, int64_t i)
{
    double v = NAN;
    const tm_tensor *g = tm_grad(x);
    if (g) tm_get(g, (int64_t[]){i}, &v);
    return v;
}

/* ------------------------------------------------------------- unary */

typedef struct {
    tm_unary_op op;
    int dom;
    double p0, p1;
    const char *name;
} ucase;

static const ucase unary_cases[] = {
    {TM_OP_NEG, D_ANY, 0, 0, "neg"},
    {TM_OP_ABS, D_AWAY0, 0, 0, "abs"},
    {TM_OP_SIGN, D_AWAY0, 0, 0, "sign"},
    {TM_OP_EXP, D_ANY, 0, 0, "exp"},
    {TM_OP_LOG, D_POS, 0, 0, "log"},
    {TM_OP_LOG1P, D_POS, 0, 0, "log1p"},
    {TM_OP_EXPM1, D_ANY, 0, 0, "expm1"},
    {TM_OP_SQRT, D_POS, 0, 0, "sqrt"},
    {TM_OP_RSQRT, D_POS, 0, 0, "rsqrt"},
    {TM_OP_SIN, D_ANY, 0, 0, "sin"},
    {TM_OP_COS, D_ANY, 0, 0, "cos"},
    {TM_OP_TANH, D_ANY, 0, 0, "tanh"},
    {TM_OP_SIGMOID, D_ANY, 0, 0, "sigmoid"},
    {TM_OP_RELU, D_AWAY0, 0, 0, "relu"},
    {TM_OP_LEAKY_RELU, D_AWAY0, 0.1, 0, "leaky_relu"},
    {TM_OP_GELU, D_ANY, 0, 0, "gelu"},
    {TM_OP_GELU_TANH, D_ANY, 0, 0, "gelu_tanh"},
    {TM_OP_SILU, D_ANY, 0, 0, "silu"},
    /* beta 2, threshold 1: inputs above 0.5 take the linear branch */
    {TM_OP_SOFTPLUS, D_ANY, 2, 1, "softplus"},
    {TM_OP_SOFTPLUS, D_ANY, 1, 20, "softplus_default"},
    {TM_OP_FLOOR, D_ANY, 0, 0, "floor"},
    {TM_OP_CEIL, D_ANY, 0, 0, "ceil"},
    {TM_OP_ROUND, D_ANY, 0, 0, "round"},
    {TM_OP_TRUNC, D_ANY, 0, 0, "trunc"},
    {TM_OP_RECIPROCAL, D_AWAY0, 0, 0, "reciprocal"},
    {TM_OP_SQUARE, D_ANY, 0, 0, "square"},
    {TM_OP_ERF, D_ANY, 0, 0, "erf"},
    {TM_OP_LOG2, D_POS, 0, 0, "log2"},
    {TM_OP_EXP2, D_ANY, 0, 0, "exp2"},
    {TM_OP_TAN, D_UNIT, 0, 0, "tan"},
    {TM_OP_ASIN, D_UNIT, 0, 0, "asin"},
    {TM_OP_ACOS, D_UNIT, 0, 0, "acos"},
    {TM_OP_ATAN, D_ANY, 0, 0, "atan"},
    {TM_OP_SINH, D_ANY, 0, 0, "sinh"},
    {TM_OP_COSH, D_ANY, 0, 0, "cosh"},
    {TM_OP_ASINH, D_ANY, 0, 0, "asinh"},
    {TM_OP_ACOSH, D_GT1, 0, 0, "acosh"},
    {TM_OP_ATANH, D_UNIT, 0, 0, "atanh"},
    {TM_OP_LOG10, D_POS, 0, 0, "log10"},
    {TM_OP_CLAMP, D_ANY, -0.5, 0.7, "clamp"},
    {TM_OP_CLAMP, D_ANY, -0.5, NAN, "clamp_min"},
    {TM_OP_CLAMP, D_ANY, NAN, 0.7, "clamp_max"},
};
#define N_UNARY (int)(sizeof unary_cases / sizeof unary_cases[0])

static tm_tensor *f_unary(tm_tensor *const *in, void *ctx)
{
    const ucase *c = ctx;
    switch (c->op) {
    case TM_OP_LEAKY_RELU: return tm_leaky_relu(in[0], c->p0);
    case TM_OP_SOFTPLUS: return tm_softplus(in[0], c->p0, c->p1);
    case TM_OP_CLAMP: return tm_clamp(in[0], c->p0, c->p1);
    default: return tm_unary(c->op, in[0]);
    }
}

TEST(grad_unary_ops_pass_gradcheck_in_every_layout)
{
    for (int k = 0; k < N_UNARY; k++) {
        const ucase *c = &unary_cases[k];
        for (int l = 0; l < L_COUNT; l++) {
            tm_tensor *x = MK(100 + (uint64_t)k, l, c->dom, 3, 4);
            REQUIRE(x);
            char name[80];
            snprintf(name, sizeof name, "%s/%s", c->name, layout_names[l]);
            GRADCHECK(name, f_unary, (void *)c, &x, 1, TOL);
            tm_free(x);
        }
    }
}

TEST(grad_unary_ops_f32_gradient_has_input_shape_and_dtype)
{
    for (int k = 0; k < N_UNARY; k++) {
        const ucase *c = &unary_cases[k];
        tm_tensor *x = mk32(200 + (uint64_t)k, (int64_t[]){2, 3}, 2, c->dom);
        REQUIRE(x);
        CHECK_INT(back_ones(f_unary(&x, (void *)c)), TM_OK);
        CHECK_GRAD_LIKE(c->name, x);
        tm_free(x);
    }
}

TEST(grad_unary_conventions_at_kinks)
{
    /* relu and abs at 0 pass 0; clamp passes the gradient at its bounds
     * (PyTorch), and 0 outside them. */
    const double xs[5] = {-1, 0, 0.5, 1, 2};
    tm_tensor *x = tt_tensor(xs, (int64_t[]){5}, 1, TM_F64);
    REQUIRE(x && !tm_requires_grad_(x, true));
    CHECK_INT(back_ones(tm_relu(x)), TM_OK);
    CHECK_VALUES(tm_grad(x), ((double[]){0, 0, 1, 1, 1}), 5, 0, 0);
    tm_zero_grad(x);
    CHECK_INT(back_ones(tm_abs(x)), TM_OK);
    CHECK_VALUES(tm_grad(x), ((double[]){-1, 0, 1, 1, 1}), 5, 0, 0);
    tm_zero_grad(x);
    CHECK_INT(back_ones(tm_clamp(x, 0, 1)), TM_OK);
    CHECK_VALUES(tm_grad(x), ((double[]){0, 1, 1, 1, 0}), 5, 0, 0);
    tm_zero_grad(x);
    CHECK_INT(back_ones(tm_leaky_relu(x, 0.25)), TM_OK);
    CHECK_VALUES(tm_grad(x), ((double[]){0.25, 0.25, 1, 1, 1}), 5, 0, 0);
    tm_zero_grad(x);
    CHECK_INT(back_ones(tm_sign(x)), TM_OK);
    CHECK_VALUES(tm_grad(x), ((double[]){0, 0, 0, 0, 0}), 5, 0, 0);
    tm_free(x);
}

/* ------------------------------------------------------------ binary */

typedef struct {
    tm_binary_op op;
    int dom_a, dom_b;
    const char *name;
} bcase;

static const bcase binary_cases[] = {
    {TM_OP_ADD, D_ANY, D_ANY, "add"},
    {TM_OP_SUB, D_ANY, D_ANY, "sub"},
    {TM_OP_MUL, D_ANY, D_ANY, "mul"},
    {TM_OP_DIV, D_ANY, D_AWAY0, "div"},
    {TM_OP_POW, D_POS, D_ANY, "pow"},
    {TM_OP_MAXIMUM, D_ANY, D_ANY, "maximum"},
    {TM_OP_MINIMUM, D_ANY, D_ANY, "minimum"},
    {TM_OP_FLOOR_DIVIDE, D_ANY, D_AWAY0, "floor_divide"},
    {TM_OP_REMAINDER, D_ANY, D_AWAY0, "remainder"},
    {TM_OP_FMOD, D_ANY, D_AWAY0, "fmod"},
    {TM_OP_ATAN2, D_ANY, D_AWAY0, "atan2"},
    {TM_OP_LOGADDEXP, D_ANY, D_ANY, "logaddexp"},
    {TM_OP_LOGADDEXP2, D_ANY, D_ANY, "logaddexp2"},
    {TM_OP_COPYSIGN, D_AWAY0, D_AWAY0, "copysign"},
    {TM_OP_HYPOT, D_ANY, D_AWAY0, "hypot"},
};
#define N_BINARY (int)(sizeof binary_cases / sizeof binary_cases[0])

static tm_tensor *f_binary(tm_tensor *const *in, void *ctx)
{
    const bcase *c = ctx;
    return tm_binary(c->op, in[0], in[1]);
}

TEST(grad_binary_ops_pass_gradcheck_contiguous_strided_broadcast_0d)
{
    for (int k = 0; k < N_BINARY; k++) {
        const bcase *c = &binary_cases[k];
        uint64_t s = 300 + 10 * (uint64_t)k;
        tm_tensor *in[6][2] = {
            {MK(s, L_CONTIG, c->dom_a, 3, 4), MK(s + 1, L_CONTIG, c->dom_b, 3, 4)},
            {MK(s, L_TRANS, c->dom_a, 3, 4), MK(s + 1, L_STEP, c->dom_b, 3, 4)},
            {MK(s, L_CONTIG, c->dom_a, 3, 1), MK(s + 1, L_CONTIG, c->dom_b, 4)},
            {MK(s, L_CONTIG, c->dom_a, 4), MK(s + 1, L_STEP, c->dom_b, 3, 1)},
            {MK(s, L_0D, c->dom_a, 1), MK(s + 1, L_CONTIG, c->dom_b, 2, 3)},
            {MK(s, L_0D, c->dom_a, 1), MK(s + 1, L_0D, c->dom_b, 1)},
        };
        static const char *const what[6] = {"contiguous", "strided",
                                             "bcast[3,1]x[4]", "bcast[4]x[3,1]",
                                             "0-d x [2,3]", "0-d x 0-d"};
        for (int v = 0; v < 6; v++) {
            char name[80];
            snprintf(name, sizeof name, "%s/%s", c->name, what[v]);
            if (in[v][0] && in[v][1])
                GRADCHECK(name, f_binary, (void *)c, in[v], 2, TOL);
            else
                tt_fail(__FILE__, __LINE__, "%s: no inputs", name);
            tm_free(in[v][0]);
            tm_free(in[v][1]);
        }
    }
}

TEST(grad_binary_ops_f32_and_mixed_dtypes_give_each_input_its_dtype)
{
    for (int k = 0; k < N_BINARY; k++) {
        const bcase *c = &binary_cases[k];
        tm_tensor *a = mk32(400, (int64_t[]){3, 1}, 2, c->dom_a);
        tm_tensor *b = mk32(401, (int64_t[]){4}, 1, c->dom_b);
        tm_tensor *b64 = mk(402, L_CONTIG, (int64_t[]){4}, 1, c->dom_b);
        REQUIRE(a && b && b64);
        CHECK_INT(back_ones(tm_binary(c->op, a, b)), TM_OK);
        CHECK_GRAD_LIKE(c->name, a);
        CHECK_GRAD_LIKE(c->name, b);
        tm_zero_grad(a);
        /* f32 [3,1] with f64 [4]: an F64 [3,4] output */
        CHECK_INT(back_ones(tm_binary(c->op, a, b64)), TM_OK);
        CHECK_GRAD_LIKE(c->name, a);
        CHECK_GRAD_LIKE(c->name, b64);
        tm_free(a);
        tm_free(b);
        tm_free(b64);
    }
}

TEST(grad_binary_only_the_operand_that_requires_grad_gets_one)
{
    tm_tensor *a = MK(410, L_CONTIG, D_ANY, 3, 4);
    tm_tensor *b = tt_tensor((double[]){1, -2, 3, 4}, (int64_t[]){4}, 1,
                             TM_I32);
    REQUIRE(a && b);
    CHECK_INT(back_ones(tm_mul(a, b)), TM_OK);
    CHECK_GRAD_LIKE("mul by i32", a);
    CHECK_VALUES(tm_grad(a), ((double[]){1, -2, 3, 4, 1, -2, 3, 4, 1, -2, 3,
                                         4}), 12, 0, 0);
    CHECK(tm_grad(b) == NULL);
    tm_free(a);
    tm_free(b);
}

TEST(grad_elementwise_zero_size_inputs)
{
    /* [0,3] * [3]: a gets an empty gradient, b a zero one of shape [3] */
    tm_tensor *a = MK(420, L_CONTIG, D_ANY, 0, 3);
    tm_tensor *b = MK(421, L_CONTIG, D_ANY, 3);
    REQUIRE(a && b);
    tm_tensor *e = tm_exp(a);
    REQUIRE(e);
    CHECK_INT(back_ones(tm_mul(e, b)), TM_OK);
    tm_free(e);
    CHECK_GRAD_LIKE("mul [0,3]", a);
    CHECK_GRAD_LIKE("mul [3]", b);
    CHECK_VALUES(tm_grad(b), ((double[]){0, 0, 0}), 3, 0, 0);
    tm_free(a);
    tm_free(b);
}

TEST(grad_maximum_minimum_ties_split_the_gradient)
{
    const double av[3] = {1, 2, 5}, bv[3] = {1, 3, 4};
    tm_tensor *a = tt_tensor(av, (int64_t[]){3}, 1, TM_F64);
    tm_tensor *b = tt_tensor(bv, (int64_t[]){3}, 1, TM_F64);
    REQUIRE(a && b && !tm_requires_grad_(a, true) &&
            !tm_requires_grad_(b, true));
    CHECK_INT(back_ones(tm_maximum(a, b)), TM_OK);
    CHECK_VALUES(tm_grad(a), ((double[]){0.5, 0, 1}), 3, 0, 0);
    CHECK_VALUES(tm_grad(b), ((double[]){0.5, 1, 0}), 3, 0, 0);
    tm_zero_grad(a);
    tm_zero_grad(b);
    CHECK_INT(back_ones(tm_minimum(a, b)), TM_OK);
    CHECK_VALUES(tm_grad(a), ((double[]){0.5, 1, 0}), 3, 0, 0);
    CHECK_VALUES(tm_grad(b), ((double[]){0.5, 0, 1}), 3, 0, 0);
    /* Central differences see the same half at a tie. */
    bcase mx = {TM_OP_MAXIMUM, D_ANY, D_ANY, "maximum/tie"};
    tm_tensor *in[2] = {a, b};
    GRADCHECK("maximum/tie", f_binary, &mx, in, 2, TOL);
    tm_free(a);
    tm_free(b);
}

TEST(grad_pow_and_remainder_conventions)
{
    /* d/db a^b is 0 where a == 0 and b >= 0 (PyTorch), d/da is 0 where
     * b == 0; d/db remainder(a, b) = -floor(a / b). */
    const double av[3] = {0, 2, 0}, bv[3] = {2, 3, 0};
    tm_tensor *a = tt_tensor(av, (int64_t[]){3}, 1, TM_F64);
    tm_tensor *b = tt_tensor(bv, (int64_t[]){3}, 1, TM_F64);
    REQUIRE(a && b && !tm_requires_grad_(a, true) &&
            !tm_requires_grad_(b, true));
    CHECK_INT(back_ones(tm_pow(a, b)), TM_OK);
    CHECK_VALUES(tm_grad(a), ((double[]){0, 12, 0}), 3, 1e-15, 0);
    CHECK_VALUES(tm_grad(b), ((double[]){0, 8 * log(2.0), 0}), 3, 1e-15, 0);
    tm_free(a);
    tm_free(b);
    const double rv[2] = {5.5, -5.5};
    a = tt_tensor(rv, (int64_t[]){2}, 1, TM_F64);
    b = tt_tensor((double[]){2, 2}, (int64_t[]){2}, 1, TM_F64);
    REQUIRE(a && b && !tm_requires_grad_(a, true) &&
            !tm_requires_grad_(b, true));
    CHECK_INT(back_ones(tm_remainder(a, b)), TM_OK);
    CHECK_VALUES(tm_grad(a), ((double[]){1, 1}), 2, 0, 0);
    CHECK_VALUES(tm_grad(b), ((double[]){-2, 3}), 2, 0, 0);
    tm_zero_grad(a);
    tm_zero_grad(b);
    CHECK_INT(back_ones(tm_floor_divide(a, b)), TM_OK);
    CHECK_VALUES(tm_grad(a), ((double[]){0, 0}), 2, 0, 0);
    CHECK_VALUES(tm_grad(b), ((double[]){0, 0}), 2, 0, 0);
    tm_free(a);
    tm_free(b);
}

/* ------------------------------------------------------- scalar forms */

typedef struct {
    tm_binary_op op;
    double s;
    bool rev;
    int dom;
    const char *name;
} scase;

static const scase scalar_cases[] = {
    {TM_OP_ADD, 1.5, false, D_ANY, "add_scalar"},
    {TM_OP_ADD, 1.5, true, D_ANY, "radd"},
    {TM_OP_SUB, 1.5, false, D_ANY, "sub_scalar"},
    {TM_OP_SUB, 1.5, true, D_ANY, "rsub"},
    {TM_OP_MUL, -2.5, false, D_ANY, "mul_scalar"},
    {TM_OP_MUL, -2.5, true, D_ANY, "rmul"},
    {TM_OP_DIV, 1.7, false, D_ANY, "div_scalar"},
    {TM_OP_DIV, 1.7, true, D_AWAY0, "rdiv"},
    {TM_OP_POW, 2.5, false, D_POS, "pow_scalar"},
    {TM_OP_POW, 3, false, D_ANY, "pow_scalar_3"},
    {TM_OP_POW, 0, false, D_POS, "pow_scalar_0"},
    {TM_OP_POW, 1.8, true, D_ANY, "rpow"},
    {TM_OP_MAXIMUM, 0.2, false, D_ANY, "maximum_scalar"},
    {TM_OP_MINIMUM, 0.2, false, D_ANY, "minimum_scalar"},
    {TM_OP_REMAINDER, 0.7, false, D_ANY, "remainder_scalar"},
    {TM_OP_REMAINDER, 2.3, true, D_AWAY0, "rremainder"},
    {TM_OP_FLOOR_DIVIDE, 0.7, false, D_ANY, "floor_divide_scalar"},
    {TM_OP_FMOD, 0.7, false, D_ANY, "fmod_scalar"},
    {TM_OP_FMOD, 2.3, true, D_AWAY0, "rfmod"},
    {TM_OP_ATAN2, 0.8, false, D_ANY, "atan2_scalar"},
    {TM_OP_ATAN2, -0.8, true, D_AWAY0, "ratan2"},
    {TM_OP_LOGADDEXP, 0.3, false, D_ANY, "logaddexp_scalar"},
    {TM_OP_LOGADDEXP2, 0.3, true, D_ANY, "rlogaddexp2"},
    {TM_OP_COPYSIGN, -1, false, D_AWAY0, "copysign_scalar"},
    {TM_OP_COPYSIGN, 1.5, true, D_AWAY0, "rcopysign"},
    {TM_OP_HYPOT, 0.6, false, D_ANY, "hypot_scalar"},
};
#define N_SCALAR (int)(sizeof scalar_cases / sizeof scalar_cases[0])

static tm_tensor *f_scalar(tm_tensor *const *in, void *ctx)
{
    const scase *c = ctx;
    if (c->rev) return tm_binary_rscalar(c->op, c->s, in[0]);
    switch (c->op) { /* the named forms where they exist */
    case TM_OP_ADD: return tm_add_scalar(in[0], c->s);
    case TM_OP_SUB: return tm_sub_scalar(in[0], c->s);
    case TM_OP_MUL: return tm_mul_scalar(in[0], c->s);
    case TM_OP_DIV: return tm_div_scalar(in[0], c->s);
    case TM_OP_POW: return tm_pow_scalar(in[0], c->s);
    case TM_OP_MAXIMUM: return tm_maximum_scalar(in[0], c->s);
    case TM_OP_MINIMUM: return tm_minimum_scalar(in[0], c->s);
    case TM_OP_REMAINDER: return tm_remainder_scalar(in[0], c->s);
    default: return tm_binary_scalar(c->op, in[0], c->s);
    }
}

TEST(grad_scalar_forms_pass_gradcheck_in_every_layout)
{
    for (int k = 0; k < N_SCALAR; k++) {
        const scase *c = &scalar_cases[k];
        for (int l = 0; l < L_COUNT; l++) {
            tm_tensor *x = MK(500 + (uint64_t)k, l, c->dom, 3, 4);
            REQUIRE(x);
            char name[80];
            snprintf(name, sizeof name, "%s/%s", c->name, layout_names[l]);
            GRADCHECK(name, f_scalar, (void *)c, &x, 1, TOL);
            tm_free(x);
        }
    }
}

TEST(grad_scalar_forms_f32_gradient_has_input_shape_and_dtype)
{
    for (int k = 0; k < N_SCALAR; k++) {
        const scase *c = &scalar_cases[k];
        tm_tensor *x = mk32(600 + (uint64_t)k, (int64_t[]){2, 3}, 2, c->dom);
        REQUIRE(x);
        CHECK_INT(back_ones(f_scalar(&x, (void *)c)), TM_OK);
        CHECK_GRAD_LIKE(c->name, x);
        tm_free(x);
    }
}

TEST(grad_scalar_ties_and_zero_base)
{
    const double xs[3] = {0.2, -1, 1};
    tm_tensor *x = tt_tensor(xs, (int64_t[]){3}, 1, TM_F64);
    REQUIRE(x && !tm_requires_grad_(x, true));
    CHECK_INT(back_ones(tm_maximum_scalar(x, 0.2)), TM_OK);
    CHECK_VALUES(tm_grad(x), ((double[]){0.5, 0, 1}), 3, 0, 0);
    tm_zero_grad(x);
    /* 0^x: d/dx is 0 where x >= 0, as in PyTorch */
    CHECK_INT(back_ones(tm_binary_rscalar(TM_OP_POW, 0, x)), TM_OK);
    CHECK_NEAR(grad_at(x, 0), 0, 0);
    CHECK_NEAR(grad_at(x, 2), 0, 0);
    tm_free(x);
}

/* ------------------------------------------- clamp with tensor bounds */

typedef struct {
    bool lo, hi;
} cctx;

static tm_tensor *f_clamp_tensor(tm_tensor *const *in, void *ctx)
{
    const cctx *c = ctx;
    return tm_clamp_tensor(in[0], c->lo ? in[1] : NULL,
                           c->hi ? in[2] : NULL);
}

TEST(grad_clamp_tensor_passes_gradcheck_for_t_lo_hi)
{
    /* t [3,4] (transposed leaf), lo [4], hi [3,1]; the second pass swaps
     * the bound ranges so lo > hi (the result, and gradient, is hi's). */
    const cctx cases[4] = {{true, true}, {true, false}, {false, true},
                           {true, true}};
    for (int k = 0; k < 4; k++) {
        bool swap = k == 3;
        tm_tensor *in[3] = {MK(700, L_TRANS, D_ANY, 3, 4),
                            MK(701, L_CONTIG, swap ? D_HI : D_LO, 4),
                            MK(702, L_CONTIG, swap ? D_LO : D_HI, 3, 1)};
        REQUIRE(in[0] && in[1] && in[2]);
        /* an unused bound is passed along but gets no gradient */
        if (!cases[k].lo) tm_requires_grad_(in[1], false);
        if (!cases[k].hi) tm_requires_grad_(in[2], false);
        char name[64];
        snprintf(name, sizeof name, "clamp_tensor/%d", k);
        GRADCHECK(name, f_clamp_tensor, (void *)&cases[k], in, 3, TOL);
        for (int i = 0; i < 3; i++) tm_free(in[i]);
    }
}

TEST(grad_clamp_tensor_f32_and_boundary)
{
    tm_tensor *t = mk32(710, (int64_t[]){3, 4}, 2, D_ANY);
    tm_tensor *lo = mk32(711, (int64_t[]){4}, 1, D_LO);
    tm_tensor *hi = mk(712, L_CONTIG, (int64_t[]){3, 1}, 2, D_HI);
    REQUIRE(t && lo && hi);
    CHECK_INT(back_ones(tm_clamp_tensor(t, lo, hi)), TM_OK);
    CHECK_GRAD_LIKE("clamp_tensor t", t);
    CHECK_GRAD_LIKE("clamp_tensor lo", lo);
    CHECK_GRAD_LIKE("clamp_tensor hi (f64)", hi);
    tm_free(t);
    tm_free(lo);
    tm_free(hi);
    /* t on a bound: the gradient goes to t, as in PyTorch */
    t = tt_tensor((double[]){0, 1, 2}, (int64_t[]){3}, 1, TM_F64);
    lo = tt_tensor((double[]){0, 0, 0}, (int64_t[]){3}, 1, TM_F64);
    hi = tt_tensor((double[]){1, 1, 1}, (int64_t[]){3}, 1, TM_F64);
    REQUIRE(t && lo && hi && !tm_requires_grad_(t, true) &&
            !tm_requires_grad_(lo, true) && !tm_requires_grad_(hi, true));
    CHECK_INT(back_ones(tm_clamp_tensor(t, lo, hi)), TM_OK);
    CHECK_VALUES(tm_grad(t), ((double[]){1, 1, 0}), 3, 0, 0);
    CHECK_VALUES(tm_grad(lo), ((double[]){0, 0, 0}), 3, 0, 0);
    CHECK_VALUES(tm_grad(hi), ((double[]){0, 0, 1}), 3, 0, 0);
    tm_free(t);
    tm_free(lo);
    tm_free(hi);
}

/* ------------------------------------------ where, masked_fill, tril */

static tm_tensor *f_where(tm_tensor *const *in, void *ctx)
{
    return tm_where(ctx, in[0], in[1]);
}

static tm_tensor *f_masked_fill(tm_tensor *const *in, void *ctx)
{
    return tm_masked_fill(in[0], ctx, 7.0);
}

static tm_tensor *bool_tensor(const uint8_t *v, const int64_t *shape,
                              int nd)
{
    double d[16];
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    for (int64_t i = 0; i < n; i++) d[i] = v[i];
    return tt_tensor(d, shape, nd, TM_BOOL);
}

TEST(grad_where_and_masked_fill_pass_gradcheck)
{
    tm_tensor *cond = bool_tensor((uint8_t[]){1, 0, 1}, (int64_t[]){3, 1}, 2);
    tm_tensor *mask = bool_tensor((uint8_t[]){0, 1, 1, 0}, (int64_t[]){4}, 1);
    REQUIRE(cond && mask);
    tm_tensor *in[2] = {MK(800, L_TRANS, D_ANY, 3, 4),
                        MK(801, L_CONTIG, D_ANY, 4)};
    REQUIRE(in[0] && in[1]);
    GRADCHECK("where/[3,4],[4]", f_where, cond, in, 2, TOL);
    GRADCHECK("masked_fill/transposed", f_masked_fill, mask, in, 1, TOL);
    tm_free(in[1]);
    in[1] = MK(802, L_0D, D_ANY, 1);
    REQUIRE(in[1]);
    GRADCHECK("where/[3,4],0-d", f_where, cond, in, 2, TOL);
    /* only b requires grad */
    tm_requires_grad_(in[0], false);
    GRADCHECK("where/b only", f_where, cond, in, 2, TOL);
    tm_free(in[0]);
    tm_free(in[1]);
    /* F32 a with F64 b: each gradient in its input's dtype */
    tm_tensor *a = mk32(803, (int64_t[]){3, 4}, 2, D_ANY);
    tm_tensor *b = MK(804, L_CONTIG, D_ANY, 4);
    REQUIRE(a && b);
    CHECK_INT(back_ones(tm_where(cond, a, b)), TM_OK);
    CHECK_GRAD_LIKE("where a", a);
    CHECK_GRAD_LIKE("where b", b);
    tm_zero_grad(a);
    CHECK_INT(back_ones(tm_masked_fill(a, mask, 1)), TM_OK);
    CHECK_GRAD_LIKE("masked_fill", a);
    CHECK_VALUES(tm_grad(a), ((double[]){1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1}),
                 12, 0, 0);
    tm_free(a);
    tm_free(b);
    tm_free(cond);
    tm_free(mask);
}

typedef struct {
    int64_t k;
    bool upper;
} tctx;

static tm_tensor *f_tri(tm_tensor *const *in, void *ctx)
{
    const tctx *c = ctx;
    return c->upper ? tm_triu(in[0], c->k) : tm_tril(in[0], c->k);
}

TEST(grad_tril_triu_pass_gradcheck)
{
    for (int up = 0; up < 2; up++) {
        for (int64_t k = -1; k <= 1; k++) {
            tctx c = {k, up != 0};
            tm_tensor *x = MK(900, L_TRANS, D_ANY, 3, 4);
            tm_tensor *y = MK(901, L_CONTIG, D_ANY, 2, 3, 3);
            tm_tensor *z = mk32(902, (int64_t[]){4, 3}, 2, D_ANY);
            REQUIRE(x && y && z);
            char name[64];
            snprintf(name, sizeof name, "%s/k=%lld", up ? "triu" : "tril",
                     (long long)k);
            GRADCHECK(name, f_tri, &c, &x, 1, TOL);
            GRADCHECK(name, f_tri, &c, &y, 1, TOL);
            CHECK_INT(back_ones(f_tri(&z, &c)), TM_OK);
            CHECK_GRAD_LIKE(name, z);
            tm_free(x);
            tm_free(y);
            tm_free(z);
        }
    }
}

/* ------------------------------------------------ what does not record */

TEST(grad_predicates_and_no_grad_mode_do_not_record)
{
    tm_tensor *a = MK(950, L_CONTIG, D_ANY, 3);
    tm_tensor *b = MK(951, L_CONTIG, D_ANY, 3);
    REQUIRE(a && b);
    tm_tensor *r[6] = {tm_gt(a, b), tm_eq(a, b), tm_logical_and(a, b),
                       tm_isnan(a), tm_logical_not(a),
                       tm_binary_scalar(TM_OP_LT, a, 0)};
    for (int i = 0; i < 6; i++) {
        REQUIRE(r[i]);
        CHECK(!tm_requires_grad(r[i]));
        CHECK(tm_grad_fn_name(r[i]) == NULL);
        tm_free(r[i]);
    }
    bool prev = tm_no_grad_begin();
    tm_tensor *m = tm_mul(a, b);
    tm_no_grad_end(prev);
    REQUIRE(m);
    CHECK(!tm_requires_grad(m));
    tm_free(m);
    tm_free(a);
    tm_free(b);
}

TEST(grad_elementwise_node_names_follow_pytorch)
{
    tm_tensor *a = MK(960, L_CONTIG, D_POS, 2, 2);
    tm_tensor *b = MK(961, L_CONTIG, D_POS, 2, 2);
    tm_tensor *cond = bool_tensor((uint8_t[]){1, 0}, (int64_t[]){2}, 1);
    REQUIRE(a && b && cond);
    struct {
        tm_tensor *t;
        const char *name;
    } r[] = {
        {tm_mul(a, b), "MulBackward"},     {tm_add_scalar(a, 1), "AddBackward"},
        {tm_exp(a), "ExpBackward"},        {tm_clamp(a, 0, 1), "ClampBackward"},
        {tm_where(cond, a, b), "WhereBackward"},
        {tm_tril(a, 0), "TrilBackward"},   {tm_masked_fill(a, cond, 0),
                                            "MaskedFillBackward"},
        {tm_clamp_tensor(a, b, NULL), "ClampBackward"},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        REQUIRE(r[i].t);
        const char *got = tm_grad_fn_name(r[i].t);
        if (!got || strcmp(got, r[i].name))
            tt_fail(__FILE__, __LINE__, "grad_fn %s, expected %s",
                    got ? got : "(none)", r[i].name);
        tm_free(r[i].t);
    }
    tm_free(a);
    tm_free(b);
    tm_free(cond);
}
