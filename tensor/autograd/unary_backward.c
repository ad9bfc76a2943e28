/* unary_backward.c — the gradients of the unary ops of ops/unary.c (one
 * case per differentiable row of TM_UNARY_OPS) and their recording hook.
 * A gradient is computed with ordinary ops (grad mode is off) in the
 * output's dtype, then converted to the input's.  Conventions (kinks,
 * ties) follow PyTorch's derivatives.yaml. */
#include "backward.h"
#include "../core/grad_hooks.h"
#include "../ops/op_table.h"

#include <math.h>

#define SQRT1_2 0.70710678118654752440  /* 1/sqrt(2) */
#define TWO_SQRTPI 1.12837916709551257390 /* 2/sqrt(pi) */
#define LN2 0.69314718055994530942
#define LN10 2.30258509299404568402

/* The op and its parameters (p0, p1 as passed to the backend). */
typedef struct { tm_unary_op op; double p0, p1; } unary_args;

/* What an op's gradient reads: its input x, its output y, or neither. */
enum { READS_NONE = 0, READS_X = 1, READS_Y = 2 };

static int unary_reads(tm_unary_op op)
{
    switch (op) {
    case TM_OP_NEG: case TM_OP_SIGN: case TM_OP_FLOOR: case TM_OP_CEIL:
    case TM_OP_ROUND: case TM_OP_TRUNC:
        return READS_NONE;
    case TM_OP_EXP: case TM_OP_EXP2: case TM_OP_EXPM1: case TM_OP_SQRT:
    case TM_OP_RSQRT:
    case TM_OP_TANH: case TM_OP_SIGMOID: case TM_OP_RELU:
    case TM_OP_RECIPROCAL: case TM_OP_TAN:
        return READS_Y;
    default:
        return READS_X;
    }
}

/* g * d(op)/dx, from the input x and the output y. */
static tm_tensor *unary_grad(tm__scratch *s, const unary_args *p,
                             const tm_tensor *g, const tm_tensor *x,
                             const tm_tensor *y)
{
    const double k_gelu = 0.044715, sqrt_2_pi = 0.79788456080286535588;
    tm_tensor *t, *u, *v, *x2, *w;
    switch (p->op) {
    case TM_OP_NEG: return tm__sc_unary(s, TM_OP_NEG, g);
    case TM_OP_ABS: /* sign(0) = 0: PyTorch's subgradient */
        t = tm__sc_unary(s, TM_OP_SIGN, x);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_EXP: return tm__sc_binary(s, TM_OP_MUL, g, y);
    case TM_OP_EXP2: /* 2^x ln 2 */
        t = tm__sc_scalar(s, TM_OP_MUL, y, LN2);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_LOG: return tm__sc_binary(s, TM_OP_DIV, g, x);
    case TM_OP_LOG1P:
        t = tm__sc_scalar(s, TM_OP_ADD, x, 1);
        return tm__sc_binary(s, TM_OP_DIV, g, t);
    case TM_OP_EXPM1:
        t = tm__sc_scalar(s, TM_OP_ADD, y, 1);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_SQRT:
        t = tm__sc_scalar(s, TM_OP_MUL, y, 2);
        return tm__sc_binary(s, TM_OP_DIV, g, t);
    case TM_OP_RSQRT: /* -x^(-3/2) / 2 = -y^3 / 2 */
        t = tm__sc_binary(s, TM_OP_MUL, tm__sc_unary(s, TM_OP_SQUARE, y), y);
        t = tm__sc_scalar(s, TM_OP_MUL, t, -0.5);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_SIN:
        t = tm__sc_unary(s, TM_OP_COS, x);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_COS:
        t = tm__sc_unary(s, TM_OP_NEG, tm__sc_unary(s, TM_OP_SIN, x));
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_TANH:
        t = tm__sc_rscalar(s, TM_OP_SUB, 1, tm__sc_unary(s, TM_OP_SQUARE, y));
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_SIGMOID:
        t = tm__sc_binary(s, TM_OP_MUL, y, tm__sc_rscalar(s, TM_OP_SUB, 1, y));
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    /* y = relu(x) is > 0 or 0 (or NaN), so y itself is the condition
     * (where reads cond as != 0): one pass instead of a compare and a
     * select.  A NaN input passes its gradient on. */
    case TM_OP_RELU: return tm__sc_pass(s, y, g);
    case TM_OP_LEAKY_RELU:
        t = tm__sc_scalar(s, TM_OP_GT, x, 0);
        return tm__sc_where(s, t, g, tm__sc_scalar(s, TM_OP_MUL, g, p->p0));
    case TM_OP_GELU: /* Phi(x) + x phi(x) */
        t = tm__sc_unary(s, TM_OP_ERF, tm__sc_scalar(s, TM_OP_MUL, x, SQRT1_2));
        t = tm__sc_scalar(s, TM_OP_MUL, tm__sc_scalar(s, TM_OP_ADD, t, 1), 0.5);
        u = tm__sc_scalar(s, TM_OP_MUL, tm__sc_unary(s, TM_OP_SQUARE, x), -0.5);
        u = tm__sc_scalar(s, TM_OP_MUL, tm__sc_unary(s, TM_OP_EXP, u),
                          0.5 * TWO_SQRTPI * SQRT1_2);
        u = tm__sc_binary(s, TM_OP_MUL, x, u);
        return tm__sc_binary(s, TM_OP_MUL, g, tm__sc_binary(s, TM_OP_ADD, t, u));
    case TM_OP_GELU_TANH:
        /* y = x (1 + tanh w) / 2, w = s (x + k x^3):
         * y' = (1 + tanh w) / 2 + x (1 - tanh^2 w) s (1 + 3 k x^2) / 2 */
        x2 = tm__sc_unary(s, TM_OP_SQUARE, x);
        w = tm__sc_scalar(s, TM_OP_ADD, tm__sc_scalar(s, TM_OP_MUL, x2, k_gelu),
                          1);
        w = tm__sc_scalar(s, TM_OP_MUL, tm__sc_binary(s, TM_OP_MUL, x, w),
                          sqrt_2_pi);
        w = tm__sc_unary(s, TM_OP_TANH, w);
        t = tm__sc_scalar(s, TM_OP_MUL, tm__sc_scalar(s, TM_OP_ADD, w, 1), 0.5);
        u = tm__sc_rscalar(s, TM_OP_SUB, 1, tm__sc_unary(s, TM_OP_SQUARE, w));
        v = tm__sc_scalar(s, TM_OP_MUL, x2, 3 * k_gelu);
        v = tm__sc_scalar(s, TM_OP_MUL, tm__sc_scalar(s, TM_OP_ADD, v, 1),
                          0.5 * sqrt_2_pi);
        u = tm__sc_binary(s, TM_OP_MUL, tm__sc_binary(s, TM_OP_MUL, x, u), v);
        return tm__sc_binary(s, TM_OP_MUL, g, tm__sc_binary(s, TM_OP_ADD, t, u));
    case TM_OP_SILU: /* s (1 + x (1 - s)), s = sigmoid(x) */
        t = tm__sc_unary(s, TM_OP_SIGMOID, x);
        u = tm__sc_binary(s, TM_OP_MUL, x, tm__sc_rscalar(s, TM_OP_SUB, 1, t));
        u = tm__sc_binary(s, TM_OP_MUL, t, tm__sc_scalar(s, TM_OP_ADD, u, 1));
        return tm__sc_binary(s, TM_OP_MUL, g, u);
    case TM_OP_SOFTPLUS: /* 1 in the linear region, sigmoid(beta x) else */
        t = tm__sc_scalar(s, TM_OP_MUL, x, p->p0);
        u = tm__sc_binary(s, TM_OP_MUL, g, tm__sc_unary(s, TM_OP_SIGMOID, t));
        return tm__sc_where(s, tm__sc_scalar(s, TM_OP_GT, t, p->p1), g, u);
    case TM_OP_RECIPROCAL: /* -1/x^2 = -y^2 */
        t = tm__sc_unary(s, TM_OP_NEG, tm__sc_unary(s, TM_OP_SQUARE, y));
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_SQUARE:
        t = tm__sc_scalar(s, TM_OP_MUL, x, 2);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_ERF: /* 2/sqrt(pi) exp(-x^2) */
        t = tm__sc_unary(s, TM_OP_NEG, tm__sc_unary(s, TM_OP_SQUARE, x));
        t = tm__sc_scalar(s, TM_OP_MUL, tm__sc_unary(s, TM_OP_EXP, t),
                          TWO_SQRTPI);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_LOG2:
        t = tm__sc_scalar(s, TM_OP_MUL, x, LN2);
        return tm__sc_binary(s, TM_OP_DIV, g, t);
    case TM_OP_TAN: /* 1 + tan^2 */
        t = tm__sc_scalar(s, TM_OP_ADD, tm__sc_unary(s, TM_OP_SQUARE, y), 1);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_ASIN: /* 1 / sqrt(1 - x^2) */
    case TM_OP_ACOS: /* -1 / sqrt(1 - x^2) */
        t = tm__sc_rscalar(s, TM_OP_SUB, 1, tm__sc_unary(s, TM_OP_SQUARE, x));
        t = tm__sc_unary(s, TM_OP_RSQRT, t);
        if (p->op == TM_OP_ACOS) t = tm__sc_unary(s, TM_OP_NEG, t);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_ATAN: /* 1 / (1 + x^2) */
        t = tm__sc_scalar(s, TM_OP_ADD, tm__sc_unary(s, TM_OP_SQUARE, x), 1);
        return tm__sc_binary(s, TM_OP_DIV, g, t);
    case TM_OP_SINH:
        t = tm__sc_unary(s, TM_OP_COSH, x);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_COSH:
        t = tm__sc_unary(s, TM_OP_SINH, x);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_ASINH: /* 1 / sqrt(x^2 + 1) */
    case TM_OP_ACOSH: /* 1 / sqrt(x^2 - 1) */
        t = tm__sc_scalar(s, TM_OP_ADD, tm__sc_unary(s, TM_OP_SQUARE, x),
                          p->op == TM_OP_ASINH ? 1 : -1);
        t = tm__sc_unary(s, TM_OP_RSQRT, t);
        return tm__sc_binary(s, TM_OP_MUL, g, t);
    case TM_OP_ATANH: /* 1 / (1 - x^2) */
        t = tm__sc_rscalar(s, TM_OP_SUB, 1, tm__sc_unary(s, TM_OP_SQUARE, x));
        return tm__sc_binary(s, TM_OP_DIV, g, t);
    case TM_OP_LOG10:
        t = tm__sc_scalar(s, TM_OP_MUL, x, LN10);
        return tm__sc_binary(s, TM_OP_DIV, g, t);
    case TM_OP_CLAMP: {
        /* 1 on [lo, hi] (bounds included, as PyTorch), 0 outside; a NaN
         * bound is no bound.  A NaN x gets 0. */
        tm_tensor *m = NULL;
        if (!isnan(p->p0)) m = tm__sc_scalar(s, TM_OP_GE, x, p->p0);
        if (!isnan(p->p1)) {
            t = tm__sc_scalar(s, TM_OP_LE, x, p->p1);
            m = m ? tm__sc_binary(s, TM_OP_LOGICAL_AND, m, t) : t;
        }
        if (!m) return s->st ? NULL : (tm_tensor *)g;
        return tm__sc_pass(s, m, g);
    }
    default:
        tm__errf(TM_ESTATE, "backward", "internal error: no derivative for "
                 "unary op %s", tm__unary_ops[p->op].name);
        return tm__sc_keep(s, NULL);
    }
}

static tm_status unary_backward(tm__node *n, const tm_tensor *g,
                                tm_tensor **grad_in)
{
    const unary_args *p = TM__AG_ARGS(n, unary_args);
    const tm__edge *e = &n->edges[0];
    /* piecewise constant: the gradient is 0 almost everywhere */
    if (p->op == TM_OP_SIGN || p->op == TM_OP_FLOOR || p->op == TM_OP_CEIL ||
        p->op == TM_OP_ROUND || p->op == TM_OP_TRUNC) {
        grad_in[0] = tm__grad_zeros(e->shape, e->ndim, e->dtype, g);
        return grad_in[0] ? TM_OK : tm_last_status();
    }
    tm__scratch s = {0};
    tm_tensor *r = unary_grad(&s, p, g, tm__ag_saved(n, 0),
                              tm__ag_saved(n, 1));
    grad_in[0] = tm__sc_grad_for(&s, r, e);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_unary(tm_tensor *out, tm_unary_op op, const tm_tensor *t,
                          double p0, double p1)
{
    const char *name = tm__unary_ops[op].grad_fn;
    if (!out || !name) return out;
    int reads = unary_reads(op);
    unary_args p = {op, p0, p1};
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = name, .backward = unary_backward, .nin = 1,
                    .in = ins,
                    .save = {reads & READS_X ? t : NULL,
                             reads & READS_Y ? out : NULL},
                    .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
