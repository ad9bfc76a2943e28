/* scan_backward.c — the gradients of ops/scan.c (cumprod, cummax,
 * cummin, logcumsumexp) and their recording hooks.  Conventions follow
 * PyTorch's derivatives (zeros in cumprod's input, the split into
 * positive and negative parts for logcumsumexp). */
#include "backward.h"
#include "../core/grad_hooks.h"
#include "../ops/scan_impl.h"

#include <math.h>

typedef struct { int dim; } scan_args;

/* ------------------------------------------------------------- cumprod
 * d y_i / d x_k = prod_{j <= i, j != k} x_j for i >= k.  Before a line's
 * first zero that is y_i / x_k, so the gradient is the reverse cumsum of
 * g y divided by x.  At the first zero z it is the reverse cumsum of
 * g y' with y' the cumprod of x with x_z replaced by 1 (exact, no
 * division); after z every product holds x_z = 0. */
static tm_status cumprod_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_tensor *x = tm__ag_saved(n, 0), *y = tm__ag_saved(n, 1);
    int d = TM__AG_ARGS(n, scan_args)->dim;
    tm_tensor *z = tm__sc_scalar(&s, TM_OP_EQ, x, 0);
    tm_tensor *zc = tm__sc_keep(&s, z ? tm_cumsum(z, d) : NULL);
    tm_tensor *before = tm__sc_scalar(&s, TM_OP_EQ, zc, 0);
    tm_tensor *first = tm__sc_binary(&s, TM_OP_LOGICAL_AND, z,
                                     tm__sc_scalar(&s, TM_OP_EQ, zc, 1));
    tm_tensor *one = tm__sc_keep(&s, tm__scalar_on(n->name, 1.0, tm_dtype_of(x),
                                                 tm_device_of(x)));
    tm_tensor *xs = tm__sc_where(&s, before, x, one);
    tm_tensor *gy = tm__sc_binary(&s, TM_OP_MUL, g, y);
    tm_tensor *a = tm__sc_keep(&s, gy ? tm__cumsum_reverse(gy, d) : NULL);
    a = tm__sc_binary(&s, TM_OP_DIV, a, xs);
    tm_tensor *x1 = tm__sc_where(&s, first, one, x);
    tm_tensor *y1 = tm__sc_keep(&s, x1 ? tm_cumprod(x1, d) : NULL);
    tm_tensor *gy1 = tm__sc_binary(&s, TM_OP_MUL, g, y1);
    tm_tensor *b = tm__sc_keep(&s, gy1 ? tm__cumsum_reverse(gy1, d) : NULL);
    b = tm__sc_pass(&s, first, b);
    tm_tensor *r = tm__sc_where(&s, before, a, b);
    gin[0] = tm__sc_grad_for(&s, r, e);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_cumprod(tm_tensor *out, const tm_tensor *t, int d)
{
    const tm_tensor *ins[1] = {t};
    scan_args p = {d};
    tm__record r = {.name = "CumprodBackward", .backward = cumprod_backward,
                    .nin = 1, .in = ins, .save = {t, out}, .args = &p,
                    .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* -------------------------------------------------------- logcumsumexp
 * d y_i / d x_k = exp(x_k - y_i) for i >= k, so the gradient is
 * exp(x_k) sum_{i >= k} g_i exp(-y_i).  In log space, with g split by
 * sign: exp(x + rlcse(log g+ - y)) - exp(x + rlcse(log g- - y)), rlcse the
 * logcumsumexp from the end; nothing overflows. */
static tm_status logcumsumexp_backward(tm__node *n, const tm_tensor *g,
                                       tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_tensor *x = tm__ag_saved(n, 0), *y = tm__ag_saved(n, 1);
    int d = TM__AG_ARGS(n, scan_args)->dim;
    tm_tensor *ninf = tm__sc_keep(&s, tm__scalar_on(n->name, -INFINITY,
                                                    tm_dtype_of(g),
                                                    tm_device_of(g)));
    tm_tensor *part[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        /* k = 0: g > 0 as log g; k = 1: g < 0 as log(-g) */
        const tm_tensor *gk = k ? tm__sc_unary(&s, TM_OP_NEG, g) : g;
        tm_tensor *pos = tm__sc_scalar(&s, TM_OP_GT, gk, 0);
        tm_tensor *lg = tm__sc_where(&s, pos, tm__sc_unary(&s, TM_OP_LOG, gk),
                                     ninf);
        tm_tensor *w = tm__sc_binary(&s, TM_OP_SUB, lg, y);
        tm_tensor *rl = tm__sc_keep(&s, w ? tm__logcumsumexp_reverse(w, d)
                                          : NULL);
        part[k] = tm__sc_unary(&s, TM_OP_EXP,
                               tm__sc_binary(&s, TM_OP_ADD, rl, x));
    }
    tm_tensor *r = tm__sc_binary(&s, TM_OP_SUB, part[0], part[1]);
    gin[0] = tm__sc_grad_for(&s, r, e);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_logcumsumexp(tm_tensor *out, const tm_tensor *t, int d)
{
    const tm_tensor *ins[1] = {t};
    scan_args p = {d};
    tm__record r = {.name = "LogcumsumexpBackward",
                    .backward = logcumsumexp_backward, .nin = 1, .in = ins,
                    .save = {t, out}, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* ------------------------------------------------------ cummax, cummin
 * Each output took its value from one input element: the gradient is g
 * added at the indices (an element picked by several outputs gets their
 * sum). */
tm_tensor *tm__grad_cummax(tm_tensor *values, bool is_max,
                           const tm_tensor *t, int d,
                           const tm_tensor *indices)
{
    return tm__grad_indexed(values, is_max ? "CummaxBackward"
                                           : "CumminBackward",
                            t, d, true, indices);
}
