/* test_llama_gguf.c — tm_model_load_gguf on llama.cpp-layout GGUF files
 * written here from a small Llama-shaped model with interleaved RoPE:
 * the loaded model's logits equal the model's (dense and quantized,
 * tensors zero-copy), and every malformed variant (each required key
 * missing, a key of the wrong type, a short vocabulary, a mis-shaped,
 * missing or unexpected tensor, another architecture) is a clear error. */
#include "harness.h"
#include "tmpfiles.h"

#include "foundry/gguf.h"
#include "foundry/quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V 40
#define LAYERS 2

static tm_gpt *small_llama(uint64_t seed)
{
    tm_gpt_config c;
    tm_gpt_preset("llama-tiny", &c);
    c.vocab_size = V;
    c.context = 32;
    c.d_model = 64;
    c.n_layers = LAYERS;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 0;
    c.d_ff = 96;
    c.rope.theta = 1e4 * 3;
    c.rope.interleaved = true;
    c.norm_eps = 1e-5;
    c.tie_embeddings = true;
    c.bos_id = 1;
    c.eos_id = 2;
    tm_rng rng = tm_rng_new(seed);
    tm_gpt *m = tm_gpt_new(&c, &rng);
    if (!m) return NULL;
    /* Norm weights away from 1, so a swapped norm would show. */
    tm_params *ps = tm_gpt_params(m);
    bool prev = tm_no_grad_begin();
    for (int i = 0; i < tm_params_count(ps); i++) {
        tm_tensor *p = tm_params_get(ps, i);
        if (tm_ndim(p) != 1) continue;
        float *d = tm_data(p);
        for (int64_t j = 0; j < tm_numel(p); j++) d[j] = 0.5f + 0.01f * (float)((j * 7 + i) % 50);
    }
    tm_no_grad_end(prev);
    return m;
}

/* What a variant changes. */
typedef struct variant {
    const char *drop_key;    /* a metadata key left out */
    const char *str_key;     /* a key written as a string instead */
    const char *arch;        /* general.architecture (NULL: "llama") */
    int64_t n_tokens;        /* tokenizer.ggml.tokens length (0: V) */
    const char *drop_tensor; /* a tensor left out */
    const char *bad_tensor;  /* a tensor written with one row fewer */
    const char *extra_tensor;
} variant;

/* llama.cpp's name of parameter i of the model (its HF name). */
static void gguf_name(const char *hf, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},   {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"},
        {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
    };
    int layer, used = 0;
    if (!strcmp(hf, "model.embed_tokens.weight")) { snprintf(out, n, "token_embd.weight"); return; }
    if (!strcmp(hf, "model.norm.weight")) { snprintf(out, n, "output_norm.weight"); return; }
    if (!strcmp(hf, "lm_head.weight")) { snprintf(out, n, "output.weight"); return; }
    sscanf(hf, "model.layers.%d.%n", &layer, &used);
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (!strncmp(hf + used, map[k][0], strlen(map[k][0]))) {
            snprintf(out, n, "blk.%d.%s.weight", layer, map[k][1]);
            return;
        }
    snprintf(out, n, "?");
}

static const char *const int_keys[] = {
    "llama.context_length", "llama.embedding_length", "llama.block_count",
    "llama.feed_forward_length", "llama.attention.head_count",
    "llama.attention.head_count_kv", "llama.rope.dimension_count",
};
static const char *const required_keys[] = {
    "general.architecture", "llama.context_length", "llama.embedding_length",
    "llama.block_count", "llama.feed_forward_length",
    "llama.attention.head_count", "llama.attention.layer_norm_rms_epsilon",
};

static tm_status write_llama(const char *path, const tm_gpt *m, const variant *v)
{
    const tm_gpt_config *c = tm_gpt_config_of(m);
    tm_gguf_writer *w = tm_gguf_writer_new();
    if (!w) return tm_last_status();
    tm_status st = TM_OK;
    int64_t vals[] = {c->context, c->d_model, c->n_layers, c->d_ff, c->n_heads,
                      c->n_kv_heads, c->head_dim};
#define SKIP(k) ((v->drop_key && !strcmp(v->drop_key, k)) || (v->str_key && !strcmp(v->str_key, k)))
#define ASSTR(k) (v->str_key && !strcmp(v->str_key, k))
    if (!SKIP("general.architecture"))
        st = tm_gguf_set_str(w, "general.architecture", v->arch ? v->arch : "llama", SIZE_MAX);
    for (size_t k = 0; k < sizeof int_keys / sizeof int_keys[0] && !st; k++)
        if (ASSTR(int_keys[k])) st = tm_gguf_set_str(w, int_keys[k], "12", SIZE_MAX);
        else if (!SKIP(int_keys[k])) st = tm_gguf_set_u32(w, int_keys[k], (uint32_t)vals[k]);
    if (!st && !SKIP("llama.rope.freq_base")) st = tm_gguf_set_f32(w, "llama.rope.freq_base", (float)c->rope.theta);
    if (!st && ASSTR("llama.attention.layer_norm_rms_epsilon"))
        st = tm_gguf_set_str(w, "llama.attention.layer_norm_rms_epsilon", "1e-5", SIZE_MAX);
    else if (!st && !SKIP("llama.attention.layer_norm_rms_epsilon"))
        st = tm_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", (float)c->norm_eps);
    int64_t nt = v->n_tokens ? v->n_tokens : V;
    char names[V + 8][8];
    const char *toks[V + 8];
    for (int64_t i = 0; i < nt; i++) {
        snprintf(names[i], sizeof names[i], "t%d", (int)i);
        toks[i] = names[i];
    }
    if (!st) st = tm_gguf_set_str(w, "tokenizer.ggml.model", "gpt2", SIZE_MAX);
    if (!st) st = tm_gguf_set_str_array(w, "tokenizer.ggml.tokens", toks, nt);
    if (!st) st = tm_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_id);
    if (!st) st = tm_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)c->eos_id);
    tm_params *ps = tm_gpt_params(m);
    tm_tensor *cut = NULL;
    for (int i = 0; i < tm_params_count(ps) && !st; i++) {
        char g[96];
        gguf_name(tm_params_name(ps, i), g, sizeof g);
        if (v->drop_tensor && !strcmp(v->drop_tensor, g)) continue;
        tm_tensor *t = tm_params_get(ps, i);
        if (v->bad_tensor && !strcmp(v->bad_tensor, g)) {
            if (tm_dtype_is_quantized(tm_dtype_of(t))) t = cut = tm_dequantize(t, TM_F32);
            cut = tm_narrow(t, 0, 0, tm_shape(t)[0] - 1);
            t = cut;
        }
        st = t ? tm_gguf_writer_add_tensor(w, g, t) : tm_last_status();
    }
    tm_tensor *x = NULL;
    if (!st && v->extra_tensor) {
        x = tm_zeros((int64_t[]){4}, 1, TM_F32);
        st = tm_gguf_writer_add_tensor(w, v->extra_tensor, x);
    }
    if (!st) st = tm_gguf_writer_write(w, path);
    tm_free(x);
    tm_free(cut);
    tm_gguf_writer_free(w);
    return st;
#undef SKIP
#undef ASSTR
}

/* Logits of both models on the same ids equal within tol. */
static double max_logit_diff(tm_gpt *a, tm_gpt *b)
{
    int64_t ids[] = {1, 5, 9, 33, 2, 17, 39, 0, 12, 7};
    tm_tensor *x = tm_from_buffer(ids, (int64_t[]){1, 10}, 2, TM_I64);
    bool prev = tm_no_grad_begin();
    tm_tensor *la = tm_gpt_forward(a, x, NULL), *lb = tm_gpt_forward(b, x, NULL);
    tm_no_grad_end(prev);
    double d = -1;
    if (la && lb && tm_numel(la) == tm_numel(lb)) {
        d = 0;
        const float *p = tm_data(la), *q = tm_data(lb);
        for (int64_t i = 0; i < tm_numel(la); i++) d = fmax(d, fabs((double)p[i] - q[i]));
    }
    tm_free(la);
    tm_free(lb);
    tm_free(x);
    return d;
}

TEST(llama_gguf_loads_to_the_same_logits)
{
    tm_gpt *m = small_llama(3);
    REQUIRE(m);
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "tiny.gguf");
    variant v = {0};
    REQUIRE(write_llama(p, m, &v) == TM_OK);
    tm_gpt *l = tm_model_load_gguf(p);
    REQUIRE(l);
    const tm_gpt_config *c = tm_gpt_config_of(l);
    CHECK_INT(c->vocab_size, V);
    CHECK_INT(c->n_kv_heads, 2);
    CHECK_INT(c->head_dim, 16);
    CHECK(c->rope.interleaved);
    CHECK(c->tie_embeddings);
    CHECK_INT(c->bos_id, 1);
    CHECK_INT(c->eos_id, 2);
    CHECK(!tm_gpt_training(l));
    /* Same arithmetic on the same values: equal logits. */
    CHECK_NEAR(max_logit_diff(m, l), 0.0, 0.0);
    tm_gpt_free(l);
    /* tm_gpt_load reads it too. */
    l = tm_gpt_load(p);
    CHECK(l && max_logit_diff(m, l) == 0.0);
    tm_gpt_free(l);
    tm_gpt_free(m);
    tt_rmdir(dir);
}

TEST(llama_gguf_quantized_weights_stay_zero_copy)
{
    tm_gpt *m = small_llama(4);
    REQUIRE(m);
    tm_quant_plan plan;
    REQUIRE(tm_quant_plan_named("q4_1", &plan) == TM_OK);
    REQUIRE(tm_gpt_quantize(m, &plan, NULL, NULL) == TM_OK);
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "q.gguf");
    variant v = {0};
    REQUIRE(write_llama(p, m, &v) == TM_OK);
    tm_gpt *l = tm_model_load_gguf(p);
    REQUIRE(l);
    CHECK_NEAR(max_logit_diff(m, l), 0.0, 0.0);
    /* The quantized weights point into the file's mapping: the same bytes
     * as the file's tensor view. */
    tm_gguf *g = tm_gguf_open(p);
    REQUIRE(g);
    tm_params *ps = tm_gpt_params(l);
    int quantized = 0;
    for (int i = 0; i < tm_params_count(ps); i++) {
        tm_tensor *t = tm_params_get(ps, i);
        if (!tm_dtype_is_quantized(tm_dtype_of(t))) continue;
        char gn[96];
        gguf_name(tm_params_name(ps, i), gn, sizeof gn);
        tm_gguf_tensor_info ti;
        REQUIRE(tm_gguf_tensor_info_at(g, tm_gguf_find_tensor(g, gn), &ti) == TM_OK);
        tm_tensor *f = tm_gguf_tensor(g, tm_gguf_find_tensor(g, gn));
        CHECK(f && tm_nbytes(f) == tm_nbytes(t) && !memcmp(tm_data(f), tm_data(t), tm_nbytes(t)));
        tm_free(f);
        quantized++;
    }
    CHECK(quantized >= 1 + 7 * LAYERS);
    tm_gguf_close(g);
    tm_gpt_free(l);
    tm_gpt_free(m);
    tt_rmdir(dir);
}

static void expect_fail(const char *dir, const tm_gpt *m, const variant *v,
                        tm_status status, const char *s1, const char *s2)
{
    char p[TT_PATH_MAX];
    tt_path(p, dir, "bad.gguf");
    if (write_llama(p, m, v) != TM_OK) {
        tt_fail(__FILE__, __LINE__, "writing the variant: %s", tm_last_error());
        return;
    }
    tm_clear_error();
    tm_gpt *l = tm_model_load_gguf(p);
    if (l || tm_last_status() != status || !strstr(tm_last_error(), s1) ||
        (s2 && !strstr(tm_last_error(), s2)) || !strstr(tm_last_error(), "tm_model_load_gguf"))
        tt_fail(__FILE__, __LINE__, "want %d '%s' '%s', got %p %d: %s", (int)status, s1,
                s2 ? s2 : "", (void *)l, (int)tm_last_status(), tm_last_error());
    tm_gpt_free(l);
    /* tm_gpt_load gives the same kind of failure (a file without
     * general.architecture it reads as Foundry's own, older layout) */
    if (v->drop_key && !strcmp(v->drop_key, "general.architecture")) return;
    tm_clear_error();
    l = tm_gpt_load(p);
    if (l || tm_last_status() != status || !strstr(tm_last_error(), s1))
        tt_fail(__FILE__, __LINE__, "tm_gpt_load: %s", tm_last_error());
    tm_gpt_free(l);
}

TEST(llama_gguf_malformed_files_are_clear_errors)
{
    tm_gpt *m = small_llama(5);
    REQUIRE(m);
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    char want[128];
    for (size_t k = 0; k < sizeof required_keys / sizeof required_keys[0]; k++) {
        variant v = {.drop_key = required_keys[k]};
        snprintf(want, sizeof want, "missing key %s", required_keys[k]);
        expect_fail(dir, m, &v, TM_EFORMAT, want, NULL);
    }
    for (size_t k = 0; k < sizeof int_keys / sizeof int_keys[0]; k++) {
        variant v = {.str_key = int_keys[k]};
        snprintf(want, sizeof want, "key %s is string, not an integer", int_keys[k]);
        expect_fail(dir, m, &v, TM_EFORMAT, want, NULL);
    }
    variant eps = {.str_key = "llama.attention.layer_norm_rms_epsilon"};
    expect_fail(dir, m, &eps, TM_EFORMAT, "layer_norm_rms_epsilon is string, not a number", NULL);
    variant shortv = {.n_tokens = V - 3};
    expect_fail(dir, m, &shortv, TM_EFORMAT, "has 37 tokens", "token_embd.weight has 40 rows");
    variant arch = {.arch = "mamba"};
    expect_fail(dir, m, &arch, TM_EUNSUPPORTED, "general.architecture 'mamba'", NULL);
    variant miss = {.drop_tensor = "blk.1.ffn_down.weight"};
    expect_fail(dir, m, &miss, TM_EFORMAT, "tensor 'blk.1.ffn_down.weight' is missing", NULL);
    variant shape = {.bad_tensor = "blk.0.attn_k.weight"};
    expect_fail(dir, m, &shape, TM_EFORMAT, "tensor 'blk.0.attn_k.weight' has shape [31,64]",
                "needs [32,64]");
    variant extra = {.extra_tensor = "blk.0.attn_sinks.weight"};
    expect_fail(dir, m, &extra, TM_EFORMAT, "unexpected tensor 'blk.0.attn_sinks.weight'", NULL);
    variant rf = {.extra_tensor = "rope_freqs.weight"};
    expect_fail(dir, m, &rf, TM_EUNSUPPORTED, "rope_freqs.weight", NULL);
    /* An unreadable path and NULL. */
    tm_clear_error();
    CHECK(tm_model_load_gguf(NULL) == NULL && tm_last_status() == TM_EINVAL);
    char p[TT_PATH_MAX];
    tt_path(p, dir, "none.gguf");
    tm_clear_error();
    CHECK(tm_model_load_gguf(p) == NULL && strstr(tm_last_error(), "none.gguf"));
    tm_gpt_free(m);
    tt_rmdir(dir);
}

TEST(llama_gguf_reads_foundry_gpt_files_too)
{
    tm_gpt *m = small_llama(6);
    REQUIRE(m);
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "own.gguf");
    REQUIRE(tm_gpt_save_gguf(m, p, NULL) == TM_OK);
    tm_gpt *l = tm_model_load_gguf(p);
    CHECK(l && max_logit_diff(m, l) == 0.0);
    tm_gpt_free(l);
    tm_gpt_free(m);
    tt_rmdir(dir);
}
