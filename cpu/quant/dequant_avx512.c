/* dequant_avx512.c — AVX-512 dequantizers of the weight formats (dequant_tmpl.h
 * over SSE byte vectors, 16 floats per AVX-512 register). */
#if defined(__x86_64__)
#include "dequant_simd.h"

#include <immintrin.h>

#include "dequant_x86_bytes.h"

static inline void emit_s(float *y, B16 b, float d)
{
    const __m512 a = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    _mm512_storeu_ps(y, _mm512_mul_ps(a, _mm512_set1_ps(d)));
}

static inline void emit_u_add(float *y, B16 b, float d, float m)
{
    const __m512 a = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
    _mm512_storeu_ps(y, _mm512_add_ps(_mm512_mul_ps(a, _mm512_set1_ps(d)),
                                      _mm512_set1_ps(m)));
}

static inline void emit_u_sub(float *y, B16 b, float d, float m)
{
    const __m512 a = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
    _mm512_storeu_ps(y, _mm512_sub_ps(_mm512_mul_ps(a, _mm512_set1_ps(d)),
                                      _mm512_set1_ps(m)));
}

#define DQ_FAM avx512
#include "dequant_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
