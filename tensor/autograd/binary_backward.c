/* binary_backward.c — the gradients of the binary ops of ops/binary.c
 * (tensor op tensor, with a scalar on either side, and clamp with tensor
 * bounds) and their recording hooks: one case per differentiable row of
 * TM_BINARY_OPS.  Gradients are computed with ordinary ops (grad mode is
 * off) in the output's dtype, then summed over each input's broadcast dims
 * and converted to its dtype.  Conventions (ties, 0^b) follow PyTorch's
 * derivatives.yaml. */
#include "backward.h"
#include "../core/grad_hooks.h"
#include "../ops/op_table.h"

#include <math.h>

/* ------------------------------------------------------ tensor op tensor */

typedef struct { tm_binary_op op; } binary_args;

/* Gradients of a op b for a (ga) and b (gb), as needed; a, b are already
 * in g's dtype and y is the output. */
static void binary_grads(tm__scratch *s, tm_binary_op op, const tm_tensor *g,
                         const tm_tensor *a, const tm_tensor *b,
                         const tm_tensor *y, bool need_a, bool need_b,
                         tm_tensor **ga, tm_tensor **gb)
{
    tm_tensor *t, *m;
    bool mx = op == TM_OP_MAXIMUM;
    switch (op) {
    case TM_OP_ADD:
        *ga = *gb = (tm_tensor *)g;
        break;
    case TM_OP_SUB:
        *ga = (tm_tensor *)g;
        if (need_b) *gb = tm__sc_unary(s, TM_OP_NEG, g);
        break;
    case TM_OP_MUL:
        if (need_a) *ga = tm__sc_binary(s, TM_OP_MUL, g, b);
        if (need_b) *gb = tm__sc_binary(s, TM_OP_MUL, g, a);
        break;
    case TM_OP_DIV: /* d/db = -g a / b^2 = -(g / b) y */
        t = tm__sc_binary(s, TM_OP_DIV, g, b);
        *ga = t;
        if (need_b)
            *gb = tm__sc_unary(s, TM_OP_NEG, tm__sc_binary(s, TM_OP_MUL, t, y));
        break;
    case TM_OP_POW:
        if (need_a) { /* where(b == 0, 0, g b a^(b-1)) */
            t = tm__sc_binary(s, TM_OP_POW, a,
                              tm__sc_scalar(s, TM_OP_SUB, b, 1));
            t = tm__sc_binary(s, TM_OP_MUL, g,
                              tm__sc_binary(s, TM_OP_MUL, b, t));
            *ga = tm__sc_block(s, tm__sc_scalar(s, TM_OP_EQ, b, 0), t);
        }
        if (need_b) { /* where(a == 0 & b >= 0, 0, g y log a) */
            t = tm__sc_binary(s, TM_OP_MUL, y, tm__sc_unary(s, TM_OP_LOG, a));
            t = tm__sc_binary(s, TM_OP_MUL, g, t);
            m = tm__sc_binary(s, TM_OP_LOGICAL_AND,
                              tm__sc_scalar(s, TM_OP_EQ, a, 0),
                              tm__sc_scalar(s, TM_OP_GE, b, 0));
            *gb = tm__sc_block(s, m, t);
        }
        break;
    case TM_OP_MAXIMUM:
    case TM_OP_MINIMUM: {
        /* Ties split the gradient in halves; the smaller (larger) operand
         * gets 0.  A NaN comparison passes g to both, as in PyTorch. */
        tm_tensor *tie = tm__sc_binary(s, TM_OP_EQ, a, b);
        tm_tensor *half = tm__sc_scalar(s, TM_OP_MUL, g, 0.5);
        if (need_a) {
            m = tm__sc_binary(s, mx ? TM_OP_LT : TM_OP_GT, a, b);
            *ga = tm__sc_where(s, tie, half, tm__sc_block(s, m, g));
        }
        if (need_b) {
            m = tm__sc_binary(s, mx ? TM_OP_GT : TM_OP_LT, a, b);
            *gb = tm__sc_where(s, tie, half, tm__sc_block(s, m, g));
        }
        break;
    }
    case TM_OP_REMAINDER: /* a - floor(a / b) b */
        *ga = (tm_tensor *)g;
        if (need_b) {
            t = tm__sc_binary(s, TM_OP_FLOOR_DIVIDE, a, b);
            *gb = tm__sc_unary(s, TM_OP_NEG, tm__sc_binary(s, TM_OP_MUL, g, t));
        }
        break;
    case TM_OP_FMOD: /* a - trunc(a / b) b */
        *ga = (tm_tensor *)g;
        if (need_b) {
            t = tm__sc_unary(s, TM_OP_TRUNC, tm__sc_binary(s, TM_OP_DIV, a, b));
            *gb = tm__sc_unary(s, TM_OP_NEG, tm__sc_binary(s, TM_OP_MUL, g, t));
        }
        break;
    case TM_OP_ATAN2: /* g b / (a^2 + b^2) and -g a / (a^2 + b^2) */
        t = tm__sc_binary(s, TM_OP_ADD, tm__sc_binary(s, TM_OP_MUL, a, a),
                          tm__sc_binary(s, TM_OP_MUL, b, b));
        t = tm__sc_binary(s, TM_OP_DIV, g, t);
        if (need_a) *ga = tm__sc_binary(s, TM_OP_MUL, t, b);
        if (need_b)
            *gb = tm__sc_unary(s, TM_OP_NEG, tm__sc_binary(s, TM_OP_MUL, t, a));
        break;
    case TM_OP_LOGADDEXP: /* g / (1 + e^(b - a)), PyTorch's form */
    case TM_OP_LOGADDEXP2: {
        tm_unary_op ex = op == TM_OP_LOGADDEXP ? TM_OP_EXP : TM_OP_EXP2;
        if (need_a) {
            t = tm__sc_unary(s, ex, tm__sc_binary(s, TM_OP_SUB, b, a));
            *ga = tm__sc_binary(s, TM_OP_DIV, g,
                                tm__sc_scalar(s, TM_OP_ADD, t, 1));
        }
        if (need_b) {
            t = tm__sc_unary(s, ex, tm__sc_binary(s, TM_OP_SUB, a, b));
            *gb = tm__sc_binary(s, TM_OP_DIV, g,
                                tm__sc_scalar(s, TM_OP_ADD, t, 1));
        }
        break;
    }
    case TM_OP_COPYSIGN: /* g y / a (0 where a == 0); b gets 0 */
        if (need_a)
            *ga = tm__sc_block(s, tm__sc_scalar(s, TM_OP_EQ, a, 0),
                               tm__sc_binary(s, TM_OP_MUL, g,
                                             tm__sc_binary(s, TM_OP_DIV, y,
                                                           a)));
        if (need_b) *gb = tm__sc_scalar(s, TM_OP_MUL, g, 0);
        break;
    case TM_OP_HYPOT: /* g a / y and g b / y */
        t = tm__sc_binary(s, TM_OP_DIV, g, y);
        if (need_a) *ga = tm__sc_binary(s, TM_OP_MUL, t, a);
        if (need_b) *gb = tm__sc_binary(s, TM_OP_MUL, t, b);
        break;
    default:
        tm__errf(TM_ESTATE, "backward", "internal error: no derivative for "
                 "binary op %s", tm__binary_ops[op].name);
        tm__sc_keep(s, NULL);
        break;
    }
}

static tm_status binary_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **grad_in)
{
    tm_binary_op op = TM__AG_ARGS(n, binary_args)->op;
    bool need[2] = {n->edges[0].needed, n->edges[1].needed};
    if (op == TM_OP_FLOOR_DIVIDE) { /* piecewise constant */
        for (int i = 0; i < 2; i++) {
            const tm__edge *e = &n->edges[i];
            if (need[i] && !(grad_in[i] = tm__grad_zeros(e->shape, e->ndim,
                                                         e->dtype, g)))
                return tm_last_status();
        }
        return TM_OK;
    }
    tm__scratch s = {0};
    const tm_tensor *a = tm__ag_saved(n, 0), *b = tm__ag_saved(n, 1);
    if (a) a = tm__sc_cast(&s, a, g->dtype);
    if (b) b = tm__sc_cast(&s, b, g->dtype);
    tm_tensor *gr[2] = {NULL, NULL};
    binary_grads(&s, op, g, a, b, tm__ag_saved(n, 2), need[0], need[1],
                 &gr[0], &gr[1]);
    for (int i = 0; i < 2; i++)
        if (need[i]) grad_in[i] = tm__sc_grad_for(&s, gr[i], &n->edges[i]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_binary(tm_tensor *out, tm_binary_op op,
                           const tm_tensor *a, const tm_tensor *b)
{
    const char *name = tm__binary_ops[op].grad_fn;
    if (!out || !name) return out;
    /* what the gradients read: a, b and the output y */
    bool sa = op == TM_OP_MUL || op == TM_OP_POW || op == TM_OP_MAXIMUM ||
              op == TM_OP_MINIMUM || op == TM_OP_REMAINDER ||
              op == TM_OP_FMOD || op == TM_OP_ATAN2 ||
              op == TM_OP_LOGADDEXP || op == TM_OP_LOGADDEXP2 ||
              op == TM_OP_HYPOT || op == TM_OP_COPYSIGN;
    bool sb = (sa && op != TM_OP_COPYSIGN) || op == TM_OP_DIV;
    bool sy = op == TM_OP_DIV || op == TM_OP_POW || op == TM_OP_HYPOT ||
              op == TM_OP_COPYSIGN;
    binary_args p = {op};
    const tm_tensor *ins[2] = {a, b};
    tm__record r = {.name = name, .backward = binary_backward, .nin = 2,
                    .in = ins,
                    .save = {sa ? a : NULL, sb ? b : NULL, sy ? out : NULL},
                    .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* ------------------------------------------------- tensor op scalar */

typedef struct { tm_binary_op op; double s; bool rev; } scalar_args;

/* Gradient of t op s (rev: s op t) for t; x is t, y the output. */
static tm_tensor *scalar_grad(tm__scratch *sc, const scalar_args *p,
                              const tm_tensor *g, const tm_tensor *x,
                              const tm_tensor *y)
{
    double s = p->s;
    tm_tensor *t;
    switch (p->op) {
    case TM_OP_ADD: return (tm_tensor *)g;
    case TM_OP_SUB:
        return p->rev ? tm__sc_unary(sc, TM_OP_NEG, g) : (tm_tensor *)g;
    case TM_OP_MUL: return tm__sc_scalar(sc, TM_OP_MUL, g, s);
    case TM_OP_DIV: /* s / x: -g y / x */
        if (!p->rev) return tm__sc_scalar(sc, TM_OP_DIV, g, s);
        t = tm__sc_binary(sc, TM_OP_DIV, tm__sc_binary(sc, TM_OP_MUL, g, y),
                          x);
        return tm__sc_unary(sc, TM_OP_NEG, t);
    case TM_OP_POW:
        if (!p->rev) { /* x^s: s x^(s-1), and 0 for s == 0 */
            if (s == 0)
                return sc->st ? NULL : tm__sc_keep(sc, tm_zeros_like(g));
            t = tm__sc_scalar(sc, TM_OP_POW, x, s - 1);
            t = tm__sc_scalar(sc, TM_OP_MUL, t, s);
            return tm__sc_binary(sc, TM_OP_MUL, g, t);
        }
        /* s^x: y log s; with s == 0, 0 where x >= 0 */
        t = tm__sc_binary(sc, TM_OP_MUL, g,
                          tm__sc_scalar(sc, TM_OP_MUL, y, log(s)));
        return s == 0 ? tm__sc_block(sc, tm__sc_scalar(sc, TM_OP_GE, x, 0), t)
                      : t;
    case TM_OP_MAXIMUM:
    case TM_OP_MINIMUM:
        t = tm__sc_scalar(sc, p->op == TM_OP_MAXIMUM ? TM_OP_LT : TM_OP_GT, x,
                          s);
        return tm__sc_where(sc, tm__sc_scalar(sc, TM_OP_EQ, x, s),
                            tm__sc_scalar(sc, TM_OP_MUL, g, 0.5),
                            tm__sc_block(sc, t, g));
    case TM_OP_REMAINDER:
        if (!p->rev) return (tm_tensor *)g;
        /* s - floor(s / x) x */
        t = tm__sc_rscalar(sc, TM_OP_FLOOR_DIVIDE, s, x);
        return tm__sc_unary(sc, TM_OP_NEG,
                            tm__sc_binary(sc, TM_OP_MUL, g, t));
    case TM_OP_FMOD:
        if (!p->rev) return (tm_tensor *)g;
        /* s - trunc(s / x) x */
        t = tm__sc_unary(sc, TM_OP_TRUNC, tm__sc_rscalar(sc, TM_OP_DIV, s, x));
        return tm__sc_unary(sc, TM_OP_NEG,
                            tm__sc_binary(sc, TM_OP_MUL, g, t));
    case TM_OP_ATAN2: /* atan2(x, s): g s / r^2; atan2(s, x): -g s / r^2 */
        t = tm__sc_scalar(sc, TM_OP_ADD, tm__sc_binary(sc, TM_OP_MUL, x, x),
                          s * s);
        return tm__sc_binary(sc, TM_OP_DIV,
                             tm__sc_scalar(sc, TM_OP_MUL, g, p->rev ? -s : s),
                             t);
    case TM_OP_LOGADDEXP: /* symmetric: g / (1 + e^(s - x)) */
    case TM_OP_LOGADDEXP2:
        t = tm__sc_unary(sc, p->op == TM_OP_LOGADDEXP ? TM_OP_EXP : TM_OP_EXP2,
                         tm__sc_rscalar(sc, TM_OP_SUB, s, x));
        return tm__sc_binary(sc, TM_OP_DIV, g,
                             tm__sc_scalar(sc, TM_OP_ADD, t, 1));
    case TM_OP_COPYSIGN: /* x's sign changes or not: g y / x; s's is 0 */
        if (p->rev) return tm__sc_scalar(sc, TM_OP_MUL, g, 0);
        return tm__sc_block(sc, tm__sc_scalar(sc, TM_OP_EQ, x, 0),
                            tm__sc_binary(sc, TM_OP_MUL, g,
                                          tm__sc_binary(sc, TM_OP_DIV, y, x)));
    case TM_OP_HYPOT: /* symmetric: g x / y */
        return tm__sc_binary(sc, TM_OP_MUL, x,
                             tm__sc_binary(sc, TM_OP_DIV, g, y));
    default:
        tm__errf(TM_ESTATE, "backward", "internal error: no derivative for "
                 "binary op %s", tm__binary_ops[p->op].name);
        return tm__sc_keep(sc, NULL);
    }
}

static tm_status scalar_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **grad_in)
{
    const scalar_args *p = TM__AG_ARGS(n, scalar_args);
    const tm__edge *e = &n->edges[0];
    if (p->op == TM_OP_FLOOR_DIVIDE) { /* piecewise constant */
        grad_in[0] = tm__grad_zeros(e->shape, e->ndim, e->dtype, g);
        return grad_in[0] ? TM_OK : tm_last_status();
    }
    tm__scratch s = {0};
    const tm_tensor *x = tm__ag_saved(n, 0);
    if (x) x = tm__sc_cast(&s, x, g->dtype);
    tm_tensor *r = scalar_grad(&s, p, g, x, tm__ag_saved(n, 1));
    grad_in[0] = tm__sc_grad_for(&s, r, e);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_binary_scalar(tm_tensor *out, tm_binary_op op,
                                  const tm_tensor *t, double s, bool rev)
{
    const char *name = tm__binary_ops[op].grad_fn;
    if (!out || !name) return out;
    /* what the gradient reads: t (x) and the output y */
    bool sx = op == TM_OP_POW || op == TM_OP_MAXIMUM ||
              op == TM_OP_MINIMUM || op == TM_OP_ATAN2 ||
              op == TM_OP_LOGADDEXP || op == TM_OP_LOGADDEXP2 ||
              op == TM_OP_HYPOT || (op == TM_OP_COPYSIGN && !rev) ||
              (rev && (op == TM_OP_DIV || op == TM_OP_REMAINDER ||
                       op == TM_OP_FMOD));
    bool sy = (rev && (op == TM_OP_DIV || op == TM_OP_POW)) ||
              op == TM_OP_HYPOT || (op == TM_OP_COPYSIGN && !rev);
    scalar_args p = {op, s, rev};
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = name, .backward = scalar_backward, .nin = 1,
                    .in = ins, .save = {sx ? t : NULL, sy ? out : NULL},
                    .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* ------------------------------------------------------- clamp_tensor */

/* PyTorch's clamp_backward and clamp_backward_min_max: t gets g where
 * lo <= t <= hi; lo gets g where t < lo (and lo < hi); hi gets g where
 * t > hi or hi < lo (then the result is hi everywhere). */
static tm_status clamp_tensor_backward(tm__node *n, const tm_tensor *g,
                                       tm_tensor **grad_in)
{
    tm__scratch s = {0};
    const tm_tensor *t = tm__sc_cast(&s, tm__ag_saved(n, 0), g->dtype);
    const tm_tensor *lo = tm__ag_saved(n, 1), *hi = tm__ag_saved(n, 2);
    tm_tensor *m, *u;
    if (lo) lo = tm__sc_cast(&s, lo, g->dtype);
    if (hi) hi = tm__sc_cast(&s, hi, g->dtype);
    if (n->edges[0].needed) {
        m = NULL;
        if (lo) m = tm__sc_binary(&s, TM_OP_GE, t, lo);
        if (hi) {
            u = tm__sc_binary(&s, TM_OP_LE, t, hi);
            m = m ? tm__sc_binary(&s, TM_OP_LOGICAL_AND, m, u) : u;
        }
        grad_in[0] = tm__sc_grad_for(&s, tm__sc_pass(&s, m, g), &n->edges[0]);
    }
    if (lo && n->edges[1].needed) {
        m = tm__sc_binary(&s, TM_OP_LT, t, lo);
        if (hi)
            m = tm__sc_binary(&s, TM_OP_LOGICAL_AND, m,
                              tm__sc_binary(&s, TM_OP_LT, lo, hi));
        grad_in[1] = tm__sc_grad_for(&s, tm__sc_pass(&s, m, g), &n->edges[1]);
    }
    if (hi && n->edges[2].needed) {
        m = tm__sc_binary(&s, TM_OP_GT, t, hi);
        if (lo)
            m = tm__sc_binary(&s, TM_OP_LOGICAL_OR, m,
                              tm__sc_binary(&s, TM_OP_LT, hi, lo));
        grad_in[2] = tm__sc_grad_for(&s, tm__sc_pass(&s, m, g), &n->edges[2]);
    }
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_clamp_tensor(tm_tensor *out, const tm_tensor *t,
                                 const tm_tensor *lo, const tm_tensor *hi)
{
    const tm_tensor *ins[3] = {t, lo, hi};
    tm__record r = {.name = "ClampBackward",
                    .backward = clamp_tensor_backward, .nin = 3, .in = ins,
                    .save = {t, lo, hi}};
    return tm__ag_result(&r, out);
}
