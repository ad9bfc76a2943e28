/* vmath_avx2.c — AVX2 + FMA family of vmath.h: 8 floats per vector,
 * instantiating vmath_tmpl.h. */
#if defined(__x86_64__)
#include "vmath.h"

#include <immintrin.h>
#include <math.h>

#define TMV_FAM avx2
#define TMV_W 8
typedef __m256 V;
typedef __m256i VI;
typedef __m256 M;

#define V_SET(c) _mm256_set1_ps(c)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MIN(a, b) _mm256_min_ps(a, b)
/* max/min return their second operand when either is NaN */
#define V_CLAMP(x, lo, hi) _mm256_min_ps(hi, _mm256_max_ps(lo, x))
#define V_ASI(x) _mm256_castps_si256(x)
#define I_ASV(u) _mm256_castsi256_ps(u)
#define TMV_SIGN _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u))
#define V_ABS(x) _mm256_andnot_ps(TMV_SIGN, x)
#define V_SIGNXOR(r, x) _mm256_xor_ps(r, _mm256_and_ps(x, TMV_SIGN))
#define M_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define M_GE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define M_EQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define M_NAN(x) _mm256_cmp_ps(x, x, _CMP_UNORD_Q)
#define V_SEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define I_SET(c) _mm256_set1_epi32(c)
#define I_ADD(a, b) _mm256_add_epi32(a, b)
#define I_SUB(a, b) _mm256_sub_epi32(a, b)
#define I_AND(a, b) _mm256_and_si256(a, b)
#define I_OR(a, b) _mm256_or_si256(a, b)
#define I_SRA1(a) _mm256_srai_epi32(a, 1)
#define I_SRL23(a) _mm256_srli_epi32(a, 23)
#define I_SLL23(a) _mm256_slli_epi32(a, 23)
#define I_TOF(a) _mm256_cvtepi32_ps(a)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)

static inline void tmv_dd_split(__m256d d0, __m256d d1, V *hi, V *lo)
{
    __m128 h0 = _mm256_cvtpd_ps(d0), h1 = _mm256_cvtpd_ps(d1);
    __m128 l0 = _mm256_cvtpd_ps(_mm256_sub_pd(d0, _mm256_cvtps_pd(h0)));
    __m128 l1 = _mm256_cvtpd_ps(_mm256_sub_pd(d1, _mm256_cvtps_pd(h1)));
    *hi = _mm256_insertf128_ps(_mm256_castps128_ps256(h0), h1, 1);
    *lo = _mm256_insertf128_ps(_mm256_castps128_ps256(l0), l1, 1);
}

static inline __m256d tmv_qsub_pd(__m128 q, __m128 a)
{
    __m256d ad = _mm256_cvtps_pd(a);
    return _mm256_fnmadd_pd(_mm256_mul_pd(_mm256_set1_pd(0.5), ad), ad,
                            _mm256_cvtps_pd(q));
}

static inline void tmv_dd_qsub(V q, V a, V *hi, V *lo)
{
    tmv_dd_split(tmv_qsub_pd(_mm256_castps256_ps128(q),
                             _mm256_castps256_ps128(a)),
                 tmv_qsub_pd(_mm256_extractf128_ps(q, 1),
                             _mm256_extractf128_ps(a, 1)),
                 hi, lo);
}

static inline __m256d tmv_gt_pd(__m128 x)
{
    __m256d xd = _mm256_cvtps_pd(x);
    __m256d w = _mm256_mul_pd(
        xd, _mm256_fmadd_pd(_mm256_set1_pd(-0.07135481627260025),
                            _mm256_mul_pd(xd, xd),
                            _mm256_set1_pd(-1.5957691216057308)));
    return _mm256_min_pd(_mm256_set1_pd(200.0),
                         _mm256_max_pd(_mm256_set1_pd(-200.0), w));
}

static inline void tmv_dd_gt(V x, V *hi, V *lo)
{
    tmv_dd_split(tmv_gt_pd(_mm256_castps256_ps128(x)),
                 tmv_gt_pd(_mm256_extractf128_ps(x, 1)), hi, lo);
}

#include "vmath_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
