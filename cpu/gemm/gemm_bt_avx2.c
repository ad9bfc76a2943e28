/* gemm_bt_avx2.c — a few rows of A times a column-major B (x · Wᵀ for a
 * row-major weight W [n, k]: decoding one token through a linear layer)
 * without packing B.  With one row of A, packing B costs as much memory
 * traffic as the product itself and dominated decoding (64% of the time
 * of a 4-layer d=256 model); here every element of B is read once, in
 * place.
 * Per 8 columns j..j+7: 8 rows of W (8 consecutive p each) are loaded and
 * transposed in registers, then one FMA per p in increasing p into one
 * accumulator per column: the same per-element order as the tile kernels
 * (gemm_impl.h), and the same merge, so the bits equal those of the
 * packed path.  Compiled with AVX2+FMA; the AVX-512 family uses it too.
 */
#if defined(__x86_64__)
#include "gemm_impl.h"

#include <immintrin.h>
#include <math.h>

/* r[u] lane q <- r[q] lane u. */
static inline void bt_transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* acc + the products of p..p+7 for the 8 columns at bj, in increasing p. */
static inline __m256 bt_step8(__m256 acc, const float *a, const float *bj, int64_t ldb,
                              int64_t p)
{
    __m256 r[8];
    for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(bj + q * ldb + p);
    bt_transpose8(r);
    for (int u = 0; u < 8; u++) acc = _mm256_fmadd_ps(_mm256_set1_ps(a[p + u]), r[u], acc);
    return acc;
}

/* The same for the single depth p. */
static inline __m256 bt_step1(__m256 acc, const float *a, const float *bj, int64_t ldb,
                              int64_t p)
{
    __m256 v = _mm256_set_ps(bj[7 * ldb + p], bj[6 * ldb + p], bj[5 * ldb + p],
                             bj[4 * ldb + p], bj[3 * ldb + p], bj[2 * ldb + p], bj[ldb + p],
                             bj[p]);
    return _mm256_fmadd_ps(_mm256_set1_ps(a[p]), v, acc);
}

/* c[j .. j+7] (column stride scn) <- alpha * acc (+ beta * c). */
static inline void bt_store(__m256 acc, float *c, int64_t scn, float alpha, float beta)
{
    __m256 out = _mm256_mul_ps(_mm256_set1_ps(alpha), acc);
    if (scn == 1) {
        if (beta != 0)
            out = _mm256_add_ps(out, _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c)));
        _mm256_storeu_ps(c, out);
        return;
    }
    float o[8];
    _mm256_storeu_ps(o, out);
    for (int q = 0; q < 8; q++) {
        float *cq = c + q * scn;
        *cq = beta != 0 ? o[q] + beta * *cq : o[q];
    }
}

/* c[j * scn], j < n: alpha * sum_p a[p] b[j * ldb + p] (+ beta * c).
 * One group of 8 columns at a time: two or four groups (more FMA chains,
 * more concurrent row streams) measured 50% and 40% slower. */
void tm__sgemm_row_bt_avx2(int64_t kc, const float *a, const float *b, int64_t ldb,
                           int64_t n, float *c, int64_t scn, float alpha, float beta)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const float *bj = b + j * ldb;
        __m256 acc = _mm256_setzero_ps();
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) acc = bt_step8(acc, a, bj, ldb, p);
        for (; p < kc; p++) acc = bt_step1(acc, a, bj, ldb, p);
        bt_store(acc, c + j * scn, scn, alpha, beta);
    }
    for (; j < n; j++) {
        const float *bj = b + j * ldb;
        float s = 0;
        for (int64_t p = 0; p < kc; p++) s = fmaf(a[p], bj[p], s);
        float *cj = c + j * scn;
        *cj = beta != 0 ? alpha * s + beta * *cj : alpha * s;
    }
}
#else
typedef int tm__unused_tu;
#endif
