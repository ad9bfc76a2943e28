/* reduce_backward.c — the gradients of ops/reduce.c (the reductions of
 * TM_REDUCE_OPS, max/min over a dim, cumsum) and their recording hooks.
 * Gradients are built from ordinary public ops (grad mode is off while a
 * backward function runs), in the output's dtype. */
#include "backward.h"
#include "../core/grad_hooks.h"
#include "../ops/op_table.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ reductions */

/* The op, its parameter (correction, order) and the reduced dims. */
typedef struct {
    tm_reduce_op op;
    double p;
    bool red[TM_MAX_DIMS];
} reduce_args;

/* g with the input's reduced dims present as size 1 (a view when it can). */
static tm_tensor *keep_shape(tm__scratch *s, const tm__node *n,
                             const tm_tensor *g)
{
    const tm__edge *e = &n->edges[0];
    const reduce_args *p = TM__AG_ARGS(n, reduce_args);
    int64_t ks[TM_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) ks[d] = p->red[d] ? 1 : e->shape[d];
    return tm__sc_keep(s, tm_reshape(g, ks, e->ndim));
}

/* A scalar of dtype dt on like's device (for comparisons and where). */
static tm_tensor *sc(tm__scratch *s, double v, tm_dtype dt,
                     const tm_tensor *like)
{
    return tm__sc_keep(s, tm_full_on(NULL, 0, v, dt, tm_device_of(like)));
}

/* mask (bool) as dtype dt, spread evenly: mask / count over the reduced
 * dims (the amax / amin rule for ties). */
static tm_tensor *even_mask(tm__scratch *s, const tm_tensor *mask,
                            tm_dtype dt, const int *dims, int nd)
{
    tm_tensor *mf = tm__sc_keep(s, tm_to_dtype(mask, dt));
    tm_tensor *cnt = tm__sc_keep(s, tm_sum(mf, dims, nd, true));
    return tm__sc_keep(s, tm_div(mf, cnt));
}

/* d prod / dx times gk: the product of the others (PyTorch's rule, exact
 * where x has zeros): out / x without zeros in the group; with one zero,
 * the product of the non-zeros at that zero and 0 elsewhere; with more,
 * 0. */
static tm_tensor *prod_grad(tm__scratch *s, const tm_tensor *x, tm_tensor *gk,
                            const int *dims, int nd)
{
    tm_dtype dt = tm_dtype_of(x);
    tm_tensor *zero = sc(s, 0, dt, x), *one = sc(s, 1, dt, x);
    tm_tensor *z = tm__sc_keep(s, tm_eq(x, zero));
    tm_tensor *zf = tm__sc_keep(s, tm_to_dtype(z, dt));
    tm_tensor *nz = tm__sc_keep(s, tm_sum(zf, dims, nd, true));
    tm_tensor *x1 = tm__sc_keep(s, tm_where(z, one, x));
    tm_tensor *P = tm__sc_keep(s, tm_prod(x1, dims, nd, true));
    tm_tensor *A = tm__sc_keep(s, tm_div(P, x1));
    tm_tensor *c0 = tm__sc_keep(s, tm_eq(nz, zero));
    tm_tensor *c1 = tm__sc_keep(s, tm_eq(nz, one));
    tm_tensor *sel = tm__sc_keep(s, tm_logical_and(z, c1));
    tm_tensor *B = tm__sc_keep(s, tm_where(sel, P, zero));
    tm_tensor *r = tm__sc_keep(s, tm_where(c0, A, B));
    return tm__sc_keep(s, tm_mul(r, gk));
}

/* d ||x||_p / dx times gk (yk: the norm, keepdim shape).  Subgradient 0
 * where x == 0 (p <= 1) or the norm is 0; p = 0 has gradient 0; +-inf
 * spreads over the ties of |x| == norm as amax does. */
static tm_tensor *norm_grad(tm__scratch *s, const tm_tensor *x, tm_tensor *yk,
                            tm_tensor *gk, double p, const int *dims, int nd)
{
    tm_dtype dt = tm_dtype_of(x);
    if (p == 0) return tm__sc_keep(s, tm_zeros_like(x));
    tm_tensor *sg = tm__sc_keep(s, tm_sign(x));
    if (p == 1) return tm__sc_keep(s, tm_mul(sg, gk));
    tm_tensor *zero = sc(s, 0, dt, x), *r;
    if (isinf(p)) {
        tm_tensor *ax = tm__sc_keep(s, tm_abs(x));
        tm_tensor *m = tm__sc_keep(s, tm_eq(ax, yk));
        tm_tensor *w = even_mask(s, m, dt, dims, nd);
        tm_tensor *sw = tm__sc_keep(s, tm_mul(sg, w));
        return tm__sc_keep(s, tm_mul(sw, gk));
    }
    if (p == 2) {
        tm_tensor *q = tm__sc_keep(s, tm_div(gk, yk));
        r = tm__sc_keep(s, tm_mul(x, q));
    } else {
        tm_tensor *ax = tm__sc_keep(s, tm_abs(x));
        tm_tensor *pw = tm__sc_keep(s, tm_pow_scalar(ax, p - 1));
        tm_tensor *num = tm__sc_keep(s, tm_mul(sg, pw));
        tm_tensor *yp = tm__sc_keep(s, tm_pow_scalar(yk, p - 1));
        tm_tensor *q = tm__sc_keep(s, tm_div(gk, yp));
        tm_tensor *v = tm__sc_keep(s, tm_mul(num, q));
        tm_tensor *xz = tm__sc_keep(s, tm_eq(x, zero));
        r = tm__sc_keep(s, tm_where(xz, zero, v));
    }
    tm_tensor *yz = tm__sc_keep(s, tm_eq(yk, zero));
    return tm__sc_keep(s, tm_where(yz, zero, r));
}

static tm_status reduce_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_tensor *x = tm__ag_saved(n, 0), *y = tm__ag_saved(n, 1);
    const reduce_args *a = TM__AG_ARGS(n, reduce_args);
    tm_reduce_op op = a->op;
    double p = a->p;
    tm_dtype dt = tm_dtype_of(g);
    int dims[TM_MAX_DIMS], nd = 0;
    int64_t N = 1;
    for (int d = 0; d < e->ndim; d++)
        if (a->red[d]) {
            dims[nd++] = d;
            N *= e->shape[d];
        }
    tm_tensor *gk = keep_shape(&s, n, g), *r = NULL, *t1, *t2;
    tm_tensor *yk = y ? keep_shape(&s, n, y) : NULL;
    switch (op) {
    case TM_RED_SUM: r = gk; break;
    case TM_RED_MEAN:
        r = tm__sc_keep(&s, tm_div_scalar(gk, (double)N));
        break;
    case TM_RED_PROD: r = prod_grad(&s, x, gk, dims, nd); break;
    case TM_RED_MAX:
    case TM_RED_MIN:
        t1 = tm__sc_keep(&s, tm_eq(x, yk));
        t2 = even_mask(&s, t1, dt, dims, nd);
        r = tm__sc_keep(&s, tm_mul(t2, gk));
        break;
    case TM_RED_VAR:
    case TM_RED_STD:
        t1 = tm__sc_keep(&s, tm_mean(x, dims, nd, true));
        t2 = tm__sc_keep(&s, tm_sub(x, t1)); /* x - mean */
        if (op == TM_RED_VAR) {
            t1 = tm__sc_keep(&s, tm_mul_scalar(gk, 2.0 / ((double)N - p)));
            r = tm__sc_keep(&s, tm_mul(t2, t1));
        } else { /* (x - mean) / ((N - c) std); 0 where std == 0 */
            t1 = tm__sc_keep(&s, tm_mul_scalar(yk, (double)N - p));
            t1 = tm__sc_keep(&s, tm_div(gk, t1));
            t2 = tm__sc_keep(&s, tm_mul(t2, t1));
            tm_tensor *zero = sc(&s, 0, dt, yk);
            t1 = tm__sc_keep(&s, tm_eq(yk, zero));
            r = tm__sc_keep(&s, tm_where(t1, zero, t2));
        }
        break;
    case TM_RED_LOGSUMEXP:
        t1 = tm__sc_keep(&s, tm_sub(x, yk));
        t2 = tm__sc_keep(&s, tm_exp(t1));
        r = tm__sc_keep(&s, tm_mul(t2, gk));
        break;
    case TM_RED_NORM: r = norm_grad(&s, x, yk, gk, p, dims, nd); break;
    default:
        tm__errf(TM_ESTATE, n->name, "internal error: reduce op %s has no "
                 "backward", tm__reduce_ops[op].name);
        tm__sc_keep(&s, NULL);
    }
    if (r && tm_ndim(r) == e->ndim &&
        !memcmp(tm_shape(r), e->shape, sizeof(int64_t) * (size_t)e->ndim)) {
        gin[0] = tm_retain(r);
    } else if (r) { /* a broadcast gradient: materialize it */
        tm_tensor *v = tm__sc_keep(&s, tm_expand(r, e->shape, e->ndim));
        if (v) gin[0] = tm__sc_keep(&s, tm_contiguous(v));
        if (gin[0]) tm_retain(gin[0]);
    }
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_reduce(tm_tensor *out, tm_reduce_op op,
                           const tm_tensor *t, const bool *red, double p)
{
    const char *name = tm__reduce_ops[op].grad_fn;
    if (!out || !name) return out;
    /* the gradient is reshaped to the input's kept shape, so keepdim does
     * not matter; what it reads: */
    bool need_x = op != TM_RED_SUM && op != TM_RED_MEAN;
    bool need_y = op == TM_RED_MAX || op == TM_RED_MIN ||
                  op == TM_RED_STD || op == TM_RED_LOGSUMEXP ||
                  op == TM_RED_NORM;
    reduce_args a = {op, p, {false}};
    memcpy(a.red, red, sizeof(bool) * (size_t)t->ndim);
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = name, .backward = reduce_backward, .nin = 1,
                    .in = ins,
                    .save = {need_x ? t : NULL, need_y ? out : NULL},
                    .args = &a, .args_size = sizeof a};
    return tm__ag_result(&r, out);
}

/* ------------------------------------------- scatter through indices */

/* The gradient of values picked by indices (max/min over a dim, sort,
 * topk) lands at the indices.  Saved: the indices. */
static tm_status indexed_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_tensor *ix = tm__ag_saved(n, 0);
    const tm__indexed_args *p = TM__AG_ARGS(n, tm__indexed_args);
    int d = p->dim;
    if (d < 0) { /* a 0-d input: the identity */
        gin[0] = tm_reshape(g, NULL, 0);
        return gin[0] ? TM_OK : tm_last_status();
    }
    tm_tensor *gk = (tm_tensor *)g, *ik = (tm_tensor *)ix;
    if (!p->keepdim) {
        gk = tm__sc_keep(&s, tm_unsqueeze(g, d));
        ik = tm__sc_keep(&s, tm_unsqueeze(ix, d));
    }
    tm_tensor *z = tm__sc_keep(&s, tm__grad_zeros(e->shape, e->ndim,
                                                  tm_dtype_of(g), g));
    if (!s.st) gin[0] = tm_scatter_add(z, d, ik, gk);
    if (!gin[0]) tm__sc_keep(&s, NULL);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_indexed(tm_tensor *values, const char *name,
                            const tm_tensor *t, int dim, bool keepdim,
                            const tm_tensor *indices)
{
    tm__indexed_args p = {t->ndim == 0 ? -1 : dim, keepdim};
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = name, .backward = indexed_backward, .nin = 1,
                    .in = ins, .save = {indices}, .args = &p,
                    .args_size = sizeof p};
    return tm__ag_result(&r, values);
}

tm_tensor *tm__grad_minmax_dim(tm_tensor *values, bool is_max,
                               const tm_tensor *t, int d, bool keepdim,
                               const tm_tensor *indices)
{
    return tm__grad_indexed(values, is_max ? "MaxBackward" : "MinBackward",
                            t, d, keepdim, indices);
}

/* ---------------------------------------------------------------- cumsum */

typedef struct { int dim; } cumsum_args;

/* The gradient is the reverse cumulative sum of g along the dim:
 * sum(g) - cumsum(g) + g. */
static tm_status cumsum_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__scratch s = {0};
    int d = TM__AG_ARGS(n, cumsum_args)->dim;
    tm_tensor *tot = tm__sc_keep(&s, tm_sum(g, &d, 1, true));
    tm_tensor *cs = tm__sc_keep(&s, tm_cumsum(g, d));
    tm_tensor *rest = tm__sc_keep(&s, tm_sub(tot, cs));
    if (!s.st) gin[0] = tm__sc_keep(&s, tm_add(rest, g));
    if (gin[0]) tm_retain(gin[0]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_cumsum(tm_tensor *out, const tm_tensor *t, int d)
{
    const tm_tensor *ins[1] = {t};
    cumsum_args p = {d};
    tm__record r = {.name = "CumsumBackward", .backward = cumsum_backward,
                    .nin = 1, .in = ins, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
