/* topk.c — exact TopK by magnitude (compress.h): a threshold estimated
 * from a sample, one threaded pass collecting the entries above it, and
 * an exact radix select among those; a radix select over everything when
 * the sample misjudged.  Keys are the IEEE bits of |x| as uint32, which
 * order non-negative floats and put NaN above infinity. */
#include "compress.h"

#include "foundry/swarm.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
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

/* The k-th largest key of v[0..n) (1 <= k <= n) and, in *above, how
 * many keys are larger: two 16-bit histogram passes. */
static uint32_t kth_key(const float *v, int64_t n, int64_t k, uint32_t *h,
                        int64_t *above)
{
    uint32_t hi = 0;
    int64_t larger = 0;
    for (int pass = 0; pass < 2; pass++) {
        memset(h, 0, 65536 * sizeof *h);
        if (pass == 0)
            for (int64_t i = 0; i < n; i++) h[key_of(v[i]) >> 16]++;
        else
            for (int64_t i = 0; i < n; i++) {
                uint32_t kk = key_of(v[i]);
                if ((kk >> 16) == hi) h[kk & 0xffff]++;
            }
        int64_t acc = 0;
        int b = 65535;
        for (; b > 0; b--) {
            if (acc + h[b] >= k) break;
            acc += h[b];
        }
        k -= acc;
        larger += acc;
        hi = pass == 0 ? (uint32_t)b : hi << 16 | (uint32_t)b;
    }
    *above = larger;
    return hi;
}

/* The collect pass: part p writes the positions and values of its
 * entries with key >= thr to idx/val + cap_part * p. */
typedef struct collect_job {
    const float *x;
    int64_t n, cap_part;
    uint32_t thr;
    int64_t *idx, *count;
    float *val;
    atomic_bool overflow;
} collect_job;

/* Blocks of 16 are tested first with a loop the compiler vectorizes:
 * most hold no candidate.  The raw key |x| bits stands in for key_of:
 * thr <= NAN_KEY, so raw >= thr exactly when key_of >= thr, and both are
 * below 2^31, so a signed compare is exact. */
enum { BLOCK = 16 };

static void collect_part(int part, int nparts, void *ctx)
{
    collect_job *j = ctx;
    int64_t b = j->n * part / nparts, e = j->n * (part + 1) / nparts;
    int64_t *oi = j->idx + j->cap_part * part, c = 0, cap = j->cap_part;
    float *ov = j->val + j->cap_part * part;
    const float *x = j->x;
    const int32_t thr1 = (int32_t)j->thr - 1;
    for (int64_t i = b; i < e; i += BLOCK) {
        int64_t m = e - i < BLOCK ? e - i : BLOCK;
        if (m == BLOCK) {
            int32_t any = 0;
            for (int t = 0; t < BLOCK; t++) {
                int32_t u;
                memcpy(&u, &x[i + t], 4);
                any |= (u & 0x7fffffff) > thr1;
            }
            if (!any) continue;
            if (c + BLOCK <= cap) {
                /* branch-free: every entry is written, the count moves
                 * only past candidates */
                for (int t = 0; t < BLOCK; t++) {
                    int32_t u;
                    memcpy(&u, &x[i + t], 4);
                    oi[c] = i + t;
                    ov[c] = x[i + t];
                    c += (u & 0x7fffffff) > thr1;
                }
                continue;
            }
        }
        for (int64_t t = i; t < i + m; t++) {
            int32_t u;
            memcpy(&u, &x[t], 4);
            if ((u & 0x7fffffff) > thr1) {
                if (c == cap) {
                    atomic_store(&j->overflow, true);
                    j->count[part] = c;
                    return;
                }
                oi[c] = t;
                ov[c++] = x[t];
            }
        }
    }
    j->count[part] = c;
}

/* Writes the k largest of v[0..nc) in order: keys above kth (`above` of
 * them), then ties at kth from the first.  Positions are pos[i], or i
 * when pos is NULL (v is all of x). */
static void emit(const float *v, const int64_t *pos, int64_t nc, int64_t k,
                 uint32_t kth, int64_t above, int64_t *idx, float *val)
{
    int64_t ties = k - above, o = 0;
    for (int64_t i = 0; i < nc && o < k; i++) {
        uint32_t kk = key_of(v[i]);
        if (kk > kth || (kk == kth && ties-- > 0)) {
            idx[o] = pos ? pos[i] : i;
            val[o++] = v[i];
        }
    }
}

/* Exact selection over all of x. */
static void select_all(const float *x, int64_t n, int64_t k, uint32_t *h,
                       int64_t *idx, float *val)
{
    int64_t above;
    uint32_t kth = kth_key(x, n, k, h, &above);
    emit(x, NULL, n, k, kth, above, idx, val);
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
        select_all(x, n, k, h, idx, val);
        tm__dealloc(h);
        return TM_OK;
    }
    /* The threshold: the rank-th largest of a strided sample, rank the
     * sample's expected count above the k-th largest of x plus four
     * standard deviations and 8.  The candidates then come out a little
     * over k (1.4k at 1%, 2.5k at 0.1%), and on data in no
     * particular order fall short of k, which sends us to the exact
     * select over everything, in well under one call in 10^4. */
    int64_t S = n / 4 < 16384 ? n / 4 : 16384, stride = n / S;
    float *sample = tm__alloc((size_t)S * 4, __func__);
    if (!sample) {
        tm__dealloc(h);
        return TM_ENOMEM;
    }
    for (int64_t i = 0; i < S; i++) sample[i] = x[i * stride];
    double mu = (double)k / (double)n * (double)S;
    double want = mu + 4 * sqrt(mu) + 8;
    int64_t rank = want >= (double)S ? S : (int64_t)want + 1, unused;
    uint32_t thr = kth_key(sample, S, rank, h, &unused);
    tm__dealloc(sample);
    int nparts = tm_get_num_threads();
    if (nparts < 1) nparts = 1;
    if (nparts > 64) nparts = 64;
    /* room for twice the expected candidates, and at least 4k */
    double expect = (double)rank / (double)S * (double)n;
    int64_t cap = 4 * k + 4096 * (int64_t)nparts;
    if (2 * expect + 4096.0 * nparts > (double)cap)
        cap = (int64_t)(2 * expect) + 4096 * (int64_t)nparts;
    if (cap > n + 64 * (int64_t)nparts) cap = n + 64 * (int64_t)nparts;
    /* positions and values side by side: what follows reads the
     * candidates in order instead of gathering from x */
    int64_t *ci = tm__alloc((size_t)cap * 8, __func__);
    float *cv = ci ? tm__alloc((size_t)cap * 4, __func__) : NULL;
    if (!cv) {
        tm__dealloc(ci);
        tm__dealloc(h);
        return TM_ENOMEM;
    }
    int64_t count[64];
    collect_job j = {x, n, cap / nparts, thr, ci, count, cv, false};
    tm__parallel_parts(nparts, collect_part, &j);
    int64_t nc = 0;
    for (int p = 0; p < nparts; p++) nc += count[p];
    if (atomic_load(&j.overflow) || nc < k) {
        /* the sample misjudged: select over everything */
        select_all(x, n, k, h, idx, val);
    } else {
        /* make the candidates contiguous, in index order */
        int64_t o = count[0];
        for (int p = 1; p < nparts; p++) {
            memmove(ci + o, ci + j.cap_part * p, (size_t)count[p] * 8);
            memmove(cv + o, cv + j.cap_part * p, (size_t)count[p] * 4);
            o += count[p];
        }
        int64_t above;
        uint32_t kth = kth_key(cv, nc, k, h, &above);
        emit(cv, ci, nc, k, kth, above, idx, val);
    }
    tm__dealloc(cv);
    tm__dealloc(ci);
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
