/* grad_reduce.c — backward of the reductions (sum, mean, prod, max, min,
 * var, std, logsumexp, norm), of max/min over a dim, cumsum, sort and
 * topk.  Gradients are built from ordinary public ops (grad mode is off
 * while a backward function runs), in the output's dtype. */
#include "grad_reduce.h"
#include "grad_scratch.h"

#include <math.h>
#include <string.h>

/* Node parameters of a reduction: i[d] (d < ndim) marks reduced dims,
 * i[TM_MAX_DIMS] the op; d[0] the correction / order. */
#define RED_OP TM_MAX_DIMS

/* g with the input's reduced dims present as size 1 (a view when it can). */
static tm_tensor *keep_shape(tm__gs *s, const tm__node *n, const tm_tensor *g)
{
    const tm__edge *e = &n->edges[0];
    int64_t ks[TM_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) ks[d] = n->i[d] ? 1 : e->shape[d];
    return tm__gs_keep(s, tm_reshape(g, ks, e->ndim));
}

/* A scalar of dtype dt (for comparisons and where). */
static tm_tensor *sc(tm__gs *s, double v, tm_dtype dt)
{
    return tm__gs_keep(s, tm_scalar(v, dt));
}

/* mask (bool) as dtype dt, spread evenly: mask / count over the reduced
 * dims (the amax / amin rule for ties). */
static tm_tensor *even_mask(tm__gs *s, const tm_tensor *mask, tm_dtype dt,
                            const int *dims, int nd)
{
    tm_tensor *mf = tm__gs_keep(s, tm_to_dtype(mask, dt));
    tm_tensor *cnt = tm__gs_keep(s, tm_sum(mf, dims, nd, true));
    return tm__gs_keep(s, tm_div(mf, cnt));
}

/* d prod / dx times gk: the product of the others (PyTorch's rule, exact
 * where x has zeros): out / x without zeros in the group; with one zero,
 * the product of the non-zeros at that zero and 0 elsewhere; with more,
 * 0. */
static tm_tensor *prod_grad(tm__gs *s, const tm_tensor *x, tm_tensor *gk,
                            const int *dims, int nd)
{
    tm_dtype dt = tm_dtype_of(x);
    tm_tensor *zero = sc(s, 0, dt), *one = sc(s, 1, dt);
    tm_tensor *z = tm__gs_keep(s, tm_eq(x, zero));
    tm_tensor *zf = tm__gs_keep(s, tm_to_dtype(z, dt));
    tm_tensor *nz = tm__gs_keep(s, tm_sum(zf, dims, nd, true));
    tm_tensor *x1 = tm__gs_keep(s, tm_where(z, one, x));
    tm_tensor *P = tm__gs_keep(s, tm_prod(x1, dims, nd, true));
    tm_tensor *A = tm__gs_keep(s, tm_div(P, x1));
    tm_tensor *c0 = tm__gs_keep(s, tm_eq(nz, zero));
    tm_tensor *c1 = tm__gs_keep(s, tm_eq(nz, one));
    tm_tensor *sel = tm__gs_keep(s, tm_logical_and(z, c1));
    tm_tensor *B = tm__gs_keep(s, tm_where(sel, P, zero));
    tm_tensor *r = tm__gs_keep(s, tm_where(c0, A, B));
    return tm__gs_keep(s, tm_mul(r, gk));
}

/* d ||x||_p / dx times gk (yk: the norm, keepdim shape).  Subgradient 0
 * where x == 0 (p <= 1) or the norm is 0; p = 0 has gradient 0; +-inf
 * spreads over the ties of |x| == norm as amax does. */
static tm_tensor *norm_grad(tm__gs *s, const tm_tensor *x, tm_tensor *yk,
                            tm_tensor *gk, double p, const int *dims, int nd)
{
    tm_dtype dt = tm_dtype_of(x);
    if (p == 0) return tm__gs_keep(s, tm_zeros_like(x));
    tm_tensor *sg = tm__gs_keep(s, tm_sign(x));
    if (p == 1) return tm__gs_keep(s, tm_mul(sg, gk));
    tm_tensor *zero = sc(s, 0, dt), *r;
    if (isinf(p)) {
        tm_tensor *ax = tm__gs_keep(s, tm_abs(x));
        tm_tensor *m = tm__gs_keep(s, tm_eq(ax, yk));
        tm_tensor *w = even_mask(s, m, dt, dims, nd);
        tm_tensor *sw = tm__gs_keep(s, tm_mul(sg, w));
        return tm__gs_keep(s, tm_mul(sw, gk));
    }
    if (p == 2) {
        tm_tensor *q = tm__gs_keep(s, tm_div(gk, yk));
        r = tm__gs_keep(s, tm_mul(x, q));
    } else {
        tm_tensor *ax = tm__gs_keep(s, tm_abs(x));
        tm_tensor *pw = tm__gs_keep(s, tm_pow_scalar(ax, p - 1));
        tm_tensor *num = tm__gs_keep(s, tm_mul(sg, pw));
        tm_tensor *yp = tm__gs_keep(s, tm_pow_scalar(yk, p - 1));
        tm_tensor *q = tm__gs_keep(s, tm_div(gk, yp));
        tm_tensor *v = tm__gs_keep(s, tm_mul(num, q));
        tm_tensor *xz = tm__gs_keep(s, tm_eq(x, zero));
        r = tm__gs_keep(s, tm_where(xz, zero, v));
    }
    tm_tensor *yz = tm__gs_keep(s, tm_eq(yk, zero));
    return tm__gs_keep(s, tm_where(yz, zero, r));
}

static tm_status reduce_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__gs s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_tensor *x = tm__ag_saved(n, 0), *y = tm__ag_saved(n, 1);
    tm_reduce_op op = (tm_reduce_op)n->i[RED_OP];
    double p = n->d[0];
    tm_dtype dt = tm_dtype_of(g);
    int dims[TM_MAX_DIMS], nd = 0;
    int64_t N = 1;
    for (int d = 0; d < e->ndim; d++)
        if (n->i[d]) {
            dims[nd++] = d;
            N *= e->shape[d];
        }
    tm_tensor *gk = keep_shape(&s, n, g), *r = NULL, *t1, *t2;
    tm_tensor *yk = y ? keep_shape(&s, n, y) : NULL;
    switch (op) {
    case TM_RED_SUM: r = gk; break;
    case TM_RED_MEAN: r = tm__gs_keep(&s, tm_div_scalar(gk, (double)N)); break;
    case TM_RED_PROD: r = prod_grad(&s, x, gk, dims, nd); break;
    case TM_RED_MAX:
    case TM_RED_MIN:
        t1 = tm__gs_keep(&s, tm_eq(x, yk));
        t2 = even_mask(&s, t1, dt, dims, nd);
        r = tm__gs_keep(&s, tm_mul(t2, gk));
        break;
    case TM_RED_VAR:
    case TM_RED_STD:
        t1 = tm__gs_keep(&s, tm_mean(x, dims, nd, true));
        t2 = tm__gs_keep(&s, tm_sub(x, t1)); /* x - mean */
        if (op == TM_RED_VAR) {
            t1 = tm__gs_keep(&s, tm_mul_scalar(gk, 2.0 / ((double)N - p)));
            r = tm__gs_keep(&s, tm_mul(t2, t1));
        } else { /* (x - mean) / ((N - c) std); 0 where std == 0 */
            t1 = tm__gs_keep(&s, tm_mul_scalar(yk, (double)N - p));
            t1 = tm__gs_keep(&s, tm_div(gk, t1));
            t2 = tm__gs_keep(&s, tm_mul(t2, t1));
            tm_tensor *zero = sc(&s, 0, dt);
            t1 = tm__gs_keep(&s, tm_eq(yk, zero));
            r = tm__gs_keep(&s, tm_where(t1, zero, t2));
        }
        break;
    case TM_RED_LOGSUMEXP:
        t1 = tm__gs_keep(&s, tm_sub(x, yk));
        t2 = tm__gs_keep(&s, tm_exp(t1));
        r = tm__gs_keep(&s, tm_mul(t2, gk));
        break;
    case TM_RED_NORM: r = norm_grad(&s, x, yk, gk, p, dims, nd); break;
    default:
        tm__errf(TM_ESTATE, n->name, "internal error: reduce op %d has no "
                 "backward", (int)op);
        tm__gs_keep(&s, NULL);
    }
    if (r && tm_ndim(r) == e->ndim &&
        !memcmp(tm_shape(r), e->shape, sizeof(int64_t) * (size_t)e->ndim)) {
        gin[0] = tm_retain(r);
    } else if (r) { /* a broadcast gradient: materialize it */
        tm_tensor *v = tm__gs_keep(&s, tm_expand(r, e->shape, e->ndim));
        if (v) gin[0] = tm__gs_keep(&s, tm_contiguous(v));
        if (gin[0]) tm_retain(gin[0]);
    }
    return tm__gs_done(&s, n->name);
}

static const char *reduce_name(tm_reduce_op op)
{
    switch (op) {
    case TM_RED_SUM: return "SumBackward";
    case TM_RED_MEAN: return "MeanBackward";
    case TM_RED_PROD: return "ProdBackward";
    case TM_RED_MAX: return "MaxBackward";
    case TM_RED_MIN: return "MinBackward";
    case TM_RED_VAR: return "VarBackward";
    case TM_RED_STD: return "StdBackward";
    case TM_RED_LOGSUMEXP: return "LogsumexpBackward";
    case TM_RED_NORM: return "NormBackward";
    default: return NULL;
    }
}

tm_status tm__grad_reduce_record(tm_reduce_op op, const tm_tensor *t,
                                 const bool *red, bool keepdim, double p,
                                 tm_tensor *out)
{
    const char *name = reduce_name(op);
    if (!name || !tm_dtype_is_float(tm_dtype_of(out)) ||
        !tm__ag_needed(1, &t))
        return TM_OK;
    (void)keepdim; /* the gradient is reshaped to the input's kept shape */
    tm__node *n = tm__ag_node(name, reduce_backward, 1, &t);
    if (!n) return tm_last_status();
    for (int d = 0; d < t->ndim; d++) n->i[d] = red[d];
    n->i[RED_OP] = op;
    n->d[0] = p;
    bool need_x = op != TM_RED_SUM && op != TM_RED_MEAN;
    bool need_y = op == TM_RED_MAX || op == TM_RED_MIN ||
                  op == TM_RED_STD || op == TM_RED_LOGSUMEXP ||
                  op == TM_RED_NORM;
    if ((need_x && tm__ag_save(n, 0, t)) || (need_y && tm__ag_save(n, 1, out))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ------------------------------------------- scatter through indices */

/* Node: i[0] the dim (wrapped; -1 for a 0-d input), i[1] keepdim; saved
 * slot 0 the indices.  The gradient of the values lands at the indices
 * (max_dim, min_dim, sort, topk). */
static tm_status scatter_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__gs s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_tensor *ix = tm__ag_saved(n, 0);
    int d = (int)n->i[0];
    if (d < 0) { /* a 0-d input: the identity */
        gin[0] = tm_reshape(g, NULL, 0);
        return gin[0] ? TM_OK : tm_last_status();
    }
    tm_tensor *gk = (tm_tensor *)g, *ik = (tm_tensor *)ix;
    if (!n->i[1]) {
        gk = tm__gs_keep(&s, tm_unsqueeze(g, d));
        ik = tm__gs_keep(&s, tm_unsqueeze(ix, d));
    }
    tm_tensor *z = tm__gs_keep(&s, tm_zeros(e->shape, e->ndim,
                                            tm_dtype_of(g)));
    if (!s.st) gin[0] = tm_scatter_add(z, d, ik, gk);
    if (!gin[0]) tm__gs_keep(&s, NULL);
    return tm__gs_done(&s, n->name);
}

static tm_status scatter_record(const char *name, const tm_tensor *t, int d,
                                bool keepdim, tm_tensor *values,
                                const tm_tensor *indices)
{
    if (!tm__ag_needed(1, &t)) return TM_OK;
    tm__node *n = tm__ag_node(name, scatter_backward, 1, &t);
    if (!n) return tm_last_status();
    n->i[0] = t->ndim == 0 ? -1 : d;
    n->i[1] = keepdim;
    if (tm__ag_save(n, 0, indices)) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, values);
}

tm_status tm__grad_minmax_dim_record(bool is_max, const tm_tensor *t, int d,
                                     bool keepdim, tm_tensor *values,
                                     const tm_tensor *indices)
{
    return scatter_record(is_max ? "MaxBackward" : "MinBackward", t, d,
                          keepdim, values, indices);
}

tm_status tm__grad_sort_record(const char *name, const tm_tensor *t, int dim,
                               tm_tensor *values, const tm_tensor *indices)
{
    int d = dim < 0 ? dim + (t->ndim ? t->ndim : 1) : dim;
    return scatter_record(name, t, d, true, values, indices);
}

/* ---------------------------------------------------------------- cumsum */

/* The gradient is the reverse cumulative sum of g along the dim:
 * sum(g) - cumsum(g) + g. */
static tm_status cumsum_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__gs s = {0};
    int d = (int)n->i[0];
    tm_tensor *tot = tm__gs_keep(&s, tm_sum(g, &d, 1, true));
    tm_tensor *cs = tm__gs_keep(&s, tm_cumsum(g, d));
    tm_tensor *rest = tm__gs_keep(&s, tm_sub(tot, cs));
    if (!s.st) gin[0] = tm__gs_keep(&s, tm_add(rest, g));
    if (gin[0]) tm_retain(gin[0]);
    return tm__gs_done(&s, n->name);
}

tm_status tm__grad_cumsum_record(const tm_tensor *t, int d, tm_tensor *out)
{
    if (!tm_dtype_is_float(tm_dtype_of(out)) || !tm__ag_needed(1, &t))
        return TM_OK;
    tm__node *n = tm__ag_node("CumsumBackward", cumsum_backward, 1, &t);
    if (!n) return tm_last_status();
    n->i[0] = d;
    return tm__ag_attach(n, out);
}
