/*
 * dataset_loader.c — random (B, T+1) windows of a split.
 *
 * Batch k of seed s draws from a Philox generator whose key is derived from
 * (s, k) alone, so batches do not depend on what was drawn before: seeking
 * to k and drawing gives exactly what drawing k batches first would give.
 * Start positions are exactly uniform over [0, N - T - 1] (rejection of the
 * biased top of the 64-bit range).
 */
#include "dataset_impl.h"

#include <string.h>

struct tm_token_loader {
    const tm_token_dataset *ds;
    tm_token_split split;
    /* the split's documents, copied so a later change of the val fraction
     * cannot move this loader's windows */
    tm__ds_split docs;
    int64_t n_tokens;
    int64_t batch, T;
    uint64_t seed;
    int64_t pos;
    int64_t *buf;          /* T + 1 tokens */
};

void tm_token_loader_free(tm_token_loader *l)
{
    if (!l) return;
    tm__dealloc(l->docs.docs);
    tm__dealloc(l->docs.cum);
    tm__dealloc(l->buf);
    tm__dealloc(l);
}

tm_token_loader *tm_token_loader_new(const tm_token_dataset *ds, tm_token_split split,
                                     int64_t batch, int64_t T, uint64_t seed)
{
    const char *fn = __func__;
    if (!ds) {
        TM_ERR(TM_EINVAL, "dataset is NULL");
        return NULL;
    }
    int64_t n = tm_token_dataset_tokens(ds, split);
    if (n < 0) {
        tm__relabel_error(fn, tm_last_status());
        return NULL;
    }
    if (batch < 1 || T < 1 || batch > (1ll << 32) || T > (1ll << 40)) {
        TM_ERR(TM_EINVAL, "batch %lld and T %lld must be positive (and sane)",
               (long long)batch, (long long)T);
        return NULL;
    }
    if (n < T + 1) {
        TM_ERR(TM_EINVAL, "split %d holds %lld tokens, fewer than T + 1 = %lld",
               (int)split, (long long)n, (long long)(T + 1));
        return NULL;
    }
    tm_token_loader *l = tm__calloc(sizeof *l, fn);
    if (!l) return NULL;
    l->ds = ds;
    l->split = split;
    l->n_tokens = n;
    l->batch = batch;
    l->T = T;
    l->seed = seed;
    l->buf = tm__alloc(sizeof(int64_t) * (size_t)(T + 1), fn);
    if (!l->buf) goto fail;
    if (split != TM_SPLIT_ALL) {
        const tm__ds_split *s = &ds->split[split - 1];
        size_t bytes = sizeof(int64_t) * (size_t)(s->n_docs + 1);
        l->docs.docs = tm__alloc(bytes, fn);
        l->docs.cum = tm__alloc(bytes, fn);
        if (!l->docs.docs || !l->docs.cum) goto fail;
        memcpy(l->docs.docs, s->docs, bytes);
        memcpy(l->docs.cum, s->cum, bytes);
        l->docs.n_docs = s->n_docs;
        l->docs.n_bytes = s->n_bytes;
    }
    return l;
fail:
    tm_token_loader_free(l);
    return NULL;
}

static uint64_t next64(tm_rng *r)
{
    uint32_t w[2];
    tm_rng_u32(r, w, 2);
    return (uint64_t)w[0] << 32 | w[1];
}

/* Uniform in [0, range) (range >= 1). */
static uint64_t uniform(tm_rng *r, uint64_t range)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;   /* a multiple of range */
    uint64_t v;
    do v = next64(r); while (v >= limit);
    return v % range;
}

/* Tokens [start, start+n) of the loader's snapshot of its split. */
static void read_window(const tm_token_loader *l, int64_t start, int64_t n,
                        int64_t *out)
{
    if (l->split == TM_SPLIT_ALL) {
        tm__ds_read(l->ds, TM_SPLIT_ALL, start, n, out);
        return;
    }
    /* temporarily view the snapshot as the dataset's split */
    tm_token_dataset view = *l->ds;
    view.split[l->split - 1] = l->docs;
    tm__ds_read(&view, l->split, start, n, out);
}

tm_status tm_token_loader_next(tm_token_loader *l, tm_tensor **x, tm_tensor **y)
{
    if (!l || !x || !y) return TM_ERR(TM_EINVAL, "loader, x or y is NULL");
    int64_t B = l->batch, T = l->T;
    int64_t shape[2] = {B, T};
    tm_tensor *tx = tm_empty(shape, 2, TM_I64), *ty = tm_empty(shape, 2, TM_I64);
    if (!tx || !ty) {
        tm_free(tx);
        tm_free(ty);
        return tm__relabel_error(__func__, tm_last_status());
    }
    int64_t *px = tm_data(tx), *py = tm_data(ty);
    tm_rng r = tm_rng_new(tm__splitmix64(l->seed ^ tm__splitmix64((uint64_t)l->pos)));
    uint64_t range = (uint64_t)(l->n_tokens - T);   /* starts 0 .. N-T-1 */
    for (int64_t b = 0; b < B; b++) {
        int64_t start = (int64_t)uniform(&r, range);
        read_window(l, start, T + 1, l->buf);
        memcpy(px + b * T, l->buf, sizeof(int64_t) * (size_t)T);
        memcpy(py + b * T, l->buf + 1, sizeof(int64_t) * (size_t)T);
    }
    l->pos++;
    *x = tx;
    *y = ty;
    return TM_OK;
}

int64_t tm_token_loader_position(const tm_token_loader *l)
{
    if (!l) return TM_ERR(TM_EINVAL, "loader is NULL");
    return l->pos;
}

tm_status tm_token_loader_seek(tm_token_loader *l, int64_t batches)
{
    if (!l) return TM_ERR(TM_EINVAL, "loader is NULL");
    if (batches < 0)
        return TM_ERR(TM_EINVAL, "batches %lld is negative", (long long)batches);
    l->pos = batches;
    return TM_OK;
}
