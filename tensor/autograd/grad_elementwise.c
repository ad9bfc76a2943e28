/* grad_elementwise.c — backward functions of the elementwise ops (unary,
 * binary and their scalar forms, clamp, where, masked_fill, tril/triu) and
 * the recording helpers their front ends call.  A backward computes the
 * gradient with ordinary ops (grad mode is off) in the output's dtype,
 * then sums it over the input's broadcast dims and converts it to the
 * input's dtype.  Conventions (kinks, ties, 0^b) follow PyTorch's
 * derivatives.yaml. */
#include "grad_elementwise.h"

#include "autograd_impl.h"

#include <math.h>

/* Constants (M_PI and friends are not in C11). */
#define GX_SQRT1_2 0.70710678118654752440    /* 1/sqrt(2) */
#define GX_2_SQRTPI 1.12837916709551257390   /* 2/sqrt(pi) */
#define GX_LN2 0.69314718055994530942

/* ------------------------------------------------------------ temporaries */

/* The temporaries of one backward computation.  Every step is skipped once
 * one has failed, so the first error is the one reported. */
#define TM__GX_MAX 32
typedef struct {
    tm_tensor *t[TM__GX_MAX];
    int n;
    bool fail;
} tm__gx;

static tm_tensor *gx_keep(tm__gx *c, tm_tensor *t)
{
    if (t && c->n == TM__GX_MAX) {
        tm__errf(TM_ESTATE, "backward", "internal error: more than %d "
                 "temporaries", TM__GX_MAX);
        tm_free(t);
        t = NULL;
    }
    if (!t) {
        c->fail = true;
        return NULL;
    }
    c->t[c->n++] = t;
    return t;
}

static void gx_free(tm__gx *c)
{
    for (int i = 0; i < c->n; i++) tm_free(c->t[i]);
    c->n = 0;
}

static tm_tensor *gx_b(tm__gx *c, tm_binary_op op, const tm_tensor *a,
                       const tm_tensor *b)
{
    return c->fail ? NULL : gx_keep(c, tm_binary(op, a, b));
}

static tm_tensor *gx_s(tm__gx *c, tm_binary_op op, const tm_tensor *a,
                       double s)
{
    return c->fail ? NULL : gx_keep(c, tm_binary_scalar(op, a, s));
}

static tm_tensor *gx_rs(tm__gx *c, tm_binary_op op, double s,
                        const tm_tensor *a)
{
    return c->fail ? NULL : gx_keep(c, tm_binary_rscalar(op, s, a));
}

static tm_tensor *gx_u(tm__gx *c, tm_unary_op op, const tm_tensor *a)
{
    return c->fail ? NULL : gx_keep(c, tm_unary(op, a));
}

static tm_tensor *gx_where(tm__gx *c, const tm_tensor *cond,
                           const tm_tensor *a, const tm_tensor *b)
{
    return c->fail ? NULL : gx_keep(c, tm_where(cond, a, b));
}

/* A 0-d zero of like's dtype and device. */
static tm_tensor *gx_zero(tm__gx *c, const tm_tensor *like)
{
    return c->fail ? NULL
                   : gx_keep(c, tm__scalar_on("backward", 0, like->dtype,
                                              like->storage->device));
}

/* t in dtype dt (t itself when it has it already). */
static const tm_tensor *gx_cv(tm__gx *c, const tm_tensor *t, tm_dtype dt)
{
    if (c->fail) return NULL;
    return t->dtype == dt ? t : gx_keep(c, tm_to_dtype(t, dt));
}

/* cond ? g : 0 and cond ? 0 : g. */
static tm_tensor *gx_pass(tm__gx *c, const tm_tensor *cond,
                          const tm_tensor *g)
{
    return gx_where(c, cond, g, gx_zero(c, g));
}

static tm_tensor *gx_block(tm__gx *c, const tm_tensor *cond,
                           const tm_tensor *g)
{
    return gx_where(c, cond, gx_zero(c, g), g);
}

/* The gradient g (output shape) for input e: summed to e's shape and in
 * e's dtype.  A new reference (NULL after a failure). */
static tm_tensor *gx_fin(tm__gx *c, const tm_tensor *g, const tm__edge *e)
{
    if (c->fail || !g) return NULL;
    tm_tensor *s = tm__ag_sum_to(g, e->shape, e->ndim);
    if (s && s->dtype != e->dtype) {
        tm_tensor *t = tm_to_dtype(s, e->dtype);
        tm_free(s);
        s = t;
    }
    if (!s) c->fail = true;
    return s;
}

/* Zeros for input e (ops whose derivative is 0 almost everywhere). */
static tm_tensor *gx_zeros_for(const tm__edge *e)
{
    return tm_zeros(e->shape, e->ndim, e->dtype);
}

static tm_status gx_end(tm__gx *c)
{
    gx_free(c);
    return c->fail ? tm_last_status() : TM_OK;
}

/* ------------------------------------------------------------------ unary */

static const char *const tm__unary_node_names[TM_UNARY_OP_COUNT] = {
    [TM_OP_NEG] = "NegBackward", [TM_OP_ABS] = "AbsBackward",
    [TM_OP_SIGN] = "SignBackward", [TM_OP_EXP] = "ExpBackward",
    [TM_OP_LOG] = "LogBackward", [TM_OP_LOG1P] = "Log1PBackward",
    [TM_OP_EXPM1] = "Expm1Backward", [TM_OP_SQRT] = "SqrtBackward",
    [TM_OP_RSQRT] = "RsqrtBackward", [TM_OP_SIN] = "SinBackward",
    [TM_OP_COS] = "CosBackward", [TM_OP_TANH] = "TanhBackward",
    [TM_OP_SIGMOID] = "SigmoidBackward", [TM_OP_RELU] = "ReluBackward",
    [TM_OP_LEAKY_RELU] = "LeakyReluBackward", [TM_OP_GELU] = "GeluBackward",
    [TM_OP_GELU_TANH] = "GeluBackward", [TM_OP_SILU] = "SiluBackward",
    [TM_OP_SOFTPLUS] = "SoftplusBackward", [TM_OP_FLOOR] = "FloorBackward",
    [TM_OP_CEIL] = "CeilBackward", [TM_OP_ROUND] = "RoundBackward",
    [TM_OP_TRUNC] = "TruncBackward", [TM_OP_RECIPROCAL] = "ReciprocalBackward",
    [TM_OP_SQUARE] = "PowBackward", [TM_OP_ERF] = "ErfBackward",
    [TM_OP_LOG2] = "Log2Backward", [TM_OP_CLAMP] = "ClampBackward",
};

/* What a unary backward reads: the input x, the output y, or neither. */
enum { GX_NONE = 0, GX_X = 1, GX_Y = 2 };

static int tm__unary_needs(tm_unary_op op)
{
    switch (op) {
    case TM_OP_NEG: case TM_OP_SIGN: case TM_OP_FLOOR: case TM_OP_CEIL:
    case TM_OP_ROUND: case TM_OP_TRUNC:
        return GX_NONE;
    case TM_OP_EXP: case TM_OP_EXPM1: case TM_OP_SQRT: case TM_OP_RSQRT:
    case TM_OP_TANH: case TM_OP_SIGMOID: case TM_OP_RELU:
    case TM_OP_RECIPROCAL:
        return GX_Y;
    default:
        return GX_X;
    }
}

/* g * d(op)/dx for the ops with a closed-form derivative. */
static tm_tensor *tm__unary_grad(tm__gx *c, tm_unary_op op, const double *p,
                                 const tm_tensor *g, const tm_tensor *x,
                                 const tm_tensor *y)
{
    const double k_gelu = 0.044715, sqrt_2_pi = 0.79788456080286535588;
    tm_tensor *t, *u, *v;
    switch (op) {
    case TM_OP_NEG: return gx_u(c, TM_OP_NEG, g);
    case TM_OP_ABS: /* sign(0) = 0: PyTorch's subgradient */
        return gx_b(c, TM_OP_MUL, g, gx_u(c, TM_OP_SIGN, x));
    case TM_OP_EXP: return gx_b(c, TM_OP_MUL, g, y);
    case TM_OP_LOG: return gx_b(c, TM_OP_DIV, g, x);
    case TM_OP_LOG1P:
        return gx_b(c, TM_OP_DIV, g, gx_s(c, TM_OP_ADD, x, 1));
    case TM_OP_EXPM1:
        return gx_b(c, TM_OP_MUL, g, gx_s(c, TM_OP_ADD, y, 1));
    case TM_OP_SQRT:
        return gx_b(c, TM_OP_DIV, g, gx_s(c, TM_OP_MUL, y, 2));
    case TM_OP_RSQRT: /* -x^(-3/2) / 2 = -y^3 / 2 */
        t = gx_b(c, TM_OP_MUL, gx_u(c, TM_OP_SQUARE, y), y);
        return gx_b(c, TM_OP_MUL, g, gx_s(c, TM_OP_MUL, t, -0.5));
    case TM_OP_SIN: return gx_b(c, TM_OP_MUL, g, gx_u(c, TM_OP_COS, x));
    case TM_OP_COS:
        return gx_b(c, TM_OP_MUL, g, gx_u(c, TM_OP_NEG, gx_u(c, TM_OP_SIN, x)));
    case TM_OP_TANH:
        t = gx_rs(c, TM_OP_SUB, 1, gx_u(c, TM_OP_SQUARE, y));
        return gx_b(c, TM_OP_MUL, g, t);
    case TM_OP_SIGMOID:
        t = gx_b(c, TM_OP_MUL, y, gx_rs(c, TM_OP_SUB, 1, y));
        return gx_b(c, TM_OP_MUL, g, t);
    /* y = relu(x) is > 0 or 0 (or NaN), so y itself is the condition
     * (where reads cond as != 0): one pass instead of a compare and a
     * select.  A NaN input passes its gradient on. */
    case TM_OP_RELU: return gx_pass(c, y, g);
    case TM_OP_LEAKY_RELU:
        return gx_where(c, gx_s(c, TM_OP_GT, x, 0), g,
                        gx_s(c, TM_OP_MUL, g, p[0]));
    case TM_OP_GELU: /* Phi(x) + x phi(x) */
        t = gx_s(c, TM_OP_MUL, gx_s(c, TM_OP_ADD, gx_u(c, TM_OP_ERF,
                 gx_s(c, TM_OP_MUL, x, GX_SQRT1_2)), 1), 0.5);
        u = gx_u(c, TM_OP_EXP, gx_s(c, TM_OP_MUL, gx_u(c, TM_OP_SQUARE, x),
                                    -0.5));
        u = gx_b(c, TM_OP_MUL, x, gx_s(c, TM_OP_MUL, u, 0.5 * GX_2_SQRTPI *
                                       GX_SQRT1_2));
        return gx_b(c, TM_OP_MUL, g, gx_b(c, TM_OP_ADD, t, u));
    case TM_OP_GELU_TANH: {
        /* y = x (1 + tanh w) / 2, w = s (x + k x^3):
         * y' = (1 + tanh w) / 2 + x (1 - tanh^2 w) s (1 + 3 k x^2) / 2 */
        tm_tensor *x2 = gx_u(c, TM_OP_SQUARE, x);
        tm_tensor *w = gx_s(c, TM_OP_MUL, gx_b(c, TM_OP_MUL, x,
                            gx_s(c, TM_OP_ADD, gx_s(c, TM_OP_MUL, x2, k_gelu),
                                 1)), sqrt_2_pi);
        tm_tensor *th = gx_u(c, TM_OP_TANH, w);
        t = gx_s(c, TM_OP_MUL, gx_s(c, TM_OP_ADD, th, 1), 0.5);
        u = gx_rs(c, TM_OP_SUB, 1, gx_u(c, TM_OP_SQUARE, th));
        v = gx_s(c, TM_OP_MUL, gx_s(c, TM_OP_ADD, gx_s(c, TM_OP_MUL, x2,
                 3 * k_gelu), 1), 0.5 * sqrt_2_pi);
        u = gx_b(c, TM_OP_MUL, gx_b(c, TM_OP_MUL, x, u), v);
        return gx_b(c, TM_OP_MUL, g, gx_b(c, TM_OP_ADD, t, u));
    }
    case TM_OP_SILU: /* s (1 + x (1 - s)), s = sigmoid(x) */
        t = gx_u(c, TM_OP_SIGMOID, x);
        u = gx_b(c, TM_OP_MUL, x, gx_rs(c, TM_OP_SUB, 1, t));
        u = gx_b(c, TM_OP_MUL, t, gx_s(c, TM_OP_ADD, u, 1));
        return gx_b(c, TM_OP_MUL, g, u);
    case TM_OP_SOFTPLUS: /* 1 in the linear region, sigmoid(beta x) else */
        t = gx_s(c, TM_OP_MUL, x, p[0]);
        u = gx_b(c, TM_OP_MUL, g, gx_u(c, TM_OP_SIGMOID, t));
        return gx_where(c, gx_s(c, TM_OP_GT, t, p[1]), g, u);
    case TM_OP_RECIPROCAL: /* -1/x^2 = -y^2 */
        t = gx_u(c, TM_OP_NEG, gx_u(c, TM_OP_SQUARE, y));
        return gx_b(c, TM_OP_MUL, g, t);
    case TM_OP_SQUARE:
        return gx_b(c, TM_OP_MUL, g, gx_s(c, TM_OP_MUL, x, 2));
    case TM_OP_ERF: /* 2/sqrt(pi) exp(-x^2) */
        t = gx_u(c, TM_OP_EXP, gx_u(c, TM_OP_NEG, gx_u(c, TM_OP_SQUARE, x)));
        return gx_b(c, TM_OP_MUL, g, gx_s(c, TM_OP_MUL, t, GX_2_SQRTPI));
    case TM_OP_LOG2:
        return gx_b(c, TM_OP_DIV, g, gx_s(c, TM_OP_MUL, x, GX_LN2));
    case TM_OP_CLAMP: {
        /* 1 on [lo, hi] (bounds included, as PyTorch), 0 outside; a NaN
         * bound is no bound.  A NaN x gets 0. */
        tm_tensor *m = NULL;
        if (!isnan(p[0])) m = gx_s(c, TM_OP_GE, x, p[0]);
        if (!isnan(p[1])) {
            t = gx_s(c, TM_OP_LE, x, p[1]);
            m = m ? gx_b(c, TM_OP_LOGICAL_AND, m, t) : t;
        }
        if (!m) return c->fail ? NULL : (tm_tensor *)g;
        return gx_pass(c, m, g);
    }
    default:
        tm__errf(TM_ESTATE, "backward", "internal error: no derivative for "
                 "unary op %d", (int)op);
        c->fail = true;
        return NULL;
    }
}

static tm_status tm__unary_backward(tm__node *n, const tm_tensor *g,
                                    tm_tensor **grad_in)
{
    tm_unary_op op = (tm_unary_op)n->i[0];
    const tm__edge *e = &n->edges[0];
    if (op == TM_OP_SIGN || op == TM_OP_FLOOR || op == TM_OP_CEIL ||
        op == TM_OP_ROUND || op == TM_OP_TRUNC) {
        grad_in[0] = gx_zeros_for(e);
        return grad_in[0] ? TM_OK : tm_last_status();
    }
    tm__gx c = {0};
    tm_tensor *r = tm__unary_grad(&c, op, n->d, g, tm__ag_saved(n, 0),
                                  tm__ag_saved(n, 1));
    grad_in[0] = gx_fin(&c, r, e);
    return gx_end(&c);
}

tm_status tm__grad_unary(tm_unary_op op, const tm_tensor *t, tm_tensor *out,
                         double p0, double p1)
{
    const tm_tensor *ins[1] = {t};
    if (!tm_dtype_is_float(out->dtype) || !tm__ag_needed(1, ins) ||
        !tm__unary_node_names[op])
        return TM_OK;
    tm__node *n = tm__ag_node(tm__unary_node_names[op], tm__unary_backward,
                              1, ins);
    if (!n) return tm_last_status();
    n->i[0] = op;
    n->d[0] = p0;
    n->d[1] = p1;
    int needs = tm__unary_needs(op);
    if (((needs & GX_X) && tm__ag_save(n, 0, t)) ||
        ((needs & GX_Y) && tm__ag_save(n, 1, out))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ----------------------------------------------------------------- binary */

static const char *tm__binary_node_name(tm_binary_op op)
{
    switch (op) {
    case TM_OP_ADD: return "AddBackward";
    case TM_OP_SUB: return "SubBackward";
    case TM_OP_MUL: return "MulBackward";
    case TM_OP_DIV: return "DivBackward";
    case TM_OP_POW: return "PowBackward";
    case TM_OP_MAXIMUM: return "MaximumBackward";
    case TM_OP_MINIMUM: return "MinimumBackward";
    case TM_OP_FLOOR_DIVIDE: return "FloorDivideBackward";
    case TM_OP_REMAINDER: return "RemainderBackward";
    default: return NULL; /* predicates: bool outputs, never recorded */
    }
}

/* Gradients of a op b for a (ga) and b (gb), as needed; a, b are already
 * in g's dtype and y is the output. */
static void tm__binary_grads(tm__gx *c, tm_binary_op op, const tm_tensor *g,
                             const tm_tensor *a, const tm_tensor *b,
                             const tm_tensor *y, bool need_a, bool need_b,
                             tm_tensor **ga, tm_tensor **gb)
{
    tm_tensor *t;
    switch (op) {
    case TM_OP_ADD:
        *ga = *gb = (tm_tensor *)g;
        break;
    case TM_OP_SUB:
        *ga = (tm_tensor *)g;
        if (need_b) *gb = gx_u(c, TM_OP_NEG, g);
        break;
    case TM_OP_MUL:
        if (need_a) *ga = gx_b(c, TM_OP_MUL, g, b);
        if (need_b) *gb = gx_b(c, TM_OP_MUL, g, a);
        break;
    case TM_OP_DIV: /* d/db = -g a / b^2 = -(g / b) y */
        t = gx_b(c, TM_OP_DIV, g, b);
        *ga = t;
        if (need_b) *gb = gx_u(c, TM_OP_NEG, gx_b(c, TM_OP_MUL, t, y));
        break;
    case TM_OP_POW:
        if (need_a) { /* where(b == 0, 0, g b a^(b-1)) */
            t = gx_b(c, TM_OP_POW, a, gx_s(c, TM_OP_SUB, b, 1));
            t = gx_b(c, TM_OP_MUL, g, gx_b(c, TM_OP_MUL, b, t));
            *ga = gx_block(c, gx_s(c, TM_OP_EQ, b, 0), t);
        }
        if (need_b) { /* where(a == 0 & b >= 0, 0, g y log a) */
            t = gx_b(c, TM_OP_MUL, g, gx_b(c, TM_OP_MUL, y,
                                            gx_u(c, TM_OP_LOG, a)));
            tm_tensor *m = gx_b(c, TM_OP_LOGICAL_AND, gx_s(c, TM_OP_EQ, a, 0),
                                gx_s(c, TM_OP_GE, b, 0));
            *gb = gx_block(c, m, t);
        }
        break;
    case TM_OP_MAXIMUM:
    case TM_OP_MINIMUM: {
        /* Ties split the gradient in halves; the smaller (larger) operand
         * gets 0.  A NaN comparison passes g to both, as in PyTorch. */
        tm_tensor *tie = gx_b(c, TM_OP_EQ, a, b);
        tm_tensor *half = gx_s(c, TM_OP_MUL, g, 0.5);
        bool mx = op == TM_OP_MAXIMUM;
        if (need_a)
            *ga = gx_where(c, tie, half, gx_block(c, gx_b(c, mx ? TM_OP_LT
                           : TM_OP_GT, a, b), g));
        if (need_b)
            *gb = gx_where(c, tie, half, gx_block(c, gx_b(c, mx ? TM_OP_GT
                           : TM_OP_LT, a, b), g));
        break;
    }
    case TM_OP_REMAINDER: /* a - floor(a / b) b */
        *ga = (tm_tensor *)g;
        if (need_b)
            *gb = gx_u(c, TM_OP_NEG, gx_b(c, TM_OP_MUL, g,
                                          gx_b(c, TM_OP_FLOOR_DIVIDE, a, b)));
        break;
    default:
        tm__errf(TM_ESTATE, "backward", "internal error: no derivative for "
                 "binary op %d", (int)op);
        c->fail = true;
        break;
    }
}

static tm_status tm__binary_backward(tm__node *n, const tm_tensor *g,
                                     tm_tensor **grad_in)
{
    tm_binary_op op = (tm_binary_op)n->i[0];
    bool need[2] = {n->edges[0].needed, n->edges[1].needed};
    if (op == TM_OP_FLOOR_DIVIDE) {
        for (int i = 0; i < 2; i++)
            if (need[i] && !(grad_in[i] = gx_zeros_for(&n->edges[i])))
                return tm_last_status();
        return TM_OK;
    }
    tm__gx c = {0};
    const tm_tensor *a = tm__ag_saved(n, 0), *b = tm__ag_saved(n, 1);
    if (a) a = gx_cv(&c, a, g->dtype);
    if (b) b = gx_cv(&c, b, g->dtype);
    tm_tensor *gr[2] = {NULL, NULL};
    tm__binary_grads(&c, op, g, a, b, tm__ag_saved(n, 2), need[0], need[1],
                     &gr[0], &gr[1]);
    for (int i = 0; i < 2; i++)
        if (need[i]) grad_in[i] = gx_fin(&c, gr[i], &n->edges[i]);
    return gx_end(&c);
}

tm_status tm__grad_binary(tm_binary_op op, const tm_tensor *a,
                          const tm_tensor *b, tm_tensor *out)
{
    const tm_tensor *ins[2] = {a, b};
    const char *name = tm__binary_node_name(op);
    if (!name || !tm_dtype_is_float(out->dtype) || !tm__ag_needed(2, ins))
        return TM_OK;
    tm__node *n = tm__ag_node(name, tm__binary_backward, 2, ins);
    if (!n) return tm_last_status();
    n->i[0] = op;
    bool sa = op == TM_OP_MUL || op == TM_OP_POW || op == TM_OP_MAXIMUM ||
              op == TM_OP_MINIMUM || op == TM_OP_REMAINDER;
    bool sb = sa || op == TM_OP_DIV;
    bool sy = op == TM_OP_DIV || op == TM_OP_POW;
    if ((sa && tm__ag_save(n, 0, a)) || (sb && tm__ag_save(n, 1, b)) ||
        (sy && tm__ag_save(n, 2, out))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ------------------------------------------------- binary with a scalar */

/* Gradient of t op s (rev: s op t) for t; x is t, y the output. */
static tm_tensor *tm__scalar_grad(tm__gx *c, tm_binary_op op, double s,
                                  bool rev, const tm_tensor *g,
                                  const tm_tensor *x, const tm_tensor *y)
{
    tm_tensor *t;
    switch (op) {
    case TM_OP_ADD: return (tm_tensor *)g;
    case TM_OP_SUB: return rev ? gx_u(c, TM_OP_NEG, g) : (tm_tensor *)g;
    case TM_OP_MUL: return gx_s(c, TM_OP_MUL, g, s);
    case TM_OP_DIV: /* s / x: -g y / x */
        if (!rev) return gx_s(c, TM_OP_DIV, g, s);
        t = gx_b(c, TM_OP_DIV, gx_b(c, TM_OP_MUL, g, y), x);
        return gx_u(c, TM_OP_NEG, t);
    case TM_OP_POW:
        if (!rev) { /* x^s: s x^(s-1), and 0 for s == 0 */
            if (s == 0) return c->fail ? NULL : gx_keep(c, tm_zeros_like(g));
            t = gx_s(c, TM_OP_POW, x, s - 1);
            return gx_b(c, TM_OP_MUL, g, gx_s(c, TM_OP_MUL, t, s));
        }
        /* s^x: y log s; with s == 0, 0 where x >= 0 */
        t = gx_b(c, TM_OP_MUL, g, gx_s(c, TM_OP_MUL, y, log(s)));
        return s == 0 ? gx_block(c, gx_s(c, TM_OP_GE, x, 0), t) : t;
    case TM_OP_MAXIMUM:
    case TM_OP_MINIMUM:
        return gx_where(c, gx_s(c, TM_OP_EQ, x, s), gx_s(c, TM_OP_MUL, g, 0.5),
                        gx_block(c, gx_s(c, op == TM_OP_MAXIMUM ? TM_OP_LT
                                         : TM_OP_GT, x, s), g));
    case TM_OP_REMAINDER:
        if (!rev) return (tm_tensor *)g;
        /* s - floor(s / x) x */
        t = gx_rs(c, TM_OP_FLOOR_DIVIDE, s, x);
        return gx_u(c, TM_OP_NEG, gx_b(c, TM_OP_MUL, g, t));
    default:
        tm__errf(TM_ESTATE, "backward", "internal error: no derivative for "
                 "binary op %d", (int)op);
        c->fail = true;
        return NULL;
    }
}

static tm_status tm__scalar_backward(tm__node *n, const tm_tensor *g,
                                     tm_tensor **grad_in)
{
    tm_binary_op op = (tm_binary_op)n->i[0];
    if (op == TM_OP_FLOOR_DIVIDE) {
        grad_in[0] = gx_zeros_for(&n->edges[0]);
        return grad_in[0] ? TM_OK : tm_last_status();
    }
    tm__gx c = {0};
    const tm_tensor *x = tm__ag_saved(n, 0);
    if (x) x = gx_cv(&c, x, g->dtype);
    tm_tensor *r = tm__scalar_grad(&c, op, n->d[0], n->i[1] != 0, g, x,
                                   tm__ag_saved(n, 1));
    grad_in[0] = gx_fin(&c, r, &n->edges[0]);
    return gx_end(&c);
}

tm_status tm__grad_binary_scalar(tm_binary_op op, const tm_tensor *t,
                                 double s, bool rev, tm_tensor *out)
{
    const tm_tensor *ins[1] = {t};
    const char *name = tm__binary_node_name(op);
    if (!name || !tm_dtype_is_float(out->dtype) || !tm__ag_needed(1, ins))
        return TM_OK;
    tm__node *n = tm__ag_node(name, tm__scalar_backward, 1, ins);
    if (!n) return tm_last_status();
    n->i[0] = op;
    n->i[1] = rev;
    n->d[0] = s;
    bool sx = op == TM_OP_POW || op == TM_OP_MAXIMUM ||
              op == TM_OP_MINIMUM || (rev && (op == TM_OP_DIV ||
                                              op == TM_OP_REMAINDER));
    bool sy = rev && (op == TM_OP_DIV || op == TM_OP_POW);
    if ((sx && tm__ag_save(n, 0, t)) || (sy && tm__ag_save(n, 1, out))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ------------------------------------------------------------ clamp_tensor */

/* PyTorch's clamp_backward and clamp_backward_min_max: t gets g where
 * lo <= t <= hi; lo gets g where t < lo (and lo < hi); hi gets g where
 * t > hi or hi < lo (then the result is hi everywhere). */
static tm_status tm__clamp_tensor_backward(tm__node *n, const tm_tensor *g,
                                           tm_tensor **grad_in)
{
    tm__gx c = {0};
    const tm_tensor *t = gx_cv(&c, tm__ag_saved(n, 0), g->dtype);
    const tm_tensor *lo = tm__ag_saved(n, 1), *hi = tm__ag_saved(n, 2);
    if (lo) lo = gx_cv(&c, lo, g->dtype);
    if (hi) hi = gx_cv(&c, hi, g->dtype);
    if (n->edges[0].needed) {
        tm_tensor *m = NULL;
        if (lo) m = gx_b(&c, TM_OP_GE, t, lo);
        if (hi) {
            tm_tensor *u = gx_b(&c, TM_OP_LE, t, hi);
            m = m ? gx_b(&c, TM_OP_LOGICAL_AND, m, u) : u;
        }
        grad_in[0] = gx_fin(&c, gx_pass(&c, m, g), &n->edges[0]);
    }
    if (lo && n->edges[1].needed) {
        tm_tensor *m = gx_b(&c, TM_OP_LT, t, lo);
        if (hi)
            m = gx_b(&c, TM_OP_LOGICAL_AND, m, gx_b(&c, TM_OP_LT, lo, hi));
        grad_in[1] = gx_fin(&c, gx_pass(&c, m, g), &n->edges[1]);
    }
    if (hi && n->edges[2].needed) {
        tm_tensor *m = gx_b(&c, TM_OP_GT, t, hi);
        if (lo)
            m = gx_b(&c, TM_OP_LOGICAL_OR, m, gx_b(&c, TM_OP_LT, hi, lo));
        grad_in[2] = gx_fin(&c, gx_pass(&c, m, g), &n->edges[2]);
    }
    return gx_end(&c);
}

tm_status tm__grad_clamp_tensor(const tm_tensor *t, const tm_tensor *lo,
                                const tm_tensor *hi, tm_tensor *out)
{
    const tm_tensor *ins[3] = {t, lo, hi};
    if (!tm_dtype_is_float(out->dtype) || !tm__ag_needed(3, ins))
        return TM_OK;
    tm__node *n = tm__ag_node("ClampBackward", tm__clamp_tensor_backward, 3,
                              ins);
    if (!n) return tm_last_status();
    if (tm__ag_save(n, 0, t) || (lo && tm__ag_save(n, 1, lo)) ||
        (hi && tm__ag_save(n, 2, hi))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ------------------------------------------------- where, masked_fill, tri */

static tm_status tm__where_backward(tm__node *n, const tm_tensor *g,
                                    tm_tensor **grad_in)
{
    tm__gx c = {0};
    const tm_tensor *cond = tm__ag_saved(n, 0);
    if (n->edges[1].needed)
        grad_in[1] = gx_fin(&c, gx_pass(&c, cond, g), &n->edges[1]);
    if (n->edges[2].needed)
        grad_in[2] = gx_fin(&c, gx_block(&c, cond, g), &n->edges[2]);
    return gx_end(&c);
}

tm_status tm__grad_where(const tm_tensor *cond, const tm_tensor *a,
                         const tm_tensor *b, tm_tensor *out)
{
    /* cond gets no edge: it selects, it is not differentiated. */
    const tm_tensor *ins[3] = {NULL, a, b};
    if (!tm_dtype_is_float(out->dtype) || !tm__ag_needed(3, ins))
        return TM_OK;
    tm__node *n = tm__ag_node("WhereBackward", tm__where_backward, 3, ins);
    if (!n) return tm_last_status();
    if (tm__ag_save(n, 0, cond)) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

static tm_status tm__masked_fill_backward(tm__node *n, const tm_tensor *g,
                                          tm_tensor **grad_in)
{
    tm__gx c = {0};
    grad_in[0] = gx_fin(&c, gx_block(&c, tm__ag_saved(n, 0), g),
                        &n->edges[0]);
    return gx_end(&c);
}

tm_status tm__grad_masked_fill(const tm_tensor *t, const tm_tensor *mask,
                               tm_tensor *out)
{
    const tm_tensor *ins[1] = {t};
    if (!tm_dtype_is_float(out->dtype) || !tm__ag_needed(1, ins))
        return TM_OK;
    tm__node *n = tm__ag_node("MaskedFillBackward", tm__masked_fill_backward,
                              1, ins);
    if (!n) return tm_last_status();
    if (tm__ag_save(n, 0, mask)) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

static tm_status tm__tri_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **grad_in)
{
    tm_tensor *r = n->i[1] ? tm_triu(g, n->i[0]) : tm_tril(g, n->i[0]);
    if (!r) return tm_last_status();
    tm__gx c = {0};
    grad_in[0] = gx_fin(&c, r, &n->edges[0]);
    tm_free(r);
    return gx_end(&c);
}

tm_status tm__grad_tri(const tm_tensor *t, int64_t k, bool upper,
                       tm_tensor *out)
{
    const tm_tensor *ins[1] = {t};
    if (!tm_dtype_is_float(out->dtype) || !tm__ag_needed(1, ins))
        return TM_OK;
    tm__node *n = tm__ag_node(upper ? "TriuBackward" : "TrilBackward",
                              tm__tri_backward, 1, ins);
    if (!n) return tm_last_status();
    n->i[0] = k;
    n->i[1] = upper;
    return tm__ag_attach(n, out);
}
