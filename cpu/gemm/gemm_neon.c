/* gemm_neon.c — NEON (aarch64) F32 GEMM micro-kernel: MR x NR = 8 x 12,
 * the C tile in 24 q-register accumulators (three vectors of 4 columns per
 * row); per depth step three B vectors and two A vectors are loaded, and
 * 24 FMAs take the A values by lane.  Interface and summation order:
 * gemm_impl.h. */
#if defined(__aarch64__)
#include "gemm_impl.h"

#include <arm_neon.h>

#define MR 8
#define NR 12

#define GM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

static void gm_sgemm_neon(int64_t kc, const void *av, const void *bv,
                          int64_t ldb, void *cv, int64_t ldc, double alpha,
                          double beta)
{
    const float *a = av, *b = bv;
    float *c = cv;
#define GM_DECL(r) float32x4_t c##r##0 = vdupq_n_f32(0), \
                   c##r##1 = vdupq_n_f32(0), c##r##2 = vdupq_n_f32(0);
    GM_ROWS(GM_DECL)
#undef GM_DECL
    for (int64_t p = 0; p < kc; p++, a += MR, b += ldb) {
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4),
                          b2 = vld1q_f32(b + 8);
        const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
#define GM_FMA(r, av_, lane)                                                  \
    c##r##0 = vfmaq_laneq_f32(c##r##0, b0, av_, lane);                        \
    c##r##1 = vfmaq_laneq_f32(c##r##1, b1, av_, lane);                        \
    c##r##2 = vfmaq_laneq_f32(c##r##2, b2, av_, lane);
        GM_FMA(0, a0, 0) GM_FMA(1, a0, 1) GM_FMA(2, a0, 2) GM_FMA(3, a0, 3)
        GM_FMA(4, a1, 0) GM_FMA(5, a1, 1) GM_FMA(6, a1, 2) GM_FMA(7, a1, 3)
#undef GM_FMA
    }
    const float al = (float)alpha, be = (float)beta;
    if (be == 0) {
#define GM_STORE0(r)                                                          \
    vst1q_f32(c + r * ldc, vmulq_n_f32(c##r##0, al));                         \
    vst1q_f32(c + r * ldc + 4, vmulq_n_f32(c##r##1, al));                     \
    vst1q_f32(c + r * ldc + 8, vmulq_n_f32(c##r##2, al));
        GM_ROWS(GM_STORE0)
#undef GM_STORE0
    } else {
#define GM_ST(r, j)                                                           \
    vst1q_f32(c + r * ldc + 4 * j,                                            \
              vaddq_f32(vmulq_n_f32(c##r##j, al),                             \
                        vmulq_n_f32(vld1q_f32(c + r * ldc + 4 * j), be)));
#define GM_STORE(r) GM_ST(r, 0) GM_ST(r, 1) GM_ST(r, 2)
        GM_ROWS(GM_STORE)
#undef GM_STORE
#undef GM_ST
    }
}

const tm__gemm_kernel tm__sgemm_neon = {
    "neon", gm_sgemm_neon, MR, NR, 512, 256, 480, NULL, NULL};

#else
typedef int tm__unused_tu;
#endif
