/*
 * test_dataset.c — the token-dataset format: write/read round trips, the
 * split by document, the unigram baseline against a hand computation, and
 * every corruption of the header and tables giving its own error.
 */
#include "harness.h"
#include "tmpfiles.h"

#include <stdlib.h>

/* The documents of the small dataset most tests use (vocab 10). */
static const int32_t DOC0[] = {1, 2, 3};
static const int32_t DOC1[] = {4, 5};
static const int32_t DOC2[] = {9, 0, 9, 8};

static bool write_small(const char *path, int64_t vocab)
{
    tm_token_writer *w = tm_token_writer_new_raw(path, vocab, 0x1234abcdull);
    if (!w) return false;
    bool ok = tm_token_writer_add_tokens(w, DOC0, 3, 11) == TM_OK &&
              tm_token_writer_add_tokens(w, DOC1, 2, 7) == TM_OK &&
              tm_token_writer_add_tokens(w, DOC2, 4, 20) == TM_OK;
    if (!ok) {
        tm_token_writer_abort(w);
        return false;
    }
    return tm_token_writer_close(w) == TM_OK;
}

/* The bytes of the small dataset (free()). */
static unsigned char *small_bytes(size_t *n, int64_t vocab)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    if (!tt_tmpdir(dir)) return NULL;
    unsigned char *b = NULL;
    if (write_small(tt_path(p, dir, "d.tok"), vocab)) b = tt_read_file(p, n);
    tt_rmdir(dir);
    return b;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* FNV-1a over the first 56 bytes, into the checksum field. */
static void reseal(unsigned char *b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 56; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    put64(b + 56, h);
}

TEST(dataset_round_trip_keeps_documents_tokens_and_bytes)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_small(tt_path(p, dir, "d.tok"), 10));
    CHECK_INT(tt_count_entries(dir), 1);   /* no .tmp left behind */
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_ALL), 3);
    CHECK_INT(tm_token_dataset_tokens(ds, TM_SPLIT_ALL), 9);
    CHECK_INT(tm_token_dataset_bytes(ds, TM_SPLIT_ALL), 38);
    CHECK_INT(tm_token_dataset_vocab_size(ds), 10);
    CHECK(tm_token_dataset_tokenizer_hash(ds) == 0x1234abcdull);
    int64_t got[9], want[9] = {1, 2, 3, 4, 5, 9, 0, 9, 8};
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_ALL, 0, 9, got) == TM_OK);
    for (int i = 0; i < 9; i++) CHECK_INT(got[i], want[i]);
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_ALL, 2, 3, got) == TM_OK);
    CHECK_INT(got[0], 3);
    CHECK_INT(got[2], 5);
    CHECK_STATUS(tm_token_dataset_read(ds, TM_SPLIT_ALL, 7, 3, got), TM_ERANGE,
                 "outside the split's 9 tokens");
    CHECK_STATUS(tm_token_dataset_read(ds, TM_SPLIT_ALL, -1, 1, got), TM_ERANGE,
                 "outside");
    CHECK_STATUS(tm_token_dataset_read(ds, (tm_token_split)5, 0, 1, got),
                 TM_EINVAL, "split 5 is not ALL, TRAIN or VAL");
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(dataset_file_layout_is_the_documented_one)
{
    size_t n = 0;
    unsigned char *b = small_bytes(&n, 10);
    REQUIRE(b);
    /* 64 header + 4 offsets + 3 byte counts + 9 two-byte tokens */
    CHECK_INT(n, 64 + 8 * 4 + 8 * 3 + 2 * 9);
    CHECK(!memcmp(b, "FTOKDS\0\0", 8));
    CHECK_INT(b[8], 1);    /* version */
    CHECK_INT(b[12], 2);   /* width */
    CHECK_INT(b[16], 10);  /* vocab */
    CHECK_INT(b[32], 3);   /* docs */
    CHECK_INT(b[40], 9);   /* tokens */
    CHECK_INT(b[48], 38);  /* bytes */
    CHECK_INT(b[64 + 8], 3);            /* offsets 0 3 5 9 */
    CHECK_INT(b[64 + 24], 9);
    CHECK_INT(b[64 + 32 + 16], 20);     /* byte count of doc 2 */
    CHECK_INT(b[120 + 2 * 5], 9);       /* token 5 */
    free(b);
}

TEST(dataset_uses_four_byte_tokens_above_65536)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "big.tok");
    tm_token_writer *w = tm_token_writer_new_raw(p, 100000, 7);
    REQUIRE(w);
    int32_t ids[3] = {99999, 0, 65536};
    CHECK(tm_token_writer_add_tokens(w, ids, 3, 5) == TM_OK);
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    size_t n = 0;
    unsigned char *b = tt_read_file(p, &n);
    REQUIRE(b);
    CHECK_INT(b[12], 4);
    CHECK_INT(n, 64 + 16 + 8 + 12);
    free(b);
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    int64_t got[3];
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_ALL, 0, 3, got) == TM_OK);
    CHECK_INT(got[0], 99999);
    CHECK_INT(got[2], 65536);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(dataset_writer_rejects_bad_tokens_and_abort_leaves_nothing)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "d.tok");
    CHECK(tm_token_writer_new_raw(p, 0, 0) == NULL);
    CHECK(strstr(tm_last_error(), "vocab_size 0 is not in [1, 2^32]"));
    tm_token_writer *w = tm_token_writer_new_raw(p, 10, 0);
    REQUIRE(w);
    int32_t bad[2] = {3, 10}, neg[1] = {-1};
    CHECK_STATUS(tm_token_writer_add_tokens(w, bad, 2, 0), TM_ERANGE,
                 "token 10 at position 1 is not in [0, vocab size 10)");
    CHECK_STATUS(tm_token_writer_add_tokens(w, neg, 1, 0), TM_ERANGE, "token -1");
    CHECK_STATUS(tm_token_writer_add_tokens(w, NULL, 2, 0), TM_EINVAL, "ids is NULL");
    CHECK_STATUS(tm_token_writer_add_tokens(w, bad, 1, -4), TM_EINVAL, "negative");
    /* an argument error leaves the writer usable */
    CHECK(tm_token_writer_add_tokens(w, bad, 1, 1) == TM_OK);
    tm_token_writer_abort(w);
    CHECK_INT(tt_count_entries(dir), 0);
    tt_rmdir(dir);
}

TEST(dataset_with_many_documents_grows_its_tables)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "d.tok");
    tm_token_writer *w = tm_token_writer_new_raw(p, 50000, 0);
    REQUIRE(w);
    int32_t ids[7];
    for (int d = 0; d < 300; d++) {
        for (int i = 0; i < d % 7; i++) ids[i] = d * 100 + i;
        REQUIRE(tm_token_writer_add_tokens(w, ids, d % 7, d) == TM_OK);
    }
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_ALL), 300);
    CHECK_INT(tm_token_dataset_bytes(ds, TM_SPLIT_ALL), 299 * 300 / 2);
    int64_t total = tm_token_dataset_tokens(ds, TM_SPLIT_ALL), at = 0, t = 0;
    bool same = true;
    for (int d = 0; d < 300; d++)
        for (int i = 0; i < d % 7; i++, at++) {
            same = same && tm_token_dataset_read(ds, TM_SPLIT_ALL, at, 1, &t) == TM_OK &&
                   t == d * 100 + i;
        }
    CHECK(same);
    CHECK_INT(at, total);
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

/* ------------------------------------------------------------ splits */

static uint64_t splitmix(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

TEST(dataset_split_by_document_follows_the_documented_rule)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tt_path(p, dir, "d.tok");
    tm_token_writer *w = tm_token_writer_new_raw(p, 1000, 0);
    REQUIRE(w);
    int32_t ids[5];
    for (int d = 0; d < 40; d++) {
        for (int i = 0; i < 5; i++) ids[i] = d * 10 + i;
        REQUIRE(tm_token_writer_add_tokens(w, ids, 1 + d % 5, 2 * d) == TM_OK);
    }
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    CHECK_NEAR(tm_token_dataset_val_fraction(ds), 0.1, 0);
    REQUIRE(tm_token_dataset_set_val_fraction(ds, 0.3) == TM_OK);
    int64_t val_tok = 0, val_docs = 0, val_bytes = 0;
    int64_t want[200], nw = 0;
    for (int d = 0; d < 40; d++) {
        double u = (double)(splitmix((uint64_t)d) >> 11) * 0x1p-53;
        if (u >= 0.3) continue;
        val_docs++;
        val_tok += 1 + d % 5;
        val_bytes += 2 * d;
        for (int i = 0; i < 1 + d % 5; i++) want[nw++] = d * 10 + i;
    }
    CHECK(val_docs > 0 && val_docs < 40);
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_VAL), val_docs);
    CHECK_INT(tm_token_dataset_tokens(ds, TM_SPLIT_VAL), val_tok);
    CHECK_INT(tm_token_dataset_bytes(ds, TM_SPLIT_VAL), val_bytes);
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_TRAIN), 40 - val_docs);
    CHECK_INT(tm_token_dataset_tokens(ds, TM_SPLIT_TRAIN) + val_tok,
              tm_token_dataset_tokens(ds, TM_SPLIT_ALL));
    int64_t got[200];
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_VAL, 0, nw, got) == TM_OK);
    bool same = true;
    for (int64_t i = 0; i < nw; i++) same = same && got[i] == want[i];
    CHECK(same);
    /* a read starting inside a document and crossing into the next */
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_VAL, 1, nw - 2, got) == TM_OK);
    CHECK_INT(got[0], want[1]);
    CHECK_INT(got[nw - 3], want[nw - 2]);
    CHECK_STATUS(tm_token_dataset_set_val_fraction(ds, 1.0), TM_EINVAL,
                 "val_fraction 1 is not in [0, 1)");
    CHECK_STATUS(tm_token_dataset_set_val_fraction(ds, NAN), TM_EINVAL, "val_fraction");
    REQUIRE(tm_token_dataset_set_val_fraction(ds, 0) == TM_OK);
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_VAL), 0);
    CHECK_INT(tm_token_dataset_tokens(ds, TM_SPLIT_TRAIN), tm_token_dataset_tokens(ds, TM_SPLIT_ALL));
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(dataset_split_keeps_one_document_on_each_side)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_small(tt_path(p, dir, "d.tok"), 10));
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    const double fr[] = {1e-12, 0.1, 0.5, 0.999999};
    for (int k = 0; k < 4; k++) {
        REQUIRE(tm_token_dataset_set_val_fraction(ds, fr[k]) == TM_OK);
        CHECK(tm_token_dataset_docs(ds, TM_SPLIT_VAL) >= 1);
        CHECK(tm_token_dataset_docs(ds, TM_SPLIT_TRAIN) >= 1);
        CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_VAL) +
                  tm_token_dataset_docs(ds, TM_SPLIT_TRAIN), 3);
    }
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

TEST(dataset_unigram_loss_matches_a_hand_computation)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    REQUIRE(write_small(tt_path(p, dir, "d.tok"), 10));
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    /* ALL on ALL: tokens 1 2 3 4 5 9 0 9 8, N = 9, V = 10: counts 2 for 9,
     * 1 for the other seven; p = (c + 1) / 19. */
    double want = -(7 * log(2.0 / 19) + 2 * log(3.0 / 19)) / 9;
    CHECK_NEAR(tm_token_dataset_unigram_loss(ds, TM_SPLIT_ALL, TM_SPLIT_ALL), want, 1e-12);
    /* fit on TRAIN, eval on VAL: recomputed from whichever documents the
     * rule put where (three documents: DOC0, DOC1, DOC2) */
    int64_t nval = tm_token_dataset_docs(ds, TM_SPLIT_VAL);
    REQUIRE(nval >= 1);
    int64_t train_docs = tm_token_dataset_docs(ds, TM_SPLIT_TRAIN);
    REQUIRE(train_docs >= 1);
    /* the expected value from the splits' tokens read back */
    int counts[10] = {0}, nfit = 0, neval = 0;
    double sum = 0;
    int64_t vt[9];
    int64_t vn = tm_token_dataset_tokens(ds, TM_SPLIT_VAL);
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_VAL, 0, vn, vt) == TM_OK);
    int64_t tt[9], tn = tm_token_dataset_tokens(ds, TM_SPLIT_TRAIN);
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_TRAIN, 0, tn, tt) == TM_OK);
    for (int64_t i = 0; i < tn; i++) counts[tt[i]]++, nfit++;
    for (int64_t i = 0; i < vn; i++, neval++) sum -= log((counts[vt[i]] + 1.0) / (nfit + 10));
    CHECK_INT(nfit + neval, 9);
    CHECK_NEAR(tm_token_dataset_unigram_loss(ds, TM_SPLIT_TRAIN, TM_SPLIT_VAL),
               sum / neval, 1e-12);
    REQUIRE(tm_token_dataset_set_val_fraction(ds, 0) == TM_OK);
    tm_clear_error();
    CHECK(isnan(tm_token_dataset_unigram_loss(ds, TM_SPLIT_TRAIN, TM_SPLIT_VAL)));
    CHECK(strstr(tm_last_error(), "holds no tokens"));
    tm_token_dataset_close(ds);
    tt_rmdir(dir);
}

/* ------------------------------------------------------- corruptions */

/* Opens a (patched) copy of the small dataset from memory and checks the
 * error; `seal` recomputes the header checksum first. */
static void check_corrupt(const char *file, int line, size_t at, uint64_t v,
                          int width, bool seal, size_t cut, const char *want)
{
    size_t n = 0;
    unsigned char *b = small_bytes(&n, 10);
    if (!b) {
        tt_fail(file, line, "cannot build the dataset");
        return;
    }
    for (int i = 0; i < width; i++) b[at + (size_t)i] = (unsigned char)(v >> (8 * i));
    if (seal) reseal(b);
    tm_clear_error();
    tm_token_dataset *ds = tm_token_dataset_open_memory(b, n - cut);
    if (ds || tm_last_status() != TM_EFORMAT || !strstr(tm_last_error(), want))
        tt_fail(file, line, "expected TM_EFORMAT with \"%s\", got %s: %s", want,
                ds ? "a dataset" : tm_status_name(tm_last_status()), tm_last_error());
    tm_token_dataset_close(ds);
    free(b);
}
#define CORRUPT(at, v, width, seal, cut, want)                                \
    check_corrupt(__FILE__, __LINE__, (at), (v), (width), (seal), (cut), (want))

TEST(dataset_every_header_corruption_has_its_error)
{
    CORRUPT(0, 'X', 1, true, 0, "<memory>: bad magic");
    CORRUPT(8, 7, 4, true, 0, "version 7 not supported (this build reads 1)");
    CORRUPT(16, 11, 8, false, 0, "header checksum mismatch");
    CORRUPT(12, 3, 4, true, 0, "token width 3 (must be 2 or 4)");
    CORRUPT(12, 4, 4, true, 0, "4-byte tokens for vocab size 10");
    CORRUPT(16, 0, 8, true, 0, "vocab size 0 does not fit 2-byte tokens");
    CORRUPT(16, 70000, 8, true, 0, "vocab size 70000 does not fit");
    CORRUPT(32, 1ull << 61, 8, true, 0, "impossible sizes");
    CORRUPT(32, 1000, 8, true, 0, "truncated: header says 1000 documents");
    CORRUPT(48, 39, 8, true, 0, "byte counts sum to 38, header says 39");
    CORRUPT(48, 30, 8, true, 0, "byte counts exceed the header's 30 bytes");
}

TEST(dataset_truncated_or_padded_files_are_refused)
{
    CORRUPT(0, 'F', 1, false, 1, "truncated: header says 9 tokens, file holds 8");
    CORRUPT(0, 'F', 1, false, 18, "truncated: header says 9 tokens, file holds 0");
    size_t n = 0;
    unsigned char *b = small_bytes(&n, 10);
    REQUIRE(b);
    CHECK(tm_token_dataset_open_memory(b, 40) == NULL);
    CHECK(strstr(tm_last_error(), "truncated: 40 bytes, the header alone is 64"));
    CHECK(tm_token_dataset_open_memory(b, 0) == NULL);
    CHECK(strstr(tm_last_error(), "truncated: 0 bytes"));
    unsigned char *pad = malloc(n + 2);
    REQUIRE(pad);
    memcpy(pad, b, n);
    pad[n] = pad[n + 1] = 0;
    tm_token_dataset *ds = tm_token_dataset_open_memory(pad, n + 2);
    CHECK(!ds && strstr(tm_last_error(), "2 trailing bytes after the tokens"));
    tm_token_dataset_close(ds);
    free(pad);
    free(b);
    tm_clear_error();
    CHECK(tm_token_dataset_open("/nonexistent/d.tok") == NULL);
    CHECK_INT(tm_last_status(), TM_EIO);
    CHECK(strstr(tm_last_error(), "/nonexistent/d.tok: cannot open"));
}

TEST(dataset_bad_tables_and_tokens_are_refused)
{
    /* offsets at 64: 0 3 5 9; byte counts at 96; tokens at 120 */
    CORRUPT(64, 1, 8, false, 0, "first document offset is 1, not 0");
    CORRUPT(72, 6, 8, false, 0, "document 1 offsets 6..5 are not increasing");
    CORRUPT(72, 12, 8, false, 0, "document 0 offsets 0..12 are not increasing within 9");
    CORRUPT(88, 8, 8, false, 0, "last document ends at token 8, header says 9 tokens");
    CORRUPT(120 + 2 * 4, 10, 2, false, 0, "token 10 at position 4 is >= vocab size 10");
    CORRUPT(120 + 2 * 8, 65535, 2, false, 0, "token 65535 at position 8");
}

TEST(dataset_null_arguments_are_errors)
{
    CHECK(tm_token_dataset_open(NULL) == NULL);
    CHECK(strstr(tm_last_error(), "path is NULL"));
    CHECK_INT(tm_token_dataset_tokens(NULL, TM_SPLIT_ALL), -1);
    CHECK_STATUS(tm_token_dataset_set_val_fraction(NULL, 0.1), TM_EINVAL, "NULL");
    CHECK(tm_token_dataset_open_memory(NULL, 5) == NULL);
    tm_token_dataset_close(NULL);
    tm_token_writer_abort(NULL);
    CHECK_STATUS(tm_token_writer_close(NULL), TM_EINVAL, "writer is NULL");
}
