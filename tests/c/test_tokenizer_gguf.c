/* test_tokenizer_gguf.c — tokenizers from GGUF tokenizer.ggml.* metadata:
 * a tiny byte-level vocabulary written with the GGUF writer encodes and
 * decodes as its merges, pre-tokenizer and token types say, the special
 * ids and flags read back, and malformed or unsupported metadata is a
 * clear error naming the key (never a crash). */
#include "harness.h"
#include "tmpfiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The vocabulary: 0 <|endoftext|> and 1 <|im_start|> (control), 2+b the
 * byte-level token of byte b, then one token per merge, then a
 * user-defined token. */
enum { N_BYTE0 = 2, ID_HE = 258, ID_LL, ID_HELL, ID_HELLO, ID_12, ID_TOOL, N_TOK };
static const char *const merges_ok[] = {"h e", "l l", "he ll", "hell o", "1 2"};

/* GPT-2's byte-level character of byte b, UTF-8 encoded into out. */
static void byte_char(int b, char *out)
{
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
        cp = b;
    } else {
        int k = 0;
        for (int c = 0; c < b; c++)
            k += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255));
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp, out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), out[2] = 0;
    }
}

/* What to break in the file. */
typedef struct variant {
    const char *model, *pre;     /* NULL: key absent */
    int n_types;                 /* token_type entries (N_TOK) */
    const char *bad_merge;       /* replaces merge 0 when set */
    int64_t bos;                 /* tokenizer.ggml.bos_token_id */
    bool tokens_as_ints;
} variant;

static const variant ok_variant = {"gpt2", "smollm", N_TOK, NULL, 1, false};

/* Writes the file for v into dir and opens it (NULL on a writer error). */
static tm_gguf *open_variant(const char *dir, const variant *v)
{
    static char strs[N_TOK][8];
    const char *tokens[N_TOK];
    int32_t types[N_TOK];
    for (int i = 0; i < N_TOK; i++)
        types[i] = 1;
    tokens[0] = "<|endoftext|>", types[0] = 3;
    tokens[1] = "<|im_start|>", types[1] = 3;
    for (int b = 0; b < 256; b++) {
        byte_char(b, strs[b]);
        tokens[N_BYTE0 + b] = strs[b];
    }
    tokens[ID_HE] = "he", tokens[ID_LL] = "ll", tokens[ID_HELL] = "hell", tokens[ID_HELLO] = "hello";
    tokens[ID_12] = "12", tokens[ID_TOOL] = "<tool>", types[ID_TOOL] = 4;
    const char *merges[5];
    memcpy(merges, merges_ok, sizeof merges);
    if (v->bad_merge)
        merges[0] = v->bad_merge;
    char path[TT_PATH_MAX];
    tt_path(path, dir, "tok.gguf");
    tm_gguf_writer *w = tm_gguf_writer_new();
    if (!w)
        return NULL;
    bool ok = tm_gguf_set_str(w, "general.architecture", "llama", SIZE_MAX) == TM_OK;
    if (v->model)
        ok &= tm_gguf_set_str(w, "tokenizer.ggml.model", v->model, SIZE_MAX) == TM_OK;
    if (v->pre)
        ok &= tm_gguf_set_str(w, "tokenizer.ggml.pre", v->pre, SIZE_MAX) == TM_OK;
    if (v->tokens_as_ints)
        ok &= tm_gguf_set_array(w, "tokenizer.ggml.tokens", TM_GGUF_INT32, types, N_TOK) == TM_OK;
    else
        ok &= tm_gguf_set_str_array(w, "tokenizer.ggml.tokens", tokens, N_TOK) == TM_OK;
    ok &= tm_gguf_set_array(w, "tokenizer.ggml.token_type", TM_GGUF_INT32, types, v->n_types) == TM_OK;
    ok &= tm_gguf_set_str_array(w, "tokenizer.ggml.merges", merges, 5) == TM_OK;
    ok &= tm_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos) == TM_OK;
    ok &= tm_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 0) == TM_OK;
    ok &= tm_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", 0) == TM_OK;
    ok &= tm_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", false) == TM_OK;
    ok &= ok && tm_gguf_writer_write(w, path) == TM_OK;
    tm_gguf_writer_free(w);
    return ok ? tm_gguf_open(path) : NULL;
}

/* ids of text as a NUL-terminated list in out (at most cap); count or -1 */
static int encode(const tm_tokenizer *t, const char *text, int32_t *out, int cap)
{
    tm_token_buf b = {0};
    if (tm_tokenizer_encode(t, text, strlen(text), &b) < 0)
        return -1;
    int n = (int)b.n;
    for (int i = 0; i < n && i < cap; i++)
        out[i] = b.ids[i];
    tm_token_buf_free(&b);
    return n;
}

TEST(tokenizer_gguf_smollm_pre)
{
    char dir[TT_PATH_MAX];
    if (!tt_tmpdir(dir))
        return;
    tm_gguf *g = open_variant(dir, &ok_variant);
    REQUIRE(g != NULL);
    tm_tokenizer *t = tm_tokenizer_from_gguf(g);
    tm_gguf_close(g); /* the tokenizer does not borrow from the file */
    tt_rmdir(dir);
    REQUIRE(t != NULL);
    CHECK_INT(tm_tokenizer_vocab_size(t), N_TOK);
    int32_t ids[32];
    /* digits split one by one (smollm), control and user-defined tokens cut out */
    const char *text = "hello12<|im_start|> hell<tool>";
    int n = encode(t, text, ids, 32);
    int32_t want[] = {ID_HELLO, N_BYTE0 + '1', N_BYTE0 + '2', 1, N_BYTE0 + ' ', ID_HELL, ID_TOOL};
    /* " hell": the space is its own byte token (no "Ġh" merge) */
    CHECK_INT(n, 7);
    for (int i = 0; i < 7 && i < n; i++)
        CHECK_INT(ids[i], want[i]);
    CHECK(tm_tokenizer_is_special(t, 1));
    CHECK(!tm_tokenizer_is_special(t, ID_TOOL));
    CHECK(tm_tokenizer_in_model(t, ID_HELLO));
    size_t len;
    char *s = tm_tokenizer_decode(t, ids, n, false, &len);
    REQUIRE(s != NULL);
    CHECK(len == strlen(text) && memcmp(s, text, len) == 0);
    free(s);
    s = tm_tokenizer_decode(t, ids, n, true, &len);
    REQUIRE(s != NULL);
    CHECK(strcmp(s, "hello12 hell<tool>") == 0);
    free(s);
    /* any bytes round-trip through the byte-level vocabulary */
    const char raw[] = "\xff\x01 caf\xc3\xa9 \xe2\x82";
    tm_token_buf b = {0};
    REQUIRE(tm_tokenizer_encode(t, raw, sizeof raw - 1, &b) == TM_OK);
    s = tm_tokenizer_decode(t, b.ids, b.n, false, &len);
    CHECK(s && len == sizeof raw - 1 && memcmp(s, raw, len) == 0);
    free(s);
    tm_token_buf_free(&b);
    tm_tokenizer_free(t);
}

TEST(tokenizer_gguf_gpt2_pre_and_info)
{
    char dir[TT_PATH_MAX];
    if (!tt_tmpdir(dir))
        return;
    variant v = ok_variant;
    v.pre = "gpt-2";
    tm_gguf *g = open_variant(dir, &v);
    tt_rmdir(dir);
    REQUIRE(g != NULL);
    tm_tokenizer *t = tm_tokenizer_from_gguf(g);
    REQUIRE(t != NULL);
    int32_t ids[8];
    /* GPT-2's pattern keeps "12" one piece, so its merge applies */
    CHECK_INT(encode(t, "hello12", ids, 8), 2);
    CHECK_INT(ids[0], ID_HELLO);
    CHECK_INT(ids[1], ID_12);
    tm_tokenizer_gguf_info info;
    REQUIRE(tm_tokenizer_gguf_info_of(g, &info) == TM_OK);
    CHECK_INT(info.bos_id, 1);
    CHECK_INT(info.eos_id, 0);
    CHECK_INT(info.pad_id, 0);
    CHECK_INT(info.unk_id, -1);
    CHECK(!info.add_bos && !info.add_eos);
    tm_tokenizer_free(t);
    tm_gguf_close(g);
}

/* from_gguf on variant v must fail with status st and a message containing sub. */
static void expect_error(const variant *v, tm_status st, const char *sub, int line)
{
    char dir[TT_PATH_MAX];
    if (!tt_tmpdir(dir))
        return;
    tm_gguf *g = open_variant(dir, v);
    tt_rmdir(dir);
    if (!g) {
        tt_fail(__FILE__, line, "writing the file failed: %s", tm_last_error());
        return;
    }
    tm_clear_error();
    tm_tokenizer *t = tm_tokenizer_from_gguf(g);
    if (t) {
        tt_fail(__FILE__, line, "expected an error containing \"%s\"", sub);
        tm_tokenizer_free(t);
    } else if (tm_last_status() != st || !strstr(tm_last_error(), sub)) {
        tt_fail(__FILE__, line, "expected %s with \"%s\", got %s: %s", tm_status_name(st), sub,
                tm_status_name(tm_last_status()), tm_last_error());
    }
    tm_gguf_close(g);
}

TEST(tokenizer_gguf_errors)
{
    variant v = ok_variant;
    v.model = "llama";
    expect_error(&v, TM_EUNSUPPORTED, "tokenizer.ggml.model \"llama\" is not supported (only gpt2)", __LINE__);
    v = ok_variant, v.model = NULL;
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.model is missing", __LINE__);
    v = ok_variant, v.pre = "qwen2";
    expect_error(&v, TM_EUNSUPPORTED, "tokenizer.ggml.pre \"qwen2\" is not supported", __LINE__);
    v = ok_variant, v.pre = NULL;
    expect_error(&v, TM_EUNSUPPORTED, "tokenizer.ggml.pre is missing", __LINE__);
    v = ok_variant, v.n_types = N_TOK - 1;
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.token_type has 263 entries for 264 tokens", __LINE__);
    v = ok_variant, v.bad_merge = "h zz";
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.merges[0]: token \"zz\" is not a normal token", __LINE__);
    v = ok_variant, v.bad_merge = "he";
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.merges[0]: \"he\" is not two tokens", __LINE__);
    v = ok_variant, v.bad_merge = "<|im_start|> h";
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.merges[0]", __LINE__);
    v = ok_variant, v.bos = N_TOK;
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.bos_token_id: token id 264 is out of range [0, 264)", __LINE__);
    v = ok_variant, v.tokens_as_ints = true;
    expect_error(&v, TM_EFORMAT, "tokenizer.ggml.tokens must be an array of strings", __LINE__);
    tm_clear_error();
    CHECK(tm_tokenizer_from_gguf(NULL) == NULL);
    CHECK_INT(tm_last_status(), TM_EINVAL);
    tm_tokenizer_gguf_info info;
    CHECK_STATUS(tm_tokenizer_gguf_info_of(NULL, &info), TM_EINVAL, "g is NULL");
}
