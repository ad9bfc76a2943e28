/* binary.c — binary elementwise ops: a OP b with broadcasting and PyTorch's
 * type promotion, scalar ("wrapped number") variants and in-place forms. */
#include "op_table.h"
#include "../core/grad_hooks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

static tm_status tm__check_op(const char *fn, tm_binary_op op)
{
    if ((int)op < 0 || op >= TM_BINARY_OP_COUNT)
        return tm__errf(TM_EINVAL, fn, "unknown binary op %d", (int)op);
    return TM_OK;
}

/* Non-NULL with a dense dtype. */
static tm_status tm__check_operand(const char *fn, const tm_tensor *t,
                                   const char *what)
{
    if (tm__check_dense_operand(fn, t, what) || tm__q_refuse(fn, t, what))
        return tm_last_status();
    if (!tm_dtype_is_valid(t->dtype))
        return tm__errf(TM_EDTYPE, fn, "%s has dtype %s, which elementwise "
                        "ops do not support", what, tm_dtype_name(t->dtype));
    return TM_OK;
}

/* Broadcast shape of a and b into out (message names fn). */
static tm_status tm__bcast2(const char *fn, const tm_tensor *a,
                            const tm_tensor *b, int64_t *out, int *nd)
{
    if (tm_broadcast_shapes(a->shape, a->ndim, b->shape, b->ndim, out, nd)) {
        char x[TM_SHAPE_BUF], y[TM_SHAPE_BUF];
        return tm__errf(TM_ESHAPE, fn, "shapes %s and %s do not broadcast",
                        tm__fmt_shape(a->shape, a->ndim, x, sizeof x),
                        tm__fmt_shape(b->shape, b->ndim, y, sizeof y));
    }
    return TM_OK;
}

/* PyTorch's can_cast: no float into an integer or bool tensor, no
 * integer into a bool tensor. */
static bool tm__can_cast(tm_dtype from, tm_dtype to)
{
    if (tm_dtype_is_float(from) && !tm_dtype_is_float(to)) return false;
    if (from != TM_BOOL && to == TM_BOOL) return false;
    return true;
}




/* A Python number of kind k against a tensor of dtype dt ("wrapped
 * number"), PyTorch's rule: a number of a higher category than the tensor
 * (bool < integer < float) gives that category's default dtype (I64, F32),
 * else the tensor's dtype wins.  TM_SCALAR_AUTO counts an integral value
 * as an integer.  *sdt gets the dtype the scalar is stored in for the
 * kernel: the tensor's float dtype (so it rounds like PyTorch and numpy
 * do), I64 for integers (exact, where PyTorch first wraps a number out of
 * a narrower dtype's range; the kernel computes in I64 anyway), BOOL for
 * a bool against a bool tensor, or F32. */
static tm_status tm__wrapped_dtype(const char *fn, tm_dtype dt, double s,
                                   tm_scalar_kind k, tm_dtype *pt,
                                   tm_dtype *sdt)
{
    bool integral = isfinite(s) && s == floor(s);
    if (k == TM_SCALAR_AUTO)
        k = integral ? TM_SCALAR_INT : TM_SCALAR_FLOAT;
    if (k == TM_SCALAR_BOOL && s != 0 && s != 1)
        return tm__errf(TM_EINVAL, fn, "a bool scalar must be 0 or 1, not "
                        "%g", s);
    if (k == TM_SCALAR_INT && !integral)
        return tm__errf(TM_EINVAL, fn, "an integer scalar must be integral, "
                        "not %g", s);
    if ((int)k < TM_SCALAR_AUTO || k > TM_SCALAR_FLOAT)
        return tm__errf(TM_EINVAL, fn, "unknown scalar kind %d", (int)k);
    if (tm_dtype_is_float(dt)) {
        *pt = *sdt = dt;
    } else if (k == TM_SCALAR_FLOAT) {
        *pt = *sdt = TM_F32;
    } else if (k == TM_SCALAR_INT) {
        *sdt = TM_I64;
        *pt = dt == TM_BOOL ? TM_I64 : dt;
    } else {
        *pt = dt;
        *sdt = dt == TM_BOOL ? TM_BOOL : TM_I64;
    }
    return TM_OK;
}

/* PyTorch converts both operands to the promoted dtype before computing.
 * The backend computes F16/BF16 in F32, which gives the same result except
 * for integers too wide to be exact in F16/BF16 (I16, I32, I64): those are
 * rounded to pt first.  *tmp gets that copy (or NULL when not needed). */
static bool tm__needs_rounding(tm_dtype dt, tm_dtype pt)
{
    return (pt == TM_F16 || pt == TM_BF16) &&
           (dt == TM_I16 || dt == TM_I32 || dt == TM_I64);
}

static tm_status tm__round_operand(const char *fn, const tm_tensor *x,
                                   tm_dtype pt, tm_tensor **tmp)
{
    *tmp = NULL;
    if (tm__needs_rounding(x->dtype, pt)) {
        *tmp = tm_to_dtype(x, pt);
        if (!*tmp) return tm__relabel_error(fn, tm_last_status());
    }
    return TM_OK;
}

/* ------------------------------------------------------------- core */

/* out = a op b where the operands promote to pt (checked by the caller). */
static tm_tensor *tm__binary_new(const char *fn, tm_binary_op op,
                                 const tm_tensor *a, const tm_tensor *b,
                                 tm_dtype pt)
{
    int64_t shape[TM_MAX_DIMS];
    int nd;
    tm_dtype rdt; /* the op's row of TM_BINARY_OPS */
    if (tm__bcast2(fn, a, b, shape, &nd) ||
        tm__rule_dtype(fn, &tm__binary_ops[op], pt, &rdt))
        return NULL;
    tm_ctx *cx = tm__ctx(a);
    tm_tensor *ta = NULL, *tb = NULL, *out = NULL;
    if (tm__round_operand(fn, a, pt, &ta) || tm__round_operand(fn, b, pt, &tb))
        goto done;
    out = tm__tensor_new(fn, shape, nd, rdt, tm_device_of(a));
    if (!out) goto done;
    tm_buf o = tm__buf(out), ab = tm__buf_bcast(ta ? ta : a, shape, nd),
           bb = tm__buf_bcast(tb ? tb : b, shape, nd);
    tm__stage sg = {0};
    tm__stage_out(&sg, &o);
    tm__stage_in(&sg, &ab);
    tm__stage_in(&sg, &bb);
    tm_status st = TM__CALL_STAGED(fn, cx, &sg, BINARY, op, binary, op, &o,
                                   &ab, &bb);
    if (st) {
        tm__relabel_error(fn, st);
        tm_free(out);
        out = NULL;
    }
done:
    tm_free(ta);
    tm_free(tb);
    return out;
}

/* PyTorch refuses subtraction with any bool operand, a bool number too
 * (x - True), not only bool - bool. */
static tm_status tm__check_sub(const char *fn, tm_binary_op op, bool has_bool)
{
    if (op == TM_OP_SUB && has_bool)
        return tm__errf(TM_EDTYPE, fn, "subtraction with a bool operand is "
                        "not supported; to invert a mask use "
                        "tm_logical_not, else convert it first");
    return TM_OK;
}

/* Validates op, a and b for a tensor-tensor op. */
static tm_status tm__check_pair(const char *fn, tm_binary_op op,
                                const tm_tensor *a, const tm_tensor *b)
{
    if (tm__check_op(fn, op) || tm__check_operand(fn, a, "a") ||
        tm__check_operand(fn, b, "b") ||
        tm__check_sub(fn, op, a->dtype == TM_BOOL || b->dtype == TM_BOOL))
        return tm_last_status();
    const tm_tensor *ts[2] = {a, b};
    return tm__check_same_device(fn, ts, 2);
}

static tm_tensor *tm__binary(const char *fn, tm_binary_op op,
                             const tm_tensor *a, const tm_tensor *b)
{
    if (tm__check_pair(fn, op, a, b)) return NULL;
    tm_tensor *out = tm__binary_new(fn, op, a, b,
                                    tm_promote_types(a->dtype, b->dtype));
    return tm__grad_binary(out, op, a, b);
}

/* s op t (reverse) or t op s, s of kind k. */
static tm_tensor *tm__binary_scalar(const char *fn, tm_binary_op op,
                                    const tm_tensor *t, double s, bool rev,
                                    tm_scalar_kind k)
{
    tm_dtype sdt, pt;
    if (tm__check_op(fn, op) || tm__check_operand(fn, t, "a") ||
        tm__check_sub(fn, op, t->dtype == TM_BOOL || k == TM_SCALAR_BOOL) ||
        tm__wrapped_dtype(fn, t->dtype, s, k, &pt, &sdt))
        return NULL;
    tm_tensor *st = tm__scalar_on(fn, s, sdt, tm_device_of(t));
    if (!st) return NULL;
    tm_tensor *out = rev ? tm__binary_new(fn, op, st, t, pt)
                         : tm__binary_new(fn, op, t, st, pt);
    tm_free(st);
    return tm__grad_binary_scalar(out, op, t, s, rev);
}

/* a = a op b in place; pt is the promoted dtype of the operands. */
static tm_status tm__binary_inplace(const char *fn, tm_binary_op op,
                                   tm_tensor *a, const tm_tensor *b,
                                   tm_dtype pt)
{
    int64_t shape[TM_MAX_DIMS];
    int nd;
    tm_dtype rdt;
    if (tm__bcast2(fn, a, b, shape, &nd) ||
        tm__rule_dtype(fn, &tm__binary_ops[op], pt, &rdt))
        return tm_last_status();
    if (nd != a->ndim ||
        memcmp(shape, a->shape, sizeof(int64_t) * (size_t)nd)) {
        char x[TM_SHAPE_BUF], y[TM_SHAPE_BUF];
        return tm__errf(TM_ESHAPE, fn, "b of shape %s does not broadcast to "
                        "the shape %s of a (written in place)",
                        tm__fmt_shape(b->shape, b->ndim, x, sizeof x),
                        tm__fmt_shape(a->shape, a->ndim, y, sizeof y));
    }
    if (!tm__can_cast(rdt, a->dtype))
        return tm__errf(TM_EDTYPE, fn, "result type %s can't be cast to the "
                        "output dtype %s", tm_dtype_name(rdt),
                        tm_dtype_name(a->dtype));
    if (tm__check_writable(fn, a) || tm__check_source(fn, b))
        return tm_last_status();
    tm_ctx *cx = tm__ctx(a);
    tm_buf o = tm__buf(a), bb = tm__buf_bcast(b, a->shape, a->ndim);
    /* Reading b while writing a is safe only when they are the very same
     * elements (a op= a); any other overlap reads through a copy. */
    bool same = bb.handle == o.handle && bb.offset == o.offset &&
                bb.dtype == o.dtype;
    for (int i = 0; same && i < a->ndim; i++)
        same = a->shape[i] <= 1 || bb.strides[i] == o.strides[i];
    tm_tensor *tmp = NULL;
    if (tm__round_operand(fn, b, pt, &tmp)) return tm_last_status();
    if (!tmp && !same && tm__may_overlap(a, b)) {
        tmp = tm_clone(b);
        if (!tmp) return tm__relabel_error(fn, tm_last_status());
    }
    if (tmp) bb = tm__buf_bcast(tmp, a->shape, a->ndim);
    tm_status st;
    if ((!tm_dtype_is_float(pt) && (op == TM_OP_FLOOR_DIVIDE ||
                                    op == TM_OP_REMAINDER || op == TM_OP_POW ||
                                    op == TM_OP_FMOD)) ||
        tm__needs_rounding(a->dtype, pt)) {
        /* These can fail half-way (division by zero, negative exponent):
         * compute aside so that a failure leaves a untouched.  So is an
         * integer a that must be rounded to an F16/BF16 pt first (i32 a
         * compared with f16 b): tm__binary_new rounds it, the kernel on a's
         * own memory would not. */
        tm_tensor *r = tm__binary_new(fn, op, a, tmp ? tmp : b, pt);
        tm_buf rb = r ? tm__buf(r) : o;
        st = r ? TM__CALL(fn, cx, copy, &o, &rb) : tm_last_status();
        tm_free(r);
    } else {
        tm__stage sg = {0};
        tm__stage_inout(&sg, &o);
        tm__stage_in(&sg, &bb);
        st = TM__CALL_STAGED(fn, cx, &sg, BINARY, op, binary, op, &o, &o, &bb);
    }
    tm_free(tmp);
    if (st) return tm__relabel_error(fn, st);
    tm__bump_version(a);
    return TM_OK;
}

/* ---------------------------------------------------------- public API */

tm_tensor *tm_binary(tm_binary_op op, const tm_tensor *a, const tm_tensor *b)
{
    return tm__binary(__func__, op, a, b);
}

tm_tensor *tm_binary_scalar(tm_binary_op op, const tm_tensor *a, double s)
{
    return tm__binary_scalar(__func__, op, a, s, false, TM_SCALAR_AUTO);
}

tm_tensor *tm_binary_rscalar(tm_binary_op op, double s, const tm_tensor *a)
{
    return tm__binary_scalar(__func__, op, a, s, true, TM_SCALAR_AUTO);
}

tm_tensor *tm_binary_scalar_as(tm_binary_op op, const tm_tensor *a, double s,
                               tm_scalar_kind k)
{
    return tm__binary_scalar(__func__, op, a, s, false, k);
}

tm_tensor *tm_binary_rscalar_as(tm_binary_op op, double s, const tm_tensor *a,
                                tm_scalar_kind k)
{
    return tm__binary_scalar(__func__, op, a, s, true, k);
}

tm_status tm_binary_(tm_binary_op op, tm_tensor *a, const tm_tensor *b)
{
    if (tm__check_pair(__func__, op, a, b)) return tm_last_status();
    return tm__binary_inplace(__func__, op, a, b,
                              tm_promote_types(a->dtype, b->dtype));
}

static tm_status tm__binary_scalar_(const char *fn, tm_binary_op op,
                                    tm_tensor *a, double s, tm_scalar_kind k)
{
    tm_dtype sdt, pt;
    if (tm__check_op(fn, op) || tm__check_operand(fn, a, "a") ||
        tm__check_sub(fn, op, a->dtype == TM_BOOL || k == TM_SCALAR_BOOL) ||
        tm__wrapped_dtype(fn, a->dtype, s, k, &pt, &sdt))
        return tm_last_status();
    tm_tensor *st = tm__scalar_on(fn, s, sdt, tm_device_of(a));
    if (!st) return tm_last_status();
    tm_status r = tm__binary_inplace(fn, op, a, st, pt);
    tm_free(st);
    return r;
}

tm_status tm_binary_scalar_(tm_binary_op op, tm_tensor *a, double s)
{
    return tm__binary_scalar_(__func__, op, a, s, TM_SCALAR_AUTO);
}

tm_status tm_binary_scalar_as_(tm_binary_op op, tm_tensor *a, double s,
                               tm_scalar_kind k)
{
    return tm__binary_scalar_(__func__, op, a, s, k);
}

#define TM__BINARY_FN(NAME, OP)                                               \
    tm_tensor *tm_##NAME(const tm_tensor *a, const tm_tensor *b)              \
    {                                                                         \
        return tm__binary(__func__, OP, a, b);                                \
    }
TM__BINARY_FN(add, TM_OP_ADD)
TM__BINARY_FN(sub, TM_OP_SUB)
TM__BINARY_FN(mul, TM_OP_MUL)
TM__BINARY_FN(div, TM_OP_DIV)
TM__BINARY_FN(pow, TM_OP_POW)
TM__BINARY_FN(maximum, TM_OP_MAXIMUM)
TM__BINARY_FN(minimum, TM_OP_MINIMUM)
TM__BINARY_FN(eq, TM_OP_EQ)
TM__BINARY_FN(ne, TM_OP_NE)
TM__BINARY_FN(lt, TM_OP_LT)
TM__BINARY_FN(le, TM_OP_LE)
TM__BINARY_FN(gt, TM_OP_GT)
TM__BINARY_FN(ge, TM_OP_GE)
TM__BINARY_FN(logical_and, TM_OP_LOGICAL_AND)
TM__BINARY_FN(logical_or, TM_OP_LOGICAL_OR)
TM__BINARY_FN(logical_xor, TM_OP_LOGICAL_XOR)
TM__BINARY_FN(floor_divide, TM_OP_FLOOR_DIVIDE)
TM__BINARY_FN(remainder, TM_OP_REMAINDER)
TM__BINARY_FN(bitwise_and, TM_OP_BITWISE_AND)
TM__BINARY_FN(bitwise_or, TM_OP_BITWISE_OR)
TM__BINARY_FN(bitwise_xor, TM_OP_BITWISE_XOR)
TM__BINARY_FN(bitwise_left_shift, TM_OP_BITWISE_LEFT_SHIFT)
TM__BINARY_FN(bitwise_right_shift, TM_OP_BITWISE_RIGHT_SHIFT)
TM__BINARY_FN(fmod, TM_OP_FMOD)
TM__BINARY_FN(atan2, TM_OP_ATAN2)
TM__BINARY_FN(logaddexp, TM_OP_LOGADDEXP)
TM__BINARY_FN(logaddexp2, TM_OP_LOGADDEXP2)
TM__BINARY_FN(copysign, TM_OP_COPYSIGN)
TM__BINARY_FN(hypot, TM_OP_HYPOT)

#define TM__SCALAR_FN(NAME, OP)                                               \
    tm_tensor *tm_##NAME##_scalar(const tm_tensor *a, double s)               \
    {                                                                         \
        return tm__binary_scalar(__func__, OP, a, s, false, TM_SCALAR_AUTO);  \
    }
TM__SCALAR_FN(add, TM_OP_ADD)
TM__SCALAR_FN(sub, TM_OP_SUB)
TM__SCALAR_FN(mul, TM_OP_MUL)
TM__SCALAR_FN(div, TM_OP_DIV)
TM__SCALAR_FN(pow, TM_OP_POW)
TM__SCALAR_FN(maximum, TM_OP_MAXIMUM)
TM__SCALAR_FN(minimum, TM_OP_MINIMUM)
TM__SCALAR_FN(remainder, TM_OP_REMAINDER)
TM__SCALAR_FN(fmod, TM_OP_FMOD)

#define TM__INPLACE_FN(NAME, OP)                                              \
    tm_status tm_##NAME##_(tm_tensor *a, const tm_tensor *b)                  \
    {                                                                         \
        if (tm__check_pair(__func__, OP, a, b)) return tm_last_status();      \
        return tm__binary_inplace(__func__, OP, a, b,                         \
                                  tm_promote_types(a->dtype, b->dtype));      \
    }
TM__INPLACE_FN(add, TM_OP_ADD)
TM__INPLACE_FN(sub, TM_OP_SUB)
TM__INPLACE_FN(mul, TM_OP_MUL)
TM__INPLACE_FN(div, TM_OP_DIV)

tm_status tm_add_scalar_(tm_tensor *a, double s)
{
    return tm__binary_scalar_(__func__, TM_OP_ADD, a, s, TM_SCALAR_AUTO);
}

tm_status tm_mul_scalar_(tm_tensor *a, double s)
{
    return tm__binary_scalar_(__func__, TM_OP_MUL, a, s, TM_SCALAR_AUTO);
}

tm_tensor *tm_clamp_tensor(const tm_tensor *t, const tm_tensor *lo,
                           const tm_tensor *hi)
{
    if (tm__check_operand(__func__, t, "t") ||
        (lo && tm__check_operand(__func__, lo, "lo")) ||
        (hi && tm__check_operand(__func__, hi, "hi")))
        return NULL;
    if (!lo && !hi) {
        TM_ERR(TM_EINVAL, "lo and hi are both NULL; pass at least one bound");
        return NULL;
    }
    const tm_tensor *ts[3] = {t, lo, hi};
    if (tm__check_same_device(__func__, ts, 3)) return NULL;
    /* min(max(t, lo), hi): maximum/minimum propagate NaN from t (and from
     * a NaN bound, as PyTorch's clamp does); lo > hi gives hi.  t is first
     * converted to the dtype promoted over all three, so both steps compute
     * in it: max(t, lo) in the pair's dtype would round t (an i32 t with a
     * bf16 lo, or an f16 t with an i32 lo, even when hi is f64). */
    tm_dtype pt = t->dtype;
    if (lo) pt = tm_promote_types(pt, lo->dtype);
    if (hi) pt = tm_promote_types(pt, hi->dtype);
    tm_tensor *tc = NULL;
    if (pt != t->dtype && !(tc = tm_to_dtype(t, pt))) {
        tm__relabel_error(__func__, tm_last_status());
        return NULL;
    }
    tm_tensor *r = NULL;
    const tm_tensor *x = tc ? tc : t;
    if (lo) {
        r = tm__binary_new(__func__, TM_OP_MAXIMUM, x, lo, pt);
        if (!r) {
            tm_free(tc);
            return NULL;
        }
        x = r;
    }
    if (hi) {
        tm_tensor *r2 = tm__binary_new(__func__, TM_OP_MINIMUM, x, hi, pt);
        tm_free(r);
        r = r2;
    }
    tm_free(tc);
    return tm__grad_clamp_tensor(r, t, lo, hi);
}

/* ~t is t ^ -1 on integers (every bit flipped in any width, since -1 has
 * all bits set); on BOOL it is logical not, as in PyTorch. */
tm_tensor *tm_bitwise_not(const tm_tensor *t)
{
    if (tm__check_operand(__func__, t, "t")) return NULL;
    if (t->dtype == TM_BOOL) return tm_unary(TM_OP_LOGICAL_NOT, t);
    if (tm_dtype_is_float(t->dtype)) {
        TM_ERR(TM_EDTYPE, "bitwise_not is only defined on integer and bool "
               "tensors, not %s", tm_dtype_name(t->dtype));
        return NULL;
    }
    return tm__binary_scalar(__func__, TM_OP_BITWISE_XOR, t, -1, false,
                             TM_SCALAR_INT);
}

tm_status tm_bitwise_not_(tm_tensor *t)
{
    if (tm__check_operand(__func__, t, "t")) return tm_last_status();
    if (t->dtype == TM_BOOL) return tm_unary_(TM_OP_LOGICAL_NOT, t);
    if (tm_dtype_is_float(t->dtype))
        return TM_ERR(TM_EDTYPE, "bitwise_not_ is only defined on integer "
                      "and bool tensors, not %s", tm_dtype_name(t->dtype));
    return tm__binary_scalar_(__func__, TM_OP_BITWISE_XOR, t, -1,
                              TM_SCALAR_INT);
}
