/* matmul.c — the matrix products' front ends: tm_matmul (numpy semantics:
 * shapes, dtypes, batching), tm_gemm (C = alpha * op(A)·op(B) + beta * C,
 * in place) and tm_linear (y = x·w^T + bias): validation, batch
 * broadcasting and transposed views; the backend's gemm entry does the
 * arithmetic.  tm_gemm records nothing for autograd (it writes into C in
 * place); tm_matmul and tm_linear record their nodes (matmul_backward.c). */
#include "../core/grad_hooks.h"
#include "../../quantize/quant_front.h"

#include <string.h>

/* The kernel view of operand `t` (already of the compute dtype) as a
 * (batch..., rows, cols) buffer: batch dims right-aligned against
 * batch[nbd] with stride 0 where broadcast, and a 1-D operand made a row
 * (`row_vec`) or a column vector with a stride-0 unit dim. */
static tm_buf tm__mm_operand(const tm_tensor *t, const int64_t *batch,
                             int nbd, bool row_vec, int64_t rows,
                             int64_t cols)
{
    tm_buf b = tm__buf(t);
    int nd = t->ndim, tb = nd >= 2 ? nd - 2 : 0;
    b.ndim = nbd + 2;
    for (int i = 0; i < nbd; i++) {
        int j = i - (nbd - tb);
        b.shape[i] = batch[i];
        b.strides[i] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
    }
    b.shape[nbd] = rows;
    b.shape[nbd + 1] = cols;
    if (nd == 1) {
        b.strides[nbd] = row_vec ? 0 : t->strides[0];
        b.strides[nbd + 1] = row_vec ? t->strides[0] : 0;
    } else {
        b.strides[nbd] = t->strides[nd - 2];
        b.strides[nbd + 1] = t->strides[nd - 1];
    }
    return b;
}

tm_tensor *tm_matmul(const tm_tensor *a, const tm_tensor *b)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF], ba[TM_SHAPE_BUF],
        bb[TM_SHAPE_BUF];
    tm_tensor *ac = NULL, *bc = NULL, *out = NULL;
    if (a && b &&
        (tm_dtype_is_quantized(a->dtype) || tm_dtype_is_quantized(b->dtype)))
        return tm__q_matmul(__func__, a, b);
    if (tm__check_dense_operand(__func__, a, "a") ||
        tm__check_dense_operand(__func__, b, "b"))
        return NULL;
    const tm_tensor *ts[2] = {a, b};
    if (tm__check_same_device(__func__, ts, 2)) return NULL;
    /* Shapes are formatted for error messages only (the hot path of small
     * matmuls must not pay for two snprintf calls). */
#define TM__MM_SHAPES()                                                       \
    (tm__fmt_shape(a->shape, a->ndim, sa, sizeof sa),                         \
     tm__fmt_shape(b->shape, b->ndim, sb, sizeof sb))
    if (a->ndim == 0 || b->ndim == 0) {
        TM__MM_SHAPES();
        TM_ERR(TM_EINVAL, "both operands need at least 1 dim, got shapes "
               "%s and %s", sa, sb);
        return NULL;
    }
    if (!tm_dtype_is_valid(a->dtype) || !tm_dtype_is_valid(b->dtype)) {
        TM_ERR(TM_EDTYPE, "dtypes %s and %s: only dense dtypes are supported",
               tm_dtype_name(a->dtype), tm_dtype_name(b->dtype));
        return NULL;
    }
    tm_dtype dt = tm_promote_types(a->dtype, b->dtype);
    if (dt == TM_BOOL) { /* as PyTorch on the CPU */
        TM_ERR(TM_EDTYPE, "bool x bool is not supported; convert to an "
               "integer or float dtype first");
        return NULL;
    }

    bool a1 = a->ndim == 1, b1 = b->ndim == 1;
    int64_t m = a1 ? 1 : a->shape[a->ndim - 2], k = a->shape[a->ndim - 1];
    int64_t kb = b1 ? b->shape[0] : b->shape[b->ndim - 2];
    int64_t n = b1 ? 1 : b->shape[b->ndim - 1];
    if (k != kb) {
        TM__MM_SHAPES();
        TM_ERR(TM_ESHAPE, "shapes %s and %s do not match: %lld != %lld", sa,
               sb, (long long)k, (long long)kb);
        return NULL;
    }
    int nba = a1 ? 0 : a->ndim - 2, nbb = b1 ? 0 : b->ndim - 2;
    int64_t shape[TM_MAX_DIMS + 2];
    int nbd = 0;
    if (tm_broadcast_shapes(a->shape, nba, b->shape, nbb, shape, &nbd)) {
        TM__MM_SHAPES();
        TM_ERR(TM_ESHAPE, "batch dims %s and %s of shapes %s and %s do not "
               "broadcast",
               tm__fmt_shape(a->shape, nba, ba, sizeof ba),
               tm__fmt_shape(b->shape, nbb, bb, sizeof bb), sa, sb);
        return NULL;
    }
#undef TM__MM_SHAPES
    int ond = nbd;
    if (!a1) shape[ond++] = m;
    if (!b1) shape[ond++] = n;
    out = tm__tensor_new(__func__, shape, ond, dt, tm_device_of(a));
    if (!out) return NULL;
    if (tm_numel(out) == 0) goto done;

    /* The backend multiplies operands of one dtype: convert the others.
     * F16/BF16 stay as they are; the kernel computes them in F32. */
    ac = a->dtype == dt ? tm_retain((tm_tensor *)a) : tm_to_dtype(a, dt);
    bc = b->dtype == dt ? tm_retain((tm_tensor *)b) : tm_to_dtype(b, dt);
    if (!ac || !bc) goto fail;
    tm_ctx *cx = tm__ctx(out);
    tm_buf abuf = tm__mm_operand(ac, shape, nbd, true, m, k);
    tm_buf bbuf = tm__mm_operand(bc, shape, nbd, false, k, n);
    tm_buf obuf = tm__buf(out);
    obuf.ndim = nbd + 2;
    obuf.shape[nbd] = m;
    obuf.shape[nbd + 1] = n;
    tm__contiguous_strides(obuf.shape, obuf.ndim, obuf.strides);
    tm__stage sg = {0};
    tm__stage_out(&sg, &obuf);
    tm__stage_in(&sg, &abuf);
    tm__stage_in(&sg, &bbuf);
    if (TM__CALL_STAGED(__func__, cx, &sg, GEMM, 0, gemm, &obuf, &abuf, &bbuf,
                        1.0, 0.0)) goto fail;
done:
    tm_free(ac);
    tm_free(bc);
    return tm__grad_matmul(out, a, b);
fail:
    tm_free(ac);
    tm_free(bc);
    tm_free(out);
    return NULL;
}

/* ------------------------------------------------------- gemm, linear */

/* The kernel view of `t` as op(t) of shape [batch..., rows, cols]: its own
 * batch dims right-aligned against batch[nbd] (stride 0 where broadcast),
 * the last two dims swapped when `trans` (a view, no copy). */
static tm_buf tm__gemm_operand(const tm_tensor *t, const int64_t *batch,
                               int nbd, bool trans)
{
    tm_buf b = tm__buf(t);
    int nd = t->ndim, tb = nd - 2;
    b.ndim = nbd + 2;
    for (int i = 0; i < nbd; i++) {
        int j = i - (nbd - tb);
        b.shape[i] = batch[i];
        b.strides[i] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
    }
    int r = trans ? nd - 1 : nd - 2, c = trans ? nd - 2 : nd - 1;
    b.shape[nbd] = t->shape[r];
    b.strides[nbd] = t->strides[r];
    b.shape[nbd + 1] = t->shape[c];
    b.strides[nbd + 1] = t->strides[c];
    return b;
}

/* True when the batch dims of t (all but its last two) broadcast to
 * batch[nbd]. */
static bool tm__gemm_batch_ok(const tm_tensor *t, const int64_t *batch,
                              int nbd)
{
    int tb = t->ndim - 2;
    if (tb > nbd) return false;
    for (int j = 0; j < tb; j++) {
        int64_t s = t->shape[j], want = batch[nbd - tb + j];
        if (s != 1 && s != want) return false;
    }
    return true;
}

tm_status tm_gemm(bool trans_a, bool trans_b, double alpha, const tm_tensor *a,
                  const tm_tensor *b, double beta, tm_tensor *c)
{
    char sa[TM_SHAPE_BUF], sb[TM_SHAPE_BUF], sc[TM_SHAPE_BUF];
    if (tm__check_dense_operand(__func__, a, "a") ||
        tm__check_dense_operand(__func__, b, "b") ||
        tm__check_dense_operand(__func__, c, "c"))
        return tm_last_status();
    const tm_tensor *ts[3] = {a, b, c};
    if (tm__check_same_device(__func__, ts, 3)) return tm_last_status();
#define TM_GEMM_SHAPES                                                        \
    (tm__fmt_shape(a->shape, a->ndim, sa, sizeof sa),                         \
     tm__fmt_shape(b->shape, b->ndim, sb, sizeof sb),                         \
     tm__fmt_shape(c->shape, c->ndim, sc, sizeof sc))
    if (a->ndim < 2 || b->ndim < 2 || c->ndim < 2)
        return TM_GEMM_SHAPES,
               TM_ERR(TM_EINVAL, "a, b and c need at least 2 dims, got "
                      "shapes %s, %s and %s", sa, sb, sc);
    if (a->dtype != c->dtype || b->dtype != c->dtype)
        return TM_ERR(TM_EDTYPE, "a, b and c must have one dtype, got %s, "
                      "%s and %s", tm_dtype_name(a->dtype),
                      tm_dtype_name(b->dtype), tm_dtype_name(c->dtype));
    if (!tm_dtype_is_float(c->dtype))
        return TM_ERR(TM_EDTYPE, "dtype %s is not supported: a float dtype "
                      "is needed", tm_dtype_name(c->dtype));
    int na = a->ndim, nb = b->ndim, nc = c->ndim;
    int64_t m = a->shape[trans_a ? na - 1 : na - 2];
    int64_t k = a->shape[trans_a ? na - 2 : na - 1];
    int64_t kb = b->shape[trans_b ? nb - 1 : nb - 2];
    int64_t n = b->shape[trans_b ? nb - 2 : nb - 1];
    if (k != kb)
        return TM_GEMM_SHAPES, TM_ERR(TM_ESHAPE, "op(a) [%lld,%lld] and op(b) [%lld,%lld] "
                      "do not match: %lld != %lld (a %s%s, b %s%s)",
                      (long long)m, (long long)k, (long long)kb, (long long)n,
                      (long long)k, (long long)kb, sa,
                      trans_a ? " transposed" : "", sb,
                      trans_b ? " transposed" : "");
    if (c->shape[nc - 2] != m || c->shape[nc - 1] != n)
        return TM_GEMM_SHAPES, TM_ERR(TM_ESHAPE, "c has shape %s, expected [...,%lld,%lld] "
                      "for op(a) [%lld,%lld] times op(b) [%lld,%lld]", sc,
                      (long long)m, (long long)n, (long long)m, (long long)k,
                      (long long)kb, (long long)n);
    int nbd = nc - 2;
    if (!tm__gemm_batch_ok(a, c->shape, nbd) ||
        !tm__gemm_batch_ok(b, c->shape, nbd))
        return TM_GEMM_SHAPES, TM_ERR(TM_ESHAPE, "batch dims of a %s and b %s do not "
                      "broadcast to those of c %s", sa, sb, sc);
    if (tm__check_writable(__func__, c)) return tm_last_status();
    if (tm__may_overlap(c, a) || tm__may_overlap(c, b))
        return TM_ERR(TM_EINVAL, "c overlaps a or b in memory; the result "
                      "must not be an input");
#undef TM_GEMM_SHAPES
    if (tm_numel(c) == 0) return TM_OK;
    tm_ctx *cx = tm__ctx(c);
    tm_buf abuf = tm__gemm_operand(a, c->shape, nbd, trans_a);
    tm_buf bbuf = tm__gemm_operand(b, c->shape, nbd, trans_b);
    tm_buf cbuf = tm__buf(c);
    tm__stage sg = {0};
    tm__stage_inout(&sg, &cbuf);
    tm__stage_in(&sg, &abuf);
    tm__stage_in(&sg, &bbuf);
    tm_status st = TM__CALL_STAGED(__func__, cx, &sg, GEMM, 0, gemm, &cbuf,
                                   &abuf, &bbuf, alpha, beta);
    tm__bump_version(c);
    return st;
}

/* Rows of x [..., in] as one [rows, in] matrix: the leading dims collapse
 * into rows with row stride *rs when their strides allow it. */
static bool tm__linear_rows(const tm_tensor *x, int64_t *rows, int64_t *rs)
{
    int64_t expect = -1;
    *rows = 1, *rs = 0;
    for (int d = x->ndim - 2; d >= 0; d--) {
        int64_t s = x->shape[d];
        *rows *= s;
        if (s == 1) continue;
        if (expect < 0) *rs = x->strides[d];
        else if (x->strides[d] != expect) return false;
        expect = x->strides[d] * s;
    }
    return true;
}

tm_tensor *tm_linear(const tm_tensor *x, const tm_tensor *w,
                     const tm_tensor *bias)
{
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sbias[TM_SHAPE_BUF];
    tm_tensor *xc = NULL, *y = NULL;
    if (w && tm_dtype_is_quantized(w->dtype))
        return tm__q_linear(__func__, x, w, bias);
    if (tm__check_dense_operand(__func__, x, "x") ||
        tm__check_dense_operand(__func__, w, "w"))
        return NULL;
    const tm_tensor *ts[3] = {x, w, bias};
    if (tm__check_same_device(__func__, ts, 3)) return NULL;
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx); /* cheap next to a */
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw); /* linear layer */
    if (x->ndim < 1 || w->ndim != 2) {
        TM_ERR(TM_EINVAL, "x needs at least 1 dim and w exactly 2, got "
               "shapes %s and %s", sx, sw);
        return NULL;
    }
    if (w->dtype != x->dtype || (bias && bias->dtype != x->dtype)) {
        TM_ERR(TM_EDTYPE, "x, w and bias must have one dtype, got %s, %s "
               "and %s", tm_dtype_name(x->dtype), tm_dtype_name(w->dtype),
               bias ? tm_dtype_name(bias->dtype) : "none");
        return NULL;
    }
    if (!tm_dtype_is_float(x->dtype)) {
        TM_ERR(TM_EDTYPE, "dtype %s is not supported: a float dtype is "
               "needed", tm_dtype_name(x->dtype));
        return NULL;
    }
    int64_t in = x->shape[x->ndim - 1], out = w->shape[0];
    if (w->shape[1] != in) {
        TM_ERR(TM_ESHAPE, "x %s and w %s do not match: %lld input features "
               "!= %lld", sx, sw, (long long)in, (long long)w->shape[1]);
        return NULL;
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != out)) {
        TM_ERR(TM_ESHAPE, "bias has shape %s, expected [%lld] for w %s",
               tm__fmt_shape(bias->shape, bias->ndim, sbias, sizeof sbias),
               (long long)out, sw);
        return NULL;
    }
    int64_t shape[TM_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = out;
    y = tm__tensor_new(__func__, shape, x->ndim, x->dtype, tm_device_of(x));
    if (!y) return NULL;
    if (tm_numel(y) == 0) goto done;
    tm_ctx *cx = tm__ctx(y);

    int64_t rows, rs;
    if (!tm__linear_rows(x, &rows, &rs)) {
        xc = tm_contiguous(x);
        if (!xc) goto fail;
        rs = in;
    } else {
        xc = tm_retain((tm_tensor *)x);
    }
    tm_buf yb = tm__buf(y);
    yb.ndim = 2;
    yb.shape[0] = rows, yb.shape[1] = out;
    yb.strides[0] = out, yb.strides[1] = 1;
    if (bias) {
        tm_buf bb = tm__buf(bias);
        bb.ndim = 2;
        bb.shape[0] = rows, bb.shape[1] = out;
        bb.strides[0] = 0, bb.strides[1] = bias->strides[0];
        if (TM__CALL(__func__, cx, copy, &yb, &bb)) goto fail;
    }
    tm_buf xb = tm__buf(xc);
    xb.ndim = 2;
    xb.shape[0] = rows, xb.shape[1] = in;
    xb.strides[0] = rs, xb.strides[1] = xc->strides[xc->ndim - 1];
    tm_buf wb = tm__buf(w); /* w^T: [in, out] */
    wb.shape[0] = in, wb.shape[1] = out;
    wb.strides[0] = w->strides[1], wb.strides[1] = w->strides[0];
    tm__stage sg = {0};
    tm__stage_inout(&sg, &yb);
    tm__stage_in(&sg, &xb);
    tm__stage_in(&sg, &wb);
    if (TM__CALL_STAGED(__func__, cx, &sg, GEMM, 0, gemm, &yb, &xb, &wb, 1.0,
                        bias ? 1.0 : 0.0)) goto fail;
done:
    tm_free(xc);
    return tm__grad_linear(y, x, w, bias);
fail:
    tm_free(xc);
    tm_free(y);
    return NULL;
}
