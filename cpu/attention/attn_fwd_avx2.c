/* attn_fwd_avx2.c — the AVX2 + FMA family of the tiled attention
 * forward's micro-kernels: 8 floats a vector; register blocks of 4 rows x
 * 2 vectors (8 ymm accumulators of the 16 registers). */
#if defined(__x86_64__)
#include <immintrin.h>

static inline float af_hsum8(__m256 v)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_shuffle_ps(a, a, 1));
    return _mm_cvtss_f32(a);
}

static inline float af_hmax8(__m256 v)
{
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_shuffle_ps(a, a, 1));
    return _mm_cvtss_f32(a);
}

#define AF_FAM avx2
#define AF_NAME "avx2"
#define AF_W 8
#define AF_R 4
#define AF_NV 2
#define AF_V __m256
#define AF_VI __m256i
#define AF_ZERO() _mm256_setzero_ps()
#define AF_SET1(x) _mm256_set1_ps(x)
#define AF_LOAD(p) _mm256_loadu_ps(p)
#define AF_STORE(p, v) _mm256_storeu_ps(p, v)
#define AF_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define AF_MUL(a, b) _mm256_mul_ps(a, b)
#define AF_ADD(a, b) _mm256_add_ps(a, b)
#define AF_SUB(a, b) _mm256_sub_ps(a, b)
#define AF_MAX(a, b) _mm256_max_ps(a, b)
#define AF_CLAMP(x, lo, hi) _mm256_min_ps(hi, _mm256_max_ps(lo, x))
#define AF_HSUM(v) af_hsum8(v)
#define AF_HMAX(v) af_hmax8(v)
#define AF_ASI(x) _mm256_castps_si256(x)
#define AF_ASV(i) _mm256_castsi256_ps(i)
#define AF_ISET(c) _mm256_set1_epi32(c)
#define AF_IADD(a, b) _mm256_add_epi32(a, b)
#define AF_ISUB(a, b) _mm256_sub_epi32(a, b)
#define AF_ISRA1(a) _mm256_srai_epi32(a, 1)
#define AF_ISLL23(a) _mm256_slli_epi32(a, 23)
#include "attn_fwd_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
