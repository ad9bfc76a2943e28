/* cpu_unary.c — CPU kernels of the unary elementwise family (tm_unary_op).
 *
 * One loop per compute type over contiguous arrays, fed by the elementwise
 * engine (tm__ew_run), which converts from any dtype and strides, chunks
 * and threads:
 *   - F32 for F32/F16/BF16 (and integer inputs of float ops: the front end
 *     asks for an F32 result), using the float libm functions, except
 *     exp, log, tanh, sigmoid, silu, gelu and gelu_tanh, which use the
 *     vectorized approximations of vmath.h (error bounds in vmath.c);
 *   - F64 for F64;
 *   - I64 for the integer ops on integer and bool tensors (wrapping);
 *   - predicates (logical_not, isnan, isinf, isfinite) read F32/F64/I64 and
 *     write BOOL.
 * Each element depends only on its own input, so results are bitwise
 * identical for any thread count. */
#include "cpu_impl.h"
#include "vmath/vmath.h"

#include <math.h>

#define TM__SQRT1_2 0.70710678118654752440
#define TM__SQRT_2_PI 0.79788456080286535588 /* sqrt(2/pi) */

typedef struct {
    tm_unary_op op;
    double p0, p1;
} tm__un_ctx;

/* ------------------------------------------------------------- F64 math */

/* Stable: exp of a positive number never taken, so no overflow, and the
 * limits 0 and 1 come out exactly. */
static inline double tm__sigmoid(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* x * Phi(x) with Phi(x) = erfc(-x/sqrt2)/2, which equals (1 + erf(x/sqrt2))
 * / 2 but does not cancel to 0 for x << 0. */
static inline double tm__gelu(double x)
{
    return 0.5 * x * erfc(-x * TM__SQRT1_2);
}

/* 0.5 x (1 + tanh(u)) rewritten with 1 + tanh(u) = 2 / (1 + exp(-2u)), so
 * the tail x << 0 keeps its relative accuracy (exp(-2u) overflowing to inf
 * gives the right limit, -0). */
static inline double tm__gelu_tanh(double x)
{
    double u = TM__SQRT_2_PI * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

/* log(1 + exp(z)) / beta with z = beta x, as max(z, 0) + log1p(exp(-|z|)):
 * no overflow for large z, no underflow to log(1) for very negative z. */
static inline double tm__softplus(double x, double beta, double threshold)
{
    double z = beta * x;
    if (z > threshold) return x;
    return ((z > 0 ? z : 0.0) + log1p(exp(-fabs(z)))) / beta;
}

/* ------------------------------------------------------------------ loops
 * out[i] = op(a[i]) for i < n.  The switch is per chunk (at most
 * TM__EW_CHUNK elements), outside the element loop. */

#define TM__LOOP(expr)                                                        \
    for (int64_t i = 0; i < n; i++) {                                         \
        T x = a[i];                                                           \
        o[i] = (expr);                                                        \
    }                                                                         \
    break

static void tm__un_f32(int64_t n, void *out, const void *const *in, void *p)
{
    typedef float T;
    const tm__un_ctx *c = p;
    const float *a = in[0];
    float *o = out;
    float p0 = (float)c->p0;
    switch (c->op) {
    case TM_OP_NEG: TM__LOOP(-x);
    case TM_OP_ABS: TM__LOOP(fabsf(x));
    case TM_OP_SIGN: TM__LOOP(x > 0 ? 1.0f : x < 0 ? -1.0f : x);
    case TM_OP_EXP: tm__vexp_f32(n, a, o); break;
    case TM_OP_LOG: tm__vlog_f32(n, a, o); break;
    case TM_OP_LOG1P: TM__LOOP(log1pf(x));
    case TM_OP_EXPM1: TM__LOOP(expm1f(x));
    case TM_OP_SQRT: TM__LOOP(sqrtf(x));
    case TM_OP_RSQRT: TM__LOOP(1.0f / sqrtf(x));
    case TM_OP_SIN: TM__LOOP(sinf(x));
    case TM_OP_COS: TM__LOOP(cosf(x));
    case TM_OP_TANH: tm__vtanh_f32(n, a, o); break;
    case TM_OP_SIGMOID: tm__vsigmoid_f32(n, a, o); break;
    /* vectorized select (a branch mispredicted on random signs: 5 ns an
     * element); NaN passes through, -0 becomes +0 */
    case TM_OP_RELU: tm__vrelu_f32(n, a, o); break;
    case TM_OP_LEAKY_RELU: TM__LOOP(x > 0 ? x : x * p0);
    /* gelu and gelu_tanh: vmath forms their large exponents in double
     * (rounding them in float would cost about 2z^2 ulps for large |z|);
     * softplus goes through double for the same reason. */
    case TM_OP_GELU: tm__vgelu_f32(n, a, o); break;
    case TM_OP_GELU_TANH: tm__vgelu_tanh_f32(n, a, o); break;
    case TM_OP_SILU: tm__vsilu_f32(n, a, o); break;
    case TM_OP_SOFTPLUS: TM__LOOP((float)tm__softplus(x, c->p0, c->p1));
    case TM_OP_FLOOR: TM__LOOP(floorf(x));
    case TM_OP_CEIL: TM__LOOP(ceilf(x));
    case TM_OP_ROUND: TM__LOOP(rintf(x)); /* half to even (default mode) */
    case TM_OP_TRUNC: TM__LOOP(truncf(x));
    case TM_OP_RECIPROCAL: TM__LOOP(1.0f / x);
    case TM_OP_SQUARE: TM__LOOP(x * x);
    case TM_OP_ERF: TM__LOOP(erff(x));
    case TM_OP_LOG2: TM__LOOP(log2f(x));
    case TM_OP_CLAMP: {
        /* NaN bound: none.  NaN x fails both tests and stays NaN; lo > hi
         * gives hi, as min(max(x, lo), hi). */
        float lo = isnan(c->p0) ? -INFINITY : (float)c->p0;
        float hi = isnan(c->p1) ? INFINITY : (float)c->p1;
        TM__LOOP(x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x);
    }
    default: TM__LOOP(x); /* excluded by tm__cpu_unary */
    }
}

static void tm__un_f64(int64_t n, void *out, const void *const *in, void *p)
{
    typedef double T;
    const tm__un_ctx *c = p;
    const double *a = in[0];
    double *o = out;
    double p0 = c->p0;
    switch (c->op) {
    case TM_OP_NEG: TM__LOOP(-x);
    case TM_OP_ABS: TM__LOOP(fabs(x));
    case TM_OP_SIGN: TM__LOOP(x > 0 ? 1.0 : x < 0 ? -1.0 : x);
    case TM_OP_EXP: TM__LOOP(exp(x));
    case TM_OP_LOG: TM__LOOP(log(x));
    case TM_OP_LOG1P: TM__LOOP(log1p(x));
    case TM_OP_EXPM1: TM__LOOP(expm1(x));
    case TM_OP_SQRT: TM__LOOP(sqrt(x));
    case TM_OP_RSQRT: TM__LOOP(1.0 / sqrt(x));
    case TM_OP_SIN: TM__LOOP(sin(x));
    case TM_OP_COS: TM__LOOP(cos(x));
    case TM_OP_TANH: TM__LOOP(tanh(x));
    case TM_OP_SIGMOID: TM__LOOP(tm__sigmoid(x));
    case TM_OP_RELU: TM__LOOP(x <= 0 ? 0.0 : x);
    case TM_OP_LEAKY_RELU: TM__LOOP(x > 0 ? x : x * p0);
    case TM_OP_GELU: TM__LOOP(tm__gelu(x));
    case TM_OP_GELU_TANH: TM__LOOP(tm__gelu_tanh(x));
    case TM_OP_SILU: TM__LOOP(x * tm__sigmoid(x));
    case TM_OP_SOFTPLUS: TM__LOOP(tm__softplus(x, c->p0, c->p1));
    case TM_OP_FLOOR: TM__LOOP(floor(x));
    case TM_OP_CEIL: TM__LOOP(ceil(x));
    case TM_OP_ROUND: TM__LOOP(rint(x));
    case TM_OP_TRUNC: TM__LOOP(trunc(x));
    case TM_OP_RECIPROCAL: TM__LOOP(1.0 / x);
    case TM_OP_SQUARE: TM__LOOP(x * x);
    case TM_OP_ERF: TM__LOOP(erf(x));
    case TM_OP_LOG2: TM__LOOP(log2(x));
    case TM_OP_CLAMP: {
        double lo = isnan(c->p0) ? -INFINITY : c->p0;
        double hi = isnan(c->p1) ? INFINITY : c->p1;
        TM__LOOP(x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x);
    }
    default: TM__LOOP(x);
    }
}

/* A double bound as int64 (saturating); NaN is `none`. */
static int64_t tm__bound_i64(double v, int64_t none)
{
    if (isnan(v)) return none;
    if (v >= 0x1p63) return INT64_MAX;
    if (v < -0x1p63) return INT64_MIN;
    return (int64_t)v;
}

/* Integer arithmetic goes through uint64_t so that overflow wraps instead
 * of being undefined: -INT64_MIN and abs(INT64_MIN) are INT64_MIN. */
static void tm__un_i64(int64_t n, void *out, const void *const *in, void *p)
{
    typedef int64_t T;
    const tm__un_ctx *c = p;
    const int64_t *a = in[0];
    int64_t *o = out;
    switch (c->op) {
    case TM_OP_NEG: TM__LOOP((int64_t)(0u - (uint64_t)x));
    case TM_OP_ABS: TM__LOOP(x < 0 ? (int64_t)(0u - (uint64_t)x) : x);
    case TM_OP_SIGN: TM__LOOP((int64_t)(x > 0) - (int64_t)(x < 0));
    case TM_OP_RELU: TM__LOOP(x > 0 ? x : 0);
    case TM_OP_SQUARE: TM__LOOP((int64_t)((uint64_t)x * (uint64_t)x));
    case TM_OP_CLAMP: {
        int64_t lo = tm__bound_i64(c->p0, INT64_MIN);
        int64_t hi = tm__bound_i64(c->p1, INT64_MAX);
        TM__LOOP(x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x);
    }
    default: TM__LOOP(x); /* floor, ceil, round, trunc: the identity */
    }
}

/* Predicates: BOOL out (one byte 0/1) from F32, F64 or I64 in. */
#define TM__PRED(nan_test, inf_test)                                       \
    const T *a = in[0];                                                       \
    uint8_t *o = out;                                                         \
    switch (((const tm__un_ctx *)p)->op) {                                    \
    case TM_OP_LOGICAL_NOT: TM__LOOP(x == 0);                                 \
    case TM_OP_ISNAN: TM__LOOP(nan_test);                                     \
    case TM_OP_ISINF: TM__LOOP(inf_test);                                     \
    default: TM__LOOP(!(nan_test) && !(inf_test)); /* isfinite */             \
    }

static void tm__pred_f32(int64_t n, void *out, const void *const *in,
                         void *p)
{
    typedef float T;
    TM__PRED(x != x, x == INFINITY || x == -INFINITY)
}

static void tm__pred_f64(int64_t n, void *out, const void *const *in,
                         void *p)
{
    typedef double T;
    TM__PRED(x != x, x == INFINITY || x == -INFINITY)
}

static void tm__pred_i64(int64_t n, void *out, const void *const *in,
                         void *p)
{
    typedef int64_t T;
    TM__PRED(((void)x, 0), ((void)x, 0))
}

/* Ops with an integer (I64) loop; the rest need a float result. */
static bool tm__int_op(tm_unary_op op)
{
    switch (op) {
    case TM_OP_NEG: case TM_OP_ABS: case TM_OP_SIGN: case TM_OP_RELU:
    case TM_OP_SQUARE: case TM_OP_CLAMP: case TM_OP_FLOOR: case TM_OP_CEIL:
    case TM_OP_ROUND: case TM_OP_TRUNC:
        return true;
    default:
        return false;
    }
}

tm_status tm__cpu_unary(tm_unary_op op, const tm_buf *out, const tm_buf *in,
                        double p0, double p1)
{
    if ((int)op < 0 || op >= TM_UNARY_OP_COUNT)
        return TM_ERR(TM_EINVAL, "unknown unary op %d", (int)op);
    tm__un_ctx c = {op, p0, p1};
    const tm_buf *ins[1] = {in};
    tm_dtype id = in->dtype, od = out->dtype;
    bool pred = op == TM_OP_LOGICAL_NOT || op == TM_OP_ISNAN ||
                op == TM_OP_ISINF || op == TM_OP_ISFINITE;
    if (pred) {
        if (od != TM_BOOL)
            return TM_ERR(TM_EDTYPE, "unary op %d writes bool, not %s",
                          (int)op, tm_dtype_name(od));
        if (id == TM_F64)
            return tm__ew_run(out, TM_BOOL, ins, 1, TM_F64, tm__pred_f64, &c);
        if (tm_dtype_is_float(id))
            return tm__ew_run(out, TM_BOOL, ins, 1, TM_F32, tm__pred_f32, &c);
        return tm__ew_run(out, TM_BOOL, ins, 1, TM_I64, tm__pred_i64, &c);
    }
    if (tm_dtype_is_float(od)) {
        if (od == TM_F64 || id == TM_F64)
            return tm__ew_run(out, TM_F64, ins, 1, TM_F64, tm__un_f64, &c);
        return tm__ew_run(out, TM_F32, ins, 1, TM_F32, tm__un_f32, &c);
    }
    if (!tm__int_op(op) || tm_dtype_is_float(id))
        return TM_ERR(TM_EDTYPE, "unary op %d cannot produce %s from %s",
                      (int)op, tm_dtype_name(od), tm_dtype_name(id));
    return tm__ew_run(out, TM_I64, ins, 1, TM_I64, tm__un_i64, &c);
}
