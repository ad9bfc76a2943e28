/*
 * binary_float_tmpl.h — the binary elementwise loops of one float compute
 * type, instantiated for F32 and F64 by cpu_binary.c (no include guard).
 *
 * The includer defines BT (float or double), BN(name), and the libm
 * functions of that type: BT_FMOD, BT_FLOOR, BT_COPYSIGN, BT_POW, BT_ATAN2,
 * BT_LOG1P, BT_EXP, BT_EXP2, BT_HYPOT.
 */
#include "binary_forms_tmpl.h"

static inline BT BN(add)(BT a, BT b) { return a + b; }
static inline BT BN(sub)(BT a, BT b) { return a - b; }
static inline BT BN(mul)(BT a, BT b) { return a * b; }
static inline BT BN(div)(BT a, BT b) { return a / b; }

static inline BT BN(pow)(BT a, BT b, int *err)
{
    (void)err;
    return BT_POW(a, b);
}

/* NaN in either operand wins (numpy / PyTorch maximum, minimum). */
static inline BT BN(max)(BT a, BT b, int *err)
{
    (void)err;
    return (a >= b || a != a) ? a : b;
}

static inline BT BN(min)(BT a, BT b, int *err)
{
    (void)err;
    return (a <= b || a != a) ? a : b;
}

/* floor_divide and remainder follow numpy's npy_divmod (and Python): the
 * quotient is snapped to an integer, the remainder takes the sign of the
 * divisor, and division by zero gives the IEEE result. */
static inline BT BN(floordiv)(BT a, BT b, int *err)
{
    (void)err;
    if (b == 0) return a / b;
    BT mod = BT_FMOD(a, b);
    BT div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return BT_COPYSIGN((BT)0, a / b);
    BT fl = BT_FLOOR(div);
    if (div - fl > (BT)0.5) fl += 1;
    return fl;
}

static inline BT BN(rem)(BT a, BT b, int *err)
{
    (void)err;
    BT mod = BT_FMOD(a, b);
    if (mod == 0) return BT_COPYSIGN((BT)0, b);
    if ((b < 0) != (mod < 0)) mod += b;
    return mod;
}

static inline BT BN(fmod)(BT a, BT b, int *err)
{
    (void)err;
    return BT_FMOD(a, b);
}

static inline BT BN(atan2)(BT a, BT b, int *err)
{
    (void)err;
    return BT_ATAN2(a, b);
}

/* max + log1p(exp(-|a - b|)) does not overflow; equal operands (equal
 * infinities too, where a - b is NaN) are a + log(2). */
static inline BT BN(logaddexp)(BT a, BT b, int *err)
{
    (void)err;
    if (a != a || b != b) return a + b;
    if (a == b) return a + (BT)0.693147180559945309417232121458176568;
    BT m = a > b ? a : b, d = a > b ? b - a : a - b;
    return m + BT_LOG1P(BT_EXP(d));
}

static inline BT BN(logaddexp2)(BT a, BT b, int *err)
{
    (void)err;
    if (a != a || b != b) return a + b;
    if (a == b) return a + 1;
    BT m = a > b ? a : b, d = a > b ? b - a : a - b;
    return m + BT_LOG1P(BT_EXP2(d)) *
                   (BT)1.44269504088896340735992468100189214;
}

static inline BT BN(copysign)(BT a, BT b, int *err)
{
    (void)err;
    return BT_COPYSIGN(a, b);
}

static inline BT BN(hypot)(BT a, BT b, int *err)
{
    (void)err;
    return BT_HYPOT(a, b);
}

/* The loop of one chunk: in[0] (and in[1] for TM__VV) from the engine,
 * the scalar operand from the context. */
static void BN(loop)(int64_t n, void *o, const void *const *in, void *p)
{
    tm__bin_ctx *c = p;
    BT sv;
    memcpy(&sv, c->scalar, sizeof sv);
    const BT *s = &sv;
    const BT *x = c->form == TM__SV ? s : in[0];
    const BT *y = c->form == TM__VV ? in[1] : c->form == TM__VS ? s : in[0];
    BT *z = o;
    int err = 0;
    switch (c->op) {
    case TM_OP_ADD: BN(arith)(n, z, x, y, c->form, BN(add)); break;
    case TM_OP_SUB: BN(arith)(n, z, x, y, c->form, BN(sub)); break;
    case TM_OP_MUL: BN(arith)(n, z, x, y, c->form, BN(mul)); break;
    case TM_OP_DIV: BN(arith)(n, z, x, y, c->form, BN(div)); break;
    case TM_OP_POW: BN(plain)(n, z, x, y, c->form, BN(pow), &err); break;
    case TM_OP_MAXIMUM: BN(plain)(n, z, x, y, c->form, BN(max), &err); break;
    case TM_OP_MINIMUM: BN(plain)(n, z, x, y, c->form, BN(min), &err); break;
    case TM_OP_FLOOR_DIVIDE:
        BN(plain)(n, z, x, y, c->form, BN(floordiv), &err);
        break;
    case TM_OP_REMAINDER:
        BN(plain)(n, z, x, y, c->form, BN(rem), &err);
        break;
    case TM_OP_FMOD: BN(plain)(n, z, x, y, c->form, BN(fmod), &err); break;
    case TM_OP_ATAN2: BN(plain)(n, z, x, y, c->form, BN(atan2), &err); break;
    case TM_OP_LOGADDEXP:
        BN(plain)(n, z, x, y, c->form, BN(logaddexp), &err);
        break;
    case TM_OP_LOGADDEXP2:
        BN(plain)(n, z, x, y, c->form, BN(logaddexp2), &err);
        break;
    case TM_OP_COPYSIGN:
        BN(plain)(n, z, x, y, c->form, BN(copysign), &err);
        break;
    case TM_OP_HYPOT: BN(plain)(n, z, x, y, c->form, BN(hypot), &err); break;
    default: BN(pred_op)(c->op, n, o, x, y, c->form); break;
    }
    tm__bin_flag(c, err);
}
