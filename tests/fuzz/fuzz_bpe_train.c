/*
 * fuzz_bpe_train.c — fuzz target for the BPE trainer (io/bpe_train*.c) and
 * the tokenizer it builds.
 *
 * With libFuzzer (clang -fsanitize=fuzzer,address) LLVMFuzzerTestOneInput
 * is the entry point; built with -DTM_FUZZ_STANDALONE it is a plain
 * program over the files named on its command line (make fuzz-corpus).
 *
 * Input: byte 0 chooses the pattern (bit 0), the digit split (bit 1) and
 * the vocabulary size (256 + 1 special + 8 * (bits 2-7)); byte 1 the
 * min_frequency (0-3); the rest is the corpus, one document per run of
 * bytes between NUL bytes.  Invariants: training succeeds on any bytes
 * (out of memory aside) with between 257 and vocab_size tokens; every
 * document encodes and decodes to its own bytes; the tokenizer.json text
 * loads back with the same hash.  A broken invariant aborts (a finding).
 */
#include "foundry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_bpe_train: invariant failed: %s (%s:%d)\n", \
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

static void round_trip(const tm_tokenizer *t, const uint8_t *p, size_t n)
{
    tm_token_buf b = {0};
    FUZZ_ASSERT(!tm_tokenizer_encode(t, (const char *)p, n, &b));
    size_t len = 0;
    char *s = tm_tokenizer_decode(t, b.ids, b.n, false, &len);
    FUZZ_ASSERT(s && len == n && (n == 0 || !memcmp(s, p, n)));
    free(s);
    tm_token_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const char *specials[] = {"<|endoftext|>"};
    tm_bpe_train_opts o = tm_bpe_train_defaults(257 + 8 * (data[0] >> 2));
    o.pretok = data[0] & 1 ? TM_PRETOK_LLAMA3 : TM_PRETOK_GPT2;
    o.split_digits = (data[0] & 2) != 0;
    o.min_frequency = data[1] % 4;
    o.special_tokens = specials;
    o.n_special = 1;
    tm_bpe_trainer *tr = tm_bpe_trainer_new(&o);
    FUZZ_ASSERT(tr);
    const uint8_t *p = data + 2, *end = data + size;
    while (p <= end) {
        const uint8_t *q = p;
        while (q < end && *q) q++;
        FUZZ_ASSERT(!tm_bpe_trainer_feed(tr, (const char *)p,
                                         (size_t)(q - p)));
        p = q + 1;
    }
    tm_tokenizer *t = tm_bpe_trainer_finish(tr);
    FUZZ_ASSERT(t);
    int64_t n = tm_tokenizer_vocab_size(t);
    FUZZ_ASSERT(n >= 257 && n <= o.vocab_size);
    FUZZ_ASSERT(tm_tokenizer_token_to_id(t, "<|endoftext|>") == 0);
    for (p = data + 2; p <= end;) {
        const uint8_t *q = p;
        while (q < end && *q) q++;
        round_trip(t, p, (size_t)(q - p));
        p = q + 1;
    }
    round_trip(t, data, size);
    size_t len = 0;
    char *json = tm_tokenizer_to_json(t, &len);
    FUZZ_ASSERT(json);
    tm_tokenizer *back = tm_tokenizer_from_json(json, len);
    FUZZ_ASSERT(back && tm_tokenizer_hash(back) == tm_tokenizer_hash(t));
    free(json);
    tm_tokenizer_free(back);
    tm_tokenizer_free(t);
    tm_bpe_trainer_free(tr);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_bpe_train"
#include "standalone.h"
