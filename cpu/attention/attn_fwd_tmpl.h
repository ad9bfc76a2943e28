/*
 * attn_fwd_tmpl.h — the micro-kernels of the tiled attention forward
 * (attn_fwd.h), written once over a small vector vocabulary and included
 * by one file per kernel family (no include guard).  The includer defines
 *   AF_FAM                      the family's suffix (portable, avx2, ...)
 *   AF_W, AF_V, AF_VI           floats per vector, float / int32 vectors
 *   AF_R, AF_NV                 rows (4 or more) of a register block and
 *                               vectors per row (scores: keys, P.V: output
 *                               columns)
 *   AF_ZERO() AF_SET1(x) AF_LOAD(p) AF_STORE(p, v)       (unaligned)
 *   AF_FMA(a, b, c) = a*b + c, AF_MUL AF_ADD AF_SUB AF_MAX AF_CLAMP(x,lo,hi)
 *   AF_HSUM(v) AF_HMAX(v)       horizontal sum / max to a float
 *   AF_ASI AF_ASV AF_ISET AF_IADD AF_ISUB AF_ISRA1 AF_ISLL23  (for exp)
 *   optionally AF_SCALE2N(p, n) = p * 2^n (n integral, p near 1), exact
 *   to the subnormals and 0 (else the split integer scaling below)
 * Register blocks are AF_R (or 4, or 1) rows by AF_NV (or 1) vectors: the loops
 * over them have constant bounds and are unrolled, so their accumulators
 * live in registers.
 */
#include "attn_fwd.h"

#define AF_CAT_(a, b) a##_##b
#define AF_CAT(a, b) AF_CAT_(a, b)
#define AF(name) AF_CAT(af_##name, AF_FAM)
#define AF_INL static inline __attribute__((always_inline))

/* exp(x) for the x <= 0 of a softmax (and -inf, giving 0): the Cephes
 * expf reduction and polynomial of vmath (cpu/vmath/vmath_tmpl.h), whose
 * bound, a few ulp, holds here too; results below 2^-126 flush towards 0
 * through the same split scaling. */
AF_INL AF_V AF(exp)(AF_V x)
{
    x = AF_CLAMP(x, AF_SET1(-104.0f), AF_SET1(89.0f));
    AF_V t = AF_FMA(x, AF_SET1(1.44269504088896341f), AF_SET1(0x1.8p23f));
    AF_V nf = AF_SUB(t, AF_SET1(0x1.8p23f));
    AF_V r = AF_FMA(nf, AF_SET1(-0.693359375f), x);
    r = AF_FMA(nf, AF_SET1(2.12194440e-4f), r);
    AF_V z = AF_MUL(r, r);
    AF_V p = AF_SET1(1.9875691500e-4f);
    p = AF_FMA(p, r, AF_SET1(1.3981999507e-3f));
    p = AF_FMA(p, r, AF_SET1(8.3334519073e-3f));
    p = AF_FMA(p, r, AF_SET1(4.1665795894e-2f));
    p = AF_FMA(p, r, AF_SET1(1.6666665459e-1f));
    p = AF_FMA(p, r, AF_SET1(5.0000001201e-1f));
    p = AF_ADD(AF_FMA(p, z, r), AF_SET1(1.0f));
#ifdef AF_SCALE2N
    (void)t;
    return AF_SCALE2N(p, nf);
#else
    AF_VI n = AF_ISUB(AF_ASI(t), AF_ISET(0x4B400000));
    AF_VI n1 = AF_ISRA1(n);
    AF_VI n2 = AF_ISUB(n, n1);
    AF_V s1 = AF_ASV(AF_ISLL23(AF_IADD(n1, AF_ISET(127))));
    AF_V s2 = AF_ASV(AF_ISLL23(AF_IADD(n2, AF_ISET(127))));
    return AF_MUL(AF_MUL(p, s1), s2);
#endif
}

/* R rows of scores against AF_NV vectors of keys of a packed tile. */
AF_INL void AF(sblk)(const int R, int64_t d, const float *q, int64_t ldq,
                     const float *kt, float *s, AF_V sc)
{
    AF_V acc[AF_R][AF_NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int v = 0; v < AF_NV; v++) acc[r][v] = AF_ZERO();
    for (int64_t c = 0; c < d; c++) {
        AF_V kv[AF_NV];
#pragma GCC unroll 8
        for (int v = 0; v < AF_NV; v++)
            kv[v] = AF_LOAD(kt + c * AF_KT + v * AF_W);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            AF_V qb = AF_SET1(q[r * ldq + c]);
#pragma GCC unroll 8
            for (int v = 0; v < AF_NV; v++)
                acc[r][v] = AF_FMA(qb, kv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int v = 0; v < AF_NV; v++)
            AF_STORE(s + r * AF_KT + v * AF_W, AF_MUL(acc[r][v], sc));
}

static void AF(s_packed)(int64_t nr, int64_t d, const float *q, int64_t ldq,
                         const float *kt, float *s, float scale)
{
    const AF_V sc = AF_SET1(scale);
    int64_t r = 0;
    for (; r + AF_R <= nr; r += AF_R)
        for (int64_t jb = 0; jb < AF_KT; jb += AF_NV * AF_W)
            AF(sblk)(AF_R, d, q + r * ldq, ldq, kt + jb,
                     s + r * AF_KT + jb, sc);
    for (; r + 4 <= nr; r += 4)
        for (int64_t jb = 0; jb < AF_KT; jb += AF_NV * AF_W)
            AF(sblk)(4, d, q + r * ldq, ldq, kt + jb, s + r * AF_KT + jb,
                     sc);
    for (; r < nr; r++)
        for (int64_t jb = 0; jb < AF_KT; jb += AF_NV * AF_W)
            AF(sblk)(1, d, q + r * ldq, ldq, kt + jb, s + r * AF_KT + jb,
                     sc);
}

/* Scores from key rows: four keys at a time per query row, each a dot
 * product along d reduced at the end (few rows: the decode path). */
static void AF(s_rows)(int64_t nr, int64_t nk, int64_t dp, const float *q,
                       int64_t ldq, const float *k, int64_t ldk, float *s,
                       int64_t lds, float scale)
{
    for (int64_t r = 0; r < nr; r++) {
        const float *qr = q + r * ldq;
        float *sr = s + r * lds;
        int64_t j = 0;
        for (; j + 4 <= nk; j += 4) {
            const float *k0 = k + j * ldk;
            AF_V a0 = AF_ZERO(), a1 = AF_ZERO(), a2 = AF_ZERO(),
                 a3 = AF_ZERO();
            for (int64_t c = 0; c < dp; c += AF_W) {
                AF_V qv = AF_LOAD(qr + c);
                a0 = AF_FMA(qv, AF_LOAD(k0 + c), a0);
                a1 = AF_FMA(qv, AF_LOAD(k0 + ldk + c), a1);
                a2 = AF_FMA(qv, AF_LOAD(k0 + 2 * ldk + c), a2);
                a3 = AF_FMA(qv, AF_LOAD(k0 + 3 * ldk + c), a3);
            }
            sr[j] = scale * AF_HSUM(a0);
            sr[j + 1] = scale * AF_HSUM(a1);
            sr[j + 2] = scale * AF_HSUM(a2);
            sr[j + 3] = scale * AF_HSUM(a3);
        }
        for (; j < nk; j++) {
            AF_V a0 = AF_ZERO();
            for (int64_t c = 0; c < dp; c += AF_W)
                a0 = AF_FMA(AF_LOAD(qr + c), AF_LOAD(k + j * ldk + c), a0);
            sr[j] = scale * AF_HSUM(a0);
        }
    }
}

/* R rows of the output, NC vectors of its columns, += P.V over nk keys. */
AF_INL void AF(pvblk)(const int R, const int NC, int64_t nk, const float *p,
                      int64_t ldp, const float *v, int64_t ldv, float *o,
                      int64_t ldo)
{
    AF_V acc[AF_R][AF_NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int x = 0; x < NC; x++)
            acc[r][x] = AF_LOAD(o + r * ldo + x * AF_W);
    for (int64_t j = 0; j < nk; j++) {
        AF_V vv[AF_NV];
#pragma GCC unroll 8
        for (int x = 0; x < NC; x++) vv[x] = AF_LOAD(v + j * ldv + x * AF_W);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            AF_V pb = AF_SET1(p[r * ldp + j]);
#pragma GCC unroll 8
            for (int x = 0; x < NC; x++)
                acc[r][x] = AF_FMA(pb, vv[x], acc[r][x]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int x = 0; x < NC; x++)
            AF_STORE(o + r * ldo + x * AF_W, acc[r][x]);
}

AF_INL void AF(pv_rows)(const int R, int64_t nk, int64_t dvp, const float *p,
                        int64_t ldp, const float *v, int64_t ldv, float *o,
                        int64_t ldo)
{
    int64_t c = 0;
    for (; c + AF_NV * AF_W <= dvp; c += AF_NV * AF_W)
        AF(pvblk)(R, AF_NV, nk, p, ldp, v + c, ldv, o + c, ldo);
    for (; c < dvp; c += AF_W)
        AF(pvblk)(R, 1, nk, p, ldp, v + c, ldv, o + c, ldo);
}

static void AF(pv)(int64_t nr, int64_t nk, int64_t dvp, const float *p,
                   int64_t ldp, const float *v, int64_t ldv, float *o,
                   int64_t ldo)
{
    int64_t r = 0;
    for (; r + AF_R <= nr; r += AF_R)
        AF(pv_rows)(AF_R, nk, dvp, p + r * ldp, ldp, v, ldv, o + r * ldo,
                    ldo);
    for (; r + 4 <= nr; r += 4)
        AF(pv_rows)(4, nk, dvp, p + r * ldp, ldp, v, ldv, o + r * ldo, ldo);
    for (; r < nr; r++)
        AF(pv_rows)(1, nk, dvp, p + r * ldp, ldp, v, ldv, o + r * ldo, ldo);
}

static float AF(row_max)(const float *s)
{
    AF_V m = AF_LOAD(s);
    for (int64_t j = AF_W; j < AF_KT; j += AF_W) m = AF_MAX(m, AF_LOAD(s + j));
    return AF_HMAX(m);
}

static float AF(row_exp)(float *s, float m)
{
    const AF_V mv = AF_SET1(m);
    AF_V sum = AF_ZERO();
    for (int64_t j = 0; j < AF_KT; j += AF_W) {
        AF_V e = AF(exp)(AF_SUB(AF_LOAD(s + j), mv));
        AF_STORE(s + j, e);
        sum = AF_ADD(sum, e);
    }
    return AF_HSUM(sum);
}

static void AF(scale)(int64_t n, float *x, float a)
{
    const AF_V av = AF_SET1(a);
    for (int64_t c = 0; c < n; c += AF_W)
        AF_STORE(x + c, AF_MUL(AF_LOAD(x + c), av));
}

const tm__attn_fwd_kernels AF_CAT(tm__attn_fwd, AF_FAM) = {
    AF_NAME,  AF_W,          AF(s_packed), AF(s_rows),
    AF(pv),   AF(row_max),   AF(row_exp),  AF(scale)};

#undef AF_CAT_
#undef AF_CAT
#undef AF
#undef AF_INL
