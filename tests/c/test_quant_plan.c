/* test_quant_plan.c — type plans: glob rules in order, the 1-D and >= 2-D
 * defaults, the fallback when a row is not whole blocks, and the named
 * mixes (expected dtypes written out by hand from the documented rules). */
#include "harness.h"

#include "foundry/quantize.h"

static tm_dtype pick(const tm_quant_plan *p, const char *name, int64_t d0,
                     int64_t d1, bool *fb)
{
    int64_t shape[2] = {d0, d1};
    return tm_quant_plan_pick(p, name, shape,
                              d1 > 0 ? 2 : 1, fb);
}

TEST(quant_plan_rules_first_match_wins_then_defaults)
{
    static const tm_quant_rule rules[] = {
        {"*embed_tokens*", TM_F16},
        {"model.layers.?.mlp.*", TM_Q8_0},
        {"model.layers.*", TM_Q4_1},
    };
    tm_quant_plan p = {TM_Q4_0, TM_F32, rules, 3, TM_F32};
    bool fb = true;
    CHECK(pick(&p, "model.embed_tokens.weight", 1024, 128, &fb) == TM_F16);
    CHECK(!fb);
    CHECK(pick(&p, "model.layers.3.mlp.up_proj.weight", 512, 128, &fb) == TM_Q8_0);
    /* `?` is exactly one character: layer 12 goes to the next rule. */
    CHECK(pick(&p, "model.layers.12.mlp.up_proj.weight", 512, 128, &fb) == TM_Q4_1);
    CHECK(pick(&p, "lm_head.weight", 1024, 128, &fb) == TM_Q4_0);
    CHECK(pick(&p, "model.norm.weight", 128, 0, &fb) == TM_F32);
    /* A rule applies to 1-D tensors too. */
    CHECK(pick(&p, "model.layers.0.input_layernorm.weight", 128, 0, &fb) == TM_Q4_1);
    CHECK(!fb);
}

TEST(quant_plan_glob_edge_cases)
{
    static const tm_quant_rule r1[] = {{"*", TM_Q8_0}};
    static const tm_quant_rule r2[] = {{"a*b*c", TM_Q8_0}};
    static const tm_quant_rule r3[] = {{"abc", TM_Q8_0}};
    tm_quant_plan p1 = {TM_F32, TM_F32, r1, 1, TM_F32};
    tm_quant_plan p2 = {TM_F32, TM_F32, r2, 1, TM_F32};
    tm_quant_plan p3 = {TM_F32, TM_F32, r3, 1, TM_F32};
    CHECK(pick(&p1, "", 4, 32, NULL) == TM_Q8_0);
    CHECK(pick(&p2, "abc", 4, 32, NULL) == TM_Q8_0);
    CHECK(pick(&p2, "aXbYbZc", 4, 32, NULL) == TM_Q8_0);
    CHECK(pick(&p2, "aXbYcZ", 4, 32, NULL) == TM_F32);
    CHECK(pick(&p3, "abcd", 4, 32, NULL) == TM_F32);
    CHECK(pick(&p3, "ab", 4, 32, NULL) == TM_F32);
}

TEST(quant_plan_fallback_when_rows_are_not_whole_blocks)
{
    tm_quant_plan p = {TM_Q4_K, TM_F32, NULL, 0, TM_Q5_0};
    bool fb = false;
    CHECK(pick(&p, "w", 64, 512, &fb) == TM_Q4_K);
    CHECK(!fb);
    CHECK(pick(&p, "w", 64, 128, &fb) == TM_Q5_0);
    CHECK(fb);
    /* Neither the type nor the fallback divides 48: F32. */
    fb = false;
    CHECK(pick(&p, "w", 64, 48, &fb) == TM_F32);
    CHECK(fb);
    tm_quant_plan z = {TM_Q8_0, TM_F32, NULL, 0, 0};
    fb = false;
    CHECK(pick(&z, "w", 64, 33, &fb) == TM_F32);
    CHECK(fb);
}

TEST(quant_plan_bad_arguments)
{
    tm_quant_plan p = {TM_Q8_0, TM_F32, NULL, 0, TM_F32};
    int64_t s[2] = {2, 32};
    CHECK((int)tm_quant_plan_pick(NULL, "w", s, 2, NULL) == -1);
    CHECK(tm_last_status() == TM_EINVAL);
    CHECK((int)tm_quant_plan_pick(&p, NULL, s, 2, NULL) == -1);
    CHECK((int)tm_quant_plan_pick(&p, "w", NULL, 2, NULL) == -1);
    CHECK_STATUS(tm_quant_plan_named("q3_k", &p), TM_EINVAL, "q3_k");
    CHECK_STATUS(tm_quant_plan_named(NULL, &p), TM_EINVAL, "NULL");
}

TEST(quant_plan_named_single_type_mixes)
{
    static const struct { const char *name; tm_dtype t, fb; } cases[] = {
        {"q8_0", TM_Q8_0, TM_F32}, {"q4_0", TM_Q4_0, TM_F32},
        {"q4_1", TM_Q4_1, TM_F32}, {"Q5_0", TM_Q5_0, TM_F32},
        {"q5_1", TM_Q5_1, TM_F32}, {"q4_k", TM_Q4_K, TM_Q5_0},
        {"Q5_K", TM_Q5_K, TM_Q5_1}, {"q6_k", TM_Q6_K, TM_Q8_0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tm_quant_plan p;
        REQUIRE(tm_quant_plan_named(cases[i].name, &p) == TM_OK);
        bool fb = true;
        CHECK(pick(&p, "model.layers.0.mlp.down_proj.weight", 256, 512, &fb) == cases[i].t);
        CHECK(!fb);
        CHECK(pick(&p, "model.embed_tokens.weight", 1024, 256, &fb) == cases[i].t);
        CHECK(pick(&p, "model.norm.weight", 256, 0, &fb) == TM_F32);
        /* 128 is whole 32-blocks but not 256-super-blocks. */
        CHECK(pick(&p, "model.layers.0.self_attn.q_proj.weight", 128, 128, &fb) ==
              (tm_dtype_block_elems(cases[i].t) == 256 ? cases[i].fb : cases[i].t));
        CHECK(fb == (tm_dtype_block_elems(cases[i].t) == 256));
    }
}

TEST(quant_plan_named_k_m_mixes)
{
    tm_quant_plan p;
    REQUIRE(tm_quant_plan_named("q4_k_m", &p) == TM_OK);
    CHECK(pick(&p, "lm_head.weight", 1024, 256, NULL) == TM_Q6_K);
    CHECK(pick(&p, "model.embed_tokens.weight", 1024, 256, NULL) == TM_Q6_K);
    CHECK(pick(&p, "model.layers.0.self_attn.v_proj.weight", 256, 256, NULL) == TM_Q6_K);
    CHECK(pick(&p, "model.layers.1.self_attn.v_proj.weight", 256, 256, NULL) == TM_Q4_K);
    CHECK(pick(&p, "model.layers.10.mlp.down_proj.weight", 256, 1024, NULL) == TM_Q6_K);
    CHECK(pick(&p, "model.layers.13.mlp.down_proj.weight", 256, 1024, NULL) == TM_Q4_K);
    CHECK(pick(&p, "model.layers.2.self_attn.q_proj.weight", 256, 256, NULL) == TM_Q4_K);
    CHECK(pick(&p, "model.layers.2.mlp.up_proj.weight", 1024, 256, NULL) == TM_Q4_K);
    CHECK(pick(&p, "model.layers.2.input_layernorm.weight", 256, 0, NULL) == TM_F32);
    REQUIRE(tm_quant_plan_named("Q5_K_M", &p) == TM_OK);
    CHECK(pick(&p, "model.layers.4.mlp.down_proj.weight", 256, 1024, NULL) == TM_Q6_K);
    CHECK(pick(&p, "model.layers.5.mlp.down_proj.weight", 256, 1024, NULL) == TM_Q5_K);
    bool fb = false;
    CHECK(pick(&p, "model.layers.5.mlp.up_proj.weight", 512, 128, &fb) == TM_Q5_1);
    CHECK(fb);
}
