/*
 * quant_tensor.c — quantizing and dequantizing whole tensors through the
 * backend's `quantize` entry (foundry/quantize.h), and the error of a
 * quantized tensor against its source, composed of existing ops.  No
 * element memory is touched here, so any device with the entry runs it.
 */
#include "quant_impl.h"

#include "../tensor/core/tensor_impl.h"

#include <math.h>
#include <string.h>

/* A [rows, n] kernel view of contiguous t (rows = numel / n). */
static tm_buf tm__q_rows_buf(const tm_tensor *t, int64_t n)
{
    tm_buf b = tm__buf(t);
    int64_t rows = n ? tm_numel(t) / n : 0;
    b.ndim = 2;
    b.shape[0] = rows;
    b.shape[1] = n;
    b.strides[0] = n;
    b.strides[1] = 1;
    return b;
}

/* Fails unless every value of t (float) is finite: a block scale cannot
 * hold an infinity or a NaN. */
static tm_status tm__q_check_finite(const char *fn, const tm_tensor *t)
{
    tm_tensor *fin = tm_isfinite(t);
    tm_tensor *all = fin ? tm_all(fin, NULL, 0, false) : NULL;
    double ok = 0;
    tm_status st = all ? tm_item(all, &ok) : tm_last_status();
    tm_free(all);
    tm_free(fin);
    if (st) return tm__relabel_error(fn, st);
    if (ok == 0)
        return tm__errf(TM_EINVAL, fn, "the tensor holds infinite or NaN "
                        "values, which no block scale can represent");
    return TM_OK;
}

tm_tensor *tm_quantize(const tm_tensor *t, tm_dtype qt)
{
    const char *fn = __func__;
    char s[TM_SHAPE_BUF];
    tm_tensor *x = NULL, *out = NULL;
    if (tm__check_tensor(fn, t, "tensor")) return NULL;
    if (!tm__qtraits_of(qt)) {
        tm__errf(TM_EDTYPE, fn, "dtype %d (%s) is not a quantized dtype",
                 (int)qt, tm_dtype_name(qt));
        return NULL;
    }
    if (!tm_dtype_is_float(t->dtype)) {
        tm__errf(TM_EDTYPE, fn, "cannot quantize a %s tensor to %s: a float "
                 "tensor is needed%s", tm_dtype_name(t->dtype),
                 tm_dtype_name(qt),
                 tm_dtype_is_quantized(t->dtype) ? " (dequantize it first)"
                                                 : "");
        return NULL;
    }
    if (t->ndim == 0) {
        tm__errf(TM_EINVAL, fn, "cannot quantize a 0-d tensor: %s values "
                 "come in blocks of %lld along the last dim",
                 tm_dtype_name(qt), (long long)tm_dtype_block_elems(qt));
        return NULL;
    }
    int64_t n = t->shape[t->ndim - 1], block = tm_dtype_block_elems(qt);
    if (n % block != 0) {
        tm__errf(TM_ESHAPE, fn, "shape %s: the last dim %lld is not a "
                 "multiple of %s's block of %lld values",
                 tm__fmt_shape(t->shape, t->ndim, s, sizeof s), (long long)n,
                 tm_dtype_name(qt), (long long)block);
        return NULL;
    }
    bool prev = tm_no_grad_begin();
    if (tm_numel(t) > 0 && tm__q_check_finite(fn, t)) goto fail;
    x = t->dtype == TM_F32 ? tm_contiguous(t) : tm_to_dtype(t, TM_F32);
    if (!x) goto fail;
    out = tm__tensor_new(fn, t->shape, t->ndim, qt, tm_device_of(t));
    if (!out) goto fail;
    if (tm_numel(out) > 0) {
        tm_buf d = tm__q_rows_buf(out, n), sb = tm__q_rows_buf(x, n);
        if (TM__CALL(fn, tm__ctx(out), quantize, &d, &sb)) goto fail;
    }
    tm_no_grad_end(prev);
    tm_free(x);
    return out;
fail:
    tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
    tm_free(x);
    tm_free(out);
    return NULL;
}

/* q (block dim last) dequantized to a new contiguous F32 tensor. */
static tm_tensor *tm__dequantize_last(const char *fn, const tm_tensor *q)
{
    tm_tensor *c = tm_contiguous(q), *out = NULL;
    if (!c) return NULL;
    out = tm__tensor_new(fn, q->shape, q->ndim, TM_F32, tm_device_of(q));
    if (out && tm_numel(out) > 0) {
        int64_t n = q->shape[q->ndim - 1];
        tm_buf d = tm__q_rows_buf(out, n), sb = tm__q_rows_buf(c, n);
        if (TM__CALL(fn, tm__ctx(out), quantize, &d, &sb)) {
            tm_free(out);
            out = NULL;
        }
    }
    tm_free(c);
    return out;
}

tm_tensor *tm_dequantize(const tm_tensor *q, tm_dtype dt)
{
    const char *fn = __func__;
    tm_tensor *p = NULL, *d = NULL, *back = NULL, *out = NULL;
    if (tm__check_tensor(fn, q, "tensor")) return NULL;
    if (!tm_dtype_is_quantized(q->dtype)) {
        tm__errf(TM_EDTYPE, fn, "the tensor is %s, not a quantized dtype",
                 tm_dtype_name(q->dtype));
        return NULL;
    }
    if (!tm_dtype_is_float(dt)) {
        tm__errf(TM_EDTYPE, fn, "cannot dequantize to %s: a float dtype "
                 "(f32, f64, f16, bf16) is needed", tm_dtype_name(dt));
        return NULL;
    }
    bool prev = tm_no_grad_begin();
    int nd = q->ndim;
    int bd = tm_numel(q) > 0 ? tm__q_block_dim(q->dtype, q->shape, q->strides,
                                               nd)
                             : nd - 1;
    if (bd != nd - 1) {
        /* a transposed view: dequantize with the block dim moved last,
         * then move it back */
        int perm[TM_MAX_DIMS], inv[TM_MAX_DIMS], k = 0;
        for (int i = 0; i < nd; i++)
            if (i != bd) perm[k++] = i;
        perm[k] = bd;
        for (int i = 0; i < nd; i++) inv[perm[i]] = i;
        p = tm_permute(q, perm, nd);
        d = p ? tm__dequantize_last(fn, p) : NULL;
        back = d ? tm_permute(d, inv, nd) : NULL;
        tm_free(d);
        d = back ? tm_contiguous(back) : NULL;
    } else {
        d = tm__dequantize_last(fn, q);
    }
    if (!d) goto fail;
    if (dt == TM_F32) {
        out = d;
        d = NULL;
    } else if (!(out = tm_to_dtype(d, dt))) {
        goto fail;
    }
    tm_no_grad_end(prev);
    tm_free(p);
    tm_free(back);
    tm_free(d);
    return out;
fail:
    tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
    tm_free(p);
    tm_free(back);
    tm_free(d);
    return NULL;
}

/* The sum (or max) of all values of tmp (freed here) as a double. */
static tm_status tm__reduce_all(tm_tensor *tmp, bool max, double *out)
{
    if (!tmp) return tm_last_status();
    tm_tensor *r = max ? tm_max(tmp, NULL, 0, false)
                       : tm_sum(tmp, NULL, 0, false);
    tm_status st = r ? tm_item(r, out) : tm_last_status();
    tm_free(r);
    tm_free(tmp);
    return st;
}

tm_status tm_quant_error_of(const tm_tensor *ref, const tm_tensor *q,
                            tm_quant_error *out)
{
    const char *fn = __func__;
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    tm_tensor *r = NULL, *d = NULL, *diff = NULL;
    tm_status st = TM_OK;
    if (tm__check_tensor(fn, ref, "ref") || tm__check_tensor(fn, q, "q"))
        return tm_last_status();
    if (!out) return tm__errf(TM_EINVAL, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!tm_dtype_is_float(ref->dtype))
        return tm__errf(TM_EDTYPE, fn, "ref must be a float tensor, got %s",
                        tm_dtype_name(ref->dtype));
    if (!tm_dtype_is_float(q->dtype) && !tm_dtype_is_quantized(q->dtype))
        return tm__errf(TM_EDTYPE, fn, "q must be a quantized or float "
                        "tensor, got %s", tm_dtype_name(q->dtype));
    if (ref->ndim != q->ndim ||
        memcmp(ref->shape, q->shape, sizeof(int64_t) * (size_t)q->ndim))
        return tm__errf(TM_ESHAPE, fn, "ref %s and q %s differ in shape",
                        tm__fmt_shape(ref->shape, ref->ndim, a, sizeof a),
                        tm__fmt_shape(q->shape, q->ndim, b, sizeof b));
    const tm_tensor *ts[2] = {ref, q};
    if (tm__check_same_device(fn, ts, 2)) return tm_last_status();
    int64_t count = tm_numel(ref);
    if (count == 0) return TM_OK;
    bool prev = tm_no_grad_begin();
    r = tm_to_dtype(ref, TM_F64);
    d = tm_dtype_is_quantized(q->dtype) ? tm_dequantize(q, TM_F64)
                                        : tm_to_dtype(q, TM_F64);
    diff = r && d ? tm_sub(r, d) : NULL;
    double sq = 0, mx = 0, rs = 0;
    st = diff ? tm__reduce_all(tm_square(diff), false, &sq) : tm_last_status();
    if (!st) st = tm__reduce_all(tm_abs(diff), true, &mx);
    if (!st) st = tm__reduce_all(tm_square(r), false, &rs);
    tm_no_grad_end(prev);
    tm_free(r);
    tm_free(d);
    tm_free(diff);
    if (st) return tm__relabel_error(fn, st);
    out->rmse = sqrt(sq / (double)count);
    out->max_abs = mx;
    out->ref_rms = sqrt(rs / (double)count);
    out->count = count;
    return TM_OK;
}
