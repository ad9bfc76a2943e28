/*
 * test_bert.c — the BERT encoder of foundry/bert.h on a tiny random model
 * written as BertModel's files: shapes, padding invariance, pooling, and
 * the loader's errors.  Numerical agreement with transformers and
 * sentence-transformers on the real all-MiniLM-L6-v2 is in
 * tests/python/test_minilm.py.
 */
#include "harness.h"
#include "tmpfiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* V=40 words, H=16, 2 layers of 4 heads, I=24, 12 positions, 2 types. */
#define V 40
#define H 16
#define I 24
#define P 12
#define LAYERS 2

static const char CONFIG[] =
    "{\"model_type\": \"bert\", \"architectures\": [\"BertModel\"], "
    "\"vocab_size\": 40, \"hidden_size\": 16, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 4, \"intermediate_size\": 24, "
    "\"max_position_embeddings\": 12, \"type_vocab_size\": 2, "
    "\"layer_norm_eps\": 1e-12, \"hidden_act\": \"gelu\", "
    "\"pad_token_id\": 0, \"position_embedding_type\": \"absolute\"}";

typedef struct spec {
    char name[96];
    int64_t d0, d1;
} spec;

static int specs(spec *s)
{
    int n = 0;
    struct { const char *name; int64_t d0, d1; } emb[] = {
        {"embeddings.word_embeddings.weight", V, H},
        {"embeddings.position_embeddings.weight", P, H},
        {"embeddings.token_type_embeddings.weight", 2, H},
        {"embeddings.LayerNorm.weight", H, 0},
        {"embeddings.LayerNorm.bias", H, 0}};
    for (int k = 0; k < 5; k++) {
        snprintf(s[n].name, sizeof s[n].name, "%s", emb[k].name);
        s[n].d0 = emb[k].d0;
        s[n++].d1 = emb[k].d1;
    }
    struct { const char *name; int64_t d0, d1; } lay[] = {
        {"attention.self.query.weight", H, H},
        {"attention.self.query.bias", H, 0},
        {"attention.self.key.weight", H, H},
        {"attention.self.key.bias", H, 0},
        {"attention.self.value.weight", H, H},
        {"attention.self.value.bias", H, 0},
        {"attention.output.dense.weight", H, H},
        {"attention.output.dense.bias", H, 0},
        {"attention.output.LayerNorm.weight", H, 0},
        {"attention.output.LayerNorm.bias", H, 0},
        {"intermediate.dense.weight", I, H},
        {"intermediate.dense.bias", I, 0},
        {"output.dense.weight", H, I},
        {"output.dense.bias", H, 0},
        {"output.LayerNorm.weight", H, 0},
        {"output.LayerNorm.bias", H, 0}};
    for (int l = 0; l < LAYERS; l++)
        for (int k = 0; k < 16; k++) {
            snprintf(s[n].name, sizeof s[n].name, "encoder.layer.%d.%s", l,
                     lay[k].name);
            s[n].d0 = lay[k].d0;
            s[n++].d1 = lay[k].d1;
        }
    return n;
}

/* Writes config.json (cfg, or CONFIG) and model.safetensors into dir:
 * every tensor random except `skip` (left out) and `bad` (one row too
 * many); `prefix` goes before every name; weights stored as `dt`. */
static bool write_model(const char *dir, const char *cfg, const char *skip,
                        const char *bad, const char *prefix, tm_dtype dt)
{
    char path[TT_PATH_MAX];
    tt_path(path, dir, "config.json");
    if (!cfg) cfg = CONFIG;
    if (!tt_write_file(path, cfg, strlen(cfg))) return false;
    spec s[5 + 16 * LAYERS];
    int n = specs(s);
    tm_tensor *ts[5 + 16 * LAYERS];
    char names[5 + 16 * LAYERS][128];
    const char *np[5 + 16 * LAYERS];
    int m = 0;
    tm_rng rng = tm_rng_new(7);
    bool ok = true;
    for (int k = 0; k < n; k++) {
        if (skip && !strcmp(s[k].name, skip)) continue;
        int64_t shape[2] = {s[k].d0 + (bad && !strcmp(s[k].name, bad)),
                            s[k].d1};
        tm_tensor *t = tm_empty(shape, s[k].d1 ? 2 : 1, TM_F32);
        ok = ok && t && tm_normal_(t, 0.0, 0.5, &rng) == TM_OK;
        if (t && dt != TM_F32) {
            tm_tensor *c = tm_to_dtype(t, dt);
            tm_free(t);
            t = c;
            ok = ok && t;
        }
        snprintf(names[m], sizeof names[m], "%.16s%.96s", prefix, s[k].name);
        np[m] = names[m];
        ts[m++] = t;
    }
    tt_path(path, dir, "model.safetensors");
    ok = ok && tm_safetensors_save_ex(path, np, ts, m, NULL, NULL, 0,
                                      TM_SAVE_NO_SYNC) == TM_OK;
    for (int k = 0; k < m; k++) tm_free(ts[k]);
    return ok;
}

static tm_tensor *ints(const int64_t *v, int64_t b, int64_t t)
{
    return tm_from_buffer(v, (int64_t[]){b, t}, 2, TM_I64);
}

TEST(bert_forward_has_shape_b_t_h_and_zero_rows_at_padding)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_model(dir, NULL, NULL, NULL, "", TM_F32));
    tm_bert *m = tm_bert_load(dir);
    REQUIRE(m);
    const tm_bert_config *c = tm_bert_config_of(m);
    CHECK_INT(c->hidden_size, H);
    CHECK_INT(c->num_hidden_layers, LAYERS);
    CHECK_NEAR(c->layer_norm_eps, 1e-12, 0);
    int64_t idv[2 * 5] = {1, 5, 7, 9, 2, 1, 3, 2, 0, 0};
    int64_t mkv[2 * 5] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    tm_tensor *ids = ints(idv, 2, 5), *mask = ints(mkv, 2, 5);
    tm_tensor *y = tm_bert_forward(m, ids, mask, NULL);
    REQUIRE(y);
    CHECK_SHAPE(y, 2, 5, H);
    float out[2 * 5 * H];
    REQUIRE(tm_copy_to_buffer(y, out, sizeof out, TM_F32) == TM_OK);
    for (int k = 0; k < H; k++) {
        CHECK(out[(5 + 3) * H + k] == 0.0f);
        CHECK(out[(5 + 4) * H + k] == 0.0f);
    }
    /* each real row is LayerNorm's output: mean of (x - b) / w is 0 only
     * for unit weights, so just check the values are finite and not 0 */
    CHECK(out[0] != 0.0f && isfinite(out[0]));
    tm_free(y);
    tm_free(ids);
    tm_free(mask);
    tm_bert_free(m);
    tt_rmdir(dir);
}

TEST(bert_padding_does_not_change_the_real_tokens)
{
    /* Row "1 5 7" alone must give the same states as inside a padded
     * batch beside a longer row: masked keys get zero weight.  Tolerance
     * 1e-5: the same F32 ops, only the products' blocking may differ. */
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_model(dir, NULL, NULL, NULL, "", TM_F32));
    tm_bert *m = tm_bert_load(dir);
    REQUIRE(m);
    int64_t a[3] = {1, 5, 7};
    int64_t bi[2 * 6] = {1, 5, 7, 33, 33, 33, 4, 8, 15, 16, 23, 39};
    int64_t bm[2 * 6] = {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1};
    tm_tensor *ia = ints(a, 1, 3), *ib = ints(bi, 2, 6), *mb = ints(bm, 2, 6);
    tm_tensor *ya = tm_bert_forward(m, ia, NULL, NULL),
              *yb = tm_bert_forward(m, ib, mb, NULL);
    REQUIRE(ya && yb);
    float fa[3 * H], fb[2 * 6 * H];
    REQUIRE(tm_copy_to_buffer(ya, fa, sizeof fa, TM_F32) == TM_OK);
    REQUIRE(tm_copy_to_buffer(yb, fb, sizeof fb, TM_F32) == TM_OK);
    for (int k = 0; k < 3 * H; k++) CHECK_NEAR(fb[k], fa[k], 1e-5);
    /* mean pooling of row 0 = the mean of its three states */
    tm_tensor *e = tm_bert_pool_embed(m, ib, mb, TM_BERT_POOL_MEAN, false);
    REQUIRE(e);
    float fe[2 * H];
    REQUIRE(tm_copy_to_buffer(e, fe, sizeof fe, TM_F32) == TM_OK);
    for (int k = 0; k < H; k++)
        CHECK_NEAR(fe[k], (fa[k] + fa[H + k] + fa[2 * H + k]) / 3, 1e-5);
    tm_tensor *cls = tm_bert_pool_embed(m, ib, mb, TM_BERT_POOL_CLS, false);
    tm_tensor *mx = tm_bert_pool_embed(m, ib, mb, TM_BERT_POOL_MAX, false);
    tm_tensor *nrm = tm_bert_embed(m, ib, mb);
    REQUIRE(cls && mx && nrm);
    float fc[2 * H], fm[2 * H], fn[2 * H];
    REQUIRE(tm_copy_to_buffer(cls, fc, sizeof fc, TM_F32) == TM_OK);
    REQUIRE(tm_copy_to_buffer(mx, fm, sizeof fm, TM_F32) == TM_OK);
    REQUIRE(tm_copy_to_buffer(nrm, fn, sizeof fn, TM_F32) == TM_OK);
    double ss = 0, se = 0;
    for (int k = 0; k < H; k++) {
        CHECK(fc[k] == fa[k]);
        float want = fa[k] > fa[H + k] ? fa[k] : fa[H + k];
        want = want > fa[2 * H + k] ? want : fa[2 * H + k];
        CHECK(fm[k] == want);
        ss += (double)fn[k] * fn[k];
        se += (double)fe[k] * fe[k];
    }
    CHECK_NEAR(ss, 1.0, 1e-5);
    CHECK_NEAR(fn[0], fe[0] / sqrt(se), 1e-5);
    tm_free(cls);
    tm_free(mx);
    tm_free(nrm);
    tm_free(e);
    tm_free(ya);
    tm_free(yb);
    tm_free(ia);
    tm_free(ib);
    tm_free(mb);
    tm_bert_free(m);
    tt_rmdir(dir);
}

TEST(bert_f16_weights_and_bert_prefix_load)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_model(dir, NULL, NULL, NULL, "bert.", TM_F16));
    tm_bert *m = tm_bert_load(dir);
    CHECK(m != NULL);
    tm_bert_free(m);
    REQUIRE(write_model(dir, NULL, NULL, NULL, "", TM_BF16));
    m = tm_bert_load(dir);
    CHECK(m != NULL);
    tm_bert_free(m);
    tt_rmdir(dir);
}

static void check_load_fails(const char *file, int line, const char *dir,
                             tm_status st, const char *substr)
{
    tm_clear_error();
    tm_bert *m = tm_bert_load(dir);
    tt_check_error(file, line, "tm_bert_load", m == NULL, st, substr);
    tm_bert_free(m);
}
#define CHECK_LOAD_FAILS(dir, st, substr)                                     \
    check_load_fails(__FILE__, __LINE__, (dir), (st), (substr))

TEST(bert_load_names_a_missing_or_misshaped_tensor)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_model(dir, NULL, "encoder.layer.1.attention.self.key.bias",
                        NULL, "", TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT,
                     "missing tensor 'encoder.layer.1.attention.self.key."
                     "bias'");
    REQUIRE(write_model(dir, NULL, NULL, "encoder.layer.0.intermediate."
                        "dense.weight", "", TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT,
                     "tensor 'encoder.layer.0.intermediate.dense.weight' has "
                     "shape [25,16], the config needs [24,16]");
    tt_rmdir(dir);
}

TEST(bert_load_names_a_bad_config_key)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_model(dir, "{\"model_type\": \"bert\", \"vocab_size\": 40}",
                        NULL, NULL, "", TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "missing key \"hidden_size\"");
    REQUIRE(write_model(dir, "{\"model_type\": \"roberta\"}", NULL, NULL, "",
                        TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EUNSUPPORTED, "model_type \"roberta\"");
    char cfg[sizeof CONFIG + 32];
    snprintf(cfg, sizeof cfg, "%s", CONFIG);
    char *act = strstr(cfg, "\"gelu\"");
    REQUIRE(act);
    memcpy(act, "\"silu\"", 6);
    REQUIRE(write_model(dir, cfg, NULL, NULL, "", TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EUNSUPPORTED, "hidden_act \"silu\"");
    REQUIRE(write_model(dir, "{\"vocab_size\": 40, \"hidden_size\": \"x\"}",
                        NULL, NULL, "", TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "\"hidden_size\" must be an integer");
    REQUIRE(write_model(dir, "[1, 2", NULL, NULL, "", TM_F32));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "config.json");
    char path[TT_PATH_MAX];
    REQUIRE(write_model(dir, NULL, NULL, NULL, "", TM_F32));
    tt_path(path, dir, "model.safetensors");
    REQUIRE(tt_write_file(path, "junk", 4));
    CHECK_LOAD_FAILS(dir, TM_EFORMAT, "tm_bert_load");
    tt_rmdir(dir);
    CHECK_LOAD_FAILS("/nonexistent/foundry/bert", TM_EIO, "cannot open");
    CHECK_LOAD_FAILS(NULL, TM_EINVAL, "dir");
}

TEST(bert_forward_rejects_bad_ids)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_model(dir, NULL, NULL, NULL, "", TM_F32));
    tm_bert *m = tm_bert_load(dir);
    REQUIRE(m);
    int64_t big[2] = {3, 40};
    tm_tensor *ids = ints(big, 1, 2);
    CHECK_NULL_ERR(tm_bert_forward(m, ids, NULL, NULL), TM_ERANGE,
                   "ids[0][1] = 40 is outside [0, 40)");
    int64_t lng[13] = {0};
    tm_tensor *ids13 = ints(lng, 1, 13);
    CHECK_NULL_ERR(tm_bert_forward(m, ids13, NULL, NULL), TM_ESHAPE,
                   "13 positions, the model at most 12");
    int64_t ok[2] = {3, 4};
    tm_tensor *ids2 = ints(ok, 1, 2), *mask3 = ints(lng, 1, 3);
    CHECK_NULL_ERR(tm_bert_forward(m, ids2, mask3, NULL), TM_ESHAPE, "mask");
    tm_tensor *fl = tm_zeros((int64_t[]){1, 2}, 2, TM_F32);
    CHECK_NULL_ERR(tm_bert_forward(m, fl, NULL, NULL), TM_EDTYPE, "ids");
    int64_t tt[2] = {0, 2};
    tm_tensor *tti = ints(tt, 1, 2);
    CHECK_NULL_ERR(tm_bert_forward(m, ids2, NULL, tti), TM_ERANGE,
                   "type_ids[0][1] = 2");
    CHECK_NULL_ERR(tm_bert_forward(NULL, ids2, NULL, NULL), TM_EINVAL,
                   "model");
    /* a row with no real tokens pools to zeros, without NaN */
    tm_tensor *none = ints((int64_t[]){0, 0}, 1, 2);
    tm_tensor *e = tm_bert_embed(m, ids2, none);
    CHECK(e != NULL);
    if (e) {
        float f[H];
        CHECK(tm_copy_to_buffer(e, f, sizeof f, TM_F32) == TM_OK);
        CHECK(f[0] == 0.0f && f[H - 1] == 0.0f);
    }
    tm_free(e);
    tm_free(none);
    tm_free(tti);
    tm_free(fl);
    tm_free(ids);
    tm_free(ids13);
    tm_free(ids2);
    tm_free(mask3);
    tm_bert_free(m);
    tt_rmdir(dir);
}

static char g_dir[TT_PATH_MAX];

static tm_status load_forward_embed(void)
{
    tm_bert *m = tm_bert_load(g_dir);
    if (!m) return tm_last_status();
    int64_t idv[2 * 4] = {1, 5, 7, 9, 2, 3, 0, 0};
    int64_t mkv[2 * 4] = {1, 1, 1, 1, 1, 1, 0, 0};
    tm_tensor *ids = ints(idv, 2, 4), *mask = ids ? ints(mkv, 2, 4) : NULL;
    tm_tensor *y = mask ? tm_bert_forward(m, ids, mask, NULL) : NULL;
    tm_tensor *e = y ? tm_bert_embed(m, ids, mask) : NULL;
    tm_tensor *x = e ? tm_bert_pool_embed(m, ids, mask, TM_BERT_POOL_MAX,
                                          false)
                     : NULL;
    tm_status st = x ? TM_OK : tm_last_status();
    tm_free(x);
    tm_free(e);
    tm_free(y);
    tm_free(ids);
    tm_free(mask);
    tm_bert_free(m);
    return st;
}

TEST(bert_every_allocation_failure_is_clean)
{
    REQUIRE(tt_tmpdir(g_dir));
    REQUIRE(write_model(g_dir, NULL, NULL, NULL, "", TM_F16));
    CHECK_EVERY_ALLOC_FAILURE(load_forward_embed, 50);
    tt_rmdir(g_dir);
}


/* ------------------------------------------------ sentence encoders */

#include <sys/stat.h>

/* A WordPiece tokenizer.json as BERT's (checked against HF tokenizers:
 * "The cats." -> [2, 8, 6, 7, 9, 3]). */
static const char TOKENIZER[] =
    "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_to"
    "kens\":[{\"id\":0,\"content\":\"[PAD]\",\"single_word\":false,\"lstr"
    "ip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true},{"
    "\"id\":1,\"content\":\"[UNK]\",\"single_word\":false,\"lstrip\":fals"
    "e,\"rstrip\":false,\"normalized\":false,\"special\":true},{\"id\":2,"
    "\"content\":\"[CLS]\",\"single_word\":false,\"lstrip\":false,\"rstri"
    "p\":false,\"normalized\":false,\"special\":true},{\"id\":3,\"content"
    "\":\"[SEP]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false"
    ",\"normalized\":false,\"special\":true}],\"normalizer\":{\"type\":\""
    "BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,\""
    "strip_accents\":null,\"lowercase\":true},\"pre_tokenizer\":{\"type\""
    ":\"BertPreTokenizer\"},\"post_processor\":{\"type\":\"TemplateProces"
    "sing\",\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0"
    "}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\""
    "id\":\"[SEP]\",\"type_id\":0}}],\"pair\":[{\"SpecialToken\":{\"id\":"
    "\"[CLS]\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}"
    "},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}},{\"Sequence\":"
    "{\"id\":\"B\",\"type_id\":1}},{\"SpecialToken\":{\"id\":\"[SEP]\",\""
    "type_id\":1}}],\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids"
    "\":[2],\"tokens\":[\"[CLS]\"]},\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":["
    "3],\"tokens\":[\"[SEP]\"]}}},\"decoder\":{\"type\":\"WordPiece\",\"p"
    "refix\":\"##\",\"cleanup\":true},\"model\":{\"type\":\"WordPiece\",\""
    "unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\",\"max_inp"
    "ut_chars_per_word\":100,\"vocab\":{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\""
    ":2,\"[SEP]\":3,\"a\":4,\"b\":5,\"cat\":6,\"##s\":7,\"the\":8,\".\":9"
    "}}}";

static bool write_text(const char *dir, const char *name, const char *text)
{
    char path[TT_PATH_MAX];
    tt_path(path, dir, name);
    return tt_write_file(path, text, strlen(text));
}

static const char MODULES[] =
    "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
    "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": "
    "\"1\", \"path\": \"1_Pooling\", \"type\": "
    "\"sentence_transformers.models.Pooling\"}, {\"idx\": 2, \"name\": \"2\", "
    "\"path\": \"2_Normalize\", \"type\": "
    "\"sentence_transformers.models.Normalize\"}]";
static const char POOL_MEAN[] =
    "{\"word_embedding_dimension\": 16, \"pooling_mode_cls_token\": false, "
    "\"pooling_mode_mean_tokens\": true, \"pooling_mode_max_tokens\": false, "
    "\"pooling_mode_mean_sqrt_len_tokens\": false}";

/* dir with the tiny model, tokenizer, modules.json, pooling config (in
 * dir/1_Pooling) and sentence_bert_config.json. */
static bool write_encoder(const char *dir, const char *modules,
                          const char *pool, const char *sbert)
{
    char sub[TT_PATH_MAX];
    tt_path(sub, dir, "1_Pooling");
    mkdir(sub, 0700);
    return write_model(dir, NULL, NULL, NULL, "", TM_F32) &&
           write_text(dir, "tokenizer.json", TOKENIZER) &&
           write_text(dir, "modules.json", modules) &&
           write_text(sub, "config.json", pool) &&
           write_text(dir, "sentence_bert_config.json", sbert);
}

static void remove_encoder(const char *dir)
{
    char sub[TT_PATH_MAX];
    tt_path(sub, dir, "1_Pooling");
    tt_rmdir(sub);
    tt_rmdir(dir);
}

TEST(sentence_encoder_equals_the_model_on_the_tokenizers_ids)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_encoder(dir, MODULES, POOL_MEAN,
                          "{\"max_seq_length\": 256}"));
    tm_sentence_encoder *e = tm_sentence_encoder_load(dir);
    REQUIRE(e);
    CHECK_INT(tm_sentence_encoder_dim(e), H);
    CHECK_INT(tm_sentence_encoder_max_seq_length(e), P); /* capped */
    CHECK(tm_sentence_encoder_normalizes(e));
    tm_token_buf b = {0};
    REQUIRE(tm_sentence_encoder_tokenize(e, "The cats.", 9, &b) == TM_OK);
    int32_t want[6] = {2, 8, 6, 7, 9, 3};
    CHECK_INT(b.n, 6);
    for (int k = 0; k < 6 && k < b.n; k++) CHECK_INT(b.ids[k], want[k]);
    tm_token_buf_free(&b);
    /* truncation keeps [CLS] ... [SEP] inside max_seq_length */
    REQUIRE(tm_sentence_encoder_tokenize(
                e, "a a a a a a a a a a a a a a", 27, &b) == TM_OK);
    CHECK_INT(b.n, P);
    CHECK_INT(b.ids[0], 2);
    CHECK_INT(b.ids[P - 1], 3);
    tm_token_buf_free(&b);

    const char *texts[3] = {"a b", "The cats.", ""};
    float one[3 * H], two[3 * H], ref[H];
    REQUIRE(tm_sentence_encoder_encode(e, texts, 3, 1, one) == TM_OK);
    REQUIRE(tm_sentence_encoder_encode(e, texts, 3, 2, two) == TM_OK);
    for (int k = 0; k < 3 * H; k++) CHECK_NEAR(two[k], one[k], 1e-6);
    int64_t idv[6] = {2, 8, 6, 7, 9, 3};
    tm_tensor *ids = ints(idv, 1, 6);
    tm_tensor *y = tm_bert_embed(tm_sentence_encoder_model(e), ids, NULL);
    REQUIRE(y);
    REQUIRE(tm_copy_to_buffer(y, ref, sizeof ref, TM_F32) == TM_OK);
    for (int k = 0; k < H; k++) CHECK_NEAR(one[H + k], ref[k], 1e-6);
    tm_free(y);
    tm_free(ids);
    const char *bad[2] = {"a", NULL};
    CHECK_STATUS(tm_sentence_encoder_encode(e, bad, 2, 1, one), TM_EINVAL,
                 "texts[1] is NULL");
    const char *utf[1] = {"a\xff"};
    CHECK_STATUS(tm_sentence_encoder_encode(e, utf, 1, 1, one), TM_EINVAL,
                 "not valid UTF-8");
    tm_sentence_encoder_free(e);
    remove_encoder(dir);
}

static void check_encoder_fails(const char *file, int line, const char *dir,
                                tm_status st, const char *substr)
{
    tm_clear_error();
    tm_sentence_encoder *e = tm_sentence_encoder_load(dir);
    tt_check_error(file, line, "tm_sentence_encoder_load", e == NULL, st,
                   substr);
    tm_sentence_encoder_free(e);
}
#define CHECK_ENCODER_FAILS(dir, st, substr)                                  \
    check_encoder_fails(__FILE__, __LINE__, (dir), (st), (substr))

TEST(sentence_encoder_refuses_unsupported_modules_and_pooling)
{
    char dir[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_encoder(dir,
                          "[{\"type\": \"sentence_transformers.models."
                          "Transformer\"}, {\"type\": \"sentence_transformers"
                          ".models.Dense\"}]",
                          POOL_MEAN, "{}"));
    CHECK_ENCODER_FAILS(dir, TM_EUNSUPPORTED, "module 1 is \"sentence_"
                        "transformers.models.Dense\"");
    REQUIRE(write_encoder(dir, MODULES,
                          "{\"pooling_mode_mean_tokens\": true, "
                          "\"pooling_mode_cls_token\": true}", "{}"));
    CHECK_ENCODER_FAILS(dir, TM_EUNSUPPORTED, "2 pooling modes are on");
    REQUIRE(write_encoder(dir, MODULES,
                          "{\"pooling_mode_mean_sqrt_len_tokens\": true}",
                          "{}"));
    CHECK_ENCODER_FAILS(dir, TM_EUNSUPPORTED,
                        "\"pooling_mode_mean_sqrt_len_tokens\" is not "
                        "supported");
    REQUIRE(write_encoder(dir, MODULES, POOL_MEAN,
                          "{\"max_seq_length\": -3}"));
    CHECK_ENCODER_FAILS(dir, TM_EFORMAT, "\"max_seq_length\" must be a "
                        "positive integer");
    REQUIRE(write_encoder(dir, MODULES, POOL_MEAN, "{\"max_seq_length\": 8}"));
    REQUIRE(write_text(dir, "tokenizer.json", "{\"model\": {\"type\": \"X\"}}"));
    CHECK_ENCODER_FAILS(dir, TM_EUNSUPPORTED, "tokenizer.json");
    /* cls pooling: the [CLS] state */
    REQUIRE(write_encoder(dir, MODULES, "{\"pooling_mode_cls_token\": true}",
                          "{\"max_seq_length\": 8}"));
    tm_sentence_encoder *e = tm_sentence_encoder_load(dir);
    REQUIRE(e);
    CHECK_INT(tm_sentence_encoder_max_seq_length(e), 8);
    const char *t[1] = {"a b"};
    float got[H], ref[4 * H];
    REQUIRE(tm_sentence_encoder_encode_ex(e, t, 1, 4, false, got) == TM_OK);
    int64_t idv[4] = {2, 4, 5, 3};
    tm_tensor *ids = ints(idv, 1, 4);
    tm_tensor *y = tm_bert_forward(tm_sentence_encoder_model(e), ids, NULL,
                                   NULL);
    REQUIRE(y);
    REQUIRE(tm_copy_to_buffer(y, ref, sizeof ref, TM_F32) == TM_OK);
    for (int k = 0; k < H; k++) CHECK_NEAR(got[k], ref[k], 1e-6);
    tm_free(y);
    tm_free(ids);
    tm_sentence_encoder_free(e);
    remove_encoder(dir);
    CHECK_ENCODER_FAILS("/nonexistent/foundry/st", TM_EIO, "config.json");
}
