/* test_bpe_train_core.c — the BPE trainer's merge loop (io/bpe_train_impl.h)
 * on word tables small enough to merge by hand. */
#include "harness.h"

#include "../../io/bpe_train_impl.h"
#include "../../tensor/runtime/runtime_impl.h"

/* A vocabulary of the 256 bytes with id == byte value. */
static bool plain_vocab(tm__bpe_vocab *v, int32_t byte_id[256])
{
    memset(v, 0, sizeof *v);
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        if (tm__bpe_vocab_add(v, &c, 1, true) != b) return false;
        byte_id[b] = b;
    }
    return true;
}

static bool add(tm__bpe_words *ws, const char *w, uint64_t count)
{
    return !tm__bpe_words_add(ws, (const unsigned char *)w, strlen(w), count);
}

TEST(bpe_core_merges_the_most_frequent_pair_first)
{
    tm__bpe_words ws = {0};
    tm__bpe_vocab v;
    int32_t byte_id[256];
    REQUIRE(plain_vocab(&v, byte_id));
    /* (a,b) 5 times, (b,c) 3; after "ab", "abc" holds (ab,c) twice and
     * (b,c) is left once, in "bc". */
    REQUIRE(add(&ws, "ab", 3) && add(&ws, "abc", 2) && add(&ws, "bc", 1));
    tm__bpe_merge *m = NULL;
    int64_t nm = 0;
    REQUIRE(!tm__bpe_run(&ws, &v, byte_id, 1000, 1, NULL, NULL, &m, &nm));
    REQUIRE(nm == 3);
    CHECK(m[0].a == 'a' && m[0].b == 'b' && m[0].id == 256);
    CHECK(m[1].a == 256 && m[1].b == 'c' && m[1].id == 257);
    CHECK(m[2].a == 'b' && m[2].b == 'c' && m[2].id == 258);
    CHECK_INT(v.ntok, 259);
    CHECK_INT(v.len[257], 3);
    CHECK(!memcmp(v.bytes + v.off[257], "abc", 3));
    tm__dealloc(m);
    tm__bpe_vocab_free(&v);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_counts_repeated_words_once_per_feed)
{
    tm__bpe_words ws = {0};
    REQUIRE(add(&ws, "xy", 1) && add(&ws, "xy", 4) && add(&ws, "z", 1));
    CHECK_INT(ws.n, 2);
    CHECK_INT(ws.w[0].count, 5);
    CHECK_INT(ws.w[1].count, 1);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_stops_below_min_frequency)
{
    tm__bpe_words ws = {0};
    tm__bpe_vocab v;
    int32_t byte_id[256];
    REQUIRE(plain_vocab(&v, byte_id));
    REQUIRE(add(&ws, "ab", 3) && add(&ws, "abc", 2) && add(&ws, "bc", 1));
    tm__bpe_merge *m = NULL;
    int64_t nm = 0;
    /* (b,c) is left with a count of 1 < 2. */
    REQUIRE(!tm__bpe_run(&ws, &v, byte_id, 1000, 2, NULL, NULL, &m, &nm));
    CHECK_INT(nm, 2);
    tm__dealloc(m);
    tm__bpe_vocab_free(&v);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_breaks_ties_by_the_smaller_pair)
{
    tm__bpe_words ws = {0};
    tm__bpe_vocab v;
    int32_t byte_id[256];
    REQUIRE(plain_vocab(&v, byte_id));
    REQUIRE(add(&ws, "xy", 2) && add(&ws, "ab", 2) && add(&ws, "ac", 2));
    tm__bpe_merge *m = NULL;
    int64_t nm = 0;
    REQUIRE(!tm__bpe_run(&ws, &v, byte_id, 1000, 0, NULL, NULL, &m, &nm));
    REQUIRE(nm == 3);
    CHECK(m[0].a == 'a' && m[0].b == 'b');
    CHECK(m[1].a == 'a' && m[1].b == 'c');
    CHECK(m[2].a == 'x' && m[2].b == 'y');
    tm__dealloc(m);
    tm__bpe_vocab_free(&v);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_merges_runs_left_to_right)
{
    tm__bpe_words ws = {0};
    tm__bpe_vocab v;
    int32_t byte_id[256];
    REQUIRE(plain_vocab(&v, byte_id));
    /* "aaaaa": (a,a) counted 4 times; merging left to right gives
     * [aa, aa, a], so the next pairs are (aa,aa) once and (aa,a) once;
     * the tie goes to the smaller pair (256,'a') < (256,256). */
    REQUIRE(add(&ws, "aaaaa", 1));
    tm__bpe_merge *m = NULL;
    int64_t nm = 0;
    REQUIRE(!tm__bpe_run(&ws, &v, byte_id, 258, 0, NULL, NULL, &m, &nm));
    REQUIRE(nm == 2);
    CHECK(m[0].a == 'a' && m[0].b == 'a' && m[0].id == 256);
    CHECK(m[1].a == 256 && m[1].b == 'a' && m[1].id == 257);
    tm__dealloc(m);
    tm__bpe_vocab_free(&v);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_stops_at_the_vocabulary_size)
{
    tm__bpe_words ws = {0};
    tm__bpe_vocab v;
    int32_t byte_id[256];
    REQUIRE(plain_vocab(&v, byte_id));
    REQUIRE(add(&ws, "abcdefgh", 7));
    tm__bpe_merge *m = NULL;
    int64_t nm = 0;
    REQUIRE(!tm__bpe_run(&ws, &v, byte_id, 256 + 3, 0, NULL, NULL, &m, &nm));
    CHECK_INT(nm, 3);
    CHECK_INT(v.ntok, 259);
    tm__dealloc(m);
    tm__bpe_vocab_free(&v);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_tokens_are_their_parts_concatenated_and_distinct)
{
    tm__bpe_words ws = {0};
    tm__bpe_vocab v;
    int32_t byte_id[256];
    REQUIRE(plain_vocab(&v, byte_id));
    REQUIRE(add(&ws, "abq", 10) && add(&ws, "zbc", 9) && add(&ws, "abc", 1)
            && add(&ws, "bcz", 1) && add(&ws, "aaaaaaa", 3)
            && add(&ws, "aaa", 2) && add(&ws, "abcabc", 4));
    tm__bpe_merge *m = NULL;
    int64_t nm = 0;
    REQUIRE(!tm__bpe_run(&ws, &v, byte_id, 1000, 1, NULL, NULL, &m, &nm));
    /* Every merge's id names the concatenation of its two parts, and no
     * two tokens have the same bytes. */
    for (int64_t k = 0; k < nm; k++) {
        uint32_t la = v.len[m[k].a], lb = v.len[m[k].b];
        CHECK_INT(v.len[m[k].id], la + lb);
        CHECK(!memcmp(v.bytes + v.off[m[k].id], v.bytes + v.off[m[k].a], la));
        CHECK(!memcmp(v.bytes + v.off[m[k].id] + la, v.bytes + v.off[m[k].b],
                      lb));
    }
    for (int32_t i = 256; i < v.ntok; i++)
        CHECK_INT(tm__bpe_vocab_find(&v, v.bytes + v.off[i], v.len[i]), i);
    tm__dealloc(m);
    tm__bpe_vocab_free(&v);
    tm__bpe_words_free(&ws);
}

TEST(bpe_core_orders_bytes_as_the_byte_level_alphabet)
{
    unsigned char o[256];
    tm__bpe_byte_order(o);
    CHECK_INT(o[0], '!');
    CHECK_INT(o[93], '~');
    CHECK_INT(o[94], 0xA1);
    CHECK_INT(o[188 - 1], 0xFF);
    CHECK_INT(o[188], 0x00);
    CHECK_INT(o[188 + 32], ' ');
    CHECK_INT(o[255], 0xAD);
}
