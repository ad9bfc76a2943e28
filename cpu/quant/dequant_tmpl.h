/*
 * dequant_tmpl.h — the weight formats' dequantizers, written once over
 * 16-byte vectors and instantiated per kernel family (dequant_avx2.c,
 * dequant_avx512.c, dequant_neon.c).  The including file defines
 *   B16                 a vector of 16 bytes
 *   B_LOAD(p)           16 bytes from p (unaligned)
 *   B_SET(c)            16 copies of byte c
 *   B_AND, B_OR, B_SUB  bytewise
 *   B_SHR(a, n)         each byte shifted right by n (0 <= n < 8, n may
 *                       vary at run time)
 *   B_MUL16(a)          each byte shifted left by 4 (bytes below 16)
 *   B_BITS(lo, hi)      byte i = 0x10 when bit i of the 16-bit value
 *                       lo | hi << 8 is set, else 0
 *   emit_s(y, b, d)       y[i] = (float)(int8)b[i] * d
 *   emit_u_add(y, b, d, m) y[i] = (float)b[i] * d + m
 *   emit_u_sub(y, b, d, m) y[i] = (float)b[i] * d - m
 *   DQ_FAM              the family's name suffix
 * Each emit does exactly the reference's F32 operations (int -> float is
 * exact), so results are bit-identical to quant_ref.c / quant_ref_k.c.
 */
#define DQ_CAT2(a, b) a##b
#define DQ_CAT(a, b) DQ_CAT2(a, b)
#define DQ_FN(name) DQ_CAT(name##_, DQ_FAM)

static void DQ_FN(dq_q8_0)(const void *src, float *y, int64_t n)
{
    const tm__block_q8_0 *x = src;
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const uint8_t *q = (const uint8_t *)x[i].qs;
        emit_s(y, B_LOAD(q), d);
        emit_s(y + 16, B_LOAD(q + 16), d);
    }
}

static void DQ_FN(dq_q4_0)(const void *src, float *y, int64_t n)
{
    const tm__block_q4_0 *x = src;
    const B16 m4 = B_SET(0x0F), e8 = B_SET(8);
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const B16 b = B_LOAD(x[i].qs);
        emit_s(y, B_SUB(B_AND(b, m4), e8), d);
        emit_s(y + 16, B_SUB(B_SHR(b, 4), e8), d);
    }
}

static void DQ_FN(dq_q4_1)(const void *src, float *y, int64_t n)
{
    const tm__block_q4_1 *x = src;
    const B16 m4 = B_SET(0x0F);
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const float m = tm__half_to_f32(x[i].m);
        const B16 b = B_LOAD(x[i].qs);
        emit_u_add(y, B_AND(b, m4), d, m);
        emit_u_add(y + 16, B_SHR(b, 4), d, m);
    }
}

static void DQ_FN(dq_q5_0)(const void *src, float *y, int64_t n)
{
    const tm__block_q5_0 *x = src;
    const B16 m4 = B_SET(0x0F), e16 = B_SET(16);
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const B16 b = B_LOAD(x[i].qs);
        const B16 h0 = B_BITS(x[i].qh[0], x[i].qh[1]);
        const B16 h1 = B_BITS(x[i].qh[2], x[i].qh[3]);
        emit_s(y, B_SUB(B_OR(B_AND(b, m4), h0), e16), d);
        emit_s(y + 16, B_SUB(B_OR(B_SHR(b, 4), h1), e16), d);
    }
}

static void DQ_FN(dq_q5_1)(const void *src, float *y, int64_t n)
{
    const tm__block_q5_1 *x = src;
    const B16 m4 = B_SET(0x0F);
    for (int64_t i = 0; i < n / TM__QK; i++, y += TM__QK) {
        const float d = tm__half_to_f32(x[i].d);
        const float m = tm__half_to_f32(x[i].m);
        const B16 b = B_LOAD(x[i].qs);
        const B16 h0 = B_BITS(x[i].qh[0], x[i].qh[1]);
        const B16 h1 = B_BITS(x[i].qh[2], x[i].qh[3]);
        emit_u_add(y, B_OR(B_AND(b, m4), h0), d, m);
        emit_u_add(y + 16, B_OR(B_SHR(b, 4), h1), d, m);
    }
}

static inline void DQ_FN(scale_min_k4)(int j, const uint8_t *q, uint8_t *d,
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

/* Q4_K and Q5_K: qh NULL for Q4_K. */
static inline void DQ_FN(dq_k4)(const uint8_t *qs, const uint8_t *qh,
                                const uint8_t *scales, float d, float min,
                                float *y)
{
    const B16 m4 = B_SET(0x0F), one = B_SET(1);
    for (int g = 0; g < 4; g++, qs += 32, y += 64) {
        uint8_t sc, m;
        DQ_FN(scale_min_k4)(2 * g, scales, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        DQ_FN(scale_min_k4)(2 * g + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = min * m;
        for (int c = 0; c < 2; c++) {
            const B16 b = B_LOAD(qs + 16 * c);
            B16 lo = B_AND(b, m4), hi = B_SHR(b, 4);
            if (qh) {
                const B16 h = B_LOAD(qh + 16 * c);
                const B16 h1 = B_AND(B_SHR(h, 2 * g), one);
                const B16 h2 = B_AND(B_SHR(h, 2 * g + 1), one);
                lo = B_OR(lo, B_MUL16(h1));
                hi = B_OR(hi, B_MUL16(h2));
            }
            emit_u_sub(y + 16 * c, lo, d1, m1);
            emit_u_sub(y + 32 + 16 * c, hi, d2, m2);
        }
    }
}

static void DQ_FN(dq_q4_k)(const void *src, float *y, int64_t n)
{
    const tm__block_q4_K *x = src;
    for (int64_t i = 0; i < n / TM__QK_K; i++, y += TM__QK_K)
        DQ_FN(dq_k4)(x[i].qs, NULL, x[i].scales, tm__half_to_f32(x[i].d),
                     tm__half_to_f32(x[i].dmin), y);
}

static void DQ_FN(dq_q5_k)(const void *src, float *y, int64_t n)
{
    const tm__block_q5_K *x = src;
    for (int64_t i = 0; i < n / TM__QK_K; i++, y += TM__QK_K)
        DQ_FN(dq_k4)(x[i].qs, x[i].qh, x[i].scales, tm__half_to_f32(x[i].d),
                     tm__half_to_f32(x[i].dmin), y);
}

static void DQ_FN(dq_q6_k)(const void *src, float *y, int64_t n)
{
    const tm__block_q6_K *x = src;
    const B16 m4 = B_SET(0x0F), m2 = B_SET(3), e32 = B_SET(32);
    for (int64_t i = 0; i < n / TM__QK_K; i++) {
        const float d = tm__half_to_f32(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int c = 0; c < 2; c++) { /* l = 16 c .. 16 c + 15 */
                const B16 a = B_LOAD(ql + 16 * c), b = B_LOAD(ql + 32 + 16 * c);
                const B16 hb = B_LOAD(qh + 16 * c);
                const B16 q1 = B_OR(B_AND(a, m4), B_MUL16(B_AND(hb, m2)));
                const B16 q2 = B_OR(B_AND(b, m4),
                                    B_MUL16(B_AND(B_SHR(hb, 2), m2)));
                const B16 q3 = B_OR(B_SHR(a, 4),
                                    B_MUL16(B_AND(B_SHR(hb, 4), m2)));
                const B16 q4 = B_OR(B_SHR(b, 4), B_MUL16(B_SHR(hb, 6)));
                /* output l + 32 k has scale sc[(l + 32 k) / 16] = sc[c + 2k] */
                emit_s(y + 16 * c, B_SUB(q1, e32), d * sc[c + 0]);
                emit_s(y + 32 + 16 * c, B_SUB(q2, e32), d * sc[c + 2]);
                emit_s(y + 64 + 16 * c, B_SUB(q3, e32), d * sc[c + 4]);
                emit_s(y + 96 + 16 * c, B_SUB(q4, e32), d * sc[c + 6]);
            }
        }
    }
}

tm__dequant_row_fn DQ_CAT(tm__dequant_fn_, DQ_FAM)(tm_dtype dt)
{
    switch (dt) {
    case TM_Q8_0: return DQ_FN(dq_q8_0);
    case TM_Q4_0: return DQ_FN(dq_q4_0);
    case TM_Q4_1: return DQ_FN(dq_q4_1);
    case TM_Q5_0: return DQ_FN(dq_q5_0);
    case TM_Q5_1: return DQ_FN(dq_q5_1);
    case TM_Q4_K: return DQ_FN(dq_q4_k);
    case TM_Q5_K: return DQ_FN(dq_q5_k);
    case TM_Q6_K: return DQ_FN(dq_q6_k);
    default: return NULL;
    }
}
