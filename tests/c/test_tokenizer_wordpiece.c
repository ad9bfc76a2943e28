/* test_tokenizer_wordpiece.c — WordPiece tokenizer.json (BERT): each rule
 * of BertNormalizer, BertPreTokenizer, the WordPiece model and decoder on a
 * small hand-built vocabulary, truncation with the template's specials,
 * the pad id, save round trips, and the loader's errors.  Agreement with HF
 * on a real vocabulary is in tests/python/test_tokenizer_wordpiece.py. */
#include "harness.h"

#include "foundry/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, then the words below */
#define VOCAB                                                                                      \
    "\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,\"un\":4,\"##aff\":5,\"##able\":6,\"hello\":7," \
    "\",\":8,\"!\":9,\"cafe\":10,\"\xe4\xb8\xad\":11,\"\xe6\x96\x87\":12,\"a\":13,\"##a\":14,"      \
    "\"i\":15,\"##\xcc\x87\":16,\"world\":17,\"\xc3\xa9\":18"

#define ADDED                                                                                          \
    "[{\"id\":0,\"content\":\"[PAD]\",\"special\":true,\"normalized\":false},"                         \
    "{\"id\":1,\"content\":\"[UNK]\",\"special\":true,\"normalized\":false},"                          \
    "{\"id\":2,\"content\":\"[CLS]\",\"special\":true,\"normalized\":false},"                          \
    "{\"id\":3,\"content\":\"[SEP]\",\"special\":true,\"normalized\":false}]"

#define POST                                                                                           \
    "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}}," \
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}}],"   \
    "\"pair\":[],\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[2],\"tokens\":[\"[CLS]\"]},"     \
    "\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[3],\"tokens\":[\"[SEP]\"]}}}"

static const char *pretok_type = "BertPreTokenizer";

/* A tokenizer.json with the given normalizer, extra model keys and padding. */
static tm_tokenizer *make(const char *norm, const char *model_extra, const char *padding)
{
    char js[4096];
    snprintf(js, sizeof js,
             "{\"version\":\"1.0\",\"truncation\":null,\"padding\":%s,\"added_tokens\":" ADDED
             ",\"normalizer\":%s,\"pre_tokenizer\":{\"type\":\"%s\"},\"post_processor\":" POST
             ",\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
             "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\"%s,"
             "\"vocab\":{" VOCAB "}}}",
             padding, norm, pretok_type, model_extra);
    return tm_tokenizer_from_json(js, strlen(js));
}

static const char BERT_NORM[] = "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
                                "\"strip_accents\":null,\"lowercase\":true}";

/* ids of text (with the template when special) as "a b c". */
static void ids_of(const tm_tokenizer *t, const char *text, bool special, char *out)
{
    tm_token_buf b = {0};
    out[0] = '\0';
    if (tm_tokenizer_encode_ex(t, text, strlen(text), special, &b) < 0) {
        strcpy(out, "(error)");
        return;
    }
    size_t k = 0;
    for (int64_t i = 0; i < b.n; i++)
        k += (size_t)snprintf(out + k, 16, i ? " %d" : "%d", b.ids[i]);
    tm_token_buf_free(&b);
}

#define CHECK_IDS(t, text, special, want)                                                \
    do {                                                                                 \
        char got_[512];                                                                  \
        ids_of((t), (text), (special), got_);                                            \
        if (strcmp(got_, (want)) != 0)                                                   \
            tt_fail(__FILE__, __LINE__, "ids of \"%s\": \"%s\", want \"%s\"", (text), got_, (want)); \
    } while (0)

TEST(wordpiece_bert_normalizer_rules)
{
    tm_tokenizer *t = make(BERT_NORM, ",\"max_input_chars_per_word\":9", "null");
    REQUIRE(t);
    /* lowercase and ## continuation pieces, the template around */
    CHECK_IDS(t, "UNAFFABLE", true, "2 4 5 6 3");
    CHECK_IDS(t, "UNAFFABLE", false, "4 5 6");
    /* accents stripped (strip_accents null follows lowercase), punctuation split */
    CHECK_IDS(t, "Caf\xc3\xa9!", false, "10 9");
    /* CJK ideographs become words of their own */
    CHECK_IDS(t, "\xe4\xb8\xad\xe6\x96\x87", false, "11 12");
    /* control characters removed, whitespace of any kind separates */
    CHECK_IDS(t, "hel\x01lo\tworld\xe2\x80\x83" "a", false, "7 17 13");
    CHECK_IDS(t, "hel\xef\xbf\xbdlo", false, "7");
    /* 'I with dot above' lowercases to i + U+0307, which strip_accents drops */
    CHECK_IDS(t, "\xc4\xb0", false, "15");
    /* unknown words, and words matched only in part, are [UNK] whole */
    CHECK_IDS(t, "xyz hellox unab unaff", false, "1 1 1 4 5");
    /* words over max_input_chars_per_word (9) characters are [UNK] */
    CHECK_IDS(t, "aaaaaaaaa aaaaaaaaaa", false, "13 14 14 14 14 14 14 14 14 1");
    /* special tokens in the text are matched before normalization */
    CHECK_IDS(t, "[CLS]hello[SEP]", false, "2 7 3");
    CHECK_IDS(t, "[cls]", false, "1 1 1");
    CHECK_IDS(t, "", true, "2 3");
    tm_tokenizer_free(t);
}

TEST(wordpiece_normalizer_options)
{
    /* strip_accents false: the accent stays, İ lowercases to i + U+0307 */
    tm_tokenizer *t = make("{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":false,"
                           "\"strip_accents\":false,\"lowercase\":true}", "", "null");
    REQUIRE(t);
    CHECK_IDS(t, "\xc4\xb0", false, "15 16");
    CHECK_IDS(t, "\xc3\xa9", false, "18");
    /* without handle_chinese_chars 中文 is one word, not in the vocab */
    CHECK_IDS(t, "\xe4\xb8\xad\xe6\x96\x87", false, "1");
    tm_tokenizer_free(t);
    /* no normalizer: case matters */
    t = make("null", "", "null");
    REQUIRE(t);
    CHECK_IDS(t, "Hello hello", false, "1 7");
    tm_tokenizer_free(t);
}

TEST(wordpiece_whitespace_split_keeps_punctuation_in_words)
{
    pretok_type = "WhitespaceSplit";
    tm_tokenizer *t = make(BERT_NORM, "", "null");
    pretok_type = "BertPreTokenizer";
    REQUIRE(t);
    CHECK_IDS(t, "hello, world\t\xe4\xb8\xad\xe6\x96\x87", false, "1 17 11 12");
    char *js = tm_tokenizer_to_json(t, NULL);
    REQUIRE(js);
    CHECK(strstr(js, "\"WhitespaceSplit\"") != NULL);
    tm_tokenizer *u = tm_tokenizer_from_json(js, strlen(js));
    REQUIRE(u);
    CHECK(tm_tokenizer_hash(u) == tm_tokenizer_hash(t));
    free(js);
    tm_tokenizer_free(u);
    tm_tokenizer_free(t);
}

TEST(wordpiece_truncation_counts_specials_and_pad_id)
{
    tm_tokenizer *t = make(BERT_NORM, "", "null");
    REQUIRE(t);
    tm_token_buf b = {0};
    tm_encode_opts o = {.add_special_tokens = true, .max_length = 4};
    REQUIRE(tm_tokenizer_encode_opts(t, "hello, hello!", 13, &o, &b) == TM_OK);
    CHECK_INT(b.n, 4);
    CHECK_INT(b.ids[0], 2);
    CHECK_INT(b.ids[1], 7);
    CHECK_INT(b.ids[2], 8);
    CHECK_INT(b.ids[3], 3);
    b.n = 0;
    o.add_special_tokens = false;
    REQUIRE(tm_tokenizer_encode_opts(t, "hello, hello!", 13, &o, &b) == TM_OK);
    CHECK_INT(b.n, 4);
    CHECK_INT(b.ids[3], 9);
    b.n = 0;
    o.max_length = 0;
    REQUIRE(tm_tokenizer_encode_opts(t, "hello, hello!", 13, &o, &b) == TM_OK);
    CHECK_INT(b.n, 4);
    b.n = 0;
    o = (tm_encode_opts){.add_special_tokens = true, .max_length = 1};
    CHECK_STATUS(tm_tokenizer_encode_opts(t, "hello", 5, &o, &b), TM_EINVAL, "max_length 1");
    CHECK_INT(b.n, 0);
    tm_token_buf_free(&b);
    CHECK_INT(tm_tokenizer_num_special_to_add(t), 2);
    CHECK_INT(tm_tokenizer_pad_id(t), 0); /* [PAD] */
    tm_tokenizer_json_defaults d;
    REQUIRE(tm_tokenizer_json_defaults_of(t, &d) == TM_OK);
    CHECK(!d.pad && d.trunc_max_length == 0);
    tm_tokenizer_free(t);
    t = make(BERT_NORM, "", "{\"strategy\":{\"Fixed\":16},\"direction\":\"Left\",\"pad_to_multiple_of\":null,"
                            "\"pad_id\":3,\"pad_type_id\":0,\"pad_token\":\"[SEP]\"}");
    REQUIRE(t);
    CHECK_INT(tm_tokenizer_pad_id(t), 3);
    REQUIRE(tm_tokenizer_json_defaults_of(t, &d) == TM_OK);
    CHECK(d.pad && d.pad_length == 16 && d.pad_left);
    tm_tokenizer_free(t);
}

TEST(wordpiece_decoder_and_round_trip)
{
    tm_tokenizer *t = make(BERT_NORM, ",\"max_input_chars_per_word\":9", "null");
    REQUIRE(t);
    /* "##" pieces join the previous token, others get a space; cleanup
     * removes the space before punctuation */
    int32_t ids[] = {2, 4, 5, 6, 8, 7, 9, 14, 3};
    size_t n;
    char *s = tm_tokenizer_decode(t, ids, 9, true, &n);
    REQUIRE(s);
    CHECK(strcmp(s, "unaffable, hello!a") == 0 || (tt_fail(__FILE__, __LINE__, "decoded \"%s\"", s), 0));
    free(s);
    s = tm_tokenizer_decode(t, ids, 9, false, &n);
    REQUIRE(s);
    CHECK(strcmp(s, "[CLS] unaffable, hello!a [SEP]") == 0 || (tt_fail(__FILE__, __LINE__, "decoded \"%s\"", s), 0));
    free(s);
    /* the saved file loads to the same tokenizer */
    char *js = tm_tokenizer_to_json(t, &n);
    REQUIRE(js);
    CHECK(strstr(js, "\"max_input_chars_per_word\": 9") != NULL);
    tm_tokenizer *u = tm_tokenizer_from_json(js, n);
    REQUIRE(u);
    CHECK(tm_tokenizer_hash(u) == tm_tokenizer_hash(t));
    CHECK_IDS(u, "UNAFFABLE, Caf\xc3\xa9! \xe4\xb8\xad", true, "2 4 5 6 8 10 9 11 3");
    char *js2 = tm_tokenizer_to_json(u, NULL);
    REQUIRE(js2);
    CHECK(strcmp(js, js2) == 0);
    free(js), free(js2);
    tm_tokenizer_free(u);
    tm_tokenizer_free(t);
}

#define CHECK_WP_BAD(json, status, substr)                                                  \
    do {                                                                                    \
        tm_clear_error();                                                                   \
        tm_tokenizer *t_ = tm_tokenizer_from_json((json), strlen(json));                    \
        tt_check_error(__FILE__, __LINE__, #json, t_ == NULL, (status), (substr));          \
        tm_tokenizer_free(t_);                                                              \
    } while (0)

TEST(wordpiece_malformed_json_names_the_path)
{
    CHECK_WP_BAD("{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "model: needs \"vocab\"");
    CHECK_WP_BAD("{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[X]\",\"vocab\":{\"a\":0}},"
                 "\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "model.unk_token: not in the vocab");
    /* the default unk_token "[UNK]" must be there too */
    CHECK_WP_BAD("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "model.unk_token");
    CHECK_WP_BAD("{\"model\":{\"type\":\"WordPiece\",\"max_input_chars_per_word\":\"9\",\"vocab\":{\"[UNK]\":0}},"
                 "\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "model.max_input_chars_per_word: wrong type");
    CHECK_WP_BAD("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":\"0\"}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "model.vocab[\"[UNK]\"]: id must be an integer");
    CHECK_WP_BAD("{\"model\":{\"type\":\"WordPiece\",\"merges\":[],\"vocab\":{\"[UNK]\":0}},"
                 "\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EUNSUPPORTED, "model: unknown key \"merges\"");
    CHECK_WP_BAD("{\"normalizer\":{\"type\":\"BertNormalizer\",\"lowercase\":1},"
                 "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "normalizer.lowercase: wrong type");
    CHECK_WP_BAD("{\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\",\"x\":1},"
                 "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EUNSUPPORTED, "pre_tokenizer: unknown key \"x\"");
    CHECK_WP_BAD("{\"padding\":{\"strategy\":\"Widest\"},"
                 "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "padding.strategy");
    CHECK_WP_BAD("{\"truncation\":{\"max_length\":-3},"
                 "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "truncation.max_length: must not be negative");
    CHECK_WP_BAD("{\"padding\":{\"pad_id\":5},"
                 "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0}},\"decoder\":{\"type\":\"WordPiece\"}}",
                 TM_EFORMAT, "padding.pad_id: 5 is out of range");
}
