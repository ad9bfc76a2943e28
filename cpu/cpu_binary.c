/* cpu_binary.c — binary elementwise kernels for the CPU.
 *
 * Binary ops run on the elementwise engine (cpu_elementwise.c): each op is
 * one loop per compute type over contiguous arrays, out[i] = a[i] OP b[i].
 * The compute type follows from the promoted dtype of a and b:
 *   F64 -> F64;  F32, F16, BF16 -> F32 (rounded once on output);
 *   integers, bool -> I64 (F32 for div), narrowed on output with wrap.
 * The loops are written once (binary_forms_tmpl.h, binary_float_tmpl.h)
 * and instantiated per compute type.  Integer arithmetic goes through
 * uint64_t so overflow wraps instead of being undefined. */
#include "cpu_impl.h"
#include "../tensor/ops/op_table.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Kernel-detected errors (bits, so the reported one does not depend on
 * which thread saw what). */
enum { TM__BIN_EDIV = 1, TM__BIN_EPOW = 2 };

/* The loop forms (binary_forms_tmpl.h). */
enum { TM__VV, TM__VS, TM__SV };

#if defined(__GNUC__) /* 4 KiB ahead; integer address: may be past the end */
#define TM__PREFETCH(p)                                                       \
    __builtin_prefetch((const void *)((uintptr_t)(p) + 4096))
#else
#define TM__PREFETCH(p) ((void)(p))
#endif

/* What a chunk's loop needs besides its arrays; `err` collects kernel
 * errors from every thread. */
typedef struct {
    tm_binary_op op;
    int form;
    atomic_int err;
    _Alignas(8) unsigned char scalar[8]; /* the scalar operand, as T */
} tm__bin_ctx;

static void tm__bin_flag(tm__bin_ctx *c, int err)
{
    if (err) atomic_fetch_or(&c->err, err);
}

/* ------------------------------------------------------------ F32, F64 */

#define BT float
#define BN(name) tm__bin_f32_##name
#define BT_FMOD fmodf
#define BT_FLOOR floorf
#define BT_COPYSIGN copysignf
#define BT_POW powf
#define BT_ATAN2 atan2f
#define BT_LOG1P log1pf
#define BT_EXP expf
#define BT_EXP2 exp2f
#define BT_HYPOT hypotf
#include "binary_float_tmpl.h"
#undef BT
#undef BN
#undef BT_FMOD
#undef BT_FLOOR
#undef BT_COPYSIGN
#undef BT_POW
#undef BT_ATAN2
#undef BT_LOG1P
#undef BT_EXP
#undef BT_EXP2
#undef BT_HYPOT

#define BT double
#define BN(name) tm__bin_f64_##name
#define BT_FMOD fmod
#define BT_FLOOR floor
#define BT_COPYSIGN copysign
#define BT_POW pow
#define BT_ATAN2 atan2
#define BT_LOG1P log1p
#define BT_EXP exp
#define BT_EXP2 exp2
#define BT_HYPOT hypot
#include "binary_float_tmpl.h"
#undef BT
#undef BN
#undef BT_FMOD
#undef BT_FLOOR
#undef BT_COPYSIGN
#undef BT_POW
#undef BT_ATAN2
#undef BT_LOG1P
#undef BT_EXP
#undef BT_EXP2
#undef BT_HYPOT

/* ----------------------------------------------------------------- I64 */

#define BT int64_t
#define BN(name) tm__bin_i64_##name
#include "binary_forms_tmpl.h"

static inline int64_t tm__wrap(uint64_t v)
{
    /* Converting an out-of-range uint64_t is implementation-defined, not
     * undefined; every compiler we support wraps. */
    return (int64_t)v;
}

static inline int64_t tm__iadd(int64_t a, int64_t b, int *err)
{
    (void)err;
    return tm__wrap((uint64_t)a + (uint64_t)b);
}

static inline int64_t tm__isub(int64_t a, int64_t b, int *err)
{
    (void)err;
    return tm__wrap((uint64_t)a - (uint64_t)b);
}

static inline int64_t tm__imul(int64_t a, int64_t b, int *err)
{
    (void)err;
    return tm__wrap((uint64_t)a * (uint64_t)b);
}

static inline int64_t tm__imax(int64_t a, int64_t b, int *err)
{
    (void)err;
    return a > b ? a : b;
}

static inline int64_t tm__imin(int64_t a, int64_t b, int *err)
{
    (void)err;
    return a < b ? a : b;
}

static inline int64_t tm__ifloordiv(int64_t a, int64_t b, int *err)
{
    if (b == 0) {
        *err |= TM__BIN_EDIV;
        return 0;
    }
    if (b == -1) return tm__wrap(0 - (uint64_t)a); /* INT64_MIN / -1 wraps */
    int64_t q = a / b, r = a % b;
    if (r != 0 && (r < 0) != (b < 0)) q--;
    return q;
}

static inline int64_t tm__irem(int64_t a, int64_t b, int *err)
{
    if (b == 0) {
        *err |= TM__BIN_EDIV;
        return 0;
    }
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && (r < 0) != (b < 0)) r += b;
    return r;
}

static inline int64_t tm__ipow(int64_t a, int64_t e, int *err)
{
    if (e < 0) {
        *err |= TM__BIN_EPOW;
        return 0;
    }
    uint64_t r = 1, x = (uint64_t)a;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return tm__wrap(r);
}

/* C's %: truncated, with the sign of a. */
static inline int64_t tm__ifmod(int64_t a, int64_t b, int *err)
{
    if (b == 0) {
        *err |= TM__BIN_EDIV;
        return 0;
    }
    return b == -1 ? 0 : a % b; /* INT64_MIN % -1 overflows in C */
}

static inline int64_t tm__iand(int64_t a, int64_t b, int *err)
{
    (void)err;
    return a & b;
}

static inline int64_t tm__ior(int64_t a, int64_t b, int *err)
{
    (void)err;
    return a | b;
}

static inline int64_t tm__ixor(int64_t a, int64_t b, int *err)
{
    (void)err;
    return a ^ b;
}

/* Counts outside [0, 64) give 0, as PyTorch; counts from the narrower
 * dtype's width up give 0 too once the result is wrapped to it. */
static inline int64_t tm__ishl(int64_t a, int64_t b, int *err)
{
    (void)err;
    return b < 0 || b >= 64 ? 0 : tm__wrap((uint64_t)a << b);
}

/* Arithmetic shift written without shifting a negative value (whose
 * result C leaves to the implementation); counts outside [0, 64) give the
 * sign fill. */
static inline int64_t tm__ishr(int64_t a, int64_t b, int *err)
{
    (void)err;
    if (b < 0 || b >= 64) return a < 0 ? -1 : 0;
    return a < 0 ? ~(~a >> b) : a >> b;
}

/* Integer and bool operands: every op but the FLOAT ones (computed in
 * F32). */
static void tm__bin_i64_loop(int64_t n, void *o, const void *const *in,
                             void *p)
{
    tm__bin_ctx *c = p;
    int64_t sv;
    memcpy(&sv, c->scalar, sizeof sv);
    const int64_t *x = c->form == TM__SV ? &sv : in[0];
    const int64_t *y = c->form == TM__VV ? in[1]
                       : c->form == TM__VS ? &sv
                                           : in[0];
    int64_t *z = o;
    int err = 0, f = c->form;
    switch (c->op) {
    case TM_OP_ADD: tm__bin_i64_plain(n, z, x, y, f, tm__iadd, &err); break;
    case TM_OP_SUB: tm__bin_i64_plain(n, z, x, y, f, tm__isub, &err); break;
    case TM_OP_MUL: tm__bin_i64_plain(n, z, x, y, f, tm__imul, &err); break;
    case TM_OP_POW: tm__bin_i64_plain(n, z, x, y, f, tm__ipow, &err); break;
    case TM_OP_MAXIMUM:
        tm__bin_i64_plain(n, z, x, y, f, tm__imax, &err);
        break;
    case TM_OP_MINIMUM:
        tm__bin_i64_plain(n, z, x, y, f, tm__imin, &err);
        break;
    case TM_OP_FLOOR_DIVIDE:
        tm__bin_i64_plain(n, z, x, y, f, tm__ifloordiv, &err);
        break;
    case TM_OP_REMAINDER:
        tm__bin_i64_plain(n, z, x, y, f, tm__irem, &err);
        break;
    case TM_OP_FMOD: tm__bin_i64_plain(n, z, x, y, f, tm__ifmod, &err); break;
    case TM_OP_BITWISE_AND:
        tm__bin_i64_plain(n, z, x, y, f, tm__iand, &err);
        break;
    case TM_OP_BITWISE_OR:
        tm__bin_i64_plain(n, z, x, y, f, tm__ior, &err);
        break;
    case TM_OP_BITWISE_XOR:
        tm__bin_i64_plain(n, z, x, y, f, tm__ixor, &err);
        break;
    case TM_OP_BITWISE_LEFT_SHIFT:
        tm__bin_i64_plain(n, z, x, y, f, tm__ishl, &err);
        break;
    case TM_OP_BITWISE_RIGHT_SHIFT:
        tm__bin_i64_plain(n, z, x, y, f, tm__ishr, &err);
        break;
    default: tm__bin_i64_pred_op(c->op, n, o, x, y, f); break;
    }
    tm__bin_flag(c, err);
}

#undef BT
#undef BN

/* ------------------------------------------------------------ dispatch */

/* True when every element of x is the same memory (a broadcast scalar). */
static bool tm__bin_is_scalar(const tm_buf *x)
{
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] > 1 && x->strides[i] != 0) return false;
    return true;
}

tm_status tm__cpu_binary(tm_ctx *ctx, tm_binary_op op, const tm_buf *out, const tm_buf *a,
                         const tm_buf *b)
{
    (void)ctx;
    TM_ASSERT((int)op >= 0 && op < TM_BINARY_OP_COUNT, TM_EINVAL);
    tm_dtype pt = tm_promote_types(a->dtype, b->dtype);
    tm__op_class cls = tm__binary_ops[op].cls;
    tm_dtype ct = pt == TM_F64 ? TM_F64
                  : tm_dtype_is_float(pt) || cls == TM__CLASS_FLOAT ? TM_F32
                                                                    : TM_I64;
    if (cls == TM__CLASS_BITS && ct != TM_I64) /* the front ends refuse it */
        return TM_ERR(TM_EDTYPE, "%s is only defined on integer and bool "
                      "operands, not %s", tm__binary_ops[op].name,
                      tm_dtype_name(pt));
    tm__ew_loop loop = ct == TM_F32   ? tm__bin_f32_loop
                       : ct == TM_F64 ? tm__bin_f64_loop
                                      : tm__bin_i64_loop;
    tm__bin_ctx bc = {.op = op, .form = TM__VV};
    atomic_init(&bc.err, 0);
    int nin = 2;
    const tm_buf *ins[2] = {a, b};
    bool sa = tm__bin_is_scalar(a), sb = tm__bin_is_scalar(b);
    if (sb != sa) { /* exactly one scalar operand: convert it once */
        const tm_buf *s = sb ? b : a;
        tm__convert(bc.scalar, ct, 0, tm__ptr(s), s->dtype, 0, 1);
        bc.form = sb ? TM__VS : TM__SV;
        ins[0] = sb ? a : b;
        nin = 1;
    }
    bool pred = cls == TM__CLASS_PRED;
    tm_status st = tm__ew_run(out, pred ? TM_BOOL : ct, ins, nin, ct, loop,
                              &bc);
    if (st) return st;
    int err = atomic_load(&bc.err);
    if (err & TM__BIN_EDIV) return TM_ERR(TM_EINVAL, "integer division by zero");
    if (err & TM__BIN_EPOW)
        return TM_ERR(TM_EINVAL, "integers to negative integer powers are "
                                 "not allowed (negative exponent)");
    return TM_OK;
}
