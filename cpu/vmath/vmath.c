/*
 * vmath.c — vectorized F32 math (vmath.h): the dispatcher and the portable
 * family.  The algorithms live once in vmath_tmpl.h; every family
 * (portable here, vmath_avx2.c, vmath_avx512.c, vmath_neon.c) instantiates
 * them, so all run the same range reductions and polynomials.
 *
 * Maximum relative error |y - f(x)| / max(|f(x)|, 2^-126) against f
 * computed in double, over every float input (dense sweeps and special
 * values in tests/c/test_vmath.c, which asserts these bounds for each
 * family this CPU runs):
 *
 *   function    bound    method (see vmath_tmpl.h)
 *   exp         1.5e-7   Cody-Waite reduction, Cephes degree-7 polynomial
 *   log         1.5e-7   mantissa in [sqrt(1/2), sqrt 2), Cephes polynomial
 *   tanh        2.5e-7   odd polynomial |x| < 0.625, else 1 - 2/(e^2|x|+1)
 *   sigmoid     2.5e-7   e = exp(-|x|): 1/(1+e) or e/(1+e)
 *   silu        3.0e-7   x * (sigmoid as above), one division
 *   gelu        8.0e-7   x Phi(x), erfc by Numerical Recipes erfcc with the
 *                        exponent -x^2/2 + q in double (accurate tails)
 *   gelu_tanh   4.0e-7   x / (1 + exp(w)), w in double, stable split
 *
 * (2^-126 in the denominator: subnormal results carry an absolute error of
 * about one subnormal step.)  Special values are exact: NaN propagates;
 * exp: overflow -> inf, underflow -> 0 or subnormal; log(0) = -inf,
 * log(x < 0) = NaN, log(inf) = inf; tanh, sigmoid, silu, gelu, gelu_tanh
 * reach their limits exactly (tanh(+-inf) = +-1, sigmoid(-inf) = 0,
 * sigmoid(inf) = 1, gelu(x << 0) = -0 without NaN); as in the double
 * reference formulas, silu(-inf), gelu(-inf) and gelu_tanh(-inf) are NaN
 * (-inf * 0).
 *
 * The SIMD families fuse multiply-adds, the portable one does not, so
 * families agree to within the bounds above, not bitwise; each family is
 * deterministic and elementwise, hence the same for any thread count.
 */
#include "vmath.h"

#include "../cpu_features.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------- portable family: one float */
#define TMV_FAM portable
#define TMV_W 1
typedef float V;
typedef uint32_t VI;
typedef int M;

static inline float tmv_clamp(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x; /* NaN falls through */
}
static inline uint32_t tmv_asi(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float tmv_asv(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define V_SET(c) (c)
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_FMA(a, b, c) ((a) * (b) + (c)) /* not fused (-ffp-contract=off) */
#define V_MIN(a, b) ((a) < (b) ? (a) : (b))
#define V_CLAMP(x, lo, hi) tmv_clamp(x, lo, hi)
#define V_ABS(x) fabsf(x)
#define V_SIGNXOR(r, x) tmv_asv(tmv_asi(r) ^ (tmv_asi(x) & 0x80000000u))
#define M_LT(a, b) ((a) < (b))
#define M_GE(a, b) ((a) >= (b))
#define M_EQ(a, b) ((a) == (b))
#define M_NAN(x) ((x) != (x))
#define V_SEL(m, a, b) ((m) ? (a) : (b))
#define I_SET(c) ((uint32_t)(c))
#define I_ADD(a, b) ((a) + (b))
#define I_SUB(a, b) ((a) - (b))
#define I_AND(a, b) ((a) & (b))
#define I_OR(a, b) ((a) | (b))
#define I_SRA1(a) (((a) >> 1) | ((a) & 0x80000000u))
#define I_SRL23(a) ((a) >> 23)
#define I_SLL23(a) ((a) << 23)
/* Wraps values above INT32_MAX (implementation-defined, never undefined;
 * only reached for NaN inputs whose result is replaced). */
#define I_TOF(a) ((float)(int32_t)(a))
#define V_ASI(x) tmv_asi(x)
#define I_ASV(u) tmv_asv(u)
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))

static inline void tmv_dd_split(double d, float *hi, float *lo)
{
    *hi = (float)d;
    *lo = (float)(d - (double)*hi);
}

static inline void tmv_dd_qsub(float q, float a, float *hi, float *lo)
{
    double ad = a;
    tmv_dd_split((double)q - 0.5 * ad * ad, hi, lo);
}

static inline void tmv_dd_gt(float x, float *hi, float *lo)
{
    double xd = x;
    double w = xd * (-1.5957691216057308 - 0.07135481627260025 * xd * xd);
    tmv_dd_split(w < -200.0 ? -200.0 : w > 200.0 ? 200.0 : w, hi, lo);
}

#include "vmath_tmpl.h"

/* ------------------------------------------------------------ dispatch */

/* One family's entry points. */
typedef void (*tmv_fn)(int64_t n, const float *x, float *y);
typedef struct {
    tmv_fn exp, log, tanh, sigmoid, gelu, gelu_tanh, silu, relu;
} tmv_family;

#define TMV_FAMILY(fam)                                                       \
    {tm__vexp_f32_##fam,       tm__vlog_f32_##fam,  tm__vtanh_f32_##fam,      \
     tm__vsigmoid_f32_##fam,   tm__vgelu_f32_##fam,                           \
     tm__vgelu_tanh_f32_##fam, tm__vsilu_f32_##fam, tm__vrelu_f32_##fam}

static const tmv_family tmv_portable = TMV_FAMILY(portable);
#if defined(__x86_64__)
static const tmv_family tmv_avx2 = TMV_FAMILY(avx2);
static const tmv_family tmv_avx512 = TMV_FAMILY(avx512);
#endif
#if defined(__aarch64__)
static const tmv_family tmv_neon = TMV_FAMILY(neon);
#endif

/* The family of the CPU's kernel choice (cpu_features.h). */
static const tmv_family *tmv_pick(void)
{
    switch (tm__cpu_isa()) {
#if defined(__x86_64__)
    case TM__ISA_AVX512: return &tmv_avx512;
    case TM__ISA_AVX2: return &tmv_avx2;
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return &tmv_neon;
#endif
    default: return &tmv_portable;
    }
}

void tm__vexp_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->exp(n, x, y);
}

void tm__vlog_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->log(n, x, y);
}

void tm__vtanh_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->tanh(n, x, y);
}

void tm__vsigmoid_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->sigmoid(n, x, y);
}

void tm__vgelu_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->gelu(n, x, y);
}

void tm__vgelu_tanh_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->gelu_tanh(n, x, y);
}

void tm__vsilu_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->silu(n, x, y);
}

void tm__vrelu_f32(int64_t n, const float *x, float *y)
{
    tmv_pick()->relu(n, x, y);
}
