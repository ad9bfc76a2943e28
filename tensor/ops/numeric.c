/* numeric.c — lerp, isclose and nan_to_num, composed of public ops (so they
 * run on every device and their gradients come from those ops). */
#include "op_table.h"

#include <float.h>
#include <math.h>

/* Non-NULL and a float dtype (these ops are float maths). */
static tm_status tm__check_float(const char *fn, const tm_tensor *t,
                                 const char *what)
{
    if (tm__check_dense_operand(fn, t, what)) return tm_last_status();
    if (!tm_dtype_is_float(t->dtype))
        return tm__errf(TM_EDTYPE, fn, "%s must be a float tensor, not %s",
                        what, tm_dtype_name(t->dtype));
    return TM_OK;
}

static tm_status tm__check_same_dtype(const char *fn, const tm_tensor *a,
                                      const tm_tensor *b, const char *what)
{
    if (a->dtype != b->dtype)
        return tm__errf(TM_EDTYPE, fn, "%s has dtype %s, expected %s (the "
                        "dtype of the input)", what, tm_dtype_name(b->dtype),
                        tm_dtype_name(a->dtype));
    return TM_OK;
}

/* ----------------------------------------------------------------- lerp */

/* Where |w| < 0.5 a + w d, else end - d (1 - w), with d = end - a: the
 * second form is exact at w = 1, as PyTorch's kernel is. */
tm_tensor *tm_lerp(const tm_tensor *a, const tm_tensor *end,
                   const tm_tensor *weight)
{
    if (tm__check_float(__func__, a, "input") ||
        tm__check_float(__func__, end, "end") ||
        tm__check_float(__func__, weight, "weight") ||
        tm__check_same_dtype(__func__, a, end, "end") ||
        tm__check_same_dtype(__func__, a, weight, "weight"))
        return NULL;
    tm_tensor *d = NULL, *lo = NULL, *hi = NULL, *om = NULL, *aw = NULL,
              *small = NULL, *r = NULL, *t = NULL;
    if (!(d = tm_sub(end, a)) || !(t = tm_mul(weight, d)) ||
        !(lo = tm_add(a, t)))
        goto done;
    tm_free(t);
    t = NULL;
    if (!(om = tm_binary_rscalar(TM_OP_SUB, 1, weight)) ||
        !(t = tm_mul(d, om)) || !(hi = tm_sub(end, t)) ||
        !(aw = tm_abs(weight)) ||
        !(small = tm_binary_scalar(TM_OP_LT, aw, 0.5)))
        goto done;
    r = tm_where(small, lo, hi);
done:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(d);
    tm_free(t);
    tm_free(lo);
    tm_free(hi);
    tm_free(om);
    tm_free(aw);
    tm_free(small);
    return r;
}

tm_tensor *tm_lerp_scalar(const tm_tensor *a, const tm_tensor *end,
                          double weight)
{
    if (tm__check_float(__func__, a, "input") ||
        tm__check_float(__func__, end, "end") ||
        tm__check_same_dtype(__func__, a, end, "end"))
        return NULL;
    tm_tensor *d = NULL, *t = NULL, *r = NULL;
    if (!(d = tm_sub(end, a))) goto done;
    if (fabs(weight) < 0.5) {
        if ((t = tm_binary_scalar_as(TM_OP_MUL, d, weight, TM_SCALAR_FLOAT)))
            r = tm_add(a, t);
    } else {
        if ((t = tm_binary_scalar_as(TM_OP_MUL, d, 1 - weight,
                                     TM_SCALAR_FLOAT)))
            r = tm_sub(end, t);
    }
done:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(d);
    tm_free(t);
    return r;
}

/* -------------------------------------------------------------- isclose */

tm_tensor *tm_isclose(const tm_tensor *a, const tm_tensor *b, double rtol,
                      double atol, bool equal_nan)
{
    if (tm__check_dense_operand(__func__, a, "a") ||
        tm__check_dense_operand(__func__, b, "b") ||
        tm__check_same_dtype(__func__, a, b, "b"))
        return NULL;
    if (!(rtol >= 0) || !(atol >= 0)) {
        TM_ERR(TM_EINVAL, "rtol %g and atol %g must be >= 0", rtol, atol);
        return NULL;
    }
    /* Integers compare in F64: a - b must not wrap. */
    tm_tensor *ac = NULL, *bc = NULL, *close = NULL, *diff = NULL,
              *ad = NULL, *ab = NULL, *tol = NULL, *le = NULL, *na = NULL,
              *nb = NULL, *nn = NULL, *fin = NULL, *ok = NULL, *r = NULL;
    if (!tm_dtype_is_float(a->dtype)) {
        if (!(ac = tm_to_dtype(a, TM_F64)) || !(bc = tm_to_dtype(b, TM_F64)))
            goto done;
        a = ac;
        b = bc;
    }
    if (!(close = tm_eq(a, b)) || !(diff = tm_sub(a, b)) ||
        !(ad = tm_abs(diff)) || !(ab = tm_abs(b)))
        goto done;
    tm_tensor *rb = tm_binary_scalar_as(TM_OP_MUL, ab, rtol, TM_SCALAR_FLOAT);
    if (!rb) goto done;
    tol = tm_binary_scalar_as(TM_OP_ADD, rb, atol, TM_SCALAR_FLOAT);
    tm_free(rb);
    /* Only a finite |a - b| may pass the tolerance (with b infinite, tol
     * is inf too); equal infinities were found by eq. */
    if (!tol || !(le = tm_le(ad, tol)) || !(fin = tm_isfinite(ad)) ||
        !(ok = tm_logical_and(le, fin)))
        goto done;
    r = tm_logical_or(close, ok);
    if (r && equal_nan) {
        tm_tensor *r2 = NULL;
        if ((na = tm_isnan(a)) && (nb = tm_isnan(b)) &&
            (nn = tm_logical_and(na, nb)))
            r2 = tm_logical_or(r, nn);
        tm_free(r);
        r = r2;
    }
done:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(ac);
    tm_free(bc);
    tm_free(close);
    tm_free(diff);
    tm_free(ad);
    tm_free(ab);
    tm_free(tol);
    tm_free(le);
    tm_free(fin);
    tm_free(ok);
    tm_free(na);
    tm_free(nb);
    tm_free(nn);
    return r;
}

/* ----------------------------------------------------------- nan_to_num */

/* The largest finite value of a float dtype. */
static double tm__float_max(tm_dtype dt)
{
    switch (dt) {
    case TM_F64: return DBL_MAX;
    case TM_F16: return 65504.0;
    case TM_BF16: return 0x1.fep127;
    default: return FLT_MAX;
    }
}

tm_tensor *tm_nan_to_num(const tm_tensor *t, double nan, double posinf,
                         double neginf)
{
    if (tm__check_dense_operand(__func__, t, "t")) return NULL;
    if (!tm_dtype_is_float(t->dtype)) return tm_clone(t);
    double big = tm__float_max(t->dtype);
    if (isnan(posinf)) posinf = big;
    if (isnan(neginf)) neginf = -big;
    tm_tensor *m = NULL, *r1 = NULL, *r2 = NULL, *r = NULL;
    if (!(m = tm_isnan(t)) || !(r1 = tm_masked_fill(t, m, nan))) goto done;
    tm_free(m);
    if (!(m = tm_binary_scalar(TM_OP_EQ, t, INFINITY)) ||
        !(r2 = tm_masked_fill(r1, m, posinf)))
        goto done;
    tm_free(m);
    if (!(m = tm_binary_scalar(TM_OP_EQ, t, -INFINITY))) goto done;
    r = tm_masked_fill(r2, m, neginf);
done:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(m);
    tm_free(r1);
    tm_free(r2);
    return r;
}
