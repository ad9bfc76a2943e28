/*
 * qdot_x86_tmpl.h — the x86 block dot kernels (256-bit), included by
 * qdot_avx2.c and qdot_avx512vnni.c, which define
 *   QX_DOT_US(u, s)  8 x i32: each the sum of 4 adjacent products of
 *                    unsigned bytes u (<= 127 here) and signed bytes s
 *                    (AVX2: maddubs + madd; VNNI: one vpdpbusd)
 *   QX_TABLE         the name of the family's tm__qkern table
 *   QX_NAME          its name ("avx2", "avx512vnni")
 * and compile with AVX2, FMA and F16C.
 *
 * Each kernel decodes one weight block into 32 bytes per register once
 * and takes it against up to TM__QNA activation rows, each with its own
 * F32 accumulator (8 lanes, summed at the end), so every row's result is
 * the same whatever the number of rows.  Signed x signed products go
 * through |w| and sign(a, w) (the operands vpmaddubsw / vpdpbusd need);
 * the K-quants' sub-block scales multiply the 16-bit pair sums in one
 * vpmaddwd, and their min / offset terms come from Q8_K's bsums.
 * Against tm__qdot_ref only F32 summation order differs (the integer
 * dot products are exact), within the bound test_quant_kernels.c states.
 * A family may replace Q5_0's row kernel by defining QX_ROW_Q5_0
 * (declared before this header, defined after it).
 */
#include <immintrin.h>
#include <string.h>

#define QX_INLINE static inline __attribute__((always_inline))

QX_INLINE float qx_h2f(uint16_t h) { return _cvtsh_ss(h); }

/* Lanes 0 and 1 = the two adjacent halves at p (a block's d and m, or
 * d and s): one conversion for both instead of two scalar ones, with the
 * same values. */
QX_INLINE __m128 qx_h2f2(const void *p)
{
    uint32_t u;
    memcpy(&u, p, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)u));
}

QX_INLINE float qx_hsum(__m256 v)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

/* Lane j = the sum of the 8 lanes of p[j]. */
QX_INLINE __m256i qx_reduce8(const __m256i *p)
{
    __m256i a = _mm256_hadd_epi32(p[0], p[1]), b = _mm256_hadd_epi32(p[2], p[3]);
    __m256i c = _mm256_hadd_epi32(p[4], p[5]), d = _mm256_hadd_epi32(p[6], p[7]);
    __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    return _mm256_add_epi32(_mm256_permute2x128_si256(ab, cd, 0x20),
                            _mm256_permute2x128_si256(ab, cd, 0x31));
}

/* 16 packed bytes -> 32 nibbles: value j < 16 is the low nibble of byte j,
 * value j + 16 its high nibble (the 32-value formats' order). */
QX_INLINE __m256i qx_nibbles32(const uint8_t *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    __m128i m = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 4), m),
                            _mm_and_si128(x, m));
}

/* Byte j = 16 where bit j of the little-endian u32 at p is set, else 0. */
QX_INLINE __m256i qx_bits32(const uint8_t *p)
{
    uint32_t u;
    memcpy(&u, p, 4);
    const __m256i shuf = _mm256_set_epi64x(
        0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL,
        0x0000000000000000LL);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)u), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(v, _mm256_set1_epi8(16));
}

#define QX_AROW(a, as, j) ((const char *)(a) + (size_t)(j) * (as))

/* ---------------------------------------- signed weights x Q8_0: q8_0,
 * q4_0, q5_0.  DECODE(b) sets the block's 32 signed weight bytes `w`. */
#define QX_SIGNED_Q8_0(fname, wtype, DECODE)                                  \
    QX_INLINE void fname##_n(const void *vw, const void *a, size_t as,        \
                             int64_t nb, float *out, const int na)            \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        __m256 acc[TM__QNA];                                                  \
        for (int j = 0; j < na; j++) acc[j] = _mm256_setzero_ps();            \
        for (int64_t b = 0; b < nb; b++) {                                    \
            __m256i w;                                                        \
            DECODE                                                            \
            const __m256i uw = _mm256_sign_epi8(w, w);                        \
            const float dw = qx_h2f(wb[b].d);                                 \
            for (int j = 0; j < na; j++) {                                    \
                const tm__block_q8_0 *ab =                                    \
                    (const tm__block_q8_0 *)QX_AROW(a, as, j) + b;            \
                __m256i av = _mm256_loadu_si256((const __m256i *)ab->qs);     \
                __m256i p = QX_DOT_US(uw, _mm256_sign_epi8(av, w));           \
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * qx_h2f(ab->d)),  \
                                         _mm256_cvtepi32_ps(p), acc[j]);      \
            }                                                                 \
        }                                                                     \
        for (int j = 0; j < na; j++) out[j] = qx_hsum(acc[j]);                \
    }                                                                         \
    static void fname##_8(const void *vw, const void *a, size_t as,           \
                          int64_t nb, const float *da, const float *sa,       \
                          float *out)                                         \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        (void)sa;                                                             \
        __m256 acc = _mm256_setzero_ps();                                     \
        for (int64_t b = 0; b < nb; b++) {                                    \
            __m256i w;                                                        \
            DECODE                                                            \
            const __m256i uw = _mm256_sign_epi8(w, w);                        \
            __m256i p[TM__QNA8];                                              \
            for (int j = 0; j < TM__QNA8; j++) {                              \
                const tm__block_q8_0 *ab =                                    \
                    (const tm__block_q8_0 *)QX_AROW(a, as, j) + b;            \
                __m256i av = _mm256_loadu_si256((const __m256i *)ab->qs);     \
                p[j] = QX_DOT_US(uw, _mm256_sign_epi8(av, w));                \
            }                                                                 \
            __m256 d = _mm256_mul_ps(_mm256_set1_ps(qx_h2f(wb[b].d)),         \
                                     _mm256_loadu_ps(da + 8 * b));            \
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(qx_reduce8(p)), acc); \
        }                                                                     \
        _mm256_storeu_ps(out, acc);                                           \
    }

QX_SIGNED_Q8_0(qx_q8_0, tm__block_q8_0,
               w = _mm256_loadu_si256((const __m256i *)wb[b].qs);)
QX_SIGNED_Q8_0(qx_q4_0, tm__block_q4_0,
               w = _mm256_sub_epi8(qx_nibbles32(wb[b].qs),
                                   _mm256_set1_epi8(8));)
QX_SIGNED_Q8_0(qx_q5_0, tm__block_q5_0,
               w = _mm256_sub_epi8(_mm256_or_si256(qx_nibbles32(wb[b].qs),
                                                   qx_bits32(wb[b].qh)),
                                   _mm256_set1_epi8(16));)

/* -------------------------- unsigned weights with a min x Q8_1: q4_1,
 * q5_1 (x = d q + m: the m term is m * s of the activation block). */
#define QX_UNSIGNED_Q8_1(fname, wtype, DECODE)                                \
    QX_INLINE void fname##_n(const void *vw, const void *a, size_t as,        \
                             int64_t nb, float *out, const int na)            \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        __m256 acc[TM__QNA];                                                  \
        /* lane 1: the sum of mw * sa in block order (lane 0 unused) */       \
        __m128 sm[TM__QNA];                                                   \
        for (int j = 0; j < na; j++) {                                        \
            acc[j] = _mm256_setzero_ps();                                     \
            sm[j] = _mm_setzero_ps();                                         \
        }                                                                     \
        for (int64_t b = 0; b < nb; b++) {                                    \
            __m256i w;                                                        \
            DECODE                                                            \
            /* lanes (d, m) x (d, s): dw * da and mw * sa in one multiply */ \
            const __m128 wdm = qx_h2f2(&wb[b].d);                             \
            for (int j = 0; j < na; j++) {                                    \
                const tm__block_q8_1 *ab =                                    \
                    (const tm__block_q8_1 *)QX_AROW(a, as, j) + b;            \
                __m256i av = _mm256_loadu_si256((const __m256i *)ab->qs);     \
                __m256i p = QX_DOT_US(w, av);                                 \
                const __m128 pr = _mm_mul_ps(wdm, qx_h2f2(&ab->d));           \
                acc[j] = _mm256_fmadd_ps(_mm256_broadcastss_ps(pr),           \
                                         _mm256_cvtepi32_ps(p), acc[j]);      \
                sm[j] = _mm_add_ps(sm[j], pr);                                \
            }                                                                 \
        }                                                                     \
        for (int j = 0; j < na; j++)                                          \
            out[j] = qx_hsum(acc[j]) + _mm_cvtss_f32(_mm_movehdup_ps(sm[j])); \
    }                                                                         \
    static void fname##_8(const void *vw, const void *a, size_t as,           \
                          int64_t nb, const float *da, const float *sa,       \
                          float *out)                                         \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();         \
        for (int64_t b = 0; b < nb; b++) {                                    \
            __m256i w;                                                        \
            DECODE                                                            \
            __m256i p[TM__QNA8];                                              \
            for (int j = 0; j < TM__QNA8; j++) {                              \
                const tm__block_q8_1 *ab =                                    \
                    (const tm__block_q8_1 *)QX_AROW(a, as, j) + b;            \
                p[j] = QX_DOT_US(w, _mm256_loadu_si256(                       \
                                        (const __m256i *)ab->qs));            \
            }                                                                 \
            const __m128 wdm = qx_h2f2(&wb[b].d);                             \
            __m256 d = _mm256_mul_ps(_mm256_broadcastss_ps(wdm),              \
                                     _mm256_loadu_ps(da + 8 * b));            \
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(qx_reduce8(p)), acc); \
            accm = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(wdm)),\
                                   _mm256_loadu_ps(sa + 8 * b), accm);        \
        }                                                                     \
        _mm256_storeu_ps(out, _mm256_add_ps(acc, accm));                      \
    }

QX_UNSIGNED_Q8_1(qx_q4_1, tm__block_q4_1, w = qx_nibbles32(wb[b].qs);)
QX_UNSIGNED_Q8_1(qx_q5_1, tm__block_q5_1,
                 w = _mm256_or_si256(qx_nibbles32(wb[b].qs),
                                     qx_bits32(wb[b].qh));)

/* ------------------------------------------------ K-quants x Q8_K */

/* The 8 six-bit scales and mins of a Q4_K / Q5_K super-block. */
QX_INLINE void qx_k_scales(const uint8_t *q, uint8_t sc[8], uint8_t mn[8])
{
    /* four 32-bit words at a time: 12 bytes -> 8 scales and 8 mins */
    uint32_t u[4];
    memcpy(u, q, 12);
    const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    u[3] = ((u[2] >> 4) & m4) | ((u[1] >> 6) & m2) << 4;
    const uint32_t mins_lo = u[1] & m6;
    u[1] = (u[2] & m4) | ((u[0] >> 6) & m2) << 4;
    u[2] = mins_lo;
    u[0] &= m6;
    memcpy(sc, u, 8);
    memcpy(mn, u + 2, 8);
}

/* HIGH(g) gives the fifth bits (16 or 0 per byte) of group g's low and
 * high nibbles in lo_h / hi_h; empty for Q4_K. */
#define QX_K45(fname, wtype, HIGH_INIT, HIGH)                                 \
    QX_INLINE void fname##_n(const void *vw, const void *a, size_t as,        \
                             int64_t nb, float *out, const int na)            \
    {                                                                         \
        const wtype *wb = vw;                                                 \
        const __m256i m4 = _mm256_set1_epi8(15);                              \
        __m256 acc[TM__QNA];                                                  \
        for (int j = 0; j < na; j++) acc[j] = _mm256_setzero_ps();            \
        for (int64_t b = 0; b < nb; b++) {                                    \
            uint8_t sc[8], mn[8];                                             \
            qx_k_scales(wb[b].scales, sc, mn);                                \
            const float dw = qx_h2f(wb[b].d), dmin = qx_h2f(wb[b].dmin);      \
            /* mins, each twice: against bsums pairs (16 x i16) */            \
            const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(      \
                _mm_loadl_epi64((const __m128i *)mn),                         \
                _mm_loadl_epi64((const __m128i *)mn)));                       \
            __m256i isum[TM__QNA];                                            \
            for (int j = 0; j < na; j++) isum[j] = _mm256_setzero_si256();    \
            HIGH_INIT                                                         \
            for (int g = 0; g < 4; g++) {                                     \
                __m256i q = _mm256_loadu_si256((const __m256i *)(wb[b].qs +   \
                                                                 32 * g));    \
                __m256i lo = _mm256_and_si256(q, m4);                         \
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);   \
                HIGH                                                          \
                const __m256i s_lo = _mm256_set1_epi16(sc[2 * g]);            \
                const __m256i s_hi = _mm256_set1_epi16(sc[2 * g + 1]);        \
                for (int j = 0; j < na; j++) {                                \
                    const tm__block_q8_K *ab =                                \
                        (const tm__block_q8_K *)QX_AROW(a, as, j) + b;        \
                    __m256i a0 = _mm256_loadu_si256(                          \
                        (const __m256i *)(ab->qs + 64 * g));                  \
                    __m256i a1 = _mm256_loadu_si256(                          \
                        (const __m256i *)(ab->qs + 64 * g + 32));             \
                    __m256i p0 = _mm256_madd_epi16(                           \
                        _mm256_maddubs_epi16(lo, a0), s_lo);                  \
                    __m256i p1 = _mm256_madd_epi16(                           \
                        _mm256_maddubs_epi16(hi, a1), s_hi);                  \
                    isum[j] = _mm256_add_epi32(isum[j],                       \
                                               _mm256_add_epi32(p0, p1));     \
                }                                                             \
            }                                                                 \
            for (int j = 0; j < na; j++) {                                    \
                const tm__block_q8_K *ab =                                    \
                    (const tm__block_q8_K *)QX_AROW(a, as, j) + b;            \
                __m256i bs = _mm256_loadu_si256((const __m256i *)ab->bsums);  \
                __m256i im = _mm256_madd_epi16(bs, mins);                     \
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * ab->d),          \
                                         _mm256_cvtepi32_ps(isum[j]), acc[j]);\
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(-(dmin * ab->d)),     \
                                         _mm256_cvtepi32_ps(im), acc[j]);     \
            }                                                                 \
        }                                                                     \
        for (int j = 0; j < na; j++) out[j] = qx_hsum(acc[j]);                \
    }

QX_K45(qx_q4_k, tm__block_q4_K, , )
QX_K45(qx_q5_k, tm__block_q5_K,
       __m256i hb = _mm256_loadu_si256((const __m256i *)wb[b].qh);
       const __m256i one = _mm256_set1_epi8(1);,
       lo = _mm256_or_si256(
           lo, _mm256_slli_epi16(_mm256_and_si256(hb, one), 4));
       hi = _mm256_or_si256(
           hi, _mm256_slli_epi16(
                   _mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4));
       hb = _mm256_srli_epi16(hb, 2);)

/* Shuffles picking Q6_K scales 2i (bytes 0..7) and 2i + 1 (8..15). */
static const uint8_t qx_q6_pick[8][16] = {
#define QX_PICK(i)                                                            \
    {2 * (i), 2 * (i), 2 * (i), 2 * (i), 2 * (i), 2 * (i), 2 * (i), 2 * (i),  \
     2 * (i) + 1, 2 * (i) + 1, 2 * (i) + 1, 2 * (i) + 1, 2 * (i) + 1,         \
     2 * (i) + 1, 2 * (i) + 1, 2 * (i) + 1}
    QX_PICK(0), QX_PICK(1), QX_PICK(2), QX_PICK(3),
    QX_PICK(4), QX_PICK(5), QX_PICK(6), QX_PICK(7)
#undef QX_PICK
};

QX_INLINE void qx_q6_k_n(const void *vw, const void *a, size_t as,
                         int64_t nb, float *out, const int na)
{
    const tm__block_q6_K *wb = vw;
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    const __m256i mc = _mm256_set1_epi8(12), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[TM__QNA];
    for (int j = 0; j < na; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)wb[b].scales);
        const float dw = qx_h2f(wb[b].d);
        __m256i isum[TM__QNA];
        for (int j = 0; j < na; j++) isum[j] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = wb[b].ql + 64 * h, *qh = wb[b].qh + 32 * h;
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i hv = _mm256_loadu_si256((const __m256i *)qh);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(hv, m3),
                                                     4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(hv, mc),
                                                     2));
            q[2] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                _mm256_and_si256(hv, m30));
            q[3] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                _mm256_and_si256(_mm256_srli_epi16(hv, 2), m30));
            for (int t = 0; t < 4; t++) {
                /* scales 8h + 2t (values 0..15 of q[t]) and 8h + 2t + 1 */
                const __m128i pick =
                    _mm_loadu_si128((const __m128i *)qx_q6_pick[4 * h + t]);
                __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick));
                for (int j = 0; j < na; j++) {
                    const tm__block_q8_K *ab =
                        (const tm__block_q8_K *)QX_AROW(a, as, j) + b;
                    __m256i av = _mm256_loadu_si256(
                        (const __m256i *)(ab->qs + 128 * h + 32 * t));
                    isum[j] = _mm256_add_epi32(
                        isum[j], _mm256_madd_epi16(
                                     _mm256_maddubs_epi16(q[t], av), sc));
                }
            }
        }
        /* the -32 offset: 32 * sum_j scale_j * bsums_j */
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        for (int j = 0; j < na; j++) {
            const tm__block_q8_K *ab =
                (const tm__block_q8_K *)QX_AROW(a, as, j) + b;
            __m256i bs = _mm256_loadu_si256((const __m256i *)ab->bsums);
            __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5);
            acc[j] = _mm256_fmadd_ps(
                _mm256_set1_ps(dw * ab->d),
                _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[j], off)), acc[j]);
        }
    }
    for (int j = 0; j < na; j++) out[j] = qx_hsum(acc[j]);
}

/* Entry points: na as a compile-time constant in each branch. */
#define QX_ROWS(fname)                                                        \
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
QX_ROWS(qx_q8_0)
QX_ROWS(qx_q4_0)
QX_ROWS(qx_q4_1)
#ifndef QX_ROW_Q5_0
QX_ROWS(qx_q5_0)
#define QX_ROW_Q5_0 qx_q5_0
#endif
QX_ROWS(qx_q5_1)
QX_ROWS(qx_q4_k)
QX_ROWS(qx_q5_k)
QX_ROWS(qx_q6_k)

#define QX_SLOT(dt) [(dt) - TM_Q8_0]
static const tm__qkern QX_TABLE = {
    .name = QX_NAME,
    .rows = {QX_SLOT(TM_Q8_0) = qx_q8_0, QX_SLOT(TM_Q4_0) = qx_q4_0,
             QX_SLOT(TM_Q4_1) = qx_q4_1, QX_SLOT(TM_Q5_0) = QX_ROW_Q5_0,
             QX_SLOT(TM_Q5_1) = qx_q5_1, QX_SLOT(TM_Q4_K) = qx_q4_k,
             QX_SLOT(TM_Q5_K) = qx_q5_k, QX_SLOT(TM_Q6_K) = qx_q6_k},
    .rows8 = {QX_SLOT(TM_Q8_0) = qx_q8_0_8, QX_SLOT(TM_Q4_0) = qx_q4_0_8,
              QX_SLOT(TM_Q4_1) = qx_q4_1_8, QX_SLOT(TM_Q5_0) = qx_q5_0_8,
              QX_SLOT(TM_Q5_1) = qx_q5_1_8},
};
