/* scatter_reduce.c — tm_scatter_reduce(_): PyTorch's scatter_reduce (sum,
 * prod, mean, amax, amin, with or without the tensor's own values).
 *
 * The places that index points at are first set to the reduction's
 * identity when include_self is false, so one kernel pass (the scatter
 * entry's add, or scatter_reduce's product / max / min) then reduces the
 * src values with whatever is there.  MEAN is a SUM divided by the number
 * of values each place received (plus one for itself when included),
 * counted with a second scatter-add of ones. */
#include "../core/grad_hooks.h"
#include "index_impl.h"

#include <math.h>

/* The value that leaves any other unchanged under kind, in dtype dt. */
static double identity(tm_scatter_reduce_kind k, tm_dtype dt)
{
    bool fl = dt == TM_F32 || dt == TM_F64 || dt == TM_F16 || dt == TM_BF16;
    if (k == TM_SCATTER_SUM || k == TM_SCATTER_MEAN) return 0;
    if (k == TM_SCATTER_PROD) return 1;
    bool max = k == TM_SCATTER_AMAX;
    if (fl) return max ? -INFINITY : INFINITY;
    switch (dt) {
    case TM_I8: return max ? -128.0 : 127.0;
    case TM_U8: return max ? 0.0 : 255.0;
    case TM_I16: return max ? -32768.0 : 32767.0;
    case TM_I32: return max ? -2147483648.0 : 2147483647.0;
    /* INT64_MAX is not a double; the store saturates 2^63 to it */
    case TM_I64: return max ? -9223372036854775808.0 : 9223372036854775808.0;
    default: return max ? 0.0 : 1.0; /* BOOL */
    }
}

/* dst /= counts (rounded toward -inf for integers), where counts[p] is
 * the number of values place p received (+1 when include_self), 1 where
 * none.  Counts are I64 or F64 whatever dst's dtype (an I8 or F16 count
 * would overflow or round), and the quotient is rounded once into dst. */
static tm_status divide_by_counts(const char *fn, tm_tensor *dst, int dim,
                                  const tm_tensor *index, bool include_self)
{
    tm_tensor *cnt = NULL, *ones = NULL, *zero = NULL, *q = NULL;
    tm_status st = TM_OK;
    tm_device dev = tm_device_of(dst);
    tm_dtype cdt = tm_dtype_is_float(dst->dtype) ? TM_F64 : TM_I64;
    cnt = tm_full_on(dst->shape, dst->ndim, include_self ? 1.0 : 0.0, cdt,
                     dev);
    ones = tm_full_on(index->shape, index->ndim, 1.0, cdt, dev);
    if (!cnt || !ones) goto fail;
    if ((st = tm__scatter_kind(fn, cnt, dim, index, ones, 0,
                               TM_SCATTER_SUM)))
        goto done;
    if (!(zero = tm_binary_scalar(TM_OP_EQ, cnt, 0.0))) goto fail;
    if ((st = tm_masked_fill_(cnt, zero, 1.0))) goto done;
    q = tm_dtype_is_float(dst->dtype) ? tm_div(dst, cnt)
                                  : tm_floor_divide(dst, cnt);
    if (!q) goto fail;
    st = tm_copy_(dst, q);
    goto done;
fail:
    st = tm_last_status();
done:
    tm_free(cnt);
    tm_free(ones);
    tm_free(zero);
    tm_free(q);
    return st;
}

/* Reduces src into dst, a fresh tensor holding t's values (a failure
 * midway leaves it half written: the caller drops it). */
static tm_status reduce_into(const char *fn, tm_tensor *dst, int dim,
                             const tm_tensor *index, const tm_tensor *src,
                             tm_scatter_reduce_kind kind, bool include_self)
{
    if ((int)kind < TM_SCATTER_SUM || kind > TM_SCATTER_AMIN)
        return tm__errf(TM_EINVAL, fn,
                        "reduce must be sum, prod, mean, amax or amin, got "
                        "%d", (int)kind);
    if (kind == TM_SCATTER_MEAN && dst->dtype == TM_BOOL)
        return tm__errf(TM_EDTYPE, fn, "reduce mean needs a numeric dtype, "
                        "not bool");
    tm_status st;
    if (!include_self &&
        (st = tm__scatter_kind(fn, dst, dim, index, NULL,
                               identity(kind, dst->dtype),
                               TM__SCATTER_WRITE)))
        return st;
    int k = kind == TM_SCATTER_MEAN ? (int)TM_SCATTER_SUM : (int)kind;
    if ((st = tm__scatter_kind(fn, dst, dim, index, src, 0, k))) return st;
    if (kind == TM_SCATTER_MEAN)
        st = divide_by_counts(fn, dst, dim, index, include_self);
    return st;
}

/* The result as a new tensor, without recording. */
static tm_tensor *reduce_copy(const char *fn, const tm_tensor *t, int dim,
                              const tm_tensor *index, const tm_tensor *src,
                              tm_scatter_reduce_kind kind, bool include_self)
{
    if (tm__check_dense_operand(fn, t, "tensor") ||
        tm__check_dense_operand(fn, index, "index") ||
        tm__check_dense_operand(fn, src, "src"))
        return NULL;
    tm_tensor *out = tm__tensor_new(fn, t->shape, t->ndim, t->dtype,
                                    tm_device_of(t));
    if (!out) return NULL;
    tm_ctx *cx = tm__ctx(t);
    tm_buf o = tm__buf(out), in = tm__buf(t);
    tm_status st = TM__CALL(fn, cx, copy, &o, &in);
    if (!st) {
        bool was = tm_grad_enabled();
        tm_set_grad_enabled(false); /* the steps are not the graph */
        st = reduce_into(fn, out, dim, index, src, kind, include_self);
        tm_set_grad_enabled(was);
    }
    if (st) {
        tm__relabel_error(fn, st);
        tm_free(out);
        return NULL;
    }
    return out;
}

tm_tensor *tm_scatter_reduce(const tm_tensor *t, int dim,
                             const tm_tensor *index, const tm_tensor *src,
                             tm_scatter_reduce_kind reduce, bool include_self)
{
    tm_tensor *out = reduce_copy(__func__, t, dim, index, src, reduce,
                                 include_self);
    if (!out) return NULL;
    int d = dim < 0 ? dim + (t->ndim ? t->ndim : 1) : dim;
    return tm__grad_scatter_reduce(out, t, d, index, src, (int)reduce,
                                   include_self);
}

/* Computed out of place, then copied in: t is unchanged on any failure. */
tm_status tm_scatter_reduce_(tm_tensor *t, int dim, const tm_tensor *index,
                             const tm_tensor *src,
                             tm_scatter_reduce_kind reduce, bool include_self)
{
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, src, "src") ||
        tm__check_source(__func__, src) ||
        tm__check_writable(__func__, t))
        return tm_last_status();
    tm_tensor *r = reduce_copy(__func__, t, dim, index, src, reduce,
                               include_self);
    if (!r) return tm_last_status();
    tm_status st = tm_copy_(t, r);
    tm_free(r);
    return st;
}
