/* test_gpt_quant.c — quantized GPT models: tm_gpt_quantize by a plan (the
 * dtypes it gives, the error it reports against a double-precision loop),
 * save and load through safetensors (the foundry.quant.* convention) and
 * GGUF with the bytes unchanged, the forward of a quantized model against
 * the same model with the dequantized weights, and the loader's errors. */
#include "harness.h"
#include "tmpfiles.h"

#include "foundry/quantize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* d_model 64: whole Q8_0 .. Q5_1 blocks; K-quants fall back. */
static tm_gpt *small_model(bool llama, uint64_t seed)
{
    tm_gpt_config c;
    tm_gpt_preset(llama ? "llama-tiny" : "gpt-tiny", &c);
    c.vocab_size = 40;
    c.context = 16;
    c.d_model = 64;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = llama ? 2 : 4;
    c.head_dim = 0;
    c.d_ff = 128;
    c.tie_embeddings = !llama;
    tm_rng rng = tm_rng_new(seed);
    return tm_gpt_new(&c, &rng);
}

typedef struct seen {
    int n;
    double rmse[64], want[64];
} seen;

static void record(const tm_gpt_quant_info *q, void *user)
{
    seen *s = user;
    if (s->n < 64) s->rmse[s->n] = q->rmse;
    s->n++;
}

/* Every byte of two tensors' storage equal (both contiguous on the CPU). */
static bool same_bytes(const tm_tensor *a, const tm_tensor *b)
{
    return tm_dtype_of(a) == tm_dtype_of(b) && tm_nbytes(a) == tm_nbytes(b) &&
           !memcmp(tm_data(a), tm_data(b), tm_nbytes(a));
}

/* sqrt(mean((a - deq(q))^2)) in double. */
static double rmse_ref(const tm_tensor *a, const tm_tensor *q)
{
    tm_tensor *d = tm_dequantize(q, TM_F32);
    if (!d) return -1;
    const float *x = tm_data(a), *y = tm_data(d);
    double s = 0;
    for (int64_t i = 0; i < tm_numel(a); i++)
        s += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    tm_free(d);
    return sqrt(s / (double)tm_numel(a));
}

TEST(gpt_quantize_follows_the_plan_and_reports_the_error)
{
    tm_gpt *m = small_model(true, 1);
    REQUIRE(m);
    tm_params *ps = tm_gpt_params(m);
    int n = tm_params_count(ps);
    /* The F32 values before, to measure against. */
    tm_tensor *before[64] = {0};
    REQUIRE(n <= 64);
    for (int i = 0; i < n; i++) before[i] = tm_clone(tm_params_get(ps, i));
    static const tm_quant_rule rules[] = {{"*down_proj*", TM_Q4_1},
                                          {"*embed_tokens*", TM_F16}};
    tm_quant_plan plan = {TM_Q8_0, TM_F32, rules, 2, TM_F32};
    seen s = {0};
    REQUIRE(tm_gpt_quantize(m, &plan, record, &s) == TM_OK);
    CHECK_INT(s.n, n);
    ps = tm_gpt_params(m);
    for (int i = 0; i < n; i++) {
        const char *name = tm_params_name(ps, i);
        tm_tensor *p = tm_params_get(ps, i);
        tm_dtype want = tm_ndim(p) < 2 ? TM_F32
                        : strstr(name, "down_proj") ? TM_Q4_1
                        : strstr(name, "embed_tokens") ? TM_F32 /* F16-rounded */
                                                       : TM_Q8_0;
        CHECK(tm_dtype_of(p) == want);
        if (tm_dtype_is_quantized(want)) {
            CHECK(tm_params_is_buffer(ps, i));
            double r = rmse_ref(before[i], p);
            /* The same sum in another order: relative 1e-9 is F64 rounding. */
            CHECK_NEAR(s.rmse[i], r, 1e-9 * r + 1e-300);
            CHECK(r > 0);
        }
        if (strstr(name, "embed_tokens")) {
            CHECK(tm_gpt_param_store_dtype(m, i) == TM_F16);
            CHECK(s.rmse[i] > 0 && s.rmse[i] < 1e-3 * 0.05);
        }
    }
    for (int i = 0; i < n; i++) tm_free(before[i]);
    tm_gpt_free(m);
}

/* Every parameter's dtype and bytes equal between two models. */
static void check_same_params(const tm_gpt *a, const tm_gpt *b)
{
    tm_params *pa = tm_gpt_params(a), *pb = tm_gpt_params(b);
    CHECK_INT(tm_params_count(pa), tm_params_count(pb));
    for (int i = 0; i < tm_params_count(pa) && i < tm_params_count(pb); i++) {
        CHECK(!strcmp(tm_params_name(pa, i), tm_params_name(pb, i)));
        tm_tensor *x = tm_params_get(pa, i), *y = tm_params_get(pb, i);
        tm_tensor *xc = tm_contiguous(x), *yc = tm_contiguous(y);
        if (!same_bytes(xc, yc))
            tt_fail(__FILE__, __LINE__, "parameter %s differs after a round trip",
                    tm_params_name(pa, i));
        tm_free(xc);
        tm_free(yc);
    }
}

TEST(gpt_quantized_round_trips_through_safetensors_and_gguf)
{
    for (int llama = 0; llama < 2; llama++) {
        tm_gpt *m = small_model(llama, 7);
        REQUIRE(m);
        tm_quant_plan plan;
        REQUIRE(tm_quant_plan_named(llama ? "q4_0" : "q5_1", &plan) == TM_OK);
        REQUIRE(tm_gpt_quantize(m, &plan, NULL, NULL) == TM_OK);
        char dir[TT_PATH_MAX], p[TT_PATH_MAX], sub[TT_PATH_MAX];
        REQUIRE(tt_tmpdir(dir));
        REQUIRE(tm_gpt_save(m, dir) == TM_OK);
        tm_gpt *back = tm_gpt_load(dir);
        REQUIRE(back);
        check_same_params(m, back);
        tm_gpt_free(back);
        /* The .safetensors file itself, config.json beside it. */
        back = tm_gpt_load(tt_path(p, dir, "model.safetensors"));
        REQUIRE(back);
        check_same_params(m, back);
        tm_gpt_free(back);
        /* GGUF: a file, and a directory holding model.gguf only. */
        tt_path(sub, dir, "g.gguf");
        tm_gpt_gguf_opts o = {.name = "tiny", .tokenizer_json = "{}", .file_type = 0};
        REQUIRE(tm_gpt_save_gguf(m, sub, &o) == TM_OK);
        back = tm_gpt_load(sub);
        REQUIRE(back);
        check_same_params(m, back);
        tm_gguf *g = tm_gguf_open(sub);
        REQUIRE(g);
        uint64_t ft = 0;
        CHECK(tm_gguf_value_u64(tm_gguf_get(g, "general.file_type"), &ft) == TM_OK);
        CHECK_INT(ft, llama ? 2 : 9); /* llama.cpp's MOSTLY_Q4_0 / MOSTLY_Q5_1 */
        CHECK(!strcmp(tm_gguf_value_str(tm_gguf_get(g, "general.architecture"), NULL),
                      "foundry_gpt"));
        CHECK(!strcmp(tm_gguf_value_str(tm_gguf_get(g, "tokenizer.huggingface.json"), NULL),
                      "{}"));
        tm_gguf_close(g);
        tm_gpt_free(back);
        remove(tt_path(p, dir, "model.safetensors"));
        REQUIRE(rename(sub, tt_path(p, dir, "model.gguf")) == 0);
        back = tm_gpt_load(dir);
        REQUIRE(back);
        check_same_params(m, back);
        tm_gpt_free(back);
        tt_rmdir(dir);
        tm_gpt_free(m);
    }
}

TEST(gpt_quantized_forward_matches_the_dequantized_model)
{
    for (int llama = 0; llama < 2; llama++) {
        tm_gpt *q = small_model(llama, 3), *d = small_model(llama, 3);
        REQUIRE(q && d);
        tm_quant_plan plan;
        REQUIRE(tm_quant_plan_named("q8_0", &plan) == TM_OK);
        REQUIRE(tm_gpt_quantize(q, &plan, NULL, NULL) == TM_OK);
        /* d gets the dequantized values of q's weights, in F32. */
        tm_params *pq = tm_gpt_params(q), *pd = tm_gpt_params(d);
        bool prev = tm_no_grad_begin();
        for (int i = 0; i < tm_params_count(pq); i++) {
            tm_tensor *w = tm_params_get(pq, i);
            if (!tm_dtype_is_quantized(tm_dtype_of(w))) continue;
            tm_tensor *v = tm_dequantize(w, TM_F32);
            CHECK(v && tm_copy_(tm_params_get(pd, i), v) == TM_OK);
            tm_free(v);
        }
        tm_no_grad_end(prev);
        tm_tensor *ids = tm_arange(0, 16, 1, TM_I64);
        tm_tensor *ids2 = ids ? tm_reshape(ids, (int64_t[]){2, 8}, 2) : NULL;
        REQUIRE(ids2);
        tm_tensor *lq = tm_gpt_forward(q, ids2, NULL), *ld = tm_gpt_forward(d, ids2, NULL);
        REQUIRE(lq && ld);
        /* Activations are quantized to Q8_0 on the fly (as ggml does), so
         * the logits differ from the F32 path by that rounding: about
         * 2^-8 of each activation block's max, relative.  Logits here are
         * O(0.1); 3% of their range bounds it with a wide margin. */
        tm_tensor *diff = tm_sub(lq, ld), *ad = diff ? tm_abs(diff) : NULL;
        tm_tensor *mx = ad ? tm_max(ad, NULL, 0, false) : NULL;
        tm_tensor *al = tm_abs(ld), *ml = al ? tm_max(al, NULL, 0, false) : NULL;
        double e = 1, r = 0;
        REQUIRE(mx && ml);
        tm_item(mx, &e);
        tm_item(ml, &r);
        CHECK(e <= 0.03 * r);
        CHECK(e > 0); /* the quantized path ran, not the F32 one */
        tm_free(diff); tm_free(ad); tm_free(mx); tm_free(al); tm_free(ml);
        tm_free(lq); tm_free(ld); tm_free(ids); tm_free(ids2);
        tm_gpt_free(q);
        tm_gpt_free(d);
    }
}

TEST(gpt_load_rejects_inconsistent_quantized_files)
{
    tm_gpt *m = small_model(false, 5);
    REQUIRE(m);
    tm_quant_plan plan;
    REQUIRE(tm_quant_plan_named("q8_0", &plan) == TM_OK);
    REQUIRE(tm_gpt_quantize(m, &plan, NULL, NULL) == TM_OK);
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_params *ps = tm_gpt_params(m);
    int n = tm_params_count(ps);
    const char *names[64];
    tm_tensor *ts[64];
    REQUIRE(n <= 64);
    int qi = -1;
    for (int i = 0; i < n; i++) {
        names[i] = tm_params_name(ps, i);
        ts[i] = NULL;
        if (tm_dtype_is_quantized(tm_dtype_of(tm_params_get(ps, i))) && qi < 0) qi = i;
    }
    REQUIRE(qi >= 0);
    REQUIRE(tm_gpt_save(m, dir) == TM_OK);
    tt_path(p, dir, "model.safetensors");
    tm_safetensors *f = tm_safetensors_open(p);
    REQUIRE(f);
    for (int i = 0; i < n; i++) ts[i] = tm_safetensors_load(f, names[i]);
    tm_safetensors_close(f);
    char key[160];
    snprintf(key, sizeof key, "foundry.quant.%s", names[qi]);
    /* A description naming a dense dtype, a bad shape, and a byte count
     * that does not match. */
    static const char *const bad[] = {"f32[64,64]", "q8_0[64", "q8_0[64,32]", "q9_9[64,64]"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        const char *mk[] = {"format", key}, *mv[] = {"pt", bad[b]};
        REQUIRE(tm_safetensors_save(p, names, ts, n, mk, mv, 2) == TM_OK);
        tm_clear_error();
        tm_gpt *x = tm_gpt_load(dir);
        CHECK(x == NULL);
        CHECK(tm_last_status() == TM_EFORMAT);
        CHECK(strstr(tm_last_error(), names[qi]) != NULL);
        tm_gpt_free(x);
    }
    /* Quantized bytes without their description: a U8 tensor of the
     * wrong shape. */
    {
        const char *mk[] = {"format"}, *mv[] = {"pt"};
        REQUIRE(tm_safetensors_save(p, names, ts, n, mk, mv, 1) == TM_OK);
        tm_clear_error();
        tm_gpt *x = tm_gpt_load(dir);
        CHECK(x == NULL);
        CHECK(tm_last_status() == TM_EFORMAT);
        CHECK(strstr(tm_last_error(), names[qi]) && strstr(tm_last_error(), "has shape [40,68]"));
        tm_gpt_free(x);
    }
    /* A description for a tensor the model does not have. */
    {
        const char *mk[] = {"format", key, "foundry.quant.nope.weight"};
        const char *mv[] = {"pt", "q8_0[64,64]", "q8_0[64,64]"};
        REQUIRE(tm_safetensors_save(p, names, ts, n, mk, mv, 3) == TM_OK);
        tm_clear_error();
        tm_gpt *x = tm_gpt_load(dir);
        CHECK(x == NULL);
        CHECK(tm_last_error() && strstr(tm_last_error(), "nope.weight") != NULL);
        tm_gpt_free(x);
    }
    /* A GGUF without foundry.config. */
    {
        tm_gguf_writer *w = tm_gguf_writer_new();
        REQUIRE(w);
        CHECK(tm_gguf_writer_add_tensor(w, names[qi], tm_params_get(ps, qi)) == TM_OK);
        tt_path(p, dir, "bare.gguf");
        CHECK(tm_gguf_writer_write(w, p) == TM_OK);
        tm_gguf_writer_free(w);
        tm_clear_error();
        tm_gpt *x = tm_gpt_load(p);
        CHECK(x == NULL);
        CHECK(tm_last_error() && strstr(tm_last_error(), "foundry.config") != NULL);
        tm_gpt_free(x);
        remove(p);
    }
    /* A GGUF whose config does not parse. */
    {
        tm_gguf_writer *w = tm_gguf_writer_new();
        REQUIRE(w);
        CHECK(tm_gguf_set_str(w, "foundry.config", "{\"model_type\": 3", SIZE_MAX) == TM_OK);
        tt_path(p, dir, "badcfg.gguf");
        CHECK(tm_gguf_writer_write(w, p) == TM_OK);
        tm_gguf_writer_free(w);
        tm_clear_error();
        tm_gpt *x = tm_gpt_load(p);
        CHECK(x == NULL);
        CHECK(tm_last_error() && strstr(tm_last_error(), "foundry.config") != NULL);
        tm_gpt_free(x);
        remove(p);
    }
    for (int i = 0; i < n; i++) tm_free(ts[i]);
    tt_rmdir(dir);
    tm_gpt_free(m);
}
