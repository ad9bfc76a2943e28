/*
 * tokenizer.h — byte-level BPE and char-level tokenizers, Hugging Face
 * tokenizer.json compatible.
 *
 * A tokenizer maps bytes to token ids and back.  Encoding follows the
 * Hugging Face `tokenizers` pipeline for BPE models: added tokens are cut
 * out of the raw text first (leftmost-longest), the rest is split into
 * pieces by the pre-tokenizer (the GPT-2 regex, the Llama-3 regex, digit
 * splitting), and each piece is merged by BPE ranks.  Any bytes round-trip
 * exactly: bytes that are not valid UTF-8 are pre-tokenized as single
 * "other" characters, and byte-level and byte-fallback vocabularies cover
 * every byte.
 *
 * Errors: functions returning a pointer return NULL, functions returning a
 * status a negative tm_status; tm_last_error() names the function and the
 * offending value (for tokenizer.json, the JSON path).
 *
 * Thread safety: a loaded tokenizer may be used for encoding and decoding
 * from several threads at once (its piece cache is locked internally).
 */
#ifndef FOUNDRY_TOKENIZER_H
#define FOUNDRY_TOKENIZER_H

#include "foundry/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tm_progress tm_progress;
typedef struct tm_tokenizer tm_tokenizer;

/* Loads a HF tokenizer.json (model type BPE).  Supported: normalizer null;
 * pre_tokenizer ByteLevel (with or without the GPT-2 regex), Split with the
 * GPT-2 or Llama-3 pattern (behavior Isolated), Digits with
 * individual_digits true, and Sequences of these in that order; decoder
 * ByteLevel, ByteFallback, Fuse or a Sequence of them; post_processor null,
 * ByteLevel, TemplateProcessing or a Sequence of them; model BPE with
 * merges as "a b" or ["a","b"], ignore_merges, byte_fallback, unk_token;
 * added tokens with lstrip/rstrip/single_word false.  Anything else is
 * TM_EFORMAT (malformed) or TM_EUNSUPPORTED naming the JSON path.  Returns
 * a new tokenizer; release with tm_tokenizer_free. */
tm_tokenizer *tm_tokenizer_load(const char *path);
/* Same, from the JSON text[len] (copied; need not be NUL-terminated). */
tm_tokenizer *tm_tokenizer_from_json(const char *text, size_t len);
/* The tokenizer as HF tokenizer.json text (NUL-terminated; *len, which may
 * be NULL, gets its length).  Release with free(). */
char *tm_tokenizer_to_json(const tm_tokenizer *t, size_t *len);
/* Writes tm_tokenizer_to_json to path (through a temporary file, renamed). */
tm_status tm_tokenizer_save(const tm_tokenizer *t, const char *path);
/* A char-level tokenizer from a text: one token per distinct UTF-8
 * character of the text (ids 0.. sorted by code point), then the 256
 * byte-fallback tokens "<0x00>".."<0xFF>", so any bytes round-trip (bytes
 * that are not valid UTF-8 in text are not characters and only get
 * fallback tokens).  Saved as a HF BPE with no merges and byte_fallback. */
tm_tokenizer *tm_tokenizer_char_new(const char *text, size_t len);
void tm_tokenizer_free(tm_tokenizer *t);       /* NULL is a no-op */
int64_t tm_tokenizer_vocab_size(const tm_tokenizer *t);   /* including added tokens */
/* The model's vocabulary alone (HF's get_vocab_size(with_added_tokens=False)). */
int64_t tm_tokenizer_model_vocab_size(const tm_tokenizer *t);
/* Stable 64-bit hash of everything that decides the ids (vocab, merges,
 * pre-tokenizer, added tokens, post-processor); equal for a tokenizer and
 * its save/load round trip. */
uint64_t tm_tokenizer_hash(const tm_tokenizer *t);
/* The id of a token as written in tokenizer.json (byte-level tokens in
 * their mapped form, "Ġhello"), or -1 when absent. */
int64_t tm_tokenizer_token_to_id(const tm_tokenizer *t, const char *token);
/* The token string of id (borrowed, valid while t lives), or NULL when out
 * of range. */
const char *tm_tokenizer_id_to_token(const tm_tokenizer *t, int64_t id);
/* The first present of "<|endoftext|>", "</s>", "<|im_end|>",
 * "<|end_of_text|>", else -1. */
int64_t tm_tokenizer_eos_id(const tm_tokenizer *t);
/* The first present of "<|begin_of_text|>", "<s>", "<|im_start|>",
 * "<|startoftext|>", else -1. */
int64_t tm_tokenizer_bos_id(const tm_tokenizer *t);
/* True when id is in the model's vocabulary (not only an added token). */
bool tm_tokenizer_in_model(const tm_tokenizer *t, int64_t id);
/* True when id is an added token marked special. */
bool tm_tokenizer_is_special(const tm_tokenizer *t, int64_t id);

/* A growable id array: zero-initialise, release with tm_token_buf_free. */
typedef struct tm_token_buf { int32_t *ids; int64_t n, cap; } tm_token_buf;
void tm_token_buf_free(tm_token_buf *b);
/* Appends the ids of text[len] to out.  Added/special tokens in the text
 * are matched (HF's default).  The post-processor's template (BOS) is not
 * applied; see tm_tokenizer_encode_ex.  On failure out keeps its old ids. */
tm_status tm_tokenizer_encode(const tm_tokenizer *t, const char *text, size_t len, tm_token_buf *out);
/* Same; with add_special_tokens the post-processor's single template is
 * applied (TemplateProcessing: e.g. BOS first), as HF's encode does by
 * default. */
tm_status tm_tokenizer_encode_ex(const tm_tokenizer *t, const char *text, size_t len,
                                 bool add_special_tokens, tm_token_buf *out);
/* The bytes of ids (skip_special: leave out special tokens); NUL-terminated,
 * *len (may be NULL) without it.  Release with free().  An id out of range
 * is TM_ERANGE (NULL). */
char *tm_tokenizer_decode(const tm_tokenizer *t, const int32_t *ids, int64_t n, bool skip_special, size_t *len);

/* ---- training ---- */

#endif
