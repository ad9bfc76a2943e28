/* test_generate.c — generation with the KV cache: greedy tokens equal the
 * argmax of the uncached forward recomputed each step (GPT and Llama
 * shapes), seeded sampling is reproducible, the stream and the callback
 * see the same tokens, stop tokens and the limits end generation, and bad
 * input is refused with a message. */
#include "harness.h"

#include "foundry/models.h"

#include <stdlib.h>

enum { V = 61, CTX = 24 };

static tm_gpt *tiny(const char *preset, uint64_t seed)
{
    tm_gpt_config c;
    if (tm_gpt_preset(preset, &c) != TM_OK) return NULL;
    c.vocab_size = V, c.context = CTX, c.d_model = 32, c.n_layers = 2;
    c.n_heads = 4, c.n_kv_heads = c.pos == TM_GPT_POS_ROPE ? 2 : 4;
    c.head_dim = 0, c.d_ff = 48, c.dropout = 0.0;
    c.init_std = 0.3; /* spread logits: fewer near-ties between ids */
    if (c.pos == TM_GPT_POS_ROPE) c.rope.head_dim = 8;
    tm_rng rng = tm_rng_new(seed);
    return tm_gpt_new(&c, &rng);
}

/* Logits of the last position of ids[n] without a cache, into row[V]. */
static tm_status uncached_last(tm_gpt *m, const int64_t *ids, int64_t n, float *row)
{
    tm_tensor *x = tm_from_buffer(ids, (int64_t[]){1, n}, 2, TM_I64);
    if (!x) return tm_last_status();
    bool g = tm_grad_enabled();
    tm_set_grad_enabled(false);
    tm_tensor *l = tm_gpt_forward(m, x, NULL);
    tm_set_grad_enabled(g);
    tm_status st = l ? TM_OK : tm_last_status();
    if (l) {
        tm_tensor *last = tm_select(l, 1, n - 1);
        st = last ? tm_copy_to_buffer(last, row, V * sizeof *row, TM_F32) : tm_last_status();
        tm_free(last);
    }
    tm_free(l);
    tm_free(x);
    return st;
}

static void check_greedy_matches_uncached(const char *preset)
{
    tm_gpt *m = tiny(preset, 5);
    REQUIRE(m);
    tm_gpt_set_training(m, false);
    int64_t seq[CTX] = {3, 17, 42, 8, 0};
    int64_t np = 5, out[CTX];
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = 12;
    o.sample.temperature = 0;
    int64_t n = -1;
    REQUIRE(tm_gpt_generate(m, seq, np, &o, out, &n) == TM_OK);
    CHECK_INT(n, 12);
    float row[V];
    for (int64_t i = 0; i < n; i++) {
        REQUIRE(uncached_last(m, seq, np + i, row) == TM_OK);
        int64_t best = 0;
        for (int64_t j = 1; j < V; j++)
            if (row[j] > row[best]) best = j;
        /* The cached forward equals the uncached one to rounding (float
         * sums in another order, ~1e-6 here): a different id is allowed
         * only when it ties the best within 1e-4. */
        CHECK(out[i] == best || row[out[i]] >= row[best] - 1e-4f);
        seq[np + i] = out[i];
    }
    tm_gpt_free(m);
}

TEST(generate_greedy_with_the_cache_is_the_uncached_argmax_gpt)
{
    check_greedy_matches_uncached("gpt-tiny");
}

TEST(generate_greedy_with_the_cache_is_the_uncached_argmax_llama)
{
    check_greedy_matches_uncached("llama-tiny");
}

static int64_t run(tm_gpt *m, const tm_generate_opts *o, int64_t *out)
{
    int64_t p[3] = {1, 2, 3}, n = -1;
    if (tm_gpt_generate(m, p, 3, o, out, &n) != TM_OK) return -1;
    return n;
}

TEST(generate_seeded_sampling_is_reproducible)
{
    tm_gpt *m = tiny("gpt-tiny", 1);
    REQUIRE(m);
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = 16;
    o.sample.temperature = 1.5, o.sample.top_k = 20, o.sample.seed = 11;
    int64_t a[16], b[16], c[16];
    REQUIRE(run(m, &o, a) == 16);
    REQUIRE(run(m, &o, b) == 16);
    o.sample.seed = 12;
    REQUIRE(run(m, &o, c) == 16);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
    tm_gpt_free(m);
}

typedef struct seen {
    int64_t tok[CTX];
    int n, stop_after;
} seen;

static bool on_tok(int64_t t, void *user)
{
    seen *s = user;
    s->tok[s->n++] = t;
    return s->n != s->stop_after;
}

TEST(generate_stream_and_callback_see_the_same_tokens)
{
    tm_gpt *m = tiny("gpt-tiny", 2);
    REQUIRE(m);
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = 10;
    o.sample.seed = 4;
    seen s = {.n = 0, .stop_after = -1};
    o.on_token = on_tok, o.user = &s;
    int64_t a[10];
    REQUIRE(run(m, &o, a) == 10);
    CHECK_INT(s.n, 10);
    CHECK(memcmp(a, s.tok, sizeof a) == 0);
    o.on_token = NULL;
    int64_t p[3] = {1, 2, 3};
    tm_gpt_stream *st = tm_gpt_stream_new(m, p, 3, &o);
    REQUIRE(st);
    for (int i = 0; i < 10; i++) CHECK_INT(tm_gpt_stream_next(st), a[i]);
    CHECK_INT(tm_gpt_stream_next(st), -1);
    CHECK_INT(tm_gpt_stream_next(st), -1);
    CHECK_INT(tm_gpt_stream_count(st), 10);
    tm_gpt_stream_free(st);
    /* The callback ends generation by returning false; its token counts. */
    s.n = 0, s.stop_after = 4;
    o.on_token = on_tok;
    CHECK_INT(run(m, &o, a), 4);
    tm_gpt_free(m);
}

TEST(generate_ends_after_a_stop_token)
{
    tm_gpt *m = tiny("gpt-tiny", 3);
    REQUIRE(m);
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = 12;
    o.sample.seed = 9, o.sample.temperature = 2.0;
    int64_t a[12], b[12];
    REQUIRE(run(m, &o, a) == 12);
    int64_t stop[2] = {V - 1, a[5]};
    o.stop_tokens = stop, o.n_stop = 2;
    int64_t n = run(m, &o, b);
    /* V - 1 might come first too: the first of either ends it. */
    int want = 0;
    while (a[want] != a[5] && a[want] != V - 1) want++;
    CHECK_INT(n, want + 1);
    CHECK(memcmp(a, b, (size_t)(want + 1) * sizeof *a) == 0);
    tm_gpt_free(m);
}

TEST(generate_stops_at_max_new_tokens_and_the_context)
{
    tm_gpt *m = tiny("gpt-tiny", 4);
    REQUIRE(m);
    tm_generate_opts o = tm_generate_defaults();
    int64_t p[CTX], out[CTX], n = -1;
    for (int i = 0; i < CTX; i++) p[i] = i % V;
    o.max_new_tokens = 0;
    REQUIRE(tm_gpt_generate(m, p, 4, &o, out, &n) == TM_OK);
    CHECK_INT(n, 0);
    o.max_new_tokens = 10;
    REQUIRE(tm_gpt_generate(m, p, CTX - 3, &o, out, &n) == TM_OK);
    CHECK_INT(n, 3); /* the sequence fills the context */
    REQUIRE(tm_gpt_generate(m, p, CTX, &o, out, &n) == TM_OK);
    CHECK_INT(n, 0);
    o.cache_dtype = TM_F16;
    REQUIRE(tm_gpt_generate(m, p, 2, &o, out, &n) == TM_OK);
    CHECK_INT(n, 10);
    for (int i = 0; i < 10; i++) CHECK(out[i] >= 0 && out[i] < V);
    tm_gpt_free(m);
}

TEST(generate_restores_grad_mode_and_the_training_flag)
{
    tm_gpt *m = tiny("gpt-tiny", 6);
    REQUIRE(m);
    tm_gpt_set_training(m, true);
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = 3;
    int64_t out[3];
    CHECK_INT(run(m, &o, out), 3);
    CHECK(tm_gpt_training(m));
    CHECK(tm_grad_enabled());
    tm_gpt_free(m);
}

TEST(generate_rejects_bad_prompts_and_options)
{
    tm_gpt *m = tiny("gpt-tiny", 7);
    REQUIRE(m);
    tm_generate_opts o = tm_generate_defaults();
    int64_t p[CTX + 1] = {0}, out[64], n;
    CHECK_STATUS(tm_gpt_generate(m, p, 0, &o, out, &n), TM_EINVAL, "prompt is empty");
    int64_t bad[3] = {1, V, 2};
    CHECK_STATUS(tm_gpt_generate(m, bad, 3, &o, out, &n), TM_ERANGE, "prompt[1] = 61");
    bad[1] = -3;
    CHECK_STATUS(tm_gpt_generate(m, bad, 3, &o, out, &n), TM_ERANGE, "prompt[1] = -3");
    CHECK_STATUS(tm_gpt_generate(m, p, CTX + 1, &o, out, &n), TM_EINVAL, "longer than the model's context 24");
    int64_t stop[1] = {V + 5};
    o.stop_tokens = stop, o.n_stop = 1;
    CHECK_STATUS(tm_gpt_generate(m, p, 2, &o, out, &n), TM_ERANGE, "stop_tokens[0] = 66");
    o = tm_generate_defaults();
    o.max_new_tokens = -1;
    CHECK_STATUS(tm_gpt_generate(m, p, 2, &o, out, &n), TM_EINVAL, "max_new_tokens -1");
    o = tm_generate_defaults();
    o.sample.top_p = 2;
    CHECK_STATUS(tm_gpt_generate(m, p, 2, &o, out, &n), TM_EINVAL, "top_p 2");
    o = tm_generate_defaults();
    CHECK_STATUS(tm_gpt_generate(m, p, 2, &o, NULL, &n), TM_EINVAL, "out is NULL");
    CHECK_STATUS(tm_gpt_generate(NULL, p, 2, &o, out, &n), TM_EINVAL, "model is NULL");
    CHECK(tm_gpt_stream_new(m, p, 0, &o) == NULL);
    CHECK(strstr(tm_last_error(), "tm_gpt_stream_new") != NULL);
    CHECK(tm_gpt_stream_next(NULL) < -1);
    tm_gpt_free(m);
}

static tm_gpt *g_model;

static tm_status generate_three(void)
{
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = 3;
    o.sample.top_p = 0.9, o.sample.repetition_penalty = 1.1;
    int64_t p[2] = {4, 9}, out[3], n;
    return tm_gpt_generate(g_model, p, 2, &o, out, &n);
}

TEST(generate_fails_cleanly_at_every_allocation)
{
    g_model = tiny("gpt-tiny", 8);
    REQUIRE(g_model);
    CHECK_EVERY_ALLOC_FAILURE(generate_three, 5);
    tm_gpt_free(g_model);
    g_model = NULL;
}
