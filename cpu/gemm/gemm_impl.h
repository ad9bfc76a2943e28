/* gemm_impl.h — the interface between the GEMM driver (gemm.c) and its
 * register-blocked micro-kernels (gemm_portable.c, gemm_avx2.c,
 * gemm_avx512.c, gemm_neon.c).
 *
 * A micro-kernel multiplies one packed MR x kc panel of A (element [r, p] at
 * a[p * MR + r]) by one kc x NR panel of B (element [p, j] at b[p * ldb +
 * j]: packed, ldb = NR and 64-byte aligned, or read in place from a
 * row-major B) into an MR x NR tile of C that is row-major with row
 * stride ldc (elements) and unit column stride:
 *     C = alpha * (A·B) + beta * C      (beta == 0: C is not read)
 * Every element's sum starts from 0 and adds one product per p, in
 * increasing p (an FMA per product in the SIMD kernels, a multiply and an
 * add in the portable ones); the merge is computed as
 * (alpha * sum) + (beta * c), two products and one sum, so the driver's own
 * merge of a staged edge tile (gemm.c) gives the same bits.
 */
#ifndef FOUNDRY_GEMM_IMPL_H
#define FOUNDRY_GEMM_IMPL_H

#include "../../tensor/core/tensor_impl.h"

typedef void (*tm__gemm_ukr)(int64_t kc, const void *a, const void *b,
                             int64_t ldb, void *c, int64_t ldc, double alpha,
                             double beta);

/* One row of the tile: row r of a packed panel (a = panel + r elements,
 * element p at a[p * MR]) times the same B panel into one row of C, with
 * the same per-element order of operations as the full kernel (so the
 * same bits).  Used for the few rows of a ragged row edge (and for
 * vector-times-matrix), where running the full MR-row kernel on padding
 * would cost MR times the work. */
typedef void (*tm__gemm_ukr_row)(int64_t kc, const void *a, const void *b,
                                 int64_t ldb, void *c, double alpha,
                                 double beta);

/* A few rows of C (F32) against a column-major B read in place (element
 * [p, j] at b[j * ldb + p]): one row c[j * scn], j < n, of one K block,
 * c = alpha * sum + beta * c (beta == 0: c not read), with the per-element
 * order and merge of the tile kernels, so the same bits. */
typedef void (*tm__gemm_row_bt)(int64_t kc, const float *a, const float *b,
                                int64_t ldb, int64_t n, float *c, int64_t scn,
                                float alpha, float beta);

typedef struct tm__gemm_kernel {
    const char *name;
    tm__gemm_ukr ukr;
    int mr, nr;     /* register tile */
    int64_t mc;     /* rows of A packed at once (multiple of mr) */
    int64_t kc;     /* depth of a packed block */
    int64_t nc;     /* columns of B packed at once (multiple of nr): L2 */
    tm__gemm_ukr_row ukr_row; /* NULL: ragged rows go through a staged tile */
    tm__gemm_row_bt row_bt;   /* F32 only; NULL: small M packs B as usual */
} tm__gemm_kernel;

/* Portable C kernels (always present). */
extern const tm__gemm_kernel tm__sgemm_portable, tm__dgemm_portable;
#if defined(__x86_64__)
extern const tm__gemm_kernel tm__sgemm_avx2, tm__sgemm_avx512;
extern const tm__gemm_kernel tm__dgemm_avx2, tm__dgemm_avx512;
void tm__sgemm_row_bt_avx2(int64_t kc, const float *a, const float *b,
                           int64_t ldb, int64_t n, float *c, int64_t scn,
                           float alpha, float beta);
#endif
#if defined(__aarch64__)
extern const tm__gemm_kernel tm__sgemm_neon;
#endif

/* C = alpha * A·B + beta * C for F32 / F64 buffers of the backend's gemm
 * entry (same dtype, batch dims equal, broadcast ones stride 0), with the
 * kernel family in use (tm__cpu_isa). */
tm_status tm__gemm_float(const tm_buf *c, const tm_buf *a, const tm_buf *b,
                         double alpha, double beta);

#endif
