/* resample.c — the shared pieces of the composed spatial ops (see
 * spatial_impl.h): index and weight tensors built on the host and moved
 * to the input's device, and one dim's weighted gather.  All public ops,
 * so gradients come from their rules. */
#include "spatial_impl.h"

tm_tensor *tm__host_i64(const int64_t *v, int64_t n, tm_device dev)
{
    tm_tensor *h = tm_from_buffer(v, (int64_t[]){n}, 1, TM_I64);
    if (!h) return NULL;
    tm_tensor *r = tm_to(h, dev);
    tm_free(h);
    return r;
}

tm_tensor *tm__host_weights(const double *w, int64_t n, int64_t k,
                            int ones, tm_dtype dt, tm_device dev)
{
    int64_t shape[TM_MAX_DIMS] = {n, k};
    for (int i = 0; i < ones; i++) shape[2 + i] = 1;
    tm_tensor *h = tm_from_buffer(w, shape, 2 + ones, TM_F64), *c = NULL;
    tm_tensor *r = NULL;
    if (!h) return NULL;
    c = dt == TM_F64 ? tm_retain(h) : tm_to_dtype(h, dt);
    if (c) r = tm_to(c, dev);
    tm_free(h), tm_free(c);
    return r;
}

tm_tensor *tm__resample_dim(const tm_tensor *x, int d, int64_t o, int64_t k,
                            const int64_t *idx, const double *w)
{
    tm_tensor *it = NULL, *sel = NULL, *v = NULL, *wt = NULL, *p = NULL;
    tm_tensor *r = NULL;
    tm_device dev = tm_device_of(x);
    int nd = tm_ndim(x);
    it = tm__host_i64(idx, o * k, dev);
    if (!it || !(sel = tm_index_select(x, d, it))) goto done;
    if (!w) {
        r = tm_retain(sel);
        goto done;
    }
    int64_t shape[TM_MAX_DIMS + 1];
    const int64_t *xs = tm_shape(x);
    for (int i = 0; i < d; i++) shape[i] = xs[i];
    shape[d] = o, shape[d + 1] = k;
    for (int i = d + 1; i < nd; i++) shape[i + 1] = xs[i];
    if (!(v = tm_reshape(sel, shape, nd + 1))) goto done;
    wt = tm__host_weights(w, o, k, nd - 1 - d, tm_dtype_of(x), dev);
    if (!wt || !(p = tm_mul(v, wt))) goto done;
    r = tm_sum(p, (int[]){d + 1}, 1, false);
done:
    tm_free(it), tm_free(sel), tm_free(v), tm_free(wt), tm_free(p);
    return r;
}
