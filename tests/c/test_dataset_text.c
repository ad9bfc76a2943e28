/*
 * test_dataset_text.c — datasets from text through a tokenizer: the header
 * carries the tokenizer's vocab and hash, tokens decode back to the text,
 * the end-of-text id follows each document, directory walks are sorted and
 * filtered, and a dataset refuses another tokenizer.
 */
#include "harness.h"
#include "tmpfiles.h"

#include "../../io/tokenizer_impl.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes, then "ab", then <|endoftext|> as a special added token. */
static tm_tokenizer *bpe_with_eos(void)
{
    const char *bytes[258];
    size_t lens[258];
    uint8_t kind[258];
    char one[256];
    for (int b = 0; b < 256; b++) {
        one[b] = (char)b;
        bytes[b] = &one[b], lens[b] = 1, kind[b] = TM__TOK_MODEL;
    }
    bytes[256] = "ab", lens[256] = 2, kind[256] = TM__TOK_MODEL;
    bytes[257] = "<|endoftext|>", lens[257] = 13;
    kind[257] = TM__TOK_ADDED | TM__TOK_SPECIAL;
    int32_t merges[1][2] = {{'a', 'b'}};
    tm__tok_spec sp = {0};
    sp.n_tokens = 258;
    sp.bytes = bytes, sp.lens = lens, sp.kind = kind;
    sp.n_merges = 1, sp.merges = (const int32_t(*)[2])merges;
    sp.pretok = (tm__pretok){.regex = TM__RE_GPT2, .byte_level = true, .present = true};
    sp.unk_id = -1;
    return tm__tokenizer_build(&sp, "bpe_with_eos");
}

static int64_t *read_all(const tm_token_dataset *ds, int64_t *n)
{
    *n = tm_token_dataset_tokens(ds, TM_SPLIT_ALL);
    int64_t *t = malloc(sizeof *t * (size_t)(*n + 1));
    if (t && tm_token_dataset_read(ds, TM_SPLIT_ALL, 0, *n, t) != TM_OK) {
        free(t);
        t = NULL;
    }
    return t;
}

TEST(dataset_text_writer_encodes_documents_and_adds_end_of_text)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_tokenizer *tok = bpe_with_eos();
    REQUIRE(tok);
    REQUIRE(tm_tokenizer_eos_id(tok) == 257);
    tm_token_writer *w = tm_token_writer_new(tt_path(p, dir, "d.tok"), tok);
    REQUIRE(w);
    CHECK(tm_token_writer_add(w, "abc", 3) == TM_OK);
    CHECK(tm_token_writer_add(w, "", 0) == TM_OK);
    CHECK(tm_token_writer_add(w, "x\xff", 2) == TM_OK);
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    CHECK_INT(tm_token_dataset_vocab_size(ds), 258);
    CHECK(tm_token_dataset_tokenizer_hash(ds) == tm_tokenizer_hash(tok));
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_ALL), 3);
    CHECK_INT(tm_token_dataset_bytes(ds, TM_SPLIT_ALL), 5);
    int64_t n = 0, *t = read_all(ds, &n);
    REQUIRE(t);
    const int64_t want[] = {256, 'c', 257, 257, 'x', 0xff, 257};
    CHECK_INT(n, 7);
    for (int i = 0; i < 7 && i < n; i++) CHECK_INT(t[i], want[i]);
    CHECK(tm_token_dataset_check_tokenizer(ds, tok) == TM_OK);
    free(t);
    tm_token_dataset_close(ds);
    tm_tokenizer_free(tok);
    tt_rmdir(dir);
}

TEST(dataset_text_round_trips_through_a_char_tokenizer)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    const char *text = "hello, w\xc3\xb6rld \xe6\x97\xa5\n";
    tm_tokenizer *tok = tm_tokenizer_char_new(text, strlen(text));
    REQUIRE(tok);
    tm_token_writer *w = tm_token_writer_new(tt_path(p, dir, "d.tok"), tok);
    REQUIRE(w);
    CHECK(tm_token_writer_add(w, text, strlen(text)) == TM_OK);
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    int64_t n = 0, *t = read_all(ds, &n);
    REQUIRE(t);
    int32_t ids[64];
    for (int64_t i = 0; i < n && i < 64; i++) ids[i] = (int32_t)t[i];
    size_t len = 0;
    char *back = tm_tokenizer_decode(tok, ids, n, false, &len);
    REQUIRE(back);
    CHECK(len == strlen(text) && !memcmp(back, text, len));
    free(back);
    free(t);
    tm_token_dataset_close(ds);
    tm_tokenizer_free(tok);
    tt_rmdir(dir);
}

TEST(dataset_refuses_another_tokenizer)
{
    char dir[TT_PATH_MAX], p[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_tokenizer *a = tm_tokenizer_char_new("abc", 3), *b = tm_tokenizer_char_new("abd", 3);
    REQUIRE(a && b);
    tm_token_writer *w = tm_token_writer_new(tt_path(p, dir, "d.tok"), a);
    REQUIRE(w);
    CHECK(tm_token_writer_add(w, "cab", 3) == TM_OK);
    REQUIRE(tm_token_writer_close(w) == TM_OK);
    tm_token_dataset *ds = tm_token_dataset_open(p);
    REQUIRE(ds);
    CHECK(tm_token_dataset_check_tokenizer(ds, a) == TM_OK);
    CHECK_STATUS(tm_token_dataset_check_tokenizer(ds, b), TM_EINVAL,
                 "tm_token_dataset_check_tokenizer: tokenizer hash mismatch: dataset 0x");
    tm_token_dataset_close(ds);
    tm_tokenizer_free(a);
    tm_tokenizer_free(b);
    tt_rmdir(dir);
}

/* dir/{a.py, b.txt, .hidden.py, link.py -> a.py, sub/c.py, sub/z/d.py} */
static bool make_tree(const char *dir)
{
    char p[TT_PATH_MAX], q[TT_PATH_MAX];
    bool ok = tt_write_file(tt_path(p, dir, "a.py"), "ab = 1\n", 7) &&
              tt_write_file(tt_path(p, dir, "b.txt"), "text", 4) &&
              tt_write_file(tt_path(p, dir, ".hidden.py"), "no", 2) &&
              symlink("a.py", tt_path(q, dir, "link.py")) == 0 &&
              mkdir(tt_path(p, dir, "sub"), 0700) == 0 &&
              tt_write_file(tt_path(q, dir, "sub/c.py"), "cc", 2) &&
              mkdir(tt_path(p, dir, "sub/z"), 0700) == 0 &&
              tt_write_file(tt_path(q, dir, "sub/z/d.py"), "ddd", 3);
    return ok;
}

static void remove_tree(const char *dir)
{
    char p[TT_PATH_MAX];
    const char *files[] = {"a.py", "b.txt", ".hidden.py", "link.py", "sub/c.py",
                           "sub/z/d.py", "out.tok"};
    for (int i = 0; i < 7; i++) unlink(tt_path(p, dir, files[i]));
    rmdir(tt_path(p, dir, "sub/z"));
    rmdir(tt_path(p, dir, "sub"));
    rmdir(dir);
}

TEST(dataset_write_walks_directories_sorted_and_filtered)
{
    char dir[TT_PATH_MAX], out[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    if (!make_tree(dir)) {
        remove_tree(dir);
        REQUIRE(!"cannot build the tree");
    }
    tm_tokenizer *tok = bpe_with_eos();
    REQUIRE(tok);
    tm_progress *bar = tm_progress_new("t", 0, "B", TM_PROGRESS_SILENT, NULL);
    REQUIRE(bar);
    const char *in[1] = {dir};
    tt_path(out, dir, "out.tok");
    CHECK(tm_token_dataset_write(out, in, 1, ".py", tok, bar) == TM_OK);
    CHECK_INT(tm_progress_count(bar), 7 + 2 + 3);
    tm_progress_free(bar);
    tm_token_dataset *ds = tm_token_dataset_open(out);
    REQUIRE(ds);
    /* a.py, sub/c.py, sub/z/d.py: no hidden file, no link, no .txt */
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_ALL), 3);
    CHECK_INT(tm_token_dataset_bytes(ds, TM_SPLIT_ALL), 12);
    int64_t n = 0, *t = read_all(ds, &n);
    REQUIRE(t);
    CHECK_INT(t[0], 256);                /* "ab" of a.py first */
    CHECK_INT(t[n - 1], 257);
    CHECK_INT(t[n - 2], 'd');            /* sub/z/d.py last */
    free(t);
    tm_token_dataset_close(ds);
    /* no suffix: b.txt joins, between a.py and sub/ */
    CHECK(tm_token_dataset_write(out, in, 1, NULL, tok, NULL) == TM_OK);
    ds = tm_token_dataset_open(out);
    REQUIRE(ds);
    CHECK_INT(tm_token_dataset_docs(ds, TM_SPLIT_ALL), 4);
    int64_t first[12];
    REQUIRE(tm_token_dataset_read(ds, TM_SPLIT_ALL, 0, 12, first) == TM_OK);
    CHECK_INT(first[7], 't');            /* a.py is 6 tokens + eos, then "text" */
    tm_token_dataset_close(ds);
    tm_tokenizer_free(tok);
    remove_tree(dir);
}

TEST(dataset_write_reports_bad_inputs_and_leaves_nothing)
{
    char dir[TT_PATH_MAX], out[TT_PATH_MAX];
    REQUIRE(tt_tmpdir(dir));
    tm_tokenizer *tok = tm_tokenizer_char_new("abc", 3);
    REQUIRE(tok);
    tt_path(out, dir, "out.tok");
    const char *missing[1] = {"/nonexistent/corpus"};
    CHECK_STATUS(tm_token_dataset_write(out, missing, 1, NULL, tok, NULL), TM_EIO,
                 "/nonexistent/corpus: cannot read");
    const char *in[1] = {dir};
    CHECK_STATUS(tm_token_dataset_write(out, in, 1, ".py", tok, NULL), TM_EINVAL,
                 "no input files ending in \".py\"");
    CHECK_STATUS(tm_token_dataset_write(out, in, 0, NULL, tok, NULL), TM_EINVAL,
                 "at least one input");
    CHECK_INT(tt_count_entries(dir), 0);
    char text[TT_PATH_MAX];
    REQUIRE(tt_write_file(tt_path(text, dir, "a.txt"), "abc", 3));
    const char *one[1] = {text};
    CHECK_STATUS(tm_token_dataset_write("/nonexistent/out.tok", one, 1, NULL, tok, NULL),
                 TM_EIO, "tm_token_dataset_write: ");
    tm_token_writer *raw = tm_token_writer_new_raw(out, 5, 0);
    REQUIRE(raw);
    CHECK_STATUS(tm_token_writer_add(raw, "a", 1), TM_ESTATE, "writer has no tokenizer");
    tm_token_writer_abort(raw);
    tm_tokenizer_free(tok);
    tt_rmdir(dir);
}
