/* create.c — tensors from nothing, from values and from caller memory. */
#include "tensor_impl.h"

#include <math.h>
#include <string.h>

tm_tensor *tm_empty(const int64_t *shape, int ndim, tm_dtype dt)
{
    return tm__tensor_new(__func__, shape, ndim, dt, TM_CPU);
}

tm_tensor *tm_empty_on(const int64_t *shape, int ndim, tm_dtype dt,
                       tm_device dev)
{
    return tm__tensor_new(__func__, shape, ndim, dt, dev);
}

static tm_tensor *tm__full(const char *fn, const int64_t *shape, int ndim,
                           double value, tm_dtype dt, tm_device dev)
{
    if (tm_dtype_is_quantized(dt) && value != 0.0) {
        tm__errf(TM_EDTYPE, fn, "cannot fill a %s tensor with %g: make it "
                 "with tm_quantize (only zeros, all-zero blocks, can be made "
                 "directly)", tm_dtype_name(dt), value);
        return NULL;
    }
    tm_tensor *t = tm__tensor_new(fn, shape, ndim, dt, dev);
    if (!t) return NULL;
    tm_buf b = tm__buf(t);
    /* all-zero bytes are zero blocks (scale 0) in every format */
    if ((tm_dtype_is_quantized(dt) && tm__q_bytes_buf(fn, t, &b)) ||
        TM__CALL(fn, tm__ctx(t), fill, &b, value)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

tm_tensor *tm__scalar_on(const char *fn, double v, tm_dtype dt,
                         tm_device dev)
{
    return tm__full(fn, NULL, 0, v, dt, dev);
}

tm_tensor *tm_zeros(const int64_t *shape, int ndim, tm_dtype dt)
{
    return tm__full(__func__, shape, ndim, 0.0, dt, TM_CPU);
}

tm_tensor *tm_ones(const int64_t *shape, int ndim, tm_dtype dt)
{
    return tm__full(__func__, shape, ndim, 1.0, dt, TM_CPU);
}

tm_tensor *tm_full(const int64_t *shape, int ndim, double value, tm_dtype dt)
{
    return tm__full(__func__, shape, ndim, value, dt, TM_CPU);
}

tm_tensor *tm_full_on(const int64_t *shape, int ndim, double value,
                      tm_dtype dt, tm_device dev)
{
    return tm__full(__func__, shape, ndim, value, dt, dev);
}

tm_tensor *tm_scalar(double value, tm_dtype dt)
{
    return tm__full(__func__, NULL, 0, value, dt, TM_CPU);
}

tm_tensor *tm_empty_like(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__tensor_new(__func__, t->shape, t->ndim, t->dtype,
                          tm_device_of(t));
}

tm_tensor *tm_zeros_like(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__full(__func__, t->shape, t->ndim, 0.0, t->dtype,
                    tm_device_of(t));
}

tm_tensor *tm_ones_like(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__full(__func__, t->shape, t->ndim, 1.0, t->dtype,
                    tm_device_of(t));
}

tm_tensor *tm_full_like(const tm_tensor *t, double value)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__full(__func__, t->shape, t->ndim, value, t->dtype,
                    tm_device_of(t));
}

/* A new CPU tensor of `shape` holding sequence `kind` (backend.h). */
static tm_tensor *tm__sequence(const char *fn, const int64_t *shape, int nd,
                               tm_dtype dt, tm_seq_kind kind, double a,
                               double b)
{
    tm_tensor *t = tm__tensor_new(fn, shape, nd, dt, TM_CPU);
    if (!t) return NULL;
    tm_buf d = tm__buf(t);
    if (TM__CALL(fn, tm__ctx(t), sequence, &d, kind, a, b, 0)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

/* A bool sequence is refused, as PyTorch refuses it (linspace(0, 1, 3)
 * would round to [false, true, true]). */
static tm_status tm__check_seq_dtype(const char *fn, tm_dtype dt)
{
    if (dt == TM_BOOL)
        return tm__errf(TM_EUNSUPPORTED, fn, "a %s sequence is not "
                        "supported; make it in an integer dtype and compare",
                        tm_dtype_name(dt));
    return TM_OK;
}

tm_tensor *tm_arange(double start, double end, double step, tm_dtype dt)
{
    if (tm__check_seq_dtype(__func__, dt)) return NULL;
    if (!isfinite(start) || !isfinite(end) || !isfinite(step)) {
        TM_ERR(TM_EINVAL, "start %g, end %g and step %g must be finite",
               start, end, step);
        return NULL;
    }
    if (step == 0 || (step > 0 && end < start) || (step < 0 && end > start)) {
        TM_ERR(TM_EINVAL, "step %g cannot go from %g to %g", step, start,
               end);
        return NULL;
    }
    double count = ceil((end - start) / step);
    if (count >= 0x1p62) {
        TM_ERR(TM_EOVERFLOW, "%g elements are too many", count);
        return NULL;
    }
    int64_t n = (int64_t)count;
    return tm__sequence(__func__, &n, 1, dt, TM_SEQ_ARANGE, start, step);
}

tm_tensor *tm_linspace(double start, double end, int64_t steps, tm_dtype dt)
{
    if (tm__check_seq_dtype(__func__, dt)) return NULL;
    if (steps < 0) {
        TM_ERR(TM_EINVAL, "steps %lld is negative", (long long)steps);
        return NULL;
    }
    return tm__sequence(__func__, &steps, 1, dt, TM_SEQ_LINSPACE, start,
                        end);
}

tm_tensor *tm_eye(int64_t n, int64_t m, tm_dtype dt)
{
    if (m < 0) m = n;
    return tm__sequence(__func__, (int64_t[]){n, m}, 2, dt, TM_SEQ_EYE, 0, 0);
}

tm_tensor *tm_from_buffer(const void *data, const int64_t *shape, int ndim,
                          tm_dtype dt)
{
    int64_t numel;
    if (tm__check_shape(__func__, shape, ndim, dt, &numel)) return NULL;
    if (!data && numel > 0) {
        TM_ERR(TM_EINVAL, "data is NULL");
        return NULL;
    }
    tm_tensor *t = tm__tensor_new(__func__, shape, ndim, dt, TM_CPU);
    tm_ctx *cx = t ? tm__ctx(t) : NULL;
    if (t && numel > 0 &&
        cx->backend->to_device(cx, t->storage->handle, 0, data,
                               tm__span_bytes(dt, numel))) {
        tm_free(t);
        return NULL;
    }
    return t;
}

tm_tensor *tm_wrap(void *data, const int64_t *shape, const int64_t *strides,
                   int ndim, tm_dtype dt, tm_release_fn release, void *user)
{
    int64_t numel;
    if (tm__check_shape(__func__, shape, ndim, dt, &numel)) {
        if (release) release(data, user);
        return NULL;
    }
    int64_t st[TM_MAX_DIMS];
    if (strides) memcpy(st, strides, sizeof(int64_t) * (size_t)ndim);
    else tm__contiguous_strides(shape, ndim, st);
    /* bytes the view reaches; strides are validated against this below */
    uint64_t last = 0;
    for (int i = 0; i < ndim && numel > 0; i++) {
        if (st[i] < 0 ||
            (shape[i] > 1 && (uint64_t)st[i] > (uint64_t)INT64_MAX /
                                                   (uint64_t)shape[i])) {
            TM_ERR(TM_EINVAL, "stride %lld of dim %d is negative or too "
                   "large", (long long)st[i], i);
            if (release) release(data, user);
            return NULL;
        }
        last += (uint64_t)(shape[i] - 1) * (uint64_t)st[i];
        if (last > (uint64_t)INT64_MAX / 16) {
            TM_ERR(TM_EOVERFLOW, "the view spans too many elements");
            if (release) release(data, user);
            return NULL;
        }
    }
    size_t nbytes = numel > 0 ? tm__span_bytes(dt, (int64_t)last + 1) : 0;
    tm_storage *s = tm_storage_wrap(data, nbytes, TM_STORAGE_BORROWED,
                                    release, user);
    if (!s) return NULL;
    tm_tensor *t = tm_tensor_from_storage(s, 0, shape, st, ndim, dt);
    tm_storage_free(s); /* the tensor holds its own reference */
    return t;
}
