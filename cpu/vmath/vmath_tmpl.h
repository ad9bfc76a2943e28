/*
 * vmath_tmpl.h — the one implementation of the vectorized F32 math
 * (vmath.h), written once over a small vector vocabulary and instantiated
 * per kernel family: vmath.c (portable, one float per "vector"),
 * vmath_avx2.c, vmath_avx512.c, vmath_neon.c.  Every family thus runs the
 * same range reduction and the same polynomials; they differ only in fused
 * (SIMD) versus separate (portable) multiply-add, which the error bounds
 * in vmath.h cover.
 *
 * Without TMV_FAM defined this header only declares the family entry
 * points (for the dispatcher in vmath.c).  With it, the includer must first
 * define:
 *   TMV_W                       elements per vector
 *   V, VI, M                    float vector, int32 vector, compare mask
 *   V_SET(c) V_ADD V_SUB V_MUL V_DIV V_FMA(a,b,c)=a*b+c V_MIN(a,b)
 *   V_CLAMP(x,lo,hi)            clamp that keeps a NaN x NaN
 *   V_ABS(x) V_SIGNXOR(r,x)     r with its sign flipped where x < 0 (sign bit)
 *   M_LT M_GE M_EQ M_NAN(x)     ordered compares; M_NAN: x is NaN
 *   V_SEL(m,a,b)                m ? a : b per lane
 *   I_SET I_ADD I_SUB I_AND I_OR I_SRA1 (arithmetic >> 1) I_SRL23 (logical
 *   >> 23) I_SLL23 I_TOF (int32 -> float) V_ASI/I_ASV (bit casts)
 *   V_LOAD V_STORE              unaligned
 *   tmv_dd_qsub(q, a, &hi, &lo) hi + lo = q - a*a/2, computed in double
 *   tmv_dd_gt(x, &hi, &lo)      hi + lo = clamp(-2 sqrt(2/pi)(x + 0.044715
 *                               x^3), -200, 200), computed in double
 */
#ifndef FOUNDRY_VMATH_TMPL_DECL
#define FOUNDRY_VMATH_TMPL_DECL

#include <stdint.h>
#include <string.h>

#define TMV_DECLARE(fam)                                                      \
    void tm__vexp_f32_##fam(int64_t n, const float *x, float *y);             \
    void tm__vlog_f32_##fam(int64_t n, const float *x, float *y);             \
    void tm__vtanh_f32_##fam(int64_t n, const float *x, float *y);            \
    void tm__vsigmoid_f32_##fam(int64_t n, const float *x, float *y);         \
    void tm__vgelu_f32_##fam(int64_t n, const float *x, float *y);            \
    void tm__vgelu_tanh_f32_##fam(int64_t n, const float *x, float *y);       \
    void tm__vsilu_f32_##fam(int64_t n, const float *x, float *y);          \
    void tm__vrelu_f32_##fam(int64_t n, const float *x, float *y);

TMV_DECLARE(portable)
TMV_DECLARE(avx2)
TMV_DECLARE(avx512)
TMV_DECLARE(neon)

#endif

#ifdef TMV_FAM

/* exp(x): n = round(x / ln2), r = x - n ln2 (Cody-Waite, ln2 split so that
 * n * ln2_hi is exact), e^r by the Cephes expf polynomial on |r| <= ln2/2,
 * then scaled by 2^n as 2^(n>>1) * 2^(n-(n>>1)) so that results down to the
 * subnormals (n = -150) and up to overflow (n = 128) come out right with a
 * single rounding.  The clamp to [-104, 89] makes exp(-inf) = 0 and
 * exp(inf) = inf and keeps n in range; NaN passes through.
 * tmv_exp_k(x, k) is exp(x) * 2^k (k = 0, or k = 24 for x <= 0, clamped
 * at -121 instead so that exp(x) * 2^24 still rounds to 0 below it: tiny results stay
 * normal, so products with them round once, into the subnormals, at the
 * final * 2^-24). */
static inline V tmv_exp_k(V x, int k)
{
    x = V_CLAMP(x, V_SET(k ? -121.0f : -104.0f), V_SET(89.0f));
    V t = V_FMA(x, V_SET(1.44269504088896341f), V_SET(0x1.8p23f));
    V nf = V_SUB(t, V_SET(0x1.8p23f));
    V r = V_FMA(nf, V_SET(-0.693359375f), x);
    r = V_FMA(nf, V_SET(2.12194440e-4f), r);
    V z = V_MUL(r, r);
    V p = V_SET(1.9875691500e-4f);
    p = V_FMA(p, r, V_SET(1.3981999507e-3f));
    p = V_FMA(p, r, V_SET(8.3334519073e-3f));
    p = V_FMA(p, r, V_SET(4.1665795894e-2f));
    p = V_FMA(p, r, V_SET(1.6666665459e-1f));
    p = V_FMA(p, r, V_SET(5.0000001201e-1f));
    p = V_ADD(V_FMA(p, z, r), V_SET(1.0f));
    VI n = I_SUB(V_ASI(t), I_SET(0x4B400000 - k)); /* t = 1.5*2^23 + n */
    VI n1 = I_SRA1(n);
    VI n2 = I_SUB(n, n1);
    V s1 = I_ASV(I_SLL23(I_ADD(n1, I_SET(127))));
    V s2 = I_ASV(I_SLL23(I_ADD(n2, I_SET(127))));
    return V_MUL(V_MUL(p, s1), s2);
}

static inline V tmv_exp(V x) { return tmv_exp_k(x, 0); }

/* log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)), log(1 + f) by the
 * Cephes logf polynomial; subnormal x are scaled by 2^23 first.
 * log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays NaN. */
static inline V tmv_log(V x)
{
    M sub = M_LT(x, V_SET(0x1p-126f));
    V xs = V_SEL(sub, V_MUL(x, V_SET(0x1p23f)), x);
    VI b = V_ASI(xs);
    V fe = V_SUB(I_TOF(I_SUB(I_SRL23(b), I_SET(126))),
                 V_SEL(sub, V_SET(23.0f), V_SET(0.0f)));
    V m = I_ASV(I_OR(I_AND(b, I_SET(0x007FFFFF)), I_SET(0x3F000000)));
    M lo = M_LT(m, V_SET(0.70710678118654752f));
    V f = V_SUB(V_SEL(lo, V_ADD(m, m), m), V_SET(1.0f));
    fe = V_SUB(fe, V_SEL(lo, V_SET(1.0f), V_SET(0.0f)));
    V z = V_MUL(f, f);
    V p = V_SET(7.0376836292e-2f);
    p = V_FMA(p, f, V_SET(-1.1514610310e-1f));
    p = V_FMA(p, f, V_SET(1.1676998740e-1f));
    p = V_FMA(p, f, V_SET(-1.2420140846e-1f));
    p = V_FMA(p, f, V_SET(1.4249322787e-1f));
    p = V_FMA(p, f, V_SET(-1.6668057665e-1f));
    p = V_FMA(p, f, V_SET(2.0000714765e-1f));
    p = V_FMA(p, f, V_SET(-2.4999993993e-1f));
    p = V_FMA(p, f, V_SET(3.3333331174e-1f));
    V y = V_MUL(V_MUL(p, f), z);
    y = V_FMA(fe, V_SET(-2.12194440e-4f), y);
    y = V_FMA(z, V_SET(-0.5f), y);
    V r = V_ADD(f, y);
    r = V_FMA(fe, V_SET(0.693359375f), r);
    r = V_SEL(M_EQ(x, V_SET(INFINITY)), x, r);
    r = V_SEL(M_EQ(x, V_SET(0.0f)), V_SET(-INFINITY), r);
    r = V_SEL(M_LT(x, V_SET(0.0f)), V_SET(NAN), r);
    return V_SEL(M_NAN(x), x, r);
}

/* tanh: odd Cephes tanhf polynomial for |x| < 0.625, else
 * 1 - 2 / (exp(2|x|) + 1) (exactly 1 once exp(2|x|) > 2^25, inf included);
 * the sign is restored last, so tanh(-0) = -0. */
static inline V tmv_tanh(V x)
{
    V ax = V_ABS(x);
    V s = V_MUL(ax, ax);
    V p = V_SET(-5.70498872745e-3f);
    p = V_FMA(p, s, V_SET(2.06390887954e-2f));
    p = V_FMA(p, s, V_SET(-5.37397155531e-2f));
    p = V_FMA(p, s, V_SET(1.33314422036e-1f));
    p = V_FMA(p, s, V_SET(-3.33332819422e-1f));
    V rp = V_FMA(V_MUL(p, s), ax, ax);
    V e = tmv_exp(V_ADD(ax, ax));
    V rb = V_SUB(V_SET(1.0f), V_DIV(V_SET(2.0f), V_ADD(e, V_SET(1.0f))));
    return V_SIGNXOR(V_SEL(M_LT(ax, V_SET(0.625f)), rp, rb), x);
}

/* sigmoid(x) = 1/(1 + e) (x >= 0) or e/(1 + e) (x < 0), e = exp(-|x|):
 * exp never overflows, tiny results stay relatively accurate, and the
 * limits 0 and 1 come out exactly.  e is carried as e24 = e 2^24 so that
 * x e does not round twice when e is subnormal. */
#define TMV_2P24 16777216.0f
#define TMV_2M24 5.9604644775390625e-8f
static inline V tmv_sigmoid_parts(V x, V *e24)
{
    *e24 = tmv_exp_k(V_SUB(V_SET(0.0f), V_ABS(x)), 24);
    return V_FMA(*e24, V_SET(TMV_2M24), V_SET(1.0f)); /* 1 + e */
}

static inline V tmv_sigmoid(V x)
{
    V e24;
    V d = tmv_sigmoid_parts(x, &e24);
    return V_SEL(M_GE(x, V_SET(0.0f)), V_DIV(V_SET(1.0f), d),
                 V_MUL(V_DIV(e24, d), V_SET(TMV_2M24)));
}

static inline V tmv_silu(V x)
{
    V e24;
    V d = tmv_sigmoid_parts(x, &e24);
    return V_SEL(M_GE(x, V_SET(0.0f)), V_DIV(x, d),
                 V_MUL(V_DIV(V_MUL(x, e24), d), V_SET(TMV_2M24)));
}

/* gelu(x) = x Phi(x), Phi(-|x|) = erfc(z)/2 with z = |x|/sqrt2 and
 * erfc(z) = t exp(-z^2 + q(t)), t = 1/(1 + z/2) (Numerical Recipes erfcc,
 * Chebyshev fit, fractional error < 1.2e-7 for all z >= 0).  The exponent
 * -z^2 + q is formed in double and split into float hi + lo, so that its
 * size (~50 at x = -10) costs no accuracy: exp(hi + lo) = exp(hi)(1 + lo).
 * Phi(x) = 1 - Phi(-x) for x >= 0 (no cancellation: Phi(-x) <= 1/2). */
static inline V tmv_gelu(V x)
{
    V ax = V_MIN(V_ABS(x), V_SET(20.0f)); /* erfc(20/sqrt2) = 0 in float */
    V t = V_DIV(V_SET(1.0f),
                V_FMA(ax, V_SET(0.35355339059327376f), V_SET(1.0f)));
    V q = V_SET(0.17087277f);
    q = V_FMA(q, t, V_SET(-0.82215223f));
    q = V_FMA(q, t, V_SET(1.48851587f));
    q = V_FMA(q, t, V_SET(-1.13520398f));
    q = V_FMA(q, t, V_SET(0.27886807f));
    q = V_FMA(q, t, V_SET(-0.18628806f));
    q = V_FMA(q, t, V_SET(0.09678418f));
    q = V_FMA(q, t, V_SET(0.37409196f));
    q = V_FMA(q, t, V_SET(1.00002368f));
    q = V_FMA(q, t, V_SET(-1.26551223f));
    V hi, lo;
    tmv_dd_qsub(q, ax, &hi, &lo);
    V e24 = tmv_exp_k(hi, 24);
    e24 = V_FMA(e24, lo, e24);
    V h24 = V_MUL(V_MUL(V_SET(0.5f), t), e24); /* Phi(-|x|) 2^24 */
    V pos = V_MUL(x, V_FMA(h24, V_SET(-TMV_2M24), V_SET(1.0f)));
    V neg = V_MUL(V_MUL(x, h24), V_SET(TMV_2M24));
    return V_SEL(M_GE(x, V_SET(0.0f)), pos, neg);
}

/* gelu_tanh(x) = x sigmoid(-w) = x / (1 + exp(w)), w = -2u,
 * u = sqrt(2/pi)(x + 0.044715 x^3); w is formed in double (it reaches ~90
 * where the result is still a normal float) and used as float hi + lo, in
 * the stable split of tmv_sigmoid (exp(-|w|) only). */
static inline V tmv_gelu_tanh(V x)
{
    V hi, lo;
    tmv_dd_gt(x, &hi, &lo);
    V a = V_SUB(V_SET(0.0f), V_ABS(hi));          /* -|w| (hi part) */
    V alo = V_SUB(V_SET(0.0f), V_SIGNXOR(lo, hi)); /* its lo part */
    V e24 = tmv_exp_k(a, 24);
    e24 = V_FMA(e24, alo, e24);
    V d = V_FMA(e24, V_SET(TMV_2M24), V_SET(1.0f));
    return V_SEL(M_GE(hi, V_SET(0.0f)),
                 V_MUL(V_DIV(V_MUL(x, e24), d), V_SET(TMV_2M24)),
                 V_DIV(x, d));
}

/* relu: 0 where x <= 0 (an ordered compare: NaN passes through, -0
 * becomes +0), as a select rather than a branch. */
static inline V tmv_relu(V x)
{
    return V_SEL(M_GE(V_SET(0.0f), x), V_SET(0.0f), x);
}

/* ------------------------------------------------------------- drivers */
#define TMV_CAT_(a, b) a##b
#define TMV_CAT(a, b) TMV_CAT_(a, b)
/* Prefetching 4 KiB ahead keeps the long kernels (gelu) from stalling on
 * memory on large arrays (3x on gelu at 16M floats); the address is formed
 * as an integer, as it may lie past the array (prefetches never fault). */
#if defined(__GNUC__)
#define TMV_PREFETCH(p) __builtin_prefetch((const void *)((uintptr_t)(p) + 4096))
#else
#define TMV_PREFETCH(p) ((void)(p))
#endif
/* The driver of every function: whole vectors, then the tail through a
 * zero-padded vector.  Always inlined into each entry point below, so fn
 * (a constant there) is inlined too. */
#if defined(__GNUC__)
#define TMV_INLINE inline __attribute__((always_inline))
#else
#define TMV_INLINE inline
#endif
static TMV_INLINE void tmv_drive(int64_t n, const float *x, float *y,
                                 V (*fn)(V))
{
    int64_t i = 0;
    for (; i + TMV_W <= n; i += TMV_W) {
        TMV_PREFETCH(x + i);
        V_STORE(y + i, fn(V_LOAD(x + i)));
    }
    if (i < n) {
        float b[TMV_W] = {0};
        memcpy(b, x + i, (size_t)(n - i) * sizeof *b);
        V_STORE(b, fn(V_LOAD(b)));
        memcpy(y + i, b, (size_t)(n - i) * sizeof *b);
    }
}

void TMV_CAT(tm__vexp_f32_, TMV_FAM)(int64_t n, const float *x, float *y)
{
    tmv_drive(n, x, y, tmv_exp);
}

void TMV_CAT(tm__vlog_f32_, TMV_FAM)(int64_t n, const float *x, float *y)
{
    tmv_drive(n, x, y, tmv_log);
}

void TMV_CAT(tm__vtanh_f32_, TMV_FAM)(int64_t n, const float *x, float *y)
{
    tmv_drive(n, x, y, tmv_tanh);
}

void TMV_CAT(tm__vsigmoid_f32_, TMV_FAM)(int64_t n, const float *x,
                                          float *y)
{
    tmv_drive(n, x, y, tmv_sigmoid);
}

void TMV_CAT(tm__vgelu_f32_, TMV_FAM)(int64_t n, const float *x, float *y)
{
    tmv_drive(n, x, y, tmv_gelu);
}

void TMV_CAT(tm__vgelu_tanh_f32_, TMV_FAM)(int64_t n, const float *x,
                                            float *y)
{
    tmv_drive(n, x, y, tmv_gelu_tanh);
}

void TMV_CAT(tm__vsilu_f32_, TMV_FAM)(int64_t n, const float *x, float *y)
{
    tmv_drive(n, x, y, tmv_silu);
}

void TMV_CAT(tm__vrelu_f32_, TMV_FAM)(int64_t n, const float *x, float *y)
{
    tmv_drive(n, x, y, tmv_relu);
}

#endif
