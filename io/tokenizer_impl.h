/*
 * tokenizer_impl.h — the tokenizer's internals shared by its files and the
 * BPE trainer.  Internal; never installed.
 */
#ifndef FOUNDRY_IO_TOKENIZER_IMPL_H
#define FOUNDRY_IO_TOKENIZER_IMPL_H

#include "foundry/tokenizer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- unicode */

/* Unicode properties as the pre-tokenizer regexes use them. */
enum { TM__U_L = 1, TM__U_N = 2, TM__U_WS = 4 };
/* The generated tables (io/unicode_tables.c, tools/gen_unicode.py). */
extern const unsigned char tm__uprops_ascii[128];
extern const uint32_t tm__uprops_ranges[][3];
extern const size_t tm__uprops_nranges;
/* Properties of code point cp (a mask of TM__U_*). */
int tm__uprops(uint32_t cp);
/* Decodes the UTF-8 character at s[0..n) (n >= 1): returns its length and
 * stores the code point; a byte that does not start a valid sequence is a
 * character of length 1 with code point 0xFFFFFFFF (no properties). */
size_t tm__utf8_next(const unsigned char *s, size_t n, uint32_t *cp);

/* GPT-2's bytes_to_unicode: byte b is written as the code point
 * tm__byte_char[b] in byte-level token strings. */
extern const uint16_t tm__byte_char[256];
/* The byte of a byte-level code point, or -1. */
int tm__char_byte(uint32_t cp);

/* -------------------------------------------------------- pre-tokenizer */

typedef enum tm__regex {
    TM__RE_NONE = 0,   /* no split: the whole segment is one piece */
    TM__RE_GPT2 = 1,   /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    TM__RE_LLAMA3 = 2  /* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
} tm__regex;

extern const char tm__re_gpt2_str[];
extern const char tm__re_llama3_str[];

/* The pre-tokenizer: Digits(individual_digits) when split_digits, then the
 * regex, then the byte-level mapping when byte_level.  How the regex was
 * spelled (ByteLevel use_regex, or a Split before ByteLevel) is kept for
 * saving only. */
typedef struct tm__pretok {
    bool split_digits;
    tm__regex regex;
    bool byte_level;
    bool regex_in_split;      /* Split(Regex) rather than ByteLevel(use_regex) */
    bool add_prefix_space;    /* ByteLevel: a space before each segment that does not start with one */
    bool trim_offsets;        /* ByteLevel: offsets only; kept for saving */
    bool present;             /* false: pre_tokenizer null */
} tm__pretok;

/* The end of the piece that starts at pos (pos < len) within s[0..len).
 * Pieces tile the text: call again from the returned end.  With
 * split_digits every numeric character is a piece of its own and ends the
 * regex's view of the text, as HF's Sequence[Digits, ...] does.  Does not
 * apply add_prefix_space (callers prepend the space to a segment). */
size_t tm__pretok_next(const tm__pretok *p, const char *s, size_t len, size_t pos);

/* ------------------------------------------------------------ building */

enum { TM__TOK_MODEL = 1, TM__TOK_ADDED = 2, TM__TOK_SPECIAL = 4, TM__TOK_NORMALIZED = 8 };
enum { TM__DEC_BYTELEVEL = 1, TM__DEC_BYTEFALLBACK = 2, TM__DEC_FUSE = 4 };

/* What a tokenizer is built from (R's trainer, the char-level constructor,
 * the tokenizer.json loader).  Ids are 0..n_tokens-1.  Each token is given
 * either by its tokenizer.json string (strs, as the loader does) or, when
 * strs is NULL, by its bytes: model tokens by their bytes (byte-level ones
 * NOT in their mapped form; the builder maps them), added tokens by their
 * content.  merges[r] = {left id, right id} has rank r and produces the
 * model token whose string is the concatenation. */
typedef struct tm__tok_spec {
    int64_t n_tokens;
    const char *const *strs;    /* [n_tokens] or NULL */
    const size_t *str_lens;
    const char *const *bytes;   /* [n_tokens] when strs is NULL */
    const size_t *lens;
    const uint8_t *kind;        /* [n_tokens]: TM__TOK_* bits; MODEL and/or ADDED */
    int64_t n_merges;
    const int32_t (*merges)[2];
    tm__pretok pretok;
    bool ignore_merges;
    bool byte_fallback;
    int64_t unk_id;             /* -1: none */
    bool fuse_unk;
    int decoder;                /* TM__DEC_* bits; 0: ByteLevel when pretok.byte_level, else ByteFallback+Fuse */
} tm__tok_spec;

/* Builds a tokenizer (no post-processor template).  NULL with an error
 * naming fn (TM_EFORMAT) on a bad spec: duplicate strings, a merge whose
 * parts or result are not model tokens, a bad unk id. */
tm_tokenizer *tm__tokenizer_build(const tm__tok_spec *spec, const char *fn);

/* Byte-level mapped form of bytes b[n] (NUL-terminated; free()). */
char *tm__bytes_to_mapped(const char *b, size_t n, size_t *out_len);

/* An open-addressing map from the strings key(id) to ids. */
typedef struct tm__idmap {
    int32_t *slot;      /* id, or -1 when empty */
    uint64_t mask;
    char *const *keys;  /* borrowed: the key of id is keys[id], keylens[id] */
    const size_t *keylens;
} tm__idmap;

/* Builds m over the ids whose key is not NULL; *dup gets the first id whose
 * key repeats an earlier one's, or -1.  Release m->slot with free(). */
tm_status tm__idmap_build(tm__idmap *m, char *const *keys, const size_t *lens, int64_t n, int64_t *dup,
                          const char *fn);
/* The id of key k[n], or -1. */
int32_t tm__idmap_get(const tm__idmap *m, const char *k, size_t n);
uint64_t tm__tok_hbytes(const void *p, size_t n);

typedef struct tm__cache_ent { uint64_t h; uint32_t koff, ioff; uint16_t klen, nids; } tm__cache_ent;

struct tm_tokenizer {
    int64_t n;
    char **str;  size_t *str_len;   /* tokenizer.json strings */
    char **raw;  size_t *raw_len;   /* the text a model token stands for (NULL: none) */
    char **dec;  size_t *dec_len;   /* decoded bytes */
    uint8_t *kind;
    tm__idmap by_str, by_raw;
    int32_t unit_id[256];           /* byte-level: id of byte b; byte_fallback: id of <0xNN>; -1 */
    int64_t n_merges;
    int32_t (*merges)[2];
    int32_t *merge_new;
    uint64_t *mkey; int32_t *mrank; uint64_t mmask;   /* (left << 32 | right) -> rank */
    tm__pretok pretok;
    bool ignore_merges, byte_fallback, fuse_unk;
    int64_t unk_id;
    int decoder;
    int32_t *added; int n_added;    /* added token ids, by id */
    bool added_first[256];          /* bytes that start an added token */
    char *post_json;                /* post_processor, compact JSON, or NULL */
    int32_t *tmpl_pre, *tmpl_post; int n_pre, n_post;
    pthread_mutex_t lock;           /* guards the cache */
    tm__cache_ent *cache; uint64_t cmask; size_t cused;
    char *ckeys; size_t ckeys_n, ckeys_cap;
    int32_t *cids; size_t cids_n, cids_cap;
};

#endif
