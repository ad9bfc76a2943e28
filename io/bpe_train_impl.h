/*
 * bpe_train_impl.h — the BPE trainer's core: a table of words (pre-token
 * pieces as raw bytes, with counts) and the merge loop over it.  Internal;
 * never installed.  The public trainer (foundry/tokenizer.h) feeds it the
 * pieces of its pre-tokenizer and turns its merges into a tm_tokenizer.
 *
 * The merge loop is the algorithm of Hugging Face tokenizers' BpeTrainer:
 * pair counts weighted by word counts, a max-heap of pairs (higher count
 * first, then the smaller (left id, right id) pair), each heap entry holding
 * the words where its pair was seen, lazy refresh of stale counts, and the
 * same bookkeeping of the pairs a merge destroys and forms, so the same
 * corpus gives the same merges in the same order.
 */
#ifndef FOUNDRY_IO_BPE_TRAIN_IMPL_H
#define FOUNDRY_IO_BPE_TRAIN_IMPL_H

#include "foundry/base.h"

typedef struct tm__bpe_word {
    uint64_t off;   /* of its bytes in tm__bpe_words.bytes */
    uint32_t len;
    uint32_t hash;  /* low bits of the hash of its bytes */
    uint64_t count;
} tm__bpe_word;

/* Distinct byte strings with counts.  Zero-initialise; tm__bpe_words_free. */
typedef struct tm__bpe_words {
    unsigned char *bytes;
    uint64_t nbytes, capbytes;
    tm__bpe_word *w;
    uint32_t n, cap;
    uint32_t *slots;    /* open addressing: word index + 1, 0 empty */
    uint64_t nslots;    /* a power of two, or 0 */
} tm__bpe_words;

/* Adds `count` occurrences of p[len] (len >= 1, < 2^32). */
tm_status tm__bpe_words_add(tm__bpe_words *ws, const unsigned char *p,
                            size_t len, uint64_t count);
void tm__bpe_words_free(tm__bpe_words *ws);

/* One merge: tokens `a` and `b` make `id` (a new id, or an existing one
 * when the concatenation was already a token). */
typedef struct tm__bpe_merge {
    int32_t a, b, id;
} tm__bpe_merge;

/* The vocabulary as the merge loop sees it and leaves it: token id -> bytes
 * (off/len into bytes), specials included (their bytes: the text itself).
 * ntok grows as merges add tokens. */
typedef struct tm__bpe_vocab {
    unsigned char *bytes;
    uint64_t nbytes, capbytes;
    uint64_t *off;
    uint32_t *len;
    bool *hidden;       /* not findable */
    int32_t ntok, captok;
    int32_t *slots;     /* bytes -> id + 1 */
    uint64_t nslots;
} tm__bpe_vocab;

/* Appends a token with bytes p[len] and returns its id, or a negative
 * status.  A findable string already present is refused (TM_EINVAL).  A
 * token that is not findable is never the result of tm__bpe_vocab_find
 * (a special token that no merge can produce). */
int64_t tm__bpe_vocab_add(tm__bpe_vocab *v, const unsigned char *p,
                          size_t len, bool findable);
/* Id of p[len], or -1. */
int32_t tm__bpe_vocab_find(const tm__bpe_vocab *v, const unsigned char *p,
                           size_t len);
void tm__bpe_vocab_free(tm__bpe_vocab *v);

/* Called after every merge with the number of merges so far. */
typedef void (*tm__bpe_step_fn)(int64_t merges, void *user);

/* Runs merges over ws, starting from `v` (which must already hold a token
 * for every byte: byte_id[b] is it), until v->ntok reaches vocab_size, no
 * pair is left, or the best pair's count is below min_frequency.  Merges go
 * to *merges (tm__alloc'd; tm__dealloc it), their count to *n_merges. */
tm_status tm__bpe_run(const tm__bpe_words *ws, tm__bpe_vocab *v,
                      const int32_t byte_id[256], int64_t vocab_size,
                      int64_t min_frequency, tm__bpe_step_fn step,
                      void *user, tm__bpe_merge **merges,
                      int64_t *n_merges);

/* The order in which Hugging Face's ByteLevel alphabet sorts the 256 bytes:
 * by the code point each byte is shown as ('!'..'~', then U+00A1.., then
 * the remapped control and space bytes from U+0100).  order[k] is the k-th
 * byte. */
void tm__bpe_byte_order(unsigned char order[256]);

#endif
