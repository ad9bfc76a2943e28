/* attn_fwd_neon.c — the NEON family of the tiled attention forward's
 * micro-kernels: 4 floats a vector; register blocks of 4 rows x 4 vectors
 * (16 of the 32 q registers). */
#if defined(__aarch64__)
#include <arm_neon.h>

#define AF_FAM neon
#define AF_NAME "neon"
#define AF_W 4
#define AF_R 4
#define AF_NV 4
#define AF_V float32x4_t
#define AF_VI int32x4_t
#define AF_ZERO() vdupq_n_f32(0.0f)
#define AF_SET1(x) vdupq_n_f32(x)
#define AF_LOAD(p) vld1q_f32(p)
#define AF_STORE(p, v) vst1q_f32(p, v)
#define AF_FMA(a, b, c) vfmaq_f32(c, a, b)
#define AF_MUL(a, b) vmulq_f32(a, b)
#define AF_ADD(a, b) vaddq_f32(a, b)
#define AF_SUB(a, b) vsubq_f32(a, b)
#define AF_MAX(a, b) vmaxq_f32(a, b)
#define AF_CLAMP(x, lo, hi) vminq_f32(vmaxq_f32(x, lo), hi)
#define AF_HSUM(v) vaddvq_f32(v)
#define AF_HMAX(v) vmaxvq_f32(v)
#define AF_ASI(x) vreinterpretq_s32_f32(x)
#define AF_ASV(i) vreinterpretq_f32_s32(i)
#define AF_ISET(c) vdupq_n_s32(c)
#define AF_IADD(a, b) vaddq_s32(a, b)
#define AF_ISUB(a, b) vsubq_s32(a, b)
#define AF_ISRA1(a) vshrq_n_s32(a, 1)
#define AF_ISLL23(a) vshlq_n_s32(a, 23)
#include "attn_fwd_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
