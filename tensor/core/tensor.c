/* tensor.c — storage and tensor objects: lifetime, getters, validation. */
#include "tensor_impl.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- storage */

static tm_storage *tm__storage_alloc(const char *fn)
{
    tm_storage *s = tm__calloc(sizeof *s, fn);
    if (!s) return NULL;
    atomic_init(&s->refs, 1);
    atomic_init(&s->version, 0);
    return s;
}

/* Fresh owned storage of `nbytes` on `dev`. */
static tm_storage *tm__storage_new(const char *fn, size_t nbytes,
                                   tm_device dev)
{
    tm_ctx *cx = tm_device_ctx(dev);
    if (!cx) {
        tm__errf(tm_last_status(), fn, "%s", tm_last_error());
        return NULL;
    }
    tm_storage *s = tm__storage_alloc(fn);
    if (!s) return NULL;
    s->nbytes = nbytes;
    s->ctx = cx;
    if (dev.type == TM_DEVICE_CPU) {
        s->kind = TM_STORAGE_OWNED;
        s->handle = tm__alloc(nbytes, fn);
    } else {
        s->kind = TM_STORAGE_DEVICE;
        s->handle = tm__dev_alloc(fn, cx, nbytes, &s->block);
    }
    if (!s->handle) {
        tm__dealloc(s);
        return NULL;
    }
    return s;
}

tm_storage *tm_storage_wrap(void *data, size_t nbytes, tm_storage_kind kind,
                            tm_release_fn release, void *user)
{
    if ((!data && nbytes) ||
        (kind != TM_STORAGE_BORROWED && kind != TM_STORAGE_MAPPED)) {
        if (!data) TM_ERR(TM_EINVAL, "data is NULL for %zu bytes", nbytes);
        else TM_ERR(TM_EINVAL, "kind %d is not BORROWED or MAPPED", (int)kind);
        if (release) release(data, user);
        return NULL;
    }
    tm_storage *s = tm__storage_alloc(__func__);
    if (!s) {
        if (release) release(data, user);
        return NULL;
    }
    s->handle = data;
    s->nbytes = nbytes;
    s->kind = kind;
    s->ctx = tm__cpu_ctx();
    s->release = release;
    s->user = user;
    return s;
}

void tm_storage_free(tm_storage *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    switch (s->kind) {
    case TM_STORAGE_OWNED: tm__dealloc(s->handle); break;
    case TM_STORAGE_DEVICE: tm__dev_free(s->ctx, s->handle, s->block); break;
    default:
        if (s->release) s->release(s->handle, s->user);
    }
    tm__dealloc(s);
}

tm_storage *tm_storage_of(const tm_tensor *t) { return t ? t->storage : NULL; }
tm_storage_kind tm_storage_kind_of(const tm_storage *s)
{
    if (!s) {
        TM_ERR(TM_EINVAL, "storage is NULL");
        return TM_STORAGE_OWNED;
    }
    return s->kind;
}
size_t tm_storage_nbytes(const tm_storage *s) { return s ? s->nbytes : 0; }

void tm_storage_set_readonly(tm_storage *s)
{
    if (s) s->readonly = true;
}

bool tm_storage_is_readonly(const tm_storage *s)
{
    return s && s->readonly;
}

/* ---------------------------------------------------------------- tensors */

tm_tensor *tm_retain(tm_tensor *t)
{
    if (t) atomic_fetch_add(&t->refs, 1);
    return t;
}

void tm_free(tm_tensor *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    tm__ag_meta_free(t);
    tm_storage_free(t->storage);
    tm__dealloc(t);
}

void tm__contiguous_strides(const int64_t *shape, int ndim, int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

tm_status tm__check_shape(const char *fn, const int64_t *shape, int ndim,
                          tm_dtype dt, int64_t *numel)
{
    char buf[TM_SHAPE_BUF];
    if (ndim < 0 || ndim > TM_MAX_DIMS)
        return tm__errf(TM_EINVAL, fn, "ndim %d is outside [0, %d]", ndim,
                        TM_MAX_DIMS);
    if (ndim > 0 && !shape)
        return tm__errf(TM_EINVAL, fn, "shape is NULL with ndim %d", ndim);
    bool quant = tm_dtype_is_quantized(dt);
    if (!tm_dtype_is_valid(dt) && !quant)
        return tm__errf(TM_EDTYPE, fn, "dtype %d (%s) is not a dtype",
                        (int)dt, tm_dtype_name(dt));
    if (quant && ndim == 0)
        return tm__errf(TM_ESHAPE, fn, "a %s tensor needs at least 1 dim "
                        "(its values come in blocks of %lld)",
                        tm_dtype_name(dt), (long long)tm_dtype_block_elems(dt));
    /* Every dim is checked (a zero dim does not excuse a negative one),
     * and the product of the non-zero dims must fit even when a zero dim
     * makes the tensor empty: strides are products of trailing dims. */
    int64_t n = 1;
    bool overflow = false, empty = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return tm__errf(TM_EINVAL, fn, "shape %s has a negative size",
                            tm__fmt_shape(shape, ndim, buf, sizeof buf));
        if (shape[i] == 0) {
            empty = true;
            continue;
        }
        if (n > INT64_MAX / shape[i]) overflow = true;
        else n *= shape[i];
    }
    /* a quantized tensor made from a shape is contiguous: its last dim is
     * the block dim */
    if (quant && shape[ndim - 1] % tm_dtype_block_elems(dt) != 0)
        return tm__errf(TM_ESHAPE, fn, "shape %s: the last dim %lld of a %s "
                        "tensor must be a multiple of its block of %lld "
                        "values", tm__fmt_shape(shape, ndim, buf, sizeof buf),
                        (long long)shape[ndim - 1], tm_dtype_name(dt),
                        (long long)tm_dtype_block_elems(dt));
    size_t per = tm_dtype_block_bytes(dt);
    uint64_t units = quant ? (uint64_t)n / (uint64_t)tm_dtype_block_elems(dt)
                           : (uint64_t)n;
    if (overflow || (!empty && units > SIZE_MAX / per))
        return tm__errf(TM_EOVERFLOW, fn,
                        "shape %s: element count overflows",
                        tm__fmt_shape(shape, ndim, buf, sizeof buf));
    if (empty) n = 0;
    if (numel) *numel = n;
    return TM_OK;
}

tm_status tm__wrap_dim(const char *fn, int dim, int ndim, int *out)
{
    int lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
    if (dim < lo || dim > hi)
        return tm__errf(TM_ERANGE, fn,
                        "dim %d is out of range for a %d-d tensor "
                        "(expected [%d, %d])", dim, ndim, lo, hi);
    *out = dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
    return TM_OK;
}

tm_status tm__check_tensor(const char *fn, const tm_tensor *t,
                           const char *what)
{
    if (!t) return tm__errf(TM_EINVAL, fn, "%s is NULL", what);
    return TM_OK;
}

tm_status tm__check_source(const char *fn, const tm_tensor *src)
{
    if (tm__ag_requires(src))
        return tm__errf(TM_EUNSUPPORTED, fn,
                        "in-place write from a tensor that requires grad "
                        "while grad mode is on: in-place ops record no "
                        "gradient, so its gradient would be lost; use the "
                        "out-of-place op");
    return TM_OK;
}

tm_status tm__check_writable(const char *fn, const tm_tensor *t)
{
    if (t->storage->readonly)
        return tm__errf(TM_ESTATE, fn,
                        "cannot write into read-only storage (a read-only "
                        "array or file mapping); clone the tensor first");
    if (tm__ag_requires(t))
        return tm__errf(TM_ESTATE, fn,
                        "in-place write into a tensor that requires grad "
                        "while grad mode is on (wrap parameter updates in "
                        "tm_no_grad_begin / tm_no_grad_end)");
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] > 1 && t->strides[i] == 0)
            return tm__errf(TM_EINVAL, fn,
                            "cannot write in place into an expanded tensor: "
                            "dim %d of size %lld has stride 0", i,
                            (long long)t->shape[i]);
    return TM_OK;
}

tm_status tm__check_same_device(const char *fn, const tm_tensor *const *ts,
                                int n)
{
    const tm_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (!first) first = ts[i];
        else if (!tm_device_eq(tm_device_of(ts[i]),
                              tm_device_of(first)))
            return tm__errf(TM_EDEVICE, fn,
                            "tensors are on different devices (%s and %s)",
                            tm_device_name(tm_device_of(first)),
                            tm_device_name(tm_device_of(ts[i])));
    }
    return TM_OK;
}

/* Wraps `s` (whose reference passes to the tensor) in a tensor object. */
static tm_tensor *tm__tensor_alloc(const char *fn, tm_storage *s,
                                   int64_t offset, const int64_t *shape,
                                   const int64_t *strides, int ndim,
                                   tm_dtype dt)
{
    tm_tensor *t = tm__calloc(sizeof *t, fn);
    if (!t) return NULL;
    atomic_init(&t->refs, 1);
    t->storage = s;
    t->offset = offset;
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
    }
    return t;
}

tm_tensor *tm__tensor_new(const char *fn, const int64_t *shape, int ndim,
                          tm_dtype dt, tm_device dev)
{
    int64_t numel;
    if (tm__check_shape(fn, shape, ndim, dt, &numel)) return NULL;
    int64_t strides[TM_MAX_DIMS];
    tm__contiguous_strides(shape, ndim, strides);
    tm_storage *s = tm__storage_new(fn, tm__span_bytes(dt, numel), dev);
    if (!s) return NULL;
    tm_tensor *t = tm__tensor_alloc(fn, s, 0, shape, strides, ndim, dt);
    if (!t) tm_storage_free(s);
    return t;
}

tm_tensor *tm__view_of(const char *fn, const tm_tensor *base,
                       const int64_t *shape, const int64_t *strides, int ndim,
                       int64_t offset)
{
    /* every view of a quantized tensor passes here: the one place that
     * refuses those splitting blocks */
    if (tm_dtype_is_quantized(base->dtype) &&
        tm__q_check_geometry(fn, base->dtype, shape, strides, ndim, offset))
        return NULL;
    atomic_fetch_add(&base->storage->refs, 1);
    tm_tensor *t = tm__tensor_alloc(fn, base->storage, offset, shape, strides,
                                    ndim, base->dtype);
    if (!t) tm_storage_free(base->storage);
    return t;
}

tm_tensor *tm__reinterpret(const char *fn, const tm_tensor *base, tm_dtype dt,
                           const int64_t *shape, const int64_t *strides,
                           int ndim, int64_t offset)
{
    atomic_fetch_add(&base->storage->refs, 1);
    tm_tensor *t = tm__tensor_alloc(fn, base->storage, offset, shape, strides,
                                    ndim, dt);
    if (!t) tm_storage_free(base->storage);
    return t;
}

/* Elements reachable from (offset, shape, strides) lie in [lo, hi]; false
 * if the tensor is empty. */
static bool tm__extent(int64_t offset, const int64_t *shape,
                       const int64_t *strides, int ndim, int64_t *lo,
                       int64_t *hi)
{
    int64_t a = offset, b = offset;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) return false;
        int64_t span = (shape[i] - 1) * strides[i];
        if (span < 0) a += span;
        else b += span;
    }
    *lo = a;
    *hi = b;
    return true;
}

tm_tensor *tm_tensor_from_storage(tm_storage *s, int64_t offset,
                                  const int64_t *shape,
                                  const int64_t *strides, int ndim,
                                  tm_dtype dt)
{
    int64_t numel;
    if (!s) {
        TM_ERR(TM_EINVAL, "storage is NULL");
        return NULL;
    }
    bool quant = tm_dtype_is_quantized(dt);
    int64_t st[TM_MAX_DIMS];
    if (ndim < 0 || ndim > TM_MAX_DIMS || (ndim > 0 && !shape) || !quant) {
        /* the dense path (and the messages for bad ndim / shape) */
        if (tm__check_shape(__func__, shape, ndim, dt, &numel)) return NULL;
    }
    if (strides) memcpy(st, strides, sizeof(int64_t) * (size_t)ndim);
    else tm__contiguous_strides(shape, ndim, st);
    if (quant) {
        /* the block dim may be any dim of stride 1: check with it last */
        int bd = tm__q_block_dim(dt, shape, st, ndim);
        int64_t sh[TM_MAX_DIMS];
        memcpy(sh, shape, sizeof(int64_t) * (size_t)ndim);
        if (bd >= 0) {
            sh[bd] = shape[ndim - 1];
            sh[ndim - 1] = shape[bd];
        }
        if (tm__check_shape(__func__, sh, ndim, dt, &numel) ||
            tm__q_check_geometry(__func__, dt, shape, st, ndim,
                                 offset < 0 ? 0 : offset))
            return NULL;
    }
    /* blocks hold halves (Q8_K a float): on the host their address must
     * suit them, or reading them is undefined behaviour */
    size_t qalign = dt == TM_Q8_K ? 4 : 2;
    if (quant && offset >= 0 && s->ctx->device.type == TM_DEVICE_CPU &&
        ((uintptr_t)s->handle + tm__q_byte_offset(dt, offset)) % qalign) {
        TM_ERR(TM_EINVAL, "%s blocks at address %p are not %zu-byte "
               "aligned", tm_dtype_name(dt),
               (void *)((char *)s->handle + tm__q_byte_offset(dt, offset)),
               qalign);
        return NULL;
    }
    /* capacity in values: a quantized storage holds whole blocks */
    int64_t cap = quant ? (int64_t)(s->nbytes / tm_dtype_block_bytes(dt)) *
                              tm_dtype_block_elems(dt)
                        : (int64_t)(s->nbytes / tm_dtype_size(dt));
    if (offset < 0) {
        TM_ERR(TM_ERANGE, "offset %lld is negative", (long long)offset);
        return NULL;
    }
    for (int i = 0; i < ndim; i++) {
        /* strides up to the storage's element count cannot overflow the
         * extent computation below (shape * stride <= numel * cap).  A
         * view without elements reaches no storage and has no extent, so
         * only the sign of its strides is checked: an empty tensor's own
         * contiguous strides exceed its empty storage. */
        if (st[i] < 0 || (numel > 0 && shape[i] > 1 && st[i] > cap)) {
            TM_ERR(TM_ERANGE, "stride %lld of dim %d is outside [0, %lld]",
                   (long long)st[i], i, (long long)cap);
            return NULL;
        }
        /* keeps the extent sum below from overflowing: each term must stay
         * under 2^62 / TM_MAX_DIMS */
        if (numel > 0 && st[i] > 0 &&
            shape[i] - 1 > ((INT64_MAX / 2) / TM_MAX_DIMS) / st[i]) {
            TM_ERR(TM_ERANGE, "dim %d of size %lld with stride %lld spans "
                   "more than the storage", i, (long long)shape[i],
                   (long long)st[i]);
            return NULL;
        }
    }
    int64_t lo, hi;
    if (tm__extent(offset, shape, st, ndim, &lo, &hi) &&
        hi >= cap) {
        TM_ERR(TM_ERANGE, "view reaches element %lld but storage holds %lld "
               "elements of %s", (long long)hi, (long long)cap,
               tm_dtype_name(dt));
        return NULL;
    }
    atomic_fetch_add(&s->refs, 1);
    tm_tensor *t = tm__tensor_alloc(__func__, s, offset, shape, st, ndim, dt);
    if (!t) tm_storage_free(s);
    return t;
}

bool tm__may_overlap(const tm_tensor *a, const tm_tensor *b)
{
    if (a->storage != b->storage) return false;
    int64_t alo, ahi, blo, bhi;
    if (!tm__extent(a->offset, a->shape, a->strides, a->ndim, &alo, &ahi) ||
        !tm__extent(b->offset, b->shape, b->strides, b->ndim, &blo, &bhi))
        return false;
    int64_t a0 = (int64_t)tm__q_byte_offset(a->dtype, alo);
    int64_t a1 = (int64_t)tm__span_bytes(a->dtype, ahi + 1);
    int64_t b0 = (int64_t)tm__q_byte_offset(b->dtype, blo);
    int64_t b1 = (int64_t)tm__span_bytes(b->dtype, bhi + 1);
    return a0 < b1 && b0 < a1;
}

/* ---------------------------------------------------------------- getters */

int tm_ndim(const tm_tensor *t) { return t ? t->ndim : 0; }
const int64_t *tm_shape(const tm_tensor *t) { return t ? t->shape : NULL; }
const int64_t *tm_strides(const tm_tensor *t) { return t ? t->strides : NULL; }

int64_t tm_size(const tm_tensor *t, int dim)
{
    int d;
    if (tm__check_tensor(__func__, t, "tensor") ||
        tm__wrap_dim(__func__, dim, t->ndim, &d) || t->ndim == 0)
        return -1;
    return t->shape[d];
}

int64_t tm_stride(const tm_tensor *t, int dim)
{
    int d;
    if (tm__check_tensor(__func__, t, "tensor") ||
        tm__wrap_dim(__func__, dim, t->ndim, &d) || t->ndim == 0)
        return -1;
    return t->strides[d];
}

int64_t tm_numel(const tm_tensor *t)
{
    if (!t) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t tm_nbytes(const tm_tensor *t)
{
    return t ? tm__span_bytes(t->dtype, tm_numel(t)) : 0;
}

int64_t tm_offset(const tm_tensor *t) { return t ? t->offset : 0; }
tm_dtype tm_dtype_of(const tm_tensor *t) { return t ? t->dtype : TM_F32; }

tm_device tm_device_of(const tm_tensor *t)
{
    return t ? t->storage->ctx->device : TM_CPU;
}

void *tm_data(const tm_tensor *t)
{
    if (!t || !t->storage->handle) return NULL;
    if (!tm__on_cpu(t)) {
        TM_ERR(TM_EDEVICE, "tensor is on %s, whose memory the host cannot "
               "read: copy it with tm_to(t, TM_CPU) first",
               tm_device_name(tm_device_of(t)));
        return NULL;
    }
    return (char *)t->storage->handle + tm__q_byte_offset(t->dtype, t->offset);
}

bool tm_is_contiguous(const tm_tensor *t)
{
    if (!t) return false;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0) return true;
        if (t->shape[i] != 1 && t->strides[i] != expect) return false;
        expect *= t->shape[i];
    }
    return true;
}

char *tm_describe(const tm_tensor *t, char *buf, size_t size)
{
    char s[TM_SHAPE_BUF], st[TM_SHAPE_BUF];
    if (!buf || !size) return buf;
    if (!t) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    tm__fmt_shape(t->shape, t->ndim, s, sizeof s);
    if (tm_is_contiguous(t))
        snprintf(buf, size, "%s%s", tm_dtype_name(t->dtype), s);
    else
        snprintf(buf, size, "%s%s, strides %s", tm_dtype_name(t->dtype), s,
                 tm__fmt_shape(t->strides, t->ndim, st, sizeof st));
    return buf;
}

/* ------------------------------------------------------------ kernel view */

tm_buf tm__buf(const tm_tensor *t) { return tm__buf_bcast(t, NULL, 0); }

tm_buf tm__buf_bcast(const tm_tensor *t, const int64_t *shape, int ndim)
{
    tm_buf b;
    memset(&b, 0, sizeof b);
    b.handle = t->storage->handle;
    b.offset = tm__q_byte_offset(t->dtype, t->offset);
    b.dtype = t->dtype;
    if (!shape) {
        b.ndim = t->ndim;
        for (int i = 0; i < t->ndim; i++) {
            b.shape[i] = t->shape[i];
            b.strides[i] = t->strides[i];
        }
        return b;
    }
    b.ndim = ndim;
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        b.shape[i] = shape[i];
        int j = i - lead;
        b.strides[i] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
    }
    return b;
}
