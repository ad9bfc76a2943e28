/* grad_linalg.c — backward of tm_matmul (every numpy form, batch dims
 * broadcast and reduced back), tm_linear, softmax / log_softmax,
 * layer_norm and rms_norm.  The matrix products of the backward pass go
 * through tm_gemm with transpose flags, so no transposed copy is made:
 *   dA = G · Bᵀ,  dB = Aᵀ · G  (summed over A's / B's broadcast batch). */
#include "grad_linalg.h"
#include "grad_scratch.h"

#include <string.h>

/* A fresh [shape] = op(a) · op(b) of dtype dt via tm_gemm (NULL, error
 * kept in s, on failure; a or b NULL: an earlier failure). */
static tm_tensor *gemm_new(tm__gs *s, bool ta, bool tb, const tm_tensor *a,
                           const tm_tensor *b, const int64_t *shape, int nd,
                           tm_dtype dt)
{
    if (!a || !b) return NULL;
    /* beta 0: the GEMM writes every element, so no zero fill first */
    tm_tensor *c = tm__gs_keep(s, tm_empty(shape, nd, dt));
    if (c && tm_gemm(ta, tb, 1.0, a, b, 0.0, c)) {
        tm__gs_keep(s, NULL);
        return NULL;
    }
    return c;
}

/* d (the gradient in a computation dtype) reshaped to the input of edge e
 * and converted to its dtype, into *out (a new reference). */
static void finish(tm__gs *s, tm_tensor *d, const tm__edge *e,
                   tm_tensor **out)
{
    if (!d) return;
    tm_tensor *r = tm__gs_keep(s, tm_reshape(d, e->shape, e->ndim));
    r = r ? tm__gs_keep(s, tm__gs_as(r, e->dtype)) : NULL;
    if (r) *out = tm_retain(r);
}

/* ---------------------------------------------------------------- matmul */

/* Both operands are seen as matrices (a 1-D a as [1,k], a 1-D b as
 * [k,1]) and g as [batch..., m, n]. */
static tm_status matmul_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__gs s = {0};
    const tm__edge *ea = &n->edges[0], *eb = &n->edges[1];
    tm_dtype dt = tm_dtype_of(g);
    bool a1 = ea->ndim == 1, b1 = eb->ndim == 1;
    int64_t k = ea->shape[ea->ndim - 1];
    int64_t m = a1 ? 1 : ea->shape[ea->ndim - 2];
    int64_t nn = b1 ? 1 : eb->shape[eb->ndim - 1];
    int nbd = tm_ndim(g) - !a1 - !b1, nd = nbd + 2;
    int64_t gs[TM_MAX_DIMS + 2], cs[TM_MAX_DIMS + 2];
    int64_t a2[2] = {1, k}, b2[2] = {k, 1};
    memcpy(gs, tm_shape(g), sizeof(int64_t) * (size_t)nbd);
    memcpy(cs, gs, sizeof cs);
    gs[nbd] = m, gs[nbd + 1] = nn;
    tm_tensor *g2 = tm__gs_keep(&s, tm_reshape(g, gs, nd));
    if (ea->needed) { /* dA = G · Bᵀ: [batch..., m, k] */
        tm_tensor *b = tm__gs_keep(&s, tm__gs_as(tm__ag_saved(n, 1), dt));
        if (b && b1) b = tm__gs_keep(&s, tm_reshape(b, b2, 2));
        cs[nbd] = m, cs[nbd + 1] = k;
        tm_tensor *c = gemm_new(&s, false, true, g2, b, cs, nd, dt);
        if (c)
            c = tm__gs_keep(&s, tm__ag_sum_to(c, a1 ? a2 : ea->shape,
                                              a1 ? 2 : ea->ndim));
        finish(&s, c, ea, &gin[0]);
    }
    if (eb->needed) { /* dB = Aᵀ · G: [batch..., k, n] */
        tm_tensor *a = tm__gs_keep(&s, tm__gs_as(tm__ag_saved(n, 0), dt));
        if (a && a1) a = tm__gs_keep(&s, tm_reshape(a, a2, 2));
        cs[nbd] = k, cs[nbd + 1] = nn;
        tm_tensor *c = gemm_new(&s, true, false, a, g2, cs, nd, dt);
        if (c)
            c = tm__gs_keep(&s, tm__ag_sum_to(c, b1 ? b2 : eb->shape,
                                              b1 ? 2 : eb->ndim));
        finish(&s, c, eb, &gin[1]);
    }
    return tm__gs_done(&s, n->name);
}

tm_status tm__grad_matmul_record(const tm_tensor *a, const tm_tensor *b,
                                 tm_tensor *out)
{
    const tm_tensor *ins[2] = {a, b};
    if (!tm_dtype_is_float(tm_dtype_of(out)) || !tm__ag_needed(2, ins))
        return TM_OK;
    tm__node *n = tm__ag_node("MatmulBackward", matmul_backward, 2, ins);
    if (!n) return tm_last_status();
    /* dA needs B and dB needs A: save only what is needed. */
    if ((n->edges[0].needed && tm__ag_save(n, 1, b)) ||
        (n->edges[1].needed && tm__ag_save(n, 0, a))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ---------------------------------------------------------------- linear */

/* The sum of g over all dims but the last (g itself for 1-D). */
static tm_tensor *sum_rows(tm__gs *s, const tm_tensor *g)
{
    int nd = tm_ndim(g), dims[TM_MAX_DIMS];
    if (nd == 1) return tm__gs_keep(s, tm_retain((tm_tensor *)g));
    for (int d = 0; d < nd - 1; d++) dims[d] = d;
    return tm__gs_keep(s, tm_sum(g, dims, nd - 1, false));
}

/* y = x·wᵀ + b:  dx = g·w,  dw = gᵀ·x over all rows,  db = sum of g's
 * rows. */
static tm_status linear_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__gs s = {0};
    const tm__edge *ex = &n->edges[0], *ew = &n->edges[1];
    const tm_tensor *x = tm__ag_saved(n, 0), *w = tm__ag_saved(n, 1);
    if (ex->needed) finish(&s, tm__gs_keep(&s, tm_matmul(g, w)), ex, &gin[0]);
    if (ew->needed) {
        int64_t out = ew->shape[0], in = ew->shape[1], rows = 1;
        for (int d = 0; d + 1 < tm_ndim(g); d++) rows *= tm_shape(g)[d];
        tm_tensor *g2 = tm__gs_keep(&s, tm_reshape(g, (int64_t[]){rows, out},
                                                   2));
        tm_tensor *x2 = tm__gs_keep(&s, tm_reshape(x, (int64_t[]){rows, in},
                                                   2));
        finish(&s, gemm_new(&s, true, false, g2, x2, ew->shape, 2,
                            tm_dtype_of(g)),
               ew, &gin[1]);
    }
    if (n->nin > 2 && n->edges[2].needed)
        finish(&s, sum_rows(&s, g), &n->edges[2], &gin[2]);
    return tm__gs_done(&s, n->name);
}

tm_status tm__grad_linear_record(const tm_tensor *x, const tm_tensor *w,
                                 const tm_tensor *bias, tm_tensor *out)
{
    const tm_tensor *ins[3] = {x, w, bias};
    if (!tm__ag_needed(bias ? 3 : 2, ins)) return TM_OK;
    tm__node *n = tm__ag_node("LinearBackward", linear_backward,
                              bias ? 3 : 2, ins);
    if (!n) return tm_last_status();
    if ((n->edges[1].needed && tm__ag_save(n, 0, x)) ||
        (n->edges[0].needed && tm__ag_save(n, 1, w))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* --------------------------------------------------------------- softmax */

/* softmax: dx = y (g - sum(g y));  log_softmax: dx = g - exp(y) sum(g).
 * Saved: the output y.  i[0] the dim, i[1] log. */
static tm_status softmax_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__gs s = {0};
    const tm_tensor *y = tm__ag_saved(n, 0);
    int d = (int)n->i[0];
    tm_tensor *r;
    if (n->i[1]) {
        tm_tensor *sg = tm__gs_keep(&s, tm_sum(g, &d, 1, true));
        tm_tensor *p = tm__gs_keep(&s, tm_exp(y));
        tm_tensor *q = tm__gs_keep(&s, tm_mul(p, sg));
        r = tm__gs_keep(&s, tm_sub(g, q));
    } else {
        tm_tensor *gy = tm__gs_keep(&s, tm_mul(g, y));
        tm_tensor *sg = tm__gs_keep(&s, tm_sum(gy, &d, 1, true));
        tm_tensor *q = tm__gs_keep(&s, tm_sub(g, sg));
        r = tm__gs_keep(&s, tm_mul(y, q));
    }
    if (r) gin[0] = tm_retain(r);
    return tm__gs_done(&s, n->name);
}

tm_status tm__grad_softmax_record(const tm_tensor *t, int d, bool log,
                                  tm_tensor *out)
{
    if (!tm__ag_needed(1, &t)) return TM_OK;
    tm__node *n = tm__ag_node(log ? "LogSoftmaxBackward" : "SoftmaxBackward",
                              softmax_backward, 1, &t);
    if (!n) return tm_last_status();
    n->i[0] = d;
    n->i[1] = log;
    if (tm__ag_save(n, 0, out)) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}

/* ------------------------------------------------- layer_norm, rms_norm */

/* With xhat = (x - mean) rstd (layer_norm) or x rstd (rms_norm) and
 * gy = g w:
 *   dx = rstd (gy - mean(gy) - xhat mean(gy xhat))   (no mean(gy): rms)
 *   dw = sum of g xhat over the rows,  db = sum of g over the rows.
 * mean and rstd are recomputed from the saved input, in F32 for F16/BF16
 * (as the forward kernel computes).  Saved: x (slot 0), weight (slot 1);
 * d[0] eps, i[0] rms. */
/* F32/F64: the backend's fused kernel (one pass per row, no temporaries
 * of the input's size besides dx). */
static tm_status norm_backward_fused(tm__node *n, const tm_tensor *g,
                                     tm_tensor **gin)
{
    const tm_tensor *xs = tm__ag_saved(n, 0), *ws = tm__ag_saved(n, 1);
    tm_tensor *x = tm_contiguous(xs), *gc = tm_contiguous(g);
    tm_tensor *w = ws ? tm_contiguous(ws) : NULL;
    tm_tensor *out[3] = {NULL, NULL, NULL};
    tm_status st = TM_OK;
    if (!x || !gc || (ws && !w)) {
        st = tm_last_status();
        goto done;
    }
    for (int i = 0; i < n->nin && i < 3; i++) {
        const tm__edge *e = &n->edges[i];
        if (!e->needed) continue;
        out[i] = tm_empty(e->shape, e->ndim, e->dtype);
        if (!out[i]) {
            st = tm_last_status();
            goto done;
        }
    }
    const tm_backend *be = tm__backend(x, n->name);
    if (!be) {
        st = tm_last_status();
        goto done;
    }
    tm_buf none = {0};
    tm_buf bx = tm__buf(x), bg = tm__buf(gc), bw = w ? tm__buf(w) : none;
    tm_buf bo[3];
    for (int i = 0; i < 3; i++) bo[i] = out[i] ? tm__buf(out[i]) : none;
    st = be->norm_rows_backward(&bo[0], &bo[1], &bo[2], &bg, &bx, &bw,
                                n->d[0], n->i[0] != 0);
done:
    for (int i = 0; i < 3; i++) {
        if (st) tm_free(out[i]);
        else gin[i] = out[i];
    }
    tm_free(x);
    tm_free(gc);
    tm_free(w);
    return st;
}

static tm_status norm_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    if (n->edges[0].dtype == TM_F32 || n->edges[0].dtype == TM_F64)
        return norm_backward_fused(n, g, gin);
    tm__gs s = {0};
    const tm__edge *ex = &n->edges[0];
    tm_dtype dt = ex->dtype;
    tm_dtype cd = dt == TM_F16 || dt == TM_BF16 ? TM_F32 : dt;
    bool rms = n->i[0];
    double eps = n->d[0];
    int last = -1;
    tm_tensor *x = tm__gs_keep(&s, tm__gs_as(tm__ag_saved(n, 0), cd));
    tm_tensor *gc = tm__gs_keep(&s, tm__gs_as(g, cd));
    tm_tensor *w = NULL, *xc = x;
    if (tm__ag_saved(n, 1))
        w = tm__gs_keep(&s, tm__gs_as(tm__ag_saved(n, 1), cd));
    if (!rms) {
        tm_tensor *mu = tm__gs_keep(&s, tm_mean(x, &last, 1, true));
        xc = tm__gs_keep(&s, tm_sub(x, mu));
    }
    tm_tensor *sq = tm__gs_keep(&s, tm_mul(xc, xc));
    tm_tensor *var = tm__gs_keep(&s, tm_mean(sq, &last, 1, true));
    tm_tensor *ve = tm__gs_keep(&s, tm_add_scalar(var, eps));
    tm_tensor *rstd = tm__gs_keep(&s, tm_rsqrt(ve));
    tm_tensor *xhat = tm__gs_keep(&s, tm_mul(xc, rstd));
    if (ex->needed) {
        tm_tensor *gy = w ? tm__gs_keep(&s, tm_mul(gc, w)) : gc;
        tm_tensor *gx = tm__gs_keep(&s, tm_mul(gy, xhat));
        tm_tensor *m2 = tm__gs_keep(&s, tm_mean(gx, &last, 1, true));
        tm_tensor *xm = tm__gs_keep(&s, tm_mul(xhat, m2));
        tm_tensor *t = tm__gs_keep(&s, tm_sub(gy, xm));
        if (!rms) {
            tm_tensor *m1 = tm__gs_keep(&s, tm_mean(gy, &last, 1, true));
            t = tm__gs_keep(&s, tm_sub(t, m1));
        }
        finish(&s, tm__gs_keep(&s, tm_mul(t, rstd)), ex, &gin[0]);
    }
    if (n->nin > 1 && n->edges[1].needed) {
        tm_tensor *gx = tm__gs_keep(&s, tm_mul(gc, xhat));
        finish(&s, gx ? sum_rows(&s, gx) : NULL, &n->edges[1], &gin[1]);
    }
    if (n->nin > 2 && n->edges[2].needed)
        finish(&s, gc ? sum_rows(&s, gc) : NULL, &n->edges[2], &gin[2]);
    return tm__gs_done(&s, n->name);
}

tm_status tm__grad_norm_record(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias, double eps, bool rms,
                               tm_tensor *out)
{
    const tm_tensor *ins[3] = {x, weight, bias};
    int nin = bias ? 3 : weight ? 2 : 1;
    if (!tm__ag_needed(nin, ins)) return TM_OK;
    tm__node *n = tm__ag_node(rms ? "RmsNormBackward" : "LayerNormBackward",
                              norm_backward, nin, ins);
    if (!n) return tm_last_status();
    n->i[0] = rms;
    n->d[0] = eps;
    if (tm__ag_save(n, 0, x) || (weight && tm__ag_save(n, 1, weight))) {
        tm__ag_node_free(n);
        return tm_last_status();
    }
    return tm__ag_attach(n, out);
}
