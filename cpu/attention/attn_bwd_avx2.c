/*
 * attn_bwd_avx2.c — AVX2 versions of the attention backward's two
 * packing copies (attn_bwd.h): 8 x 8 blocks transposed in registers
 * instead of one strided element at a time.  Used by the AVX2 and
 * AVX-512 families; the copies are exact, so results are the same bits
 * as the portable loops'.
 */
#if defined(__x86_64__)
#include "attn_bwd.h"
#include "../transpose8_avx2.h"

#include <immintrin.h>

/* Columns c of the 8 x 8 block whose row r starts at src + r * ld, into
 * dst + c * ldd (8 contiguous floats each). */
static inline void tr8(const float *src, int64_t ld, float *dst, int64_t ldd)
{
    __m256 r[8];
    for (int u = 0; u < 8; u++) r[u] = _mm256_loadu_ps(src + u * ld);
    tm__transpose8_ps(r);
    for (int u = 0; u < 8; u++) _mm256_storeu_ps(dst + u * ldd, r[u]);
}

void tm__abwd_pack_a8_avx2(const float *src, int64_t ld, int64_t m,
                           int64_t k, float *dst)
{
    for (int64_t i = 0; i < m; i += 8) {
        int64_t rows = m - i < 8 ? m - i : 8, p = 0;
        float *d = dst + i * k;
        const float *s = src + i * ld;
        if (rows == 8)
            for (; p + 8 <= k; p += 8) tr8(s + p, ld, d + p * 8, 8);
        for (; p < k; p++)
            for (int64_t r = 0; r < 8; r++)
                d[p * 8 + r] = r < rows ? s[r * ld + p] : 0.0f;
    }
}

void tm__abwd_trans_avx2(const float *src, int64_t ld, int64_t n, int64_t k,
                         float *dst, int64_t ldd)
{
    for (int64_t c = 0; c < k; c++)
        for (int64_t j = n; j < ldd; j++) dst[c * ldd + j] = 0.0f;
    int64_t j0 = 0;
    for (; j0 + 8 <= n; j0 += 8) {
        int64_t c = 0;
        for (; c + 8 <= k; c += 8)
            tr8(src + j0 * ld + c, ld, dst + c * ldd + j0, ldd);
        for (; c < k; c++)
            for (int64_t j = j0; j < j0 + 8; j++)
                dst[c * ldd + j] = src[j * ld + c];
    }
    for (int64_t c = 0; c < k; c++)
        for (int64_t j = j0; j < n; j++) dst[c * ldd + j] = src[j * ld + c];
}

void tm__abwd_pack_at8_avx2(const float *src, int64_t ld, int64_t k,
                            int64_t m, float *dst)
{
    for (int64_t i = 0; i < m; i += 8) {
        int64_t rows = m - i < 8 ? m - i : 8;
        float *d = dst + i * k;
        if (rows == 8) {
            for (int64_t p = 0; p < k; p++)
                _mm256_storeu_ps(d + p * 8, _mm256_loadu_ps(src + p * ld + i));
            continue;
        }
        for (int64_t p = 0; p < k; p++)
            for (int64_t r = 0; r < 8; r++)
                d[p * 8 + r] = r < rows ? src[p * ld + i + r] : 0.0f;
    }
}

void tm__abwd_ds_avx2(const float *s, const float *z, float *dp, int64_t n,
                      float di, float scale)
{
    const __m256 vd = _mm256_set1_ps(di), vs = _mm256_set1_ps(scale);
    int64_t c = 0;
    if (z) {
        for (; c + 8 <= n; c += 8) {
            __m256 a = _mm256_mul_ps(_mm256_loadu_ps(z + c),
                                     _mm256_loadu_ps(dp + c));
            __m256 b = _mm256_mul_ps(_mm256_loadu_ps(s + c), vd);
            _mm256_storeu_ps(dp + c, _mm256_mul_ps(_mm256_sub_ps(a, b), vs));
        }
        for (; c < n; c++) dp[c] = (z[c] * dp[c] - s[c] * di) * scale;
        return;
    }
    for (; c + 8 <= n; c += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(dp + c), vd);
        __m256 a = _mm256_mul_ps(_mm256_loadu_ps(s + c), d);
        _mm256_storeu_ps(dp + c, _mm256_mul_ps(a, vs));
    }
    for (; c < n; c++) dp[c] = s[c] * (dp[c] - di) * scale;
}

void tm__abwd_sub_avx2(float *x, int64_t n, float l)
{
    const __m256 vl = _mm256_set1_ps(l);
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(x + c, _mm256_sub_ps(_mm256_loadu_ps(x + c), vl));
    for (; c < n; c++) x[c] -= l;
}

#else
typedef int tm__unused_tu;
#endif
