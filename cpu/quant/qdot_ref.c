/* qdot_ref.c — the reference block dot products: one weight row against
 * one activation row, portable C, the oracle for every ISA's kernel.
 *
 * Each 32-value format does exactly the arithmetic of ggml's scalar
 * vec_dot: an exact int32 dot product per block, then one F32 update of
 * the running sum per block, in block order.  The K-quants take each
 * 256-value super-block's integer sum over its sub-blocks (sub-block scale
 * x sub-block dot, exact in int32) and update the F32 sum once per super-
 * block: sum += (dw * da) * isum - (dmin * da) * isum_min (Q6_K has no
 * min term).  ggml's scalar K-quant loop splits that F32 update over 8
 * lanes; the integer parts are identical, only F32 rounding differs. */
#include "quant_kernels.h"

#include <string.h>

static float h2f(tm__half h) { return tm__half_to_f32(h); }

static float dot_q8_0(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q8_0 *w = vw;
    const tm__block_q8_0 *a = va;
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t sumi = 0;
        for (int j = 0; j < TM__QK; j++)
            sumi += (int32_t)w[b].qs[j] * a[b].qs[j];
        s += (float)sumi * (h2f(w[b].d) * h2f(a[b].d));
    }
    return s;
}

static float dot_q4_0(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q4_0 *w = vw;
    const tm__block_q8_0 *a = va;
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t s0 = 0, s1 = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            int v0 = (w[b].qs[j] & 15) - 8, v1 = (w[b].qs[j] >> 4) - 8;
            s0 += v0 * a[b].qs[j];
            s1 += v1 * a[b].qs[j + TM__QK / 2];
        }
        s += (float)(s0 + s1) * h2f(w[b].d) * h2f(a[b].d);
    }
    return s;
}

static float dot_q4_1(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q4_1 *w = vw;
    const tm__block_q8_1 *a = va;
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t s0 = 0, s1 = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            s0 += (w[b].qs[j] & 15) * a[b].qs[j];
            s1 += (w[b].qs[j] >> 4) * a[b].qs[j + TM__QK / 2];
        }
        s += (h2f(w[b].d) * h2f(a[b].d)) * (float)(s0 + s1) +
             h2f(w[b].m) * h2f(a[b].s);
    }
    return s;
}

static uint32_t load_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static float dot_q5_0(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q5_0 *w = vw;
    const tm__block_q8_0 *a = va;
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        uint32_t qh = load_u32(w[b].qh);
        int32_t s0 = 0, s1 = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            int h0 = (qh >> j & 1) << 4, h1 = (qh >> (j + 16) & 1) << 4;
            int v0 = ((w[b].qs[j] & 15) | h0) - 16;
            int v1 = ((w[b].qs[j] >> 4) | h1) - 16;
            s0 += v0 * a[b].qs[j];
            s1 += v1 * a[b].qs[j + TM__QK / 2];
        }
        s += (h2f(w[b].d) * h2f(a[b].d)) * (float)(s0 + s1);
    }
    return s;
}

static float dot_q5_1(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q5_1 *w = vw;
    const tm__block_q8_1 *a = va;
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        uint32_t qh = load_u32(w[b].qh);
        int32_t s0 = 0, s1 = 0;
        for (int j = 0; j < TM__QK / 2; j++) {
            int h0 = (qh >> j & 1) << 4, h1 = (qh >> (j + 16) & 1) << 4;
            s0 += ((w[b].qs[j] & 15) | h0) * a[b].qs[j];
            s1 += ((w[b].qs[j] >> 4) | h1) * a[b].qs[j + TM__QK / 2];
        }
        s += (h2f(w[b].d) * h2f(a[b].d)) * (float)(s0 + s1) +
             h2f(w[b].m) * h2f(a[b].s);
    }
    return s;
}

/* The 6-bit scale and min of sub-block j (quant_blocks.h). */
static void k_scale_min(const uint8_t *q, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

/* isum = sum_j sc_j * dot_j and imin = sum_j m_j * (sum of the 32
 * activations of sub-block j) for a Q4_K / Q5_K super-block whose
 * unsigned quants are in q[256]. */
static void k_sums(const uint8_t *scales, const uint8_t *q,
                   const tm__block_q8_K *a, int32_t *isum, int32_t *imin)
{
    int32_t si = 0, sm = 0;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k_scale_min(scales, j, &sc, &m);
        int32_t d = 0;
        for (int l = 0; l < 32; l++) d += q[32 * j + l] * a->qs[32 * j + l];
        si += sc * d;
        sm += m * (a->bsums[2 * j] + a->bsums[2 * j + 1]);
    }
    *isum = si;
    *imin = sm;
}

static float dot_q4_k(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q4_K *w = vw;
    const tm__block_q8_K *a = va;
    float s = 0.0f;
    uint8_t q[TM__QK_K];
    for (int64_t b = 0; b < nb; b++) {
        for (int g = 0; g < 4; g++)
            for (int l = 0; l < 32; l++) {
                q[64 * g + l] = w[b].qs[32 * g + l] & 15;
                q[64 * g + 32 + l] = w[b].qs[32 * g + l] >> 4;
            }
        int32_t isum, imin;
        k_sums(w[b].scales, q, &a[b], &isum, &imin);
        s += (h2f(w[b].d) * a[b].d) * (float)isum -
             (h2f(w[b].dmin) * a[b].d) * (float)imin;
    }
    return s;
}

static float dot_q5_k(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q5_K *w = vw;
    const tm__block_q8_K *a = va;
    float s = 0.0f;
    uint8_t q[TM__QK_K];
    for (int64_t b = 0; b < nb; b++) {
        for (int g = 0; g < 4; g++)
            for (int l = 0; l < 32; l++) {
                int i0 = 64 * g + l, i1 = 64 * g + 32 + l;
                q[i0] = (uint8_t)((w[b].qs[32 * g + l] & 15) |
                                  (w[b].qh[l] >> (i0 / 32) & 1) << 4);
                q[i1] = (uint8_t)((w[b].qs[32 * g + l] >> 4) |
                                  (w[b].qh[l] >> (i1 / 32) & 1) << 4);
            }
        int32_t isum, imin;
        k_sums(w[b].scales, q, &a[b], &isum, &imin);
        s += (h2f(w[b].d) * a[b].d) * (float)isum -
             (h2f(w[b].dmin) * a[b].d) * (float)imin;
    }
    return s;
}

static float dot_q6_k(const void *vw, const void *va, int64_t nb)
{
    const tm__block_q6_K *w = vw;
    const tm__block_q8_K *a = va;
    float s = 0.0f;
    int8_t q[TM__QK_K];
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ql = w[b].ql, *qh = w[b].qh;
        for (int h = 0; h < 2; h++) {
            int8_t *o = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                o[l] = (int8_t)(((ql[l] & 15) | (qh[l] & 3) << 4) - 32);
                o[l + 32] =
                    (int8_t)(((ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4) - 32);
                o[l + 64] = (int8_t)(((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32);
                o[l + 96] =
                    (int8_t)(((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32);
            }
            ql += 64;
            qh += 32;
        }
        int32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            int32_t d = 0;
            for (int l = 0; l < 16; l++) d += q[16 * j + l] * a[b].qs[16 * j + l];
            isum += w[b].scales[j] * d;
        }
        s += (h2f(w[b].d) * a[b].d) * (float)isum;
    }
    return s;
}

float tm__qdot_ref(tm_dtype wt, const void *w, const void *a, int64_t n)
{
    switch (wt) {
    case TM_Q8_0: return dot_q8_0(w, a, n / TM__QK);
    case TM_Q4_0: return dot_q4_0(w, a, n / TM__QK);
    case TM_Q4_1: return dot_q4_1(w, a, n / TM__QK);
    case TM_Q5_0: return dot_q5_0(w, a, n / TM__QK);
    case TM_Q5_1: return dot_q5_1(w, a, n / TM__QK);
    case TM_Q4_K: return dot_q4_k(w, a, n / TM__QK_K);
    case TM_Q5_K: return dot_q5_k(w, a, n / TM__QK_K);
    case TM_Q6_K: return dot_q6_k(w, a, n / TM__QK_K);
    default: return 0.0f; /* callers pass weight formats only */
    }
}
