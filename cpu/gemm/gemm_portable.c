/* gemm_portable.c — portable C GEMM micro-kernels (F32 and F64), used on
 * any CPU and for every F64 GEMM.  Written so that the compiler can keep
 * the accumulator tile in vector registers of the baseline ISA (SSE2 on
 * x86-64, NEON on aarch64): fixed tile sizes, restrict, constant loops.
 * No fused multiply-add (-ffp-contract=off): each product is rounded, then
 * added.  Interface and summation order: gemm_impl.h. */
#include "gemm_impl.h"

#define GM_PORTABLE_UKR(NAME, T, MR, NR)                                      \
    static void NAME(int64_t kc, const void *av, const void *bv,           \
                     int64_t ldb, void *cv, int64_t ldc, double alpha,       \
                     double beta)                                            \
    {                                                                         \
        const T *restrict a = av;                                              \
        const T *restrict b = bv;                                              \
        T *c = cv;                                                             \
        T acc[MR][NR];                                                         \
        for (int r = 0; r < MR; r++)                                           \
            for (int j = 0; j < NR; j++) acc[r][j] = 0;                        \
        for (int64_t p = 0; p < kc; p++, a += MR, b += ldb)                    \
            for (int r = 0; r < MR; r++) {                                     \
                const T x = a[r];                                              \
                for (int j = 0; j < NR; j++) acc[r][j] += x * b[j];            \
            }                                                                  \
        const T al = (T)alpha, be = (T)beta;                                   \
        for (int r = 0; r < MR; r++)                                           \
            for (int j = 0; j < NR; j++) {                                     \
                T v = al * acc[r][j];                                          \
                if (be != 0) v = v + be * c[r * ldc + j];                      \
                c[r * ldc + j] = v;                                            \
            }                                                                  \
    }

GM_PORTABLE_UKR(gm_sgemm_portable_4x8, float, 4, 8)
GM_PORTABLE_UKR(gm_dgemm_portable_4x4, double, 4, 4)

const tm__gemm_kernel tm__sgemm_portable = {
    "portable", gm_sgemm_portable_4x8, 4, 8, 256, 256, 512, NULL};
const tm__gemm_kernel tm__dgemm_portable = {
    "portable", gm_dgemm_portable_4x4, 4, 4, 256, 256, 512, NULL};
