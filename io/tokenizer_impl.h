/*
 * tokenizer_impl.h — the tokenizer's internals shared by its files and the
 * BPE trainer.  Internal; never installed.
 */
#ifndef FOUNDRY_IO_TOKENIZER_IMPL_H
#define FOUNDRY_IO_TOKENIZER_IMPL_H

#include "foundry/tokenizer.h"
#include "json.h"

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

/* BERT classes (io/unicode_tables.c) as HF's BertNormalizer and
 * BertPreTokenizer see them. */
enum { TM__B_CTRL = 1, TM__B_PUNCT = 2, TM__B_MN = 4 };
extern const unsigned char tm__bprops_ascii[128];
extern const uint32_t tm__bprops_ranges[][3];
extern const size_t tm__bprops_ranges_n;
extern const uint32_t tm__lower_tab[][3];
extern const size_t tm__lower_tab_n;
extern const uint32_t tm__nfd_tab[][2];
extern const size_t tm__nfd_tab_n;
extern const uint32_t tm__nfd_pool[];
extern const uint32_t tm__ccc_ranges[][3];
extern const size_t tm__ccc_ranges_n;

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
    bool bert;                /* BertPreTokenizer: whitespace removed, punctuation isolated */
    bool present;             /* false: pre_tokenizer null */
} tm__pretok;

/* The end of the piece that starts at pos (pos < len) within s[0..len).
 * Pieces tile the text: call again from the returned end.  With
 * split_digits every numeric character is a piece of its own and ends the
 * regex's view of the text, as HF's Sequence[Digits, ...] does.  Does not
 * apply add_prefix_space (callers prepend the space to a segment). */
size_t tm__pretok_next(const tm__pretok *p, const char *s, size_t len, size_t pos);

/* ------------------------------------------------------------- BERT */

/* BertNormalizer (io/tokenizer_bert.c), steps in HF's order: clean_text
 * (drop NUL, U+FFFD and control characters; whitespace becomes ' '),
 * handle_chinese_chars (spaces around CJK ideographs), strip_accents (NFD,
 * then drop nonspacing marks), lowercase (full per-character mapping). */
typedef struct tm__bertnorm {
    bool present;             /* false: normalizer null */
    bool clean_text, handle_chinese, strip_accents, lowercase;
    int8_t strip_json;        /* strip_accents as written: -1 null (follows lowercase), 0, 1 */
} tm__bertnorm;

/* The normalized text of s[n] in *out (malloc'd, NUL-terminated, *out_len
 * bytes).  Bytes that are not valid UTF-8 pass through unchanged. */
tm_status tm__bert_normalize(const tm__bertnorm *nm, const char *s, size_t n, char **out, size_t *out_len);
/* BertPreTokenizer: the next piece of s[0..n) at or after *pos in
 * [*start, *end); false when none is left.  Whitespace separates pieces
 * and is dropped; each punctuation character is a piece of its own. */
bool tm__bert_pretok_next(const char *s, size_t n, size_t *pos, size_t *start, size_t *end);
/* True for the code points HF's handle_chinese_chars pads. */
bool tm__is_cjk(uint32_t cp);

/* ------------------------------------------------------------ building */

enum { TM__TOK_MODEL = 1, TM__TOK_ADDED = 2, TM__TOK_SPECIAL = 4, TM__TOK_NORMALIZED = 8 };
enum { TM__DEC_BYTELEVEL = 1, TM__DEC_BYTEFALLBACK = 2, TM__DEC_FUSE = 4, TM__DEC_WORDPIECE = 8 };
enum { TM__MODEL_BPE = 0, TM__MODEL_WORDPIECE = 1 };

/* The tokenizer.json truncation and padding blocks: kept verbatim for
 * saving, their fields for callers that apply them as HF does on load. */
typedef struct tm__tj_extra {
    char *trunc_json, *pad_json;   /* compact JSON, or NULL (null) */
} tm__tj_extra;

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
    int model;                  /* TM__MODEL_* */
    const char *wp_prefix;      /* WordPiece continuing_subword_prefix ("##"), NUL-terminated */
    int64_t wp_max_chars;       /* WordPiece max_input_chars_per_word */
    const char *dec_prefix;     /* WordPiece decoder prefix, NUL-terminated */
    bool dec_cleanup;           /* WordPiece decoder cleanup */
    tm__bertnorm norm;
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
    int model;                      /* TM__MODEL_* */
    char *wp_prefix; size_t wp_prefix_len;  /* WordPiece continuation prefix */
    int64_t wp_max_chars;
    size_t wp_longest;              /* longest model token, bytes */
    char *dec_prefix; size_t dec_prefix_len; bool dec_cleanup;
    tm__bertnorm norm;
    tm__tj_extra extra;
    /* truncation / padding as the tokenizer.json's blocks say */
    tm_tokenizer_json_defaults defaults;
    int32_t *tmpl_pre, *tmpl_post; int n_pre, n_post;
    pthread_mutex_t lock;           /* guards the cache */
    tm__cache_ent *cache; uint64_t cmask; size_t cused;
    char *ckeys; size_t ckeys_n, ckeys_cap;
    int32_t *cids; size_t cids_n, cids_cap;
};

/* ------------------------------------------------- tokenizer.json reading */

/* A parsed document and the public function that reports its errors. */
typedef struct tm__jl { const tm__json_doc *d; const char *fn; } tm__jl;
/* The post-processor's single template: ids before and after sequence A. */
typedef struct tm__tj_tmpl { int32_t *pre, *post; int n_pre, n_post; } tm__tj_tmpl;

const tm__json_node *tm__tj_node(const tm__jl *j, size_t i);
size_t tm__tj_idx(const tm__jl *j, const tm__json_node *n);
/* "fn: path: what" with status s. */
tm_status tm__tj_bad(const tm__jl *j, tm_status s, const char *path, const char *what);
/* Every key of object o must be one of keys (NULL-terminated). */
tm_status tm__tj_only_keys(const tm__jl *j, size_t o, const char *path, const char *const *keys);
/* Member key of o in *out (NULL when absent, or null and nullable); of type ty. */
tm_status tm__tj_member(const tm__jl *j, size_t o, const char *key, tm__json_type ty, bool nullable,
                        const char *path, const tm__json_node **out);
tm_status tm__tj_bool(const tm__jl *j, size_t o, const char *key, const char *path, bool dflt, bool *v);
tm_status tm__tj_pretok(const tm__jl *j, const tm__json_node *n, tm__pretok *p);
tm_status tm__tj_decoder(const tm__jl *j, const tm__json_node *n, tm__tok_spec *sp);
tm_status tm__tj_normalizer(const tm__jl *j, const tm__json_node *n, tm__bertnorm *nm);
/* The truncation and padding blocks into *d (fields) and *x (text). */
tm_status tm__tj_trunc_pad(const tm__jl *j, tm_tokenizer_json_defaults *d, tm__tj_extra *x);

/* ------------------------------------------------------------ WordPiece */

/* Appends the WordPiece ids of one pre-token piece p[n]: greedy
 * longest-match-first, continuation pieces with the prefix; a piece with
 * more than max_input_chars_per_word characters, or one some part of which
 * matches nothing, is the unk token alone. */
tm_status tm__wordpiece_piece(const tm_tokenizer *t, const char *p, size_t n, tm_token_buf *out);
/* The WordPiece decoder over ids (checked in range by the caller). */
char *tm__wordpiece_decode(const tm_tokenizer *t, const int32_t *ids, int64_t n, bool skip_special, size_t *len);
tm_status tm__tok_push(tm_token_buf *out, int32_t id);
tm_status tm__tj_post(const tm__jl *j, const tm__json_node *n, tm__tj_tmpl *t);

#endif
