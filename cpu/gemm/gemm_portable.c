/* gemm_portable.c — portable C GEMM micro-kernels (F32 and F64), used on
 * any CPU and for every F64 GEMM.  Written so that the compiler can keep
 * the accumulator tile in vector registers of the baseline ISA (SSE2 on
 * x86-64, NEON on aarch64): fixed tile sizes, restrict, constant loops.
 * No fused multiply-add (-ffp-contract=off): each product is rounded, then
 * added.  Interface and summation order: gemm_impl.h. */
#include "gemm_impl.h"

#define GP_NAME gm_sgemm_portable_4x8
#define GP_T float
#define GP_MR 4
#define GP_NR 8
#include "gemm_portable_tmpl.h"
#undef GP_NAME
#undef GP_T
#undef GP_MR
#undef GP_NR
#define GP_NAME gm_dgemm_portable_4x4
#define GP_T double
#define GP_MR 4
#define GP_NR 4
#include "gemm_portable_tmpl.h"
#undef GP_NAME
#undef GP_T
#undef GP_MR
#undef GP_NR

const tm__gemm_kernel tm__sgemm_portable = {
    "portable", gm_sgemm_portable_4x8, 4, 8, 256, 256, 512, NULL, NULL};
const tm__gemm_kernel tm__dgemm_portable = {
    "portable", gm_dgemm_portable_4x4, 4, 4, 256, 256, 512, NULL, NULL};
