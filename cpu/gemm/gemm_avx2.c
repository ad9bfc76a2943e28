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

#define GM_P(op) _mm256_##op
#include "gemm_kernel_tmpl.h"

GM_KERNEL(gm_sgemm_avx2, 6, float, __m256, 8, ps)
GM_KERNEL_ROW(gm_sgemm_avx2_row, 6, float, __m256, 8, ps)
GM_KERNEL_ROW(gm_dgemm_avx2_row, 6, double, __m256d, 4, pd)
GM_KERNEL(gm_dgemm_avx2, 6, double, __m256d, 4, pd)

const tm__gemm_kernel tm__sgemm_avx2 = {
    "avx2", gm_sgemm_avx2, 6, 16, 960, 256, 512, gm_sgemm_avx2_row};
const tm__gemm_kernel tm__dgemm_avx2 = {
    "avx2", gm_dgemm_avx2, 6, 8, 960, 256, 256, gm_dgemm_avx2_row};

#else
typedef int tm__unused_tu;
#endif
