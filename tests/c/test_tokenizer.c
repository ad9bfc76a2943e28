/* test_tokenizer.c — tokenizers (include/foundry/tokenizer.h): the
 * pre-tokenizer scanners piece by piece, BPE merge order, round trips of
 * any bytes, added tokens, tokenizer.json round trips and the loader's
 * refusals.  Agreement with HF `tokenizers` itself is tested in
 * tests/python/test_tokenizers.py. */
#include "harness.h"

#include "../../io/tokenizer_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The pieces of text joined with '|'. */
static void pieces(const tm__pretok *p, const char *text, char *out)
{
    size_t n = strlen(text), k = 0;
    for (size_t pos = 0; pos < n;) {
        size_t end = tm__pretok_next(p, text, n, pos);
        if (end <= pos || end > n) {
            strcpy(out, "(no progress)");
            return;
        }
        if (pos)
            out[k++] = '|';
        memcpy(out + k, text + pos, end - pos);
        k += end - pos;
        pos = end;
    }
    out[k] = '\0';
}

#define CHECK_PIECES(p, text, want)                                           \
    do {                                                                      \
        char got_[512];                                                       \
        pieces((p), (text), got_);                                            \
        if (strcmp(got_, (want)) != 0)                                        \
            tt_fail(__FILE__, __LINE__, "pieces of \"%s\": \"%s\", want \"%s\"", \
                    (text), got_, (want));                                    \
    } while (0)

TEST(tokenizer_gpt2_pattern_splits_like_the_regex)
{
    tm__pretok p = {.regex = TM__RE_GPT2, .byte_level = true, .present = true};
    CHECK_PIECES(&p, "Hello world's end", "Hello| world|'s| end");
    /* \s+(?!\S) leaves the last space to the next word */
    CHECK_PIECES(&p, "a   b", "a|  | b");
    CHECK_PIECES(&p, "x  \n", "x|  \n");
    CHECK_PIECES(&p, "x\n\ny", "x|\n|\n|y");
    CHECK_PIECES(&p, "n=123 + 45.6", "n|=|123| +| 45|.|6");
    CHECK_PIECES(&p, "'''s 're'RE", "'''|s| '|re|'|RE");
    CHECK_PIECES(&p, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac!!", "caf\xc3\xa9| \xe6\x97\xa5\xe6\x9c\xac|!!");
    /* U+00A0 is White_Space, but only ' ' joins the next word */
    CHECK_PIECES(&p, "a\xc2\xa0\xc2\xa0" "b", "a|\xc2\xa0|\xc2\xa0|b");
    /* a byte that is not UTF-8 is an "other" character */
    CHECK_PIECES(&p, "ab\xff\xfe cd", "ab|\xff\xfe| cd");
}

TEST(tokenizer_digits_split_every_digit_and_end_the_regex_view)
{
    tm__pretok p = {.split_digits = true, .regex = TM__RE_GPT2, .byte_level = true, .present = true};
    CHECK_PIECES(&p, "x 123 y", "x| |1|2|3| y");
    /* the spaces before a digit are a segment end: (?!\S) succeeds */
    CHECK_PIECES(&p, "a  1", "a|  |1");
}

TEST(tokenizer_llama3_pattern_splits_like_the_regex)
{
    tm__pretok p = {.regex = TM__RE_LLAMA3, .byte_level = true, .regex_in_split = true, .present = true};
    CHECK_PIECES(&p, "Hello world's", "Hello| world|'s");
    CHECK_PIECES(&p, "I'LL 12345", "I|'LL| |123|45");
    CHECK_PIECES(&p, "(word) x", "(word|)| x");
    CHECK_PIECES(&p, "a  \n  b", "a|  \n| | b");
    CHECK_PIECES(&p, "x;\n\ny", "x|;\n\n|y");
    CHECK_PIECES(&p, "\tword", "\tword");
}

/* A byte-level tokenizer: the 256 bytes, then the merges a+b, ab+c, " "+ab. */
static tm_tokenizer *small_bpe(bool with_special)
{
    const char *bytes[261];
    size_t lens[261];
    uint8_t kind[261];
    char one[256];
    for (int b = 0; b < 256; b++) {
        one[b] = (char)b;
        bytes[b] = &one[b], lens[b] = 1, kind[b] = TM__TOK_MODEL;
    }
    const char *extra[] = {"ab", "abc", " ab", "<|endoftext|>"};
    for (int i = 0; i < 4; i++)
        bytes[256 + i] = extra[i], lens[256 + i] = strlen(extra[i]), kind[256 + i] = TM__TOK_MODEL;
    kind[259] = TM__TOK_ADDED | TM__TOK_SPECIAL;
    int32_t merges[3][2] = {{'a', 'b'}, {256, 'c'}, {' ', 256}};
    tm__tok_spec sp = {0};
    sp.n_tokens = with_special ? 260 : 259;
    sp.bytes = bytes, sp.lens = lens, sp.kind = kind;
    sp.n_merges = 3, sp.merges = (const int32_t(*)[2])merges;
    sp.pretok = (tm__pretok){.regex = TM__RE_GPT2, .byte_level = true, .present = true};
    sp.unk_id = -1;
    return tm__tokenizer_build(&sp, "small_bpe");
}

static int64_t enc(const tm_tokenizer *t, const char *s, size_t n, int32_t *out, int64_t cap)
{
    tm_token_buf b = {0};
    int64_t k = -1;
    if (tm_tokenizer_encode(t, s, n, &b) == TM_OK && b.n <= cap) {
        memcpy(out, b.ids, (size_t)b.n * sizeof *out);
        k = b.n;
    }
    tm_token_buf_free(&b);
    return k;
}

TEST(tokenizer_bpe_merges_lowest_rank_first)
{
    tm_tokenizer *t = small_bpe(true);
    REQUIRE(t);
    int32_t ids[16];
    CHECK_INT(enc(t, "abc", 3, ids, 16), 1);
    CHECK_INT(ids[0], 257);
    /* " abc": " "+ab (rank 2) loses to ab+c (rank 1) */
    CHECK_INT(enc(t, " abc", 4, ids, 16), 2);
    CHECK_INT(ids[0], ' ');
    CHECK_INT(ids[1], 257);
    CHECK_INT(enc(t, " ab<|endoftext|>x", 17, ids, 16), 3);
    CHECK_INT(ids[0], 258);
    CHECK_INT(ids[1], 259);
    CHECK_INT(ids[2], 'x');
    size_t n;
    char *d = tm_tokenizer_decode(t, ids, 3, true, &n);
    REQUIRE(d);
    CHECK(n == 4 && memcmp(d, " abx", 4) == 0);
    free(d);
    d = tm_tokenizer_decode(t, ids, 3, false, &n);
    REQUIRE(d);
    CHECK(n == 17 && memcmp(d, " ab<|endoftext|>x", 17) == 0);
    free(d);
    CHECK_INT(tm_tokenizer_eos_id(t), 259);
    CHECK_INT(tm_tokenizer_bos_id(t), -1);
    CHECK_INT(tm_tokenizer_token_to_id(t, "\xc4\xa0" "ab"), 258); /* "Ġab" */
    CHECK(strcmp(tm_tokenizer_id_to_token(t, 32), "\xc4\xa0") == 0);
    CHECK(tm_tokenizer_id_to_token(t, 260) == NULL);
    tm_tokenizer_free(t);
}

TEST(tokenizer_long_pieces_merge_like_short_ones)
{
    /* the heap path (long pieces) against the direct path (short pieces):
     * a long run of "ab" is the short result repeated */
    tm_tokenizer *t = small_bpe(false);
    REQUIRE(t);
    size_t n = 199998;
    char *s = malloc(n);
    REQUIRE(s);
    for (size_t i = 0; i < n; i++)
        s[i] = "abc"[i % 3];
    tm_token_buf b = {0};
    REQUIRE(tm_tokenizer_encode(t, s, n, &b) == TM_OK);
    CHECK_INT(b.n, (int64_t)n / 3);
    bool all = true;
    for (int64_t i = 0; i < b.n; i++)
        all = all && b.ids[i] == 257;
    CHECK(all);
    tm_token_buf_free(&b);
    free(s);
    tm_tokenizer_free(t);
}

static uint64_t rng(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void check_round_trip(const tm_tokenizer *t, const char *s, size_t n)
{
    tm_token_buf b = {0};
    size_t m = 0;
    REQUIRE(tm_tokenizer_encode(t, s, n, &b) == TM_OK);
    char *d = tm_tokenizer_decode(t, b.ids, b.n, false, &m);
    REQUIRE(d);
    if (m != n || memcmp(d, s, n) != 0)
        tt_fail(__FILE__, __LINE__, "round trip of %zu bytes gave %zu bytes", n, m);
    free(d);
    tm_token_buf_free(&b);
}

static const char multilingual[] =
    "Hello w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 "
    "\xd0\xa0\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xb8\xd0\xb9 \xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8 "
    "\xf0\x9f\x98\x80\xf0\x9f\x8e\x89 1\xc2\xbd\t\r\n  \n";

TEST(tokenizer_round_trips_random_bytes_and_multilingual_text)
{
    tm_tokenizer *bpe = small_bpe(true);
    tm_tokenizer *chr = tm_tokenizer_char_new(multilingual, sizeof multilingual - 1);
    REQUIRE(bpe && chr);
    uint64_t seed = 1;
    char buf[600];
    for (int it = 0; it < 200; it++) {
        size_t n = rng(&seed) % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)(rng(&seed) & 0xff);
        check_round_trip(bpe, buf, n);
        check_round_trip(chr, buf, n);
    }
    check_round_trip(bpe, multilingual, sizeof multilingual - 1);
    check_round_trip(chr, multilingual, sizeof multilingual - 1);
    tm_tokenizer_free(bpe);
    tm_tokenizer_free(chr);
}

TEST(tokenizer_char_level_ids_follow_code_points)
{
    tm_tokenizer *t = tm_tokenizer_char_new("hello \xc3\xa9", 8);
    REQUIRE(t);
    /* " " e h l o é, then 256 fallback bytes */
    CHECK_INT(tm_tokenizer_vocab_size(t), 6 + 256);
    int32_t ids[8];
    CHECK_INT(enc(t, "hole\xc3\xa9", 6, ids, 8), 5);
    CHECK_INT(ids[0], 2);
    CHECK_INT(ids[3], 1);
    CHECK_INT(ids[4], 5);
    /* 'z' is not a character of the text: its byte-fallback token */
    CHECK_INT(enc(t, "z", 1, ids, 8), 1);
    CHECK_INT(ids[0], 6 + 'z');
    CHECK(strcmp(tm_tokenizer_id_to_token(t, 6 + 'z'), "<0x7A>") == 0);
    tm_tokenizer_free(t);
}

TEST(tokenizer_json_round_trip_keeps_ids_and_hash)
{
    tm_tokenizer *a = small_bpe(true), *c = tm_tokenizer_char_new("abc", 3);
    REQUIRE(a && c);
    tm_tokenizer *src[2] = {a, c};
    for (int k = 0; k < 2; k++) {
        size_t n;
        char *js = tm_tokenizer_to_json(src[k], &n);
        REQUIRE(js);
        tm_tokenizer *b = tm_tokenizer_from_json(js, n);
        if (!b)
            tt_fail(__FILE__, __LINE__, "reload failed: %s", tm_last_error());
        REQUIRE(b);
        CHECK(tm_tokenizer_hash(src[k]) == tm_tokenizer_hash(b));
        CHECK_INT(tm_tokenizer_vocab_size(b), tm_tokenizer_vocab_size(src[k]));
        int32_t x[512], y[512];
        int64_t nx = enc(src[k], multilingual, sizeof multilingual - 1, x, 512);
        CHECK_INT(enc(b, multilingual, sizeof multilingual - 1, y, 512), nx);
        CHECK(nx > 0 && memcmp(x, y, (size_t)nx * sizeof *x) == 0);
        free(js);
        tm_tokenizer_free(b);
    }
    CHECK(tm_tokenizer_hash(a) != tm_tokenizer_hash(c));
    tm_tokenizer_free(a);
    tm_tokenizer_free(c);
}

#define DOC(pre, vocab, merges, added)                                        \
    "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,"             \
    "\"added_tokens\":[" added "],\"normalizer\":null,\"pre_tokenizer\":" pre \
    ",\"post_processor\":null,\"decoder\":{\"type\":\"ByteFallback\"},"      \
    "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,"       \
    "\"fuse_unk\":false,\"byte_fallback\":false,\"vocab\":" vocab            \
    ",\"merges\":" merges "}}"
#define V3 "{\"a\":0,\"b\":1,\"ab\":2}"

/* text is refused with status and a message containing substr */
#define CHECK_LOAD_BAD(text, status, substr)                                  \
    do {                                                                      \
        tm_clear_error();                                                     \
        tm_tokenizer *t_ = tm_tokenizer_from_json((text), sizeof(text) - 1);  \
        tt_check_error(__FILE__, __LINE__, #text, t_ == NULL, (status), (substr)); \
        tm_tokenizer_free(t_);                                                \
    } while (0)

TEST(tokenizer_json_loads_both_merge_forms)
{
    static const char s1[] = DOC("null", V3, "[\"a b\"]", "");
    static const char s2[] = DOC("null", V3, "[[\"a\",\"b\"]]", "");
    tm_tokenizer *a = tm_tokenizer_from_json(s1, sizeof s1 - 1), *b = tm_tokenizer_from_json(s2, sizeof s2 - 1);
    REQUIRE(a && b);
    CHECK(tm_tokenizer_hash(a) == tm_tokenizer_hash(b));
    int32_t ids[4];
    CHECK_INT(enc(a, "abab", 4, ids, 4), 2);
    CHECK_INT(ids[0], 2);
    tm_tokenizer_free(a);
    tm_tokenizer_free(b);
}

TEST(tokenizer_json_loader_refuses_what_it_cannot_reproduce)
{
    CHECK_LOAD_BAD("{\"model\": ", TM_EFORMAT, "");
    CHECK_LOAD_BAD("[1]", TM_EFORMAT, "expected an object");
    CHECK_LOAD_BAD(DOC("null", "{\"a\":\"x\"}", "[]", ""), TM_EFORMAT, "model.vocab[\"a\"]");
    CHECK_LOAD_BAD(DOC("null", V3, "{}", ""), TM_EFORMAT, "model.merges");
    CHECK_LOAD_BAD(DOC("{\"type\":\"Whitespace\"}", V3, "[]", ""), TM_EUNSUPPORTED, "Whitespace");
    CHECK_LOAD_BAD(DOC("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\w+\"},\"behavior\":\"Isolated\",\"invert\":false}",
                       V3, "[]", ""), TM_EUNSUPPORTED, "pre_tokenizer.pattern.Regex");
    CHECK_LOAD_BAD(DOC("null", V3, "[\"a c\"]", ""), TM_EFORMAT, "model.merges[0]: token \"c\"");
    CHECK_LOAD_BAD(DOC("null", V3, "[\"b a\"]", ""), TM_EFORMAT, "\"ba\" is not in the vocab");
    CHECK_LOAD_BAD(DOC("null", V3, "[\"a b c\"]", ""), TM_EFORMAT, "two tokens");
    CHECK_LOAD_BAD(DOC("null", "{\"a\":0,\"b\":0}", "[]", ""), TM_EFORMAT, "id 0 is used twice");
    CHECK_LOAD_BAD(DOC("null", "{\"a\":0,\"b\":2}", "[]", ""), TM_EFORMAT, "without gaps");
    CHECK_LOAD_BAD(DOC("null", "{\"a\":0,\"b\":2,\"c\":2}", "[]", ""), TM_EFORMAT, "id 2 is used twice");
    CHECK_LOAD_BAD(DOC("null", "{\"a\":0,\"b\":2000000000}", "[]", ""), TM_EFORMAT, "without gaps");
    CHECK_LOAD_BAD(DOC("null", "{\"a\":-1}", "[]", ""), TM_EFORMAT, "out of range");
    CHECK_LOAD_BAD(DOC("null", V3, "[]",
                       "{\"id\":3,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":true,"
                       "\"rstrip\":false,\"normalized\":false,\"special\":true}"),
                   TM_EUNSUPPORTED, "added_tokens[0]: single_word, lstrip and rstrip");
    CHECK_LOAD_BAD(DOC("null", V3, "[]", "{\"id\":1,\"content\":\"<s>\",\"special\":true}"), TM_EFORMAT,
                   "added_tokens[0]: id 1 is used twice");
    static const char norm[] = "{\"normalizer\":{\"type\":\"NFC\"},\"model\":{\"vocab\":{},\"merges\":[]}}";
    CHECK_LOAD_BAD(norm, TM_EUNSUPPORTED, "normalizer.type: normalizer \"NFC\"");
    static const char wp[] = "{\"model\":{\"type\":\"Unigram\",\"vocab\":{},\"merges\":[]}}";
    CHECK_LOAD_BAD(wp, TM_EUNSUPPORTED, "model.type: model \"Unigram\"");
    static const char extra[] = "{\"model\":{\"vocab\":{},\"merges\":[]},\"foo\":1}";
    CHECK_LOAD_BAD(extra, TM_EUNSUPPORTED, "unknown key \"foo\"");
    CHECK(tm_tokenizer_load("/nonexistent/tokenizer.json") == NULL);
    CHECK(tm_last_status() == TM_EIO && strstr(tm_last_error(), "/nonexistent/tokenizer.json"));
}

TEST(tokenizer_decode_refuses_ids_out_of_range)
{
    tm_tokenizer *t = small_bpe(false);
    REQUIRE(t);
    int32_t ids[2] = {5, 259};
    tm_clear_error();
    CHECK(tm_tokenizer_decode(t, ids, 2, false, NULL) == NULL);
    CHECK(tm_last_status() == TM_ERANGE && strstr(tm_last_error(), "id 259 at position 1"));
    tm_tokenizer_free(t);
}

TEST(tokenizer_without_a_unit_for_a_byte_fails_clearly)
{
    static const char s[] = DOC("null", V3, "[]", "");
    tm_tokenizer *t = tm_tokenizer_from_json(s, sizeof s - 1);
    REQUIRE(t);
    tm_token_buf b = {0};
    CHECK_STATUS(tm_tokenizer_encode(t, "abz", 3, &b), TM_EINVAL, "no token for byte 0x7A at offset 2");
    CHECK_INT(b.n, 0);
    tm_token_buf_free(&b);
    tm_tokenizer_free(t);
}

typedef struct enc_job { const tm_tokenizer *t; const char *s; size_t n; int64_t want_n; const int32_t *want; bool ok; } enc_job;

static void *encode_many(void *arg)
{
    enc_job *j = arg;
    j->ok = true;
    for (int it = 0; it < 50; it++) {
        tm_token_buf b = {0};
        j->ok = j->ok && tm_tokenizer_encode(j->t, j->s, j->n, &b) == TM_OK && b.n == j->want_n &&
                memcmp(b.ids, j->want, (size_t)b.n * sizeof *b.ids) == 0;
        tm_token_buf_free(&b);
    }
    return NULL;
}

TEST(tokenizer_encodes_from_several_threads_at_once)
{
    /* the piece cache is shared: threads must see the single-threaded ids */
    tm_tokenizer *t = small_bpe(true);
    REQUIRE(t);
    int32_t want[512];
    int64_t nw = enc(t, multilingual, sizeof multilingual - 1, want, 512);
    REQUIRE(nw > 0);
    tm_tokenizer_free(t);
    t = small_bpe(true); /* a cold cache, filled concurrently */
    REQUIRE(t);
    pthread_t th[4];
    enc_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (enc_job){t, multilingual, sizeof multilingual - 1, nw, want, false};
        REQUIRE(pthread_create(&th[i], NULL, encode_many, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].ok);
    }
    tm_tokenizer_free(t);
}
