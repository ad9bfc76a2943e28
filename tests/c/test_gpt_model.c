/* test_gpt_model.c — the transformer itself: parameters and their names,
 * the forward with and without the KV cache, bad ids, save/load and the
 * errors of a bad model directory. */
#include "harness.h"
#include "tmpfiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* A small config of either family. */
static tm_gpt_config tiny(bool llama)
{
    tm_gpt_config c;
    tm_gpt_preset(llama ? "llama-tiny" : "gpt-tiny", &c);
    c.vocab_size = 50;
    c.context = 24;
    c.d_model = 32;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = llama ? 2 : 4;
    c.head_dim = 0;
    c.d_ff = 48;
    c.tie_embeddings = !llama;
    return c;
}

static tm_gpt *tiny_model(bool llama, uint64_t seed)
{
    tm_gpt_config c = tiny(llama);
    tm_rng rng = tm_rng_new(seed);
    return tm_gpt_new(&c, &rng);
}

/* [B, T] I64 ids (i * 7 + 3) % V. */
static tm_tensor *ids_of(int64_t B, int64_t T, int64_t V)
{
    tm_tensor *t = tm_arange(0, (double)(B * T), 1, TM_I64);
    tm_tensor *m = t ? tm_mul_scalar(t, 7) : NULL;
    tm_tensor *a = m ? tm_add_scalar(m, 3) : NULL;
    tm_tensor *r = a ? tm_remainder_scalar(a, (double)V) : NULL;
    tm_tensor *out = r ? tm_reshape(r, (int64_t[]){B, T}, 2) : NULL;
    tm_free(t);
    tm_free(m);
    tm_free(a);
    tm_free(r);
    return out;
}

/* max |a - b| / max |b| over two F32 tensors of one shape. */
static double rel_diff(const tm_tensor *a, const tm_tensor *b)
{
    tm_tensor *d = tm_sub(a, b);
    tm_tensor *ad = d ? tm_abs(d) : NULL, *ab = tm_abs(b);
    tm_tensor *md = ad ? tm_max(ad, NULL, 0, false) : NULL;
    tm_tensor *mb = ab ? tm_max(ab, NULL, 0, false) : NULL;
    double x = 1e30, y = 1;
    if (md && mb) {
        tm_item(md, &x);
        tm_item(mb, &y);
    }
    tm_free(d);
    tm_free(ad);
    tm_free(ab);
    tm_free(md);
    tm_free(mb);
    return x / y;
}

TEST(gpt_params_have_hf_names_and_decay_only_on_matrices)
{
    tm_gpt *m = tiny_model(false, 1);
    REQUIRE(m);
    tm_params *ps = tm_gpt_params(m);
    /* 2 embeddings + 2 x (2 norms x 2 + 4 x 2 linears + 2 x 2 mlp) + 2 */
    CHECK_INT(tm_params_count(ps), 2 + 2 * 16 + 2);
    CHECK(!strcmp(tm_params_name(ps, 0), "model.embed_tokens.weight"));
    CHECK(!strcmp(tm_params_name(ps, 1), "model.embed_positions.weight"));
    CHECK(tm_params_index(ps, "model.layers.1.self_attn.o_proj.bias") >= 0);
    CHECK(tm_params_index(ps, "model.layers.0.mlp.up_proj.weight") >= 0);
    CHECK(tm_params_index(ps, "model.layers.0.mlp.gate_proj.weight") < 0);
    CHECK(tm_params_index(ps, "lm_head.weight") < 0);
    CHECK(tm_params_index(ps, "model.norm.bias") >= 0);
    for (int i = 0; i < tm_params_count(ps); i++)
        CHECK(tm_params_no_decay(ps, i) ==
              (tm_ndim(tm_params_get(ps, i)) < 2));
    tm_gpt_free(m);

    m = tiny_model(true, 1);
    REQUIRE(m);
    ps = tm_gpt_params(m);
    CHECK(tm_params_index(ps, "lm_head.weight") >= 0);
    CHECK(tm_params_index(ps, "model.embed_positions.weight") < 0);
    CHECK(tm_params_index(ps, "model.norm.bias") < 0);
    tm_tensor *k = tm_params_find(ps, "model.layers.0.self_attn.k_proj.weight");
    REQUIRE(k);
    CHECK_SHAPE(k, 16, 32); /* 2 kv heads x 8 */
    CHECK_SHAPE(tm_params_find(ps, "model.layers.1.mlp.gate_proj.weight"), 48,
                32);
    tm_gpt_free(m);
}

TEST(gpt_init_scales_residual_projections)
{
    tm_gpt_config c = tiny(false);
    c.d_model = 128;
    c.d_ff = 512;
    c.vocab_size = 64;
    tm_rng rng = tm_rng_new(3);
    tm_gpt *m = tm_gpt_new(&c, &rng);
    REQUIRE(m);
    tm_params *ps = tm_gpt_params(m);
    /* std over 65536 draws: within 2% of the target (the sample std of
     * N(0, s) over n draws has relative error ~ 1/sqrt(2n) = 0.3%) */
    tm_tensor *up = tm_params_find(ps, "model.layers.0.mlp.up_proj.weight");
    tm_tensor *down =
        tm_params_find(ps, "model.layers.0.mlp.down_proj.weight");
    tm_tensor *s1 = tm_std(up, NULL, 0, 0, false);
    tm_tensor *s2 = tm_std(down, NULL, 0, 0, false);
    double v1 = 0, v2 = 0;
    REQUIRE(s1 && s2);
    tm_item(s1, &v1);
    tm_item(s2, &v2);
    CHECK_NEAR(v1, 0.02, 0.02 * 0.02);
    CHECK_NEAR(v2, 0.02 / 2.0, 0.01 * 0.02); /* 1/sqrt(2 * 2 layers) */
    tm_tensor *ln = tm_params_find(ps, "model.layers.0.input_layernorm.weight");
    tm_tensor *mn = tm_min(ln, NULL, 0, false);
    double lo = 0;
    REQUIRE(mn);
    tm_item(mn, &lo);
    CHECK_NEAR(lo, 1.0, 0);
    tm_free(s1);
    tm_free(s2);
    tm_free(mn);
    tm_gpt_free(m);
}

static void check_cached_equals_full(bool llama)
{
    tm_gpt *m = tiny_model(llama, 2);
    REQUIRE(m);
    tm_gpt_set_training(m, false);
    bool prev = tm_no_grad_begin();
    tm_tensor *ids = ids_of(2, 10, 50);
    tm_tensor *full = tm_gpt_forward(m, ids, NULL);
    tm_kv_cache *cache = tm_gpt_cache_new(m, 2, 24, TM_F32);
    REQUIRE(ids && full && cache);
    CHECK_SHAPE(full, 2, 10, 50);
    /* a prompt of 4, then one token at a time, then a chunk of 3 */
    int64_t cuts[] = {0, 4, 5, 6, 7, 10};
    for (int i = 0; i + 1 < 6; i++) {
        int64_t a = cuts[i], n = cuts[i + 1] - cuts[i];
        tm_tensor *part = tm_narrow(ids, 1, a, n);
        tm_gpt_fwd_opts o = {cache, false};
        tm_tensor *lg = part ? tm_gpt_forward(m, part, &o) : NULL;
        tm_tensor *want = tm_narrow(full, 1, a, n);
        REQUIRE(lg && want);
        CHECK_INT(tm_kv_cache_length(cache, 0), a + n);
        /* F32 attention over the same keys in a different blocking: a few
         * ulps of the logits, well under 1e-5 of their size */
        CHECK(rel_diff(lg, want) <= 1e-5);
        tm_free(part);
        tm_free(lg);
        tm_free(want);
    }
    /* last_only: the last position's logits, [B, 1, V] */
    tm_kv_cache_reset(cache);
    tm_gpt_fwd_opts o = {cache, true};
    tm_tensor *last = tm_gpt_forward(m, ids, &o);
    tm_tensor *want = tm_narrow(full, 1, 9, 1);
    REQUIRE(last && want);
    CHECK_SHAPE(last, 2, 1, 50);
    CHECK(rel_diff(last, want) <= 1e-5);
    tm_free(last);
    tm_free(want);
    tm_no_grad_end(prev);
    tm_kv_cache_free(cache);
    tm_free(ids);
    tm_free(full);
    tm_gpt_free(m);
}

TEST(gpt_cached_forward_equals_uncached_learned_positions)
{
    check_cached_equals_full(false);
}

TEST(gpt_cached_forward_equals_uncached_rope_gqa)
{
    check_cached_equals_full(true);
}

TEST(gpt_loss_is_mean_cross_entropy_and_backward_fills_grads)
{
    tm_gpt *m = tiny_model(true, 4);
    tm_tensor *ids = ids_of(2, 8, 50), *logits = NULL;
    REQUIRE(m && ids);
    tm_tensor *loss = tm_gpt_loss(m, ids, ids, &logits);
    REQUIRE(loss && logits);
    CHECK(tm_ndim(loss) == 0);
    double l = 0;
    tm_item(loss, &l);
    /* weights ~N(0, 0.02): logits near 0, loss near ln V */
    CHECK_NEAR(l, log(50.0), 0.1);
    REQUIRE(tm_backward(loss) == TM_OK);
    tm_params *ps = tm_gpt_params(m);
    for (int i = 0; i < tm_params_count(ps); i++)
        CHECK(tm_grad(tm_params_get(ps, i)) != NULL);
    tm_free(loss);
    tm_free(logits);
    tm_free(ids);
    tm_gpt_free(m);
}

TEST(gpt_forward_rejects_bad_ids)
{
    tm_gpt *m = tiny_model(false, 5);
    REQUIRE(m);
    tm_tensor *big = tm_full((int64_t[]){1, 3}, 2, 50, TM_I64);
    tm_tensor *neg = tm_full((int64_t[]){1, 3}, 2, -1, TM_I32);
    tm_tensor *flt = tm_zeros((int64_t[]){1, 3}, 2, TM_F32);
    tm_tensor *one = tm_zeros((int64_t[]){3}, 1, TM_I64);
    tm_tensor *longer = tm_zeros((int64_t[]){1, 25}, 2, TM_I64);
    tm_tensor *ok = tm_zeros((int64_t[]){1, 20}, 2, TM_I64);
    REQUIRE(big && neg && flt && one && longer && ok);
    CHECK_NULL_ERR(tm_gpt_forward(m, big, NULL), TM_ERANGE, "50");
    CHECK_NULL_ERR(tm_gpt_forward(m, big, NULL), TM_ERANGE, "tm_gpt_forward");
    CHECK_NULL_ERR(tm_gpt_forward(m, neg, NULL), TM_ERANGE, "-1");
    CHECK_NULL_ERR(tm_gpt_forward(m, flt, NULL), TM_EDTYPE,
                   "ids must be i64 or i32, not f32");
    CHECK_NULL_ERR(tm_gpt_forward(m, one, NULL), TM_ESHAPE,
                   "ids must be [B, T]");
    CHECK_NULL_ERR(tm_gpt_forward(m, longer, NULL), TM_ERANGE,
                   "positions 0..24 pass the context 24");
    CHECK_NULL_ERR(tm_gpt_loss(m, ok, big, NULL), TM_ESHAPE,
                   "targets [1,3] must have the shape of ids [1,20]");
    /* a cache: positions continue after it, up to the context */
    tm_kv_cache *cache = tm_gpt_cache_new(m, 1, 24, TM_F32);
    REQUIRE(cache);
    tm_gpt_fwd_opts o = {cache, false};
    tm_tensor *lg = tm_gpt_forward(m, ok, &o);
    CHECK(lg != NULL);
    tm_free(lg);
    CHECK_NULL_ERR(tm_gpt_forward(m, ok, &o), TM_ERANGE,
                   "positions 20..39 pass the context 24");
    CHECK_INT(tm_kv_cache_length(cache, 0), 20);
    /* a failure inside the layers leaves the cache where it was */
    CHECK_NULL_ERR(tm_gpt_forward(m, big, &o), TM_ERANGE, "50");
    CHECK_INT(tm_kv_cache_length(cache, 0), 20);
    CHECK_INT(tm_kv_cache_length(cache, 1), 20);
    CHECK(tm_gpt_cache_new(m, 1, 25, TM_F32) == NULL);
    CHECK(strstr(tm_last_error(), "max_len 25 is not in [1, context 24]"));
    tm_kv_cache_free(cache);
    tm_free(big);
    tm_free(neg);
    tm_free(flt);
    tm_free(one);
    tm_free(longer);
    tm_free(ok);
    tm_gpt_free(m);
}

/* Logits of the fixed ids, eval mode, no grad. */
static tm_tensor *logits_of(tm_gpt *m)
{
    tm_tensor *ids = ids_of(1, 6, 50);
    bool prev = tm_no_grad_begin();
    tm_gpt_set_training(m, false);
    tm_tensor *lg = ids ? tm_gpt_forward(m, ids, NULL) : NULL;
    tm_no_grad_end(prev);
    tm_free(ids);
    return lg;
}

TEST(gpt_save_load_round_trip_is_exact)
{
    for (int llama = 0; llama < 2; llama++) {
        char dir[TT_PATH_MAX], sub[TT_PATH_MAX];
        REQUIRE(tt_tmpdir(dir));
        tt_path(sub, dir, "model");
        tm_gpt *m = tiny_model(llama, 6);
        REQUIRE(m);
        REQUIRE(tm_gpt_save(m, sub) == TM_OK);
        tm_gpt *back = tm_gpt_load(sub);
        REQUIRE(back);
        CHECK(!tm_gpt_training(back));
        tm_tensor *a = logits_of(m), *b = logits_of(back);
        REQUIRE(a && b);
        CHECK(rel_diff(b, a) == 0.0);
        const tm_gpt_config *c = tm_gpt_config_of(back);
        CHECK_INT(c->n_kv_heads, llama ? 2 : 4);
        CHECK(c->tie_embeddings == !llama);
        tm_free(a);
        tm_free(b);
        tm_gpt_free(m);
        tm_gpt_free(back);
        tt_rmdir(sub);
        tt_rmdir(dir);
    }
}

/* A model dir whose model.safetensors holds the model's tensors with
 * `drop` left out, `reshape` given shape [1], and `extra` added. */
static bool write_dir(const char *dir, const char *drop, const char *reshape,
                      const char *extra)
{
    tm_gpt *m = tiny_model(false, 7);
    if (!m || tm_gpt_save(m, dir)) {
        tm_gpt_free(m);
        return false;
    }
    tm_params *ps = tm_gpt_params(m);
    int n = tm_params_count(ps), k = 0;
    const char *names[64];
    tm_tensor *ts[64];
    tm_tensor *small = tm_zeros((int64_t[]){1}, 1, TM_F32);
    for (int i = 0; i < n; i++) {
        const char *name = tm_params_name(ps, i);
        if (drop && !strcmp(name, drop)) continue;
        names[k] = name;
        ts[k++] = reshape && !strcmp(name, reshape) ? small
                                                    : tm_params_get(ps, i);
    }
    if (extra) {
        names[k] = extra;
        ts[k++] = small;
    }
    char path[TT_PATH_MAX];
    tt_path(path, dir, "model.safetensors");
    bool ok = tm_safetensors_save(path, names, ts, k, NULL, NULL, 0) == TM_OK;
    tm_free(small);
    tm_gpt_free(m);
    return ok;
}

static void check_load_fails(const char *file, int line, const char *dir,
                             tm_status st, const char *substr)
{
    tm_clear_error();
    tm_gpt *m = tm_gpt_load(dir);
    tt_check_error(file, line, "tm_gpt_load", m == NULL, st, substr);
    tm_gpt_free(m);
}
#define CHECK_LOAD_FAILS(dir, st, substr)                                     \
    check_load_fails(__FILE__, __LINE__, (dir), (st), (substr))

TEST(gpt_load_errors_name_the_tensor)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_dir(dir, "model.layers.1.mlp.up_proj.bias", NULL, NULL));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT,
                     "tensor 'model.layers.1.mlp.up_proj.bias' is missing");
    REQUIRE(write_dir(dir, NULL, "model.norm.weight", NULL));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT,
                     "tensor 'model.norm.weight' has shape [1], the config "
                     "needs [32]");
    REQUIRE(write_dir(dir, NULL, NULL, "lm_head.weight"));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT,
                     "unexpected tensor 'lm_head.weight' (the config ties");
    /* rotary_emb.inv_freq buffers of old checkpoints are skipped */
    REQUIRE(write_dir(dir, NULL, NULL,
                      "model.layers.0.self_attn.rotary_emb.inv_freq"));
    tm_gpt *m = tm_gpt_load(dir);
    CHECK(m != NULL);
    tm_gpt_free(m);

    char path[TT_PATH_MAX];
    tt_path(path, dir, "config.json");
    const char bad[] = "{\"model_type\": \"llama\", \"vocab_size\": 50,";
    REQUIRE(tt_write_file(path, bad, sizeof bad - 1));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "config.json");
    const char small[] =
        "{\"model_type\": \"foundry_gpt\", \"vocab_size\": 50, "
        "\"hidden_size\": 32, \"intermediate_size\": 64, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
        "\"max_position_embeddings\": 24}";
    REQUIRE(tt_write_file(path, small, sizeof small - 1));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "has shape [48,32], the config needs "
                                      "[64,32]");
    remove(path);
    CHECK_LOAD_FAILS(dir, TM_EIO, "config.json");
    tt_path(path, dir, "model.safetensors");
    const char junk[] = "not a safetensors file";
    REQUIRE(tt_write_file(path, junk, sizeof junk - 1));
    REQUIRE(write_dir(dir, NULL, NULL, NULL)); /* config back */
    REQUIRE(tt_write_file(path, junk, sizeof junk - 1));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "tm_gpt_load");
    tt_rmdir(dir);
    CHECK_LOAD_FAILS("/nonexistent/foundry/model", TM_EIO, "cannot open");
}

static tm_status new_forward_backward(void)
{
    tm_gpt_config c = tiny(true);
    c.n_layers = 1;
    tm_rng rng = tm_rng_new(1);
    tm_gpt *m = tm_gpt_new(&c, &rng);
    tm_tensor *ids = m ? ids_of(1, 4, 50) : NULL;
    tm_tensor *loss = ids ? tm_gpt_loss(m, ids, ids, NULL) : NULL;
    tm_status st = loss ? tm_backward(loss) : tm_last_status();
    tm_free(loss);
    tm_free(ids);
    tm_gpt_free(m);
    return st;
}

TEST(gpt_every_allocation_failure_is_clean)
{
    CHECK_EVERY_ALLOC_FAILURE(new_forward_backward, 30);
}

TEST(gpt_load_converts_bf16_and_f16_weights)
{
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_gpt *m = tiny_model(true, 8);
    REQUIRE(m && tm_gpt_save(m, dir) == TM_OK);
    tm_params *ps = tm_gpt_params(m);
    int n = tm_params_count(ps);
    const char *names[64];
    tm_tensor *ts[64];
    for (int i = 0; i < n; i++) {
        names[i] = tm_params_name(ps, i);
        ts[i] = tm_to_dtype(tm_params_get(ps, i), i % 2 ? TM_BF16 : TM_F16);
        REQUIRE(ts[i]);
    }
    tt_path(path, dir, "model.safetensors");
    REQUIRE(tm_safetensors_save(path, names, ts, n, NULL, NULL, 0) == TM_OK);
    tm_gpt *back = tm_gpt_load(dir);
    REQUIRE(back);
    tm_params *bs = tm_gpt_params(back);
    for (int i = 0; i < n; i++) {
        tm_tensor *want = tm_to_dtype(ts[i], TM_F32);
        REQUIRE(want);
        /* the conversion to F32 is exact */
        CHECK(rel_diff(tm_params_get(bs, i), want) == 0.0);
        CHECK(tm_dtype_of(tm_params_get(bs, i)) == TM_F32);
        tm_free(want);
        tm_free(ts[i]);
    }
    tm_gpt_free(back);
    tm_gpt_free(m);
    tt_rmdir(dir);
}
