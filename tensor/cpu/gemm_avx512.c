/* gemm_avx512.c — AVX-512 GEMM micro-kernels.
 * F32: MR x NR = 8 x 32, the C tile in 16 zmm accumulators (two vectors of
 * 16 columns per row); per depth step two B vectors are loaded and 8 A
 * values broadcast, 16 FMAs.  Measured against 12 x 32 (24 accumulators):
 * as fast for large n, 15% faster at n = 64 (no ragged row panel when M is
 * a multiple of 8).  F64: 8 x 16, the same shape with 8 doubles a vector.
 * Blocks (gemm.c): an A panel (8 x KC = 12 KiB for F32) stays in L1, the
 * packed B block (KC x NC = 768 KiB) in L2; KC in 256..512 and NC in
 * 256..1024 measured, 384 / 512 best.
 * Interface and summation order: gemm_impl.h. */
#if defined(__x86_64__)
#include "gemm_impl.h"

#include <immintrin.h>

#define GM_ROWS8(X, A, B) X(0, A, B) X(1, A, B) X(2, A, B) X(3, A, B) \
    X(4, A, B) X(5, A, B) X(6, A, B) X(7, A, B)

/* C tile of MR_ rows x two vectors: T elements, VEC vectors of W lanes,
 * intrinsics suffix S (ps / pd). */
#define GM_KERNEL(NAME, MR_, T, VEC, W, S)                                    \
    static void NAME(int64_t kc, const void *av, const void *bv,           \
                     int64_t ldb, void *cv, int64_t ldc, double alpha,       \
                     double beta)                                            \
    {                                                                         \
        const T *a = av, *b = bv;                                              \
        T *c = cv;                                                             \
        GM_ROWS##MR_(GM_DECL, VEC, S)                                          \
        for (int64_t p = 0; p < kc; p++, a += MR_, b += ldb) {                \
            const VEC b0 = _mm512_loadu_##S(b), b1 = _mm512_loadu_##S(b + W);  \
            GM_ROWS##MR_(GM_FMA, VEC, S)                                       \
        }                                                                     \
        const VEC al = _mm512_set1_##S((T)alpha);                              \
        const VEC be = _mm512_set1_##S((T)beta);                               \
        if ((T)beta == 0) {                                                   \
            GM_ROWS##MR_(GM_STORE0, W, S)                                      \
        } else {                                                              \
            GM_ROWS##MR_(GM_STORE, W, S)                                       \
        }                                                                     \
    }

#define GM_DECL(r, VEC, S)                                                    \
    VEC c##r##0 = _mm512_setzero_##S(), c##r##1 = _mm512_setzero_##S();
#define GM_FMA(r, VEC, S)                                                     \
    {                                                                         \
        const VEC x = _mm512_set1_##S(a[r]);                                   \
        c##r##0 = _mm512_fmadd_##S(x, b0, c##r##0);                            \
        c##r##1 = _mm512_fmadd_##S(x, b1, c##r##1);                            \
    }
#define GM_STORE0(r, W, S)                                                    \
    _mm512_storeu_##S(c + r * ldc, _mm512_mul_##S(al, c##r##0));             \
    _mm512_storeu_##S(c + r * ldc + W, _mm512_mul_##S(al, c##r##1));
#define GM_STORE(r, W, S)                                                     \
    _mm512_storeu_##S(c + r * ldc,                                            \
                    _mm512_add_##S(_mm512_mul_##S(al, c##r##0),             \
                                 _mm512_mul_##S(be, _mm512_loadu_##S(       \
                                                    c + r * ldc))));          \
    _mm512_storeu_##S(c + r * ldc + W,                                        \
                    _mm512_add_##S(_mm512_mul_##S(al, c##r##1),             \
                                 _mm512_mul_##S(be, _mm512_loadu_##S(       \
                                                    c + r * ldc + W))));

GM_KERNEL(gm_sgemm_avx512, 8, float, __m512, 16, ps)
GM_KERNEL(gm_dgemm_avx512, 8, double, __m512d, 8, pd)

const tm__gemm_kernel tm__sgemm_avx512 = {
    "avx512", gm_sgemm_avx512, 8, 32, 960, 384, 512};
const tm__gemm_kernel tm__dgemm_avx512 = {
    "avx512", gm_dgemm_avx512, 8, 16, 960, 256, 384};

#else
typedef int tm__unused_tu;
#endif
