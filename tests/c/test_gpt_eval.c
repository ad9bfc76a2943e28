/* test_gpt_eval.c — tm_gpt_evaluate over a token dataset: exact figures
 * for a model that predicts the uniform distribution, agreement with the
 * loss computed window by window, and bad arguments. */
#include "harness.h"
#include "tmpfiles.h"

#include <stdio.h>

#define V 40

static tm_gpt *small_model(uint64_t seed)
{
    tm_gpt_config c;
    tm_gpt_preset("llama-tiny", &c);
    c.vocab_size = V;
    c.context = 16;
    c.d_model = 32;
    c.n_layers = 1;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.d_ff = 32;
    tm_rng rng = tm_rng_new(seed);
    return tm_gpt_new(&c, &rng);
}

/* 3 documents of 37, 20 and 12 tokens ((i * 11 + d) % V), each of 3 bytes
 * per token; everything in TM_SPLIT_ALL. */
static tm_token_dataset *make_dataset(const char *path)
{
    tm_token_writer *w = tm_token_writer_new_raw(path, V, 0x1234);
    if (!w) return NULL;
    int64_t lens[3] = {37, 20, 12};
    tm_status st = TM_OK;
    for (int d = 0; d < 3 && !st; d++) {
        int32_t ids[64];
        for (int64_t i = 0; i < lens[d]; i++)
            ids[i] = (int32_t)((i * 11 + d) % V);
        st = tm_token_writer_add_tokens(w, ids, lens[d], 3 * lens[d]);
    }
    if (st) {
        tm_token_writer_abort(w);
        return NULL;
    }
    if (tm_token_writer_close(w)) return NULL;
    return tm_token_dataset_open(path);
}

TEST(gpt_evaluate_uniform_model_gives_exact_figures)
{
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_token_dataset *ds = make_dataset(tt_path(path, dir, "d.bin"));
    tm_gpt *m = small_model(1);
    REQUIRE(ds && m);
    /* a zero (tied) embedding makes every logit 0: loss ln V per token */
    bool prev = tm_no_grad_begin();
    tm_fill_(tm_params_find(tm_gpt_params(m), "model.embed_tokens.weight"),
             0.0);
    tm_no_grad_end(prev);
    tm_eval_result r;
    REQUIRE(tm_gpt_evaluate(m, ds, TM_SPLIT_ALL, 2, 8, 0, NULL, &r) ==
            TM_OK);
    CHECK_INT(r.tokens, 69 - 1); /* every token but the first */
    CHECK_NEAR(r.mean_loss, log((double)V), 1e-6);
    CHECK_NEAR(r.perplexity, (double)V, 1e-4);
    CHECK_NEAR(r.bits_per_byte, log((double)V) * 68 / (log(2.0) * 3 * 69),
               1e-6);
    /* argmax of a tie is id 0; the targets that are 0: token 0 of doc 0
     * is never a target, ... count them from the data */
    int64_t toks[69], zeros = 0;
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_ALL, 0, 69, toks) == TM_OK);
    for (int i = 1; i < 69; i++) zeros += toks[i] == 0;
    CHECK_NEAR(r.accuracy, (double)zeros / 68, 1e-12);
    /* max_batches: one batch of 2 windows of 8 */
    REQUIRE(tm_gpt_evaluate(m, ds, TM_SPLIT_ALL, 2, 8, 1, NULL, &r) ==
            TM_OK);
    CHECK_INT(r.tokens, 16);
    CHECK_NEAR(r.bits_per_byte,
               log((double)V) * 16 / (log(2.0) * 3 * 69 * 16.0 / 68), 1e-6);
    tm_gpt_free(m);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(gpt_evaluate_equals_the_loss_window_by_window)
{
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_token_dataset *ds = make_dataset(tt_path(path, dir, "d.bin"));
    tm_gpt *m = small_model(2);
    REQUIRE(ds && m);
    tm_gpt_set_training(m, true);
    tm_eval_result r;
    REQUIRE(tm_gpt_evaluate(m, ds, TM_SPLIT_ALL, 3, 10, 0, NULL, &r) ==
            TM_OK);
    CHECK(tm_gpt_training(m)); /* restored */
    /* windows [0,10], [10,20], ..., [60,68] (a tail of 8) */
    int64_t toks[69];
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_ALL, 0, 69, toks) == TM_OK);
    double sum = 0;
    int64_t n = 0;
    tm_gpt_set_training(m, false);
    bool prev = tm_no_grad_begin();
    for (int64_t s = 0; s < 68; s += 10) {
        int64_t T = 68 - s < 10 ? 68 - s : 10;
        tm_tensor *x = tm_from_buffer(toks + s, (int64_t[]){1, T}, 2, TM_I64);
        tm_tensor *y =
            tm_from_buffer(toks + s + 1, (int64_t[]){1, T}, 2, TM_I64);
        tm_tensor *l = x && y ? tm_gpt_loss(m, x, y, NULL) : NULL;
        double v = 0;
        REQUIRE(l && tm_item(l, &v) == TM_OK);
        sum += v * (double)T;
        n += T;
        tm_free(x);
        tm_free(y);
        tm_free(l);
    }
    tm_no_grad_end(prev);
    CHECK_INT(r.tokens, n);
    /* F32 losses summed in another grouping: rounding only */
    CHECK_NEAR(r.mean_loss, sum / (double)n, 1e-5);
    CHECK(r.accuracy >= 0 && r.accuracy <= 1);
    tm_gpt_free(m);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(gpt_evaluate_rejects_bad_arguments)
{
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_token_dataset *ds = make_dataset(tt_path(path, dir, "d.bin"));
    tm_gpt *m = small_model(3);
    REQUIRE(ds && m);
    tm_eval_result r;
    CHECK_STATUS(tm_gpt_evaluate(m, ds, TM_SPLIT_ALL, 2, 17, 0, NULL, &r),
                 TM_EINVAL, "T 17 is larger than the context 16");
    CHECK_STATUS(tm_gpt_evaluate(m, ds, TM_SPLIT_ALL, 0, 8, 0, NULL, &r),
                 TM_EINVAL, "tm_gpt_evaluate: batch 0");
    CHECK_STATUS(tm_gpt_evaluate(NULL, ds, TM_SPLIT_ALL, 2, 8, 0, NULL, &r),
                 TM_EINVAL, "NULL");
    CHECK_STATUS(tm_gpt_evaluate(m, ds, (tm_token_split)9, 2, 8, 0, NULL,
                                 &r),
                 TM_EINVAL, "tm_gpt_evaluate");
    tm_token_dataset_close(ds);
    /* a dataset of a larger vocabulary */
    tm_token_writer *w = tm_token_writer_new_raw(path, V + 1, 0);
    REQUIRE(w);
    int32_t ids[4] = {1, 2, 3, V};
    REQUIRE(tm_token_writer_add_tokens(w, ids, 4, 4) == TM_OK);
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    REQUIRE((ds = tm_token_dataset_open(path)));
    CHECK_STATUS(tm_gpt_evaluate(m, ds, TM_SPLIT_ALL, 2, 8, 0, NULL, &r),
                 TM_EINVAL, "vocabulary (41) is larger than the model's (40)");
    tm_token_dataset_close(ds);
    tm_gpt_free(m);
    tt_rmdir(dir);
}
