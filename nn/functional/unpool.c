/* unpool.c — tm_max_unpool_nd: the partial inverse of max pooling,
 * composed of public ops (a scatter of x's values into zeros at the
 * flat plane indices that max pooling returned), so its gradient is the
 * scatter's: g gathered back at the indices.  Validating the indices
 * reads their min and max (a host synchronization point), because
 * PyTorch rejects any index outside the output plane while the scatter
 * alone would accept negative ones. */
#include "spatial_impl.h"

tm_tensor *tm_max_unpool_nd(const tm_tensor *x, const tm_tensor *indices,
                            int dims, const int64_t *output_size)
{
    static const char fn[] = "tm_max_unpool_nd";
    char sx[TM_SHAPE_BUF], si[TM_SHAPE_BUF];
    tm_tensor *xf = NULL, *ixf = NULL, *z = NULL, *s = NULL, *y = NULL;
    tm_tensor *lo = NULL, *hi = NULL;
    if (tm__check_tensor(fn, x, "x") ||
        tm__check_tensor(fn, indices, "indices"))
        return NULL;
    if (dims < 1 || dims > 3 || !output_size) {
        tm__errf(TM_EINVAL, fn, "spatial dims must be 1, 2 or 3 and "
                 "output_size given, got dims %d", dims);
        return NULL;
    }
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(indices->shape, indices->ndim, si, sizeof si);
    if (!tm_dtype_is_float(x->dtype)) {
        tm__errf(TM_EDTYPE, fn, "dtype %s of x is not supported: a float "
                 "dtype is needed", tm_dtype_name(x->dtype));
        return NULL;
    }
    if (indices->dtype != TM_I64) {
        tm__errf(TM_EDTYPE, fn, "indices must be i64, got %s",
                 tm_dtype_name(indices->dtype));
        return NULL;
    }
    if (x->ndim != dims + 1 && x->ndim != dims + 2) {
        tm__errf(TM_ESHAPE, fn, "x must be %dD or %dD (batch mode), got "
                 "shape %s", dims + 1, dims + 2, sx);
        return NULL;
    }
    bool same = x->ndim == indices->ndim;
    for (int i = 0; same && i < x->ndim; i++)
        same = x->shape[i] == indices->shape[i];
    if (!same) {
        tm__errf(TM_ESHAPE, fn, "x %s and indices %s must have the same "
                 "shape", sx, si);
        return NULL;
    }
    int nd = x->ndim, lead = nd - dims;
    int64_t plane = 1, in_plane = 1, shape[TM_MAX_DIMS];
    for (int i = 0; i < dims; i++) {
        if (output_size[i] < 0) {
            tm__errf(TM_EINVAL, fn, "output_size[%d] = %lld must be >= 0",
                     i, (long long)output_size[i]);
            return NULL;
        }
        plane *= output_size[i];
        in_plane *= x->shape[lead + i];
    }
    for (int i = 0; i < lead; i++) shape[i] = x->shape[i];
    shape[lead] = in_plane;
    xf = tm_reshape(x, shape, lead + 1);
    ixf = xf ? tm_reshape(indices, shape, lead + 1) : NULL;
    shape[lead] = plane;
    if (!ixf || !(z = tm_zeros(shape, lead + 1, x->dtype))) goto fail;
    tm_tensor *zd = tm_to(z, tm_device_of(x));
    tm_free(z);
    if (!(z = zd)) goto fail;
    if (tm_numel(x) > 0) {
        int64_t a, b;
        if (!(lo = tm_min(ixf, NULL, 0, false)) ||
            !(hi = tm_max(ixf, NULL, 0, false)) || tm_item_i64(lo, &a) ||
            tm_item_i64(hi, &b))
            goto fail;
        if (a < 0 || b >= plane) {
            tm__errf(TM_ERANGE, fn, "found an invalid max index %lld: the "
                     "output planes hold %lld elements", (long long)(a < 0 ?
                     a : b), (long long)plane);
            goto fail_quiet;
        }
    }
    if (!(s = tm_scatter(z, lead, ixf, xf))) goto fail;
    for (int i = 0; i < dims; i++) shape[lead + i] = output_size[i];
    y = tm_reshape(s, shape, nd);
    if (!y) goto fail;
    tm_free(xf), tm_free(ixf), tm_free(z), tm_free(s), tm_free(lo),
        tm_free(hi);
    return y;
fail:
    tm__relabel_error(fn, tm_last_status());
fail_quiet:
    tm_free(xf), tm_free(ixf), tm_free(z), tm_free(s), tm_free(lo),
        tm_free(hi);
    return NULL;
}
