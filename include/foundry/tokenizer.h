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

/* ---- GGUF vocabularies and chat templates ---- */

struct tm_gguf; /* foundry/gguf.h */

/* The tokenizer a GGUF file's tokenizer.ggml.* metadata describes (as
 * llama.cpp reads it).  tokenizer.ggml.model must be "gpt2" (byte-level
 * BPE; anything else is TM_EUNSUPPORTED naming the key and value); tokens
 * are in the byte-level mapped form, merges "a b" strings ranked by index.
 * tokenizer.ggml.pre picks llama.cpp's pre-tokenizer: "smollm" (and
 * "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b")
 * split every digit off, then the GPT-2 pattern; "gpt-2" (and "gpt2",
 * "phi-2", "mpt", "olmo", "jais", ...) the GPT-2 pattern; "llama-bpe" /
 * "llama3" (and llama.cpp's aliases) the Llama-3 pattern with merges
 * ignored for whole-token pieces.  Any other pre, and a missing one
 * (llama.cpp's "default", a different multi-regex split), is
 * TM_EUNSUPPORTED naming it.  Token types: control (3) tokens become
 * special added tokens, user-defined (4) added tokens, the rest model
 * tokens.  TM_EFORMAT naming the key for malformed metadata (tokens not an
 * array of strings, token_type of another length, a merge naming an
 * unknown token, a special id out of range).  A byte the vocabulary has
 * no token for (SmolLM2 lacks 21, none of them in valid UTF-8 text but
 * for some ASCII controls) fails to encode (TM_EINVAL), where llama.cpp
 * throws.  The result does not depend on g afterwards. */
tm_tokenizer *tm_tokenizer_from_gguf(const struct tm_gguf *g);

/* The special ids the metadata names (tokenizer.ggml.bos_token_id,
 * eos_token_id, padding_token_id, unknown_token_id; -1 when absent) and
 * add_bos_token / add_eos_token (absent: false, except true for the
 * Llama-3 pre-tokenizers, as llama.cpp defaults).  Validates what
 * tm_tokenizer_from_gguf does about these keys. */
typedef struct tm_tokenizer_gguf_info {
    int64_t bos_id, eos_id, pad_id, unk_id;
    bool add_bos, add_eos;
} tm_tokenizer_gguf_info;
tm_status tm_tokenizer_gguf_info_of(const struct tm_gguf *g, tm_tokenizer_gguf_info *out);

/* ---- training ---- */

/* Byte-level BPE training, as Hugging Face tokenizers' BpeTrainer with a
 * ByteLevel pre-tokenizer and ByteLevel.alphabet() as initial alphabet:
 * ids 0.. are the special tokens in the order given, then the 256 byte
 * tokens (in the order of their byte-level characters' code points, as HF
 * sorts them), then one token per merge.  Merges are chosen by the highest
 * count of a pair of adjacent tokens within the pre-token pieces (weighted
 * by how often each piece occurs), ties by the smaller (left id, right id),
 * so the same corpus and settings give HF's merges in HF's order.  Special
 * tokens in the training text are not treated specially (HF adds them to
 * the tokenizer only after training). */
typedef enum tm_pretok_kind {
    TM_PRETOK_GPT2 = 0,   /* ByteLevel(use_regex) with GPT-2's pattern */
    TM_PRETOK_LLAMA3 = 1  /* Split(Llama-3's pattern, Isolated), ByteLevel */
} tm_pretok_kind;

typedef struct tm_bpe_train_opts {
    int64_t vocab_size;     /* final size incl. 256 byte tokens and specials */
    int64_t min_frequency;  /* pairs rarer than this are not merged; default 2 */
    const char *const *special_tokens; /* n_special UTF-8 strings, copied */
    int n_special;
    tm_pretok_kind pretok;  /* default TM_PRETOK_GPT2 */
    bool split_digits;      /* Digits(individual_digits=true) before the byte-level split */
    tm_progress *progress;  /* borrowed, may be NULL: finish sets its total to the most
                             * merges possible, advances it by one per merge, finishes it */
} tm_bpe_train_opts;
/* Defaults: min_frequency 2, no specials, GPT-2 pattern, no digit split. */
tm_bpe_train_opts tm_bpe_train_defaults(int64_t vocab_size);

typedef struct tm_bpe_trainer tm_bpe_trainer;
/* A trainer (release with tm_bpe_trainer_free).  TM_EINVAL, naming the
 * field, when vocab_size < 256 + n_special, min_frequency < 0, the pretok
 * kind is unknown, or a special token is NULL, empty, not valid UTF-8,
 * repeated, or the byte-level form of a single byte ("!" is byte 0x21's
 * token already). */
tm_bpe_trainer *tm_bpe_trainer_new(const tm_bpe_train_opts *o);
/* Counts the pre-token pieces of one document text[len] (any bytes; feed
 * documents one at a time, no need to hold the corpus in memory).  On
 * failure (out of memory) the document may be partly counted. */
tm_status tm_bpe_trainer_feed(tm_bpe_trainer *tr, const char *text, size_t len);
/* The tokenizer of the merges learned from everything fed so far (fewer
 * tokens than vocab_size when the corpus runs out of pairs of count >=
 * min_frequency; an empty corpus gives the specials and the 256 bytes).
 * A new tokenizer (tm_tokenizer_free); the trainer stays valid, so more
 * documents may be fed and finish called again.  Not thread-safe on one
 * trainer. */
tm_tokenizer *tm_bpe_trainer_finish(tm_bpe_trainer *tr);
void tm_bpe_trainer_free(tm_bpe_trainer *tr);  /* NULL is a no-op */
/* Number of documents fed and their total bytes. */
int64_t tm_bpe_trainer_docs(const tm_bpe_trainer *tr);
int64_t tm_bpe_trainer_bytes(const tm_bpe_trainer *tr);

#endif
