/*
 * quant_ref_k.c — reference quantizers and dequantizers of the K-quants
 * (Q4_K, Q5_K, Q6_K: 256-value super-blocks of 32- or 16-value sub-blocks
 * with 6- or 8-bit sub-block scales).
 *
 * The dequantizers compute exactly ggml's expressions in F32, in ggml's
 * order ((d * sc) * q - (dmin * m)), so they are bit-identical to it.
 *
 * The quantizers are our own search, aimed at plain RMSE:
 *   1. per sub-block, a least-squares fit of (scale, offset) to the values
 *      for a grid of candidate inverse scales (the offset kept <= 0 for
 *      Q4_K/Q5_K, whose stored min is subtracted);
 *   2. the super-block scales d / dmin from the largest sub-block scale /
 *      min (Q6_K: a few candidate d's, the best by the exact error);
 *   3. the step where ggml loses accuracy: with d and dmin fixed (as
 *      halves), each sub-block re-picks its integer scale (and min) among
 *      the rounded ones and their neighbours, and its values, scoring
 *      every candidate by the exact error of what the dequantizer will
 *      produce.
 * Uniform weights: the target is RMSE, not ggml's importance weighting.
 * Wider searches (more candidate d's, +-2 neighbours) gain under 1% RMSE
 * for 4-6x the time; this is the knee.
 */
#include "quant_impl.h"

#include <math.h>
#include <string.h>

/* Round to nearest, ties to even (ggml's float trick), clamped. */
static inline int nearest_clamp(float v, int lo, int hi)
{
    if (!(v == v)) return lo > 0 ? lo : (hi < 0 ? hi : 0);
    if (v >= (float)hi) return hi;
    if (v <= (float)lo) return lo;
    float val = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static inline bool all_finite(const float *x, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

/* ----------------------------------------------------------- Q4_K, Q5_K */

static inline void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d,
                                    uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

static void pack_scale_min_k4(uint8_t scales[12], const uint8_t *ls,
                              const uint8_t *lm)
{
    memset(scales, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            scales[j - 0] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

/* Step 1 for one 32-value sub-block: x ~ scale * q + off, q in
 * [0, nmax], scale >= 0, off <= 0.  Returns scale, sets *off. */
static float fit_affine(const float *x, int n, int nmax, float *off)
{
    float min = x[0], max = x[0];
    float sum_x = 0, sum_x2 = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_x += x[i];
        sum_x2 += x[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        *off = min;
        return 0.0f;
    }
    float best_err = INFINITY, best_s = (max - min) / nmax, best_o = min;
    for (int is = -12; is <= 16; is++) {
        const float iscale = (nmax + 0.1f * (float)is) / (max - min);
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; i++) {
            const float l = (float)nearest_clamp(iscale * (x[i] - min), 0, nmax);
            sl += l;
            sl2 += l * l;
            sxl += l * x[i];
        }
        const float D = n * sl2 - sl * sl;
        if (!(D > 0)) continue;
        float s = (n * sxl - sum_x * sl) / D;
        float o = (sl2 * sum_x - sl * sxl) / D;
        if (o > 0) {
            o = 0;
            s = sxl / sl2;
        }
        if (!(s >= 0)) continue;
        /* sum (s l + o - x)^2, expanded: the fit is scored without a
         * second pass (rounding here only steers the search; step 3
         * scores exactly) */
        const float err = s * s * sl2 + 2 * s * o * sl - 2 * s * sxl +
                          n * o * o - 2 * o * sum_x + sum_x2;
        if (err < best_err) {
            best_err = err;
            best_s = s;
            best_o = o;
        }
    }
    *off = best_o;
    return best_s;
}

/* Step 3 for one sub-block: the integer scale / min near the rounded ones
 * and the values q that minimise the exact dequantized error, given the
 * super-block's D and M (F32 values of the stored halves).  Returns the
 * squared error; fills *ls, *lm, L[32]. */
static double refit_k4(const float *x, int nmax, float D, float M,
                       float scale, float off, uint8_t *ls, uint8_t *lm,
                       uint8_t *L)
{
    const int s0 = D > 0 ? nearest_clamp(scale / D, 0, 63) : 0;
    const int m0 = M > 0 ? nearest_clamp(-off / M, 0, 63) : 0;
    double best = INFINITY;
    for (int s = s0 - 1; s <= s0 + 1; s++) {
        if (s < 0 || s > 63) continue;
        for (int m = m0 - 1; m <= m0 + 1; m++) {
            if (m < 0 || m > 63) continue;
            const float ds = D * (float)s, dm = M * (float)m;
            /* a near-tie may round to the other neighbour through the
             * inverse; the error below is exact either way */
            const float ids = ds != 0.0f ? 1.0f / ds : 0.0f;
            uint8_t q[TM__QK];
            double err = 0;
            for (int i = 0; i < TM__QK; i++) {
                q[i] = (uint8_t)nearest_clamp((x[i] + dm) * ids, 0, nmax);
                const float y = ds * (float)q[i] - dm;
                const double e = (double)y - x[i];
                err += e * e;
                if (err >= best) break;
            }
            if (err < best) {
                best = err;
                *ls = (uint8_t)s;
                *lm = (uint8_t)m;
                memcpy(L, q, TM__QK);
            }
        }
    }
    return best;
}

/* One Q4_K / Q5_K super-block: fills d, dmin, scales and the 256 levels
 * L (0..nmax). */
static void quantize_k4_block(const float *x, int nmax, tm__half *d_out,
                              tm__half *dmin_out, uint8_t scales[12],
                              uint8_t L[TM__QK_K])
{
    float sc[8], off[8], max_scale = 0, max_min = 0;
    /* Non-finite values (from callers that skip the finiteness check)
     * give an all-zero block, defined; scales beyond a half's range give
     * ggml's infinite scale, which tm_quantize_rows reports. */
    *d_out = *dmin_out = 0;
    memset(scales, 0, 12);
    memset(L, 0, TM__QK_K);
    if (!all_finite(x, TM__QK_K)) return;
    for (int j = 0; j < 8; j++) {
        sc[j] = fit_affine(x + 32 * j, 32, nmax, &off[j]);
        if (sc[j] > max_scale) max_scale = sc[j];
        if (-off[j] > max_min) max_min = -off[j];
    }
    const tm__half hd = tm__f32_to_half(max_scale / 63.f);
    const tm__half hm = tm__f32_to_half(max_min / 63.f);
    const float D = tm__half_to_f32(hd), M = tm__half_to_f32(hm);
    uint8_t ls[8], lm[8], Lc[TM__QK_K];
    double err = 0;
    for (int j = 0; j < 8; j++)
        err += refit_k4(x + 32 * j, nmax, D, M, sc[j], off[j], &ls[j],
                        &lm[j], Lc + 32 * j);
    *d_out = hd;
    *dmin_out = hm;
    if (!(err < INFINITY)) return;
    pack_scale_min_k4(scales, ls, lm);
    memcpy(L, Lc, TM__QK_K);
}

void tm__quantize_row_q4_k_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q4_K *y = dst;
    uint8_t L[TM__QK_K];
    for (int64_t i = 0; i < n / TM__QK_K; i++, x += TM__QK_K) {
        quantize_k4_block(x, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < TM__QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; l++)
                q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void tm__quantize_row_q5_k_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q5_K *y = dst;
    uint8_t L[TM__QK_K];
    for (int64_t i = 0; i < n / TM__QK_K; i++, x += TM__QK_K) {
        quantize_k4_block(x, 31, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *ql = y[i].qs, *qh = y[i].qh;
        memset(qh, 0, TM__QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int b = 0; b < TM__QK_K; b += 64, ql += 32) {
            for (int j = 0; j < 32; j++) {
                int l1 = L[b + j], l2 = L[b + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}

void tm__dequantize_row_q4_k_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q4_K *x = src;
    for (int64_t i = 0; i < n / TM__QK_K; i++) {
        const uint8_t *q = x[i].qs;
        const float d = tm__half_to_f32(x[i].d);
        const float min = tm__half_to_f32(x[i].dmin);
        uint8_t sc, m;
        for (int j = 0, is = 0; j < TM__QK_K; j += 64, is += 2, q += 32) {
            get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void tm__dequantize_row_q5_k_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q5_K *x = src;
    for (int64_t i = 0; i < n / TM__QK_K; i++) {
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        const float d = tm__half_to_f32(x[i].d);
        const float min = tm__half_to_f32(x[i].dmin);
        uint8_t sc, m, u1 = 1, u2 = 2;
        for (int j = 0, is = 0; j < TM__QK_K; j += 64, is += 2, ql += 32) {
            get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            u1 = (uint8_t)(u1 << 2);
            u2 = (uint8_t)(u2 << 2);
        }
    }
}

/* ----------------------------------------------------------------- Q6_K */

/* Step 1 for one 16-value sub-block: x ~ scale * q, q in [-32, 31];
 * candidates map the extreme value to -32 or to +31 (either sign of
 * scale), each refined by least squares. */
static float fit_symmetric(const float *x, int n)
{
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    if (amax == 0) return 0.0f;
    double best_gain = -1, best_s = -max / 32;
    for (int side = 0; side < 2; side++) {
        for (int is = -10; is <= 10; is++) {
            const float top = side ? 31.0f + 0.1f * (float)is
                                   : -(32.0f + 0.1f * (float)is);
            const float iscale = top / max;
            double sxl = 0, sl2 = 0;
            for (int i = 0; i < n; i++) {
                const int l = nearest_clamp(iscale * x[i], -32, 31);
                sxl += (double)x[i] * l;
                sl2 += (double)l * l;
            }
            /* error = sum x^2 - sxl^2 / sl2 at the least-squares scale */
            if (sl2 > 0 && sxl * sxl / sl2 > best_gain) {
                best_gain = sxl * sxl / sl2;
                best_s = sxl / sl2;
            }
        }
    }
    return (float)best_s;
}

static double refit_q6(const float *x, float D, float scale, int8_t *ls,
                       int8_t *L)
{
    const int s0 = D != 0 ? nearest_clamp(scale / D, -128, 127) : 0;
    double best = INFINITY;
    for (int s = s0 - 2; s <= s0 + 2; s++) {
        if (s < -128 || s > 127) continue;
        const float ds = D * (float)s;
        const float ids = ds != 0.0f ? 1.0f / ds : 0.0f; /* see refit_k4 */
        int8_t q[16];
        double err = 0;
        for (int i = 0; i < 16; i++) {
            q[i] = (int8_t)nearest_clamp(x[i] * ids, -32, 31);
            const float y = ds * (float)q[i];
            const double e = (double)y - x[i];
            err += e * e;
        }
        if (err < best) {
            best = err;
            *ls = (int8_t)s;
            memcpy(L, q, 16);
        }
    }
    return best;
}

void tm__quantize_row_q6_k_ref(const float *x, void *dst, int64_t n)
{
    tm__block_q6_K *y = dst;
    for (int64_t i = 0; i < n / TM__QK_K; i++, x += TM__QK_K) {
        float sc[16], max_scale = 0, max_abs = 0;
        memset(&y[i], 0, sizeof y[i]);
        if (!all_finite(x, TM__QK_K)) continue; /* see quantize_k4_block */
        for (int j = 0; j < 16; j++) {
            sc[j] = fit_symmetric(x + 16 * j, 16);
            if (fabsf(sc[j]) > max_abs) {
                max_abs = fabsf(sc[j]);
                max_scale = sc[j];
            }
        }
        if (max_abs == 0) continue;
        /* the largest scale at -128 (ggml's choice) or at +127 */
        static const float cand[] = {-128.f, 127.f, -124.f, 123.f, -120.f};
        double best = INFINITY;
        int8_t L[TM__QK_K] = {0};
        /* ggml's infinite scale when no candidate's scale fits a half */
        y[i].d = tm__f32_to_half(max_scale / cand[0]);
        for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
            const tm__half hd = tm__f32_to_half(max_scale / cand[c]);
            const float D = tm__half_to_f32(hd);
            int8_t ls[16], Lc[TM__QK_K];
            double err = 0;
            for (int j = 0; j < 16 && err < best; j++)
                err += refit_q6(x + 16 * j, D, sc[j], &ls[j], Lc + 16 * j);
            if (err < best) {
                best = err;
                y[i].d = hd;
                memcpy(y[i].scales, ls, 16);
                memcpy(L, Lc, TM__QK_K);
            }
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < TM__QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const int q1 = L[j + l + 0] + 32, q2 = L[j + l + 32] + 32;
                const int q3 = L[j + l + 64] + 32, q4 = L[j + l + 96] + 32;
                ql[l + 0] = (uint8_t)((q1 & 0xF) | (q3 & 0xF) << 4);
                ql[l + 32] = (uint8_t)((q2 & 0xF) | (q4 & 0xF) << 4);
                qh[l] = (uint8_t)((q1 >> 4) | (q2 >> 4) << 2 |
                                  (q3 >> 4) << 4 | (q4 >> 4) << 6);
            }
        }
    }
}

void tm__dequantize_row_q6_k_ref(const void *src, float *y, int64_t n)
{
    const tm__block_q6_K *x = src;
    for (int64_t i = 0; i < n / TM__QK_K; i++) {
        const float d = tm__half_to_f32(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int b = 0; b < TM__QK_K; b += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l + 0] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l + 0] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l + 0] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}
