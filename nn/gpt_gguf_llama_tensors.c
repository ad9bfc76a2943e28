/*
 * gpt_gguf_llama_tensors.c — llama.cpp's tensor names (token_embd,
 * blk.N.attn_q, ...) mapped onto Foundry's Hugging Face names, each tensor
 * checked against the configuration, quantized ones kept as zero-copy
 * views of the file's mapping (foundry/models.h, tm_model_load_gguf).
 */
#include "gpt_gguf_llama.h"

#include "foundry/quantize.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-layer parts: Hugging Face name -> llama.cpp name. */
static const char *const layer_map[][2] = {
    {"input_layernorm", "attn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

/* The llama.cpp name of Foundry parameter `hf` into out (false when there
 * is none: a parameter this layout cannot have). */
static bool gguf_name(const char *hf, char *out, size_t n)
{
    const char *dot = strrchr(hf, '.'); /* ".weight" / ".bias" */
    if (!dot) return false;
    size_t base = (size_t)(dot - hf);
    if (!strncmp(hf, "model.embed_tokens", base) && base == 18)
        return snprintf(out, n, "token_embd%s", dot) > 0;
    if (!strncmp(hf, "model.norm", base) && base == 10)
        return snprintf(out, n, "output_norm%s", dot) > 0;
    if (!strncmp(hf, "lm_head", base) && base == 7)
        return snprintf(out, n, "output%s", dot) > 0;
    long layer;
    int used = 0;
    if (sscanf(hf, "model.layers.%ld.%n", &layer, &used) != 1 || !used)
        return false;
    const char *part = hf + used;
    size_t plen = (size_t)(dot - part);
    for (size_t k = 0; k < sizeof layer_map / sizeof layer_map[0]; k++)
        if (strlen(layer_map[k][0]) == plen &&
            !strncmp(part, layer_map[k][0], plen))
            return snprintf(out, n, "blk.%ld.%s%s", layer, layer_map[k][1],
                            dot) > 0;
    return false;
}

/* "[a, b] (GGUF dims {b, a})" */
static const char *fmt_dims(const int64_t *shape, int nd, char *buf, size_t n)
{
    char a[TM_SHAPE_BUF];
    int k = snprintf(buf, n, "%s (GGUF dims {",
                     tm__fmt_shape(shape, nd, a, sizeof a));
    for (int d = nd - 1; d >= 0 && k > 0 && (size_t)k < n; d--)
        k += snprintf(buf + k, n - (size_t)k, "%lld%s", (long long)shape[d],
                      d ? ", " : "");
    if (k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "})");
    return buf;
}

/* The new tensor for parameter p from GGUF tensor gi (NULL with an
 * error): the view itself when quantized, else an F32 copy (the norm
 * weights: small, and dense parameters must be writable). */
static tm_tensor *take(const tm_gguf *g, int64_t gi, const char *gname,
                       const tm_tensor *p, const char *path, const char *fn)
{
    tm_gguf_tensor_info ti;
    tm_gguf_tensor_info_at(g, gi, &ti);
    bool same = ti.ndim == tm_ndim(p);
    for (int d = 0; same && d < ti.ndim; d++)
        same = ti.shape[d] == tm_shape(p)[d];
    if (!same) {
        char a[160], b[160];
        tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' has shape %s, the "
                 "metadata needs %s", path, gname,
                 fmt_dims(ti.shape, ti.ndim, a, sizeof a),
                 fmt_dims(tm_shape(p), tm_ndim(p), b, sizeof b));
        return NULL;
    }
    tm_tensor *t = tm_gguf_tensor(g, gi);
    if (!t) {
        tm__errf(tm_last_status(), fn, "%s: tensor '%s': %s", path, gname,
                 tm_last_error());
        return NULL;
    }
    tm_dtype dt = tm_dtype_of(t);
    if (tm_dtype_is_quantized(dt) && dt != TM_Q8_1 && dt != TM_Q8_K)
        return t; /* zero-copy: the view keeps the mapping alive */
    tm_tensor *out = NULL;
    if (dt != TM_F32 && dt != TM_F16 && dt != TM_BF16)
        tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is %s, not F32, F16, BF16 "
                 "or a quantized weight type", path, gname, tm_dtype_name(dt));
    else if (!(out = tm_to_dtype(t, TM_F32))) /* a new, writable tensor */
        tm__relabel_error(fn, tm_last_status());
    tm_free(t);
    return out;
}

tm_gpt *tm__gguf_llama_build(const tm_gguf *g, const char *path,
                             const tm_gpt_config *c, const char *fn)
{
    tm_gpt *m = tm__gpt_create(c, false, NULL, fn);
    if (!m) return NULL;
    int n = tm_params_count(m->params);
    int64_t nt = tm_gguf_n_tensors(g);
    tm_tensor **news = tm__calloc(sizeof *news * (size_t)n, fn);
    bool *used = tm__calloc(sizeof *used * (size_t)(nt ? nt : 1), fn);
    tm_status st = news && used ? TM_OK : TM_ENOMEM;
    for (int i = 0; i < n && !st; i++) {
        const char *hf = tm_params_name(m->params, i);
        char gname[256];
        if (!gguf_name(hf, gname, sizeof gname)) {
            st = tm__errf(TM_ESTATE, fn, "internal error: no llama.cpp name "
                          "for parameter '%s'", hf);
            break;
        }
        int64_t gi = tm_gguf_find_tensor(g, gname);
        if (gi < 0) {
            st = tm__errf(TM_EFORMAT, fn, "%s: tensor '%s' is missing (the "
                          "metadata gives %lld blocks)", path, gname,
                          (long long)c->n_layers);
            break;
        }
        used[gi] = true;
        if (!(news[i] = take(g, gi, gname, tm_params_get(m->params, i), path,
                             fn)))
            st = tm_last_status();
    }
    for (int64_t j = 0; j < nt && !st; j++) {
        tm_gguf_tensor_info ti;
        if (used[j] || tm_gguf_tensor_info_at(g, j, &ti)) continue;
        /* llama.cpp keeps Llama 3's rope scaling as per-pair frequency
         * factors; Foundry's LLAMA3 scaling would need its parameters,
         * which the file does not carry. */
        st = tm__errf(!strcmp(ti.name, "rope_freqs.weight") ? TM_EUNSUPPORTED
                                                             : TM_EFORMAT,
                      fn, "%s: unexpected tensor '%s'%s", path, ti.name,
                      !strcmp(ti.name, "rope_freqs.weight")
                          ? " (per-frequency RoPE factors are not supported)"
                          : "");
    }
    if (!st) st = tm__gpt_replace_params(m, news, fn);
    if (news)
        for (int i = 0; i < n; i++) tm_free(news[i]);
    tm__dealloc(news);
    tm__dealloc(used);
    if (st) {
        if (st == TM_ENOMEM && !tm_last_status())
            tm__errf(TM_ENOMEM, fn, "out of memory");
        tm_gpt_free(m);
        return NULL;
    }
    m->training = false;
    m->rng = tm_rng_new(0);
    return m;
}
