/*
 * generate.c — text generation with the KV cache (foundry/models.h).
 *
 * One stream drives everything: tm_gpt_generate is a loop over
 * tm_gpt_stream_next.  Each step runs the model on what has not been fed
 * yet (the whole prompt first, then the previous token), copies the last
 * position's logits to the host and samples there: for batch 1 the logits
 * row is small and the sampler's sorting and drawing are host work anyway.
 */
#include "foundry/models.h"

#include "foundry/attention.h"
#include "foundry/autograd.h"

#include "../tensor/runtime/runtime_impl.h"

#include <string.h>

struct tm_gpt_stream {
    tm_gpt *m;
    tm_kv_cache *cache;
    tm_sampler *sampler;
    int64_t *hist;       /* the prompt, then every token emitted */
    int64_t n_hist;
    int64_t n_fed;       /* tokens of hist already in the cache */
    int64_t n_prompt, max_new, context, vocab;
    int64_t *stop;
    int n_stop;
    float *row;          /* the last position's logits on the host */
    bool (*on_token)(int64_t token, void *user);
    void *user;
    bool done;
};

tm_generate_opts tm_generate_defaults(void)
{
    tm_generate_opts o = {.max_new_tokens = 64,
                          .sample = tm_sample_defaults(),
                          .stop_tokens = NULL,
                          .n_stop = 0,
                          .cache_dtype = TM_F32,
                          .on_token = NULL,
                          .user = NULL};
    return o;
}

void tm_gpt_stream_free(tm_gpt_stream *s)
{
    if (!s) return;
    tm_kv_cache_free(s->cache);
    tm_sampler_free(s->sampler);
    tm__dealloc(s->hist);
    tm__dealloc(s->stop);
    tm__dealloc(s->row);
    tm__dealloc(s);
}

static tm_status check_ids(const int64_t *ids, int64_t n, int64_t vocab,
                           const char *what, const char *fn)
{
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return tm__errf(TM_ERANGE, fn, "%s[%lld] = %lld is outside the vocab [0, %lld)", what,
                            (long long)i, (long long)ids[i], (long long)vocab);
    return TM_OK;
}

static tm_gpt_stream *stream_new(tm_gpt *m, const int64_t *prompt, int64_t n_prompt,
                                 const tm_generate_opts *o, const char *fn)
{
    tm_generate_opts d = tm_generate_defaults();
    if (!o) o = &d;
    if (!m) {
        tm__errf(TM_EINVAL, fn, "model is NULL");
        return NULL;
    }
    const tm_gpt_config *c = tm_gpt_config_of(m);
    if (n_prompt < 1 || !prompt) {
        tm__errf(TM_EINVAL, fn, "the prompt is empty (%lld ids): generation needs at least one",
                 (long long)n_prompt);
        return NULL;
    }
    if (n_prompt > c->context) {
        tm__errf(TM_EINVAL, fn, "prompt of %lld ids is longer than the model's context %lld",
                 (long long)n_prompt, (long long)c->context);
        return NULL;
    }
    if (o->max_new_tokens < 0) {
        tm__errf(TM_EINVAL, fn, "max_new_tokens %lld must be >= 0", (long long)o->max_new_tokens);
        return NULL;
    }
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop_tokens)) {
        tm__errf(TM_EINVAL, fn, "%d stop tokens given without an array (or a negative count)", o->n_stop);
        return NULL;
    }
    if (check_ids(prompt, n_prompt, c->vocab_size, "prompt", fn) != TM_OK ||
        check_ids(o->stop_tokens, o->n_stop, c->vocab_size, "stop_tokens", fn) != TM_OK)
        return NULL;
    tm_gpt_stream *s = tm__calloc(sizeof *s, fn);
    if (!s) return NULL;
    s->m = m;
    s->n_prompt = n_prompt;
    s->context = c->context;
    s->vocab = c->vocab_size;
    s->on_token = o->on_token;
    s->user = o->user;
    /* The sequence never grows past the context: at most this many new. */
    int64_t room = c->context - n_prompt;
    s->max_new = o->max_new_tokens < room ? o->max_new_tokens : room;
    s->done = s->max_new == 0;
    s->sampler = tm_sampler_new(&o->sample);
    if (!s->sampler) goto fail;
    s->hist = tm__alloc((size_t)(n_prompt + s->max_new) * sizeof *s->hist, fn);
    s->stop = tm__alloc((size_t)(o->n_stop ? o->n_stop : 1) * sizeof *s->stop, fn);
    s->row = tm__alloc((size_t)s->vocab * sizeof *s->row, fn);
    if (!s->hist || !s->stop || !s->row) goto fail;
    memcpy(s->hist, prompt, (size_t)n_prompt * sizeof *prompt);
    s->n_hist = n_prompt;
    if (o->n_stop) memcpy(s->stop, o->stop_tokens, (size_t)o->n_stop * sizeof *s->stop);
    s->n_stop = o->n_stop;
    if (!s->done) {
        /* The last token emitted is never fed: one position short of the
         * whole sequence is enough. */
        s->cache = tm_gpt_cache_new(m, 1, n_prompt + s->max_new - 1, o->cache_dtype);
        if (!s->cache) goto fail;
    }
    return s;
fail:
    tm__relabel_error(fn, tm_last_status());
    tm_gpt_stream_free(s);
    return NULL;
}

tm_gpt_stream *tm_gpt_stream_new(tm_gpt *m, const int64_t *prompt, int64_t n_prompt,
                                 const tm_generate_opts *o)
{
    return stream_new(m, prompt, n_prompt, o, __func__);
}

int64_t tm_gpt_stream_count(const tm_gpt_stream *s)
{
    return s ? s->n_hist - s->n_prompt : 0;
}

/* Feeds hist[n_fed..n_hist) and leaves the last position's logits in row. */
static tm_status feed(tm_gpt_stream *s)
{
    tm_status st = TM_OK;
    int64_t n = s->n_hist - s->n_fed;
    tm_tensor *ids = tm_from_buffer(s->hist + s->n_fed, (int64_t[]){1, n}, 2, TM_I64);
    tm_tensor *logits = NULL;
    if (!ids) return tm_last_status();
    bool grad = tm_grad_enabled(), training = tm_gpt_training(s->m);
    tm_set_grad_enabled(false);
    tm_gpt_set_training(s->m, false);
    tm_gpt_fwd_opts fo = {.cache = s->cache, .last_only = true};
    logits = tm_gpt_forward(s->m, ids, &fo);
    tm_gpt_set_training(s->m, training);
    tm_set_grad_enabled(grad);
    if (!logits) {
        st = tm_last_status();
        goto done;
    }
    st = tm_copy_to_buffer(logits, s->row, (size_t)s->vocab * sizeof *s->row, TM_F32);
    if (st == TM_OK) s->n_fed = s->n_hist;
done:
    tm_free(logits);
    tm_free(ids);
    return st;
}

static bool is_stop(const tm_gpt_stream *s, int64_t t)
{
    for (int i = 0; i < s->n_stop; i++)
        if (s->stop[i] == t) return true;
    return false;
}

int64_t tm_gpt_stream_next(tm_gpt_stream *s)
{
    if (!s) return tm__errf(TM_ESTATE, __func__, "stream is NULL");
    if (s->done) return -1;
    tm_status st = feed(s);
    int64_t t = st;
    if (st == TM_OK) t = tm_sampler_sample(s->sampler, s->row, s->vocab, s->hist, s->n_hist);
    if (t < 0) {
        s->done = true;
        tm__relabel_error(__func__, (tm_status)t);
        return t == TM_EINVAL ? TM_ESTATE : t;
    }
    s->hist[s->n_hist++] = t;
    if (is_stop(s, t) || s->n_hist - s->n_prompt == s->max_new) s->done = true;
    if (s->on_token && !s->on_token(t, s->user)) s->done = true;
    return t;
}

tm_status tm_gpt_generate(tm_gpt *m, const int64_t *prompt, int64_t n_prompt,
                          const tm_generate_opts *o, int64_t *out, int64_t *n_out)
{
    if (!n_out) return tm__errf(TM_EINVAL, __func__, "n_out is NULL");
    *n_out = 0;
    if (!out) return tm__errf(TM_EINVAL, __func__, "out is NULL");
    tm_gpt_stream *s = stream_new(m, prompt, n_prompt, o, __func__);
    if (!s) return tm_last_status();
    tm_status st = TM_OK;
    for (;;) {
        int64_t t = tm_gpt_stream_next(s);
        if (t == -1) break;
        if (t < -1) {
            st = tm__relabel_error(__func__, tm_last_status());
            break;
        }
        out[(*n_out)++] = t;
    }
    tm_gpt_stream_free(s);
    return st;
}
