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
 *     write 0 or 1 in the output's dtype.
 * Each element depends only on its own input, so results are bitwise
 * identical for any thread count. */
#include "cpu_impl.h"
#include "vmath/vmath.h"
#include "../tensor/ops/op_table.h"

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

static void tm__un_f32(int64_t n, void *out, const void *const *in, void *p)
{
    typedef float T;
    const tm__un_ctx *c = p;
    const float *a = in[0];
    float *o = out;
    float p0 = (float)c->p0;
    switch (c->op) {
    case TM_OP_NEG:
        for (int64_t i = 0; i < n; i++) o[i] = -a[i];
        break;
    case TM_OP_ABS:
        for (int64_t i = 0; i < n; i++) o[i] = fabsf(a[i]);
        break;
    case TM_OP_SIGN:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x > 0 ? 1.0f : x < 0 ? -1.0f : x;
        }
        break;
    case TM_OP_EXP: tm__vexp_f32(n, a, o); break;
    case TM_OP_EXP2:
        for (int64_t i = 0; i < n; i++) o[i] = exp2f(a[i]);
        break;
    case TM_OP_LOG: tm__vlog_f32(n, a, o); break;
    case TM_OP_LOG1P:
        for (int64_t i = 0; i < n; i++) o[i] = log1pf(a[i]);
        break;
    case TM_OP_EXPM1:
        for (int64_t i = 0; i < n; i++) o[i] = expm1f(a[i]);
        break;
    case TM_OP_SQRT:
        for (int64_t i = 0; i < n; i++) o[i] = sqrtf(a[i]);
        break;
    case TM_OP_RSQRT:
        for (int64_t i = 0; i < n; i++) o[i] = 1.0f / sqrtf(a[i]);
        break;
    case TM_OP_SIN:
        for (int64_t i = 0; i < n; i++) o[i] = sinf(a[i]);
        break;
    case TM_OP_COS:
        for (int64_t i = 0; i < n; i++) o[i] = cosf(a[i]);
        break;
    case TM_OP_TANH: tm__vtanh_f32(n, a, o); break;
    case TM_OP_SIGMOID: tm__vsigmoid_f32(n, a, o); break;
    /* vectorized select (a branch mispredicted on random signs: 5 ns an
     * element); NaN passes through, -0 becomes +0 */
    case TM_OP_RELU: tm__vrelu_f32(n, a, o); break;
    case TM_OP_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x > 0 ? x : x * p0;
        }
        break;
    /* gelu and gelu_tanh: vmath forms their large exponents in double
     * (rounding them in float would cost about 2z^2 ulps for large |z|);
     * softplus goes through double for the same reason. */
    case TM_OP_GELU: tm__vgelu_f32(n, a, o); break;
    case TM_OP_GELU_TANH: tm__vgelu_tanh_f32(n, a, o); break;
    case TM_OP_SILU: tm__vsilu_f32(n, a, o); break;
    case TM_OP_SOFTPLUS:
        for (int64_t i = 0; i < n; i++)
            o[i] = (float)tm__softplus(a[i], c->p0, c->p1);
        break;
    case TM_OP_FLOOR:
        for (int64_t i = 0; i < n; i++) o[i] = floorf(a[i]);
        break;
    case TM_OP_CEIL:
        for (int64_t i = 0; i < n; i++) o[i] = ceilf(a[i]);
        break;
    case TM_OP_ROUND: /* half to even (default mode) */
        for (int64_t i = 0; i < n; i++) o[i] = rintf(a[i]);
        break;
    case TM_OP_TRUNC:
        for (int64_t i = 0; i < n; i++) o[i] = truncf(a[i]);
        break;
    case TM_OP_RECIPROCAL:
        for (int64_t i = 0; i < n; i++) o[i] = 1.0f / a[i];
        break;
    case TM_OP_SQUARE:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x * x;
        }
        break;
    case TM_OP_ERF:
        for (int64_t i = 0; i < n; i++) o[i] = erff(a[i]);
        break;
    case TM_OP_LOG2:
        for (int64_t i = 0; i < n; i++) o[i] = log2f(a[i]);
        break;
    case TM_OP_TAN:
        for (int64_t i = 0; i < n; i++) o[i] = tanf(a[i]);
        break;
    case TM_OP_ASIN:
        for (int64_t i = 0; i < n; i++) o[i] = asinf(a[i]);
        break;
    case TM_OP_ACOS:
        for (int64_t i = 0; i < n; i++) o[i] = acosf(a[i]);
        break;
    case TM_OP_ATAN:
        for (int64_t i = 0; i < n; i++) o[i] = atanf(a[i]);
        break;
    case TM_OP_SINH:
        for (int64_t i = 0; i < n; i++) o[i] = sinhf(a[i]);
        break;
    case TM_OP_COSH:
        for (int64_t i = 0; i < n; i++) o[i] = coshf(a[i]);
        break;
    case TM_OP_ASINH:
        for (int64_t i = 0; i < n; i++) o[i] = asinhf(a[i]);
        break;
    case TM_OP_ACOSH:
        for (int64_t i = 0; i < n; i++) o[i] = acoshf(a[i]);
        break;
    case TM_OP_ATANH:
        for (int64_t i = 0; i < n; i++) o[i] = atanhf(a[i]);
        break;
    case TM_OP_LOG10:
        for (int64_t i = 0; i < n; i++) o[i] = log10f(a[i]);
        break;
    case TM_OP_CLAMP: {
        /* NaN bound: none.  NaN x fails both tests and stays NaN; lo > hi
         * gives hi, as min(max(x, lo), hi). */
        float lo = isnan(c->p0) ? -INFINITY : (float)c->p0;
        float hi = isnan(c->p1) ? INFINITY : (float)c->p1;
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x;
        }
        break;
    }
    default: /* excluded by tm__cpu_unary */
        for (int64_t i = 0; i < n; i++) o[i] = a[i];
        break;
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
    case TM_OP_NEG:
        for (int64_t i = 0; i < n; i++) o[i] = -a[i];
        break;
    case TM_OP_ABS:
        for (int64_t i = 0; i < n; i++) o[i] = fabs(a[i]);
        break;
    case TM_OP_SIGN:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x > 0 ? 1.0 : x < 0 ? -1.0 : x;
        }
        break;
    case TM_OP_EXP:
        for (int64_t i = 0; i < n; i++) o[i] = exp(a[i]);
        break;
    case TM_OP_EXP2:
        for (int64_t i = 0; i < n; i++) o[i] = exp2(a[i]);
        break;
    case TM_OP_LOG:
        for (int64_t i = 0; i < n; i++) o[i] = log(a[i]);
        break;
    case TM_OP_LOG1P:
        for (int64_t i = 0; i < n; i++) o[i] = log1p(a[i]);
        break;
    case TM_OP_EXPM1:
        for (int64_t i = 0; i < n; i++) o[i] = expm1(a[i]);
        break;
    case TM_OP_SQRT:
        for (int64_t i = 0; i < n; i++) o[i] = sqrt(a[i]);
        break;
    case TM_OP_RSQRT:
        for (int64_t i = 0; i < n; i++) o[i] = 1.0 / sqrt(a[i]);
        break;
    case TM_OP_SIN:
        for (int64_t i = 0; i < n; i++) o[i] = sin(a[i]);
        break;
    case TM_OP_COS:
        for (int64_t i = 0; i < n; i++) o[i] = cos(a[i]);
        break;
    case TM_OP_TANH:
        for (int64_t i = 0; i < n; i++) o[i] = tanh(a[i]);
        break;
    case TM_OP_SIGMOID:
        for (int64_t i = 0; i < n; i++) o[i] = tm__sigmoid(a[i]);
        break;
    case TM_OP_RELU:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x <= 0 ? 0.0 : x;
        }
        break;
    case TM_OP_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x > 0 ? x : x * p0;
        }
        break;
    case TM_OP_GELU:
        for (int64_t i = 0; i < n; i++) o[i] = tm__gelu(a[i]);
        break;
    case TM_OP_GELU_TANH:
        for (int64_t i = 0; i < n; i++) o[i] = tm__gelu_tanh(a[i]);
        break;
    case TM_OP_SILU:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x * tm__sigmoid(x);
        }
        break;
    case TM_OP_SOFTPLUS:
        for (int64_t i = 0; i < n; i++)
            o[i] = tm__softplus(a[i], c->p0, c->p1);
        break;
    case TM_OP_FLOOR:
        for (int64_t i = 0; i < n; i++) o[i] = floor(a[i]);
        break;
    case TM_OP_CEIL:
        for (int64_t i = 0; i < n; i++) o[i] = ceil(a[i]);
        break;
    case TM_OP_ROUND:
        for (int64_t i = 0; i < n; i++) o[i] = rint(a[i]);
        break;
    case TM_OP_TRUNC:
        for (int64_t i = 0; i < n; i++) o[i] = trunc(a[i]);
        break;
    case TM_OP_RECIPROCAL:
        for (int64_t i = 0; i < n; i++) o[i] = 1.0 / a[i];
        break;
    case TM_OP_SQUARE:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x * x;
        }
        break;
    case TM_OP_ERF:
        for (int64_t i = 0; i < n; i++) o[i] = erf(a[i]);
        break;
    case TM_OP_LOG2:
        for (int64_t i = 0; i < n; i++) o[i] = log2(a[i]);
        break;
    case TM_OP_TAN:
        for (int64_t i = 0; i < n; i++) o[i] = tan(a[i]);
        break;
    case TM_OP_ASIN:
        for (int64_t i = 0; i < n; i++) o[i] = asin(a[i]);
        break;
    case TM_OP_ACOS:
        for (int64_t i = 0; i < n; i++) o[i] = acos(a[i]);
        break;
    case TM_OP_ATAN:
        for (int64_t i = 0; i < n; i++) o[i] = atan(a[i]);
        break;
    case TM_OP_SINH:
        for (int64_t i = 0; i < n; i++) o[i] = sinh(a[i]);
        break;
    case TM_OP_COSH:
        for (int64_t i = 0; i < n; i++) o[i] = cosh(a[i]);
        break;
    case TM_OP_ASINH:
        for (int64_t i = 0; i < n; i++) o[i] = asinh(a[i]);
        break;
    case TM_OP_ACOSH:
        for (int64_t i = 0; i < n; i++) o[i] = acosh(a[i]);
        break;
    case TM_OP_ATANH:
        for (int64_t i = 0; i < n; i++) o[i] = atanh(a[i]);
        break;
    case TM_OP_LOG10:
        for (int64_t i = 0; i < n; i++) o[i] = log10(a[i]);
        break;
    case TM_OP_CLAMP: {
        double lo = isnan(c->p0) ? -INFINITY : c->p0;
        double hi = isnan(c->p1) ? INFINITY : c->p1;
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x;
        }
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) o[i] = a[i];
        break;
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
    case TM_OP_NEG:
        for (int64_t i = 0; i < n; i++) o[i] = (int64_t)(0u - (uint64_t)a[i]);
        break;
    case TM_OP_ABS:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x < 0 ? (int64_t)(0u - (uint64_t)x) : x;
        }
        break;
    case TM_OP_SIGN:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = (int64_t)(x > 0) - (int64_t)(x < 0);
        }
        break;
    case TM_OP_RELU:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x > 0 ? x : 0;
        }
        break;
    case TM_OP_SQUARE:
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = (int64_t)((uint64_t)x * (uint64_t)x);
        }
        break;
    case TM_OP_CLAMP: {
        int64_t lo = tm__bound_i64(c->p0, INT64_MIN);
        int64_t hi = tm__bound_i64(c->p1, INT64_MAX);
        for (int64_t i = 0; i < n; i++) {
            T x = a[i];
            o[i] = x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x;
        }
        break;
    }
    default: /* floor, ceil, round, trunc: the identity */
        for (int64_t i = 0; i < n; i++) o[i] = a[i];
        break;
    }
}

/* Predicates: BOOL out (one byte 0/1) from F32, F64 or I64 in. */
static void tm__pred_f32(int64_t n, void *out, const void *const *in,
                         void *p)
{
    const float *a = in[0];
    uint8_t *o = out;
    switch (((const tm__un_ctx *)p)->op) {
    case TM_OP_LOGICAL_NOT:
        for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
        break;
    case TM_OP_ISNAN:
        for (int64_t i = 0; i < n; i++) o[i] = isnan(a[i]);
        break;
    case TM_OP_ISINF:
        for (int64_t i = 0; i < n; i++) o[i] = isinf(a[i]);
        break;
    default: /* isfinite */
        for (int64_t i = 0; i < n; i++) o[i] = isfinite(a[i]);
        break;
    }
}

static void tm__pred_f64(int64_t n, void *out, const void *const *in,
                         void *p)
{
    const double *a = in[0];
    uint8_t *o = out;
    switch (((const tm__un_ctx *)p)->op) {
    case TM_OP_LOGICAL_NOT:
        for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
        break;
    case TM_OP_ISNAN:
        for (int64_t i = 0; i < n; i++) o[i] = isnan(a[i]);
        break;
    case TM_OP_ISINF:
        for (int64_t i = 0; i < n; i++) o[i] = isinf(a[i]);
        break;
    default: /* isfinite */
        for (int64_t i = 0; i < n; i++) o[i] = isfinite(a[i]);
        break;
    }
}

/* Integers are never NaN or infinite. */
static void tm__pred_i64(int64_t n, void *out, const void *const *in,
                         void *p)
{
    const int64_t *a = in[0];
    uint8_t *o = out;
    switch (((const tm__un_ctx *)p)->op) {
    case TM_OP_LOGICAL_NOT:
        for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
        break;
    case TM_OP_ISNAN: case TM_OP_ISINF:
        for (int64_t i = 0; i < n; i++) o[i] = 0;
        break;
    default: /* isfinite */
        for (int64_t i = 0; i < n; i++) o[i] = 1;
        break;
    }
}

tm_status tm__cpu_unary(tm_ctx *ctx, tm_unary_op op, const tm_buf *out, const tm_buf *in,
                        double p0, double p1)
{
    (void)ctx;
    if ((int)op < 0 || op >= TM_UNARY_OP_COUNT)
        return TM_ERR(TM_EINVAL, "unknown unary op %d", (int)op);
    tm__un_ctx c = {op, p0, p1};
    const tm_buf *ins[1] = {in};
    tm_dtype id = in->dtype, od = out->dtype;
    /* the op's class (TM_UNARY_OPS) picks the loop family */
    tm__op_class cls = tm__unary_ops[op].cls;
    if (cls == TM__CLASS_PRED) { /* 0 or 1, converted to out's dtype (BOOL
                                  * from the front ends, I64 when staged) */
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
    if (cls != TM__CLASS_INT || tm_dtype_is_float(id))
        return TM_ERR(TM_EDTYPE, "%s cannot produce %s from %s",
                      tm__unary_ops[op].name, tm_dtype_name(od),
                      tm_dtype_name(id));
    return tm__ew_run(out, TM_I64, ins, 1, TM_I64, tm__un_i64, &c);
}
