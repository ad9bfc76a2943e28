/*
 * foundry/models.h — decoder-only transformers (GPT-2 and Llama families),
 * their evaluation, and text generation: sampling from logits and
 * generation with the KV cache.
 */
#ifndef FOUNDRY_MODELS_H
#define FOUNDRY_MODELS_H

#include "tensor.h"
#include "random.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ sampling
 *
 * A sampler turns one row of logits into one token id.  It applies, in
 * Hugging Face generate()'s order: the repetition penalty (every distinct
 * id of the history: a logit l < 0 becomes l * p, else l / p), then, unless
 * greedy, the temperature (l / t), top_k (keeps every logit >= the k-th
 * largest: ties at the k-th value are all kept), top_p (nucleus: sorts the
 * logits ascending, ties by id, and drops the prefix whose cumulative
 * probability is <= 1 - top_p, always keeping the most likely token) and
 * min_p (drops tokens with p < min_p * p_max), then draws from the softmax
 * of what is left with its own Philox generator (tm_rng_new(seed)), one
 * 64-bit draw per sample, by the inverse CDF over ids in increasing order.
 * Greedy (temperature 0) is the argmax after the repetition penalty; ties
 * go to the lowest id.  Arithmetic is in double.  Logits may hold -inf
 * (masked ids); NaN or +inf, or no finite logit at all, is TM_EINVAL.
 * A sampler is not thread-safe: one thread at a time. */
typedef struct tm_sample_opts {
    double temperature;         /* 1.0; 0 means greedy (argmax, ties -> lowest id); >= 0, finite */
    int64_t top_k;              /* 0: off; >= 0 */
    double top_p;               /* 1.0: off; in (0, 1] (nucleus, HF TopPLogitsWarper semantics, keeps >= 1 token) */
    double min_p;               /* 0: off; in [0, 1] (keep tokens with p >= min_p * p_max) */
    double repetition_penalty;  /* 1.0: off; > 0, finite; HF/CTRL rule over every token in prompt + generated so far */
    uint64_t seed;              /* 0 */
} tm_sample_opts;
tm_sample_opts tm_sample_defaults(void);
/* Order as HF's generate: repetition penalty, temperature, top_k, top_p, min_p, then draw with the seeded generator. */
typedef struct tm_sampler tm_sampler;
/* A sampler for the options (copied; NULL: the defaults).  Options out of
 * range: NULL with TM_EINVAL naming the field.  Release with
 * tm_sampler_free. */
tm_sampler *tm_sampler_new(const tm_sample_opts *o);
void tm_sampler_free(tm_sampler *s);     /* NULL is a no-op */
/* The id drawn from logits[vocab] (borrowed) given the ids generated and
 * prompted so far, history[n_history] (borrowed; ids in [0, vocab), used
 * only by the repetition penalty).  Advances the generator by one 64-bit
 * draw unless greedy.  < 0: an error status (TM_EINVAL for bad logits or
 * arguments, TM_ERANGE for a history id out of range). */
int64_t tm_sampler_sample(tm_sampler *s, const float *logits, int64_t vocab,
                          const int64_t *history, int64_t n_history);   /* < 0: error status */
/* The distribution tm_sampler_sample draws from: probs[vocab] (caller's
 * buffer) after every processor; greedy is one-hot.  Does not advance the
 * generator.  Same errors as tm_sampler_sample. */
tm_status tm_sampler_probs(tm_sampler *s, const float *logits, int64_t vocab,
                           const int64_t *history, int64_t n_history,
                           double *probs);
/* The sampler's generator now (for checkpoints) and a replacement. */
tm_rng tm_sampler_rng(const tm_sampler *s);
void tm_sampler_set_rng(tm_sampler *s, tm_rng rng);

#ifdef __cplusplus
}
#endif
#endif
