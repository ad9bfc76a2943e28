/* cpu_binary.c — binary elementwise kernels and `where` for the CPU.
 *
 * Binary ops run on the elementwise engine (cpu_elementwise.c): each op is
 * one loop per compute type over contiguous arrays, out[i] = a[i] OP b[i].
 * The compute type follows from the promoted dtype of a and b:
 *   F64 -> F64;  F32, F16, BF16 -> F32 (rounded once on output);
 *   integers, bool -> I64 (F32 for div), narrowed on output with wrap.
 * Integer arithmetic goes through uint64_t so overflow wraps instead of
 * being undefined. */
#include "cpu_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Kernel-detected errors (bits, so the reported one does not depend on
 * which thread saw what). */
enum { TM__BIN_EDIV = 1, TM__BIN_EPOW = 2 };

/* ----------------------------------------------------- float helpers
 * floor_divide and remainder follow numpy's npy_divmod (and Python):
 * the quotient is snapped to an integer, the remainder takes the sign of
 * the divisor, and division by zero gives the IEEE result. */
#define TM__FLOAT_HELPERS(T, S, FMOD, FLOOR, COPYSIGN)                        \
    static inline T tm__floordiv_##S(T a, T b)                                \
    {                                                                         \
        if (b == 0) return a / b;                                             \
        T mod = FMOD(a, b);                                                   \
        T div = (a - mod) / b;                                                \
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                       \
        if (div == 0) return COPYSIGN((T)0, a / b);                           \
        T fl = FLOOR(div);                                                    \
        if (div - fl > (T)0.5) fl += 1;                                       \
        return fl;                                                            \
    }                                                                         \
    static inline T tm__rem_##S(T a, T b)                                     \
    {                                                                         \
        T mod = FMOD(a, b);                                                   \
        if (mod == 0) return COPYSIGN((T)0, b);                               \
        if ((b < 0) != (mod < 0)) mod += b;                                   \
        return mod;                                                           \
    }                                                                         \
    /* NaN in either operand wins (numpy / PyTorch maximum, minimum). */     \
    static inline T tm__max_##S(T a, T b) { return (a >= b || a != a) ? a : b; } \
    static inline T tm__min_##S(T a, T b) { return (a <= b || a != a) ? a : b; }

TM__FLOAT_HELPERS(float, f, fmodf, floorf, copysignf)
TM__FLOAT_HELPERS(double, d, fmod, floor, copysign)

/* ---------------------------------------------------- integer helpers */

static inline int64_t tm__wrap(uint64_t v)
{
    /* Converting an out-of-range uint64_t is implementation-defined, not
     * undefined; every compiler we support wraps. */
    return (int64_t)v;
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

/* ------------------------------------------------------------- loops
 * Each op gets three loops per compute type T: array OP array, array OP
 * scalar (_vs) and scalar OP array (_sv).  The scalar forms serve operands
 * broadcast from a single element (x * 0.5, 1 - x), which are converted
 * once instead of per chunk.  Arithmetic loops write T; predicate loops
 * (compare, logical) write uint8_t (BOOL).  `err` collects kernel errors. */
typedef struct {
    atomic_int err;
    _Alignas(8) unsigned char scalar[8]; /* the scalar operand, as T */
} tm__bin_ctx;

static void tm__bin_flag(void *ctx, int err)
{
    if (err) atomic_fetch_or(&((tm__bin_ctx *)ctx)->err, err);
}

#define TM__LOOP_FORM(NAME, T, OT, EXPR, SETUP, A, B)                         \
    static void NAME(int64_t n, void *o, const void *const *in, void *ctx)    \
    {                                                                         \
        SETUP                                                                 \
        OT *z = o;                                                            \
        int err = 0;                                                          \
        for (int64_t i = 0; i < n; i++) {                                     \
            T a = A, b = B;                                                   \
            z[i] = (OT)(EXPR);                                                \
        }                                                                     \
        (void)err;                                                            \
        tm__bin_flag(ctx, err);                                               \
    }

#define TM__LOOP(NAME, T, OT, EXPR)                                           \
    TM__LOOP_FORM(NAME, T, OT, EXPR,                                          \
                  const T *x = in[0]; const T *y = in[1];, x[i], y[i])        \
    TM__LOOP_FORM(NAME##_vs, T, OT, EXPR,                                     \
                  const T *x = in[0]; T s;                                  \
                  memcpy(&s, ((tm__bin_ctx *)ctx)->scalar, sizeof s);, x[i], s) \
    TM__LOOP_FORM(NAME##_sv, T, OT, EXPR,                                     \
                  const T *y = in[0]; T s;                                  \
                  memcpy(&s, ((tm__bin_ctx *)ctx)->scalar, sizeof s);, s, y[i])

/* Float add, sub, mul, div: blocks of 8 computed into a local array and
 * then stored, a shape compilers vectorize at -O2 (gcc's cheap cost model
 * does not vectorize the plain loop, whose trip count and aliasing are
 * unknown).  All loads of a block precede its stores, so out == in (in
 * place) is fine; other overlaps are excluded by the front ends. */
#if defined(__GNUC__) /* 4 KiB ahead; integer address: may be past the end */
#define TM__PREFETCH(p)                                                       \
    __builtin_prefetch((const void *)((uintptr_t)(p) + 4096))
#else
#define TM__PREFETCH(p) ((void)(p))
#endif
#define TM__ARITH_FORM(NAME, T, EXPR, SETUP, A, B)                            \
    static void NAME(int64_t n, void *o, const void *const *in, void *ctx)    \
    {                                                                         \
        SETUP                                                                 \
        T *z = o;                                                             \
        int64_t j = 0;                                                        \
        for (; j + 8 <= n; j += 8) {                                          \
            T t[8];                                                           \
            TM__PREFETCH(&A(j));                                              \
            TM__PREFETCH(&B(j));                                              \
            for (int k = 0; k < 8; k++) {                                     \
                T a = A(j + k), b = B(j + k);                                 \
                t[k] = EXPR;                                                  \
            }                                                                 \
            memcpy(z + j, t, sizeof t);                                       \
        }                                                                     \
        for (; j < n; j++) {                                                  \
            T a = A(j), b = B(j);                                             \
            z[j] = EXPR;                                                      \
        }                                                                     \
        (void)ctx;                                                            \
    }

#define TM__AT_X(i) x[i]
#define TM__AT_Y(i) y[i]
#define TM__AT_S(i) s_[0 * (i)]
#define TM__ARITH(NAME, T, EXPR)                                              \
    TM__ARITH_FORM(NAME, T, EXPR,                                             \
                   const T *x = in[0]; const T *y = in[1];,                   \
                   TM__AT_X, TM__AT_Y)                                        \
    TM__ARITH_FORM(NAME##_vs, T, EXPR,                                        \
                   const T *x = in[0]; T s_[1];                               \
                   memcpy(s_, ((tm__bin_ctx *)ctx)->scalar, sizeof s_);,      \
                   TM__AT_X, TM__AT_S)                                        \
    TM__ARITH_FORM(NAME##_sv, T, EXPR,                                        \
                   const T *y = in[0]; T s_[1];                               \
                   memcpy(s_, ((tm__bin_ctx *)ctx)->scalar, sizeof s_);,      \
                   TM__AT_S, TM__AT_Y)

/* The loops of one compute type T (helper suffix S). */
#define TM__FLOAT_LOOPS(T, S, POW)                                            \
    TM__ARITH(tm__add_##S, T, a + b)                                          \
    TM__ARITH(tm__sub_##S, T, a - b)                                          \
    TM__ARITH(tm__mul_##S, T, a * b)                                          \
    TM__ARITH(tm__div_##S, T, a / b)                                          \
    TM__LOOP(tm__pow_##S, T, T, POW(a, b))                                    \
    TM__LOOP(tm__maximum_##S, T, T, tm__max_##S(a, b))                        \
    TM__LOOP(tm__minimum_##S, T, T, tm__min_##S(a, b))                        \
    TM__LOOP(tm__fdiv_##S, T, T, tm__floordiv_##S(a, b))                      \
    TM__LOOP(tm__frem_##S, T, T, tm__rem_##S(a, b))                           \
    TM__PRED_LOOPS(T, S)

#define TM__PRED_LOOPS(T, S)                                                  \
    TM__LOOP(tm__eq_##S, T, uint8_t, a == b)                                  \
    TM__LOOP(tm__ne_##S, T, uint8_t, a != b)                                  \
    TM__LOOP(tm__lt_##S, T, uint8_t, a < b)                                   \
    TM__LOOP(tm__le_##S, T, uint8_t, a <= b)                                  \
    TM__LOOP(tm__gt_##S, T, uint8_t, a > b)                                   \
    TM__LOOP(tm__ge_##S, T, uint8_t, a >= b)                                  \
    TM__LOOP(tm__and_##S, T, uint8_t, (a != 0) && (b != 0))                   \
    TM__LOOP(tm__or_##S, T, uint8_t, (a != 0) || (b != 0))                    \
    TM__LOOP(tm__xor_##S, T, uint8_t, (a != 0) != (b != 0))

TM__FLOAT_LOOPS(float, f, powf)
TM__FLOAT_LOOPS(double, d, pow)

TM__LOOP(tm__add_i, int64_t, int64_t, tm__wrap((uint64_t)a + (uint64_t)b))
TM__LOOP(tm__sub_i, int64_t, int64_t, tm__wrap((uint64_t)a - (uint64_t)b))
TM__LOOP(tm__mul_i, int64_t, int64_t, tm__wrap((uint64_t)a * (uint64_t)b))
TM__LOOP(tm__pow_i, int64_t, int64_t, tm__ipow(a, b, &err))
TM__LOOP(tm__maximum_i, int64_t, int64_t, a > b ? a : b)
TM__LOOP(tm__minimum_i, int64_t, int64_t, a < b ? a : b)
TM__LOOP(tm__fdiv_i, int64_t, int64_t, tm__ifloordiv(a, b, &err))
TM__LOOP(tm__frem_i, int64_t, int64_t, tm__irem(a, b, &err))
TM__PRED_LOOPS(int64_t, i)

/* Table [form][compute type][op]; compute types 0: F32, 1: F64, 2: I64.
 * div has no I64 loop: it computes in F32 for integer inputs. */
#define TM__DIV_f(F) tm__div_f##F
#define TM__DIV_d(F) tm__div_d##F
#define TM__DIV_i(F) NULL
#define TM__ROW(S, F)                                                         \
    {[TM_OP_ADD] = tm__add_##S##F, [TM_OP_SUB] = tm__sub_##S##F,              \
     [TM_OP_MUL] = tm__mul_##S##F, [TM_OP_DIV] = TM__DIV_##S(F),              \
     [TM_OP_POW] = tm__pow_##S##F, [TM_OP_MAXIMUM] = tm__maximum_##S##F,      \
     [TM_OP_MINIMUM] = tm__minimum_##S##F, [TM_OP_EQ] = tm__eq_##S##F,        \
     [TM_OP_NE] = tm__ne_##S##F, [TM_OP_LT] = tm__lt_##S##F,                  \
     [TM_OP_LE] = tm__le_##S##F, [TM_OP_GT] = tm__gt_##S##F,                  \
     [TM_OP_GE] = tm__ge_##S##F, [TM_OP_LOGICAL_AND] = tm__and_##S##F,        \
     [TM_OP_LOGICAL_OR] = tm__or_##S##F, [TM_OP_LOGICAL_XOR] = tm__xor_##S##F, \
     [TM_OP_FLOOR_DIVIDE] = tm__fdiv_##S##F,                                  \
     [TM_OP_REMAINDER] = tm__frem_##S##F}
#define TM__FORM(F) {TM__ROW(f, F), TM__ROW(d, F), TM__ROW(i, F)}

enum { TM__VV, TM__VS, TM__SV };
static const tm__ew_loop tm__bin_loops[3][3][TM_BINARY_OP_COUNT] = {
    TM__FORM(), TM__FORM(_vs), TM__FORM(_sv)};

static bool tm__bin_is_pred(tm_binary_op op)
{
    return op >= TM_OP_EQ && op <= TM_OP_LOGICAL_XOR;
}

/* True when every element of x is the same memory (a broadcast scalar). */
static bool tm__bin_is_scalar(const tm_buf *x)
{
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] > 1 && x->strides[i] != 0) return false;
    return true;
}

tm_status tm__cpu_binary(tm_binary_op op, const tm_buf *out, const tm_buf *a,
                         const tm_buf *b)
{
    TM_ASSERT((int)op >= 0 && op < TM_BINARY_OP_COUNT, TM_EINVAL);
    tm_dtype pt = tm_promote_types(a->dtype, b->dtype);
    tm_dtype ct = pt == TM_F64 ? TM_F64
                  : tm_dtype_is_float(pt) || op == TM_OP_DIV ? TM_F32
                                                             : TM_I64;
    int col = ct == TM_F32 ? 0 : ct == TM_F64 ? 1 : 2;
    tm__bin_ctx ctx;
    atomic_init(&ctx.err, 0);
    int form = TM__VV, nin = 2;
    const tm_buf *ins[2] = {a, b};
    bool sa = tm__bin_is_scalar(a), sb = tm__bin_is_scalar(b);
    if (sb != sa) { /* exactly one scalar operand: convert it once */
        const tm_buf *s = sb ? b : a;
        tm__convert(ctx.scalar, ct, 0, s->data, s->dtype, 0, 1);
        form = sb ? TM__VS : TM__SV;
        ins[0] = sb ? a : b;
        nin = 1;
    }
    tm__ew_loop loop = tm__bin_loops[form][col][op];
    TM_ASSERT(loop != NULL, TM_ESTATE);
    tm_status st = tm__ew_run(out, tm__bin_is_pred(op) ? TM_BOOL : ct, ins,
                              nin, ct, loop, &ctx);
    if (st) return st;
    int err = atomic_load(&ctx.err);
    if (err & TM__BIN_EDIV) return TM_ERR(TM_EINVAL, "integer division by zero");
    if (err & TM__BIN_EPOW)
        return TM_ERR(TM_EINVAL, "integers to negative integer powers are "
                                 "not allowed (negative exponent)");
    return TM_OK;
}

/* ------------------------------------------------------------- where
 * out = cond != 0 ? a : b.  cond is read as BOOL and a, b converted to
 * out's dtype chunk by chunk (in place when they already have it and unit
 * stride), so picking is exact whatever the operands' dtypes. */

typedef struct {
    tm_dtype out_dt, cond_dt, a_dt, b_dt;
} tm__where_job;

/* Pointer to m elements of `dt` at src (stride bytes), as contiguous
 * elements of `want`: src itself, or converted into buf. */
static const void *tm__as_contig(void *buf, tm_dtype want, const char *src,
                                 tm_dtype dt, int64_t stride, int64_t m)
{
    int64_t es = (int64_t)tm_dtype_size(want);
    if (dt == want && stride == es) return src;
    tm__convert(buf, want, es, src, dt, stride, m);
    return buf;
}

/* Bitwise select (c is 0 or 1): no branch, so random conditions cost
 * nothing extra and the loop vectorizes (a branch mispredicted on half
 * the elements of a ReLU backward: 6 ns an element). */
#define TM__SELECT(T)                                                         \
    do {                                                                      \
        const T *x = pa, *y = pb;                                             \
        T *z = po;                                                            \
        for (int64_t i = 0; i < m; i++) {                                     \
            T k = (T)0 - (T)c[i];                                             \
            z[i] = (T)((x[i] & k) | (y[i] & (T)~k));                          \
        }                                                                     \
    } while (0)

/* ptrs: out, cond, a, b. */
static void tm__where_inner(char **ptrs, const int64_t *strides, int64_t n,
                            void *p)
{
    const tm__where_job *j = p;
    _Alignas(64) char cbuf[TM__EW_CHUNK];
    _Alignas(64) char abuf[TM__EW_CHUNK * 8], bbuf[TM__EW_CHUNK * 8];
    _Alignas(64) char obuf[TM__EW_CHUNK * 8];
    int64_t es = (int64_t)tm_dtype_size(j->out_dt);
    bool out_direct = strides[0] == es;
    /* F32 condition, F32 operands in place (b may be a broadcast scalar):
     * one pass, no staging (the ReLU backward, where(y, g, 0)). */
    if (out_direct && j->cond_dt == TM_F32 && strides[1] == 4 &&
        j->out_dt == TM_F32 && j->a_dt == TM_F32 && j->b_dt == TM_F32 &&
        strides[2] == 4 && (strides[3] == 4 || strides[3] == 0)) {
        const float *c = (const float *)(const void *)ptrs[1];
        const uint32_t *x = (const uint32_t *)(const void *)ptrs[2];
        const uint32_t *y = (const uint32_t *)(const void *)ptrs[3];
        uint32_t *z = (uint32_t *)(void *)ptrs[0];
        int64_t sy = strides[3] / 4;
        for (int64_t i = 0; i < n; i++) {
            uint32_t k = 0u - (uint32_t)(c[i] != 0.0f);
            z[i] = (x[i] & k) | (y[i * sy] & ~k);
        }
        return;
    }
    for (int64_t done = 0; done < n; done += TM__EW_CHUNK) {
        int64_t m = n - done < TM__EW_CHUNK ? n - done : TM__EW_CHUNK;
        const uint8_t *c = tm__as_contig(cbuf, TM_BOOL,
                                         ptrs[1] + done * strides[1],
                                         j->cond_dt, strides[1], m);
        const void *pa = tm__as_contig(abuf, j->out_dt,
                                       ptrs[2] + done * strides[2], j->a_dt,
                                       strides[2], m);
        const void *pb = tm__as_contig(bbuf, j->out_dt,
                                       ptrs[3] + done * strides[3], j->b_dt,
                                       strides[3], m);
        char *dst = ptrs[0] + done * strides[0];
        void *po = out_direct ? (void *)dst : (void *)obuf;
        switch (es) {
        case 1: TM__SELECT(uint8_t); break;
        case 2: TM__SELECT(uint16_t); break;
        case 4: TM__SELECT(uint32_t); break;
        default: TM__SELECT(uint64_t); break;
        }
        if (!out_direct)
            tm__convert(dst, j->out_dt, strides[0], obuf, j->out_dt, es, m);
    }
}

tm_status tm__cpu_where(const tm_buf *out, const tm_buf *cond,
                        const tm_buf *a, const tm_buf *b)
{
    int64_t es = (int64_t)tm_dtype_size(out->dtype);
    TM_ASSERT(es == 1 || es == 2 || es == 4 || es == 8, TM_EDTYPE);
    tm__where_job j = {out->dtype, cond->dtype, a->dtype, b->dtype};
    const tm_buf *bufs[4] = {out, cond, a, b};
    tm__iter it;
    tm__iter_init(&it, 4, bufs);
    tm__iter_run(&it, TM__GRAIN, tm__where_inner, &j);
    return TM_OK;
}
