/*
 * quant_ref.c — reference quantizers and dequantizers of the 32-value
 * formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q8_1) and of Q8_K, in plain F32
 * C.  The quantizers round exactly as ggml's reference ones do (same
 * expressions, same order, no fused multiply-add: the build forces
 * -ffp-contract=off), so their bytes are ggml's for every finite input.
 *
 * Non-finite inputs must not reach a float-to-integer conversion (that
 * is undefined behaviour): every conversion clamps first, which changes
 * nothing for finite inputs (their scaled values already lie in range)
 * and turns NaN into 0.
 */
#include "quant_impl.h"

#include <math.h>
#include <string.h>

/* (int)v for v clamped to [0, hi]; NaN gives 0.  Equals ggml's
 * MIN(hi, (int8_t)v) for the v in [0, 127] finite inputs produce. */
static inline int trunc_clamp(float v, int hi)
{
    if (!(v > 0.0f)) return 0;
    if (v > (float)hi) return hi;
    return (int)v;
}

/* roundf(v) clamped to [-127, 127] (NaN gives 0), as an int. */
static inline int round_q8(float v)
{
    if (!(v == v)) return 0;
    float r = roundf(v);
    if (r > 127.0f) return 127;
    if (r < -127.0f) return -127;
    return (int)r;
}

/* Round to nearest, ties to even, by ggml's float trick (exact for
 * |v| < 2^22); values outside that range (only from non-finite or absurd
 * inputs) are clamped by the callers. */
static inline int nearest_int(float v)
{
    if (!(fabsf(v) <= 4194303.0f)) return v > 0 ? 4194303 : -4194303;
    float val = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* The value of largest magnitude (the first one on ties) of 32 values. */
static inline float signed_absmax(const float *x, int n, float *amax_out)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        float v = x[j];
        if (amax < fabsf(v)) {
            amax = fabsf(v);
            max = v;
        }
    }
    if (amax_out) *amax_out = amax;
    return max;
}

/* ------------------------------------------------------------ Q8_0 */

void tm__quantize_row_q8_0_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / TM__QK; i++, x += TM__QK) {
        float amax = 0.0f;
        for (int j = 0; j < TM__QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tm__f32_to_half(d);
        for (int j = 0; j < TM__QK; j++)
            y[i].qs[j] = (int8_t)round_q8(x[j] * id);
    }
}

void tm__dequantize_row_q8_0_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q8_0 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        for (int j = 0; j < TM__QK; j++) y[j] = x[i].qs[j] * d;
    }
}

/* ------------------------------------------------------------ Q4_0 */

void tm__quantize_row_q4_0_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q4_0 *y = dst;
    for (int64_t i = 0; i < n / TM__QK; i++, x += TM__QK) {
        const float max = signed_absmax(x, TM__QK, NULL);
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tm__f32_to_half(d);
        for (int j = 0; j < TM__QK / 2; j++) {
            const float x0 = x[j] * id;
            const float x1 = x[TM__QK / 2 + j] * id;
            const int q0 = trunc_clamp(x0 + 8.5f, 15);
            const int q1 = trunc_clamp(x1 + 8.5f, 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void tm__dequantize_row_q4_0_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q4_0 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        for (int j = 0; j < TM__QK / 2; j++) {
            const int x0 = (x[i].qs[j] & 0x0F) - 8;
            const int x1 = (x[i].qs[j] >> 4) - 8;
            y[j] = x0 * d;
            y[j + TM__QK / 2] = x1 * d;
        }
    }
}

/* ------------------------------------------------------------ Q4_1 */

static inline void min_max(const float *x, int n, float *mn, float *mx)
{
    float min = 3.402823466e+38f, max = -3.402823466e+38f;
    for (int j = 0; j < n; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    *mn = min;
    *mx = max;
}

void tm__quantize_row_q4_1_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / TM__QK; i++, x += TM__QK) {
        float min, max;
        min_max(x, TM__QK, &min, &max);
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tm__f32_to_half(d);
        y[i].m = tm__f32_to_half(min);
        for (int j = 0; j < TM__QK / 2; j++) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[TM__QK / 2 + j] - min) * id;
            const int q0 = trunc_clamp(x0 + 0.5f, 15);
            const int q1 = trunc_clamp(x1 + 0.5f, 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void tm__dequantize_row_q4_1_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q4_1 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const float m = tm__half_to_f32(x[i].m);
        for (int j = 0; j < TM__QK / 2; j++) {
            const int x0 = x[i].qs[j] & 0x0F;
            const int x1 = x[i].qs[j] >> 4;
            y[j] = x0 * d + m;
            y[j + TM__QK / 2] = x1 * d + m;
        }
    }
}

/* ------------------------------------------------------------ Q5_0 */

void tm__quantize_row_q5_0_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / TM__QK; i++, x += TM__QK) {
        const float max = signed_absmax(x, TM__QK, NULL);
        const float d = max / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tm__f32_to_half(d);
        uint32_t qh = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            const float x0 = x[j] * id;
            const float x1 = x[TM__QK / 2 + j] * id;
            const uint32_t q0 = (uint32_t)trunc_clamp(x0 + 16.5f, 31);
            const uint32_t q1 = (uint32_t)trunc_clamp(x1 + 16.5f, 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | (q1 & 0x0F) << 4);
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + TM__QK / 2);
        }
        for (int b = 0; b < 4; b++) y[i].qh[b] = (uint8_t)(qh >> (8 * b));
    }
}

static inline uint32_t load_qh(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
           (uint32_t)qh[3] << 24;
}

void tm__dequantize_row_q5_0_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q5_0 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < TM__QK / 2; j++) {
            const int h0 = (int)((qh >> j) << 4 & 0x10);
            const int h1 = (int)((qh >> (j + 12)) & 0x10);
            const int x0 = ((x[i].qs[j] & 0x0F) | h0) - 16;
            const int x1 = ((x[i].qs[j] >> 4) | h1) - 16;
            y[j] = x0 * d;
            y[j + TM__QK / 2] = x1 * d;
        }
    }
}

/* ------------------------------------------------------------ Q5_1 */

void tm__quantize_row_q5_1_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / TM__QK; i++, x += TM__QK) {
        float min, max;
        min_max(x, TM__QK, &min, &max);
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tm__f32_to_half(d);
        y[i].m = tm__f32_to_half(min);
        uint32_t qh = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[TM__QK / 2 + j] - min) * id;
            const uint32_t q0 = (uint32_t)trunc_clamp(x0 + 0.5f, 31);
            const uint32_t q1 = (uint32_t)trunc_clamp(x1 + 0.5f, 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | (q1 & 0x0F) << 4);
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + TM__QK / 2);
        }
        for (int b = 0; b < 4; b++) y[i].qh[b] = (uint8_t)(qh >> (8 * b));
    }
}

void tm__dequantize_row_q5_1_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q5_1 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const float m = tm__half_to_f32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < TM__QK / 2; j++) {
            const int h0 = (int)((qh >> j) << 4 & 0x10);
            const int h1 = (int)((qh >> (j + 12)) & 0x10);
            const int x0 = (x[i].qs[j] & 0x0F) | h0;
            const int x1 = (x[i].qs[j] >> 4) | h1;
            y[j] = x0 * d + m;
            y[j + TM__QK / 2] = x1 * d + m;
        }
    }
}

/* ------------------------------------------------------------ Q8_1 */

void tm__quantize_row_q8_1_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / TM__QK; i++, x += TM__QK) {
        float amax = 0.0f;
        for (int j = 0; j < TM__QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tm__f32_to_half(d);
        int sum = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            const float v0 = x[j] * id;
            const float v1 = x[TM__QK / 2 + j] * id;
            y[i].qs[j] = (int8_t)round_q8(v0);
            y[i].qs[TM__QK / 2 + j] = (int8_t)round_q8(v1);
            sum += y[i].qs[j];
            sum += y[i].qs[TM__QK / 2 + j];
        }
        y[i].s = tm__f32_to_half((float)sum * d);
    }
}

void tm__dequantize_row_q8_1_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q8_1 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        for (int j = 0; j < TM__QK; j++) y[j] = x[i].qs[j] * d;
    }
}

/* ------------------------------------------------------------ Q8_K */

/* ggml scales by -127 / max (max the signed value of largest magnitude),
 * so the extreme value maps to -127 and the others round to nearest even;
 * an all-zero block is all zeros (ggml leaves bsums unwritten there: we
 * write zeros). */
void tm__quantize_row_q8_k_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q8_K *y = dst;
    for (int64_t i = 0; i < n / TM__QK_K; i++, x += TM__QK_K) {
        float amax;
        const float max = signed_absmax(x, TM__QK_K, &amax);
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < TM__QK_K; j++) {
            int v = nearest_int(iscale * x[j]);
            if (v > 127) v = 127;
            if (v < -128) v = -128;
            y[i].qs[j] = (int8_t)v;
        }
        for (int j = 0; j < TM__QK_K / 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += y[i].qs[j * 16 + k];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

void tm__dequantize_row_q8_k_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q8_K *x = src;
    for (int64_t i = 0; i < n / TM__QK_K; i++, y += TM__QK_K) {
        float d;
        memcpy(&d, &x[i].d, sizeof d);
        for (int j = 0; j < TM__QK_K; j++) y[j] = d * x[i].qs[j];
    }
}
