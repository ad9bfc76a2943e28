/* state.c — a worker's parameters as one flat vector (hash, copy in and
 * out, gradients) and the state snapshot a joining worker receives. */
#include "swarm_impl.h"

#include "crypto.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <string.h>

tm_status tm__swarm_flat_init(tm__swarm_flat *f, const tm_params *params)
{
    memset(f, 0, sizeof *f);
    if (!params) return TM_ERR(TM_EINVAL, "params is NULL");
    int n = tm_params_count(params);
    f->t = tm__alloc(sizeof *f->t * (size_t)(n > 0 ? n : 1), __func__);
    if (!f->t) return TM_ENOMEM;
    tm__sha256_ctx h;
    tm__sha256_init(&h);
    for (int i = 0; i < n; i++) {
        tm_tensor *t = tm_params_get(params, i);
        if (tm_params_is_buffer(params, i) || !tm_requires_grad(t)) continue;
        const char *name = tm_params_name(params, i);
        if (tm_dtype_of(t) != TM_F32 || !tm_is_contiguous(t) ||
            tm_device_of(t).type != TM_DEVICE_CPU) {
            tm__swarm_flat_free(f);
            return TM_ERR(TM_EDTYPE, "parameter %s must be F32, contiguous "
                          "and on the CPU", name);
        }
        f->t[f->count++] = t;
        f->numel += tm_numel(t);
        uint8_t nd = (uint8_t)tm_ndim(t);
        tm__sha256_update(&h, name, strlen(name) + 1);
        tm__sha256_update(&h, &nd, 1);
        for (int d = 0; d < nd; d++) {
            uint8_t s[8];
            tm__put_u64(s, (uint64_t)tm_shape(t)[d]);
            tm__sha256_update(&h, s, 8);
        }
    }
    tm__sha256_final(&h, f->fingerprint);
    if (f->numel == 0) {
        tm__swarm_flat_free(f);
        return TM_ERR(TM_EINVAL, "no trainable parameters");
    }
    return TM_OK;
}

void tm__swarm_flat_free(tm__swarm_flat *f)
{
    if (!f) return;
    tm__dealloc(f->t);
    memset(f, 0, sizeof *f);
}

/* Each chunk's 64-bit hash (four multiply-rotate lanes, as xxHash64's
 * inner loop), combined in chunk order so threads do not change it. */
#define HASH_CHUNK 65536 /* floats */
static const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full;

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Loads through memcpy: a snapshot's values need not be aligned. */
static uint32_t word(const uint8_t *w, int64_t i)
{
    uint32_t v;
    memcpy(&v, w + 4 * i, 4);
    return v;
}

static uint64_t hash_words(const uint8_t *w, int64_t n, uint64_t seed)
{
    uint64_t l[4] = {seed + P1, seed + P2, seed, seed - P1};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 4; j++) {
            uint64_t v = (uint64_t)word(w, i + 2 * j) | (uint64_t)word(w, i + 2 * j + 1) << 32;
            l[j] = rotl(l[j] + v * P2, 31) * P1;
        }
    uint64_t h = rotl(l[0], 1) + rotl(l[1], 7) + rotl(l[2], 12) + rotl(l[3], 18);
    for (; i < n; i++) h = rotl(h ^ (word(w, i) * P1), 23) * P2;
    h ^= (uint64_t)n;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    return h;
}

typedef struct hash_job {
    const uint8_t *const *data; /* each tensor's F32 values */
    const int64_t *numel;
    int64_t *start; /* first chunk of each tensor, count + 1 entries */
    uint64_t *out;  /* one per chunk */
} hash_job;

static void hash_range(int64_t b, int64_t e, void *ctx)
{
    hash_job *j = ctx;
    int t = 0;
    for (int64_t c = b; c < e; c++) {
        while (j->start[t + 1] <= c) t++;
        int64_t off = (c - j->start[t]) * HASH_CHUNK;
        int64_t len = j->numel[t] - off;
        if (len > HASH_CHUNK) len = HASH_CHUNK;
        j->out[c] = hash_words(j->data[t] + 4 * off, len, (uint64_t)c);
    }
}

uint64_t tm__swarm_values_hash(const uint8_t *const *data, const int64_t *numel,
                               int count)
{
    int64_t chunks = 0;
    int64_t *start = tm__alloc(sizeof *start * (size_t)(count + 1), __func__);
    if (!start) return 0; /* never equal to a real replica's, by chance only */
    for (int t = 0; t < count; t++) {
        start[t] = chunks;
        chunks += (numel[t] + HASH_CHUNK - 1) / HASH_CHUNK;
    }
    start[count] = chunks;
    uint64_t *out = tm__alloc(sizeof *out * (size_t)(chunks + 1), __func__);
    uint64_t h = 0;
    if (out) {
        hash_job j = {data, numel, start, out};
        tm__parallel_for(chunks, 4, hash_range, &j);
        h = hash_words((const uint8_t *)out, chunks * 2, P1);
    }
    tm__dealloc(out);
    tm__dealloc(start);
    return h;
}

uint64_t tm__swarm_params_hash(const tm__swarm_flat *f)
{
    const uint8_t **data = tm__alloc(sizeof *data * (size_t)(f->count + 1), __func__);
    int64_t *numel = tm__alloc(sizeof *numel * (size_t)(f->count + 1), __func__);
    uint64_t h = 0;
    if (data && numel) {
        for (int t = 0; t < f->count; t++) {
            data[t] = tm_data(f->t[t]);
            numel[t] = tm_numel(f->t[t]);
        }
        h = tm__swarm_values_hash(data, numel, f->count);
    }
    tm__dealloc(data);
    tm__dealloc(numel);
    return h;
}

void tm__swarm_flat_get(const tm__swarm_flat *f, float *out)
{
    for (int t = 0; t < f->count; t++) {
        memcpy(out, tm_data(f->t[t]), tm_nbytes(f->t[t]));
        out += tm_numel(f->t[t]);
    }
}

void tm__swarm_flat_set(const tm__swarm_flat *f, const float *in)
{
    for (int t = 0; t < f->count; t++) {
        memcpy(tm_data(f->t[t]), in, tm_nbytes(f->t[t]));
        in += tm_numel(f->t[t]);
    }
}

void tm__swarm_grads_get(const tm__swarm_flat *f, float *out)
{
    for (int t = 0; t < f->count; t++) {
        int64_t n = tm_numel(f->t[t]);
        tm_tensor *g = tm_grad(f->t[t]);
        if (g && tm_is_contiguous(g) && tm_dtype_of(g) == TM_F32 &&
            tm_device_of(g).type == TM_DEVICE_CPU)
            memcpy(out, tm_data(g), (size_t)n * 4);
        else if (g) {
            tm_tensor *c = tm_contiguous(g);
            if (c) memcpy(out, tm_data(c), (size_t)n * 4);
            else memset(out, 0, (size_t)n * 4);
            tm_free(c);
        } else
            memset(out, 0, (size_t)n * 4);
        out += n;
    }
}

tm_status tm__swarm_grads_set(const tm__swarm_flat *f, const float *in)
{
    for (int t = 0; t < f->count; t++) {
        tm_tensor *p = f->t[t];
        tm_tensor *g = tm_from_buffer(in, tm_shape(p), tm_ndim(p), TM_F32);
        if (!g) return tm__relabel_error(__func__, tm_last_status());
        tm_status st = tm_set_grad(p, g);
        tm_free(g);
        if (st) return st;
        in += tm_numel(p);
    }
    return TM_OK;
}
