/* vmath_neon.c — NEON (aarch64 Advanced SIMD) family of vmath.h: 4 floats
 * per vector, instantiating vmath_tmpl.h. */
#if defined(__aarch64__)
#include "vmath.h"

#include <arm_neon.h>
#include <math.h>

#define TMV_FAM neon
#define TMV_W 4
typedef float32x4_t V;
typedef int32x4_t VI;
typedef uint32x4_t M;

#define V_SET(c) vdupq_n_f32(c)
#define V_ADD(a, b) vaddq_f32(a, b)
#define V_SUB(a, b) vsubq_f32(a, b)
#define V_MUL(a, b) vmulq_f32(a, b)
#define V_DIV(a, b) vdivq_f32(a, b)
#define V_FMA(a, b, c) vfmaq_f32(c, a, b)
#define V_MIN(a, b) vminq_f32(a, b)
#define V_CLAMP(x, lo, hi) vminq_f32(vmaxq_f32(x, lo), hi) /* NaN stays */
#define V_ABS(x) vabsq_f32(x)
#define V_ASI(x) vreinterpretq_s32_f32(x)
#define I_ASV(u) vreinterpretq_f32_s32(u)
#define V_SIGNXOR(r, x)                                                       \
    vreinterpretq_f32_u32(veorq_u32(                                          \
        vreinterpretq_u32_f32(r),                                             \
        vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))))
#define M_LT(a, b) vcltq_f32(a, b)
#define M_GE(a, b) vcgeq_f32(a, b)
#define M_EQ(a, b) vceqq_f32(a, b)
#define M_NAN(x) vmvnq_u32(vceqq_f32(x, x))
#define V_SEL(m, a, b) vbslq_f32(m, a, b)
#define I_SET(c) vdupq_n_s32(c)
#define I_ADD(a, b) vaddq_s32(a, b)
#define I_SUB(a, b) vsubq_s32(a, b)
#define I_AND(a, b) vandq_s32(a, b)
#define I_OR(a, b) vorrq_s32(a, b)
#define I_SRA1(a) vshrq_n_s32(a, 1)
#define I_SRL23(a)                                                            \
    vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(a), 23))
#define I_SLL23(a) vshlq_n_s32(a, 23)
#define I_TOF(a) vcvtq_f32_s32(a)
#define V_LOAD(p) vld1q_f32(p)
#define V_STORE(p, v) vst1q_f32(p, v)

static inline void tmv_dd_split(float64x2_t d0, float64x2_t d1, V *hi,
                                V *lo)
{
    float32x2_t h0 = vcvt_f32_f64(d0), h1 = vcvt_f32_f64(d1);
    float32x2_t l0 = vcvt_f32_f64(vsubq_f64(d0, vcvt_f64_f32(h0)));
    float32x2_t l1 = vcvt_f32_f64(vsubq_f64(d1, vcvt_f64_f32(h1)));
    *hi = vcombine_f32(h0, h1);
    *lo = vcombine_f32(l0, l1);
}

static inline float64x2_t tmv_qsub_pd(float32x2_t q, float32x2_t a)
{
    float64x2_t ad = vcvt_f64_f32(a);
    return vfmsq_f64(vcvt_f64_f32(q), vmulq_n_f64(ad, 0.5), ad);
}

static inline void tmv_dd_qsub(V q, V a, V *hi, V *lo)
{
    tmv_dd_split(tmv_qsub_pd(vget_low_f32(q), vget_low_f32(a)),
                 tmv_qsub_pd(vget_high_f32(q), vget_high_f32(a)), hi, lo);
}

static inline float64x2_t tmv_gt_pd(float32x2_t x)
{
    float64x2_t xd = vcvt_f64_f32(x);
    float64x2_t w = vmulq_f64(
        xd, vfmaq_f64(vdupq_n_f64(-1.5957691216057308),
                      vdupq_n_f64(-0.07135481627260025), vmulq_f64(xd, xd)));
    return vminq_f64(vmaxq_f64(w, vdupq_n_f64(-200.0)),
                     vdupq_n_f64(200.0));
}

static inline void tmv_dd_gt(V x, V *hi, V *lo)
{
    tmv_dd_split(tmv_gt_pd(vget_low_f32(x)), tmv_gt_pd(vget_high_f32(x)),
                 hi, lo);
}

#include "vmath_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
