/* test_gpt_config.c — the transformer's configuration: presets, the range
 * check naming the field, and config.json (round trips, a real Hugging Face
 * Llama config, malformed files). */
#include "harness.h"

#include <stdlib.h>

TEST(gpt_preset_gpt2_is_the_124m_shape)
{
    tm_gpt_config c;
    REQUIRE(tm_gpt_preset("gpt2", &c) == TM_OK);
    CHECK_INT(c.vocab_size, 50257);
    CHECK_INT(c.context, 1024);
    CHECK_INT(c.d_model, 768);
    CHECK_INT(c.n_layers, 12);
    CHECK_INT(c.n_heads, 12);
    CHECK_INT(c.d_ff, 3072);
    CHECK_INT(tm_gpt_config_head_dim(&c), 64);
    CHECK(c.pos == TM_GPT_POS_LEARNED && c.norm == TM_GPT_LAYERNORM);
    CHECK(c.mlp == TM_GPT_MLP_GELU_TANH && c.attn_bias && c.mlp_bias);
    CHECK(c.tie_embeddings);
    CHECK(tm_gpt_config_check(&c) == TM_OK);
}

TEST(gpt_preset_smollm2_is_llama_shaped_with_gqa)
{
    tm_gpt_config c;
    REQUIRE(tm_gpt_preset("smollm2-135m", &c) == TM_OK);
    CHECK_INT(c.vocab_size, 49152);
    CHECK_INT(c.d_model, 576);
    CHECK_INT(c.n_layers, 30);
    CHECK_INT(c.n_heads, 9);
    CHECK_INT(c.n_kv_heads, 3);
    CHECK_INT(c.d_ff, 1536);
    CHECK_NEAR(c.rope.theta, 1e5, 0);
    CHECK(c.pos == TM_GPT_POS_ROPE && c.norm == TM_GPT_RMSNORM);
    CHECK(c.mlp == TM_GPT_MLP_SWIGLU && !c.attn_bias && !c.mlp_bias);
    CHECK(c.tie_embeddings);
}

TEST(gpt_every_preset_passes_the_check)
{
    const char *names[] = {"gpt2", "gpt2-medium", "smollm2-135m",
                           "smollm2-360m", "tinyllama-1.1b", "llama3.2-1b",
                           "llama3-8b", "gpt-tiny", "llama-tiny"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        tm_gpt_config c;
        CHECK(tm_gpt_preset(names[i], &c) == TM_OK);
        CHECK(tm_gpt_config_check(&c) == TM_OK);
    }
    tm_gpt_config c;
    REQUIRE(tm_gpt_preset("llama3.2-1b", &c) == TM_OK);
    CHECK(c.rope.scaling == TM_ROPE_SCALING_LLAMA3);
    CHECK_NEAR(c.rope.factor, 32.0, 0);
    REQUIRE(tm_gpt_preset("llama-tiny", &c) == TM_OK);
    CHECK(c.n_kv_heads < c.n_heads);
}

TEST(gpt_unknown_preset_lists_the_known_names)
{
    tm_gpt_config c;
    CHECK_STATUS(tm_gpt_preset("gpt5", &c), TM_EINVAL,
                 "unknown preset 'gpt5' (known: gpt2, gpt2-medium");
    CHECK_STATUS(tm_gpt_preset("gpt5", &c), TM_EINVAL, "llama-tiny");
}

/* The check on a gpt-tiny config with one field changed. */
static tm_status check_with(void (*edit)(tm_gpt_config *))
{
    tm_gpt_config c;
    if (tm_gpt_preset("gpt-tiny", &c)) return TM_ESTATE;
    edit(&c);
    return tm_gpt_config_check(&c);
}
static void no_vocab(tm_gpt_config *c) { c->vocab_size = 0; }
static void bad_kv(tm_gpt_config *c) { c->n_kv_heads = 3; }
static void bad_heads(tm_gpt_config *c) { c->n_heads = 3; }
static void bad_dropout(tm_gpt_config *c) { c->dropout = 1.0; }
static void bad_eps(tm_gpt_config *c) { c->norm_eps = 0; }
static void bad_eos(tm_gpt_config *c) { c->eos_id = 4096; }
static void bad_std(tm_gpt_config *c) { c->init_std = -1; }
static void bad_norm(tm_gpt_config *c) { c->norm = (tm_gpt_norm)7; }
static void odd_rope(tm_gpt_config *c)
{
    c->pos = TM_GPT_POS_ROPE;
    c->head_dim = 7;
}
static void bad_theta(tm_gpt_config *c)
{
    c->pos = TM_GPT_POS_ROPE;
    c->rope.theta = -1;
}

TEST(gpt_config_check_names_the_field)
{
    CHECK_STATUS(check_with(no_vocab), TM_EINVAL,
                 "tm_gpt_config_check: vocab_size must be >= 1, not 0");
    CHECK_STATUS(check_with(bad_kv), TM_EINVAL,
                 "n_kv_heads 3 does not divide n_heads 4");
    CHECK_STATUS(check_with(bad_heads), TM_EINVAL,
                 "n_heads 3 does not divide d_model 256");
    CHECK_STATUS(check_with(bad_dropout), TM_EINVAL,
                 "dropout must be in [0, 1), not 1");
    CHECK_STATUS(check_with(bad_eps), TM_EINVAL, "norm_eps");
    CHECK_STATUS(check_with(bad_eos), TM_EINVAL,
                 "eos_id must be -1 or in [0, 4096), not 4096");
    CHECK_STATUS(check_with(bad_std), TM_EINVAL, "init_std");
    CHECK_STATUS(check_with(bad_norm), TM_EINVAL, "norm must be");
    CHECK_STATUS(check_with(odd_rope), TM_EINVAL, "rope: ");
    CHECK_STATUS(check_with(bad_theta), TM_EINVAL, "theta");
}

static bool same_config(const tm_gpt_config *a, const tm_gpt_config *b)
{
    tm_gpt_config x = *a, y = *b;
    /* compare the resolved forms: 0 means head_dim in both */
    x.head_dim = tm_gpt_config_head_dim(a);
    y.head_dim = tm_gpt_config_head_dim(b);
    x.rope.head_dim = y.rope.head_dim = 0;
    if (x.rope.rotary_dim == 0) x.rope.rotary_dim = x.head_dim;
    if (y.rope.rotary_dim == 0) y.rope.rotary_dim = y.head_dim;
    return x.vocab_size == y.vocab_size && x.context == y.context &&
           x.d_model == y.d_model && x.n_layers == y.n_layers &&
           x.n_heads == y.n_heads && x.n_kv_heads == y.n_kv_heads &&
           x.head_dim == y.head_dim && x.d_ff == y.d_ff && x.pos == y.pos &&
           (x.pos != TM_GPT_POS_ROPE ||
            (x.rope.theta == y.rope.theta &&
             x.rope.rotary_dim == y.rope.rotary_dim &&
             x.rope.scaling == y.rope.scaling &&
             x.rope.factor == y.rope.factor &&
             x.rope.low_freq_factor == y.rope.low_freq_factor &&
             x.rope.high_freq_factor == y.rope.high_freq_factor &&
             x.rope.original_max_positions ==
                 y.rope.original_max_positions &&
             x.rope.interleaved == y.rope.interleaved)) &&
           x.norm == y.norm && x.norm_eps == y.norm_eps && x.mlp == y.mlp &&
           x.attn_bias == y.attn_bias && x.mlp_bias == y.mlp_bias &&
           x.tie_embeddings == y.tie_embeddings && x.dropout == y.dropout &&
           x.init_std == y.init_std && x.bos_id == y.bos_id &&
           x.eos_id == y.eos_id;
}

static void round_trip(const char *file, int line, const tm_gpt_config *c)
{
    char *json = tm_gpt_config_to_json(c);
    if (!json) {
        tt_fail(file, line, "to_json failed: %s", tm_last_error());
        return;
    }
    tm_gpt_config back;
    tm_status st = tm_gpt_config_from_json(json, strlen(json), &back);
    if (st) tt_fail(file, line, "from_json failed: %s", tm_last_error());
    else if (!same_config(c, &back))
        tt_fail(file, line, "round trip changed the config:\n%s", json);
    free(json);
}

TEST(gpt_config_json_round_trips)
{
    const char *names[] = {"gpt2", "smollm2-135m", "llama3.2-1b", "gpt-tiny",
                           "llama-tiny", "tinyllama-1.1b"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        tm_gpt_config c;
        REQUIRE(tm_gpt_preset(names[i], &c) == TM_OK);
        round_trip(__FILE__, __LINE__, &c);
    }
    /* every Foundry-only choice, and values that need all 17 digits */
    tm_gpt_config c;
    REQUIRE(tm_gpt_preset("gpt-tiny", &c) == TM_OK);
    c.mlp = TM_GPT_MLP_GELU;
    c.norm = TM_GPT_RMSNORM;
    c.dropout = 0.1;
    c.init_std = 1.0 / 3.0;
    c.norm_eps = 1e-6;
    c.tie_embeddings = false;
    c.eos_id = 7;
    round_trip(__FILE__, __LINE__, &c);
    c.pos = TM_GPT_POS_ROPE;
    c.rope.rotary_dim = 32;
    c.rope.interleaved = true;
    c.rope.theta = 500000.0;
    round_trip(__FILE__, __LINE__, &c);
}

TEST(gpt_config_json_marks_llama_shapes)
{
    tm_gpt_config c;
    REQUIRE(tm_gpt_preset("llama-tiny", &c) == TM_OK);
    char *json = tm_gpt_config_to_json(&c);
    REQUIRE(json);
    CHECK(strstr(json, "\"model_type\": \"llama\""));
    CHECK(strstr(json, "\"hidden_act\": \"silu\""));
    CHECK(strstr(json, "\"num_key_value_heads\": 2"));
    free(json);
    REQUIRE(tm_gpt_preset("gpt-tiny", &c) == TM_OK);
    json = tm_gpt_config_to_json(&c);
    REQUIRE(json);
    CHECK(strstr(json, "\"model_type\": \"foundry_gpt\""));
    CHECK(strstr(json, "\"position_embedding\": \"learned\""));
    free(json);
}

/* SmolLM2-135M's config.json as Hugging Face publishes it. */
static const char SMOLLM2[] =
    "{\n"
    "  \"architectures\": [\"LlamaForCausalLM\"],\n"
    "  \"attention_bias\": false,\n"
    "  \"attention_dropout\": 0.0,\n"
    "  \"bos_token_id\": 0,\n"
    "  \"eos_token_id\": 0,\n"
    "  \"hidden_act\": \"silu\",\n"
    "  \"hidden_size\": 576,\n"
    "  \"initializer_range\": 0.041666666666666664,\n"
    "  \"intermediate_size\": 1536,\n"
    "  \"is_llama_config\": true,\n"
    "  \"max_position_embeddings\": 8192,\n"
    "  \"model_type\": \"llama\",\n"
    "  \"num_attention_heads\": 9,\n"
    "  \"num_hidden_layers\": 30,\n"
    "  \"num_key_value_heads\": 3,\n"
    "  \"pretraining_tp\": 1,\n"
    "  \"rms_norm_eps\": 1e-05,\n"
    "  \"rope_interleaved\": false,\n"
    "  \"rope_scaling\": null,\n"
    "  \"rope_theta\": 100000,\n"
    "  \"tie_word_embeddings\": true,\n"
    "  \"torch_dtype\": \"bfloat16\",\n"
    "  \"transformers_version\": \"4.42.3\",\n"
    "  \"use_cache\": true,\n"
    "  \"vocab_size\": 49152\n"
    "}\n";

TEST(gpt_config_reads_a_real_hf_llama_config)
{
    tm_gpt_config c, want;
    REQUIRE(tm_gpt_config_from_json(SMOLLM2, strlen(SMOLLM2), &c) == TM_OK);
    REQUIRE(tm_gpt_preset("smollm2-135m", &want) == TM_OK);
    CHECK(same_config(&c, &want));
}

/* Llama 3.2 1B: llama3 rope scaling, a list of eos ids in instruct
 * variants. */
static const char LLAMA32[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false,"
    " \"attention_dropout\": 0.0, \"bos_token_id\": 128000,"
    " \"eos_token_id\": [128001, 128008, 128009], \"head_dim\": 64,"
    " \"hidden_act\": \"silu\", \"hidden_size\": 2048,"
    " \"initializer_range\": 0.02, \"intermediate_size\": 8192,"
    " \"max_position_embeddings\": 131072, \"mlp_bias\": false,"
    " \"model_type\": \"llama\", \"num_attention_heads\": 32,"
    " \"num_hidden_layers\": 16, \"num_key_value_heads\": 8,"
    " \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05,"
    " \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0,"
    " \"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192,"
    " \"rope_type\": \"llama3\"}, \"rope_theta\": 500000.0,"
    " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
    " \"transformers_version\": \"4.45.0.dev0\", \"use_cache\": true,"
    " \"vocab_size\": 128256}";

TEST(gpt_config_reads_llama3_rope_scaling_and_eos_lists)
{
    tm_gpt_config c, want;
    REQUIRE(tm_gpt_config_from_json(LLAMA32, strlen(LLAMA32), &c) == TM_OK);
    REQUIRE(tm_gpt_preset("llama3.2-1b", &want) == TM_OK);
    CHECK(same_config(&c, &want));
    CHECK_INT(c.eos_id, 128001);
}

static tm_status parse(const char *text)
{
    tm_gpt_config c;
    return tm_gpt_config_from_json(text, strlen(text), &c);
}

#define BASE                                                                  \
    "\"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16, "     \
    "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, "                  \
    "\"max_position_embeddings\": 16"

TEST(gpt_config_json_errors_name_the_key)
{
    CHECK(parse("{\"model_type\": \"llama\", " BASE "}") == TM_OK);
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"rope_theta\": \"big\"}"),
                 TM_EFORMAT, "\"rope_theta\" must be a number");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", \"vocab_size\": 10}"),
                 TM_EFORMAT, "missing key \"hidden_size\"");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"num_key_value_heads\": 1.5}"),
                 TM_EFORMAT, "\"num_key_value_heads\" must be an integer");
    CHECK_STATUS(parse("{\"model_type\": \"gpt_neox\", " BASE "}"),
                 TM_EUNSUPPORTED, "model_type \"gpt_neox\" is not supported");
    CHECK_STATUS(parse("{" BASE "}"), TM_EFORMAT, "missing key \"model_type\"");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"norm\": \"layernorm\"}"),
                 TM_EFORMAT, "model_type \"llama\" needs rope");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"hidden_act\": \"relu\"}"),
                 TM_EUNSUPPORTED, "hidden_act \"relu\"");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"rope_scaling\": {\"rope_type\": \"longrope\"}}"),
                 TM_EUNSUPPORTED, "rope_scaling type \"longrope\"");
    CHECK_STATUS(parse("{\"model_type\": \"foundry_gpt\", " BASE
                       ", \"mlp\": \"relu\"}"),
                 TM_EFORMAT, "\"mlp\" is \"relu\"");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"attention_dropout\": 0.1}"),
                 TM_EUNSUPPORTED, "attention_dropout");
    /* the range check runs on what was read */
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE
                       ", \"num_key_value_heads\": 3}"),
                 TM_EINVAL, "n_kv_heads 3 does not divide n_heads 2");
    CHECK_STATUS(parse("{\"model_type\": \"llama\", " BASE ","), TM_EFORMAT,
                 "tm_gpt_config_from_json");
    CHECK_STATUS(parse("[1, 2]"), TM_EFORMAT, "not a JSON object");
    CHECK_STATUS(tm_gpt_config_from_json(NULL, 0, NULL), TM_EINVAL, "NULL");
}
