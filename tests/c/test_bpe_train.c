/* test_bpe_train.c — the public BPE trainer (foundry/tokenizer.h): merges
 * that can be checked by hand, min_frequency, special tokens, the
 * vocabulary bounds, an empty corpus, and round trips through the trained
 * tokenizer. */
#include "harness.h"

#include "foundry/tokenizer.h"

#include <stdlib.h>

static tm_tokenizer *train(const char *const *docs, int n, tm_bpe_train_opts o)
{
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&o);
    if (!tr) return NULL;
    for (int i = 0; i < n; i++)
        if (tm_bpe_trainer_feed(tr, docs[i], strlen(docs[i]))) {
            tm_bpe_trainer_free(tr);
            return NULL;
        }
    tm_tokenizer *t = tm_bpe_trainer_finish(tr);
    tm_bpe_trainer_free(tr);
    return t;
}

/* The ids of text as a string "1 2 3" in buf. */
static const char *ids_of(const tm_tokenizer *t, const char *text, char *buf,
                          size_t size)
{
    tm_token_buf b = {0};
    buf[0] = 0;
    if (tm_tokenizer_encode(t, text, strlen(text), &b)) return "error";
    size_t k = 0;
    for (int64_t i = 0; i < b.n && k + 16 < size; i++)
        k += (size_t)snprintf(buf + k, size - k, i ? " %d" : "%d", b.ids[i]);
    tm_token_buf_free(&b);
    return buf;
}

TEST(bpe_train_merges_the_most_frequent_pairs_of_pieces)
{
    /* Pieces (GPT-2 pattern): "ab" x3, " ab" x2, " abc"... counted by hand:
     * "ab ab abc abc abc": pieces "ab", " ab", " abc" x3.  Pairs: (a,b) 5,
     * (' ',a) 4, (b,c) 3.  Merges: a+b, then ' '+ab (4), then ' ab'+c (3). */
    const char *docs[] = {"ab ab abc abc abc"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(256 + 3);
    o.min_frequency = 1;
    tm_tokenizer *t = train(docs, 1, o);
    REQUIRE(t);
    CHECK_INT(tm_tokenizer_vocab_size(t), 259);
    CHECK_INT(tm_tokenizer_token_to_id(t, "ab"), 256);
    CHECK_INT(tm_tokenizer_token_to_id(t, "\xc4\xa0" "ab"), 257);   /* "Ġab" */
    CHECK_INT(tm_tokenizer_token_to_id(t, "\xc4\xa0" "abc"), 258);
    char buf[128];
    CHECK(!strcmp(ids_of(t, "ab abc", buf, sizeof buf), "256 258"));
    tm_tokenizer_free(t);
}

TEST(bpe_train_gives_bytes_the_byte_level_alphabet_order)
{
    const char *docs[] = {""};
    tm_tokenizer *t = train(docs, 1, tm_bpe_train_defaults(300));
    REQUIRE(t);
    /* HF sorts the alphabet by the code points bytes are shown as: '!'
     * (U+0021) first, ' ' shown as U+0120 comes late. */
    CHECK_INT(tm_tokenizer_token_to_id(t, "!"), 0);
    CHECK_INT(tm_tokenizer_token_to_id(t, "~"), 93);
    CHECK_INT(tm_tokenizer_token_to_id(t, "\xc4\x80"), 188);    /* byte 0x00 */
    CHECK_INT(tm_tokenizer_token_to_id(t, "\xc4\xa0"), 188 + 32); /* ' ' */
    tm_tokenizer_free(t);
}

TEST(bpe_train_stops_at_min_frequency)
{
    /* (x,y) 3 times, (z,w) twice: min_frequency 3 keeps only x+y. */
    const char *docs[] = {"xy xy xy zw zw"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(1000);
    o.min_frequency = 3;
    tm_tokenizer *t = train(docs, 1, o);
    REQUIRE(t);
    /* Pieces "xy", " xy" x2, " zw" x2: (x,y) 3, (' ',x) 2, (' ',z) 2,
     * (z,w) 2. */
    CHECK_INT(tm_tokenizer_vocab_size(t), 257);
    CHECK_INT(tm_tokenizer_token_to_id(t, "xy"), 256);
    tm_tokenizer_free(t);
}

TEST(bpe_train_puts_special_tokens_first)
{
    const char *specials[] = {"<|endoftext|>", "<pad>"};
    const char *docs[] = {"aaa aaa", "aaa"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(2 + 256 + 2);
    o.special_tokens = specials;
    o.n_special = 2;
    tm_tokenizer *t = train(docs, 2, o);
    REQUIRE(t);
    CHECK_INT(tm_tokenizer_vocab_size(t), 260);
    CHECK_INT(tm_tokenizer_token_to_id(t, "<|endoftext|>"), 0);
    CHECK_INT(tm_tokenizer_token_to_id(t, "<pad>"), 1);
    CHECK_INT(tm_tokenizer_token_to_id(t, "!"), 2);
    CHECK_INT(tm_tokenizer_eos_id(t), 0);
    CHECK(tm_tokenizer_is_special(t, 0) && tm_tokenizer_is_special(t, 1));
    CHECK(!tm_tokenizer_is_special(t, 2));
    /* The specials are matched in text; skip_special drops them. */
    char buf[128];
    const char *ids = ids_of(t, "aaa<|endoftext|>", buf, sizeof buf);
    CHECK(strstr(ids, " 0") && !strstr(ids, " 1"));
    tm_token_buf b = {0};
    REQUIRE(!tm_tokenizer_encode(t, "a<pad>a", 7, &b));
    size_t len = 0;
    char *s = tm_tokenizer_decode(t, b.ids, b.n, true, &len);
    CHECK(s && len == 2 && !strcmp(s, "aa"));
    free(s);
    tm_token_buf_free(&b);
    tm_tokenizer_free(t);
}

TEST(bpe_train_refuses_a_vocabulary_smaller_than_bytes_and_specials)
{
    const char *specials[] = {"<s>"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(256);
    o.special_tokens = specials;
    o.n_special = 1;
    tm_clear_error();
    CHECK(tm_bpe_trainer_new(&o) == NULL);
    CHECK_INT(tm_last_status(), TM_EINVAL);
    CHECK(strstr(tm_last_error(), "tm_bpe_trainer_new: vocab_size 256"));
    CHECK(strstr(tm_last_error(), "1 special"));
    o.vocab_size = 257;
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&o);
    CHECK(tr != NULL);
    tm_bpe_trainer_free(tr);
}

static void check_bad_opts(tm_bpe_train_opts o, const char *substr)
{
    tm_clear_error();
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&o);
    CHECK(tr == NULL);
    tm_bpe_trainer_free(tr);
    CHECK_INT(tm_last_status(), TM_EINVAL);
    if (!strstr(tm_last_error(), substr))
        tt_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"",
                tm_last_error(), substr);
}

TEST(bpe_train_refuses_bad_options_naming_them)
{
    tm_bpe_train_opts o = tm_bpe_train_defaults(1000);
    o.min_frequency = -1;
    check_bad_opts(o, "min_frequency -1");
    o = tm_bpe_train_defaults(1000);
    o.pretok = (tm_pretok_kind)7;
    check_bad_opts(o, "pretok 7");
    const char *dup[] = {"<s>", "</s>", "<s>"};
    o = tm_bpe_train_defaults(1000);
    o.special_tokens = dup;
    o.n_special = 3;
    check_bad_opts(o, "special_tokens[2] \"<s>\" repeats special_tokens[0]");
    const char *empty[] = {""};
    o.special_tokens = empty;
    o.n_special = 1;
    check_bad_opts(o, "special_tokens[0] is empty");
    const char *bad_utf8[] = {"\xff<s>"};
    o.special_tokens = bad_utf8;
    check_bad_opts(o, "not valid UTF-8");
    const char *byte[] = {"!"};
    o.special_tokens = byte;
    check_bad_opts(o, "byte 0x21");
    o.special_tokens = NULL;
    check_bad_opts(o, "special_tokens is NULL");
    tm_clear_error();
    CHECK(tm_bpe_trainer_new(NULL) == NULL);
    CHECK(strstr(tm_last_error(), "opts is NULL"));
}

TEST(bpe_train_on_an_empty_corpus_gives_the_bytes_alone)
{
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&(tm_bpe_train_opts){
        .vocab_size = 4096, .min_frequency = 2});
    REQUIRE(tr);
    tm_tokenizer *t = tm_bpe_trainer_finish(tr);
    REQUIRE(t);
    CHECK_INT(tm_tokenizer_vocab_size(t), 256);
    CHECK_INT(tm_bpe_trainer_docs(tr), 0);
    /* Still a working tokenizer: any bytes go through as byte tokens. */
    tm_token_buf b = {0};
    REQUIRE(!tm_tokenizer_encode(t, "hi \xff", 4, &b));
    CHECK_INT(b.n, 4);
    tm_token_buf_free(&b);
    tm_tokenizer_free(t);
    tm_bpe_trainer_free(tr);
}

TEST(bpe_train_feeds_documents_separately)
{
    /* One document "ab\n\ncd" differs from two: the whitespace run between
     * them is one piece only within a document. */
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&(tm_bpe_train_opts){
        .vocab_size = 300, .min_frequency = 1});
    REQUIRE(tr);
    CHECK_STATUS(tm_bpe_trainer_feed(NULL, "x", 1), TM_EINVAL,
                 "trainer is NULL");
    CHECK_STATUS(tm_bpe_trainer_feed(tr, NULL, 3), TM_EINVAL,
                 "text is NULL with len 3");
    REQUIRE(!tm_bpe_trainer_feed(tr, "ab", 2));
    REQUIRE(!tm_bpe_trainer_feed(tr, NULL, 0));
    REQUIRE(!tm_bpe_trainer_feed(tr, "ab ab", 5));
    CHECK_INT(tm_bpe_trainer_docs(tr), 3);
    CHECK_INT(tm_bpe_trainer_bytes(tr), 7);
    tm_tokenizer *t = tm_bpe_trainer_finish(tr);
    REQUIRE(t);
    /* (a,b) 3, (' ',ab) 1: both merged with min_frequency 1. */
    CHECK_INT(tm_tokenizer_vocab_size(t), 258);
    tm_tokenizer_free(t);
    /* Feeding more and finishing again sees everything fed so far: (c,d) 2
     * comes before the two pairs of count 1, (' ',ab) and (' ',cd). */
    REQUIRE(!tm_bpe_trainer_feed(tr, "cd cd", 5));
    t = tm_bpe_trainer_finish(tr);
    REQUIRE(t);
    CHECK_INT(tm_tokenizer_vocab_size(t), 260);
    CHECK_INT(tm_tokenizer_token_to_id(t, "cd"), 257);
    tm_tokenizer_free(t);
    tm_bpe_trainer_free(tr);
}

TEST(bpe_train_tokenizer_round_trips_any_bytes)
{
    const char *docs[] = {
        "def f(x):\n    return x + 1\n\n\nclass A:\n    pass\n",
        "Grüße, мир! 你好，世界。 123456 \xf0\x9f\x99\x82\xf0\x9f\x99\x82"};
    for (int kind = 0; kind < 2; kind++) {
        tm_bpe_train_opts o = tm_bpe_train_defaults(400);
        o.min_frequency = 1;
        o.pretok = kind ? TM_PRETOK_LLAMA3 : TM_PRETOK_GPT2;
        o.split_digits = kind == 1;
        tm_tokenizer *t = train(docs, 2, o);
        REQUIRE(t);
        uint64_t seed = 12345;
        unsigned char text[512];
        for (int round = 0; round < 20; round++) {
            size_t n = (size_t)(round * 25);
            for (size_t i = 0; i < n; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                /* Half the rounds random bytes, half pieces of the corpus. */
                text[i] = round % 2 ? (unsigned char)(seed >> 56)
                                    : (unsigned char)docs[1][(seed >> 40) % 40];
            }
            tm_token_buf b = {0};
            REQUIRE(!tm_tokenizer_encode(t, (const char *)text, n, &b));
            size_t len = 0;
            char *s = tm_tokenizer_decode(t, b.ids, b.n, false, &len);
            CHECK(s && len == n && !memcmp(s, text, n));
            free(s);
            tm_token_buf_free(&b);
        }
        tm_tokenizer_free(t);
    }
}

TEST(bpe_train_splits_digits_when_asked)
{
    const char *docs[] = {"12 12 12 12 12"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(1000);
    o.split_digits = true;
    tm_tokenizer *t = train(docs, 1, o);
    REQUIRE(t);
    /* Each digit is a piece of its own, and so is each space between them
     * (Digits splits first, the regex sees " " alone): no pairs at all. */
    CHECK_INT(tm_tokenizer_vocab_size(t), 256);
    tm_tokenizer_free(t);
    o.split_digits = false;
    t = train(docs, 1, o);
    REQUIRE(t);
    CHECK(tm_tokenizer_token_to_id(t, "12") >= 256);
    tm_tokenizer_free(t);
}

static tm_status train_small(void)
{
    const char *specials[] = {"<|endoftext|>", "<pad> token"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(300);
    o.min_frequency = 1;
    o.special_tokens = specials;
    o.n_special = 2;
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&o);
    if (!tr) return tm_last_status();
    tm_status st = tm_bpe_trainer_feed(tr, "the cat sat on the mat", 22);
    if (!st) st = tm_bpe_trainer_feed(tr, "the hat", 7);
    tm_tokenizer *t = st ? NULL : tm_bpe_trainer_finish(tr);
    if (!st && !t) st = tm_last_status();
    tm_tokenizer_free(t);
    tm_bpe_trainer_free(tr);
    return st;
}

TEST(bpe_train_survives_every_allocation_failure)
{
    REQUIRE(!train_small());
    CHECK_EVERY_ALLOC_FAILURE(train_small, 10);
}
