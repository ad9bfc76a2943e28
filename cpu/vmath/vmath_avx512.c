/* vmath_avx512.c — AVX-512 (F, DQ) family of vmath.h: 16 floats per
 * vector, instantiating vmath_tmpl.h. */
#if defined(__x86_64__)
#include "vmath.h"

#include <immintrin.h>
#include <math.h>

#define TMV_FAM avx512
#define TMV_W 16
typedef __m512 V;
typedef __m512i VI;
typedef __mmask16 M;

#define V_SET(c) _mm512_set1_ps(c)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MIN(a, b) _mm512_min_ps(a, b)
/* max/min return their second operand when either is NaN */
#define V_CLAMP(x, lo, hi) _mm512_min_ps(hi, _mm512_max_ps(lo, x))
#define V_ABS(x) _mm512_abs_ps(x)
#define V_ASI(x) _mm512_castps_si512(x)
#define I_ASV(u) _mm512_castsi512_ps(u)
#define V_SIGNXOR(r, x)                                                       \
    I_ASV(_mm512_xor_si512(V_ASI(r), _mm512_and_si512(                        \
        V_ASI(x), _mm512_set1_epi32((int)0x80000000u))))
#define M_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define M_GE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)
#define M_EQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define M_NAN(x) _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)
#define V_SEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define I_SET(c) _mm512_set1_epi32(c)
#define I_ADD(a, b) _mm512_add_epi32(a, b)
#define I_SUB(a, b) _mm512_sub_epi32(a, b)
#define I_AND(a, b) _mm512_and_si512(a, b)
#define I_OR(a, b) _mm512_or_si512(a, b)
#define I_SRA1(a) _mm512_srai_epi32(a, 1)
#define I_SRL23(a) _mm512_srli_epi32(a, 23)
#define I_SLL23(a) _mm512_slli_epi32(a, 23)
#define I_TOF(a) _mm512_cvtepi32_ps(a)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)

static inline void tmv_dd_split(__m512d d0, __m512d d1, V *hi, V *lo)
{
    __m256 h0 = _mm512_cvtpd_ps(d0), h1 = _mm512_cvtpd_ps(d1);
    __m256 l0 = _mm512_cvtpd_ps(_mm512_sub_pd(d0, _mm512_cvtps_pd(h0)));
    __m256 l1 = _mm512_cvtpd_ps(_mm512_sub_pd(d1, _mm512_cvtps_pd(h1)));
    *hi = _mm512_insertf32x8(_mm512_castps256_ps512(h0), h1, 1);
    *lo = _mm512_insertf32x8(_mm512_castps256_ps512(l0), l1, 1);
}

static inline __m512d tmv_qsub_pd(__m256 q, __m256 a)
{
    __m512d ad = _mm512_cvtps_pd(a);
    return _mm512_fnmadd_pd(_mm512_mul_pd(_mm512_set1_pd(0.5), ad), ad,
                            _mm512_cvtps_pd(q));
}

static inline void tmv_dd_qsub(V q, V a, V *hi, V *lo)
{
    tmv_dd_split(tmv_qsub_pd(_mm512_castps512_ps256(q),
                             _mm512_castps512_ps256(a)),
                 tmv_qsub_pd(_mm512_extractf32x8_ps(q, 1),
                             _mm512_extractf32x8_ps(a, 1)),
                 hi, lo);
}

static inline __m512d tmv_gt_pd(__m256 x)
{
    __m512d xd = _mm512_cvtps_pd(x);
    __m512d w = _mm512_mul_pd(
        xd, _mm512_fmadd_pd(_mm512_set1_pd(-0.07135481627260025),
                            _mm512_mul_pd(xd, xd),
                            _mm512_set1_pd(-1.5957691216057308)));
    return _mm512_min_pd(_mm512_set1_pd(200.0),
                         _mm512_max_pd(_mm512_set1_pd(-200.0), w));
}

static inline void tmv_dd_gt(V x, V *hi, V *lo)
{
    tmv_dd_split(tmv_gt_pd(_mm512_castps512_ps256(x)),
                 tmv_gt_pd(_mm512_extractf32x8_ps(x, 1)), hi, lo);
}

#include "vmath_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
