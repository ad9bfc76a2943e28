/* gemm_avx2.c — AVX2+FMA GEMM micro-kernels.
 * F32: MR x NR = 6 x 16, the C tile in 12 ymm accumulators (two vectors of
 * 8 columns per row); per depth step two B vectors are loaded and 6 A
 * values broadcast, 12 FMAs.  F64: 6 x 8, the same shape with 4 doubles a
 * vector.  Interface and summation order: gemm_impl.h. */
#if defined(__x86_64__)
#include "gemm_impl.h"

#include <immintrin.h>

#define GM_ROWS6(X, A, B) X(0, A, B) X(1, A, B) X(2, A, B) X(3, A, B) \
    X(4, A, B) X(5, A, B)

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
            const VEC b0 = _mm256_loadu_##S(b), b1 = _mm256_loadu_##S(b + W);  \
            GM_ROWS##MR_(GM_FMA, VEC, S)                                       \
        }                                                                     \
        const VEC al = _mm256_set1_##S((T)alpha);                              \
        const VEC be = _mm256_set1_##S((T)beta);                               \
        if ((T)beta == 0) {                                                   \
            GM_ROWS##MR_(GM_STORE0, W, S)                                      \
        } else {                                                              \
            GM_ROWS##MR_(GM_STORE, W, S)                                       \
        }                                                                     \
    }

#define GM_DECL(r, VEC, S)                                                    \
    VEC c##r##0 = _mm256_setzero_##S(), c##r##1 = _mm256_setzero_##S();
#define GM_FMA(r, VEC, S)                                                     \
    {                                                                         \
        const VEC x = _mm256_set1_##S(a[r]);                                   \
        c##r##0 = _mm256_fmadd_##S(x, b0, c##r##0);                            \
        c##r##1 = _mm256_fmadd_##S(x, b1, c##r##1);                            \
    }
#define GM_STORE0(r, W, S)                                                    \
    _mm256_storeu_##S(c + r * ldc, _mm256_mul_##S(al, c##r##0));             \
    _mm256_storeu_##S(c + r * ldc + W, _mm256_mul_##S(al, c##r##1));
#define GM_STORE(r, W, S)                                                     \
    _mm256_storeu_##S(c + r * ldc,                                            \
                    _mm256_add_##S(_mm256_mul_##S(al, c##r##0),             \
                                 _mm256_mul_##S(be, _mm256_loadu_##S(       \
                                                    c + r * ldc))));          \
    _mm256_storeu_##S(c + r * ldc + W,                                        \
                    _mm256_add_##S(_mm256_mul_##S(al, c##r##1),             \
                                 _mm256_mul_##S(be, _mm256_loadu_##S(       \
                                                    c + r * ldc + W))));

GM_KERNEL(gm_sgemm_avx2, 6, float, __m256, 8, ps)
GM_KERNEL(gm_dgemm_avx2, 6, double, __m256d, 4, pd)

const tm__gemm_kernel tm__sgemm_avx2 = {
    "avx2", gm_sgemm_avx2, 6, 16, 960, 256, 512};
const tm__gemm_kernel tm__dgemm_avx2 = {
    "avx2", gm_dgemm_avx2, 6, 8, 960, 256, 256};

#else
typedef int tm__unused_tu;
#endif
