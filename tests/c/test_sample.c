/* test_sample.c — the sampler: greedy and its ties, each processor's
 * rule on hand-computed rows, seeded reproducibility, and bad input.  The
 * comparison with a transcription of Hugging Face's warpers and the draw
 * frequencies are in tests/python/test_generate.py. */
#include "harness.h"

#include "foundry/models.h"

static tm_sampler *mk(double temp, int64_t k, double p, double minp, double pen, uint64_t seed)
{
    tm_sample_opts o = tm_sample_defaults();
    o.temperature = temp, o.top_k = k, o.top_p = p, o.min_p = minp;
    o.repetition_penalty = pen, o.seed = seed;
    return tm_sampler_new(&o);
}

TEST(sample_defaults_are_plain_sampling)
{
    tm_sample_opts o = tm_sample_defaults();
    CHECK(o.temperature == 1.0 && o.top_k == 0 && o.top_p == 1.0);
    CHECK(o.min_p == 0.0 && o.repetition_penalty == 1.0 && o.seed == 0);
}

TEST(sample_greedy_takes_the_argmax_and_the_lowest_id_on_ties)
{
    tm_sampler *s = mk(0, 0, 1, 0, 1, 0);
    REQUIRE(s);
    float l[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
    CHECK_INT(tm_sampler_sample(s, l, 5, NULL, 0), 1);
    float m[3] = {-INFINITY, -3.0f, -INFINITY};
    CHECK_INT(tm_sampler_sample(s, m, 3, NULL, 0), 1);
    tm_sampler_free(s);
}

TEST(sample_repetition_penalty_divides_positive_and_multiplies_negative_logits_once)
{
    /* penalty 2: id 0 (2.0 -> 1.0, seen twice but penalised once),
     * id 2 (-1.0 -> -2.0); the greedy winner moves from 0 to 1 (1.5). */
    tm_sampler *s = mk(0, 0, 1, 0, 2.0, 0);
    REQUIRE(s);
    float l[4] = {2.0f, 1.5f, -1.0f, 0.0f};
    int64_t hist[3] = {0, 2, 0};
    CHECK_INT(tm_sampler_sample(s, l, 4, NULL, 0), 0);
    CHECK_INT(tm_sampler_sample(s, l, 4, hist, 3), 1);
    tm_sampler_free(s);
    s = mk(1, 0, 1, 0, 2.0, 0);
    REQUIRE(s);
    double p[4];
    REQUIRE(tm_sampler_probs(s, l, 4, hist, 3, p) == TM_OK);
    double e[4] = {exp(1.0), exp(1.5), exp(-2.0), exp(0.0)}, z = e[0] + e[1] + e[2] + e[3];
    for (int i = 0; i < 4; i++) CHECK_NEAR(p[i], e[i] / z, 1e-15); /* both in double */
    tm_sampler_free(s);
}

TEST(sample_top_k_keeps_every_logit_tied_with_the_kth)
{
    tm_sampler *s = mk(1, 2, 1, 0, 1, 0);
    REQUIRE(s);
    float l[5] = {1.0f, 3.0f, 2.0f, 2.0f, 0.0f};
    double p[5];
    REQUIRE(tm_sampler_probs(s, l, 5, NULL, 0, p) == TM_OK);
    CHECK(p[0] == 0 && p[4] == 0);
    CHECK(p[1] > 0 && p[2] > 0 && p[3] > 0);
    CHECK_NEAR(p[2], p[3], 0);
    tm_sampler_free(s);
}

TEST(sample_top_p_drops_the_unlikely_tail_and_keeps_at_least_one)
{
    /* probs 0.5, 0.25, 0.125, 0.125 (logits log2 apart): top_p 0.7 drops
     * the ascending prefix with cumsum <= 0.3, i.e. both 0.125s (cumsum
     * 0.125, 0.25) but not 0.25 (cumsum 0.5). */
    float l[4] = {(float)log(4.0), (float)log(2.0), 0.0f, 0.0f};
    tm_sampler *s = mk(1, 0, 0.7, 0, 1, 0);
    REQUIRE(s);
    double p[4];
    REQUIRE(tm_sampler_probs(s, l, 4, NULL, 0, p) == TM_OK);
    CHECK(p[2] == 0 && p[3] == 0);
    CHECK_NEAR(p[0], 2.0 / 3.0, 1e-7); /* float logits: log 4 rounded */
    tm_sampler_free(s);
    s = mk(1, 0, 0.0, 0, 1, 0);
    REQUIRE(s);
    REQUIRE(tm_sampler_probs(s, l, 4, NULL, 0, p) == TM_OK);
    CHECK(p[0] == 1 && p[1] == 0 && p[2] == 0 && p[3] == 0);
    tm_sampler_free(s);
}

TEST(sample_min_p_drops_tokens_below_the_scaled_maximum)
{
    /* probs relative to the top: 1, 0.5, 0.25, 0.25; min_p 0.3 keeps 2. */
    float l[4] = {(float)log(4.0), (float)log(2.0), 0.0f, 0.0f};
    tm_sampler *s = mk(1, 0, 1, 0.3, 1, 0);
    REQUIRE(s);
    double p[4];
    REQUIRE(tm_sampler_probs(s, l, 4, NULL, 0, p) == TM_OK);
    CHECK(p[0] > 0 && p[1] > 0 && p[2] == 0 && p[3] == 0);
    tm_sampler_free(s);
}

TEST(sample_temperature_sharpens_the_distribution)
{
    float l[2] = {1.0f, 0.0f};
    tm_sampler *s = mk(0.5, 0, 1, 0, 1, 0);
    REQUIRE(s);
    double p[2];
    REQUIRE(tm_sampler_probs(s, l, 2, NULL, 0, p) == TM_OK);
    CHECK_NEAR(p[0], exp(2.0) / (exp(2.0) + 1), 1e-15);
    tm_sampler_free(s);
}

TEST(sample_draws_are_reproducible_for_a_seed_and_differ_across_seeds)
{
    float l[16];
    for (int i = 0; i < 16; i++) l[i] = (float)(i % 5) * 0.3f;
    int64_t a[64], b[64], c[64];
    tm_sampler *s1 = mk(1, 0, 1, 0, 1, 7), *s2 = mk(1, 0, 1, 0, 1, 7), *s3 = mk(1, 0, 1, 0, 1, 8);
    REQUIRE(s1 && s2 && s3);
    int differ = 0;
    for (int i = 0; i < 64; i++) {
        a[i] = tm_sampler_sample(s1, l, 16, NULL, 0);
        b[i] = tm_sampler_sample(s2, l, 16, NULL, 0);
        c[i] = tm_sampler_sample(s3, l, 16, NULL, 0);
        CHECK(a[i] >= 0 && a[i] < 16);
        CHECK_INT(a[i], b[i]);
        differ += a[i] != c[i];
    }
    CHECK(differ > 0);
    /* The generator can be saved and restored mid-stream. */
    tm_rng r = tm_sampler_rng(s1);
    int64_t next = tm_sampler_sample(s1, l, 16, NULL, 0);
    tm_sampler_set_rng(s2, r);
    CHECK_INT(tm_sampler_sample(s2, l, 16, NULL, 0), next);
    tm_sampler_free(s1);
    tm_sampler_free(s2);
    tm_sampler_free(s3);
}

TEST(sample_never_draws_a_masked_id)
{
    float l[8] = {0, -INFINITY, 0, -INFINITY, 0, -INFINITY, 0, -INFINITY};
    tm_sampler *s = mk(1.3, 0, 1, 0, 1, 3);
    REQUIRE(s);
    for (int i = 0; i < 200; i++) {
        int64_t t = tm_sampler_sample(s, l, 8, NULL, 0);
        CHECK(t >= 0 && t % 2 == 0);
    }
    tm_sampler_free(s);
}

TEST(sample_rejects_bad_options)
{
    tm_sample_opts o = tm_sample_defaults();
    o.temperature = -1;
    CHECK(tm_sampler_new(&o) == NULL);
    CHECK(strstr(tm_last_error(), "temperature") != NULL);
    o = tm_sample_defaults(), o.top_k = -2;
    CHECK(tm_sampler_new(&o) == NULL && strstr(tm_last_error(), "top_k"));
    o = tm_sample_defaults(), o.top_p = 1.5;
    CHECK(tm_sampler_new(&o) == NULL && strstr(tm_last_error(), "top_p"));
    o = tm_sample_defaults(), o.min_p = NAN;
    CHECK(tm_sampler_new(&o) == NULL && strstr(tm_last_error(), "min_p"));
    o = tm_sample_defaults(), o.repetition_penalty = 0;
    CHECK(tm_sampler_new(&o) == NULL && strstr(tm_last_error(), "repetition_penalty"));
    CHECK_INT(tm_last_status(), TM_EINVAL);
}

TEST(sample_rejects_bad_logits_and_history)
{
    tm_sampler *s = mk(1, 0, 1, 0, 1.2, 0);
    REQUIRE(s);
    float l[3] = {0, 1, NAN};
    CHECK_STATUS((tm_status)tm_sampler_sample(s, l, 3, NULL, 0), TM_EINVAL, "logit 2 is nan");
    float inf[2] = {-INFINITY, -INFINITY};
    CHECK_STATUS((tm_status)tm_sampler_sample(s, inf, 2, NULL, 0), TM_EINVAL, "-inf");
    float ok[3] = {0, 1, 2};
    int64_t h[2] = {1, 3};
    CHECK_STATUS((tm_status)tm_sampler_sample(s, ok, 3, h, 2), TM_ERANGE, "history[1] = 3");
    CHECK_STATUS((tm_status)tm_sampler_sample(s, ok, 0, NULL, 0), TM_EINVAL, "vocab");
    CHECK_STATUS((tm_status)tm_sampler_sample(s, ok, 3, NULL, 2), TM_EINVAL, "history");
    CHECK_STATUS((tm_status)tm_sampler_sample(NULL, ok, 3, NULL, 0), TM_EINVAL, "NULL");
    tm_sampler_free(s);
}
