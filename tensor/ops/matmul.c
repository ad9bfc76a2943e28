/* matmul.c — tm_matmul with numpy semantics: shapes, dtypes, batching. */
#include "../core/grad_hooks.h"

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
    if (tm__check_tensor(__func__, a, "a") ||
        tm__check_tensor(__func__, b, "b"))
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
    out = tm__tensor_new(__func__, shape, ond, dt, a->storage->device);
    if (!out) return NULL;
    if (tm_numel(out) == 0) goto done;

    /* The backend multiplies operands of one dtype: convert the others.
     * F16/BF16 stay as they are; the kernel computes them in F32. */
    ac = a->dtype == dt ? tm_retain((tm_tensor *)a) : tm_to_dtype(a, dt);
    bc = b->dtype == dt ? tm_retain((tm_tensor *)b) : tm_to_dtype(b, dt);
    if (!ac || !bc) goto fail;
    const tm_backend *be = tm__backend(out, __func__);
    if (!be) goto fail;
    tm_buf abuf = tm__mm_operand(ac, shape, nbd, true, m, k);
    tm_buf bbuf = tm__mm_operand(bc, shape, nbd, false, k, n);
    tm_buf obuf = tm__buf(out);
    obuf.ndim = nbd + 2;
    obuf.shape[nbd] = m;
    obuf.shape[nbd + 1] = n;
    tm__contiguous_strides(obuf.shape, obuf.ndim, obuf.strides);
    if (be->gemm(&obuf, &abuf, &bbuf, 1.0, 0.0)) goto fail;
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
