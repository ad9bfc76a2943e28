/*
 * bert.c — BertModel's forward pass (foundry/bert.h), inference only.
 *
 * Shapes: ids/mask [B, T] -> the real tokens packed into x [N, H] (row
 * order: row b's tokens by position, then row b+1's); per layer qkv
 * [N, 3H] read in place as q, k, v [run, heads, L, hd] for each run of
 * consecutive rows of one length L (one tm_sdpa per run: a sorted batch is
 * a few calls), the attention output written back into ctx [N, H]; the
 * feed-forward network on [N, I].  Nothing is computed for padding, so the
 * cost follows the real tokens, not B * T.
 */
#include "bert_impl.h"

#include "foundry/attention.h"
#include "foundry/autograd.h"
#include "foundry/nn_functional.h"
#include "foundry/ops.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

/* t (I64/I32/BOOL, [B, T]) copied to the host as int64, or NULL + error. */
static int64_t *host_ints(const tm_tensor *t, const char *what, int64_t B,
                          int64_t T, bool allow_bool, const char *fn)
{
    tm_dtype dt = tm_dtype_of(t);
    if (dt != TM_I64 && dt != TM_I32 && !(allow_bool && dt == TM_BOOL)) {
        tm__errf(TM_EDTYPE, fn, "%s must be I64 or I32%s, not %s", what,
                 allow_bool ? " or BOOL" : "", tm_dtype_name(dt));
        return NULL;
    }
    if (tm_ndim(t) != 2 || tm_shape(t)[0] != B || tm_shape(t)[1] != T) {
        char a[TM_SHAPE_BUF];
        tm__errf(TM_ESHAPE, fn, "%s has shape %s, ids are [%lld,%lld]", what,
                 tm__fmt_shape(tm_shape(t), tm_ndim(t), a, sizeof a),
                 (long long)B, (long long)T);
        return NULL;
    }
    int64_t *out = malloc((size_t)(B * T) * sizeof *out + 1);
    if (!out) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        return NULL;
    }
    tm_status st = tm_copy_to_buffer(t, out, (size_t)(B * T) * sizeof *out,
                                     TM_I64);
    if (st) {
        free(out);
        tm__errf(st, fn, "reading %s: %s", what, tm_last_error());
        return NULL;
    }
    return out;
}

static tm_tensor *index_tensor(const int64_t *v, int64_t n)
{
    int64_t shape[1] = {n};
    return tm_from_buffer(v, shape, 1, TM_I64);
}

/* word[ids] + pos[posn] + type[tids], LayerNorm: [N, H]. */
static tm_tensor *embed(const tm_bert *m, const int64_t *wid,
                        const int64_t *posn, const int64_t *tid, int64_t N)
{
    tm_tensor *iw = index_tensor(wid, N), *ip = index_tensor(posn, N),
              *it = tid ? index_tensor(tid, N) : NULL;
    tm_tensor *w = NULL, *p = NULL, *t = NULL, *s = NULL, *s2 = NULL,
              *out = NULL;
    if (!iw || !ip || (tid && !it)) goto done;
    if (!(w = tm_index_select(m->word, 0, iw)) ||
        !(p = tm_index_select(m->pos, 0, ip)) ||
        !(t = it ? tm_index_select(m->type, 0, it) : tm_select(m->type, 0, 0)) ||
        !(s = tm_add(w, p)) || !(s2 = tm_add(s, t)))
        goto done;
    out = tm_layer_norm(s2, m->eln_w, m->eln_b, m->cfg.layer_norm_eps);
done:
    tm_free(iw);
    tm_free(ip);
    tm_free(it);
    tm_free(w);
    tm_free(p);
    tm_free(t);
    tm_free(s);
    tm_free(s2);
    return out;
}

/* q, k or v (which = 0, 1, 2) of rows r0 .. r0 + n*L of qkv [N, 3H], as
 * [n, heads, L, hd]: a view. */
static tm_tensor *head_view(const tm_tensor *qkv, int64_t r0, int64_t n,
                            int64_t L, int64_t nh, int64_t hd, int which)
{
    tm_tensor *rows = tm_narrow(qkv, 0, r0, n * L);
    int64_t shape[5] = {n, L, 3, nh, hd};
    tm_tensor *v = rows ? tm_view(rows, shape, 5) : NULL;
    tm_tensor *s = v ? tm_select(v, 2, which) : NULL;
    tm_tensor *t = s ? tm_transpose(s, 1, 2) : NULL;
    tm_free(rows);
    tm_free(v);
    tm_free(s);
    return t;
}

/* Self-attention of every row over its own tokens: ctx [N, H]. */
static tm_tensor *attend(const tm_bert *m, const tm_tensor *qkv,
                         const int64_t *off, int64_t B, int64_t N)
{
    int64_t H = m->cfg.hidden_size, nh = m->cfg.num_attention_heads,
            hd = H / nh;
    int64_t shape[2] = {N, H};
    tm_tensor *ctx = tm_empty(shape, 2, TM_F32);
    if (!ctx) return NULL;
    for (int64_t b = 0; b < B;) {
        int64_t L = off[b + 1] - off[b], e = b + 1;
        while (e < B && off[e + 1] - off[e] == L) e++;
        if (L == 0) {
            b = e;
            continue;
        }
        int64_t n = e - b, r0 = off[b];
        tm_tensor *q = head_view(qkv, r0, n, L, nh, hd, 0),
                  *k = head_view(qkv, r0, n, L, nh, hd, 1),
                  *v = head_view(qkv, r0, n, L, nh, hd, 2);
        tm_tensor *y = q && k && v ? tm_sdpa(q, k, v, NULL) : NULL;
        /* ctx rows of the run as [n, heads, L, hd], written through. */
        tm_tensor *dst = NULL, *rows = y ? tm_narrow(ctx, 0, r0, n * L) : NULL;
        int64_t s4[4] = {n, L, nh, hd};
        tm_tensor *r4 = rows ? tm_view(rows, s4, 4) : NULL;
        dst = r4 ? tm_transpose(r4, 1, 2) : NULL;
        tm_status st = dst ? tm_copy_(dst, y) : TM_ENOMEM;
        tm_free(q);
        tm_free(k);
        tm_free(v);
        tm_free(y);
        tm_free(rows);
        tm_free(r4);
        tm_free(dst);
        if (st) {
            if (tm_last_status() == TM_OK) TM_ERR(TM_ENOMEM, "out of memory");
            tm_free(ctx);
            return NULL;
        }
        b = e;
    }
    return ctx;
}

static tm_tensor *act(const tm_bert *m, const tm_tensor *h)
{
    switch (m->cfg.hidden_act) {
    case TM_BERT_GELU_TANH: return tm_gelu_tanh(h);
    case TM_BERT_RELU: return tm_relu(h);
    default: return tm_gelu(h);
    }
}

/* One post-LayerNorm encoder layer; consumes nothing, returns new x. */
static tm_tensor *layer(const tm_bert *m, const tm__bert_layer *y,
                        const tm_tensor *x, const int64_t *off, int64_t B,
                        int64_t N)
{
    double eps = m->cfg.layer_norm_eps;
    tm_tensor *qkv = NULL, *ctx = NULL, *a = NULL, *s = NULL, *x1 = NULL,
              *h = NULL, *g = NULL, *o = NULL, *s2 = NULL, *out = NULL;
    if (!(qkv = tm_linear(x, y->qkv_w, y->qkv_b)) ||
        !(ctx = attend(m, qkv, off, B, N)) ||
        !(a = tm_linear(ctx, y->ao_w, y->ao_b)) || !(s = tm_add(x, a)) ||
        !(x1 = tm_layer_norm(s, y->ln1_w, y->ln1_b, eps)) ||
        !(h = tm_linear(x1, y->in_w, y->in_b)) || !(g = act(m, h)) ||
        !(o = tm_linear(g, y->out_w, y->out_b)) || !(s2 = tm_add(x1, o)))
        goto done;
    out = tm_layer_norm(s2, y->ln2_w, y->ln2_b, eps);
done:
    tm_free(qkv);
    tm_free(ctx);
    tm_free(a);
    tm_free(s);
    tm_free(x1);
    tm_free(h);
    tm_free(g);
    tm_free(o);
    tm_free(s2);
    return out;
}

tm_tensor *tm__bert_packed(tm_bert *m, const tm_tensor *ids,
                           const tm_tensor *mask, const tm_tensor *type_ids,
                           int64_t **off_out, int64_t **posn_out,
                           const char *fn)
{
    *off_out = NULL;
    *posn_out = NULL;
    if (!m || !ids) {
        tm__errf(TM_EINVAL, fn, "%s is NULL", !m ? "model" : "ids");
        return NULL;
    }
    const tm_bert_config *c = &m->cfg;
    if (tm_ndim(ids) != 2 || tm_shape(ids)[0] < 1) {
        char a[TM_SHAPE_BUF];
        tm__errf(TM_ESHAPE, fn, "ids must be [B, T] with B >= 1, not %s",
                 tm__fmt_shape(tm_shape(ids), tm_ndim(ids), a, sizeof a));
        return NULL;
    }
    int64_t B = tm_shape(ids)[0], T = tm_shape(ids)[1];
    if (T > c->max_position_embeddings) {
        tm__errf(TM_ESHAPE, fn,
                 "ids have %lld positions, the model at most %lld",
                 (long long)T, (long long)c->max_position_embeddings);
        return NULL;
    }
    int64_t *id = NULL, *mk = NULL, *tt = NULL, *off = NULL, *posn = NULL,
            *wid = NULL, *tid = NULL;
    tm_tensor *x = NULL;
    bool prev = tm_no_grad_begin();
    if (!(id = host_ints(ids, "ids", B, T, false, fn)) ||
        (mask && !(mk = host_ints(mask, "mask", B, T, true, fn))) ||
        (type_ids && !(tt = host_ints(type_ids, "type_ids", B, T, false, fn))))
        goto fail;
    size_t cells = (size_t)(B * T) + 1;
    off = malloc((size_t)(B + 1) * sizeof *off);
    posn = malloc(cells * sizeof *posn);
    wid = malloc(cells * sizeof *wid);
    tid = tt ? malloc(cells * sizeof *tid) : NULL;
    if (!off || !posn || !wid || (tt && !tid)) {
        tm__errf(TM_ENOMEM, fn, "out of memory");
        goto fail;
    }
    int64_t N = 0;
    for (int64_t b = 0; b < B; b++) {
        off[b] = N;
        for (int64_t t = 0; t < T; t++) {
            int64_t i = b * T + t;
            if (mk && !mk[i]) continue;
            if (id[i] < 0 || id[i] >= c->vocab_size) {
                tm__errf(TM_ERANGE, fn,
                         "ids[%lld][%lld] = %lld is outside [0, %lld)",
                         (long long)b, (long long)t, (long long)id[i],
                         (long long)c->vocab_size);
                goto fail;
            }
            if (tt && (tt[i] < 0 || tt[i] >= c->type_vocab_size)) {
                tm__errf(TM_ERANGE, fn,
                         "type_ids[%lld][%lld] = %lld is outside [0, %lld)",
                         (long long)b, (long long)t, (long long)tt[i],
                         (long long)c->type_vocab_size);
                goto fail;
            }
            wid[N] = id[i];
            posn[N] = t;
            if (tid) tid[N] = tt[i];
            N++;
        }
    }
    off[B] = N;
    if (N == 0) {
        int64_t shape[2] = {0, c->hidden_size};
        x = tm_zeros(shape, 2, TM_F32);
    } else {
        x = embed(m, wid, posn, tid, N);
        for (int64_t l = 0; x && l < c->num_hidden_layers; l++) {
            tm_tensor *nx = layer(m, &m->layers[l], x, off, B, N);
            tm_free(x);
            x = nx;
        }
    }
    if (!x) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    free(id);
    free(mk);
    free(tt);
    free(wid);
    free(tid);
    tm_no_grad_end(prev);
    *off_out = off;
    *posn_out = posn;
    return x;
fail:
    free(id);
    free(mk);
    free(tt);
    free(off);
    free(posn);
    free(wid);
    free(tid);
    tm_free(x);
    tm_no_grad_end(prev);
    return NULL;
}

tm_tensor *tm_bert_forward(tm_bert *m, const tm_tensor *ids,
                           const tm_tensor *mask, const tm_tensor *type_ids)
{
    const char *fn = __func__;
    int64_t *off = NULL, *posn = NULL;
    tm_tensor *x = tm__bert_packed(m, ids, mask, type_ids, &off, &posn, fn);
    if (!x) return NULL;
    int64_t B = tm_shape(ids)[0], T = tm_shape(ids)[1],
            H = m->cfg.hidden_size;
    int64_t shape[3] = {B, T, H};
    tm_tensor *out = tm_zeros(shape, 3, TM_F32);
    tm_status st = out ? TM_OK : tm_last_status();
    /* Copies each run of consecutive positions (a whole row when the mask
     * is a prefix) with one call. */
    for (int64_t b = 0; !st && b < B; b++)
        for (int64_t r = off[b]; !st && r < off[b + 1];) {
            int64_t e = r + 1;
            while (e < off[b + 1] && posn[e] == posn[e - 1] + 1) e++;
            tm_tensor *row = tm_select(out, 0, b);
            tm_tensor *dst = row ? tm_narrow(row, 0, posn[r], e - r) : NULL;
            tm_tensor *src = dst ? tm_narrow(x, 0, r, e - r) : NULL;
            st = src ? tm_copy_(dst, src) : tm_last_status();
            if (!st && !src) st = TM_ENOMEM;
            tm_free(row);
            tm_free(dst);
            tm_free(src);
            r = e;
        }
    free(off);
    free(posn);
    tm_free(x);
    if (st) {
        tm__relabel_error(fn, st);
        tm_free(out);
        return NULL;
    }
    return out;
}

/* Mean pooling as one product: P [B, N] @ x [N, H], P[b][r] = 1/len_b on
 * row b's tokens (a row without tokens pools to zeros). */
static tm_tensor *pool_mean(const tm_tensor *x, const int64_t *off,
                            int64_t B, int64_t N)
{
    float *p = calloc((size_t)(B * N) + 1, sizeof *p);
    if (!p) {
        TM_ERR(TM_ENOMEM, "out of memory");
        return NULL;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t r = off[b]; r < off[b + 1]; r++)
            p[b * N + r] = 1.0f / (float)(off[b + 1] - off[b]);
    int64_t shape[2] = {B, N};
    tm_tensor *P = tm_from_buffer(p, shape, 2, TM_F32);
    free(p);
    tm_tensor *out = P ? tm_matmul(P, x) : NULL;
    tm_free(P);
    return out;
}

/* CLS or max pooling, row by row into zeros [B, H]. */
static tm_tensor *pool_rows(const tm_tensor *x, const int64_t *off,
                            int64_t B, int64_t H, tm_bert_pool pool)
{
    int64_t shape[2] = {B, H};
    tm_tensor *out = tm_zeros(shape, 2, TM_F32);
    tm_status st = out ? TM_OK : tm_last_status();
    for (int64_t b = 0; !st && b < B; b++) {
        if (off[b + 1] == off[b]) continue;
        tm_tensor *dst = tm_select(out, 0, b), *src = NULL, *rows = NULL;
        if (pool == TM_BERT_POOL_CLS) {
            src = tm_select(x, 0, off[b]);
        } else {
            int d = 0;
            rows = tm_narrow(x, 0, off[b], off[b + 1] - off[b]);
            src = rows ? tm_max(rows, &d, 1, false) : NULL;
        }
        st = dst && src ? tm_copy_(dst, src) : tm_last_status();
        if (!st && !(dst && src)) st = TM_ENOMEM;
        tm_free(dst);
        tm_free(src);
        tm_free(rows);
    }
    if (st) {
        tm_free(out);
        return NULL;
    }
    return out;
}

tm_tensor *tm_bert_pool_embed(tm_bert *m, const tm_tensor *ids,
                              const tm_tensor *mask, tm_bert_pool pool,
                              bool normalize)
{
    const char *fn = __func__;
    if (pool != TM_BERT_POOL_MEAN && pool != TM_BERT_POOL_CLS &&
        pool != TM_BERT_POOL_MAX) {
        tm__errf(TM_EINVAL, fn, "unknown pooling %d", (int)pool);
        return NULL;
    }
    int64_t *off = NULL, *posn = NULL;
    tm_tensor *x = tm__bert_packed(m, ids, mask, NULL, &off, &posn, fn);
    if (!x) return NULL;
    bool prev = tm_no_grad_begin();
    int64_t B = tm_shape(ids)[0], N = tm_shape(x)[0];
    tm_tensor *p = pool == TM_BERT_POOL_MEAN
                       ? pool_mean(x, off, B, N)
                       : pool_rows(x, off, B, m->cfg.hidden_size, pool);
    tm_tensor *out = p;
    if (p && normalize) {
        out = tm_normalize(p, 2.0, 1, 1e-12);
        tm_free(p);
    }
    tm_no_grad_end(prev);
    if (!out) tm__relabel_error(fn, tm_last_status());
    free(off);
    free(posn);
    tm_free(x);
    return out;
}

tm_tensor *tm_bert_embed(tm_bert *m, const tm_tensor *ids,
                         const tm_tensor *mask)
{
    return tm_bert_pool_embed(m, ids, mask, TM_BERT_POOL_MEAN, true);
}
