/*
 * bpe_train.c — the public BPE trainer of foundry/tokenizer.h: counts the
 * pre-token pieces of each document fed, runs the merge loop of
 * bpe_train_core.c and builds a tokenizer from the result.
 */
#include "bpe_train_impl.h"
#include "tokenizer_impl.h"

#include "foundry/data.h"
#include "../tensor/runtime/runtime_impl.h"

#include <string.h>

struct tm_bpe_trainer {
    int64_t vocab_size, min_frequency;
    tm__pretok pretok;
    tm_progress *progress;
    int n_special;
    char **special;         /* content, NUL-terminated */
    size_t *special_len;
    tm__bpe_words words;
    int64_t docs, bytes;
};

tm_bpe_train_opts tm_bpe_train_defaults(int64_t vocab_size)
{
    return (tm_bpe_train_opts){.vocab_size = vocab_size, .min_frequency = 2,
                               .special_tokens = NULL, .n_special = 0,
                               .pretok = TM_PRETOK_GPT2,
                               .split_digits = false, .progress = NULL};
}

static bool valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tm__utf8_next((const unsigned char *)s + i, n - i, &cp);
        if (cp == 0xFFFFFFFFu) return false;
        i += k;
    }
    return true;
}

/* The bytes whose byte-level form is s[n] (in out, which holds n bytes),
 * or -1 when some character of s is not a byte-level character. */
static int64_t byte_level_inverse(const char *s, size_t n, unsigned char *out)
{
    int64_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += tm__utf8_next((const unsigned char *)s + i, n - i, &cp);
        int b = cp == 0xFFFFFFFFu ? -1 : tm__char_byte(cp);
        if (b < 0) return -1;
        out[k++] = (unsigned char)b;
    }
    return k;
}

static tm_status check_opts(const tm_bpe_train_opts *o)
{
    const char *fn = "tm_bpe_trainer_new";
    if (!o) return tm__errf(TM_EINVAL, fn, "opts is NULL");
    if (o->n_special < 0 || (o->n_special > 0 && !o->special_tokens))
        return tm__errf(TM_EINVAL, fn, "special_tokens is NULL with "
                        "n_special %d", o->n_special);
    if (o->vocab_size < 256 + (int64_t)o->n_special ||
        o->vocab_size > INT32_MAX)
        return tm__errf(TM_EINVAL, fn, "vocab_size %lld is not in [256 byte "
                        "tokens + %d special tokens, 2^31)",
                        (long long)o->vocab_size, o->n_special);
    if (o->min_frequency < 0)
        return tm__errf(TM_EINVAL, fn, "min_frequency %lld is negative",
                        (long long)o->min_frequency);
    if (o->pretok != TM_PRETOK_GPT2 && o->pretok != TM_PRETOK_LLAMA3)
        return tm__errf(TM_EINVAL, fn, "pretok %d is not TM_PRETOK_GPT2 (0) "
                        "or TM_PRETOK_LLAMA3 (1)", (int)o->pretok);
    for (int i = 0; i < o->n_special; i++) {
        const char *s = o->special_tokens[i];
        if (!s || !*s)
            return tm__errf(TM_EINVAL, fn, "special_tokens[%d] is %s", i,
                            s ? "empty" : "NULL");
        size_t n = strlen(s);
        if (!valid_utf8(s, n))
            return tm__errf(TM_EINVAL, fn, "special_tokens[%d] is not valid "
                            "UTF-8", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(s, o->special_tokens[j]))
                return tm__errf(TM_EINVAL, fn, "special_tokens[%d] \"%.64s\" "
                                "repeats special_tokens[%d]", i, s, j);
        unsigned char b[4];
        if (n <= 4 && byte_level_inverse(s, n, b) == 1)
            return tm__errf(TM_EINVAL, fn, "special_tokens[%d] \"%s\" is the "
                            "token of byte 0x%02X already", i, s, b[0]);
    }
    return TM_OK;
}

tm_bpe_trainer *tm_bpe_trainer_new(const tm_bpe_train_opts *o)
{
    const char *fn = "tm_bpe_trainer_new";
    if (check_opts(o)) return NULL;
    tm_bpe_trainer *tr = tm__calloc(sizeof *tr, fn);
    if (!tr) return NULL;
    tr->vocab_size = o->vocab_size;
    tr->min_frequency = o->min_frequency;
    tr->progress = o->progress;
    /* The pre-tokenizers of GPT-2's and Llama-3's tokenizer.json. */
    tr->pretok = (tm__pretok){
        .split_digits = o->split_digits,
        .regex = o->pretok == TM_PRETOK_LLAMA3 ? TM__RE_LLAMA3 : TM__RE_GPT2,
        .byte_level = true,
        .regex_in_split = o->pretok == TM_PRETOK_LLAMA3,
        .add_prefix_space = false,
        .trim_offsets = true,
        .present = true};
    size_t n = (size_t)o->n_special;
    tr->special = tm__calloc((n ? n : 1) * sizeof *tr->special, fn);
    tr->special_len = tm__calloc((n ? n : 1) * sizeof *tr->special_len, fn);
    if (!tr->special || !tr->special_len) goto fail;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(o->special_tokens[i]);
        tr->special[i] = tm__alloc(len + 1, fn);
        if (!tr->special[i]) goto fail;
        memcpy(tr->special[i], o->special_tokens[i], len + 1);
        tr->special_len[i] = len;
        tr->n_special++;
    }
    return tr;
fail:
    tm_bpe_trainer_free(tr);
    return NULL;
}

void tm_bpe_trainer_free(tm_bpe_trainer *tr)
{
    if (!tr) return;
    for (int i = 0; i < tr->n_special; i++) tm__dealloc(tr->special[i]);
    tm__dealloc(tr->special);
    tm__dealloc(tr->special_len);
    tm__bpe_words_free(&tr->words);
    tm__dealloc(tr);
}

tm_status tm_bpe_trainer_feed(tm_bpe_trainer *tr, const char *text,
                              size_t len)
{
    const char *fn = "tm_bpe_trainer_feed";
    if (!tr) return tm__errf(TM_EINVAL, fn, "trainer is NULL");
    if (!text && len) return tm__errf(TM_EINVAL, fn, "text is NULL with "
                                      "len %zu", len);
    for (size_t pos = 0; pos < len;) {
        size_t end = tm__pretok_next(&tr->pretok, text, len, pos);
        if (end <= pos || end > len)
            return tm__errf(TM_ESTATE, fn, "internal error: pre-tokenizer "
                            "piece [%zu, %zu) of %zu bytes", pos, end, len);
        tm_status st = tm__bpe_words_add(&tr->words,
                                         (const unsigned char *)text + pos,
                                         end - pos, 1);
        if (st) return st;
        pos = end;
    }
    tr->docs++;
    tr->bytes += (int64_t)len;
    return TM_OK;
}

int64_t tm_bpe_trainer_docs(const tm_bpe_trainer *tr)
{
    return tr ? tr->docs : tm__errf(TM_EINVAL, __func__, "trainer is NULL");
}

int64_t tm_bpe_trainer_bytes(const tm_bpe_trainer *tr)
{
    return tr ? tr->bytes : tm__errf(TM_EINVAL, __func__, "trainer is NULL");
}

static void step(int64_t merges, void *user)
{
    (void)merges;
    tm_progress_update(user, 1);
}

tm_tokenizer *tm_bpe_trainer_finish(tm_bpe_trainer *tr)
{
    const char *fn = "tm_bpe_trainer_finish";
    if (!tr) {
        tm__errf(TM_EINVAL, fn, "trainer is NULL");
        return NULL;
    }
    tm__bpe_vocab v;
    memset(&v, 0, sizeof v);
    tm__bpe_merge *merges = NULL;
    int64_t nm = 0;
    tm_tokenizer *t = NULL;
    const char **bytes = NULL;
    size_t *lens = NULL;
    uint8_t *kind = NULL;
    int32_t (*pairs)[2] = NULL;
    unsigned char *inv = NULL;

    /* Special tokens first.  HF's trainer finds a merged token that has the
     * same byte-level string as a special token and reuses the special's
     * id; the special is findable here by the bytes of that string. */
    for (int i = 0; i < tr->n_special; i++) {
        inv = tm__alloc(tr->special_len[i] + 1, fn);
        if (!inv) goto fail;
        int64_t k = byte_level_inverse(tr->special[i], tr->special_len[i],
                                       inv);
        int64_t id = k > 0 ? tm__bpe_vocab_add(&v, inv, (size_t)k, true)
                           : tm__bpe_vocab_add(&v, (const unsigned char *)
                                               tr->special[i],
                                               tr->special_len[i], false);
        tm__dealloc(inv);
        inv = NULL;
        if (id < 0) goto fail;
    }
    unsigned char order[256];
    int32_t byte_id[256];
    tm__bpe_byte_order(order);
    for (int k = 0; k < 256; k++) {
        int64_t id = tm__bpe_vocab_add(&v, &order[k], 1, true);
        if (id < 0) goto fail;
        byte_id[order[k]] = (int32_t)id;
    }
    if (tr->progress) tm_progress_set_total(tr->progress,
                                            tr->vocab_size - v.ntok);
    if (tm__bpe_run(&tr->words, &v, byte_id, tr->vocab_size,
                    tr->min_frequency, tr->progress ? step : NULL,
                    tr->progress, &merges, &nm))
        goto fail;

    size_t n = (size_t)v.ntok;
    bytes = tm__alloc(n * sizeof *bytes, fn);
    lens = tm__alloc(n * sizeof *lens, fn);
    kind = tm__alloc(n, fn);
    pairs = tm__alloc((size_t)(nm ? nm : 1) * sizeof *pairs, fn);
    if (!bytes || !lens || !kind || !pairs) goto fail;
    for (size_t i = 0; i < n; i++) {
        bool special = i < (size_t)tr->n_special;
        /* The builder takes added tokens by their content and model tokens
         * by their bytes. */
        bytes[i] = special ? tr->special[i]
                           : (const char *)v.bytes + v.off[i];
        lens[i] = special ? tr->special_len[i] : v.len[i];
        kind[i] = special ? TM__TOK_MODEL | TM__TOK_ADDED | TM__TOK_SPECIAL
                          : TM__TOK_MODEL;
    }
    for (int64_t r = 0; r < nm; r++) {
        pairs[r][0] = merges[r].a;
        pairs[r][1] = merges[r].b;
    }
    tm__tok_spec spec = {
        .n_tokens = (int64_t)n, .strs = NULL, .str_lens = NULL,
        .bytes = bytes, .lens = lens, .kind = kind, .n_merges = nm,
        .merges = (const int32_t(*)[2])pairs, .pretok = tr->pretok,
        .ignore_merges = false, .byte_fallback = false, .unk_id = -1,
        .fuse_unk = false, .decoder = 0};
    t = tm__tokenizer_build(&spec, fn);
fail:
    tm__dealloc(inv);
    tm__dealloc(bytes);
    tm__dealloc(lens);
    tm__dealloc(kind);
    tm__dealloc(pairs);
    tm__dealloc(merges);
    tm__bpe_vocab_free(&v);
    if (tr->progress) tm_progress_finish(tr->progress);
    return t;
}
