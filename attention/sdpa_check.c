/*
 * sdpa_check.c — tm_sdpa's argument checks and the kernel views of its
 * operands: leading dims folded into the batch, unit last strides, the
 * mask broadcast with stride 0 (never expanded to B x H x Tq x Tk).
 */
#include "sdpa_impl.h"

#include <math.h>
#include <stdint.h>

/* Offsets and windows are added to row indices in the kernels: keep every
 * such sum far from int64 overflow. */
#define SDPA_DIAG_MAX ((int64_t)1 << 60)

static tm_status check_float(const char *fn, const tm_tensor *t,
                             const char *what)
{
    if (tm__check_tensor(fn, t, what)) return tm_last_status();
    if (!tm_dtype_is_float(t->dtype))
        return tm__errf(TM_EDTYPE, fn, "%s must have a float dtype, got %s",
                        what, tm_dtype_name(t->dtype));
    if (t->ndim < 3) {
        char s[TM_SHAPE_BUF];
        return tm__errf(TM_ESHAPE, fn, "%s must have at least 3 dims "
                        "(..., heads, seq, dim), got shape %s", what,
                        tm__fmt_shape(t->shape, t->ndim, s, sizeof s));
    }
    return TM_OK;
}

/* The shapes of q, k and v (checked tensors of >= 3 dims) into *g. */
static tm_status check_shapes(const char *fn, const tm_tensor *q,
                              const tm_tensor *k, const tm_tensor *v,
                              tm__sdpa_geom *g)
{
    char sq[TM_SHAPE_BUF], sk[TM_SHAPE_BUF], sv[TM_SHAPE_BUF];
    tm__fmt_shape(q->shape, q->ndim, sq, sizeof sq);
    tm__fmt_shape(k->shape, k->ndim, sk, sizeof sk);
    tm__fmt_shape(v->shape, v->ndim, sv, sizeof sv);
    int nd = q->ndim;
    if (k->ndim != nd || v->ndim != nd)
        return tm__errf(TM_ESHAPE, fn, "q, k and v must have the same "
                        "number of dims, got q %s, k %s, v %s", sq, sk, sv);
    g->nlead = nd - 3;
    g->b = 1;
    for (int i = 0; i < g->nlead; i++) {
        if (k->shape[i] != q->shape[i] || v->shape[i] != q->shape[i])
            return tm__errf(TM_ESHAPE, fn, "the leading (batch) dims of q, "
                            "k and v must be equal, got q %s, k %s, v %s",
                            sq, sk, sv);
        g->lead[i] = q->shape[i];
        g->b *= q->shape[i];
    }
    g->h = q->shape[nd - 3], g->tq = q->shape[nd - 2], g->d = q->shape[nd - 1];
    g->hkv = k->shape[nd - 3], g->tk = k->shape[nd - 2];
    g->dv = v->shape[nd - 1];
    if (k->shape[nd - 1] != g->d)
        return tm__errf(TM_ESHAPE, fn, "q and k must have the same last dim "
                        "(the dot product's), got q %s and k %s (%lld != "
                        "%lld)", sq, sk, (long long)g->d,
                        (long long)k->shape[nd - 1]);
    if (v->shape[nd - 2] != g->tk || v->shape[nd - 3] != g->hkv)
        return tm__errf(TM_ESHAPE, fn, "k and v must have the same heads and "
                        "sequence length (dims -3 and -2), got k %s and v %s",
                        sk, sv);
    if (g->hkv < 1 ? g->h != 0 : g->h % g->hkv != 0)
        return tm__errf(TM_ESHAPE, fn, "the query heads (%lld, q %s) must be "
                        "a multiple of the key/value heads (%lld, k %s)",
                        (long long)g->h, sq, (long long)g->hkv, sk);
    return TM_OK;
}

/* The mask's dtype, device and shape: broadcastable from the right to
 * (..., H, Tq, Tk). */
static tm_status check_mask(const char *fn, const tm_tensor *m,
                            const tm_tensor *q, const tm__sdpa_geom *g)
{
    char sm[TM_SHAPE_BUF], sf[TM_SHAPE_BUF];
    int64_t full[TM_MAX_DIMS];
    int nd = g->nlead + 3;
    for (int i = 0; i < g->nlead; i++) full[i] = g->lead[i];
    full[nd - 3] = g->h, full[nd - 2] = g->tq, full[nd - 1] = g->tk;
    if (m->dtype != TM_BOOL && !tm_dtype_is_float(m->dtype))
        return tm__errf(TM_EDTYPE, fn, "the mask must be BOOL (true = takes "
                        "part) or a float dtype (added to the scores), got "
                        "%s", tm_dtype_name(m->dtype));
    const tm_tensor *ts[2] = {q, m};
    if (tm__check_same_device(fn, ts, 2)) return tm_last_status();
    bool ok = m->ndim <= nd;
    for (int i = 0; ok && i < m->ndim; i++) {
        int64_t ms = m->shape[m->ndim - 1 - i], fs = full[nd - 1 - i];
        ok = ms == 1 || ms == fs;
    }
    if (!ok)
        return tm__errf(TM_ESHAPE, fn, "the mask %s does not broadcast to "
                        "the scores' shape %s (..., H, Tq, Tk)",
                        tm__fmt_shape(m->shape, m->ndim, sm, sizeof sm),
                        tm__fmt_shape(full, nd, sf, sizeof sf));
    return TM_OK;
}

tm_status tm__sdpa_check(const char *fn, const tm_tensor *q,
                         const tm_tensor *k, const tm_tensor *v,
                         const tm_sdpa_opts *o, tm__sdpa_geom *g,
                         tm_attn_params *p)
{
    if (check_float(fn, q, "q") || check_float(fn, k, "k") ||
        check_float(fn, v, "v"))
        return tm_last_status();
    const tm_tensor *ts[3] = {q, k, v};
    if (tm__check_same_device(fn, ts, 3) || check_shapes(fn, q, k, v, g))
        return tm_last_status();
    if (o->mask && check_mask(fn, o->mask, q, g)) return tm_last_status();
    if (o->impl != TM_SDPA_AUTO && o->impl != TM_SDPA_FUSED &&
        o->impl != TM_SDPA_COMPOSED)
        return tm__errf(TM_EINVAL, fn, "impl must be TM_SDPA_AUTO, _FUSED or "
                        "_COMPOSED, got %d", (int)o->impl);
    if (o->window < 0 || o->window > SDPA_DIAG_MAX)
        return tm__errf(TM_EINVAL, fn, "window must be in [0, 2^60] (0: "
                        "none), got %lld", (long long)o->window);
    if (o->causal_offset < -SDPA_DIAG_MAX || o->causal_offset > SDPA_DIAG_MAX)
        return tm__errf(TM_EINVAL, fn, "causal_offset must be within "
                        "+-2^60, got %lld", (long long)o->causal_offset);
    if (!(o->dropout_p >= 0.0 && o->dropout_p < 1.0))
        return tm__errf(TM_EINVAL, fn, "dropout_p must be in [0, 1), got %g",
                        o->dropout_p);
    if (!isfinite(o->scale))
        return tm__errf(TM_EINVAL, fn, "scale must be finite (0: 1/sqrt(D)), "
                        "got %g", o->scale);
    if (o->scale == 0.0 && g->d == 0)
        return tm__errf(TM_ESHAPE, fn, "the default scale 1/sqrt(D) needs a "
                        "head dim D >= 1, got D = 0");
    int64_t n;
    if (o->dropout_p > 0.0 &&
        (__builtin_mul_overflow(g->b, g->h, &n) ||
         __builtin_mul_overflow(n, g->tq, &n) ||
         __builtin_mul_overflow(n, g->tk, &n)))
        return tm__errf(TM_EOVERFLOW, fn, "dropout numbers every weight of "
                        "B x H x Tq x Tk = %lld x %lld x %lld x %lld, which "
                        "overflows int64", (long long)g->b, (long long)g->h,
                        (long long)g->tq, (long long)g->tk);
    *p = (tm_attn_params){o->scale != 0.0 ? o->scale
                                          : 1.0 / sqrt((double)g->d),
                          o->causal, o->causal_offset,
                          o->window, o->dropout_p, {0, 0}};
    return TM_OK;
}

/* ---------------------------------------------------------- operands */

/* The leading nlead dims of (shape, strides) as one dim of *n elements
 * with stride *st; false when their strides do not allow it. */
static bool fold_lead(const int64_t *shape, const int64_t *strides,
                      int nlead, int64_t *n, int64_t *st)
{
    int64_t total = 1, size = 1, stride = 0;
    bool have = false, ok = true;
    for (int i = nlead - 1; i >= 0; i--) {
        total *= shape[i];
        if (shape[i] == 1) continue;
        if (!have) {
            stride = strides[i], size = shape[i], have = true;
            continue;
        }
        if (strides[i] != stride * size) ok = false;
        size *= shape[i];
    }
    *n = total;
    *st = stride;
    return ok || total == 0;
}

/* The 4-d view of t (nlead leading dims, then three) if its strides allow
 * one; false otherwise. */
static bool view4(const tm_tensor *t, int nlead, tm_buf *b)
{
    int64_t n, st;
    int nd = t->ndim;
    if (!fold_lead(t->shape, t->strides, nlead, &n, &st)) return false;
    if (t->shape[nd - 1] > 1 && t->strides[nd - 1] != 1) return false;
    *b = tm__buf(t);
    b->ndim = 4;
    b->shape[0] = n, b->strides[0] = st;
    for (int i = 1; i < 4; i++) {
        b->shape[i] = t->shape[nd - 4 + i];
        b->strides[i] = t->strides[nd - 4 + i];
    }
    b->strides[3] = 1;
    return true;
}

tm_status tm__sdpa_operand(const char *fn, const tm_tensor *t, tm_dtype dt,
                           int nlead, tm__sdpa_opnd *o)
{
    bool prev = tm_no_grad_begin();
    tm_tensor *c = dt != t->dtype ? tm_to_dtype(t, dt) : tm_retain((tm_tensor *)t);
    if (c && !view4(c, nlead, &o->b)) {
        tm_tensor *d = tm_contiguous(c);
        tm_free(c);
        c = d;
        if (c && !view4(c, nlead, &o->b)) {
            tm_free(c);
            c = NULL;
            tm__errf(TM_ESTATE, fn, "internal error: a contiguous operand "
                     "has no 4-d view");
        }
    }
    tm_no_grad_end(prev);
    o->t = c;
    return c ? TM_OK : tm__relabel_error(fn, tm_last_status());
}

/* The mask's sizes and strides aligned to the nd dims of the scores
 * (size 1, stride 0 where it has no dim or broadcasts). */
static void mask_align(const tm_tensor *m, int nd, int64_t *ms, int64_t *mst)
{
    for (int i = 0; i < nd; i++) {
        int j = m->ndim - nd + i;
        ms[i] = j >= 0 ? m->shape[j] : 1;
        mst[i] = j >= 0 && ms[i] != 1 ? m->strides[j] : 0;
    }
}

/* A contiguous copy of m expanded to shape[nd]. */
static tm_tensor *mask_dense(const tm_tensor *m, const int64_t *shape, int nd)
{
    tm_tensor *e = tm_expand(m, shape, nd);
    tm_tensor *c = e ? tm_contiguous(e) : NULL;
    tm_free(e);
    return c;
}

tm_status tm__sdpa_mask_operand(const char *fn, const tm_tensor *mask,
                                const tm__sdpa_geom *g, tm_dtype ct,
                                bool as_float, tm__sdpa_opnd *o)
{
    int nd = g->nlead + 3;
    int64_t ms[TM_MAX_DIMS], mst[TM_MAX_DIMS], n, st = 0;
    tm_tensor *c = NULL, *zero = NULL, *ninf = NULL;
    bool prev = tm_no_grad_begin();
    if (mask->dtype == TM_BOOL && as_float) {
        zero = tm__scalar_on(fn, 0.0, ct, tm_device_of(mask));
        ninf = tm__scalar_on(fn, -INFINITY, ct, tm_device_of(mask));
        c = zero && ninf ? tm_where(mask, zero, ninf) : NULL;
    } else if (mask->dtype != TM_BOOL && mask->dtype != ct) {
        c = tm_to_dtype(mask, ct);
    } else {
        c = tm_retain((tm_tensor *)mask);
    }
    if (!c) goto fail;
    mask_align(c, nd, ms, mst);
    /* Kernels read a mask row with unit stride: a mask broadcast over the
     * keys (or strided along them) is expanded along that dim only. */
    if ((ms[nd - 1] == 1 && g->tk > 1) || (ms[nd - 1] > 1 && mst[nd - 1] != 1)) {
        ms[nd - 1] = g->tk;
        tm_tensor *d = mask_dense(c, ms, nd);
        tm_free(c);
        if (!(c = d)) goto fail;
        mask_align(c, nd, ms, mst);
    }
    /* Leading dims that broadcast unevenly (a stride-0 dim inside strided
     * ones) have no single batch stride: that part alone is expanded. */
    if (!fold_lead(g->lead, mst, g->nlead, &n, &st)) {
        for (int i = 0; i < g->nlead; i++) ms[i] = g->lead[i];
        tm_tensor *d = mask_dense(c, ms, nd);
        tm_free(c);
        if (!(c = d)) goto fail;
        mask_align(c, nd, ms, mst);
        fold_lead(g->lead, mst, g->nlead, &n, &st);
    }
    o->t = c;
    o->b = tm__buf(c);
    o->b.ndim = 4;
    int64_t full[4] = {g->b, g->h, g->tq, g->tk};
    o->b.shape[0] = full[0];
    o->b.strides[0] = st;
    for (int i = 1; i < 4; i++) {
        o->b.shape[i] = full[i];
        o->b.strides[i] = mst[nd - 4 + i];
    }
    o->b.strides[3] = 1;
    tm_free(zero), tm_free(ninf);
    tm_no_grad_end(prev);
    return TM_OK;
fail:
    tm_free(zero), tm_free(ninf);
    tm_no_grad_end(prev);
    o->t = NULL;
    return tm__relabel_error(fn, tm_last_status());
}

/* ---------------------------------------------------------- dispatch */

/* AUTO's rule, from back-to-back runs of both paths (B x H x T x 64, F32,
 * 2 threads, the tiled CPU kernels): the fused forward wins at every size
 * (2-5x at T <= 8, where the composed path's five ops each cost a few
 * microseconds); forward + backward, the fused backward's per-head set-up
 * dominates when each head has at most 3 x 3 scores and there are many
 * heads (B x H >= 64: composed 1.5-1.9x faster at T = 1..3), while at
 * T = 4 the fused path already wins.  Retune here alone. */
#define SDPA_COMPOSED_MAX_SCORES 9
#define SDPA_COMPOSED_MIN_HEADS 64

bool tm__sdpa_prefer_composed(const tm__sdpa_geom *g, bool grad)
{
    return grad && g->tq * g->tk <= SDPA_COMPOSED_MAX_SCORES &&
           g->b * g->h >= SDPA_COMPOSED_MIN_HEADS;
}
