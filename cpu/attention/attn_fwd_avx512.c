/* attn_fwd_avx512.c — the AVX-512 family of the tiled attention forward's
 * micro-kernels: 16 floats a vector; register blocks of 4 rows x 4
 * vectors (16 zmm accumulators, 4 loaded, 1 broadcast). */
#if defined(__x86_64__)
#include <immintrin.h>

#define AF_FAM avx512
#define AF_NAME "avx512"
#define AF_W 16
#define AF_R 4
#define AF_NV 4
#define AF_V __m512
#define AF_VI __m512i
#define AF_ZERO() _mm512_setzero_ps()
#define AF_SET1(x) _mm512_set1_ps(x)
#define AF_LOAD(p) _mm512_loadu_ps(p)
#define AF_STORE(p, v) _mm512_storeu_ps(p, v)
#define AF_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define AF_MUL(a, b) _mm512_mul_ps(a, b)
#define AF_ADD(a, b) _mm512_add_ps(a, b)
#define AF_SUB(a, b) _mm512_sub_ps(a, b)
#define AF_MAX(a, b) _mm512_max_ps(a, b)
#define AF_CLAMP(x, lo, hi) _mm512_min_ps(hi, _mm512_max_ps(lo, x))
#define AF_HSUM(v) _mm512_reduce_add_ps(v)
#define AF_HMAX(v) _mm512_reduce_max_ps(v)
#define AF_ASI(x) _mm512_castps_si512(x)
#define AF_ASV(i) _mm512_castsi512_ps(i)
#define AF_ISET(c) _mm512_set1_epi32(c)
#define AF_IADD(a, b) _mm512_add_epi32(a, b)
#define AF_ISUB(a, b) _mm512_sub_epi32(a, b)
#define AF_ISRA1(a) _mm512_srai_epi32(a, 1)
#define AF_ISLL23(a) _mm512_slli_epi32(a, 23)
/* one instruction for the exp's 2^n scaling instead of nine (of ~22) */
#define AF_SCALE2N(p, n) _mm512_scalef_ps(p, n)
#include "attn_fwd_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
