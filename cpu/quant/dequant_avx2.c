/* dequant_avx2.c — AVX2 dequantizers of the weight formats (dequant_tmpl.h
 * over SSE byte vectors, 8 floats per AVX register). */
#if defined(__x86_64__)
#include "dequant_simd.h"

#include <immintrin.h>

typedef __m128i B16;
#define B_LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define B_SET(c) _mm_set1_epi8((char)(c))
#define B_AND(a, b) _mm_and_si128(a, b)
#define B_OR(a, b) _mm_or_si128(a, b)
#define B_SUB(a, b) _mm_sub_epi8(a, b)
#define B_SHR(a, n)                                                           \
    _mm_and_si128(_mm_srl_epi16(a, _mm_cvtsi32_si128(n)),                     \
                  _mm_set1_epi8((char)(0xFF >> (n))))
#define B_MUL16(a) _mm_slli_epi16(a, 4) /* bytes < 16: no carry across */

static inline B16 B_BITS(uint8_t lo, uint8_t hi)
{
    const __m128i sel = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1,
                                      1, 1, 1);
    const __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)128, 1,
                                      2, 4, 8, 16, 32, 64, (char)128);
    __m128i v = _mm_shuffle_epi8(_mm_cvtsi32_si128(lo | hi << 8), sel);
    v = _mm_cmpeq_epi8(_mm_and_si128(v, bit), bit);
    return _mm_and_si128(v, _mm_set1_epi8(0x10));
}

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
