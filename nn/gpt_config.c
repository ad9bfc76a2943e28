/*
 * gpt_config.c — the transformer's configuration: presets, range checks,
 * and config.json in Hugging Face's LlamaConfig names (foundry/models.h).
 */
#include "foundry/models.h"

#include "../io/json.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- presets */

static tm_gpt_config gpt2_shape(int64_t d, int64_t layers, int64_t heads)
{
    tm_gpt_config c = {
        .vocab_size = 50257, .context = 1024, .d_model = d,
        .n_layers = layers, .n_heads = heads, .n_kv_heads = heads,
        .head_dim = 0, .d_ff = 4 * d, .pos = TM_GPT_POS_LEARNED,
        .rope = tm_rope_defaults(0), .norm = TM_GPT_LAYERNORM,
        .norm_eps = 1e-5, .mlp = TM_GPT_MLP_GELU_TANH, .attn_bias = true,
        .mlp_bias = true, .tie_embeddings = true, .dropout = 0.0,
        .init_std = 0.02, .bos_id = 50256, .eos_id = 50256,
    };
    return c;
}

static tm_gpt_config llama_shape(int64_t V, int64_t ctx, int64_t d,
                                 int64_t layers, int64_t heads, int64_t kv,
                                 int64_t hd, int64_t ff, double theta,
                                 bool tie)
{
    tm_gpt_config c = {
        .vocab_size = V, .context = ctx, .d_model = d, .n_layers = layers,
        .n_heads = heads, .n_kv_heads = kv, .head_dim = hd, .d_ff = ff,
        .pos = TM_GPT_POS_ROPE, .rope = tm_rope_defaults(0),
        .norm = TM_GPT_RMSNORM, .norm_eps = 1e-5, .mlp = TM_GPT_MLP_SWIGLU,
        .attn_bias = false, .mlp_bias = false, .tie_embeddings = tie,
        .dropout = 0.0, .init_std = 0.02, .bos_id = -1, .eos_id = -1,
    };
    c.rope.theta = theta;
    return c;
}

static const char *const preset_names[] = {
    "gpt2", "gpt2-medium", "smollm2-135m", "smollm2-360m", "tinyllama-1.1b",
    "llama3.2-1b", "llama3-8b", "gpt-tiny", "llama-tiny",
};

tm_status tm_gpt_preset(const char *name, tm_gpt_config *out)
{
    if (!name || !out) return TM_ERR(TM_EINVAL, "name or out is NULL");
    tm_gpt_config c;
    if (!strcmp(name, "gpt2")) {
        c = gpt2_shape(768, 12, 12);
    } else if (!strcmp(name, "gpt2-medium")) {
        c = gpt2_shape(1024, 24, 16);
    } else if (!strcmp(name, "gpt-tiny")) {
        c = gpt2_shape(256, 4, 4);
        c.vocab_size = 4096;
        c.context = 256;
        c.bos_id = c.eos_id = -1;
    } else if (!strcmp(name, "smollm2-135m")) {
        c = llama_shape(49152, 8192, 576, 30, 9, 3, 64, 1536, 1e5, true);
        c.init_std = 0.041666666666666664;
        c.bos_id = 0;
        c.eos_id = 0;
    } else if (!strcmp(name, "smollm2-360m")) {
        c = llama_shape(49152, 8192, 960, 32, 15, 5, 64, 2560, 1e5, true);
        c.bos_id = 0;
        c.eos_id = 0;
    } else if (!strcmp(name, "tinyllama-1.1b")) {
        c = llama_shape(32000, 2048, 2048, 22, 32, 4, 64, 5632, 1e4, false);
        c.bos_id = 1;
        c.eos_id = 2;
    } else if (!strcmp(name, "llama3.2-1b")) {
        c = llama_shape(128256, 131072, 2048, 16, 32, 8, 64, 8192, 5e5, true);
        c.rope.scaling = TM_ROPE_SCALING_LLAMA3;
        c.rope.factor = 32.0;
        c.rope.low_freq_factor = 1.0;
        c.rope.high_freq_factor = 4.0;
        c.rope.original_max_positions = 8192;
        c.bos_id = 128000;
        c.eos_id = 128001;
    } else if (!strcmp(name, "llama3-8b")) {
        c = llama_shape(128256, 8192, 4096, 32, 32, 8, 128, 14336, 5e5,
                        false);
        c.bos_id = 128000;
        c.eos_id = 128001;
    } else if (!strcmp(name, "llama-tiny")) {
        c = llama_shape(4096, 256, 256, 4, 4, 2, 0, 768, 1e4, true);
    } else {
        char list[256] = "";
        size_t n = sizeof preset_names / sizeof *preset_names;
        for (size_t i = 0; i < n; i++) {
            strcat(list, preset_names[i]);
            if (i + 1 < n) strcat(list, ", ");
        }
        return TM_ERR(TM_EINVAL, "unknown preset '%.64s' (known: %s)", name,
                      list);
    }
    *out = c;
    return TM_OK;
}

/* ------------------------------------------------------------------ check */

int64_t tm_gpt_config_head_dim(const tm_gpt_config *c)
{
    if (!c) return 0;
    if (c->head_dim > 0) return c->head_dim;
    return c->n_heads > 0 ? c->d_model / c->n_heads : 0;
}

tm_status tm_gpt_config_check(const tm_gpt_config *c)
{
    const char *fn = __func__;
    if (!c) return TM_ERR(TM_EINVAL, "config is NULL");
    const struct { const char *name; int64_t v; } pos[] = {
        {"vocab_size", c->vocab_size}, {"context", c->context},
        {"d_model", c->d_model},       {"n_layers", c->n_layers},
        {"n_heads", c->n_heads},       {"n_kv_heads", c->n_kv_heads},
        {"d_ff", c->d_ff},
    };
    for (size_t i = 0; i < sizeof pos / sizeof *pos; i++)
        if (pos[i].v < 1)
            return tm__errf(TM_EINVAL, fn, "%s must be >= 1, not %lld",
                            pos[i].name, (long long)pos[i].v);
    /* Limits that keep every size product far from int64 overflow. */
    const int64_t big = (int64_t)1 << 31;
    for (size_t i = 0; i < sizeof pos / sizeof *pos; i++)
        if (pos[i].v > big)
            return tm__errf(TM_EINVAL, fn, "%s must be <= 2^31, not %lld",
                            pos[i].name, (long long)pos[i].v);
    if (c->n_layers > 1 << 16)
        return tm__errf(TM_EINVAL, fn, "n_layers must be <= 65536, not %lld",
                        (long long)c->n_layers);
    if (c->head_dim < 0 || c->head_dim > 1 << 16)
        return tm__errf(TM_EINVAL, fn,
                        "head_dim must be in [0, 65536], not %lld",
                        (long long)c->head_dim);
    if (c->head_dim == 0 && c->d_model % c->n_heads)
        return tm__errf(TM_EINVAL, fn,
                        "head_dim is 0 but n_heads %lld does not divide "
                        "d_model %lld",
                        (long long)c->n_heads, (long long)c->d_model);
    if (c->n_heads % c->n_kv_heads)
        return tm__errf(TM_EINVAL, fn,
                        "n_kv_heads %lld does not divide n_heads %lld",
                        (long long)c->n_kv_heads, (long long)c->n_heads);
    int64_t hd = tm_gpt_config_head_dim(c);
    if (hd < 1 || hd > 1 << 16)
        return tm__errf(TM_EINVAL, fn, "head_dim (d_model / n_heads when 0) "
                        "must be in [1, 65536], not %lld", (long long)hd);
    if (c->pos != TM_GPT_POS_LEARNED && c->pos != TM_GPT_POS_ROPE)
        return tm__errf(TM_EINVAL, fn, "pos must be LEARNED or ROPE, not %d",
                        (int)c->pos);
    if (c->norm != TM_GPT_LAYERNORM && c->norm != TM_GPT_RMSNORM)
        return tm__errf(TM_EINVAL, fn,
                        "norm must be LAYERNORM or RMSNORM, not %d",
                        (int)c->norm);
    if (c->mlp != TM_GPT_MLP_GELU_TANH && c->mlp != TM_GPT_MLP_GELU &&
        c->mlp != TM_GPT_MLP_SWIGLU)
        return tm__errf(TM_EINVAL, fn,
                        "mlp must be GELU_TANH, GELU or SWIGLU, not %d",
                        (int)c->mlp);
    if (!(c->norm_eps > 0) || !isfinite(c->norm_eps))
        return tm__errf(TM_EINVAL, fn, "norm_eps must be finite and > 0, "
                        "not %g", c->norm_eps);
    if (!(c->dropout >= 0 && c->dropout < 1))
        return tm__errf(TM_EINVAL, fn, "dropout must be in [0, 1), not %g",
                        c->dropout);
    if (!(c->init_std >= 0) || !isfinite(c->init_std))
        return tm__errf(TM_EINVAL, fn, "init_std must be finite and >= 0, "
                        "not %g", c->init_std);
    if (c->bos_id < -1 || c->bos_id >= c->vocab_size)
        return tm__errf(TM_EINVAL, fn, "bos_id must be -1 or in [0, %lld), "
                        "not %lld", (long long)c->vocab_size,
                        (long long)c->bos_id);
    if (c->eos_id < -1 || c->eos_id >= c->vocab_size)
        return tm__errf(TM_EINVAL, fn, "eos_id must be -1 or in [0, %lld), "
                        "not %lld", (long long)c->vocab_size,
                        (long long)c->eos_id);
    if (c->pos == TM_GPT_POS_ROPE) {
        tm_rope_config r = c->rope;
        r.head_dim = hd;
        if (r.rotary_dim == 0) r.rotary_dim = hd;
        tm_rope *rope = tm_rope_new(&r);
        if (!rope)
            return tm__errf(tm_last_status(), fn, "rope: %s",
                            tm_last_error());
        tm_rope_free(rope);
    }
    return TM_OK;
}

/* ------------------------------------------------------------ JSON writer */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL,
                          b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = true;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->failed = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* A double as JSON: shortest %.17g form that reads back exactly, always
 * with a '.' or exponent so readers keep it a float. */
static void sb_double(sbuf *b, double v)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    if (!strpbrk(tmp, ".eE")) strcat(tmp, ".0");
    sb_printf(b, "%s", tmp);
}

static void sb_id(sbuf *b, const char *key, int64_t id)
{
    if (id < 0) sb_printf(b, ",\n  \"%s\": null", key);
    else sb_printf(b, ",\n  \"%s\": %lld", key, (long long)id);
}

static const char *mlp_name(tm_gpt_mlp m)
{
    return m == TM_GPT_MLP_SWIGLU ? "swiglu"
           : m == TM_GPT_MLP_GELU ? "gelu" : "gelu_tanh";
}

static const char *act_name(tm_gpt_mlp m)
{
    return m == TM_GPT_MLP_SWIGLU ? "silu"
           : m == TM_GPT_MLP_GELU ? "gelu" : "gelu_pytorch_tanh";
}

static bool is_llama_shape(const tm_gpt_config *c)
{
    return c->pos == TM_GPT_POS_ROPE && c->norm == TM_GPT_RMSNORM &&
           c->mlp == TM_GPT_MLP_SWIGLU;
}

static void write_rope(sbuf *b, const tm_rope_config *r)
{
    static const char *const types[] = {"default", "linear", "dynamic",
                                        "yarn", "llama3"};
    if (r->scaling == TM_ROPE_SCALING_NONE) {
        sb_printf(b, ",\n  \"rope_scaling\": null");
        return;
    }
    sb_printf(b, ",\n  \"rope_scaling\": {\"rope_type\": \"%s\", "
              "\"factor\": ", types[r->scaling]);
    sb_double(b, r->factor);
    if (r->original_max_positions > 0)
        sb_printf(b, ", \"original_max_position_embeddings\": %lld",
                  (long long)r->original_max_positions);
    if (r->attention_factor > 0) {
        sb_printf(b, ", \"attention_factor\": ");
        sb_double(b, r->attention_factor);
    }
    if (r->scaling == TM_ROPE_SCALING_LLAMA3) {
        sb_printf(b, ", \"low_freq_factor\": ");
        sb_double(b, r->low_freq_factor);
        sb_printf(b, ", \"high_freq_factor\": ");
        sb_double(b, r->high_freq_factor);
    } else if (r->scaling == TM_ROPE_SCALING_YARN) {
        sb_printf(b, ", \"beta_fast\": ");
        sb_double(b, r->beta_fast);
        sb_printf(b, ", \"beta_slow\": ");
        sb_double(b, r->beta_slow);
        if (r->mscale > 0) {
            sb_printf(b, ", \"mscale\": ");
            sb_double(b, r->mscale);
        }
        if (r->mscale_all_dim > 0) {
            sb_printf(b, ", \"mscale_all_dim\": ");
            sb_double(b, r->mscale_all_dim);
        }
        sb_printf(b, ", \"truncate\": %s",
                  r->yarn_truncate ? "true" : "false");
    }
    sb_printf(b, "}");
}

char *tm_gpt_config_to_json(const tm_gpt_config *c)
{
    if (tm_gpt_config_check(c)) {
        tm__relabel_error(__func__, tm_last_status());
        return NULL;
    }
    int64_t hd = tm_gpt_config_head_dim(c);
    bool llama = is_llama_shape(c);
    sbuf b = {0};
    sb_printf(&b, "{\n  \"model_type\": \"%s\"",
              llama ? "llama" : "foundry_gpt");
    if (llama) sb_printf(&b, ",\n  \"architectures\": [\"LlamaForCausalLM\"]");
    sb_printf(&b, ",\n  \"vocab_size\": %lld", (long long)c->vocab_size);
    sb_printf(&b, ",\n  \"hidden_size\": %lld", (long long)c->d_model);
    sb_printf(&b, ",\n  \"intermediate_size\": %lld", (long long)c->d_ff);
    sb_printf(&b, ",\n  \"num_hidden_layers\": %lld", (long long)c->n_layers);
    sb_printf(&b, ",\n  \"num_attention_heads\": %lld",
              (long long)c->n_heads);
    sb_printf(&b, ",\n  \"num_key_value_heads\": %lld",
              (long long)c->n_kv_heads);
    sb_printf(&b, ",\n  \"head_dim\": %lld", (long long)hd);
    sb_printf(&b, ",\n  \"max_position_embeddings\": %lld",
              (long long)c->context);
    sb_printf(&b, ",\n  \"%s\": ", c->norm == TM_GPT_RMSNORM
                                       ? "rms_norm_eps" : "layer_norm_epsilon");
    sb_double(&b, c->norm_eps);
    if (c->pos == TM_GPT_POS_ROPE) {
        const tm_rope_config *r = &c->rope;
        sb_printf(&b, ",\n  \"rope_theta\": ");
        sb_double(&b, r->theta);
        write_rope(&b, r);
        if (r->rotary_dim != 0 && r->rotary_dim != hd) {
            sb_printf(&b, ",\n  \"partial_rotary_factor\": ");
            sb_double(&b, (double)r->rotary_dim / (double)hd);
        }
        if (r->interleaved) sb_printf(&b, ",\n  \"rope_interleaved\": true");
    }
    sb_printf(&b, ",\n  \"tie_word_embeddings\": %s",
              c->tie_embeddings ? "true" : "false");
    sb_printf(&b, ",\n  \"attention_bias\": %s",
              c->attn_bias ? "true" : "false");
    sb_printf(&b, ",\n  \"mlp_bias\": %s", c->mlp_bias ? "true" : "false");
    sb_printf(&b, ",\n  \"hidden_act\": \"%s\"", act_name(c->mlp));
    sb_id(&b, "bos_token_id", c->bos_id);
    sb_id(&b, "eos_token_id", c->eos_id);
    sb_printf(&b, ",\n  \"norm\": \"%s\"",
              c->norm == TM_GPT_RMSNORM ? "rmsnorm" : "layernorm");
    sb_printf(&b, ",\n  \"position_embedding\": \"%s\"",
              c->pos == TM_GPT_POS_ROPE ? "rope" : "learned");
    sb_printf(&b, ",\n  \"mlp\": \"%s\"", mlp_name(c->mlp));
    sb_printf(&b, ",\n  \"dropout\": ");
    sb_double(&b, c->dropout);
    sb_printf(&b, ",\n  \"init_std\": ");
    sb_double(&b, c->init_std);
    sb_printf(&b, ",\n  \"torch_dtype\": \"float32\"\n}\n");
    if (b.failed) {
        free(b.p);
        TM_ERR(TM_ENOMEM, "out of memory");
        return NULL;
    }
    return b.p;
}

/* The parser is in gpt_config_json.c. */
