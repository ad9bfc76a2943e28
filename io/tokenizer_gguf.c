/*
 * tokenizer_gguf.c — the tokenizer a GGUF file's tokenizer.ggml.* metadata
 * describes (llama.cpp's convention), built with tm__tokenizer_build.
 *
 * Only tokenizer.ggml.model "gpt2" (byte-level BPE) is read.  Its tokens
 * are stored in the byte-level mapped form (as in tokenizer.json), merges
 * as "a b" strings whose index is their rank, token types as llama.cpp's
 * numbers.  tokenizer.ggml.pre names llama.cpp's pre-tokenizer; only the
 * names whose regexes Foundry's pre-tokenizer reproduces exactly are
 * accepted, every other one is refused by name (a silently different
 * split would give different ids).
 */
#include "tokenizer_impl.h"
#include "foundry/gguf.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdlib.h>
#include <string.h>

/* llama.cpp's token types (llama_token_type) */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

/* One family of llama.cpp pre-tokenizer names and what they mean. */
typedef struct pre_family {
    const char *const *names;
    bool split_digits;   /* a "\p{N}" regex first: every digit a piece of its own */
    tm__regex regex;
    bool ignore_merges;  /* llama.cpp sets ignore_merges for these */
    bool add_bos;        /* llama.cpp's add_bos default (before add_bos_token) */
} pre_family;

/* "\p{N}" then GPT-2's pattern (llama.cpp: STARCODER, REFACT, COMMAND_R,
 * SMOLLM, CODESHELL, EXAONE, MINERVA) */
static const char *const pre_digits_gpt2[] = {"smollm", "starcoder", "refact", "command-r", "codeshell",
                                              "exaone", "minerva-7b", NULL};
/* GPT-2's pattern alone (llama.cpp: GPT2, MPT, OLMO, JAIS, TRILLION) */
static const char *const pre_gpt2[] = {"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat",
                                       "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert",
                                       "mpt", "olmo", "jais", "trillion", NULL};
/* Llama-3's pattern, merges ignored, BOS by default (llama.cpp: LLAMA3) */
static const char *const pre_llama3[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                         "pixtral", "midm-2.0", "lfm2", NULL};

static const pre_family pre_families[] = {
    {pre_digits_gpt2, true, TM__RE_GPT2, false, false},
    {pre_gpt2, false, TM__RE_GPT2, false, false},
    {pre_llama3, false, TM__RE_LLAMA3, true, true},
};

static const pre_family *find_pre(const char *name)
{
    for (size_t f = 0; f < sizeof pre_families / sizeof *pre_families; f++)
        for (const char *const *n = pre_families[f].names; *n; n++)
            if (strcmp(*n, name) == 0)
                return &pre_families[f];
    return NULL;
}

/* tokenizer.ggml.model must be "gpt2"; *pre gets its pre-tokenizer family. */
static tm_status check_model(const tm_gguf *g, const char *fn, const pre_family **pre)
{
    const tm_gguf_value *v = tm_gguf_get(g, "tokenizer.ggml.model");
    if (!v)
        return tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.model is missing (no tokenizer in the file)");
    const char *model = tm_gguf_value_str(v, NULL);
    if (!model)
        return tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.model must be a string, not %s",
                        tm_gguf_type_name(tm_gguf_value_type(v)));
    if (strcmp(model, "gpt2") != 0) {
        char nb[64];
        return tm__errf(TM_EUNSUPPORTED, fn, "tokenizer.ggml.model \"%s\" is not supported (only gpt2)",
                        tm__fmt_name(nb, sizeof nb, model, strlen(model)));
    }
    v = tm_gguf_get(g, "tokenizer.ggml.pre");
    if (!v)
        return tm__errf(TM_EUNSUPPORTED, fn,
                        "key tokenizer.ggml.pre is missing: llama.cpp's \"default\" pre-tokenizer is not supported");
    const char *name = tm_gguf_value_str(v, NULL);
    if (!name)
        return tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.pre must be a string, not %s",
                        tm_gguf_type_name(tm_gguf_value_type(v)));
    if (!(*pre = find_pre(name))) {
        char nb[64];
        return tm__errf(TM_EUNSUPPORTED, fn,
                        "tokenizer.ggml.pre \"%s\" is not supported (supported: smollm, starcoder, gpt-2, "
                        "llama-bpe and their llama.cpp aliases)",
                        tm__fmt_name(nb, sizeof nb, name, strlen(name)));
    }
    return TM_OK;
}

/* The array of key, of element type ty (any integer type when ty is
 * TM_GGUF_INT32), in *out; NULL (TM_OK) when absent and optional. */
static tm_status get_array(const tm_gguf *g, const char *fn, const char *key, tm_gguf_type ty, bool optional,
                           const tm_gguf_value **out)
{
    const tm_gguf_value *v = tm_gguf_get(g, key);
    *out = NULL;
    if (!v)
        return optional ? TM_OK : tm__errf(TM_EFORMAT, fn, "key %s is missing", key);
    if (tm_gguf_value_type(v) != TM_GGUF_ARRAY)
        return tm__errf(TM_EFORMAT, fn, "key %s must be an array, not %s", key,
                        tm_gguf_type_name(tm_gguf_value_type(v)));
    tm_gguf_type et = tm_gguf_array_type(v);
    bool ok = ty == TM_GGUF_STRING ? et == TM_GGUF_STRING
                                   : et != TM_GGUF_STRING && et != TM_GGUF_ARRAY && et != TM_GGUF_FLOAT32 &&
                                         et != TM_GGUF_FLOAT64 && et != TM_GGUF_BOOL;
    if (!ok)
        return tm__errf(TM_EFORMAT, fn, "key %s must be an array of %s, not of %s", key,
                        ty == TM_GGUF_STRING ? "strings" : "integers", tm_gguf_type_name(et));
    *out = v;
    return TM_OK;
}

/* Optional token id key: -1 when absent; TM_EFORMAT when not an integer in [0, n). */
static tm_status get_id(const tm_gguf *g, const char *fn, const char *key, int64_t n, int64_t *id)
{
    const tm_gguf_value *v = tm_gguf_get(g, key);
    *id = -1;
    if (!v)
        return TM_OK;
    tm_gguf_type ty = tm_gguf_value_type(v);
    int64_t x;
    if (ty == TM_GGUF_STRING || ty == TM_GGUF_ARRAY || ty == TM_GGUF_BOOL || ty == TM_GGUF_FLOAT32 ||
        ty == TM_GGUF_FLOAT64 || tm_gguf_value_i64(v, &x) < 0)
        return tm__errf(TM_EFORMAT, fn, "key %s must be an integer token id, not %s", key, tm_gguf_type_name(ty));
    if (x < 0 || x >= n)
        return tm__errf(TM_EFORMAT, fn, "key %s: token id %lld is out of range [0, %lld)", key, (long long)x,
                        (long long)n);
    *id = x;
    return TM_OK;
}

static tm_status get_flag(const tm_gguf *g, const char *fn, const char *key, bool *flag)
{
    const tm_gguf_value *v = tm_gguf_get(g, key);
    if (!v)
        return TM_OK;
    if (tm_gguf_value_type(v) != TM_GGUF_BOOL)
        return tm__errf(TM_EFORMAT, fn, "key %s must be a bool, not %s", key,
                        tm_gguf_type_name(tm_gguf_value_type(v)));
    uint64_t x = 0;
    tm_gguf_value_u64(v, &x);
    *flag = x != 0;
    return TM_OK;
}

static tm_status info_of(const tm_gguf *g, const char *fn, tm_tokenizer_gguf_info *out)
{
    const pre_family *pre = NULL;
    const tm_gguf_value *tokens;
    tm_status st;
    if ((st = check_model(g, fn, &pre)) < 0 ||
        (st = get_array(g, fn, "tokenizer.ggml.tokens", TM_GGUF_STRING, false, &tokens)) < 0)
        return st;
    int64_t n = tm_gguf_array_len(tokens);
    tm_tokenizer_gguf_info I = {.add_bos = pre->add_bos};
    if ((st = get_id(g, fn, "tokenizer.ggml.bos_token_id", n, &I.bos_id)) < 0 ||
        (st = get_id(g, fn, "tokenizer.ggml.eos_token_id", n, &I.eos_id)) < 0 ||
        (st = get_id(g, fn, "tokenizer.ggml.padding_token_id", n, &I.pad_id)) < 0 ||
        (st = get_id(g, fn, "tokenizer.ggml.unknown_token_id", n, &I.unk_id)) < 0 ||
        (st = get_flag(g, fn, "tokenizer.ggml.add_bos_token", &I.add_bos)) < 0 ||
        (st = get_flag(g, fn, "tokenizer.ggml.add_eos_token", &I.add_eos)) < 0)
        return st;
    if (I.add_bos && I.bos_id < 0)
        return tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing");
    if (I.add_eos && I.eos_id < 0)
        return tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is missing");
    *out = I;
    return TM_OK;
}

tm_status tm_tokenizer_gguf_info_of(const tm_gguf *g, tm_tokenizer_gguf_info *out)
{
    if (!g || !out)
        return TM_ERR(TM_EINVAL, "%s is NULL", !g ? "g" : "out");
    return info_of(g, __func__, out);
}

tm_tokenizer *tm_tokenizer_from_gguf(const tm_gguf *g)
{
    const char *fn = __func__;
    const pre_family *pre = NULL;
    const tm_gguf_value *tokens, *types, *merges;
    tm_tokenizer_gguf_info info;
    tm_tokenizer *t = NULL;
    const char **strs = NULL;
    size_t *lens = NULL;
    uint8_t *kind = NULL;
    int32_t (*mg)[2] = NULL;
    tm__idmap map = {0};
    if (!g) {
        TM_ERR(TM_EINVAL, "g is NULL");
        return NULL;
    }
    if (check_model(g, fn, &pre) < 0 || info_of(g, fn, &info) < 0 ||
        get_array(g, fn, "tokenizer.ggml.tokens", TM_GGUF_STRING, false, &tokens) < 0 ||
        get_array(g, fn, "tokenizer.ggml.token_type", TM_GGUF_INT32, true, &types) < 0 ||
        get_array(g, fn, "tokenizer.ggml.merges", TM_GGUF_STRING, false, &merges) < 0)
        return NULL;
    int64_t n = tm_gguf_array_len(tokens), nm = tm_gguf_array_len(merges);
    if (n < 1 || n > INT32_MAX) {
        tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.tokens: %lld tokens, out of range [1, 2^31)", (long long)n);
        return NULL;
    }
    if (types && tm_gguf_array_len(types) != n) {
        tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.token_type has %lld entries for %lld tokens",
                 (long long)tm_gguf_array_len(types), (long long)n);
        return NULL;
    }
    strs = calloc((size_t)n, sizeof *strs);
    lens = calloc((size_t)n, sizeof *lens);
    kind = calloc((size_t)n, 1);
    mg = malloc((size_t)(nm ? nm : 1) * sizeof *mg);
    if (!strs || !lens || !kind || !mg) {
        tm__errf(TM_ENOMEM, fn, "out of memory (%lld tokens, %lld merges)", (long long)n, (long long)nm);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        strs[i] = tm_gguf_value_str(tm_gguf_array_get(tokens, i), &lens[i]);
        if (!strs[i] || lens[i] == 0) {
            tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.tokens[%lld] is empty", (long long)i);
            goto done;
        }
        int64_t ty = TT_NORMAL;
        if (types && tm_gguf_value_i64(tm_gguf_array_get(types, i), &ty) < 0)
            ty = -1;
        switch (ty) {
        case TT_NORMAL: case TT_UNKNOWN: case TT_UNUSED: case TT_BYTE:
            kind[i] = TM__TOK_MODEL;
            break;
        case TT_CONTROL:
            /* cut out of the text before BPE, as llama.cpp's special-token parsing does */
            kind[i] = TM__TOK_ADDED | TM__TOK_SPECIAL;
            break;
        case TT_USER_DEFINED:
            kind[i] = TM__TOK_ADDED;
            break;
        default:
            tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.token_type[%lld]: unknown token type %lld", (long long)i,
                     (long long)ty);
            goto done;
        }
    }
    /* merges name model tokens by their strings */
    int64_t dup;
    char **keys = (char **)strs;
    for (int64_t i = 0; i < n; i++)
        if (!(kind[i] & TM__TOK_MODEL))
            keys[i] = NULL;
    if (tm__idmap_build(&map, keys, lens, n, &dup, fn) < 0)
        goto done;
    for (int64_t r = 0; r < nm; r++) {
        size_t ml;
        const char *m = tm_gguf_value_str(tm_gguf_array_get(merges, r), &ml);
        const char *sp = ml > 1 ? memchr(m + 1, ' ', ml - 1) : NULL;
        char nb[64];
        if (!sp || sp + 1 == m + ml) {
            tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.merges[%lld]: \"%s\" is not two tokens split by a space",
                     (long long)r, tm__fmt_name(nb, sizeof nb, m, ml));
            goto done;
        }
        size_t la = (size_t)(sp - m), lb = ml - la - 1;
        int32_t a = tm__idmap_get(&map, m, la), b = tm__idmap_get(&map, sp + 1, lb);
        if (a < 0 || b < 0) {
            tm__errf(TM_EFORMAT, fn, "key tokenizer.ggml.merges[%lld]: token \"%s\" is not a normal token of the vocabulary",
                     (long long)r, a < 0 ? tm__fmt_name(nb, sizeof nb, m, la) : tm__fmt_name(nb, sizeof nb, sp + 1, lb));
            goto done;
        }
        mg[r][0] = a, mg[r][1] = b;
    }
    for (int64_t i = 0; i < n; i++)
        strs[i] = tm_gguf_value_str(tm_gguf_array_get(tokens, i), NULL);
    tm__tok_spec spec = {
        .n_tokens = n,
        .strs = strs,
        .str_lens = lens,
        .kind = kind,
        .n_merges = nm,
        .merges = (const int32_t(*)[2])mg,
        .pretok = {.split_digits = pre->split_digits, .regex = pre->regex, .byte_level = true, .present = true},
        .ignore_merges = pre->ignore_merges,
        /* byte-level BPE covers every byte; the file's unknown token is
         * reported by tm_tokenizer_gguf_info_of only */
        .unk_id = -1,
    };
    /* SmolLM2's vocabulary lacks 21 bytes (controls and bytes no UTF-8
     * text holds): encoding them is an error, as in llama.cpp */
    t = tm__tokenizer_build(&spec, fn);
done:
    free(strs), free(lens), free(kind), free(mg), free(map.slot);
    return t;
}
