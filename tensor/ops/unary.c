/* unary.c — unary elementwise ops: tm_unary / tm_unary_, the named
 * wrappers (tm_neg ... tm_log2) and tm_clamp / tm_clamp_ with scalar
 * bounds.  Works out the result dtype (PyTorch's rules, see foundry/ops.h)
 * and hands the work to the backend's `unary` entry. */
#include "op_table.h"
#include "../core/grad_hooks.h"

#include <math.h>

/* A clamp bound that keeps an integer tensor integer: none (NaN) or a
 * finite integral value.  Anything else is a float scalar, which makes the
 * result F32 as in PyTorch. */
static bool tm__int_bound(double v)
{
    return isnan(v) || (isfinite(v) && v == floor(v));
}

/* The dtype of op(t) for an input of dtype dt, in *out: the op's row of
 * TM_UNARY_OPS, and for clamp the bounds. */
static tm_status tm__unary_dtype(const char *fn, tm_unary_op op, tm_dtype dt,
                                 double p0, double p1, tm_dtype *out)
{
    const tm__op_info *info = &tm__unary_ops[op];
    if (tm_dtype_is_quantized(dt))
        return tm__errf(TM_EDTYPE, fn, "%s: the input is a %s tensor, a "
                        "quantized dtype: dequantize it first "
                        "(tm_dequantize)", info->name, tm_dtype_name(dt));
    if (!tm_dtype_is_valid(dt))
        return tm__errf(TM_EDTYPE, fn, "%s is not supported for dtype %s",
                        info->name, tm_dtype_name(dt));
    if (info->dtype != TM__DT_BOUNDS)
        return tm__rule_dtype(fn, info, dt, out);
    /* clamp: integers stay integers unless a bound is not integral */
    if (tm_dtype_is_float(dt) || (isnan(p0) && isnan(p1))) *out = dt;
    else if (tm__int_bound(p0) && tm__int_bound(p1))
        *out = dt == TM_BOOL ? TM_I64 : dt;
    else *out = TM_F32;
    return TM_OK;
}

static bool tm__unary_valid(const char *fn, tm_unary_op op)
{
    if ((int)op >= 0 && op < TM_UNARY_OP_COUNT) return true;
    tm__errf(TM_EINVAL, fn, "unknown unary op %d", (int)op);
    return false;
}

/* An integer clamp keeps the dtype, so its bounds saturate to the dtype's
 * range: clamping i16 to lo = 1e9 gives 32767, the nearest representable
 * value, not a wrapped one. */
static void tm__saturate_bounds(tm_unary_op op, tm_dtype rd, double *p0,
                                double *p1)
{
    static const double lim[][2] = {
        [TM_I8] = {-128, 127}, [TM_U8] = {0, 255},
        [TM_I16] = {-32768, 32767}, [TM_I32] = {-2147483648.0, 2147483647.0},
        [TM_I64] = {-0x1p63, 0x1p63}};
    if (op != TM_OP_CLAMP || !tm_dtype_is_integer(rd)) return;
    for (int k = 0; k < 2; k++) {
        double *p = k ? p1 : p0;
        if (*p < lim[rd][0]) *p = lim[rd][0];
        if (*p > lim[rd][1]) *p = lim[rd][1]; /* NaN compares false: kept */
    }
}

static tm_tensor *tm__unary(const char *fn, tm_unary_op op,
                            const tm_tensor *t, double p0, double p1)
{
    tm_dtype rd;
    if (tm__check_dense_operand(fn, t, "tensor") || !tm__unary_valid(fn, op) ||
        tm__unary_dtype(fn, op, t->dtype, p0, p1, &rd))
        return NULL;
    tm__saturate_bounds(op, rd, &p0, &p1);
    tm_ctx *cx = tm__ctx(t);
    tm_tensor *o = tm__tensor_new(fn, t->shape, t->ndim, rd,
                                  tm_device_of(t));
    if (!o) return NULL;
    if (tm_numel(o) > 0) {
        tm_buf ob = tm__buf(o), ib = tm__buf(t);
        tm__stage sg = {0};
        tm__stage_out(&sg, &ob);
        tm__stage_in(&sg, &ib);
        if (TM__CALL_STAGED(fn, cx, &sg, UNARY, op, unary, op, &ob, &ib, p0,
                            p1)) {
            tm_free(o);
            return NULL;
        }
    }
    return tm__grad_unary(o, op, t, p0, p1);
}

static tm_status tm__unary_inplace(const char *fn, tm_unary_op op,
                                   tm_tensor *t, double p0, double p1)
{
    tm_dtype rd;
    if (tm__check_dense_operand(fn, t, "tensor")) return tm_last_status();
    if (!tm__unary_valid(fn, op)) return TM_EINVAL;
    tm_status st = tm__unary_dtype(fn, op, t->dtype, p0, p1, &rd);
    if (st) return st;
    if (rd != t->dtype)
        return tm__errf(TM_EDTYPE, fn, "%s of a %s tensor gives %s, which "
                        "cannot be written back into %s", tm__unary_ops[op].name,
                        tm_dtype_name(t->dtype), tm_dtype_name(rd),
                        tm_dtype_name(t->dtype));
    if (tm__check_writable(fn, t)) return tm_last_status();
    tm_ctx *cx = tm__ctx(t);
    tm__saturate_bounds(op, rd, &p0, &p1);
    if (tm_numel(t) > 0) {
        tm_buf b = tm__buf(t);
        tm__stage sg = {0};
        tm__stage_inout(&sg, &b);
        st = TM__CALL_STAGED(fn, cx, &sg, UNARY, op, unary, op, &b, &b, p0,
                             p1);
        if (st) return st;
    }
    tm__bump_version(t);
    return TM_OK;
}

/* Parameters tm_unary uses for the ops that take some. */
static void tm__unary_defaults(tm_unary_op op, double *p0, double *p1)
{
    *p0 = *p1 = 0;
    if (op == TM_OP_LEAKY_RELU) *p0 = 0.01;
    if (op == TM_OP_SOFTPLUS) *p0 = 1, *p1 = 20;
    if (op == TM_OP_CLAMP) *p0 = *p1 = NAN;
}

tm_tensor *tm_unary(tm_unary_op op, const tm_tensor *t)
{
    double p0, p1;
    tm__unary_defaults(op, &p0, &p1);
    return tm__unary(__func__, op, t, p0, p1);
}

tm_status tm_unary_(tm_unary_op op, tm_tensor *t)
{
    double p0, p1;
    tm__unary_defaults(op, &p0, &p1);
    return tm__unary_inplace(__func__, op, t, p0, p1);
}

#define TM__UNARY_FN(name, op)                                                \
    tm_tensor *tm_##name(const tm_tensor *t)                                  \
    {                                                                         \
        return tm__unary(__func__, op, t, 0, 0);                              \
    }

TM__UNARY_FN(neg, TM_OP_NEG)
TM__UNARY_FN(abs, TM_OP_ABS)
TM__UNARY_FN(sign, TM_OP_SIGN)
TM__UNARY_FN(exp, TM_OP_EXP)
TM__UNARY_FN(exp2, TM_OP_EXP2)
TM__UNARY_FN(log, TM_OP_LOG)
TM__UNARY_FN(log1p, TM_OP_LOG1P)
TM__UNARY_FN(expm1, TM_OP_EXPM1)
TM__UNARY_FN(sqrt, TM_OP_SQRT)
TM__UNARY_FN(rsqrt, TM_OP_RSQRT)
TM__UNARY_FN(sin, TM_OP_SIN)
TM__UNARY_FN(cos, TM_OP_COS)
TM__UNARY_FN(tanh, TM_OP_TANH)
TM__UNARY_FN(sigmoid, TM_OP_SIGMOID)
TM__UNARY_FN(relu, TM_OP_RELU)
TM__UNARY_FN(gelu, TM_OP_GELU)
TM__UNARY_FN(gelu_tanh, TM_OP_GELU_TANH)
TM__UNARY_FN(silu, TM_OP_SILU)
TM__UNARY_FN(logical_not, TM_OP_LOGICAL_NOT)
TM__UNARY_FN(isnan, TM_OP_ISNAN)
TM__UNARY_FN(isinf, TM_OP_ISINF)
TM__UNARY_FN(isfinite, TM_OP_ISFINITE)
TM__UNARY_FN(floor, TM_OP_FLOOR)
TM__UNARY_FN(ceil, TM_OP_CEIL)
TM__UNARY_FN(round, TM_OP_ROUND)
TM__UNARY_FN(trunc, TM_OP_TRUNC)
TM__UNARY_FN(reciprocal, TM_OP_RECIPROCAL)
TM__UNARY_FN(square, TM_OP_SQUARE)
TM__UNARY_FN(erf, TM_OP_ERF)
TM__UNARY_FN(log2, TM_OP_LOG2)
TM__UNARY_FN(tan, TM_OP_TAN)
TM__UNARY_FN(asin, TM_OP_ASIN)
TM__UNARY_FN(acos, TM_OP_ACOS)
TM__UNARY_FN(atan, TM_OP_ATAN)
TM__UNARY_FN(sinh, TM_OP_SINH)
TM__UNARY_FN(cosh, TM_OP_COSH)
TM__UNARY_FN(asinh, TM_OP_ASINH)
TM__UNARY_FN(acosh, TM_OP_ACOSH)
TM__UNARY_FN(atanh, TM_OP_ATANH)
TM__UNARY_FN(log10, TM_OP_LOG10)

tm_tensor *tm_leaky_relu(const tm_tensor *t, double slope)
{
    return tm__unary(__func__, TM_OP_LEAKY_RELU, t, slope, 0);
}

tm_tensor *tm_softplus(const tm_tensor *t, double beta, double threshold)
{
    return tm__unary(__func__, TM_OP_SOFTPLUS, t, beta, threshold);
}

tm_tensor *tm_clamp(const tm_tensor *t, double lo, double hi)
{
    return tm__unary(__func__, TM_OP_CLAMP, t, lo, hi);
}

tm_status tm_clamp_(tm_tensor *t, double lo, double hi)
{
    return tm__unary_inplace(__func__, TM_OP_CLAMP, t, lo, hi);
}
