/*
 * dequant_x86_bytes.h — the byte-vector operations dequant_tmpl.h needs,
 * over SSE registers (16 quantized values at a time), shared by the AVX2
 * and AVX-512 dequantizers, which differ only in how wide they emit
 * floats.  Include after <immintrin.h>, in an x86-64 file.
 */
#ifndef FOUNDRY_DEQUANT_X86_BYTES_H
#define FOUNDRY_DEQUANT_X86_BYTES_H

#include <stdint.h>

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

#endif
