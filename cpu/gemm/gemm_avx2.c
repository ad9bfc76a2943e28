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
#define GK_ROWS GM_ROWS6
#define GK_MR 6

#define GK_T float
#define GK_VEC __m256
#define GK_W 8
#define GK_S ps
#define GK_NAME gm_sgemm_avx2
#define GK_ROW gm_sgemm_avx2_row
#include "gemm_kernel_tmpl.h"
#undef GK_T
#undef GK_VEC
#undef GK_W
#undef GK_S
#undef GK_NAME
#undef GK_ROW

#define GK_T double
#define GK_VEC __m256d
#define GK_W 4
#define GK_S pd
#define GK_NAME gm_dgemm_avx2
#define GK_ROW gm_dgemm_avx2_row
#include "gemm_kernel_tmpl.h"

const tm__gemm_kernel tm__sgemm_avx2 = {
    "avx2", gm_sgemm_avx2, 6, 16, 960, 256, 512, gm_sgemm_avx2_row,
    tm__sgemm_row_bt_avx2};
const tm__gemm_kernel tm__dgemm_avx2 = {
    "avx2", gm_dgemm_avx2, 6, 8, 960, 256, 256, gm_dgemm_avx2_row, NULL};

#else
typedef int tm__unused_tu;
#endif
