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

#define GM_P(op) _mm512_##op
#define GK_ROWS GM_ROWS8
#define GK_MR 8

#define GK_T float
#define GK_VEC __m512
#define GK_W 16
#define GK_S ps
#define GK_NAME gm_sgemm_avx512
#define GK_ROW gm_sgemm_avx512_row
#include "gemm_kernel_tmpl.h"
#undef GK_T
#undef GK_VEC
#undef GK_W
#undef GK_S
#undef GK_NAME
#undef GK_ROW

#define GK_T double
#define GK_VEC __m512d
#define GK_W 8
#define GK_S pd
#define GK_NAME gm_dgemm_avx512
#define GK_ROW gm_dgemm_avx512_row
#include "gemm_kernel_tmpl.h"

const tm__gemm_kernel tm__sgemm_avx512 = {
    "avx512", gm_sgemm_avx512, 8, 32, 960, 384, 512, gm_sgemm_avx512_row,
    tm__sgemm_row_bt_avx2};
const tm__gemm_kernel tm__dgemm_avx512 = {
    "avx512", gm_dgemm_avx512, 8, 16, 960, 256, 384, gm_dgemm_avx512_row,
    NULL};

#else
typedef int tm__unused_tu;
#endif
