/*
 * quant_linear.c — tm_linear and tm_matmul with a quantized weight: the
 * forward through the backend's `qmatmul` entry (x's rows quantized on the
 * fly by the kernel), and its autograd node "QLinearBackward", whose dx =
 * dy · W goes through `qmatmul_backward` (W dequantized block by block as
 * it is read, never as a whole F32 copy).  W is frozen: gradients flow to
 * x and bias only.  Everything is computed in F32; F16 / BF16 / F64 x is
 * converted on the way in and the result converted back.
 */
#include "quant_front.h"
#include "quant_impl.h"

#include "../tensor/autograd/backward.h"

#include <string.h>

/* The F32 [rows, cols] view of t's last dim (cols = its length) with a
 * unit last stride, converted / copied only when needed.  A new
 * reference. */
static tm_tensor *tm__q_rows_f32(const tm_tensor *t, int64_t rows,
                                 int64_t cols)
{
    tm_tensor *f = t->dtype == TM_F32 ? tm_retain((tm_tensor *)t)
                                      : tm_to_dtype(t, TM_F32);
    tm_tensor *r = f ? tm_reshape(f, (int64_t[]){rows, cols}, 2) : NULL;
    tm_free(f);
    if (r && rows > 0 && cols > 1 && tm_strides(r)[1] != 1) {
        tm_tensor *c = tm_contiguous(r);
        tm_free(r);
        r = c;
    }
    return r;
}

/* dx = g · W (g [..., out] of the output's dtype), db = rows of g summed.
 * Saved: W (slot 0). */
static tm_status qlinear_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm_tensor *w = tm__ag_saved(n, 0);
    int64_t out = tm_shape(w)[0], in = tm_shape(w)[1];
    int64_t rows = out ? tm_numel(g) / out : 0;
    tm_tensor *g2 = tm__sc_keep(&s, tm__q_rows_f32(g, rows, out));
    const tm__edge *ex = &n->edges[0];
    if (ex->needed && g2) {
        tm_tensor *dx = tm__sc_keep(
            &s, tm__tensor_new(n->name, (int64_t[]){rows, in}, 2, TM_F32,
                               tm_device_of(g)));
        if (dx && rows > 0 && in > 0) {
            tm_buf bx = tm__buf(dx), bg = tm__buf(g2), bw = tm__buf(w);
            tm_status st = out > 0 ? TM__CALL(n->name, tm__ctx(dx),
                                              qmatmul_backward, &bx, &bg, &bw,
                                              false)
                                   : tm_fill_(dx, 0.0);
            if (st) tm__sc_keep(&s, NULL);
        }
        if (!s.st) tm__sc_finish(&s, dx, ex, &gin[0]);
    }
    if (n->nin > 1 && n->edges[1].needed && g2)
        tm__sc_finish(&s, tm__sc_keep(&s, tm_sum(g2, (int[]){0}, 1, false)),
                      &n->edges[1], &gin[1]);
    return tm__sc_done(&s, n->name);
}

/* TM_OK when w can be the quantized weight [out, in] of a product. */
static tm_status tm__q_check_weight(const char *fn, const tm_tensor *w)
{
    char s[TM_SHAPE_BUF], st[TM_SHAPE_BUF];
    const tm__qtraits *tr = tm__qtraits_of(w->dtype);
    if (!tr || !tr->weight)
        return tm__errf(TM_EDTYPE, fn, "%s is an activation format, not a "
                        "weight format (q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, "
                        "q5_k, q6_k)", tm_dtype_name(w->dtype));
    if (w->ndim != 2 ||
        (tm_numel(w) > 0 && w->shape[1] > 0 && w->strides[1] != 1))
        return tm__errf(TM_ESHAPE, fn, "the quantized weight must be 2-D "
                        "[out, in] with its blocks along in (stride 1), got "
                        "%s shape %s strides %s", tm_dtype_name(w->dtype),
                        tm__fmt_shape(w->shape, w->ndim, s, sizeof s),
                        tm__fmt_shape(w->strides, w->ndim, st, sizeof st));
    return TM_OK;
}

tm_tensor *tm__q_linear(const char *fn, const tm_tensor *x,
                        const tm_tensor *w, const tm_tensor *bias)
{
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    tm_tensor *x2 = NULL, *y = NULL, *b32 = NULL, *yr = NULL, *out = NULL;
    if (tm__check_tensor(fn, x, "x") || tm__check_tensor(fn, w, "w") ||
        tm__q_refuse(fn, x, "x") || tm__q_refuse(fn, bias, "bias") ||
        tm__q_check_weight(fn, w))
        return NULL;
    const tm_tensor *ts[3] = {x, w, bias};
    if (tm__check_same_device(fn, ts, 3)) return NULL;
    if (!tm_dtype_is_float(x->dtype)) {
        tm__errf(TM_EDTYPE, fn, "x must be a float tensor to multiply a %s "
                 "weight, got %s", tm_dtype_name(w->dtype),
                 tm_dtype_name(x->dtype));
        return NULL;
    }
    if (bias && bias->dtype != x->dtype && bias->dtype != TM_F32) {
        tm__errf(TM_EDTYPE, fn, "bias must be %s (x's dtype) or f32, got %s",
                 tm_dtype_name(x->dtype), tm_dtype_name(bias->dtype));
        return NULL;
    }
    int64_t out_f = w->shape[0], in = w->shape[1];
    if (x->ndim < 1 || x->shape[x->ndim - 1] != in) {
        tm__errf(TM_ESHAPE, fn, "x %s and w %s do not match: x's last dim "
                 "must be w's %lld input features",
                 tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx),
                 tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw),
                 (long long)in);
        return NULL;
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != out_f)) {
        tm__errf(TM_ESHAPE, fn, "bias has shape %s, expected [%lld]",
                 tm__fmt_shape(bias->shape, bias->ndim, sb, sizeof sb),
                 (long long)out_f);
        return NULL;
    }
    int64_t rows = in ? tm_numel(x) / in : 1;
    for (int i = 0; !in && i + 1 < x->ndim; i++) rows *= x->shape[i];
    bool prev = tm_no_grad_begin();
    x2 = tm__q_rows_f32(x, rows, in);
    y = x2 ? tm__tensor_new(fn, (int64_t[]){rows, out_f}, 2, TM_F32,
                            tm_device_of(x))
           : NULL;
    if (!y) goto fail;
    bool acc = false;
    if (bias && tm_numel(y) > 0) {
        b32 = bias->dtype == TM_F32 ? tm_retain((tm_tensor *)bias)
                                    : tm_to_dtype(bias, TM_F32);
        if (!b32 || tm_copy_(y, b32)) goto fail;
        acc = true;
    }
    if (tm_numel(y) > 0) {
        if (in == 0) {
            if (!acc && tm_fill_(y, 0.0)) goto fail;
        } else {
            tm_buf by = tm__buf(y), bx = tm__buf(x2), bw = tm__buf(w);
            if (TM__CALL(fn, tm__ctx(y), qmatmul, &by, &bx, &bw, acc))
                goto fail;
        }
    }
    int64_t shape[TM_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = out_f;
    yr = tm_reshape(y, shape, x->ndim);
    if (!yr) goto fail;
    out = x->dtype == TM_F32 ? tm_retain(yr) : tm_to_dtype(yr, x->dtype);
    if (!out) goto fail;
    tm_no_grad_end(prev);
    const tm_tensor *ins[2] = {x, bias};
    tm__record r = {.name = "QLinearBackward", .backward = qlinear_backward,
                    .nin = 2, .in = ins, .save = {w}};
    if (tm__ag_record(&r, out)) {
        tm_free(out);
        out = NULL;
    }
    tm_free(x2);
    tm_free(y);
    tm_free(b32);
    tm_free(yr);
    return out;
fail:
    tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
    tm_free(x2);
    tm_free(y);
    tm_free(b32);
    tm_free(yr);
    tm_free(out);
    return NULL;
}

tm_tensor *tm__q_matmul(const char *fn, const tm_tensor *a,
                        const tm_tensor *b)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, a, "a") || tm__check_tensor(fn, b, "b"))
        return NULL;
    bool qa = tm_dtype_is_quantized(a->dtype);
    bool qb = tm_dtype_is_quantized(b->dtype);
    if (qa && qb) {
        tm__errf(TM_EDTYPE, fn, "both operands are quantized (%s and %s): "
                 "dequantize one (tm_dequantize)", tm_dtype_name(a->dtype),
                 tm_dtype_name(b->dtype));
        return NULL;
    }
    const tm_tensor *q = qa ? a : b;
    if (q->ndim != 2) {
        tm__errf(TM_ESHAPE, fn, "a quantized operand must be 2-D, got %s "
                 "shape %s", tm_dtype_name(q->dtype),
                 tm__fmt_shape(q->shape, q->ndim, sa, sizeof sa));
        return NULL;
    }
    if (qb) {
        /* x [..., k] · b [k, n]: b must be W^T, a view of W [n, k] whose
         * blocks run along k (dim 0 here) */
        if (tm_numel(b) > 0 && b->shape[0] > 0 && b->strides[0] != 1) {
            tm__errf(TM_ESHAPE, fn, "x · w with a quantized w %s needs w's "
                     "blocks along its first dim (w = tm_transpose(wq, 0, 1) "
                     "of a weight wq [n, k]); got strides %s",
                     tm__fmt_shape(b->shape, b->ndim, sa, sizeof sa),
                     tm__fmt_shape(b->strides, b->ndim, sb, sizeof sb));
            return NULL;
        }
        tm_tensor *w = tm_transpose(b, 0, 1);
        tm_tensor *y = w ? tm__q_linear(fn, a, w, NULL) : NULL;
        tm_free(w);
        return y;
    }
    /* W [m, k] · x: x 1-D [k] is linear(x, W); x [..., k, n] is
     * linear(x^T, W)^T */
    if (b->ndim == 1) return tm__q_linear(fn, b, a, NULL);
    tm_tensor *bt = tm_transpose(b, -1, -2);
    tm_tensor *yt = bt ? tm__q_linear(fn, bt, a, NULL) : NULL;
    tm_tensor *y = yt ? tm_transpose(yt, -1, -2) : NULL;
    tm_free(bt);
    tm_free(yt);
    return y;
}
