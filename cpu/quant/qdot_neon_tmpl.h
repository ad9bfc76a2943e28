/*
 * qdot_neon_tmpl.h — the aarch64 block dot kernels, included by
 * qdot_neon.c and qdot_neondot.c, which define
 *   QN_DOT16(acc, a, b)  acc (int32x4) + the products of 16 signed byte
 *                        pairs (plain NEON: vmull_s8 + vpadalq_s16; with
 *                        the dot-product extension: one vdotq_s32)
 *   QN_TABLE, QN_NAME    the family's tm__qkern table and name.
 *
 * NEON multiplies signed bytes by signed bytes, so every format decodes
 * to signed bytes (q - 8, q - 16, q - 32, or the unsigned q of the
 * formats with a min, which fit).  Each (sub-)block's integer dot product
 * is reduced across lanes (exact), then scaled in F32 once per block,
 * in block order, as tm__qdot_ref does: results differ from it only by
 * the rounding of the scale product (w d * a d taken once).
 */
#include <arm_neon.h>
#include <string.h>

#define QN_INLINE static inline __attribute__((always_inline))

QN_INLINE float qn_h2f(uint16_t h)
{
    float16x4_t v = vreinterpret_f16_u16(vdup_n_u16(h));
    return vgetq_lane_f32(vcvt_f32_f16(v), 0);
}

#define QN_AROW(a, as, j) ((const char *)(a) + (size_t)(j) * (as))

/* Byte l of each half = 16 where bit (l + 8 * which byte) of the
 * little-endian u32 at p is set: lanes 0..15 take bits 0..15 (lo) or
 * bits 16..31 (hi). */
QN_INLINE uint8x16_t qn_bits16(const uint8_t *p, int hi)
{
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                    1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t b = vcombine_u8(vdup_n_u8(p[2 * hi]), vdup_n_u8(p[2 * hi + 1]));
    return vandq_u8(vtstq_u8(b, vld1q_u8(bit)), vdupq_n_u8(16));
}

/* The 32-value formats: DECODE sets w0 (values 0..15) and w1 (16..31) as
 * signed bytes; ATYPE is the activation block; MIN adds the m * s term. */
#define QN_32(fname, wtype, atype, DECODE, SCALE, MIN)                        \
    QN_INLINE void fname##_n(const void *vw, const void *a, size_t as,        \
                             int64_t nb, float *out, const int na)            \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        float s[TM__QNA];                                                     \
        for (int j = 0; j < na; j++) s[j] = 0.0f;                             \
        for (int64_t b = 0; b < nb; b++) {                                    \
            int8x16_t w0, w1;                                                 \
            DECODE                                                            \
            const float dw = qn_h2f(wb[b].d);                                 \
            for (int j = 0; j < na; j++) {                                    \
                const atype *ab = (const atype *)QN_AROW(a, as, j) + b;       \
                int32x4_t acc = vdupq_n_s32(0);                               \
                acc = QN_DOT16(acc, w0, vld1q_s8(ab->qs));                    \
                acc = QN_DOT16(acc, w1, vld1q_s8(ab->qs + 16));               \
                const float sumi = (float)vaddvq_s32(acc);                    \
                SCALE                                                         \
                MIN                                                           \
            }                                                                 \
        }                                                                     \
        for (int j = 0; j < na; j++) out[j] = s[j];                           \
    }

#define QN_NIBBLES                                                            \
    uint8x16_t x = vld1q_u8(wb[b].qs);                                        \
    uint8x16_t lo = vandq_u8(x, vdupq_n_u8(15)), hi = vshrq_n_u8(x, 4);
#define QN_SC_PLAIN s[j] += sumi * (dw * qn_h2f(ab->d));
#define QN_NOMIN
#define QN_MIN s[j] += qn_h2f(wb[b].m) * qn_h2f(ab->s);

QN_32(qn_q8_0, tm__block_q8_0, tm__block_q8_0,
      w0 = vld1q_s8(wb[b].qs); w1 = vld1q_s8(wb[b].qs + 16);,
      QN_SC_PLAIN, QN_NOMIN)
QN_32(qn_q4_0, tm__block_q4_0, tm__block_q8_0,
      QN_NIBBLES
      w0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(8));
      w1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(8));,
      QN_SC_PLAIN, QN_NOMIN)
QN_32(qn_q4_1, tm__block_q4_1, tm__block_q8_1,
      QN_NIBBLES
      w0 = vreinterpretq_s8_u8(lo); w1 = vreinterpretq_s8_u8(hi);,
      QN_SC_PLAIN, QN_MIN)
QN_32(qn_q5_0, tm__block_q5_0, tm__block_q8_0,
      QN_NIBBLES
      w0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, qn_bits16(wb[b].qh, 0))),
                    vdupq_n_s8(16));
      w1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(hi, qn_bits16(wb[b].qh, 1))),
                    vdupq_n_s8(16));,
      QN_SC_PLAIN, QN_NOMIN)
QN_32(qn_q5_1, tm__block_q5_1, tm__block_q8_1,
      QN_NIBBLES
      w0 = vreinterpretq_s8_u8(vorrq_u8(lo, qn_bits16(wb[b].qh, 0)));
      w1 = vreinterpretq_s8_u8(vorrq_u8(hi, qn_bits16(wb[b].qh, 1)));,
      QN_SC_PLAIN, QN_MIN)

/* ------------------------------------------------ K-quants x Q8_K */

QN_INLINE void qn_k_scales(const uint8_t *q, uint8_t sc[8], uint8_t mn[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = q[j] & 63;
        mn[j] = q[j + 4] & 63;
        sc[j + 4] = (uint8_t)((q[j + 8] & 15) | (q[j] >> 6) << 4);
        mn[j + 4] = (uint8_t)((q[j + 8] >> 4) | (q[j + 4] >> 6) << 4);
    }
}

/* sum_k mn[k] * (bsums[2k] + bsums[2k + 1]) */
QN_INLINE int32_t qn_min_sum(const int16_t *bsums, const uint8_t *mn)
{
    int16x8_t pairs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
    int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
    int32x4_t p = vmull_s16(vget_low_s16(pairs), vget_low_s16(m));
    p = vmlal_s16(p, vget_high_s16(pairs), vget_high_s16(m));
    return vaddvq_s32(p);
}

/* HIGH adds the fifth bits of group g (Q5_K); empty for Q4_K. */
#define QN_K45(fname, wtype, HIGH_INIT, HIGH)                                 \
    QN_INLINE void fname##_n(const void *vw, const void *a, size_t as,        \
                             int64_t nb, float *out, const int na)            \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        const uint8x16_t m4 = vdupq_n_u8(15);                                 \
        float s[TM__QNA];                                                     \
        for (int j = 0; j < na; j++) s[j] = 0.0f;                             \
        for (int64_t b = 0; b < nb; b++) {                                    \
            uint8_t sc[8], mn[8];                                             \
            qn_k_scales(wb[b].scales, sc, mn);                                \
            int32_t isum[TM__QNA] = {0};                                      \
            HIGH_INIT                                                         \
            for (int g = 0; g < 4; g++) {                                     \
                uint8x16_t q0 = vld1q_u8(wb[b].qs + 32 * g);                  \
                uint8x16_t q1 = vld1q_u8(wb[b].qs + 32 * g + 16);             \
                uint8x16_t l0 = vandq_u8(q0, m4), l1 = vandq_u8(q1, m4);      \
                uint8x16_t h0 = vshrq_n_u8(q0, 4), h1 = vshrq_n_u8(q1, 4);    \
                HIGH                                                          \
                for (int j = 0; j < na; j++) {                                \
                    const tm__block_q8_K *ab =                                \
                        (const tm__block_q8_K *)QN_AROW(a, as, j) + b;        \
                    const int8_t *aq = ab->qs + 64 * g;                       \
                    int32x4_t al = vdupq_n_s32(0), ah = vdupq_n_s32(0);       \
                    al = QN_DOT16(al, vreinterpretq_s8_u8(l0), vld1q_s8(aq)); \
                    al = QN_DOT16(al, vreinterpretq_s8_u8(l1),                \
                                  vld1q_s8(aq + 16));                         \
                    ah = QN_DOT16(ah, vreinterpretq_s8_u8(h0),                \
                                  vld1q_s8(aq + 32));                         \
                    ah = QN_DOT16(ah, vreinterpretq_s8_u8(h1),                \
                                  vld1q_s8(aq + 48));                         \
                    isum[j] += sc[2 * g] * vaddvq_s32(al) +                   \
                               sc[2 * g + 1] * vaddvq_s32(ah);                \
                }                                                             \
            }                                                                 \
            const float dw = qn_h2f(wb[b].d), dmin = qn_h2f(wb[b].dmin);      \
            for (int j = 0; j < na; j++) {                                    \
                const tm__block_q8_K *ab =                                    \
                    (const tm__block_q8_K *)QN_AROW(a, as, j) + b;            \
                s[j] += (dw * ab->d) * (float)isum[j] -                       \
                        (dmin * ab->d) * (float)qn_min_sum(ab->bsums, mn);    \
            }                                                                 \
        }                                                                     \
        for (int j = 0; j < na; j++) out[j] = s[j];                           \
    }

QN_K45(qn_q4_k, tm__block_q4_K, , )
QN_K45(qn_q5_k, tm__block_q5_K,
       uint8x16_t hb0 = vld1q_u8(wb[b].qh);
       uint8x16_t hb1 = vld1q_u8(wb[b].qh + 16);
       const uint8x16_t one = vdupq_n_u8(1);,
       l0 = vorrq_u8(l0, vshlq_n_u8(vandq_u8(hb0, one), 4));
       l1 = vorrq_u8(l1, vshlq_n_u8(vandq_u8(hb1, one), 4));
       h0 = vorrq_u8(h0, vshlq_n_u8(vandq_u8(vshrq_n_u8(hb0, 1), one), 4));
       h1 = vorrq_u8(h1, vshlq_n_u8(vandq_u8(vshrq_n_u8(hb1, 1), one), 4));
       hb0 = vshrq_n_u8(hb0, 2);
       hb1 = vshrq_n_u8(hb1, 2);)

QN_INLINE void qn_q6_k_n(const void *vw, const void *a, size_t as,
                         int64_t nb, float *out, const int na)
{
    const tm__block_q6_K *wb = vw;
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    const int8x16_t m32 = vdupq_n_s8(32);
    float s[TM__QNA];
    for (int j = 0; j < na; j++) s[j] = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum[TM__QNA] = {0};
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = wb[b].ql + 64 * h, *qh = wb[b].qh + 32 * h;
            const int8_t *sc = wb[b].scales + 8 * h;
            int8x16_t q[8]; /* 16 values each, in value order */
            for (int u = 0; u < 2; u++) {
                uint8x16_t l0 = vld1q_u8(ql + 16 * u);
                uint8x16_t l1 = vld1q_u8(ql + 32 + 16 * u);
                uint8x16_t hv = vld1q_u8(qh + 16 * u);
                uint8x16_t v0 = vorrq_u8(vandq_u8(l0, m4),
                                         vshlq_n_u8(vandq_u8(hv, m3), 4));
                uint8x16_t v1 = vorrq_u8(
                    vandq_u8(l1, m4),
                    vshlq_n_u8(vandq_u8(vshrq_n_u8(hv, 2), m3), 4));
                uint8x16_t v2 = vorrq_u8(
                    vshrq_n_u8(l0, 4),
                    vshlq_n_u8(vandq_u8(vshrq_n_u8(hv, 4), m3), 4));
                uint8x16_t v3 = vorrq_u8(vshrq_n_u8(l1, 4),
                                         vshlq_n_u8(vshrq_n_u8(hv, 6), 4));
                q[0 + u] = vsubq_s8(vreinterpretq_s8_u8(v0), m32);
                q[2 + u] = vsubq_s8(vreinterpretq_s8_u8(v1), m32);
                q[4 + u] = vsubq_s8(vreinterpretq_s8_u8(v2), m32);
                q[6 + u] = vsubq_s8(vreinterpretq_s8_u8(v3), m32);
            }
            for (int j = 0; j < na; j++) {
                const tm__block_q8_K *ab =
                    (const tm__block_q8_K *)QN_AROW(a, as, j) + b;
                const int8_t *aq = ab->qs + 128 * h;
                for (int t = 0; t < 8; t++) {
                    int32x4_t acc = QN_DOT16(vdupq_n_s32(0), q[t],
                                             vld1q_s8(aq + 16 * t));
                    isum[j] += sc[t] * vaddvq_s32(acc);
                }
            }
        }
        const float dw = qn_h2f(wb[b].d);
        for (int j = 0; j < na; j++) {
            const tm__block_q8_K *ab =
                (const tm__block_q8_K *)QN_AROW(a, as, j) + b;
            s[j] += (dw * ab->d) * (float)isum[j];
        }
    }
    for (int j = 0; j < na; j++) out[j] = s[j];
}

#define QN_ROWS(fname)                                                        \
    static void fname(const void *w, const void *a, size_t as, int na,        \
                      int64_t nb, float *out)                                 \
    {                                                                         \
        switch (na) {                                                         \
        case 1: fname##_n(w, a, as, nb, out, 1); break;                       \
        case 2: fname##_n(w, a, as, nb, out, 2); break;                       \
        case 3: fname##_n(w, a, as, nb, out, 3); break;                       \
        default: fname##_n(w, a, as, nb, out, 4); break;                      \
        }                                                                     \
    }
QN_ROWS(qn_q8_0)
QN_ROWS(qn_q4_0)
QN_ROWS(qn_q4_1)
QN_ROWS(qn_q5_0)
QN_ROWS(qn_q5_1)
QN_ROWS(qn_q4_k)
QN_ROWS(qn_q5_k)
QN_ROWS(qn_q6_k)

#define QN_SLOT(dt) [(dt) - TM_Q8_0]
static const tm__qkern QN_TABLE = {
    .name = QN_NAME,
    .rows = {QN_SLOT(TM_Q8_0) = qn_q8_0, QN_SLOT(TM_Q4_0) = qn_q4_0,
             QN_SLOT(TM_Q4_1) = qn_q4_1, QN_SLOT(TM_Q5_0) = qn_q5_0,
             QN_SLOT(TM_Q5_1) = qn_q5_1, QN_SLOT(TM_Q4_K) = qn_q4_k,
             QN_SLOT(TM_Q5_K) = qn_q5_k, QN_SLOT(TM_Q6_K) = qn_q6_k},
};
