/*
 * gpt_gguf_llama.c — a model from a GGUF file llama.cpp's converters
 * wrote (general.architecture "llama"): the configuration from the
 * llama.* metadata keys, and tm_model_load_gguf's dispatch on the
 * architecture (foundry/models.h).  The tensors are mapped in
 * gpt_gguf_llama_tensors.c.
 */
#include "gpt_gguf_llama.h"

#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "<arch>.<key>" into buf. */
static const char *akey(char *buf, size_t n, const char *arch, const char *key)
{
    snprintf(buf, n, "%s.%s", arch, key);
    return buf;
}

static bool is_int_type(tm_gguf_type t)
{
    return t == TM_GGUF_UINT8 || t == TM_GGUF_INT8 || t == TM_GGUF_UINT16 ||
           t == TM_GGUF_INT16 || t == TM_GGUF_UINT32 || t == TM_GGUF_INT32 ||
           t == TM_GGUF_UINT64 || t == TM_GGUF_INT64;
}

static bool is_num_type(tm_gguf_type t)
{
    return is_int_type(t) || t == TM_GGUF_FLOAT32 || t == TM_GGUF_FLOAT64;
}

tm_status tm__gguf_key_int(const tm_gguf *g, const char *path, const char *key,
                           bool required, int64_t lo, int64_t *out,
                           const char *fn)
{
    const tm_gguf_value *v = tm_gguf_get(g, key);
    if (!v) {
        if (!required) return TM_OK;
        return tm__errf(TM_EFORMAT, fn, "%s: missing key %s", path, key);
    }
    tm_gguf_type t = tm_gguf_value_type(v);
    int64_t x;
    if (!is_int_type(t))
        return tm__errf(TM_EFORMAT, fn, "%s: key %s is %s, not an integer",
                        path, key, tm_gguf_type_name(t));
    if (tm_gguf_value_i64(v, &x))
        return tm__errf(TM_EFORMAT, fn, "%s: key %s does not fit in int64",
                        path, key);
    if (x < lo)
        return tm__errf(TM_EFORMAT, fn, "%s: key %s = %lld is below %lld",
                        path, key, (long long)x, (long long)lo);
    *out = x;
    return TM_OK;
}

/* A number (integer or float) > 0 and finite. */
static tm_status key_pos_f64(const tm_gguf *g, const char *path,
                             const char *key, bool required, double *out,
                             const char *fn)
{
    const tm_gguf_value *v = tm_gguf_get(g, key);
    if (!v) {
        if (!required) return TM_OK;
        return tm__errf(TM_EFORMAT, fn, "%s: missing key %s", path, key);
    }
    tm_gguf_type t = tm_gguf_value_type(v);
    double x;
    if (!is_num_type(t))
        return tm__errf(TM_EFORMAT, fn, "%s: key %s is %s, not a number",
                        path, key, tm_gguf_type_name(t));
    if (tm_gguf_value_f64(v, &x) || !isfinite(x) || x <= 0)
        return tm__errf(TM_EFORMAT, fn, "%s: key %s = %g is not a positive "
                        "finite number", path, key, x);
    *out = x;
    return TM_OK;
}

/* A string value, or NULL when absent (*st set on a wrong type). */
static const char *key_str(const tm_gguf *g, const char *path,
                           const char *key, tm_status *st, const char *fn)
{
    const tm_gguf_value *v = tm_gguf_get(g, key);
    if (!v) return NULL;
    const char *s = tm_gguf_value_str(v, NULL);
    if (!s)
        *st = tm__errf(TM_EFORMAT, fn, "%s: key %s is %s, not a string",
                       path, key, tm_gguf_type_name(tm_gguf_value_type(v)));
    return s;
}

/* rope.scaling.*: none, linear (factor) or yarn (factor, original context);
 * llama.cpp's older rope.scale_linear is the linear factor. */
static tm_status rope_scaling(const tm_gguf *g, const char *path,
                              const char *arch, tm_rope_config *r,
                              const char *fn)
{
    char k[128], k2[128];
    tm_status st = TM_OK;
    double f = 0;
    const char *type = key_str(g, path, akey(k, sizeof k, arch,
                               "rope.scaling.type"), &st, fn);
    if (st) return st;
    if (!type) {
        if ((st = key_pos_f64(g, path, akey(k, sizeof k, arch,
                              "rope.scale_linear"), false, &f, fn)))
            return st;
        if (f && f != 1.0) {
            r->scaling = TM_ROPE_SCALING_LINEAR;
            r->factor = f;
        }
        return TM_OK;
    }
    if (!strcmp(type, "none")) return TM_OK;
    if (strcmp(type, "linear") && strcmp(type, "yarn"))
        return tm__errf(TM_EUNSUPPORTED, fn, "%s: key %s = '%.32s' is not a "
                        "RoPE scaling Foundry has (none, linear, yarn)", path,
                        k, type);
    if ((st = key_pos_f64(g, path, akey(k2, sizeof k2, arch,
                          "rope.scaling.factor"), true, &f, fn)))
        return st;
    r->factor = f;
    if (!strcmp(type, "linear")) {
        r->scaling = TM_ROPE_SCALING_LINEAR;
        return TM_OK;
    }
    r->scaling = TM_ROPE_SCALING_YARN;
    return tm__gguf_key_int(g, path, akey(k2, sizeof k2, arch,
                            "rope.scaling.original_context_length"), true, 1,
                            &r->original_max_positions, fn);
}

/* tokenizer.ggml.<name>_token_id, or -1. */
static tm_status special_id(const tm_gguf *g, const char *path,
                            const char *name, int64_t *out, const char *fn)
{
    char k[96];
    snprintf(k, sizeof k, "tokenizer.ggml.%s_token_id", name);
    *out = -1;
    return tm__gguf_key_int(g, path, k, false, 0, out, fn);
}

tm_status tm__gguf_llama_config(const tm_gguf *g, const char *path,
                                const char *arch, tm_gpt_config *out,
                                const char *fn)
{
    tm_gpt_config c;
    tm_gpt_preset("llama-tiny", &c); /* Llama's layout; sizes set below */
    c.rope = tm_rope_defaults(0);
    c.rope.interleaved = true; /* llama.cpp's q/k rows are permuted for
                                  ggml's normal (pair) RoPE */
    c.attn_bias = c.mlp_bias = false;
    c.init_std = 0.02;
    char k[128];
    int64_t kd = 0, vd = 0, rot = 0;
    tm_status st;
#define INT(key, req, lo, dst) \
    if ((st = tm__gguf_key_int(g, path, akey(k, sizeof k, arch, key), req, lo, dst, fn))) return st
    INT("context_length", true, 1, &c.context);
    INT("embedding_length", true, 1, &c.d_model);
    INT("block_count", true, 1, &c.n_layers);
    INT("feed_forward_length", true, 1, &c.d_ff);
    INT("attention.head_count", true, 1, &c.n_heads);
    c.n_kv_heads = c.n_heads;
    INT("attention.head_count_kv", false, 1, &c.n_kv_heads);
    INT("attention.key_length", false, 1, &kd);
    INT("attention.value_length", false, 1, &vd);
    INT("rope.dimension_count", false, 1, &rot);
#undef INT
    c.rope.theta = 10000.0;
    if ((st = key_pos_f64(g, path, akey(k, sizeof k, arch, "rope.freq_base"),
                          false, &c.rope.theta, fn)) ||
        (st = key_pos_f64(g, path, akey(k, sizeof k, arch,
                          "attention.layer_norm_rms_epsilon"), true,
                          &c.norm_eps, fn)) ||
        (st = rope_scaling(g, path, arch, &c.rope, fn)))
        return st;
    if (kd && vd && kd != vd)
        return tm__errf(TM_EUNSUPPORTED, fn, "%s: %s.attention.key_length "
                        "%lld differs from value_length %lld (Foundry has one "
                        "head size)", path, arch, (long long)kd, (long long)vd);
    c.head_dim = kd ? kd : vd ? vd : c.d_model / c.n_heads;
    if (!kd && !vd && c.d_model % c.n_heads)
        return tm__errf(TM_EFORMAT, fn, "%s: %s.embedding_length %lld is not "
                        "a multiple of attention.head_count %lld", path, arch,
                        (long long)c.d_model, (long long)c.n_heads);
    c.rope.rotary_dim = rot ? rot : c.head_dim;
    if (c.rope.rotary_dim > c.head_dim)
        return tm__errf(TM_EFORMAT, fn, "%s: %s.rope.dimension_count %lld "
                        "exceeds the head size %lld", path, arch,
                        (long long)rot, (long long)c.head_dim);
    /* The vocabulary: vocab_size, else the token list, else the
     * embedding's rows (the tensor map checks the embedding against it). */
    int64_t emb_rows = -1, ntok = -1;
    int64_t ti = tm_gguf_find_tensor(g, "token_embd.weight");
    tm_gguf_tensor_info info;
    if (ti >= 0 && !tm_gguf_tensor_info_at(g, ti, &info) && info.ndim == 2)
        emb_rows = info.shape[0];
    const tm_gguf_value *toks = tm_gguf_get(g, "tokenizer.ggml.tokens");
    if (toks) {
        if (tm_gguf_value_type(toks) != TM_GGUF_ARRAY ||
            tm_gguf_array_type(toks) != TM_GGUF_STRING)
            return tm__errf(TM_EFORMAT, fn, "%s: key tokenizer.ggml.tokens "
                            "is not an array of strings", path);
        ntok = tm_gguf_array_len(toks);
    }
    c.vocab_size = ntok > 0 ? ntok : emb_rows;
    if ((st = tm__gguf_key_int(g, path, akey(k, sizeof k, arch, "vocab_size"),
                               false, 1, &c.vocab_size, fn)))
        return st;
    if (c.vocab_size < 1)
        return tm__errf(TM_EFORMAT, fn, "%s: no vocabulary size: no key %s, "
                        "tokenizer.ggml.tokens or token_embd.weight", path, k);
    if (ntok >= 0 && emb_rows >= 0 && ntok != emb_rows)
        return tm__errf(TM_EFORMAT, fn, "%s: the vocabulary "
                        "(tokenizer.ggml.tokens) has %lld tokens but "
                        "token_embd.weight has %lld rows", path,
                        (long long)ntok, (long long)emb_rows);
    if ((st = special_id(g, path, "bos", &c.bos_id, fn)) ||
        (st = special_id(g, path, "eos", &c.eos_id, fn)))
        return st;
    if (c.bos_id >= c.vocab_size || c.eos_id >= c.vocab_size)
        return tm__errf(TM_EFORMAT, fn, "%s: tokenizer.ggml.%s_token_id %lld "
                        "is outside the vocabulary of %lld", path,
                        c.bos_id >= c.vocab_size ? "bos" : "eos",
                        (long long)(c.bos_id >= c.vocab_size ? c.bos_id
                                                             : c.eos_id),
                        (long long)c.vocab_size);
    c.tie_embeddings = tm_gguf_find_tensor(g, "output.weight") < 0;
    c.attn_bias = tm_gguf_find_tensor(g, "blk.0.attn_q.bias") >= 0;
    c.mlp_bias = tm_gguf_find_tensor(g, "blk.0.ffn_up.bias") >= 0;
    if ((st = tm_gpt_config_check(&c)))
        return tm__errf(st, fn, "%s: the %s.* keys make an invalid model: %s",
                        path, arch, tm_last_error());
    *out = c;
    return TM_OK;
}

/* general.architecture's value (NULL with an error). */
static const char *architecture(const tm_gguf *g, const char *path,
                                const char *fn)
{
    tm_status st = TM_OK;
    const char *a = key_str(g, path, "general.architecture", &st, fn);
    if (!a && !st)
        tm__errf(TM_EFORMAT, fn, "%s: missing key general.architecture",
                 path);
    return a;
}

tm_gpt *tm__gpt_load_gguf_arch(tm_gguf *g, const char *path, bool *foundry,
                               const char *fn)
{
    *foundry = false;
    const char *arch = architecture(g, path, fn);
    if (!arch) return NULL;
    if (!strcmp(arch, "foundry_gpt")) {
        *foundry = true;
        return NULL;
    }
    if (strcmp(arch, "llama"))
        return tm__errf(TM_EUNSUPPORTED, fn, "%s: general.architecture "
                        "'%.32s' is not one Foundry reads (llama, "
                        "foundry_gpt)", path, arch), NULL;
    tm_gpt_config c;
    if (tm__gguf_llama_config(g, path, arch, &c, fn)) return NULL;
    return tm__gguf_llama_build(g, path, &c, fn);
}

tm_gpt *tm_model_load_gguf(const char *path)
{
    const char *fn = __func__;
    if (!path || !*path) {
        TM_ERR(TM_EINVAL, "path is NULL or empty");
        return NULL;
    }
    tm_gguf *g = tm_gguf_open(path);
    if (!g) {
        tm__relabel_error(fn, tm_last_status());
        return NULL;
    }
    bool foundry;
    tm_gpt *m = tm__gpt_load_gguf_arch(g, path, &foundry, fn);
    tm_gguf_close(g);
    return foundry ? tm__gpt_load_file(path, NULL, fn) : m;
}
