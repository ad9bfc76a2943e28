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
#include "../transpose8_avx2.h"

#include <immintrin.h>
#include <math.h>

/* acc + the products of p..p+7 for the 8 columns at bj, in increasing p. */
static inline __m256 bt_step8(__m256 acc, const float *a, const float *bj, int64_t ldb,
                              int64_t p)
{
    __m256 r[8];
    for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(bj + q * ldb + p);
    tm__transpose8_ps(r);
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
