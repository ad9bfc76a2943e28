/* quant_entry.c — the CPU backend's three quantized entries: checking the
 * buffers (backend.h, "block-quantized weights"), then the row loops
 * (quantize / dequantize), the threaded matmul and its backward
 * (qmatmul.c). */
#include "qmatmul.h"

#include "../../tensor/runtime/runtime_impl.h"

#include <string.h>

/* The byte address of row r of a 2-D buffer (float or quantized). */
char *tm__qbuf_row(const tm_buf *b, int64_t r)
{
    char *base = (char *)b->handle + b->offset;
    const tm__qtraits *q = tm__qtraits_of(b->dtype);
    if (q) return base + (size_t)(r * b->strides[0] / q->block) * q->bytes;
    return base + (size_t)(r * b->strides[0]) * sizeof(float);
}

tm_status tm__qcheck_f32(const char *fn, const char *what, const tm_buf *b)
{
    if (!b || !b->handle)
        return tm__errf(TM_EINVAL, fn, "%s is absent", what);
    if (b->dtype != TM_F32)
        return tm__errf(TM_EDTYPE, fn, "%s must be f32, not %s", what,
                        tm__qtraits_of(b->dtype)
                            ? tm__qtraits_of(b->dtype)->name
                            : tm_dtype_name(b->dtype));
    if (b->ndim != 2)
        return tm__errf(TM_ESHAPE, fn, "%s must be 2-D, not %d-D", what,
                        b->ndim);
    if (b->shape[1] > 1 && b->strides[1] != 1)
        return tm__errf(TM_ESHAPE, fn, "%s needs a unit last stride, not "
                        "%lld", what, (long long)b->strides[1]);
    return TM_OK;
}

tm_status tm__qcheck_q(const char *fn, const char *what, const tm_buf *b,
                       bool weight)
{
    if (!b || !b->handle)
        return tm__errf(TM_EINVAL, fn, "%s is absent", what);
    const tm__qtraits *q = tm__qtraits_of(b->dtype);
    if (!q || (weight && !q->weight))
        return tm__errf(TM_EDTYPE, fn, "%s must be a quantized %sdtype, not "
                        "%s", what, weight ? "weight " : "",
                        q ? q->name : tm_dtype_name(b->dtype));
    if (b->ndim != 2)
        return tm__errf(TM_ESHAPE, fn, "%s must be 2-D, not %d-D", what,
                        b->ndim);
    if (b->shape[1] % q->block != 0)
        return tm__errf(TM_ESHAPE, fn, "%s rows of %lld values are not whole "
                        "%s blocks of %lld", what, (long long)b->shape[1],
                        q->name, (long long)q->block);
    if (b->shape[1] > 0 && b->strides[1] != 1)
        return tm__errf(TM_ESHAPE, fn, "%s needs a unit last stride, not "
                        "%lld", what, (long long)b->strides[1]);
    if (b->shape[0] > 1 && b->strides[0] % q->block != 0)
        return tm__errf(TM_ESHAPE, fn, "%s row stride %lld does not start "
                        "rows on %s blocks", what, (long long)b->strides[0],
                        q->name);
    return TM_OK;
}

/* ------------------------------------------------------------ quantize */

typedef struct {
    const tm_buf *dst, *src;
    bool to_q;
} quant_job;

static void quant_run(int64_t r0, int64_t r1, void *vctx)
{
    const quant_job *j = vctx;
    tm_dtype qt = j->to_q ? j->dst->dtype : j->src->dtype;
    int64_t n = j->dst->shape[1];
    for (int64_t r = r0; r < r1; r++) {
        if (j->to_q)
            tm__quantize_row(qt, (const float *)tm__qbuf_row(j->src, r),
                             tm__qbuf_row(j->dst, r), n);
        else
            tm__dequantize_row(qt, tm__qbuf_row(j->src, r),
                               (float *)tm__qbuf_row(j->dst, r), n);
    }
}

tm_status tm__cpu_quantize(tm_ctx *ctx, const tm_buf *dst, const tm_buf *src)
{
    (void)ctx;
    const char *fn = __func__;
    tm_status st;
        if (!dst || !src || !dst->handle || !src->handle)
        return TM_ERR(TM_EINVAL, "dst or src is absent");
    bool to_q = tm__qtraits_of(dst->dtype) != NULL;
    if (to_q) {
        if ((st = tm__qcheck_q(fn, "dst", dst, false)) ||
            (st = tm__qcheck_f32(fn, "src", src)))
            return st;
    } else {
        if ((st = tm__qcheck_q(fn, "src", src, false)) ||
            (st = tm__qcheck_f32(fn, "dst", dst)))
            return st;
    }
    if (dst->shape[0] != src->shape[0] || dst->shape[1] != src->shape[1])
        return tm__errf(TM_ESHAPE, fn, "dst [%lld, %lld] and src [%lld, "
                        "%lld] differ", (long long)dst->shape[0],
                        (long long)dst->shape[1], (long long)src->shape[0],
                        (long long)src->shape[1]);
    int64_t rows = dst->shape[0], n = dst->shape[1];
    if (rows == 0 || n == 0) return TM_OK;
    quant_job j = {dst, src, to_q};
    /* ~16k values per task: a row of 4096 is ~10 us of work. */
    int64_t grain = n >= 16384 ? 1 : 16384 / n;
    tm__parallel_for(rows, grain, quant_run, &j);
    return TM_OK;
}

/* ------------------------------------------------------------- matmul */

tm_status tm__cpu_qmatmul(tm_ctx *ctx, const tm_buf *y, const tm_buf *x,
                          const tm_buf *w, bool accumulate)
{
    (void)ctx;
    const char *fn = __func__;
    tm_status st;
    if ((st = tm__qcheck_f32(fn, "y", y)) ||
        (st = tm__qcheck_f32(fn, "x", x)) ||
        (st = tm__qcheck_q(fn, "w", w, true)))
        return st;
    int64_t m = x->shape[0], k = x->shape[1], n = w->shape[0];
    if (w->shape[1] != k || y->shape[0] != m || y->shape[1] != n)
        return tm__errf(TM_ESHAPE, fn, "y [%lld, %lld] = x [%lld, %lld] . "
                        "w [%lld, %lld]^T does not fit",
                        (long long)y->shape[0], (long long)y->shape[1],
                        (long long)m, (long long)k, (long long)w->shape[0],
                        (long long)w->shape[1]);
    return tm__qmatmul_run(y, x, w, accumulate);
}

tm_status tm__cpu_qmatmul_backward(tm_ctx *ctx, const tm_buf *dx,
                                   const tm_buf *dy, const tm_buf *w,
                                   bool accumulate)
{
    (void)ctx;
    const char *fn = __func__;
    tm_status st;
    if ((st = tm__qcheck_f32(fn, "dx", dx)) ||
        (st = tm__qcheck_f32(fn, "dy", dy)) ||
        (st = tm__qcheck_q(fn, "w", w, true)))
        return st;
    int64_t m = dy->shape[0], n = dy->shape[1], k = w->shape[1];
    if (w->shape[0] != n || dx->shape[0] != m || dx->shape[1] != k)
        return tm__errf(TM_ESHAPE, fn, "dx [%lld, %lld] = dy [%lld, %lld] . "
                        "w [%lld, %lld] does not fit",
                        (long long)dx->shape[0], (long long)dx->shape[1],
                        (long long)m, (long long)n, (long long)w->shape[0],
                        (long long)k);
    return tm__qmatmul_backward_run(dx, dy, w, accumulate);
}
