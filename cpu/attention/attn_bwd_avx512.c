/*
 * attn_bwd_avx512.c — the attention backward's tile GEMM on AVX-512
 * (tm__abwd_gemm for the tm__sgemm_avx512 family): the same 8 x 32
 * register tile, packing layouts and per-element order of operations as
 * that micro-kernel (so the same bits), with the loops here so the kernel
 * is inlined, and an epilogue per (alpha, beta) case: four of the five
 * tile GEMMs accumulate (alpha = beta = 1), where the generic epilogue
 * spends two multiplies by 1 per C vector (3% of its time at depth 64);
 * and two that fold the next element step into the stores (the scores'
 * "- lse", dS from dP), saving a pass over the tile.
 */
#if defined(__x86_64__)
#include "attn_bwd.h"

#include <immintrin.h>

#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

#define DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0;
#define FMA(r)                                                                \
    {                                                                         \
        const __m512 x = _mm512_set1_ps(a[r]);                                \
        c##r##0 = _mm512_fmadd_ps(x, b0, c##r##0);                            \
        c##r##1 = _mm512_fmadd_ps(x, b1, c##r##1);                            \
    }
/* mode 0: C = alpha * acc; 1: C += acc; 2: C = alpha * acc + beta * C;
 * 3: C = alpha * acc - rv[r] (scores less the row's lse); 4: C = S (acc -
 * rv[r]) alpha (dS from dP, S the weights at sp, D_i in rv): the
 * operations of tm__abwd_weights' and tm__abwd_ds's loops, in order. */
#define STORE(r)                                                              \
    {                                                                         \
        float *cr = c + r * ldc;                                              \
        if (mode == 0) {                                                      \
            _mm512_storeu_ps(cr, _mm512_mul_ps(al, c##r##0));                 \
            _mm512_storeu_ps(cr + 16, _mm512_mul_ps(al, c##r##1));            \
        } else if (mode == 1) {                                               \
            const __m512 o0 = _mm512_loadu_ps(cr);                            \
            const __m512 o1 = _mm512_loadu_ps(cr + 16);                       \
            _mm512_storeu_ps(cr, _mm512_add_ps(c##r##0, o0));                 \
            _mm512_storeu_ps(cr + 16, _mm512_add_ps(c##r##1, o1));            \
        } else if (mode == 3) {                                               \
            const __m512 l = _mm512_set1_ps(rv[r]);                           \
            _mm512_storeu_ps(cr,                                              \
                             _mm512_sub_ps(_mm512_mul_ps(al, c##r##0), l));   \
            _mm512_storeu_ps(cr + 16,                                         \
                             _mm512_sub_ps(_mm512_mul_ps(al, c##r##1), l));   \
        } else if (mode == 4) {                                               \
            const __m512 di = _mm512_set1_ps(rv[r]);                          \
            const float *sr = sp + r * ldc;                                   \
            _mm512_storeu_ps(                                                 \
                cr, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(sr),          \
                                                _mm512_sub_ps(c##r##0, di)),  \
                                  al));                                       \
            _mm512_storeu_ps(                                                 \
                cr + 16,                                                      \
                _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(sr + 16),         \
                                            _mm512_sub_ps(c##r##1, di)),      \
                              al));                                           \
        } else {                                                              \
            _mm512_storeu_ps(                                                 \
                cr, _mm512_add_ps(_mm512_mul_ps(al, c##r##0),                 \
                                  _mm512_mul_ps(be, _mm512_loadu_ps(cr))));   \
            _mm512_storeu_ps(                                                 \
                cr + 16,                                                      \
                _mm512_add_ps(_mm512_mul_ps(al, c##r##1),                     \
                              _mm512_mul_ps(be, _mm512_loadu_ps(cr + 16))));  \
        }                                                                     \
    }

static inline __attribute__((always_inline)) void
ukr(int mode, int64_t kc, const float *a, const float *b, int64_t ldb,
    float *c, int64_t ldc, __m512 al, __m512 be, const float *rv,
    const float *sp)
{
    ROWS8(DECL)
    for (int64_t p = 0; p < kc; p++, a += 8, b += ldb) {
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
        ROWS8(FMA)
    }
    ROWS8(STORE)
}

static inline __attribute__((always_inline)) void
gemm(int mode, int64_t m, int64_t n, int64_t kc, const float *a,
     const float *b, int64_t ldb, float *c, int64_t ldc, float alpha,
     float beta, const float *rv, const float *sp, tm__abwd_pf *pf)
{
    const __m512 al = _mm512_set1_ps(alpha), be = _mm512_set1_ps(beta);
    for (int64_t j = 0; j < n; j += 32)
        for (int64_t i = 0; i < m; i += 8) {
            ukr(mode, kc, a + i * kc, b + j, ldb, c + i * ldc + j, ldc, al,
                be, rv ? rv + i : NULL, sp ? sp + i * ldc + j : NULL);
            if (pf) tm__abwd_pf_step(pf, 8);
        }
}

void tm__abwd_gemm_avx512(int64_t m, int64_t n, int64_t kc, const float *a,
                          const float *b, int64_t ldb, float *c, int64_t ldc,
                          float alpha, float beta, tm__abwd_pf *pf)
{
    if (beta == 0.0f)
        gemm(0, m, n, kc, a, b, ldb, c, ldc, alpha, beta, NULL, NULL, pf);
    else if (alpha == 1.0f && beta == 1.0f)
        gemm(1, m, n, kc, a, b, ldb, c, ldc, alpha, beta, NULL, NULL, pf);
    else
        gemm(2, m, n, kc, a, b, ldb, c, ldc, alpha, beta, NULL, NULL, pf);
}

void tm__abwd_ukr_avx512(int64_t kc, const float *a, const float *b,
                         int64_t ldb, float *c, int64_t ldc, float alpha,
                         float beta, const float *rv, const float *s)
{
    const __m512 al = _mm512_set1_ps(alpha), be = _mm512_set1_ps(beta);
    if (rv)
        ukr(4, kc, a, b, ldb, c, ldc, al, be, rv, s);
    else if (beta == 0.0f)
        ukr(0, kc, a, b, ldb, c, ldc, al, be, NULL, NULL);
    else if (alpha == 1.0f && beta == 1.0f)
        ukr(1, kc, a, b, ldb, c, ldc, al, be, NULL, NULL);
    else
        ukr(2, kc, a, b, ldb, c, ldc, al, be, NULL, NULL);
}

void tm__abwd_gemm_sub_avx512(int64_t m, int64_t n, int64_t kc,
                              const float *a, const float *b, int64_t ldb,
                              float *c, int64_t ldc, float alpha,
                              const float *l, tm__abwd_pf *pf)
{
    gemm(3, m, n, kc, a, b, ldb, c, ldc, alpha, 0.0f, l, NULL, pf);
}

void tm__abwd_gemm_ds_avx512(int64_t m, int64_t n, int64_t kc,
                             const float *a, const float *b, int64_t ldb,
                             float *c, int64_t ldc, float scale,
                             const float *di, const float *s,
                             tm__abwd_pf *pf)
{
    gemm(4, m, n, kc, a, b, ldb, c, ldc, scale, 0.0f, di, s, pf);
}

#else
typedef int tm__unused_tu;
#endif
