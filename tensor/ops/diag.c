/* diag.c — diagonal (a view), diag, and Tensor.unfold (a view of sliding
 * windows).
 *
 * The views share the input's storage, so they write through; diagonal
 * records DiagonalBackward (diag_backward.c), unfold is tm_as_strided and
 * records AsStridedBackward (overlapping windows add up).  diag of a
 * vector builds its matrix from pads and reshapes, which record their own
 * gradients. */
#include "compose_impl.h"
#include "../core/grad_hooks.h"

#include <stdint.h>

tm_tensor *tm_diagonal(const tm_tensor *t, int64_t offset, int dim1, int dim2)
{
    int d1, d2;
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    if (t->ndim < 2) {
        TM_ERR(TM_EINVAL, "needs a tensor of at least 2 dims, got %d",
               t->ndim);
        return NULL;
    }
    if (tm__wrap_dim(__func__, dim1, t->ndim, &d1) ||
        tm__wrap_dim(__func__, dim2, t->ndim, &d2))
        return NULL;
    if (d1 == d2) {
        TM_ERR(TM_EINVAL, "dim1 and dim2 are both dim %d", d1);
        return NULL;
    }
    int64_t n1 = t->shape[d1], n2 = t->shape[d2], len = 0;
    if (offset >= 0 && offset < n2) len = n1 < n2 - offset ? n1 : n2 - offset;
    if (offset < 0 && -offset < n1) len = n1 + offset < n2 ? n1 + offset : n2;
    int64_t shape[TM_MAX_DIMS], strides[TM_MAX_DIMS], off = t->offset;
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != d1 && i != d2) {
            shape[k] = t->shape[i];
            strides[k++] = t->strides[i];
        }
    shape[k] = len;
    strides[k] = t->strides[d1] + t->strides[d2];
    if (len > 0)
        off += offset >= 0 ? offset * t->strides[d2] : -offset * t->strides[d1];
    return tm__grad_diagonal(tm__view_of(__func__, t, shape, strides,
                                         t->ndim - 1, off),
                             t, offset, d1, d2);
}

/* The m x m matrix (m = n + |k|) with v on diagonal k: v's elements are
 * rows of a [n, m + 1] block whose row-major order puts element i at
 * i * (m + 1), which a pad of the flattened block shifts onto the
 * diagonal. */
static tm_tensor *diag_embed(const tm_tensor *v, int64_t k)
{
    int64_t n = v->shape[0], ak = k < 0 ? -k : k;
    const int64_t lim = 3037000499; /* floor(sqrt(INT64_MAX)) */
    if (ak > lim - 1 || n > lim - 1 - ak) {
        TM_ERR(TM_EOVERFLOW, "tm_diag: size %lld with diagonal %lld is too "
               "large", (long long)n, (long long)k);
        return NULL;
    }
    int64_t m = n + ak, lead = k >= 0 ? k : ak * m;
    int64_t flat = n * (m + 1), sq[2] = {m, m};
    tm_tensor *col = tm_unsqueeze(v, 1);
    tm_tensor *rows = col ? tm_pad(col, (int64_t[]){0, m}, 2, 0.0) : NULL;
    tm_tensor *f = rows ? tm_reshape(rows, &flat, 1) : NULL;
    tm_tensor *p = f ? tm_pad(f, (int64_t[]){lead, m * m - lead - flat}, 2,
                              0.0)
                     : NULL;
    tm_tensor *r = p ? tm_reshape(p, sq, 2) : NULL;
    tm_free(col);
    tm_free(rows);
    tm_free(f);
    tm_free(p);
    return r;
}

tm_tensor *tm_diag(const tm_tensor *t, int64_t diagonal)
{
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    tm_tensor *r = NULL;
    if (t->ndim == 1) {
        r = diag_embed(t, diagonal);
    } else if (t->ndim == 2) {
        tm_tensor *d = tm_diagonal(t, diagonal, 0, 1);
        r = d ? tm_clone(d) : NULL;
        tm_free(d);
    } else {
        TM_ERR(TM_EINVAL, "expects a 1-D or 2-D tensor, got %d dims",
               t->ndim);
        return NULL;
    }
    if (!r) tm__relabel_error(__func__, tm_last_status());
    return r;
}

tm_tensor *tm_unfold(const tm_tensor *t, int dim, int64_t size, int64_t step)
{
    int d;
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__wrap_dim(__func__, dim, t->ndim ? t->ndim : 1, &d))
        return NULL;
    int64_t n = t->ndim ? t->shape[d] : 1, st = t->ndim ? t->strides[d] : 1;
    if (step <= 0 || size < 0 || size > n) {
        TM_ERR(TM_EINVAL, "size %lld and step %lld do not fit dim %d of size "
               "%lld (need 0 <= size <= %lld, step > 0)", (long long)size,
               (long long)step, d, (long long)n, (long long)n);
        return NULL;
    }
    if (t->ndim + 1 > TM_MAX_DIMS) {
        TM_ERR(TM_EINVAL, "the result would have %d dims; at most %d",
               t->ndim + 1, TM_MAX_DIMS);
        return NULL;
    }
    int64_t shape[TM_MAX_DIMS], strides[TM_MAX_DIMS];
    int nd = t->ndim;
    for (int i = 0; i < nd; i++) {
        shape[i] = t->shape[i];
        strides[i] = t->strides[i];
    }
    if (nd) {
        shape[d] = (n - size) / step + 1;
        /* a step past the end leaves one window, whose stride is unused */
        strides[d] = st * (step < n ? step : (n ? n : 1));
    }
    shape[nd] = size;
    strides[nd] = st;
    return tm_as_strided(t, shape, strides, nd + 1, t->offset);
}
