/* copy.c — copies, dtype conversion, device transfer, element access. */
#include "grad_hooks.h"

#include <string.h>

/* dst = src (broadcast), through the backend; src may be any dtype. */
static tm_status tm__copy_into(const char *fn, tm_tensor *dst,
                               const tm_tensor *src)
{
    bool qd = tm_dtype_is_quantized(dst->dtype);
    if (qd || tm_dtype_is_quantized(src->dtype)) {
        /* blocks are copied as bytes: same dtype and shape, block dim last
         * on both sides */
        char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
        if (dst->dtype != src->dtype)
            return tm__errf(TM_EDTYPE, fn, "cannot copy %s into %s: use "
                            "tm_quantize / tm_dequantize to convert to or "
                            "from a quantized dtype",
                            tm_dtype_name(src->dtype),
                            tm_dtype_name(dst->dtype));
        if (src->ndim != dst->ndim ||
            memcmp(src->shape, dst->shape, sizeof(int64_t) * (size_t)dst->ndim))
            return tm__errf(TM_ESHAPE, fn, "cannot copy a %s tensor of shape "
                            "%s into shape %s: quantized copies do not "
                            "broadcast", tm_dtype_name(src->dtype),
                            tm__fmt_shape(src->shape, src->ndim, a, sizeof a),
                            tm__fmt_shape(dst->shape, dst->ndim, b, sizeof b));
        if (tm_numel(dst) == 0) return TM_OK;
        tm_buf d, s;
        if (tm__q_bytes_buf(fn, dst, &d) || tm__q_bytes_buf(fn, src, &s))
            return tm_last_status();
        return TM__CALL(fn, tm__ctx(dst), copy, &d, &s);
    }
    tm_buf d = tm__buf(dst);
    tm_buf s = tm__buf_bcast(src, dst->shape, dst->ndim);
    return TM__CALL(fn, tm__ctx(dst), copy, &d, &s);
}

/* A contiguous copy of t as dt, recorded as `name` (its backward converts
 * the gradient back to t's dtype). */
static tm_tensor *tm__copy_as(const char *fn, const tm_tensor *t, tm_dtype dt,
                              const char *name)
{
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    size_t off;
    if (tm_dtype_is_quantized(t->dtype) && dt == t->dtype &&
        tm__q_bytes_geometry(fn, t, sh, st, &off))
        return NULL; /* a copy reorders no values within a block dim */
    if (dt != t->dtype &&
        (tm_dtype_is_quantized(dt) || tm_dtype_is_quantized(t->dtype))) {
        tm__errf(TM_EDTYPE, fn, "cannot convert %s to %s: use %s",
                 tm_dtype_name(t->dtype), tm_dtype_name(dt),
                 tm_dtype_is_quantized(dt) ? "tm_quantize" : "tm_dequantize");
        return NULL;
    }
    tm_tensor *o = tm__tensor_new(fn, t->shape, t->ndim, dt,
                                  tm_device_of(t));
    if (o && tm__copy_into(fn, o, t)) {
        tm_free(o);
        return NULL;
    }
    return tm__grad_to_dtype(o, t, name);
}

tm_tensor *tm_to_dtype(const tm_tensor *t, tm_dtype dt)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__copy_as(__func__, t, dt, "ToCopyBackward");
}

tm_tensor *tm_contiguous(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    if (tm_is_contiguous(t)) return tm_retain((tm_tensor *)t);
    return tm__copy_as(__func__, t, t->dtype, "CloneBackward");
}

tm_tensor *tm_clone(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__copy_as(__func__, t, t->dtype, "CloneBackward");
}

tm_status tm__transfer(const char *fn, tm_tensor *o, const tm_tensor *c)
{
    tm_ctx *from = tm__ctx(c), *to = tm__ctx(o);
    size_t n = tm_nbytes(c);
    tm_buf bo = tm__buf(o), bc = tm__buf(c);
    if (tm__on_cpu(c))
        return to->backend->to_device(to, bo.handle, bo.offset,
                                      (char *)bc.handle + bc.offset, n);
    if (tm__sync(fn, from)) return tm_last_status();
    if (tm__on_cpu(o))
        return from->backend->to_host(from, (char *)bo.handle + bo.offset,
                                      bc.handle, bc.offset, n);
    void *tmp = tm__alloc(n, fn);
    if (!tmp) return tm_last_status();
    tm_status st = from->backend->to_host(from, tmp, bc.handle, bc.offset, n);
    if (!st) st = to->backend->to_device(to, bo.handle, bo.offset, tmp, n);
    tm__dealloc(tmp);
    return st;
}

tm_tensor *tm_to(const tm_tensor *t, tm_device dev)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    tm_device from = tm_device_of(t);
    if (tm_device_eq(from, dev)) return tm_retain((tm_tensor *)t);
    bool prev = tm_no_grad_begin(); /* the copy is part of this node */
    tm_tensor *c = tm_contiguous(t);
    tm_no_grad_end(prev);
    if (!c) return NULL;
    tm_tensor *o = tm__tensor_new(__func__, t->shape, t->ndim, t->dtype, dev);
    tm_status st = o ? tm__transfer(__func__, o, c) : tm_last_status();
    tm_free(c);
    if (st) {
        tm_free(o);
        return NULL;
    }
    return tm__grad_to_device(o, t, from);
}

tm_status tm_copy_(tm_tensor *dst, const tm_tensor *src)
{
    if (tm__check_tensor(__func__, dst, "dst") ||
        tm__check_tensor(__func__, src, "src"))
        return tm_last_status();
    const tm_tensor *ts[2] = {dst, src};
    if (tm__check_same_device(__func__, ts, 2)) return tm_last_status();
    int64_t out[TM_MAX_DIMS];
    int nd;
    if (tm_broadcast_shapes(dst->shape, dst->ndim, src->shape, src->ndim, out,
                            &nd) ||
        nd != dst->ndim || memcmp(out, dst->shape, sizeof(int64_t) * nd)) {
        char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
        return TM_ERR(TM_ESHAPE, "src shape %s does not broadcast to dst %s",
                      tm__fmt_shape(src->shape, src->ndim, a, sizeof a),
                      tm__fmt_shape(dst->shape, dst->ndim, b, sizeof b));
    }
    if (tm__check_writable(__func__, dst) || tm__check_source(__func__, src))
        return tm_last_status();
    tm_status st;
    if (tm__may_overlap(dst, src)) {
        tm_tensor *tmp = tm_clone(src);
        if (!tmp) return tm_last_status();
        st = tm__copy_into(__func__, dst, tmp);
        tm_free(tmp);
    } else {
        st = tm__copy_into(__func__, dst, src);
    }
    if (!st) tm__bump_version(dst);
    return st;
}

tm_status tm_fill_(tm_tensor *dst, double value)
{
    if (tm__check_tensor(__func__, dst, "dst") ||
        tm__q_refuse(__func__, dst, "dst") ||
        tm__check_writable(__func__, dst))
        return tm_last_status();
    tm_buf d = tm__buf(dst);
    tm_status st = TM__CALL(__func__, tm__ctx(dst), fill, &d, value);
    if (!st) tm__bump_version(dst);
    return st;
}

tm_status tm_copy_to_buffer(const tm_tensor *t, void *dst, size_t size,
                            tm_dtype dt)
{
    if (tm__check_tensor(__func__, t, "tensor") ||
        tm__q_refuse(__func__, t, "tensor"))
        return tm_last_status();
    if (!tm_dtype_is_valid(dt))
        return TM_ERR(TM_EDTYPE, "dtype %d (%s) is not a dense dtype",
                      (int)dt, tm_dtype_name(dt));
    size_t need = (size_t)tm_numel(t) * tm_dtype_size(dt);
    if (size < need)
        return TM_ERR(TM_EINVAL, "buffer of %zu bytes is smaller than the "
                      "%zu bytes needed", size, need);
    if (need == 0) return TM_OK;
    if (!dst) return TM_ERR(TM_EINVAL, "dst is NULL");
    tm_tensor *host = tm_to(t, TM_CPU);
    if (!host) return tm_last_status();
    tm_tensor *out = tm_wrap(dst, host->shape, NULL, host->ndim, dt, NULL,
                             NULL);
    tm_status st = out ? tm__copy_into(__func__, out, host) : tm_last_status();
    tm_free(out);
    tm_free(host);
    return st;
}

/* A 0-d view of element idx of t, after range checks. */
static tm_tensor *tm__elem(const char *fn, const tm_tensor *t,
                           const int64_t *idx)
{
    if (tm__check_tensor(fn, t, "tensor")) return NULL;
    if (t->ndim > 0 && !idx) {
        tm__errf(TM_EINVAL, fn, "idx is NULL");
        return NULL;
    }
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        int64_t k = idx[i];
        if (k < -t->shape[i] || k >= t->shape[i]) {
            tm__errf(TM_ERANGE, fn,
                     "index %lld is out of range for dim %d of size %lld",
                     (long long)k, i, (long long)t->shape[i]);
            return NULL;
        }
        if (k < 0) k += t->shape[i];
        off += k * t->strides[i];
    }
    return tm__view_of(fn, t, NULL, NULL, 0, off);
}

tm_status tm_get(const tm_tensor *t, const int64_t *idx, double *out)
{
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    tm_tensor *e = tm__elem(__func__, t, idx);
    if (!e) return tm_last_status();
    tm_status st = tm_copy_to_buffer(e, out, sizeof *out, TM_F64);
    tm_free(e);
    return st;
}

tm_status tm_set(tm_tensor *t, const int64_t *idx, double value)
{
    if (tm__check_tensor(__func__, t, "tensor") ||
        tm__check_writable(__func__, t))
        return tm_last_status();
    tm_tensor *e = tm__elem(__func__, t, idx);
    if (!e) return tm_last_status();
    tm_buf d = tm__buf(e);
    tm_status st = TM__CALL(__func__, tm__ctx(e), fill, &d, value);
    tm_free(e);
    if (!st) tm__bump_version(t);
    return st;
}

/* The single element of t, copied to the CPU as `dt` into out. */
static tm_status tm__item(const char *fn, const tm_tensor *t, void *out,
                          tm_dtype dt)
{
    if (tm__check_tensor(fn, t, "tensor")) return tm_last_status();
    if (!out) return tm__errf(TM_EINVAL, fn, "out is NULL");
    if (tm_numel(t) != 1) {
        char s[TM_SHAPE_BUF];
        return tm__errf(TM_ESHAPE, fn,
                        "tensor of shape %s has %lld elements, not 1",
                        tm__fmt_shape(t->shape, t->ndim, s, sizeof s),
                        (long long)tm_numel(t));
    }
    tm_status st = tm_copy_to_buffer(t, out, tm_dtype_size(dt), dt);
    if (st) tm__errf(st, fn, "%s", tm_last_error());
    return st;
}

tm_status tm_item(const tm_tensor *t, double *out)
{
    return tm__item(__func__, t, out, TM_F64);
}

tm_status tm_item_i64(const tm_tensor *t, int64_t *out)
{
    return tm__item(__func__, t, out, TM_I64);
}
