/*
 * sample.c — one token id from one row of logits (foundry/models.h).
 *
 * The processors follow Hugging Face's logits processors and warpers
 * (RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
 * TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper) with
 * min_tokens_to_keep = 1, so a model sampled here and in transformers with
 * the same settings draws from the same distribution.  Logits are host
 * memory: sampling is a documented host-sync point of generation.
 * A removed id is -inf in the working row, as in HF.
 */
#include "foundry/models.h"

#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pair {
    double v;
    int64_t id;
} pair;

struct tm_sampler {
    tm_sample_opts o;
    tm_rng rng;
    int64_t cap;         /* vocab the scratch below is sized for */
    double *val;         /* the processed logits */
    double *heap;        /* top_k's k largest */
    pair *sorted;        /* top_p's finite logits in ascending order */
    unsigned char *seen; /* the repetition penalty's distinct ids */
};

tm_sample_opts tm_sample_defaults(void)
{
    tm_sample_opts o = {.temperature = 1.0, .top_k = 0, .top_p = 1.0,
                        .min_p = 0.0, .repetition_penalty = 1.0, .seed = 0};
    return o;
}

static tm_status check_opts(const tm_sample_opts *o, const char *fn)
{
    if (!(isfinite(o->temperature) && o->temperature >= 0))
        return tm__errf(TM_EINVAL, fn, "temperature %g must be finite and >= 0 (0: greedy)", o->temperature);
    if (o->top_k < 0)
        return tm__errf(TM_EINVAL, fn, "top_k %lld must be >= 0 (0: off)", (long long)o->top_k);
    if (!(o->top_p >= 0 && o->top_p <= 1))
        return tm__errf(TM_EINVAL, fn, "top_p %g must be in [0, 1] (1: off)", o->top_p);
    if (!(o->min_p >= 0 && o->min_p <= 1))
        return tm__errf(TM_EINVAL, fn, "min_p %g must be in [0, 1] (0: off)", o->min_p);
    if (!(isfinite(o->repetition_penalty) && o->repetition_penalty > 0))
        return tm__errf(TM_EINVAL, fn, "repetition_penalty %g must be finite and > 0 (1: off)",
                        o->repetition_penalty);
    return TM_OK;
}

tm_sampler *tm_sampler_new(const tm_sample_opts *o)
{
    tm_sample_opts d = tm_sample_defaults();
    if (!o) o = &d;
    if (check_opts(o, __func__) != TM_OK) return NULL;
    tm_sampler *s = tm__calloc(sizeof *s, __func__);
    if (!s) return NULL;
    s->o = *o;
    s->rng = tm_rng_new(o->seed);
    return s;
}

void tm_sampler_free(tm_sampler *s)
{
    if (!s) return;
    tm__dealloc(s->val);
    tm__dealloc(s->heap);
    tm__dealloc(s->sorted);
    tm__dealloc(s->seen);
    tm__dealloc(s);
}

tm_rng tm_sampler_rng(const tm_sampler *s)
{
    tm_rng r = {0, 0};
    return s ? s->rng : r;
}

void tm_sampler_set_rng(tm_sampler *s, tm_rng rng)
{
    if (s) s->rng = rng;
}

static tm_status reserve(tm_sampler *s, int64_t vocab, const char *fn)
{
    if (vocab <= s->cap) return TM_OK;
    if ((uint64_t)vocab > SIZE_MAX / sizeof(pair))
        return tm__errf(TM_EOVERFLOW, fn, "vocab %lld is too large", (long long)vocab);
    size_t n = (size_t)vocab;
    double *val = tm__alloc(n * sizeof *val, fn);
    double *heap = tm__alloc(n * sizeof *heap, fn);
    pair *sorted = tm__alloc(n * sizeof *sorted, fn);
    unsigned char *seen = tm__calloc(n, fn);
    if (!val || !heap || !sorted || !seen) {
        tm__dealloc(val);
        tm__dealloc(heap);
        tm__dealloc(sorted);
        tm__dealloc(seen);
        return TM_ENOMEM;
    }
    tm__dealloc(s->val);
    tm__dealloc(s->heap);
    tm__dealloc(s->sorted);
    tm__dealloc(s->seen);
    s->val = val, s->heap = heap, s->sorted = sorted, s->seen = seen;
    s->cap = vocab;
    return TM_OK;
}

static void sift_down(double *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m]) m = l;
        if (r < n && h[r] < h[m]) m = r;
        if (m == i) return;
        double t = h[i];
        h[i] = h[m], h[m] = t;
        i = m;
    }
}

/* TopKLogitsWarper: everything below the k-th largest value goes (a
 * min-heap of the k largest, O(V log k)). */
static void top_k(tm_sampler *s, int64_t vocab)
{
    int64_t k = s->o.top_k;
    if (k <= 0 || k >= vocab) return;
    double *h = s->heap;
    for (int64_t i = 0; i < k; i++) h[i] = s->val[i];
    for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    for (int64_t i = k; i < vocab; i++)
        if (s->val[i] > h[0]) {
            h[0] = s->val[i];
            sift_down(h, k, 0);
        }
    double kth = h[0];
    for (int64_t i = 0; i < vocab; i++)
        if (s->val[i] < kth) s->val[i] = -INFINITY;
}

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The row's softmax normaliser: max and sum of exp(v - max) over the
 * finite values (there is always at least one). */
static double row_max(const double *v, int64_t vocab)
{
    double m = -INFINITY;
    for (int64_t i = 0; i < vocab; i++)
        if (v[i] > m) m = v[i];
    return m;
}

static double row_sum(const double *v, int64_t vocab, double m)
{
    double z = 0;
    for (int64_t i = 0; i < vocab; i++)
        if (v[i] > -INFINITY) z += exp(v[i] - m);
    return z;
}

/* TopPLogitsWarper: sorted ascending (ties by id, a stable sort's order),
 * the prefix with cumulative probability <= 1 - top_p goes; the last
 * (most likely) token always stays.  -inf ids have probability 0 and are
 * gone already, so only the finite ones are sorted. */
static void top_p(tm_sampler *s, int64_t vocab)
{
    if (s->o.top_p >= 1) return;
    int64_t n = 0;
    for (int64_t i = 0; i < vocab; i++)
        if (s->val[i] > -INFINITY) s->sorted[n++] = (pair){s->val[i], i};
    qsort(s->sorted, (size_t)n, sizeof(pair), cmp_pair);
    double m = s->sorted[n - 1].v, z = 0;
    for (int64_t j = 0; j < n; j++) z += exp(s->sorted[j].v - m);
    double cum = 0, cut = 1 - s->o.top_p;
    for (int64_t j = 0; j < n - 1; j++) {
        cum += exp(s->sorted[j].v - m) / z;
        if (cum <= cut) s->val[s->sorted[j].id] = -INFINITY;
    }
}

/* MinPLogitsWarper: p < min_p * p_max goes (the top token never does). */
static void min_p(tm_sampler *s, int64_t vocab)
{
    if (s->o.min_p <= 0) return;
    double m = row_max(s->val, vocab), z = row_sum(s->val, vocab, m);
    double thresh = s->o.min_p * (1.0 / z);
    for (int64_t i = 0; i < vocab; i++)
        if (s->val[i] > -INFINITY && exp(s->val[i] - m) / z < thresh)
            s->val[i] = -INFINITY;
}

static bool greedy(const tm_sampler *s) { return s->o.temperature == 0; }

/* Fills s->val with the processed row. */
static tm_status process(tm_sampler *s, const float *logits, int64_t vocab,
                         const int64_t *hist, int64_t nh, const char *fn)
{
    if (!s) return tm__errf(TM_EINVAL, fn, "sampler is NULL");
    if (!logits || vocab <= 0)
        return tm__errf(TM_EINVAL, fn, "need logits and vocab >= 1 (vocab %lld)", (long long)vocab);
    if (nh < 0 || (nh > 0 && !hist))
        return tm__errf(TM_EINVAL, fn, "history of %lld ids is missing or negative", (long long)nh);
    tm_status st = reserve(s, vocab, fn);
    if (st != TM_OK) return st;
    bool any = false;
    for (int64_t i = 0; i < vocab; i++) {
        float l = logits[i];
        if (isnan(l) || l == INFINITY)
            return tm__errf(TM_EINVAL, fn, "logit %lld is %g (only finite values and -inf are allowed)",
                            (long long)i, (double)l);
        any |= l > -INFINITY;
        s->val[i] = l;
    }
    if (!any) return tm__errf(TM_EINVAL, fn, "every one of the %lld logits is -inf", (long long)vocab);
    for (int64_t j = 0; j < nh; j++)
        if (hist[j] < 0 || hist[j] >= vocab)
            return tm__errf(TM_ERANGE, fn, "history[%lld] = %lld is outside the vocab [0, %lld)",
                            (long long)j, (long long)hist[j], (long long)vocab);
    double pen = s->o.repetition_penalty;
    if (pen != 1) {
        for (int64_t j = 0; j < nh; j++) {
            int64_t t = hist[j];
            if (s->seen[t]) continue;
            s->seen[t] = 1;
            s->val[t] = s->val[t] < 0 ? s->val[t] * pen : s->val[t] / pen;
        }
        for (int64_t j = 0; j < nh; j++) s->seen[hist[j]] = 0;
    }
    if (greedy(s)) return TM_OK;
    if (s->o.temperature != 1)
        for (int64_t i = 0; i < vocab; i++) s->val[i] /= s->o.temperature;
    top_k(s, vocab);
    top_p(s, vocab);
    min_p(s, vocab);
    return TM_OK;
}

static int64_t argmax(const double *v, int64_t vocab)
{
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

tm_status tm_sampler_probs(tm_sampler *s, const float *logits, int64_t vocab,
                           const int64_t *history, int64_t n_history,
                           double *probs)
{
    if (!probs) return tm__errf(TM_EINVAL, __func__, "probs is NULL");
    tm_status st = process(s, logits, vocab, history, n_history, __func__);
    if (st != TM_OK) return st;
    if (greedy(s)) {
        memset(probs, 0, (size_t)vocab * sizeof *probs);
        probs[argmax(s->val, vocab)] = 1;
        return TM_OK;
    }
    double m = row_max(s->val, vocab), z = row_sum(s->val, vocab, m);
    for (int64_t i = 0; i < vocab; i++)
        probs[i] = s->val[i] > -INFINITY ? exp(s->val[i] - m) / z : 0;
    return TM_OK;
}

int64_t tm_sampler_sample(tm_sampler *s, const float *logits, int64_t vocab,
                          const int64_t *history, int64_t n_history)
{
    tm_status st = process(s, logits, vocab, history, n_history, __func__);
    if (st != TM_OK) return st;
    if (greedy(s)) return argmax(s->val, vocab);
    uint32_t w[2];
    tm_rng_u32(&s->rng, w, 2);
    uint64_t bits = (uint64_t)w[0] | (uint64_t)w[1] << 32;
    double u = (double)(bits >> 11) * 0x1p-53;
    double m = row_max(s->val, vocab), z = row_sum(s->val, vocab, m);
    double target = u * z, cum = 0;
    int64_t last = -1;
    for (int64_t i = 0; i < vocab; i++) {
        if (!(s->val[i] > -INFINITY)) continue;
        double e = exp(s->val[i] - m);
        if (e <= 0) continue;
        last = i;
        cum += e;
        if (cum > target) return i;
    }
    /* Rounding left the sum just short of target: the last possible id. */
    return last >= 0 ? last : argmax(s->val, vocab);
}
