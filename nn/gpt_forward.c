/*
 * gpt_forward.c — the transformer's forward pass and loss
 * (foundry/models.h), composed of the differentiable ops only.
 *
 * Shapes: ids (B,T) -> x (B,T,D); per block q (B,T,H*hd) viewed as
 * (B,H,T,hd) without a copy (tm_sdpa and tm_rope_apply take strided
 * inputs), k and v (B,Hkv,T,hd) read by grouped-query attention in place;
 * the attention output (B,H,T,hd) is made (B,T,H*hd) for o_proj (the one
 * copy per block, as in PyTorch); logits (B,T,V).
 */
#include "gpt_impl.h"

#include "foundry/quantize.h"

#include "foundry/ops.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>

static const char *FN = "tm_gpt_forward";

static tm_tensor *norm(const tm_gpt *m, const tm_tensor *x, tm_tensor *w,
                       tm_tensor *b)
{
    if (m->cfg.norm == TM_GPT_RMSNORM)
        return tm_rms_norm(x, w, m->cfg.norm_eps);
    return tm_layer_norm(x, w, b, m->cfg.norm_eps);
}

/* x -> dropout(x) when training; consumes the caller's reference to x. */
static tm_tensor *drop(tm_gpt *m, tm_tensor *x)
{
    if (!x || !m->training || m->cfg.dropout <= 0) return x;
    tm_tensor *y = tm_dropout(x, m->cfg.dropout, true, &m->rng);
    tm_free(x);
    return y;
}

/* (B,T,n*hd) -> (B,n,T,hd), a view. */
static tm_tensor *heads(const tm_tensor *t, int64_t B, int64_t T, int64_t n,
                        int64_t hd)
{
    int64_t shape[4] = {B, T, n, hd};
    tm_tensor *v = tm_view(t, shape, 4);
    tm_tensor *h = v ? tm_transpose(v, 1, 2) : NULL;
    tm_free(v);
    return h;
}

/* Projects h to heads and applies RoPE at positions start..start+T-1. */
static tm_tensor *project(tm_gpt *m, const tm_tensor *h, tm_tensor *w,
                          tm_tensor *b, int64_t n, int64_t start, bool rope)
{
    const int64_t *s = tm_shape(h);
    tm_tensor *p = tm_linear(h, w, b);
    tm_tensor *t = p ? heads(p, s[0], s[1], n, m->hd) : NULL;
    tm_free(p);
    if (t && rope && m->rope) {
        tm_tensor *r = tm_rope_apply(m->rope, t, start, NULL);
        tm_free(t);
        t = r;
    }
    return t;
}

/* x + o_proj(attention(norm1(x))); a new reference, NULL on failure. */
static tm_tensor *attention(tm_gpt *m, int64_t l, const tm_tensor *x,
                            tm_kv_cache *cache, int64_t start)
{
    const tm__gpt_layer *L = &m->layers[l];
    const tm_gpt_config *c = &m->cfg;
    const int64_t *s = tm_shape(x);
    int64_t B = s[0], T = s[1];
    tm_tensor *h = NULL, *q = NULL, *k = NULL, *v = NULL, *y = NULL,
              *yt = NULL, *ym = NULL, *o = NULL, *out = NULL;
    if (!(h = norm(m, x, L->ln1_w, L->ln1_b))) goto done;
    if (!(q = project(m, h, L->q_w, L->q_b, c->n_heads, start, true)) ||
        !(k = project(m, h, L->k_w, L->k_b, c->n_kv_heads, start, true)) ||
        !(v = project(m, h, L->v_w, L->v_b, c->n_kv_heads, start, false)))
        goto done;
    tm_sdpa_opts o_ = {0};
    if (m->training && c->dropout > 0) {
        o_.dropout_p = c->dropout;
        o_.rng = &m->rng;
    }
    if (cache) {
        y = tm_kv_cache_attend(cache, (int)l, q, k, v, &o_);
    } else {
        o_.causal = true;
        y = tm_sdpa(q, k, v, &o_);
    }
    if (!y || !(yt = tm_transpose(y, 1, 2))) goto done;
    int64_t shape[3] = {B, T, c->n_heads * m->hd};
    if (!(ym = tm_reshape(yt, shape, 3))) goto done;
    if (!(o = drop(m, tm_linear(ym, L->o_w, L->o_b)))) goto done;
    out = tm_add(x, o);
done:
    tm_free(h);
    tm_free(q);
    tm_free(k);
    tm_free(v);
    tm_free(y);
    tm_free(yt);
    tm_free(ym);
    tm_free(o);
    return out;
}

/* x + mlp(norm2(x)). */
static tm_tensor *mlp(tm_gpt *m, int64_t l, const tm_tensor *x)
{
    const tm__gpt_layer *L = &m->layers[l];
    tm_tensor *h = NULL, *u = NULL, *g = NULL, *a = NULL, *d = NULL,
              *out = NULL;
    if (!(h = norm(m, x, L->ln2_w, L->ln2_b))) goto done;
    if (!(u = tm_linear(h, L->up_w, L->up_b))) goto done;
    if (m->cfg.mlp == TM_GPT_MLP_SWIGLU) {
        tm_tensor *gs = NULL;
        if (!(g = tm_linear(h, L->gate_w, L->gate_b)) ||
            !(gs = tm_silu(g)))
            goto done;
        a = tm_mul(gs, u);
        tm_free(gs);
    } else {
        a = m->cfg.mlp == TM_GPT_MLP_GELU ? tm_gelu(u) : tm_gelu_tanh(u);
    }
    if (!a) goto done;
    if (!(d = drop(m, tm_linear(a, L->down_w, L->down_b)))) goto done;
    out = tm_add(x, d);
done:
    tm_free(h);
    tm_free(u);
    tm_free(g);
    tm_free(a);
    tm_free(d);
    return out;
}

static tm_status check_ids(const tm_tensor *ids,
                           const char *what, const char *fn)
{
    if (!ids) return tm__errf(TM_EINVAL, fn, "%s is NULL", what);
    tm_dtype dt = tm_dtype_of(ids);
    if (dt != TM_I64 && dt != TM_I32)
        return tm__errf(TM_EDTYPE, fn, "%s must be %s or %s, not %s", what,
                        tm_dtype_name(TM_I64), tm_dtype_name(TM_I32),
                        tm_dtype_name(dt));
    char sb[TM_SHAPE_BUF];
    if (tm_ndim(ids) != 2 || tm_shape(ids)[0] < 1 || tm_shape(ids)[1] < 1)
        return tm__errf(TM_ESHAPE, fn, "%s must be [B, T] with B, T >= 1, "
                        "not %s", what,
                        tm__fmt_shape(tm_shape(ids), tm_ndim(ids), sb,
                                      sizeof sb));
    return TM_OK;
}

tm_tensor *tm_gpt_forward(tm_gpt *m, const tm_tensor *ids,
                          const tm_gpt_fwd_opts *opts)
{
    if (!m) {
        tm__errf(TM_EINVAL, FN, "model is NULL");
        return NULL;
    }
    if (check_ids(ids, "ids", FN)) return NULL;
    tm_kv_cache *cache = opts ? opts->cache : NULL;
    bool last = opts && opts->last_only;
    int64_t T = tm_shape(ids)[1], start = 0;
    if (cache) {
        if (tm_kv_cache_layers(cache) != m->cfg.n_layers) {
            tm__errf(TM_EINVAL, FN, "cache has %d layers, the model %lld",
                     tm_kv_cache_layers(cache), (long long)m->cfg.n_layers);
            return NULL;
        }
        start = tm_kv_cache_length(cache, 0);
    }
    if (start + T > m->cfg.context) {
        tm__errf(TM_ERANGE, FN, "positions %lld..%lld pass the context %lld",
                 (long long)start, (long long)(start + T - 1),
                 (long long)m->cfg.context);
        return NULL;
    }
    tm_tensor *x = NULL, *pos = NULL, *logits = NULL, *h = NULL,
              *hl = NULL;
    if (!(x = tm_embedding(m->wte, ids))) goto fail;
    if (m->wpe) {
        tm_tensor *sum = NULL;
        if ((pos = tm_narrow(m->wpe, 0, start, T)) &&
            tm_dtype_is_quantized(tm_dtype_of(pos))) {
            /* A quantized table: only the T rows used, dequantized. */
            tm_tensor *d = tm_dequantize(pos, TM_F32);
            tm_free(pos);
            pos = d;
        }
        if (pos) sum = tm_add(x, pos);
        tm_free(x);
        x = sum;
        if (!x) goto fail;
    }
    if (!(x = drop(m, x))) goto fail;
    for (int64_t l = 0; l < m->cfg.n_layers; l++) {
        tm_tensor *a = attention(m, l, x, cache, start);
        tm_free(x);
        x = a ? mlp(m, l, a) : NULL;
        tm_free(a);
        if (!x) goto fail;
    }
    if (!(h = norm(m, x, m->lnf_w, m->lnf_b))) goto fail;
    if (last && T > 1) {
        if (!(hl = tm_narrow(h, 1, T - 1, 1))) goto fail;
    } else {
        hl = tm_retain(h);
    }
    if (!(logits = tm_linear(hl, m->head, NULL))) goto fail;
    tm_free(x);
    tm_free(pos);
    tm_free(h);
    tm_free(hl);
    return logits;
fail:
    tm__relabel_error(FN, tm_last_status());
    {
        /* Keep the error of the failure, not of the undo. */
        tm_status st = tm_last_status();
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tm_last_error());
        if (cache && tm_kv_cache_length(cache, 0) >= 0)
            tm_kv_cache_truncate(cache, start);
        tm_set_error(st, "%s", msg);
    }
    tm_free(x);
    tm_free(pos);
    tm_free(h);
    tm_free(hl);
    return NULL;
}

tm_tensor *tm_gpt_loss(tm_gpt *m, const tm_tensor *ids,
                       const tm_tensor *targets, tm_tensor **logits_out)
{
    const char *fn = __func__;
    if (logits_out) *logits_out = NULL;
    if (!m) {
        tm__errf(TM_EINVAL, fn, "model is NULL");
        return NULL;
    }
    if (check_ids(ids, "ids", fn) || check_ids(targets, "targets", fn))
        return NULL;
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    if (tm_shape(ids)[0] != tm_shape(targets)[0] ||
        tm_shape(ids)[1] != tm_shape(targets)[1]) {
        tm__errf(TM_ESHAPE, fn, "targets %s must have the shape of ids %s",
                 tm__fmt_shape(tm_shape(targets), 2, sa, sizeof sa),
                 tm__fmt_shape(tm_shape(ids), 2, sb, sizeof sb));
        return NULL;
    }
    int64_t BT = tm_shape(ids)[0] * tm_shape(ids)[1];
    int64_t s2[2] = {BT, m->cfg.vocab_size}, s1[1] = {BT};
    tm_tensor *logits = tm_gpt_forward(m, ids, NULL), *l2 = NULL, *t1 = NULL,
              *loss = NULL;
    if (logits && (l2 = tm_reshape(logits, s2, 2)) &&
        (t1 = tm_reshape(targets, s1, 1)))
        loss = tm_cross_entropy(l2, t1, NULL);
    if (!loss) tm__relabel_error(fn, tm_last_status());
    tm_free(l2);
    tm_free(t1);
    if (loss && logits_out) *logits_out = logits;
    else tm_free(logits);
    return loss;
}
