/* topk.c — exact TopK by magnitude (compress.h): a threshold estimated
 * from a sample, one threaded pass collecting the entries above it, and
 * an exact radix select among those; a radix select over everything when
 * the sample misjudged.  Keys are the IEEE bits of |x| as uint32, which
 * order non-negative floats and put NaN above infinity. */
#include "compress.h"

#include "foundry/swarm.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Every NaN gets one key, just above infinity's: NaNs tie among
 * themselves (to the lower index) whatever their sign and payload. */
#define NAN_KEY 0x7f800001u

static inline uint32_t key_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u &= 0x7fffffffu;
    return u < NAN_KEY ? u : NAN_KEY;
}

/* The k-th largest key of keys[0..n) (1 <= k <= n): two 16-bit histogram
 * passes. */
static uint32_t kth_key(const float *x, const int64_t *sel, int64_t n, int64_t k,
                        uint32_t *h)
{
    uint32_t hi = 0, result = 0;
    for (int pass = 0; pass < 2; pass++) {
        memset(h, 0, 65536 * sizeof *h);
        for (int64_t i = 0; i < n; i++) {
            uint32_t kk = key_of(x[sel ? sel[i] : i]);
            if (pass == 0) h[kk >> 16]++;
            else if ((kk >> 16) == hi) h[kk & 0xffff]++;
        }
        int64_t acc = 0;
        int b = 65535;
        for (; b > 0; b--) {
            if (acc + h[b] >= k) break;
            acc += h[b];
        }
        k -= acc;
        if (pass == 0) hi = (uint32_t)b;
        else result = hi << 16 | (uint32_t)b;
    }
    return result;
}

typedef struct collect_job {
    const float *x;
    int64_t n, cap_part;
    uint32_t thr;
    int64_t *buf, *count;
    atomic_bool overflow;
} collect_job;

static void collect_part(int part, int nparts, void *ctx)
{
    collect_job *j = ctx;
    int64_t b = j->n * part / nparts, e = j->n * (part + 1) / nparts;
    int64_t *out = j->buf + j->cap_part * part, c = 0;
    for (int64_t i = b; i < e; i++)
        if (key_of(j->x[i]) >= j->thr) {
            if (c == j->cap_part) {
                atomic_store(&j->overflow, true);
                break;
            }
            out[c++] = i;
        }
    j->count[part] = c;
}

static int cmp_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Writes the k largest in index order: keys above kth, then ties at kth
 * from the lowest index, scanning cand (ascending indices) or all of x. */
static void emit(const float *x, const int64_t *cand, int64_t nc, int64_t k,
                 uint32_t kth, int64_t *idx, float *val)
{
    int64_t above = 0;
    for (int64_t i = 0; i < nc; i++) above += key_of(x[cand ? cand[i] : i]) > kth;
    int64_t ties = k - above, o = 0;
    for (int64_t i = 0; i < nc && o < k; i++) {
        int64_t j = cand ? cand[i] : i;
        uint32_t kk = key_of(x[j]);
        if (kk > kth || (kk == kth && ties-- > 0)) {
            idx[o] = j;
            val[o++] = x[j];
        }
    }
}

tm_status tm__topk_select(const float *x, int64_t n, int64_t k, int64_t *idx,
                          float *val)
{
    if (n < 0 || k < 0 || k > n)
        return TM_ERR(TM_EINVAL, "k = %lld for %lld values", (long long)k,
                      (long long)n);
    if (k == 0) return TM_OK;
    uint32_t *h = tm__alloc(65536 * sizeof *h, __func__);
    if (!h) return TM_ENOMEM;
    if (k == n || n < 8192) {
        emit(x, NULL, n, k, kth_key(x, NULL, n, k, h), idx, val);
        tm__dealloc(h);
        return TM_OK;
    }
    /* threshold from a strided sample, aimed at about 2k candidates */
    enum { S = 4096 };
    uint32_t sample[S];
    for (int i = 0; i < S; i++) sample[i] = key_of(x[(int64_t)i * (n / S)]);
    qsort(sample, S, sizeof *sample, cmp_desc);
    double want = 2.0 * (double)k / (double)n * S + 8;
    int r = want >= S ? S - 1 : (int)want;
    int nparts = tm_get_num_threads();
    if (nparts < 1) nparts = 1;
    if (nparts > 64) nparts = 64;
    int64_t cap = 4 * k + 4096 * (int64_t)nparts;
    int64_t *buf = tm__alloc((size_t)cap * 8, __func__);
    if (!buf) {
        tm__dealloc(h);
        return TM_ENOMEM;
    }
    int64_t count[64];
    collect_job j = {x, n, cap / nparts, sample[r], buf, count, false};
    tm__parallel_parts(nparts, collect_part, &j);
    int64_t nc = 0;
    for (int p = 0; p < nparts; p++) nc += count[p];
    if (atomic_load(&j.overflow) || nc < k) {
        /* the sample misjudged: select over everything */
        emit(x, NULL, n, k, kth_key(x, NULL, n, k, h), idx, val);
    } else {
        /* make the candidates contiguous, in index order */
        int64_t o = count[0];
        for (int p = 1; p < nparts; p++) {
            memmove(buf + o, buf + j.cap_part * p, (size_t)count[p] * 8);
            o += count[p];
        }
        emit(x, buf, nc, k, kth_key(x, buf, nc, k, h), idx, val);
    }
    tm__dealloc(buf);
    tm__dealloc(h);
    return TM_OK;
}

tm_status tm_swarm_topk(const tm_tensor *x, int64_t k, tm_tensor **indices,
                        tm_tensor **values)
{
    if (!x || !indices || !values)
        return TM_ERR(TM_EINVAL, "x, indices and values must not be NULL");
    *indices = *values = NULL;
    if (tm_dtype_of(x) != TM_F32)
        return TM_ERR(TM_EDTYPE, "x must be F32");
    int64_t n = tm_numel(x);
    if (k < 0 || k > n)
        return TM_ERR(TM_EINVAL, "k = %lld is not in [0, %lld]", (long long)k,
                      (long long)n);
    tm_tensor *c = tm_contiguous(x);
    const float *d = c ? tm_data(c) : NULL;
    if (!d) {
        tm_free(c);
        return tm__relabel_error(__func__, tm_last_status());
    }
    tm_tensor *ti = tm_empty((int64_t[]){k}, 1, TM_I64);
    tm_tensor *tv = tm_empty((int64_t[]){k}, 1, TM_F32);
    tm_status st = (!ti || !tv) ? tm_last_status() : TM_OK;
    if (!st) st = tm__topk_select(d, n, k, tm_data(ti), tm_data(tv));
    tm_free(c);
    if (st) {
        tm_free(ti);
        tm_free(tv);
        return tm__relabel_error(__func__, st);
    }
    *indices = ti;
    *values = tv;
    return TM_OK;
}
