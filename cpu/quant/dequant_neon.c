/* dequant_neon.c — NEON dequantizers of the weight formats (dequant_tmpl.h
 * over 16-byte vectors, 4 floats per register).  AArch64's vector F32
 * arithmetic is IEEE (no flush to zero by default), so it matches the
 * scalar reference bit for bit. */
#if defined(__aarch64__)
#include "dequant_simd.h"

#include <arm_neon.h>

typedef uint8x16_t B16;
#define B_LOAD(p) vld1q_u8((const uint8_t *)(const void *)(p))
#define B_SET(c) vdupq_n_u8((uint8_t)(c))
#define B_AND(a, b) vandq_u8(a, b)
#define B_OR(a, b) vorrq_u8(a, b)
#define B_SUB(a, b) vsubq_u8(a, b)
#define B_SHR(a, n) vshlq_u8(a, vdupq_n_s8((int8_t)-(n)))
#define B_MUL16(a) vshlq_n_u8(a, 4)

static inline B16 B_BITS(uint8_t lo, uint8_t hi)
{
    static const uint8_t bits[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                     1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v = vcombine_u8(vdup_n_u8(lo), vdup_n_u8(hi));
    return vandq_u8(vtstq_u8(v, vld1q_u8(bits)), vdupq_n_u8(0x10));
}

static inline void emit_s(float *y, B16 b, float d)
{
    const int8x16_t s = vreinterpretq_s8_u8(b);
    const int16x8_t lo = vmovl_s8(vget_low_s8(s)), hi = vmovl_s8(vget_high_s8(s));
    const float32x4_t vd = vdupq_n_f32(d);
    vst1q_f32(y + 0, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vd));
    vst1q_f32(y + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), vd));
    vst1q_f32(y + 8, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vd));
    vst1q_f32(y + 12, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), vd));
}

static inline void u8_to_f32x4(B16 b, float32x4_t out[4])
{
    const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_u8(vget_high_u8(b));
    out[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)));
    out[1] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo)));
    out[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)));
    out[3] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi)));
}

static inline void emit_u_add(float *y, B16 b, float d, float m)
{
    float32x4_t v[4];
    u8_to_f32x4(b, v);
    const float32x4_t vd = vdupq_n_f32(d), vm = vdupq_n_f32(m);
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vaddq_f32(vmulq_f32(v[k], vd), vm));
}

static inline void emit_u_sub(float *y, B16 b, float d, float m)
{
    float32x4_t v[4];
    u8_to_f32x4(b, v);
    const float32x4_t vd = vdupq_n_f32(d), vm = vdupq_n_f32(m);
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vsubq_f32(vmulq_f32(v[k], vd), vm));
}

#define DQ_FAM neon
#include "dequant_tmpl.h"

#else
typedef int tm__unused_tu;
#endif
