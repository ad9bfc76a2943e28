/*
 * random_impl.h — the arithmetic behind foundry/random.h, shared by the
 * front end (tensor/random.c), the CPU kernel (tensor/cpu/cpu_random.c),
 * future device backends and the tests.  Never installed.
 *
 * Everything here is integer arithmetic or IEEE-754 basic operations (+ - *
 * / sqrt, each correctly rounded) evaluated in a fixed order; the Makefile
 * builds with -ffp-contract=off so no fused multiply-add changes a rounding.
 * libm's log/sin/cos are not used for the random numbers: their last bit
 * differs between libraries (and between FMA and non-FMA code paths of one
 * library), which would make randn differ across machines.
 */
#ifndef FOUNDRY_RANDOM_IMPL_H
#define FOUNDRY_RANDOM_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ Philox */

/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11): 10 rounds of two 32x32->64 multiplies with a
 * Weyl-sequence key schedule.  out may alias ctr. */
static inline void tm__philox4x32_10(const uint32_t ctr[4],
                                     const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The four 32-bit outputs of block `block` for a 64-bit key, as random.h
 * lays them out: key words (lo, hi), counter words (lo, hi, 0, 0). */
static inline void tm__philox_block(uint64_t key, uint64_t block,
                                    uint32_t out[4])
{
    uint32_t c[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0};
    uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    tm__philox4x32_10(c, k, out);
}

/* The j-th (0 or 1) 64-bit draw of a block: words 2j (low) and 2j+1. */
static inline uint64_t tm__philox_u64(const uint32_t x[4], int j)
{
    return (uint64_t)x[2 * j] | (uint64_t)x[2 * j + 1] << 32;
}

/* splitmix64's finalizer (Steele, Lea, Flood, OOPSLA'14): a bijective
 * 64-bit mix with full avalanche. */
static inline uint64_t tm__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* floor(a * b / 2^64), from 32-bit halves (C11 has no 128-bit type). */
static inline uint64_t tm__mulhi64(uint64_t a, uint64_t b)
{
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* ------------------------------------------------------ uniform floats */

/* [0, 1) with 24 random bits (exact in float) and 53 (exact in double). */
static inline double tm__u01_24(uint32_t u) { return (u >> 8) * 0x1p-24; }
static inline double tm__u01_53(uint64_t u) { return (u >> 11) * 0x1p-53; }
/* (0, 1]: the same grid shifted up by one step, so log never sees 0. */
static inline double tm__u01_24_open0(uint32_t u)
{
    return ((u >> 8) + 1) * 0x1p-24;
}
static inline double tm__u01_53_open0(uint64_t u)
{
    return (double)((u >> 11) + 1) * 0x1p-53;
}

/* ------------------------------------------------------------- log */

/* Natural log of a positive finite x (fdlibm's e_log.c scheme with the
 * exact atanh series instead of its minimax fit): x = 2^k m with m in
 * [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f),
 *   log m = f - hfsq + s (hfsq + R),  hfsq = f^2 / 2,
 *   R = 2 s^2/3 + 2 s^4/5 + ... + 2 s^22/23   (|s| < 0.1716: the first
 *   omitted term is below 2^-60 of the result),
 * then k ln2 added in two parts (ln2_hi has 32 significant bits, so k ln2_hi
 * is exact).  Error under 1 ulp; tested against libm (test_random.c).
 * Other inputs are not needed by the generator and return NaN. */
static inline double tm__rng_log(double x)
{
    if (!(x > 0) || x > 0x1.fffffffffffffp1023) return (x - x) / (x - x);
    int k = 0;
    if (x < 0x1p-1022) { /* subnormal: scale into the normal range */
        x *= 0x1p54;
        k = -54;
    }
    uint64_t bits;
    memcpy(&bits, &x, 8);
    k += (int)(bits >> 52) - 1023;
    bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    double m;
    memcpy(&m, &bits, 8); /* [1, 2) */
    if (m >= 0x1.6a09e667f3bcdp0) { /* sqrt(2) rounded up */
        m *= 0.5;
        k += 1;
    }
    const double ln2_hi = 6.93147180369123816490e-01; /* 0x3fe62e42fee00000 */
    const double ln2_lo = 1.90821492927058770002e-10; /* 0x3dea39ef35793c76 */
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double R = z * (0.6666666666666666 +
               z * (0.4 +
               z * (0.2857142857142857 +
               z * (0.2222222222222222 +
               z * (0.18181818181818182 +
               z * (0.15384615384615385 +
               z * (0.13333333333333333 +
               z * (0.11764705882352941 +
               z * (0.10526315789473684 +
               z * (0.09523809523809523 +
               z * 0.08695652173913043))))))))));
    double hfsq = 0.5 * f * f;
    double dk = (double)k;
    return dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
}

/* ---------------------------------------------------------- sin, cos */

/* sin and cos of x in [0, pi/4] by their Taylor series (through x^19 and
 * x^20; the first omitted terms are below 2^-70 there).  Coefficients are
 * the correctly rounded doubles of +-1/n!. */
static inline double tm__sin_kernel(double x)
{
    double z = x * x;
    double p = -0.16666666666666666 +
               z * (0.008333333333333333 +
               z * (-0.0001984126984126984 +
               z * (2.7557319223985893e-06 +
               z * (-2.505210838544172e-08 +
               z * (1.6059043836821613e-10 +
               z * (-7.647163731819816e-13 +
               z * (2.8114572543455206e-15 +
               z * -8.22063524662433e-18)))))));
    return x + x * (z * p);
}

static inline double tm__cos_kernel(double x)
{
    double z = x * x;
    double p = 0.041666666666666664 +
               z * (-0.001388888888888889 +
               z * (2.48015873015873e-05 +
               z * (-2.755731922398589e-07 +
               z * (2.08767569878681e-09 +
               z * (-1.1470745597729725e-11 +
               z * (4.779477332387385e-14 +
               z * (-1.5619206968586225e-16 +
               z * 4.110317623312165e-19)))))));
    double hz = 0.5 * z;
    double w = 1.0 - hz; /* fdlibm's k_cos: keep 1 - z/2 nearly exact */
    return w + (((1.0 - w) - hz) + z * (z * p));
}

/* sin(2 pi u) and cos(2 pi u) for u in [0, 1).  The reduction is done on u,
 * where it is exact: quadrant q = floor(4u), t = 4u - q in [0, 1); for
 * t > 1/2 the complementary angle (1 - t) pi/2 keeps the argument in
 * [0, pi/4].  The only rounding before the kernels is t * (pi/2), so values
 * near the zeros of sin and cos keep their relative accuracy. */
static inline void tm__rng_sincos2pi(double u, double *s, double *c)
{
    double u4 = u * 4.0;              /* exact */
    int q = (int)u4;                  /* 0..3 */
    double t = u4 - (double)q;        /* exact */
    const double pio2 = 1.5707963267948966;
    double a, b; /* sin, cos of t pi/2 */
    if (t <= 0.5) {
        double x = t * pio2;
        a = tm__sin_kernel(x);
        b = tm__cos_kernel(x);
    } else {
        double x = (1.0 - t) * pio2; /* 1 - t exact */
        a = tm__cos_kernel(x);
        b = tm__sin_kernel(x);
    }
    switch (q & 3) {
    case 0: *s = a, *c = b; break;
    case 1: *s = b, *c = -a; break;
    case 2: *s = -a, *c = -b; break;
    default: *s = -b, *c = a; break;
    }
}

/* Box–Muller: the pair (z0, z1) of independent standard normals from
 * u1 in (0, 1] and u2 in [0, 1): r = sqrt(-2 log u1),
 * z0 = r cos(2 pi u2), z1 = r sin(2 pi u2). */
static inline void tm__box_muller(double u1, double u2, double *z0,
                                  double *z1)
{
    double l = tm__rng_log(u1);
    double r = sqrt(-2.0 * l);
    double s, c;
    tm__rng_sincos2pi(u2, &s, &c);
    *z0 = r * c;
    *z1 = r * s;
}

#endif
