/* test_vmath.c — vectorized F32 math (cpu/vmath/vmath.h) on every kernel
 * family this CPU runs: maximum relative error against double libm over
 * dense sweeps (every 4099th float bit pattern, plus uniform grids over
 * each function's interesting range) must stay within the bounds
 * documented in vmath.c; special values are exact; vector tails and
 * in-place calls give the same bits as full vectors; families agree.
 * TM_VMATH_VERBOSE=1 prints the measured maxima. */
#include "harness.h"
#include "../../cpu/cpu_features.h"
#include "../../cpu/vmath/vmath.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*vfn)(int64_t n, const float *x, float *y);

static double ref_sigmoid(double x)
{
    double e = exp(-fabs(x));
    return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
static double ref_exp(double x) { return exp(x); }
static double ref_log(double x) { return log(x); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_silu(double x) { return x * ref_sigmoid(x); }
static double ref_gelu(double x)
{
    return 0.5 * x * erfc(-x * 0.70710678118654752440);
}
static double ref_gelu_tanh(double x)
{
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

typedef struct {
    const char *name;
    vfn f;
    double (*ref)(double);
    double bound; /* the documented bound (vmath.c) */
    float lo, hi; /* the uniform grid */
} vcase;

static const vcase cases[] = {
    {"exp", tm__vexp_f32, ref_exp, 1.5e-7, -105.0f, 90.0f},
    {"log", tm__vlog_f32, ref_log, 1.5e-7, 0.0f, 4.0f},
    {"tanh", tm__vtanh_f32, ref_tanh, 2.5e-7, -12.0f, 12.0f},
    {"sigmoid", tm__vsigmoid_f32, ref_sigmoid, 2.5e-7, -110.0f, 30.0f},
    {"silu", tm__vsilu_f32, ref_silu, 3.0e-7, -110.0f, 30.0f},
    {"gelu", tm__vgelu_f32, ref_gelu, 8.0e-7, -15.0f, 15.0f},
    {"gelu_tanh", tm__vgelu_tanh_f32, ref_gelu_tanh, 4.0e-7, -15.0f, 15.0f},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Relative error of y against the double reference r, with 2^-126 as the
 * smallest denominator (subnormal results: absolute error).  Infinities
 * and NaN must match exactly (an overflowing reference must give inf). */
static double rel_err(float y, double r)
{
    if (isnan(r)) return isnan(y) ? 0 : INFINITY;
    if (isnan(y)) return INFINITY;
    if (isinf((float)r) || isinf(y)) {
        if (isinf(y) && (y > 0) == (r > 0) && fabs(r) >= FLT_MAX) return 0;
        if (isinf(y)) return INFINITY;
        /* r rounds to inf but y is finite: fine if y is FLT_MAX-ish */
    }
    double d = fabs((double)y - r);
    double m = fabs(r) > 0x1p-126 ? fabs(r) : 0x1p-126;
    return d / m;
}

/* The inputs: every 4099th bit pattern (both signs, all binades, NaN and
 * inf patterns included) and a uniform grid over [lo, hi]. */
#ifdef __aarch64__
enum { STRIDE = 16411, NGRID = 1 << 16 }; /* qemu is slow */
#else
enum { STRIDE = 4099, NGRID = 1 << 18 };
#endif

static int64_t make_inputs(float *x, float lo, float hi)
{
    int64_t n = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += STRIDE) {
        uint32_t b = (uint32_t)u;
        memcpy(&x[n++], &b, sizeof b);
    }
    for (int i = 0; i < NGRID; i++)
        x[n++] = lo + (hi - lo) * (float)i / (float)(NGRID - 1);
    return n;
}
#define MAXN (0x100000000 / STRIDE + 2 + NGRID)

static bool verbose(void)
{
    const char *e = getenv("TM_VMATH_VERBOSE");
    return e && *e && strcmp(e, "0");
}

TEST(vmath_max_relative_error_within_documented_bounds)
{
    float *x = malloc(MAXN * sizeof *x);
    float *y = malloc(MAXN * sizeof *y);
    float *best = malloc(MAXN * sizeof *best);
    double *r = malloc(MAXN * sizeof *r);
    REQUIRE(x && y && best && r);
    tm__isa dflt = tm__cpu_isa();
    for (int c = 0; c < NCASES; c++) {
        const vcase *vc = &cases[c];
        int64_t n = make_inputs(x, vc->lo, vc->hi);
        for (int64_t i = 0; i < n; i++) r[i] = vc->ref((double)x[i]);
        tm__set_isa(dflt);
        vc->f(n, x, best);
        for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
            if (!tm__set_isa((tm__isa)isa)) continue;
            vc->f(n, x, y);
            double worst = 0, agree = 0;
            int64_t at = 0;
            for (int64_t i = 0; i < n; i++) {
                double e = rel_err(y[i], r[i]);
                if (!(e <= worst)) {
                    worst = e;
                    at = i;
                }
                double a = rel_err(y[i], (double)best[i]);
                if (!isnan(r[i]) && a > agree) agree = a;
            }
            if (verbose())
                printf("  %-9s %-8s max rel err %.3g at x = %.9g "
                       "(got %.9g, want %.17g); vs %s %.3g\n",
                       vc->name, tm__isa_name((tm__isa)isa), worst,
                       (double)x[at], (double)y[at], r[at],
                       tm__isa_name(dflt), agree);
            if (!(worst <= vc->bound))
                tt_fail(__FILE__, __LINE__,
                        "%s [%s]: max rel err %.3g > bound %.3g at x = %.9g "
                        "(got %.9g, want %.17g)", vc->name,
                        tm__isa_name((tm__isa)isa), worst, vc->bound,
                        (double)x[at], (double)y[at], r[at]);
            if (!(agree <= 2 * vc->bound))
                tt_fail(__FILE__, __LINE__, "%s: %s and %s differ by %.3g",
                        vc->name, tm__isa_name((tm__isa)isa),
                        tm__isa_name(dflt), agree);
        }
    }
    tm__set_isa(dflt);
    free(x);
    free(y);
    free(best);
    free(r);
}

/* Exact results: x, want (NaN: any NaN; zeros: with their sign). */
typedef struct {
    float x, want;
} special;

static void check_specials(const char *name, vfn f, const special *s,
                           int ns)
{
    for (int i = 0; i < ns; i++) {
        float y;
        f(1, &s[i].x, &y);
        bool ok = isnan(s[i].want)
                      ? isnan(y)
                      : y == s[i].want && signbit(y) == signbit(s[i].want);
        if (!ok)
            tt_fail(__FILE__, __LINE__, "%s [%s](%.9g) = %.9g, expected %.9g",
                    name, tm__isa_name(tm__cpu_isa()), (double)s[i].x,
                    (double)y, (double)s[i].want);
    }
}

#define SPECIALS(name, f, ...)                                                \
    do {                                                                      \
        static const special s_[] = {__VA_ARGS__};                            \
        check_specials(name, f, s_, (int)(sizeof s_ / sizeof s_[0]));         \
    } while (0)

TEST(vmath_special_values_are_exact)
{
    const float inf = INFINITY, nan = NAN;
    tm__isa dflt = tm__cpu_isa();
    for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
        if (!tm__set_isa((tm__isa)isa)) continue;
        SPECIALS("exp", tm__vexp_f32, {nan, nan}, {inf, inf}, {-inf, 0},
                 {0, 1}, {-0.0f, 1}, {89, inf}, {88.8f, inf}, {1000, inf},
                 {-104, 0}, {-200, 0}, {-1e30f, 0}, {1e30f, inf});
        SPECIALS("log", tm__vlog_f32, {nan, nan}, {inf, inf}, {-inf, nan},
                 {0, -inf}, {-0.0f, -inf}, {-1, nan}, {-1e-40f, nan},
                 {1, 0});
        SPECIALS("tanh", tm__vtanh_f32, {nan, nan}, {inf, 1}, {-inf, -1},
                 {0, 0}, {-0.0f, -0.0f}, {10, 1}, {-10, -1}, {100, 1},
                 {-1e30f, -1}, {1e-30f, 1e-30f}, {-1e-40f, -1e-40f});
        SPECIALS("sigmoid", tm__vsigmoid_f32, {nan, nan}, {inf, 1},
                 {-inf, 0}, {0, 0.5f}, {-0.0f, 0.5f}, {20, 1}, {100, 1},
                 {-200, 0}, {-1e30f, 0});
        SPECIALS("silu", tm__vsilu_f32, {nan, nan}, {inf, inf}, {0, 0},
                 {-0.0f, -0.0f}, {-200, -0.0f}, {-1e30f, -0.0f},
                 {1e30f, 1e30f}, {-inf, nan});
        SPECIALS("gelu", tm__vgelu_f32, {nan, nan}, {inf, inf}, {0, 0},
                 {-0.0f, -0.0f}, {-20, -0.0f}, {-1e30f, -0.0f},
                 {1e30f, 1e30f}, {20, 20}, {-inf, nan});
        /* relu: NaN passes through, -0 and negative subnormals give +0 */
        SPECIALS("relu", tm__vrelu_f32, {nan, nan}, {inf, inf}, {-inf, 0},
                 {0, 0}, {-0.0f, 0}, {-1e-40f, 0}, {1e-40f, 1e-40f},
                 {-3, 0}, {2.5f, 2.5f}, {FLT_MAX, FLT_MAX});
        SPECIALS("gelu_tanh", tm__vgelu_tanh_f32, {nan, nan}, {inf, inf},
                 {0, 0}, {-0.0f, -0.0f}, {-20, -0.0f}, {-1e30f, -0.0f},
                 {1e30f, 1e30f}, {20, 20}, {-inf, nan});
    }
    tm__set_isa(dflt);
}

/* Lengths that are not multiples of the vector width, unaligned starts
 * and y == x all give the bits of the full-vector computation. */
TEST(vmath_tails_offsets_and_in_place_match_full_vectors)
{
    enum { N = 100 };
    float x[N], full[N], y[N + 4], z[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i - 50) * 0.37f;
    tm__isa dflt = tm__cpu_isa();
    for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
        if (!tm__set_isa((tm__isa)isa)) continue;
        for (int c = 0; c < NCASES; c++) {
            const vcase *vc = &cases[c];
            float xin[N];
            for (int i = 0; i < N; i++)
                xin[i] = c == 1 ? fabsf(x[i]) : x[i]; /* log: x >= 0 */
            vc->f(N, xin, full);
            int bad = 0;
            for (int off = 0; off < 4; off++) {
                for (int n = 0; n <= 40; n++) {
                    y[n] = 12345.0f; /* must stay untouched */
                    vc->f(n, xin + off, y);
                    memcpy(z, xin + off, (size_t)n * sizeof *z);
                    vc->f(n, z, z);
                    if (memcmp(y, full + off, (size_t)n * sizeof *y) ||
                        memcmp(z, full + off, (size_t)n * sizeof *z) ||
                        y[n] != 12345.0f)
                        bad++;
                }
            }
            if (bad)
                tt_fail(__FILE__, __LINE__, "%s [%s]: %d tail/offset/in-place"
                        " runs differ", vc->name,
                        tm__isa_name((tm__isa)isa), bad);
        }
    }
    tm__set_isa(dflt);
}
