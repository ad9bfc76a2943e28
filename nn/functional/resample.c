/* resample.c — the shared pieces of the composed spatial ops (see
 * spatial_impl.h): index and weight tensors built on the host and moved
 * to the input's device, and one dim's weighted gather.  All public ops,
 * so gradients come from their rules. */
#include "spatial_impl.h"

#include <stdlib.h>

tm_tensor *tm__host_i64(const int64_t *v, int64_t n, tm_device dev)
{
    tm_tensor *h = tm_from_buffer(v, (int64_t[]){n}, 1, TM_I64);
    if (!h) return NULL;
    tm_tensor *r = tm_to(h, dev);
    tm_free(h);
    return r;
}

tm_tensor *tm__host_column(const double *w, int64_t n, int ones,
                           tm_dtype dt, tm_device dev)
{
    int64_t shape[TM_MAX_DIMS] = {n};
    for (int i = 0; i < ones; i++) shape[1 + i] = 1;
    tm_tensor *h = tm_from_buffer(w, shape, 1 + ones, TM_F64), *c = NULL;
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
    /* one gather per tap, weighted and accumulated: summing a gathered
     * [.., o, k, ..] block over its small k dim instead was several times
     * slower (a reduction over a short dim) */
    tm_device dev = tm_device_of(x);
    int nd = tm_ndim(x);
    int64_t *ti = malloc((size_t)o * sizeof *ti + 1);
    double *tw = malloc((size_t)o * sizeof *tw + 1);
    tm_tensor *acc = NULL;
    if (!ti || !tw) {
        tm__errf(TM_ENOMEM, "tm__resample_dim", "out of memory for %lld "
                 "taps", (long long)o);
        goto done;
    }
    for (int64_t t = 0; t < k; t++) {
        for (int64_t i = 0; i < o; i++) {
            ti[i] = idx[i * k + t];
            if (w) tw[i] = w[i * k + t];
        }
        tm_tensor *it = tm__host_i64(ti, o, dev), *sel = NULL, *wt = NULL;
        tm_tensor *p = NULL, *na = NULL;
        if (it) sel = tm_index_select(x, d, it);
        if (sel && !w) p = tm_retain(sel);
        else if (sel && (wt = tm__host_column(tw, o, nd - 1 - d,
                                              tm_dtype_of(x), dev)))
            p = tm_mul(sel, wt);
        if (p) na = acc ? tm_add(acc, p) : tm_retain(p);
        tm_free(it), tm_free(sel), tm_free(wt), tm_free(p), tm_free(acc);
        acc = na;
        if (!acc) goto done;
    }
done:
    free(ti), free(tw);
    return acc;
}
