/* index.c — gather, scatter, scatter_add, index_select, one_hot. */
#include "../core/grad_hooks.h"
#include "index_impl.h"

#include <stdio.h>
#include <string.h>


static tm_status tm__check_index_dtype(const char *fn, const tm_tensor *index)
{
    if (index->dtype == TM_I64 || index->dtype == TM_I32) return TM_OK;
    return tm__errf(TM_EDTYPE, fn, "index must be i64 or i32, got %s",
                    tm_dtype_name(index->dtype));
}

/* Checks shared by gather and scatter: non-NULL, index dtype, dim, equal
 * ndim, index no larger than `t` outside `dim`, one device.  *d receives
 * the wrapped dim. */
static tm_status tm__check_gather_args(const char *fn, const tm_tensor *t,
                                       int dim, const tm_tensor *index,
                                       int *d)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    if (tm__check_dense_operand(fn, t, "tensor") ||
        tm__check_dense_operand(fn, index, "index") ||
        tm__check_index_dtype(fn, index) ||
        tm__wrap_dim(fn, dim, t->ndim, d))
        return tm_last_status();
    if (index->ndim != t->ndim)
        return tm__errf(TM_ESHAPE, fn,
                        "index has %d dims but the tensor has %d (shapes %s "
                        "and %s)", index->ndim, t->ndim,
                        tm__fmt_shape(index->shape, index->ndim, a, sizeof a),
                        tm__fmt_shape(t->shape, t->ndim, b, sizeof b));
    for (int i = 0; i < t->ndim; i++)
        if (i != *d && index->shape[i] > t->shape[i])
            return tm__errf(TM_ESHAPE, fn,
                            "index shape %s is larger than tensor shape %s "
                            "at dim %d: %lld > %lld",
                            tm__fmt_shape(index->shape, index->ndim, a,
                                          sizeof a),
                            tm__fmt_shape(t->shape, t->ndim, b, sizeof b), i,
                            (long long)index->shape[i],
                            (long long)t->shape[i]);
    const tm_tensor *ts[2] = {t, index};
    return tm__check_same_device(fn, ts, 2);
}

tm_tensor *tm_gather(const tm_tensor *t, int dim, const tm_tensor *index)
{
    int d;
    if (tm__check_gather_args(__func__, t, dim, index, &d)) return NULL;
    tm_ctx *cx = tm__ctx(t);
    tm_tensor *out = tm__tensor_new(__func__, index->shape, index->ndim,
                                    t->dtype, tm_device_of(t));
    if (!out) return NULL;
    if (tm_numel(out) > 0) {
        tm_buf o = tm__buf(out), in = tm__buf(t), ix = tm__buf(index);
        tm__stage sg = {0};
        tm__stage_out(&sg, &o);
        tm__stage_in(&sg, &in);
        tm__stage_in(&sg, &ix);
        tm_status st = TM__CALL_STAGED(__func__, cx, &sg, GATHER, 0, gather,
                                       &o, &in, d, &ix);
        if (st) {
            tm__relabel_error(__func__, st);
            tm_free(out);
            return NULL;
        }
    }
    return tm__grad_gather(out, t, d, index);
}

/* dst[index along d] = src (or +=); src is a tensor or, when NULL, the
 * scalar `value`.  Checks everything before writing; dst is unchanged on
 * failure.  `dst` is the tensor to write (t itself, or its clone). */
static tm_status tm__scatter(const char *fn, tm_tensor *dst, int dim,
                             const tm_tensor *index, const tm_tensor *src,
                             double value, bool add)
{
    return tm__scatter_kind(fn, dst, dim, index, src, value,
                            add ? (int)TM_SCATTER_SUM : TM__SCATTER_WRITE);
}

tm_status tm__scatter_kind(const char *fn, tm_tensor *dst, int dim,
                           const tm_tensor *index, const tm_tensor *src,
                           double value, int kind)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    int d;
    if (tm__check_gather_args(fn, dst, dim, index, &d)) return tm_last_status();
    if (src) {
        if (src->dtype != dst->dtype)
            return tm__errf(TM_EDTYPE, fn,
                            "src dtype %s does not match the tensor's %s",
                            tm_dtype_name(src->dtype),
                            tm_dtype_name(dst->dtype));
        if (src->ndim != index->ndim)
            return tm__errf(TM_ESHAPE, fn,
                            "src has %d dims but index has %d", src->ndim,
                            index->ndim);
        for (int i = 0; i < src->ndim; i++)
            if (index->shape[i] > src->shape[i])
                return tm__errf(TM_ESHAPE, fn,
                                "index shape %s is larger than src shape %s "
                                "at dim %d: %lld > %lld",
                                tm__fmt_shape(index->shape, index->ndim, a,
                                              sizeof a),
                                tm__fmt_shape(src->shape, src->ndim, b,
                                              sizeof b),
                                i, (long long)index->shape[i],
                                (long long)src->shape[i]);
        const tm_tensor *ts[2] = {dst, src};
        if (tm__check_same_device(fn, ts, 2)) return tm_last_status();
    }
    /* several index positions would land on one stride-0 element */
    if (tm__check_writable(fn, dst)) return tm_last_status();
    tm_ctx *cx = tm__ctx(dst);
    if (tm_numel(index) == 0) return TM_OK;

    /* Operands that share memory with dst are read from copies, so writes
     * cannot change what later positions read. */
    tm_tensor *ixc = NULL, *srcc = NULL, *val = NULL;
    tm_status st = TM_OK;
    if (tm__may_overlap(dst, index) && !(ixc = tm_clone(index))) goto fail;
    if (src && tm__may_overlap(dst, src) && !(srcc = tm_clone(src)))
        goto fail;
    if (!src) {
        val = tm__tensor_new(fn, NULL, 0, dst->dtype, tm_device_of(dst));
        if (!val) goto fail;
        tm_buf vb = tm__buf(val);
        if ((st = TM__CALL(fn, cx, fill, &vb, value))) goto done;
    }
    const tm_tensor *ix = ixc ? ixc : index;
    const tm_tensor *s = srcc ? srcc : src ? src : val;
    tm_buf db = tm__buf(dst), ib = tm__buf(ix), sb;
    if (src) { /* only the leading index-shaped block of src is read */
        sb = tm__buf(s);
        for (int i = 0; i < sb.ndim; i++) sb.shape[i] = ix->shape[i];
    } else {
        sb = tm__buf_bcast(s, ix->shape, ix->ndim);
    }
    tm__stage sg = {0};
    tm__stage_inout(&sg, &db);
    tm__stage_in(&sg, &ib);
    tm__stage_in(&sg, &sb);
    if (kind == TM__SCATTER_WRITE || kind == TM_SCATTER_SUM)
        st = TM__CALL_STAGED(fn, cx, &sg, SCATTER, 0, scatter, &db, d, &ib,
                             &sb, kind == TM_SCATTER_SUM);
    else
        st = TM__CALL_STAGED(fn, cx, &sg, SCATTER_REDUCE, kind,
                             scatter_reduce, &db, d, &ib, &sb,
                             (tm_scatter_reduce_kind)kind);
    if (st) tm__relabel_error(fn, st);
    else tm__bump_version(dst);
    goto done;
fail:
    st = tm_last_status();
done:
    tm_free(ixc);
    tm_free(srcc);
    tm_free(val);
    return st;
}

/* A clone of t (checked non-NULL) scattered into. */
static tm_tensor *tm__scatter_copy(const char *fn, const tm_tensor *t,
                                   int dim, const tm_tensor *index,
                                   const tm_tensor *src, bool has_src,
                                   double value, bool add)
{
    if (tm__check_dense_operand(fn, t, "tensor")) return NULL;
    if (has_src && tm__check_dense_operand(fn, src, "src")) return NULL;
    /* validate before copying so argument errors cost nothing */
    int d;
    if (tm__check_gather_args(fn, t, dim, index, &d)) return NULL;
    tm_tensor *out = tm__tensor_new(fn, t->shape, t->ndim, t->dtype,
                                    tm_device_of(t));
    if (!out) return NULL;
    tm_ctx *cx = tm__ctx(t);
    tm_buf o = tm__buf(out), in = tm__buf(t);
    tm_status st = TM__CALL(fn, cx, copy, &o, &in);
    if (!st) st = tm__scatter(fn, out, dim, index, src, value, add);
    if (st) {
        tm_free(out);
        return NULL;
    }
    return tm__grad_scatter(out, t, d, index, has_src ? src : NULL, add);
}

tm_tensor *tm_scatter(const tm_tensor *t, int dim, const tm_tensor *index,
                      const tm_tensor *src)
{
    return tm__scatter_copy(__func__, t, dim, index, src, true, 0, false);
}

tm_status tm_scatter_(tm_tensor *t, int dim, const tm_tensor *index,
                      const tm_tensor *src)
{
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, src, "src") ||
        tm__check_source(__func__, src))
        return tm_last_status();
    return tm__scatter(__func__, t, dim, index, src, 0, false);
}

tm_tensor *tm_scatter_value(const tm_tensor *t, int dim,
                            const tm_tensor *index, double value)
{
    return tm__scatter_copy(__func__, t, dim, index, NULL, false, value,
                            false);
}

tm_tensor *tm_scatter_add(const tm_tensor *t, int dim, const tm_tensor *index,
                          const tm_tensor *src)
{
    return tm__scatter_copy(__func__, t, dim, index, src, true, 0, true);
}

tm_status tm_scatter_add_(tm_tensor *t, int dim, const tm_tensor *index,
                          const tm_tensor *src)
{
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, src, "src") ||
        tm__check_source(__func__, src))
        return tm_last_status();
    return tm__scatter(__func__, t, dim, index, src, 0, true);
}

tm_tensor *tm_index_select(const tm_tensor *t, int dim,
                           const tm_tensor *index)
{
    int d;
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, index, "index") ||
        tm__check_index_dtype(__func__, index) ||
        tm__wrap_dim(__func__, dim, t->ndim, &d))
        return NULL;
    if (index->ndim > 1) {
        char a[TM_SHAPE_BUF];
        TM_ERR(TM_ESHAPE, "index must be 1-D or 0-d, got shape %s",
               tm__fmt_shape(index->shape, index->ndim, a, sizeof a));
        return NULL;
    }
    int64_t len = tm_numel(index);
    if (t->ndim == 0 && len != 1) {
        TM_ERR(TM_ESHAPE, "a 0-d tensor takes exactly one index, got %lld",
               (long long)len);
        return NULL;
    }
    const tm_tensor *ts[2] = {t, index};
    if (tm__check_same_device(__func__, ts, 2)) return NULL;
    tm_ctx *cx = tm__ctx(t);
    int64_t shape[TM_MAX_DIMS];
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    if (t->ndim) shape[d] = len;
    tm_tensor *out = tm__tensor_new(__func__, shape, t->ndim, t->dtype,
                                    tm_device_of(t));
    if (!out) return NULL;
    if (tm_numel(out) > 0) {
        tm_buf o = tm__buf(out), in = tm__buf(t), ix = tm__buf(index);
        if (ix.ndim == 0) { /* as 1-D [1] */
            ix.ndim = 1;
            ix.shape[0] = 1;
            ix.strides[0] = 0;
        }
        tm__stage sg = {0};
        tm__stage_out(&sg, &o);
        tm__stage_in(&sg, &in);
        tm__stage_in(&sg, &ix);
        tm_status st = TM__CALL_STAGED(__func__, cx, &sg, INDEX_SELECT, 0,
                                       index_select, &o, &in, d, &ix);
        if (st) {
            tm__relabel_error(__func__, st);
            tm_free(out);
            return NULL;
        }
    }
    return tm__grad_index_select(out, t, d, index);
}

tm_tensor *tm_one_hot(const tm_tensor *index, int64_t num_classes)
{
    tm_tensor *ix = NULL, *out = NULL;
    if (tm__check_dense_operand(__func__, index, "index")) return NULL;
    if (!tm_dtype_is_integer(index->dtype)) {
        TM_ERR(TM_EDTYPE, "index must be an integer tensor, got %s",
               tm_dtype_name(index->dtype));
        return NULL;
    }
    if (index->ndim >= TM_MAX_DIMS) {
        TM_ERR(TM_EINVAL, "a %d-d index leaves no room for the class dim "
               "(max %d dims)", index->ndim, TM_MAX_DIMS);
        return NULL;
    }
    int64_t n = tm_numel(index);
    if (n == 0 && num_classes < 0) {
        TM_ERR(TM_EINVAL, "cannot infer num_classes from an empty index");
        return NULL;
    }
    tm_ctx *cx = tm__ctx(index);
    /* The range of the values decides the shape and the validity: a
     * host synchronization (two reductions and their items). */
    ix = index->dtype == TM_I64 ? tm_contiguous(index)
                                : tm_to_dtype(index, TM_I64);
    if (!ix) goto fail;
    int64_t lo = 0, hi = -1;
    if (n > 0) {
        bool prev = tm_no_grad_begin();
        tm_tensor *mn = tm_min(ix, NULL, 0, false);
        tm_tensor *mx = mn ? tm_max(ix, NULL, 0, false) : NULL;
        tm_no_grad_end(prev);
        tm_status st = mx ? tm_item_i64(mn, &lo) : tm_last_status();
        if (!st) st = tm_item_i64(mx, &hi);
        tm_free(mn);
        tm_free(mx);
        if (st) {
            tm__relabel_error(__func__, st);
            goto fail;
        }
    }
    if (n > 0 && lo < 0) {
        TM_ERR(TM_ERANGE, "index value %lld is negative", (long long)lo);
        goto fail;
    }
    if (num_classes < 0) {
        if (hi == INT64_MAX) {
            TM_ERR(TM_EOVERFLOW, "index value %lld + 1 classes overflows",
                   (long long)hi);
            goto fail;
        }
        num_classes = hi + 1;
    }
    if (n > 0 && hi >= num_classes) {
        TM_ERR(TM_ERANGE, "index value %lld is out of range for %lld "
               "classes", (long long)hi, (long long)num_classes);
        goto fail;
    }
    int64_t shape[TM_MAX_DIMS];
    memcpy(shape, index->shape, sizeof(int64_t) * (size_t)index->ndim);
    shape[index->ndim] = num_classes;
    out = tm__tensor_new(__func__, shape, index->ndim + 1, TM_I64,
                         tm_device_of(index));
    if (!out) goto fail;
    tm_buf o = tm__buf(out);
    if (TM__CALL(__func__, cx, fill, &o, 0.0)) goto fail;
    if (n > 0) {
        /* out[..., index[...]] = 1: a scatter along the class dim with the
         * index as [..., 1] and a broadcast scalar 1 as source */
        tm_buf ib = tm__buf(ix), sb = {0};
        ib.shape[ib.ndim] = 1;
        ib.strides[ib.ndim] = 1;
        ib.ndim++;
        tm_tensor *src = tm__tensor_new(__func__, NULL, 0, TM_I64,
                                        tm_device_of(index));
        if (!src) goto fail;
        tm_buf s0 = tm__buf(src);
        tm_status st = TM__CALL(__func__, cx, fill, &s0, 1.0);
        if (!st) {
            sb = tm__buf_bcast(src, ib.shape, ib.ndim);
            tm__stage sg = {0};
            tm__stage_inout(&sg, &o);
            tm__stage_in(&sg, &ib);
            tm__stage_in(&sg, &sb);
            st = TM__CALL_STAGED(__func__, cx, &sg, SCATTER, 0, scatter, &o,
                                 index->ndim, &ib, &sb, false);
        }
        tm_free(src);
        if (st) {
            tm__relabel_error(__func__, st);
            goto fail;
        }
    }
    tm_free(ix);
    return out;
fail:
    tm_free(out);
    tm_free(ix);
    return NULL;
}
