/*
 * sdpa_composed.c — the composed path of tm_sdpa: matmul, scale, mask,
 * softmax, dropout and matmul as ordinary differentiable ops, so autograd
 * runs through their own nodes.  It materialises the (B, H, Tq, Tk)
 * weights: AUTO takes it only for tiny problems, where one fused call's
 * set-up costs more than a few small ops (tm__sdpa_prefer_composed).
 *
 * It keeps the fused path's semantics exactly: the same visible keys,
 * rows that see nothing give 0 (softmax alone would give NaN there), and
 * dropout keeps the same weights (tm_uniform_ over an F32 (B, H, Tq, Tk)
 * tensor from the same generator state is the contract's definition).
 * Grouped-query heads read k and v through a broadcast view: q is viewed
 * as (..., Hkv, H / Hkv, Tq, D) against k as (..., Hkv, 1, Tk, D).
 */
#include "sdpa_impl.h"

#include <math.h>
#include <string.h>

/* The causal / window keep-mask (Tq, Tk) BOOL on dev, or NULL (kept in
 * *out) when neither applies. */
static tm_status diag_keep(tm__scratch *s, const tm__sdpa_geom *g,
                           const tm_attn_params *p, tm_device dev,
                           tm_tensor **out)
{
    *out = NULL;
    if (!p->causal && p->window <= 0) return TM_OK;
    tm_tensor *ii = tm__sc_keep(s, tm_arange(0, (double)g->tq, 1, TM_I64));
    tm_tensor *ic = ii ? tm__sc_keep(s, tm_reshape(ii, (int64_t[]){g->tq, 1},
                                                   2))
                       : NULL;
    tm_tensor *jj = tm__sc_keep(s, tm_arange(0, (double)g->tk, 1, TM_I64));
    /* diff[i, j] = j - i, exact in I64 */
    tm_tensor *diff = tm__sc_binary(s, TM_OP_SUB, jj, ic);
    tm_tensor *keep = NULL;
    /* beyond +-(Tq + Tk) every diagonal is the same: clamp so the bound
     * stays an exact double */
    int64_t lim = g->tq + g->tk + 1, hi = p->offset, lo = p->offset - p->window;
    hi = hi > lim ? lim : hi < -lim ? -lim : hi;
    lo = lo > lim ? lim : lo < -lim ? -lim : lo;
    if (p->causal) keep = tm__sc_scalar(s, TM_OP_LE, diff, (double)hi);
    if (p->window > 0) {
        tm_tensor *w = tm__sc_scalar(s, TM_OP_GT, diff, (double)lo);
        keep = keep ? tm__sc_binary(s, TM_OP_LOGICAL_AND, keep, w) : w;
    }
    if (keep && dev.type != TM_DEVICE_CPU)
        keep = tm__sc_keep(s, tm_to(keep, dev));
    *out = keep;
    return s->st;
}

/* The (B, H, Tq, Tk) dropout factors (0 or 1 / (1 - p)) in dtype ct,
 * viewed at the scores' shape[nd]. */
static tm_tensor *drop_factors(tm__scratch *s, const tm__sdpa_geom *g,
                               const tm_attn_params *p, const int64_t *shape,
                               int nd, tm_dtype ct, tm_device dev)
{
    tm_rng r = p->rng;
    int64_t full[4] = {g->b, g->h, g->tq, g->tk};
    tm_tensor *u = tm__sc_keep(s, tm__tensor_new("tm_sdpa", full, 4, TM_F32,
                                                 dev));
    if (!u || tm_uniform_(u, 0.0, 1.0, &r)) return tm__sc_keep(s, NULL);
    /* the kernels' test: u < (float)(1 - p), compared in F32 */
    tm_tensor *kept = tm__sc_scalar(s, TM_OP_LT, u,
                                    (double)(float)(1.0 - p->dropout_p));
    tm_tensor *one = tm__sc_keep(s, tm__scalar_on("tm_sdpa",
                                                  1.0 / (1.0 - p->dropout_p),
                                                  ct, dev));
    tm_tensor *zero = tm__sc_keep(s, tm__scalar_on("tm_sdpa", 0.0, ct, dev));
    tm_tensor *f = tm__sc_where(s, kept, one, zero);
    return f ? tm__sc_keep(s, tm_reshape(f, shape, nd)) : NULL;
}

/* Rows whose scores s (..., Tq, Tk) are all -inf: (..., Tq, 1) BOOL. */
static tm_tensor *dead_rows(tm__scratch *s, const tm_tensor *sc, int nd)
{
    bool prev = tm_no_grad_begin();
    int last = nd - 1;
    tm_tensor *m = tm__sc_keep(s, tm_max(sc, &last, 1, true));
    tm_tensor *d = tm__sc_scalar(s, TM_OP_EQ, m, -INFINITY);
    tm_no_grad_end(prev);
    return d;
}

tm_tensor *tm__sdpa_composed(const char *fn, const tm_tensor *q,
                             const tm_tensor *k, const tm_tensor *v,
                             const tm_tensor *mask, const tm__sdpa_geom *g,
                             const tm_attn_params *p)
{
    tm__scratch s = {0};
    tm_dtype ct = q->dtype == TM_F64 ? TM_F64 : TM_F32;
    tm_device dev = tm_device_of(q);
    int nl = g->nlead, nd = nl + 3;
    int64_t grp = g->hkv ? g->h / g->hkv : 0;
    int64_t s5[TM_MAX_DIMS], s4[TM_MAX_DIMS];
    tm_tensor *y = NULL, *keep = NULL, *mc = NULL;
    memcpy(s5, g->lead, sizeof(int64_t) * (size_t)nl);
    memcpy(s4, g->lead, sizeof(int64_t) * (size_t)nl);
    /* q as (..., Hkv, G, Tq, D); k, v as (..., Hkv, 1, T, dim) */
    s5[nl] = g->hkv, s5[nl + 1] = grp, s5[nl + 2] = g->tq, s5[nl + 3] = g->d;
    const tm_tensor *qc = tm__sc_cast(&s, q, ct);
    const tm_tensor *kc = tm__sc_cast(&s, k, ct);
    const tm_tensor *vc = tm__sc_cast(&s, v, ct);
    if (s.st) goto done;
    tm_tensor *q5 = tm__sc_keep(&s, tm_reshape(qc, s5, nd + 1));
    tm_tensor *k5 = tm__sc_keep(&s, tm_unsqueeze(kc, nl + 1));
    tm_tensor *v5 = tm__sc_keep(&s, tm_unsqueeze(vc, nl + 1));
    tm_tensor *kt = k5 ? tm__sc_keep(&s, tm_transpose(k5, nd - 1, nd)) : NULL;
    tm_tensor *sc = q5 && kt ? tm__sc_keep(&s, tm_matmul(q5, kt)) : NULL;
    s4[nl] = g->h, s4[nl + 1] = g->tq, s4[nl + 2] = g->tk;
    sc = sc ? tm__sc_keep(&s, tm_reshape(sc, s4, nd)) : NULL;
    sc = tm__sc_scalar(&s, TM_OP_MUL, sc, p->scale);
    if (s.st || diag_keep(&s, g, p, dev, &keep)) goto done;
    if (mask && mask->dtype == TM_BOOL)
        keep = keep ? tm__sc_binary(&s, TM_OP_LOGICAL_AND, keep, mask)
                    : (tm_tensor *)mask;
    if (keep) {
        tm_tensor *hide = tm__sc_unary(&s, TM_OP_LOGICAL_NOT, keep);
        sc = hide ? tm__sc_keep(&s, tm_masked_fill(sc, hide, -INFINITY))
                  : NULL;
    }
    if (mask && mask->dtype != TM_BOOL) {
        mc = (tm_tensor *)tm__sc_cast(&s, mask, ct);
        sc = tm__sc_binary(&s, TM_OP_ADD, sc, mc);
    }
    if (s.st) goto done;
    /* a row that sees nothing: finite scores in, zeros out, and so a zero
     * gradient rather than softmax's NaN */
    tm_tensor *w = sc; /* no key at all: an empty product, zeros */
    if (g->tk > 0) {
        tm_tensor *dead = dead_rows(&s, sc, nd);
        sc = dead ? tm__sc_keep(&s, tm_masked_fill(sc, dead, 0.0)) : NULL;
        w = sc ? tm__sc_keep(&s, tm_softmax(sc, nd - 1)) : NULL;
        w = w ? tm__sc_keep(&s, tm_masked_fill(w, dead, 0.0)) : NULL;
    }
    if (w && p->dropout_p > 0.0) {
        tm_tensor *f = drop_factors(&s, g, p, s4, nd, ct, dev);
        w = tm__sc_binary(&s, TM_OP_MUL, w, f);
    }
    s5[nl + 3] = g->tk;
    tm_tensor *w5 = w ? tm__sc_keep(&s, tm_reshape(w, s5, nd + 1)) : NULL;
    tm_tensor *o5 = w5 ? tm__sc_keep(&s, tm_matmul(w5, v5)) : NULL;
    s4[nl + 2] = g->dv;
    tm_tensor *o = o5 ? tm__sc_keep(&s, tm_reshape(o5, s4, nd)) : NULL;
    if (o) y = o->dtype == q->dtype ? tm_retain(o) : tm_to_dtype(o, q->dtype);
    if (o && !y) tm__sc_keep(&s, NULL);
done:
    if (tm__sc_done(&s, fn)) {
        tm_free(y);
        return NULL;
    }
    return y;
}
