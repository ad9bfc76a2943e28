/* dequant_avx2.c — AVX2 dequantizers of the weight formats (dequant_tmpl.h
 * over SSE byte vectors, 8 floats per AVX register). */
#if defined(__x86_64__)
#include "dequant_simd.h"

#include <immintrin.h>

#include "dequant_x86_bytes.h"

static inline void emit_s(float *y, B16 b, float d)
{
    const __m256 vd = _mm256_set1_ps(d);
    const __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    const __m256 c =
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)));
    _mm256_storeu_ps(y, _mm256_mul_ps(a, vd));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(c, vd));
}

static inline void emit_u_add(float *y, B16 b, float d, float m)
{
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    const __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
    const __m256 c =
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)));
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_mul_ps(a, vd), vm));
    _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_mul_ps(c, vd), vm));
}

static inline void emit_u_sub(float *y, B16 b, float d, float m)
{
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    const __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
    const __m256 c =
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)));
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(a, vd), vm));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(c, vd), vm));
}

#define DQ_FAM avx2
#include "dequant_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
