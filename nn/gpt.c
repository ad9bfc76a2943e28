/*
 * gpt.c — the transformer's parameters: creation under Hugging Face names,
 * GPT-2's initialisation, and the model's small accessors
 * (foundry/models.h).  The forward pass is in gpt_forward.c.
 */
#include "gpt_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdio.h>

typedef enum init_kind { INIT_NONE, INIT_NORMAL, INIT_ZEROS, INIT_ONES } init_kind;

typedef struct builder {
    tm_gpt *m;
    bool init;
    tm_rng *rng;
    const char *fn;
    tm_status st;
} builder;

/* A new F32 parameter under `name`, initialised as `kind` says; NULL after
 * the first failure (b->st keeps it). */
static tm_tensor *param(builder *b, const char *name, int64_t d0, int64_t d1,
                        init_kind kind, double std)
{
    if (b->st) return NULL;
    int64_t shape[2] = {d0, d1};
    int ndim = d1 > 0 ? 2 : 1;
    tm_tensor *t = tm_empty(shape, ndim, TM_F32);
    tm_status st = t ? TM_OK : tm_last_status();
    if (!st && b->init) {
        if (kind == INIT_NORMAL) st = tm_init_normal_(t, 0.0, std, b->rng);
        else if (kind == INIT_ZEROS) st = tm_init_zeros_(t);
        else if (kind == INIT_ONES) st = tm_init_ones_(t);
    }
    /* Weight decay only on matrices: biases, norms (and nothing else
     * here has fewer than 2 dims). */
    if (!st) st = tm_params_add(b->m->params, name, t, ndim < 2);
    tm_free(t); /* the set holds the model's reference */
    if (st) {
        b->st = tm__relabel_error(b->fn, st);
        return NULL;
    }
    return t;
}

static void norm_params(builder *b, const char *prefix, tm_tensor **w,
                        tm_tensor **bias)
{
    const tm_gpt_config *c = &b->m->cfg;
    char name[96];
    snprintf(name, sizeof name, "%s.weight", prefix);
    *w = param(b, name, c->d_model, 0, INIT_ONES, 0);
    if (c->norm == TM_GPT_LAYERNORM) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        *bias = param(b, name, c->d_model, 0, INIT_ZEROS, 0);
    }
}

static void linear_params(builder *b, const char *prefix, int64_t out,
                          int64_t in, bool bias, double std, tm_tensor **w,
                          tm_tensor **bt)
{
    char name[96];
    snprintf(name, sizeof name, "%s.weight", prefix);
    *w = param(b, name, out, in, INIT_NORMAL, std);
    if (bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        *bt = param(b, name, out, 0, INIT_ZEROS, 0);
    }
}

static void layer_params(builder *b, int64_t i)
{
    const tm_gpt_config *c = &b->m->cfg;
    tm__gpt_layer *L = &b->m->layers[i];
    int64_t D = c->d_model, hd = b->m->hd;
    double std = c->init_std;
    double res_std = std / sqrt(2.0 * (double)c->n_layers);
    char p[80];
    snprintf(p, sizeof p, "model.layers.%lld.input_layernorm", (long long)i);
    norm_params(b, p, &L->ln1_w, &L->ln1_b);
    static const char *const qkvo[] = {"q", "k", "v", "o"};
    tm_tensor **w[4] = {&L->q_w, &L->k_w, &L->v_w, &L->o_w};
    tm_tensor **bs[4] = {&L->q_b, &L->k_b, &L->v_b, &L->o_b};
    int64_t outs[4] = {c->n_heads * hd, c->n_kv_heads * hd,
                       c->n_kv_heads * hd, D};
    int64_t ins[4] = {D, D, D, c->n_heads * hd};
    for (int k = 0; k < 4; k++) {
        snprintf(p, sizeof p, "model.layers.%lld.self_attn.%s_proj",
                 (long long)i, qkvo[k]);
        linear_params(b, p, outs[k], ins[k], c->attn_bias,
                      k == 3 ? res_std : std, w[k], bs[k]);
    }
    snprintf(p, sizeof p, "model.layers.%lld.post_attention_layernorm",
             (long long)i);
    norm_params(b, p, &L->ln2_w, &L->ln2_b);
    if (c->mlp == TM_GPT_MLP_SWIGLU) {
        snprintf(p, sizeof p, "model.layers.%lld.mlp.gate_proj", (long long)i);
        linear_params(b, p, c->d_ff, D, c->mlp_bias, std, &L->gate_w,
                      &L->gate_b);
    }
    snprintf(p, sizeof p, "model.layers.%lld.mlp.up_proj", (long long)i);
    linear_params(b, p, c->d_ff, D, c->mlp_bias, std, &L->up_w, &L->up_b);
    snprintf(p, sizeof p, "model.layers.%lld.mlp.down_proj", (long long)i);
    linear_params(b, p, D, c->d_ff, c->mlp_bias, res_std, &L->down_w,
                  &L->down_b);
}

tm_gpt *tm__gpt_create(const tm_gpt_config *c, bool init, tm_rng *rng,
                       const char *fn)
{
    tm_status st = tm_gpt_config_check(c);
    if (st) {
        tm__relabel_error(fn, st);
        return NULL;
    }
    tm_gpt *m = tm__calloc(sizeof *m, fn);
    if (!m) return NULL;
    m->cfg = *c;
    m->hd = tm_gpt_config_head_dim(c);
    m->cfg.head_dim = m->hd;
    m->cfg.rope.head_dim = m->hd;
    if (m->cfg.rope.rotary_dim == 0) m->cfg.rope.rotary_dim = m->hd;
    m->training = true;
    m->params = tm_params_new();
    m->layers = tm__calloc(sizeof *m->layers * (size_t)c->n_layers, fn);
    if (!m->params || !m->layers) goto fail;
    if (c->pos == TM_GPT_POS_ROPE && !(m->rope = tm_rope_new(&m->cfg.rope))) {
        tm__relabel_error(fn, tm_last_status());
        goto fail;
    }
    builder b = {m, init, rng, fn, TM_OK};
    m->wte = param(&b, "model.embed_tokens.weight", c->vocab_size,
                   c->d_model, INIT_NORMAL, c->init_std);
    if (c->pos == TM_GPT_POS_LEARNED)
        m->wpe = param(&b, "model.embed_positions.weight", c->context,
                       c->d_model, INIT_NORMAL, c->init_std);
    for (int64_t i = 0; i < c->n_layers && !b.st; i++) layer_params(&b, i);
    norm_params(&b, "model.norm", &m->lnf_w, &m->lnf_b);
    if (c->tie_embeddings)
        m->head = m->wte;
    else
        m->head = param(&b, "lm_head.weight", c->vocab_size, c->d_model,
                        INIT_NORMAL, c->init_std);
    if (b.st) goto fail;
    if (init) m->rng = tm_rng_split(rng);
    return m;
fail:
    tm_gpt_free(m);
    return NULL;
}

tm_gpt *tm_gpt_new(const tm_gpt_config *c, tm_rng *rng)
{
    return tm__gpt_create(c, true, rng, __func__);
}

void tm_gpt_free(tm_gpt *m)
{
    if (!m) return;
    tm_params_free(m->params);
    tm_rope_free(m->rope);
    tm__dealloc(m->layers);
    tm__dealloc(m->store);
    tm__dealloc(m);
}

const tm_gpt_config *tm_gpt_config_of(const tm_gpt *m)
{
    if (!m) {
        TM_ERR(TM_EINVAL, "model is NULL");
        return NULL;
    }
    return &m->cfg;
}

tm_params *tm_gpt_params(const tm_gpt *m)
{
    if (!m) {
        TM_ERR(TM_EINVAL, "model is NULL");
        return NULL;
    }
    return m->params;
}

void tm_gpt_set_training(tm_gpt *m, bool training)
{
    if (m) m->training = training;
}

bool tm_gpt_training(const tm_gpt *m)
{
    return m && m->training;
}

tm_status tm_gpt_set_rng(tm_gpt *m, tm_rng rng)
{
    if (!m) return TM_ERR(TM_EINVAL, "model is NULL");
    m->rng = rng;
    return TM_OK;
}

tm_rng tm_gpt_rng(const tm_gpt *m)
{
    tm_rng zero = {0, 0};
    if (!m) {
        TM_ERR(TM_EINVAL, "model is NULL");
        return zero;
    }
    return m->rng;
}

tm_kv_cache *tm_gpt_cache_new(const tm_gpt *m, int64_t batch,
                              int64_t max_len, tm_dtype dtype)
{
    if (!m) {
        TM_ERR(TM_EINVAL, "model is NULL");
        return NULL;
    }
    if (max_len < 1 || max_len > m->cfg.context) {
        TM_ERR(TM_EINVAL, "max_len %lld is not in [1, context %lld]",
               (long long)max_len, (long long)m->cfg.context);
        return NULL;
    }
    if (batch < 1) {
        TM_ERR(TM_EINVAL, "batch must be >= 1, not %lld", (long long)batch);
        return NULL;
    }
    if (dtype != TM_F32 && dtype != TM_F16 && dtype != TM_BF16) {
        TM_ERR(TM_EDTYPE, "cache dtype must be F32, F16 or BF16, not %s",
               tm_dtype_name(dtype));
        return NULL;
    }
    tm_kv_cache_opts o = {0};
    o.dtype = dtype;
    tm_kv_cache *c = tm_kv_cache_new((int)m->cfg.n_layers, batch,
                                     m->cfg.n_kv_heads, max_len, m->hd, &o);
    if (!c) tm__relabel_error(__func__, tm_last_status());
    return c;
}
