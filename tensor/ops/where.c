/* where.c — selection ops built on the backend's `where`: tm_where,
 * masked_fill and the triangles tril/triu. */
#include "../core/grad_hooks.h"

#include <stdio.h>
#include <string.h>

static tm_status tm__check_dense(const char *fn, const tm_tensor *t,
                                 const char *what)
{
    if (tm__check_dense_operand(fn, t, what) || tm__q_refuse(fn, t, what))
        return tm_last_status();
    if (!tm_dtype_is_valid(t->dtype))
        return tm__errf(TM_EDTYPE, fn, "%s has dtype %s, which is not "
                        "supported here", what, tm_dtype_name(t->dtype));
    return TM_OK;
}



/* out = cond ? a : b with every operand broadcast to out's shape (the
 * caller has checked that they broadcast). */
static tm_status tm__where_into(const char *fn, tm_tensor *out,
                                const tm_tensor *cond, const tm_tensor *a,
                                const tm_tensor *b)
{
    tm_ctx *cx = tm__ctx(out);
    tm_buf o = tm__buf(out);
    tm_buf c = tm__buf_bcast(cond, out->shape, out->ndim);
    tm_buf ab = tm__buf_bcast(a, out->shape, out->ndim);
    tm_buf bb = tm__buf_bcast(b, out->shape, out->ndim);
    tm__stage sg = {0};
    tm__stage_out(&sg, &o);
    tm__stage_in(&sg, &c);
    tm__stage_in(&sg, &ab);
    tm__stage_in(&sg, &bb);
    tm_status st = TM__CALL_STAGED(fn, cx, &sg, WHERE, 0, where, &o, &c, &ab,
                                   &bb);
    return st ? tm__relabel_error(fn, st) : TM_OK;
}


tm_tensor *tm_where(const tm_tensor *cond, const tm_tensor *a,
                    const tm_tensor *b)
{
    if (tm__check_dense(__func__, cond, "cond") ||
        tm__check_dense(__func__, a, "a") || tm__check_dense(__func__, b, "b"))
        return NULL;
    const tm_tensor *ts[3] = {cond, a, b};
    if (tm__check_same_device(__func__, ts, 3)) return NULL;
    int64_t s1[TM_MAX_DIMS], shape[TM_MAX_DIMS];
    int n1, nd;
    if (tm_broadcast_shapes(cond->shape, cond->ndim, a->shape, a->ndim, s1,
                            &n1) ||
        tm_broadcast_shapes(s1, n1, b->shape, b->ndim, shape, &nd)) {
        char x[TM_SHAPE_BUF], y[TM_SHAPE_BUF], z[TM_SHAPE_BUF];
        TM_ERR(TM_ESHAPE, "shapes of cond %s, a %s and b %s do not broadcast",
               tm__fmt_shape(cond->shape, cond->ndim, x, sizeof x),
               tm__fmt_shape(a->shape, a->ndim, y, sizeof y),
               tm__fmt_shape(b->shape, b->ndim, z, sizeof z));
        return NULL;
    }
    tm_tensor *out = tm__tensor_new(__func__, shape, nd,
                                    tm_promote_types(a->dtype, b->dtype),
                                    tm_device_of(a));
    if (out && tm__where_into(__func__, out, cond, a, b)) {
        tm_free(out);
        return NULL;
    }
    return tm__grad_where(out, cond, a, b);
}

/* ---------------------------------------------------------- masked_fill */

/* Checks t and mask; *mask_out gets mask or a copy of it when it shares
 * memory with t (a new reference either way). */
static tm_status tm__masked_args(const char *fn, const tm_tensor *t,
                                 const tm_tensor *mask,
                                 const tm_tensor **mask_out)
{
    if (tm__check_dense(fn, t, "t") || tm__check_dense(fn, mask, "mask"))
        return tm_last_status();
    if (mask->dtype != TM_BOOL)
        return tm__errf(TM_EDTYPE, fn, "mask must have dtype bool, not %s",
                        tm_dtype_name(mask->dtype));
    const tm_tensor *ts[2] = {t, mask};
    if (tm__check_same_device(fn, ts, 2)) return tm_last_status();
    int64_t shape[TM_MAX_DIMS];
    int nd;
    if (tm_broadcast_shapes(t->shape, t->ndim, mask->shape, mask->ndim, shape,
                            &nd) ||
        nd != t->ndim ||
        memcmp(shape, t->shape, sizeof(int64_t) * (size_t)nd)) {
        char x[TM_SHAPE_BUF], y[TM_SHAPE_BUF];
        return tm__errf(TM_ESHAPE, fn, "mask of shape %s does not broadcast "
                        "to the tensor's shape %s",
                        tm__fmt_shape(mask->shape, mask->ndim, x, sizeof x),
                        tm__fmt_shape(t->shape, t->ndim, y, sizeof y));
    }
    *mask_out = tm__may_overlap(t, mask) ? tm_clone(mask)
                                         : tm_retain((tm_tensor *)mask);
    return *mask_out ? TM_OK : tm_last_status();
}

/* out = mask ? value : t (out may be t itself). */
static tm_status tm__masked_fill_into(const char *fn, tm_tensor *out,
                                      const tm_tensor *t,
                                      const tm_tensor *mask, double value)
{
    tm_tensor *v = tm__scalar_on(fn, value, t->dtype, tm_device_of(t));
    if (!v) return tm_last_status();
    tm_status st = tm__where_into(fn, out, mask, v, t);
    tm_free(v);
    return st;
}

tm_tensor *tm_masked_fill(const tm_tensor *t, const tm_tensor *mask,
                          double value)
{
    const tm_tensor *m = NULL;
    if (tm__masked_args(__func__, t, mask, &m)) return NULL;
    tm_tensor *out = tm__tensor_new(__func__, t->shape, t->ndim, t->dtype,
                                    tm_device_of(t));
    if (out && tm__masked_fill_into(__func__, out, t, m, value)) {
        tm_free(out);
        out = NULL;
    }
    out = tm__grad_masked_fill(out, t, m);
    tm_free((tm_tensor *)m);
    return out;
}

tm_status tm_masked_fill_(tm_tensor *t, const tm_tensor *mask, double value)
{
    const tm_tensor *m = NULL;
    if (tm__masked_args(__func__, t, mask, &m)) return tm_last_status();
    tm_status st = tm__check_writable(__func__, t);
    if (!st) st = tm__masked_fill_into(__func__, t, t, m, value);
    if (!st) tm__bump_version(t);
    tm_free((tm_tensor *)m);
    return st;
}

/* ------------------------------------------------------------ tril/triu */

/* out = the lower (upper) triangle of t's last two dims from diagonal k,
 * 0 elsewhere; out may be t itself.  The keep-mask [rows, cols] is made on
 * t's device by the `sequence` entry. */
static tm_status tm__tri_into(const char *fn, tm_tensor *out,
                              const tm_tensor *t, int64_t k, bool upper)
{
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    tm_tensor *mask = tm__tensor_new(fn, (int64_t[]){rows, cols}, 2, TM_BOOL,
                                     tm_device_of(t));
    if (!mask) return tm_last_status();
    tm_buf mb = tm__buf(mask);
    tm_seq_kind kind = upper ? TM_SEQ_TRIU : TM_SEQ_TRIL;
    tm__stage sg = {0};
    tm__stage_out(&sg, &mb);
    if (TM__CALL_STAGED(fn, tm__ctx(mask), &sg, SEQUENCE, kind, sequence, &mb,
                        kind, 0, 0, k)) {
        tm_free(mask);
        return tm_last_status();
    }
    tm_tensor *zero = mask ? tm__scalar_on(fn, 0, t->dtype,
                                               tm_device_of(t))
                           : NULL;
    tm_status st = zero ? tm__where_into(fn, out, mask, t, zero)
                        : tm__relabel_error(fn, tm_last_status());
    tm_free(zero);
    tm_free(mask);
    return st;
}

static tm_status tm__tri_check(const char *fn, const tm_tensor *t)
{
    if (tm__check_dense(fn, t, "t")) return tm_last_status();
    if (t->ndim < 2)
        return tm__errf(TM_EINVAL, fn, "t must have at least 2 dims, not %d",
                        t->ndim);
    return TM_OK;
}

static tm_tensor *tm__tri(const char *fn, const tm_tensor *t, int64_t k,
                          bool upper)
{
    if (tm__tri_check(fn, t)) return NULL;
    tm_tensor *out = tm__tensor_new(fn, t->shape, t->ndim, t->dtype,
                                    tm_device_of(t));
    if (out && tm__tri_into(fn, out, t, k, upper)) {
        tm_free(out);
        return NULL;
    }
    return tm__grad_tri(out, t, k, upper);
}

static tm_status tm__tri_(const char *fn, tm_tensor *t, int64_t k, bool upper)
{
    if (tm__tri_check(fn, t) || tm__check_writable(fn, t))
        return tm_last_status();
    tm_status st = tm__tri_into(fn, t, t, k, upper);
    if (!st) tm__bump_version(t);
    return st;
}

tm_tensor *tm_tril(const tm_tensor *t, int64_t diagonal)
{
    return tm__tri(__func__, t, diagonal, false);
}

tm_tensor *tm_triu(const tm_tensor *t, int64_t diagonal)
{
    return tm__tri(__func__, t, diagonal, true);
}

tm_status tm_tril_(tm_tensor *t, int64_t diagonal)
{
    return tm__tri_(__func__, t, diagonal, false);
}

tm_status tm_triu_(tm_tensor *t, int64_t diagonal)
{
    return tm__tri_(__func__, t, diagonal, true);
}
