/* pool_adaptive.c — tm_adaptive_avg_pool_nd and tm_adaptive_max_pool_nd,
 * composed of public ops one spatial dim at a time: output i of a dim of
 * length L pooled to O covers [floor(i*L/O), ceil((i+1)*L/O)), as in
 * PyTorch.  The average multiplies by each dim's dense averaging matrix
 * (tm_matmul).  The max gathers each window (padded to the longest window
 * by repeating its last element) with tm__resample_dim's index_select and
 * takes tm_max_dim over the taps (a repeat never wins over the element
 * it repeats, which comes first), so the rectangle's max and its
 * row-major first position come out dim by dim.  Gradients are those of
 * the composing ops. */
#include "spatial_impl.h"

#include <stdlib.h>

/* Validates x [N, C, *S] or [C, *S] and the sizes; fills out[] (negative
 * entries: the input's size). */
static tm_status ad_check(const char *fn, const tm_tensor *x, int dims,
                          const int64_t *size, int64_t *out)
{
    char sx[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, x, "x")) return tm_last_status();
    if (dims < 1 || dims > 3)
        return tm__errf(TM_EINVAL, fn, "spatial dims must be 1, 2 or 3, "
                        "got %d", dims);
    if (!size) return tm__errf(TM_EINVAL, fn, "output_size is NULL");
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    if (!tm_dtype_is_float(x->dtype))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: a float "
                        "dtype is needed", tm_dtype_name(x->dtype));
    bool batched = x->ndim == dims + 2;
    if (x->ndim != dims + 1 && !batched)
        return tm__errf(TM_ESHAPE, fn, "x must be %dD or %dD (batch mode), "
                        "got shape %s", dims + 1, dims + 2, sx);
    for (int i = batched ? 1 : 0; i < x->ndim; i++)
        if (x->shape[i] == 0)
            return tm__errf(TM_ESHAPE, fn, "x %s: non-batch dims must be "
                            "non-empty (dim %d is empty)", sx, i);
    for (int i = 0; i < dims; i++) {
        out[i] = size[i] < 0 ? x->shape[x->ndim - dims + i] : size[i];
    }
    return TM_OK;
}

/* The windows of L pooled to o: idx [o*k] (k = the longest window) and
 * start[o].  Returns k, or -1 when out of memory. */
static int64_t ad_windows(int64_t L, int64_t o, int64_t **idx,
                          int64_t **start)
{
    int64_t k = 1;
    for (int64_t i = 0; i < o; i++) {
        int64_t a = i * L / o, b = ((i + 1) * L + o - 1) / o;
        if (b - a > k) k = b - a;
    }
    *idx = malloc(((size_t)(o * k) + 1) * sizeof **idx);
    *start = malloc((size_t)(o + 1) * sizeof **start);
    if (!*idx || !*start) return -1;
    for (int64_t i = 0; i < o; i++) {
        int64_t a = i * L / o, b = ((i + 1) * L + o - 1) / o;
        (*start)[i] = a;
        for (int64_t t = 0; t < k; t++)
            (*idx)[i * k + t] = a + (t < b - a ? t : b - a - 1);
    }
    return k;
}

/* v averaged along dim d (length L) into o windows: a product with the
 * dense [o, L] averaging matrix (a GEMM: the gathers of the max path cost
 * several times more, and pooled sizes are small), dim d brought next to
 * last by a transposed view when it is not the last. */
static tm_tensor *ad_avg_dim(const tm_tensor *v, int d, int64_t L, int64_t o)
{
    int nd = tm_ndim(v);
    double *m = calloc((size_t)(o * L) + 1, sizeof *m);
    tm_tensor *h = NULL, *mt = NULL, *c = NULL, *vt = NULL, *p = NULL;
    tm_tensor *r = NULL;
    if (!m) {
        tm__errf(TM_ENOMEM, "tm_adaptive_avg_pool_nd", "out of memory for "
                 "a %lldx%lld averaging matrix", (long long)o, (long long)L);
        return NULL;
    }
    for (int64_t i = 0; i < o; i++) {
        int64_t a = i * L / o, b = ((i + 1) * L + o - 1) / o;
        for (int64_t j = a; j < b; j++) m[i * L + j] = 1.0 / (double)(b - a);
    }
    h = tm__host_column(m, o * L, 0, tm_dtype_of(v), tm_device_of(v));
    if (!h || !(c = tm_reshape(h, (int64_t[]){o, L}, 2))) goto done;
    if (d == nd - 1) {
        if ((mt = tm_transpose(c, 0, 1))) r = tm_matmul(v, mt);
    } else if ((vt = tm_transpose(v, d, nd - 2)) &&
               (p = tm_matmul(c, vt))) {
        r = tm_transpose(p, d, nd - 2);
    }
done:
    free(m);
    tm_free(h), tm_free(mt), tm_free(c), tm_free(vt), tm_free(p);
    return r;
}

tm_tensor *tm_adaptive_avg_pool_nd(const tm_tensor *x, int dims,
                                   const int64_t *output_size)
{
    static const char fn[] = "tm_adaptive_avg_pool_nd";
    int64_t out[3];
    if (ad_check(fn, x, dims, output_size, out)) return NULL;
    tm_tensor *v = tm_retain((tm_tensor *)x);
    for (int i = dims - 1; i >= 0 && v; i--) {
        int d = x->ndim - dims + i;
        tm_tensor *nv = ad_avg_dim(v, d, x->shape[d], out[i]);
        tm_free(v);
        v = nv;
    }
    if (!v) tm__relabel_error(fn, tm_last_status());
    return v;
}

/* [o, 1 x ones] I64 holding v. */
static tm_tensor *ad_column(const int64_t *v, int64_t o, int ones,
                            tm_device dev)
{
    int64_t shape[TM_MAX_DIMS] = {o};
    for (int i = 0; i < ones; i++) shape[1 + i] = 1;
    tm_tensor *t = tm__host_i64(v, o, dev), *r = NULL;
    if (t) r = tm_reshape(t, shape, 1 + ones);
    tm_free(t);
    return r;
}

tm_tensor *tm_adaptive_max_pool_nd(const tm_tensor *x, int dims,
                                   const int64_t *output_size,
                                   tm_tensor **indices)
{
    static const char fn[] = "tm_adaptive_max_pool_nd";
    int64_t out[3];
    /* pos[j]: the position along spatial dim j of each current element */
    tm_tensor *pos[3] = {0}, *v = NULL, *flat = NULL;
    if (indices) *indices = NULL;
    if (ad_check(fn, x, dims, output_size, out)) return NULL;
    int nd = x->ndim;
    tm_device dev = tm_device_of(x);
    v = tm_retain((tm_tensor *)x);
    for (int i = dims - 1; i >= 0; i--) {
        int d = nd - dims + i;
        int64_t *idx = NULL, *st = NULL;
        int64_t k = ad_windows(x->shape[d], out[i], &idx, &st);
        tm_tensor *sel = NULL, *nv = NULL, *ka = NULL, *sc = NULL;
        if (k < 0) {
            tm__errf(TM_ENOMEM, fn, "out of memory for %lld windows",
                     (long long)out[i]);
            free(idx), free(st);
            goto fail;
        }
        sel = tm__resample_dim(v, d, out[i] * k, 1, idx, NULL);
        int64_t shape[TM_MAX_DIMS + 1];
        const int64_t *vs = tm_shape(v);
        for (int j = 0; j < nd; j++) shape[j + (j > d)] = vs[j];
        shape[d] = out[i], shape[d + 1] = k;
        tm_tensor *r = sel ? tm_reshape(sel, shape, nd + 1) : NULL;
        if (r && !tm_max_dim(r, d + 1, false, &nv, &ka))
            sc = ad_column(st, out[i], nd - 1 - d, dev);
        free(idx), free(st);
        tm_free(sel), tm_free(r);
        tm_free(v);
        v = nv;
        tm_tensor *pd = sc ? tm_add(ka, sc) : NULL;
        tm_free(ka), tm_free(sc);
        if (!pd) goto fail;
        for (int j = i + 1; j < dims; j++) {
            tm_tensor *g = tm_gather(pos[j], d, pd);
            tm_free(pos[j]);
            pos[j] = g;
            if (!g) {
                tm_free(pd);
                goto fail;
            }
        }
        pos[i] = pd;
    }
    if (indices) {
        /* flat index within the plane: ((z*H) + y)*W + x */
        flat = tm_retain(pos[0]);
        for (int j = 1; j < dims && flat; j++) {
            tm_tensor *m = tm_mul_scalar(flat, (double)x->shape[nd - dims + j]);
            tm_free(flat);
            flat = m ? tm_add(m, pos[j]) : NULL;
            tm_free(m);
        }
        if (!flat) goto fail;
        *indices = flat;
    }
    for (int j = 0; j < 3; j++) tm_free(pos[j]);
    return v;
fail:
    tm__relabel_error(fn, tm_last_status());
    for (int j = 0; j < 3; j++) tm_free(pos[j]);
    tm_free(v);
    return NULL;
}
