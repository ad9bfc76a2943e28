/*
 * binary_forms_tmpl.h — the three loop forms of a binary elementwise op,
 * written once and instantiated per compute type (included by
 * cpu_binary.c and binary_float_tmpl.h; no include guard).
 *
 * The includer defines BT (the element type) and BN(name) (the name of
 * this instantiation's functions).  A form is picked per chunk:
 *   TM__VV  z[i] = f(x[i], y[i])
 *   TM__VS  z[i] = f(x[i], s)   (s = *y: an operand broadcast from one
 *   TM__SV  z[i] = f(s, y[i])    element, converted once, s = *x)
 * The loops are always inlined into their caller, so `f` (a constant
 * there) is inlined too and each op gets straight-line loops.  All loads
 * of an element precede its store, so z may be x or y (in place); other
 * overlaps are excluded by the front ends.
 */

/* Arithmetic (add, sub, mul, div of floats): blocks of 8 computed into a
 * local array and then stored, a shape compilers vectorize at -O2 (gcc's
 * cheap cost model does not vectorize the plain loop, whose trip count
 * and aliasing are unknown). */
static TM__ALWAYS_INLINE void BN(arith)(int64_t n, BT *z, const BT *x,
                                        const BT *y, int form,
                                        BT (*f)(BT, BT))
{
    int64_t j = 0;
    if (form == TM__VV) {
        for (; j + 8 <= n; j += 8) {
            BT t[8];
            TM__PREFETCH(x + j);
            TM__PREFETCH(y + j);
            for (int k = 0; k < 8; k++) t[k] = f(x[j + k], y[j + k]);
            memcpy(z + j, t, sizeof t);
        }
        for (; j < n; j++) z[j] = f(x[j], y[j]);
    } else if (form == TM__VS) {
        BT s = *y;
        for (; j + 8 <= n; j += 8) {
            BT t[8];
            TM__PREFETCH(x + j);
            for (int k = 0; k < 8; k++) t[k] = f(x[j + k], s);
            memcpy(z + j, t, sizeof t);
        }
        for (; j < n; j++) z[j] = f(x[j], s);
    } else {
        BT s = *x;
        for (; j + 8 <= n; j += 8) {
            BT t[8];
            TM__PREFETCH(y + j);
            for (int k = 0; k < 8; k++) t[k] = f(s, y[j + k]);
            memcpy(z + j, t, sizeof t);
        }
        for (; j < n; j++) z[j] = f(s, y[j]);
    }
}

/* Any other op; f may flag an error bit in *err (division by zero). */
static TM__ALWAYS_INLINE void BN(plain)(int64_t n, BT *z, const BT *x,
                                        const BT *y, int form,
                                        BT (*f)(BT, BT, int *), int *err)
{
    if (form == TM__VV) {
        for (int64_t i = 0; i < n; i++) z[i] = f(x[i], y[i], err);
    } else if (form == TM__VS) {
        BT s = *y;
        for (int64_t i = 0; i < n; i++) z[i] = f(x[i], s, err);
    } else {
        BT s = *x;
        for (int64_t i = 0; i < n; i++) z[i] = f(s, y[i], err);
    }
}

/* Predicates: BOOL out (one byte 0/1). */
static TM__ALWAYS_INLINE void BN(pred)(int64_t n, uint8_t *z, const BT *x,
                                       const BT *y, int form,
                                       bool (*f)(BT, BT))
{
    if (form == TM__VV) {
        for (int64_t i = 0; i < n; i++) z[i] = f(x[i], y[i]);
    } else if (form == TM__VS) {
        BT s = *y;
        for (int64_t i = 0; i < n; i++) z[i] = f(x[i], s);
    } else {
        BT s = *x;
        for (int64_t i = 0; i < n; i++) z[i] = f(s, y[i]);
    }
}

/* The comparisons and logical ops of every compute type. */
static inline bool BN(eq)(BT a, BT b) { return a == b; }
static inline bool BN(ne)(BT a, BT b) { return a != b; }
static inline bool BN(lt)(BT a, BT b) { return a < b; }
static inline bool BN(le)(BT a, BT b) { return a <= b; }
static inline bool BN(gt)(BT a, BT b) { return a > b; }
static inline bool BN(ge)(BT a, BT b) { return a >= b; }
static inline bool BN(and)(BT a, BT b) { return (a != 0) && (b != 0); }
static inline bool BN(or)(BT a, BT b) { return (a != 0) || (b != 0); }
static inline bool BN(xor)(BT a, BT b) { return (a != 0) != (b != 0); }

/* One of them, by op (a predicate row of TM_BINARY_OPS). */
static TM__ALWAYS_INLINE void BN(pred_op)(tm_binary_op op, int64_t n,
                                          uint8_t *z, const BT *x,
                                          const BT *y, int form)
{
    switch (op) {
    case TM_OP_EQ: BN(pred)(n, z, x, y, form, BN(eq)); break;
    case TM_OP_NE: BN(pred)(n, z, x, y, form, BN(ne)); break;
    case TM_OP_LT: BN(pred)(n, z, x, y, form, BN(lt)); break;
    case TM_OP_LE: BN(pred)(n, z, x, y, form, BN(le)); break;
    case TM_OP_GT: BN(pred)(n, z, x, y, form, BN(gt)); break;
    case TM_OP_GE: BN(pred)(n, z, x, y, form, BN(ge)); break;
    case TM_OP_LOGICAL_AND: BN(pred)(n, z, x, y, form, BN(and)); break;
    case TM_OP_LOGICAL_OR: BN(pred)(n, z, x, y, form, BN(or)); break;
    default: BN(pred)(n, z, x, y, form, BN(xor)); break;
    }
}
