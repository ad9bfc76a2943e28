/* qact_neon.c — the activation quantizers (Q8_0, Q8_1, Q8_K) with NEON,
 * byte-identical to the references in quantize/quant_ref.c: the same F32
 * operations per value, vrndaq (roundf's half away from zero) for Q8_0 /
 * Q8_1 and vrndnq (ties to even, ggml's nearest_int) for Q8_K, and any
 * block holding a non-finite value handed to the reference whole. */
#include "qact.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <float.h>
#include <math.h>

/* max |x| over 4n values; false when one is not finite. */
static inline bool absmax_finite(const float *x, int n4, float *amax)
{
    float32x4_t m = vdupq_n_f32(0.0f);
    uint32x4_t ok = vdupq_n_u32(~0u);
    for (int i = 0; i < n4; i++) {
        float32x4_t a = vabsq_f32(vld1q_f32(x + 4 * i));
        ok = vandq_u32(ok, vcleq_f32(a, vdupq_n_f32(FLT_MAX)));
        m = vmaxq_f32(m, a);
    }
    *amax = vmaxvq_f32(m);
    return vminvq_u32(ok) == ~0u;
}

/* 4 values scaled by id, rounded half away, clamped to +-127, as i32. */
static inline int32x4_t round_q8(const float *x, float id)
{
    float32x4_t v = vrndaq_f32(vmulq_n_f32(vld1q_f32(x), id));
    v = vminq_f32(vmaxq_f32(v, vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f));
    return vcvtq_s32_f32(v);
}

/* 16 i32 -> 16 bytes (values already in range). */
static inline int8x16_t narrow16(int32x4_t a, int32x4_t b, int32x4_t c,
                                 int32x4_t d)
{
    int16x8_t ab = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
    int16x8_t cd = vcombine_s16(vmovn_s32(c), vmovn_s32(d));
    return vcombine_s8(vmovn_s16(ab), vmovn_s16(cd));
}

static inline float q8_block(const float *x, int8_t *qs, int32_t *sum,
                             float amax)
{
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    int32x4_t q[8];
    for (int i = 0; i < 8; i++) q[i] = round_q8(x + 4 * i, id);
    vst1q_s8(qs, narrow16(q[0], q[1], q[2], q[3]));
    vst1q_s8(qs + 16, narrow16(q[4], q[5], q[6], q[7]));
    int32x4_t s = vdupq_n_s32(0);
    for (int i = 0; i < 8; i++) s = vaddq_s32(s, q[i]);
    *sum = vaddvq_s32(s);
    return d;
}

void tm__qact_q8_0_neon(const float *x, void *dst, int64_t n)
{
    tm__block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / TM__QK; b++, x += TM__QK) {
        float amax;
        int32_t sum;
        if (!absmax_finite(x, 8, &amax)) {
            tm__qtraits_of(TM_Q8_0)->quantize_ref(x, &y[b], TM__QK);
            continue;
        }
        y[b].d = tm__f32_to_half(q8_block(x, y[b].qs, &sum, amax));
    }
}

void tm__qact_q8_1_neon(const float *x, void *dst, int64_t n)
{
    tm__block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / TM__QK; b++, x += TM__QK) {
        float amax;
        int32_t sum;
        if (!absmax_finite(x, 8, &amax)) {
            tm__qtraits_of(TM_Q8_1)->quantize_ref(x, &y[b], TM__QK);
            continue;
        }
        const float d = q8_block(x, y[b].qs, &sum, amax);
        y[b].d = tm__f32_to_half(d);
        y[b].s = tm__f32_to_half((float)sum * d);
    }
}

void tm__qact_q8_k_neon(const float *x, void *dst, int64_t n)
{
    tm__block_q8_K *y = dst;
    for (int64_t b = 0; b < n / TM__QK_K; b++, x += TM__QK_K) {
        float amax;
        if (!absmax_finite(x, 64, &amax) || !amax) {
            tm__qtraits_of(TM_Q8_K)->quantize_ref(x, &y[b], TM__QK_K);
            continue;
        }
        /* the first value of largest magnitude, with its sign */
        float max = 0.0f;
        for (int j = 0; j < TM__QK_K; j++)
            if (fabsf(x[j]) == amax) {
                max = x[j];
                break;
            }
        const float iscale = -127.f / max;
        for (int g = 0; g < 16; g++) {
            int32x4_t q[4];
            for (int i = 0; i < 4; i++) {
                float32x4_t v = vrndnq_f32(
                    vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * i), iscale));
                v = vminq_f32(vmaxq_f32(v, vdupq_n_f32(-128.0f)),
                              vdupq_n_f32(127.0f));
                q[i] = vcvtq_s32_f32(v);
            }
            vst1q_s8(y[b].qs + 16 * g, narrow16(q[0], q[1], q[2], q[3]));
            y[b].bsums[g] = (int16_t)vaddvq_s32(
                vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3])));
        }
        y[b].d = 1 / iscale;
    }
}
#endif
