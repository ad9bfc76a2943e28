/* pool.c — max and average pooling over 1 to 3 spatial dims
 * (tm_max_pool_nd, tm_avg_pool_nd, and the 2-D forms tm_max_pool2d /
 * tm_avg_pool2d): validation, PyTorch's output sizes (ceil mode
 * included), geometry, and the backward ("MaxPool<k>DBackward",
 * "AvgPool<k>DBackward").  The window loops are the backend's pool /
 * pool_backward entries (contracts in foundry/backend.h; the CPU's in
 * cpu/cpu_pool.c): the front end makes x contiguous in the compute dtype
 * (F64 for F64 and integer averages, I64 for integer maxima, F32
 * otherwise), allocates the results on
 * x's device and sees x [N, C, *S] as N*C planes (P, D, H, W), missing
 * spatial dims being 1.  Max pooling keeps, per output element, the flat
 * index of its maximum within the plane in an I64 tensor saved for
 * backward.  A batchless x [C, *S] is pooled as [1, C, *S]. */
#include "foundry/nn_functional.h"

#include <stdio.h>

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

tm_pool2d_opts tm_pool2d_defaults(void)
{
    tm_pool2d_opts o = {{2, 2}, {0, 0}, {0, 0}, true};
    return o;
}

tm_pool_opts tm_pool_defaults(void)
{
    tm_pool_opts o = {{2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, false,
                      true, 0};
    return o;
}

/* PyTorch's pooling_output_shape: the floor (or ceil) of the window
 * count, the last ceil-mode window kept only if it starts inside the
 * input or its left padding. */
static int64_t pl_out_size(int64_t n, int64_t k, int64_t s, int64_t p,
                           int64_t dil, bool ceil_mode)
{
    int64_t num = n + 2 * p - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    /* floor division (num may be negative) */
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= n + p) o--;
    return o;
}

/* Checks the settings against x [N, C, *S] (nsp spatial dims) and fills
 * q; is_max selects which of PyTorch's checks apply. */
static tm_status pl_geometry(const char *fn, const tm_tensor *x, int nsp,
                             const tm_pool_opts *o, bool is_max,
                             tm_pool_geom *q)
{
    char sx[TM_SHAPE_BUF];
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    int64_t sz[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1};
    int64_t pd[3] = {0, 0, 0}, dl[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i; /* the spatial dims fill (D, H, W) from W */
        sz[j] = x->shape[2 + i];
        k[j] = o->kernel[i];
        st[j] = o->stride[i] ? o->stride[i] : o->kernel[i];
        pd[j] = o->padding[i];
        dl[j] = is_max ? o->dilation[i] : 1;
        if (k[j] < 1)
            return tm__errf(TM_EINVAL, fn, "kernel must be >= 1, got %lld "
                            "in spatial dim %d", (long long)k[j], i);
        if (o->stride[i] < 0)
            return tm__errf(TM_EINVAL, fn, "stride must be >= 1 (or 0 for "
                            "the kernel size), got %lld in spatial dim %d",
                            (long long)o->stride[i], i);
        if (dl[j] < 1)
            return tm__errf(TM_EINVAL, fn, "dilation must be >= 1, got %lld "
                            "in spatial dim %d", (long long)dl[j], i);
        /* PyTorch bounds the padding by the kernel, not the dilated
         * window */
        if (pd[j] < 0 || pd[j] > k[j] / 2)
            return tm__errf(TM_EINVAL, fn, "padding %lld of spatial dim %d "
                            "must be >= 0 and at most half of the kernel "
                            "size %lld", (long long)pd[j], i,
                            (long long)k[j]);
        if (!is_max && o->dilation[i] != 1 && o->dilation[i] != 0)
            return tm__errf(TM_EINVAL, fn, "average pooling has no "
                            "dilation, got %lld", (long long)o->dilation[i]);
        out[j] = pl_out_size(sz[j], k[j], st[j], pd[j], dl[j], o->ceil_mode);
        if (out[j] < 1)
            return tm__errf(TM_ESHAPE, fn, "x %s: spatial dim %d of size "
                            "%lld gives output size %lld (kernel %lld, "
                            "stride %lld, padding %lld, dilation %lld): "
                            "output size is too small", sx, i,
                            (long long)sz[j], (long long)out[j],
                            (long long)k[j], (long long)st[j],
                            (long long)pd[j], (long long)dl[j]);
    }
    if (!is_max && o->divisor_override < 0)
        return tm__errf(TM_EINVAL, fn, "divisor_override must be > 0 (or 0 "
                        "for none), got %lld",
                        (long long)o->divisor_override);
    *q = (tm_pool_geom){x->shape[0] * x->shape[1], sz[1], sz[2], out[1],
                        out[2], k[1], k[2], st[1], st[2], pd[1], pd[2],
                        o->count_include_pad, sz[0], out[0], k[0], st[0],
                        pd[0], dl[0], dl[1], dl[2],
                        is_max ? 0 : o->divisor_override};
    return TM_OK;
}

/* t as a contiguous tensor of dtype dt (a new reference). */
static tm_tensor *pl_dense(const tm_tensor *t, tm_dtype dt)
{
    tm_tensor *a = tm__sc_as(t, dt);
    if (!a || tm_is_contiguous(a)) return a;
    tm_tensor *c = tm_contiguous(a);
    tm_free(a);
    return c;
}

/* The kernel view of contiguous t [N, C, *S] as (P, D, H, W) planes;
 * (pd, ph, pw) the plane's dims. */
static tm_buf pl_planes(const tm_tensor *t, int64_t pd, int64_t ph,
                        int64_t pw)
{
    tm_buf b = tm__buf(t);
    b.ndim = 4;
    b.shape[0] = t->shape[0] * t->shape[1];
    b.shape[1] = pd, b.shape[2] = ph, b.shape[3] = pw;
    tm__contiguous_strides(b.shape, 4, b.strides);
    return b;
}

/* ------------------------------------------------------------ backward */

/* A pooling's node: the geometry, and whether it takes the max (then the
 * argmax indices are saved in slot 0) or the average. */
typedef struct {
    tm_pool_geom q;
    bool is_max;
} pool_args;

static tm_status pool_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    const pool_args *p = TM__AG_ARGS(n, pool_args);
    tm__scratch s = {0};
    const tm__edge *e = &n->edges[0];
    const tm_pool_geom *q = &p->q;
    tm_dtype dt = e->dtype == TM_F64 ? TM_F64 : TM_F32;
    tm_tensor *gc = tm__sc_keep(&s, pl_dense(g, dt));
    tm_tensor *dx = tm__sc_keep(&s, tm__tensor_new(n->name, e->shape,
                                                   e->ndim, dt,
                                                   tm_device_of(g)));
    tm_tensor *ix = NULL;
    if (p->is_max)
        ix = tm__sc_keep(&s, pl_dense(tm__ag_saved(n, 0), TM_I64));
    if (s.st) return tm__sc_done(&s, n->name);
    if (tm_numel(dx) > 0) {
        tm_buf db = pl_planes(dx, q->d, q->h, q->w);
        tm_buf gb = pl_planes(gc, q->od, q->oh, q->ow), ib = {0};
        if (ix) ib = pl_planes(ix, q->od, q->oh, q->ow);
        tm__stage sg = {0};
        tm__stage_out(&sg, &db);
        tm__stage_in(&sg, &gb);
        tm__stage_in(&sg, &ib);
        if (TM__CALL_STAGED(n->name, tm__ctx(dx), &sg, POOL_BACKWARD, 0,
                            pool_backward, &db, &gb, &ib, q, p->is_max)) {
            tm__sc_keep(&s, NULL);
            return tm__sc_done(&s, n->name);
        }
    }
    tm_tensor *r = tm__sc_keep(&s, tm__sc_as(dx, e->dtype));
    if (r) gin[0] = tm_retain(r);
    return tm__sc_done(&s, n->name);
}

/* ------------------------------------------------------------- forward */

static const char *const pl_names[2][3] = {
    {"AvgPool1DBackward", "AvgPool2DBackward", "AvgPool3DBackward"},
    {"MaxPool1DBackward", "MaxPool2DBackward", "MaxPool3DBackward"}};

/* The pooling of batched x [N, C, *S]; *indices (max) gets the argmax. */
static tm_tensor *pl_batched(const char *fn, const tm_tensor *x, int nsp,
                             const tm_pool_opts *o, bool is_max,
                             tm_tensor **indices)
{
    tm_tensor *xc = NULL, *yc = NULL, *ix = NULL, *y = NULL;
    tm_pool_geom q;
    if (pl_geometry(fn, x, nsp, o, is_max, &q)) return NULL;
    bool fl = tm_dtype_is_float(x->dtype);
    /* integers: max pooling in I64 (exact), averages in F64 */
    tm_dtype dt = x->dtype == TM_F32 || x->dtype == TM_F16 ||
                          x->dtype == TM_BF16 ? TM_F32
                  : !fl && is_max ? TM_I64 : TM_F64;
    int64_t shape[5] = {x->shape[0], x->shape[1]}, o3[3] = {q.od, q.oh, q.ow};
    for (int i = 0; i < nsp; i++) shape[2 + i] = o3[3 - nsp + i];
    bool prev = tm_no_grad_begin();
    tm_device dev = tm_device_of(x);
    yc = tm__tensor_new(fn, shape, 2 + nsp, dt, dev);
    if (is_max && yc) ix = tm__tensor_new(fn, shape, 2 + nsp, TM_I64, dev);
    if (!yc || (is_max && !ix)) goto fail;
    if (tm_numel(yc) > 0) {
        xc = pl_dense(x, dt);
        if (!xc) goto fail;
        tm_buf yb = pl_planes(yc, q.od, q.oh, q.ow);
        tm_buf xb = pl_planes(xc, q.d, q.h, q.w), ib = {0};
        if (ix) ib = pl_planes(ix, q.od, q.oh, q.ow);
        tm__stage sg = {0};
        tm__stage_out(&sg, &yb);
        tm__stage_out(&sg, &ib);
        tm__stage_in(&sg, &xb);
        if (TM__CALL_STAGED(fn, tm__ctx(yc), &sg, POOL, 0, pool, &yb, &ib,
                            &xb, &q, is_max))
            goto fail;
    }
    /* integer averages truncate toward zero, as PyTorch's integer
     * division does; a max window with no tap inside x (dilation) holds
     * INT64_MIN, which becomes the narrower dtype's lowest value */
    if (!fl && (!is_max || x->dtype != TM_I64)) {
        double lo = x->dtype == TM_I8 ? -128 : x->dtype == TM_I16 ? -32768
                  : x->dtype == TM_I32 ? -2147483648.0 : 0;
        tm_tensor *t = is_max ? tm_clamp(yc, lo, 1e300) : tm_trunc(yc);
        if (!t) goto fail;
        tm_free(yc);
        yc = t;
    }
    y = dt == x->dtype ? tm_retain(yc) : tm_to_dtype(yc, x->dtype);
    if (!y) goto fail;
    tm_no_grad_end(prev);
    tm_free(xc), tm_free(yc);
    pool_args p = {q, is_max};
    tm__record r = {.name = pl_names[is_max][nsp - 1],
                    .backward = pool_backward, .nin = 1, .in = &x,
                    .save = {is_max ? ix : NULL}, .args = &p,
                    .args_size = sizeof p};
    if (fl && tm__ag_record(&r, y)) goto fail_y;
    if (indices) *indices = ix;
    else tm_free(ix);
    return y;
fail:
    tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
    tm_free(xc), tm_free(yc);
fail_y:
    tm_free(ix);
    tm_free(y);
    return NULL;
}

/* Validates x's rank, dtype and sizes, and pools it (batchless x through
 * a leading dim of 1). */
static tm_tensor *pl_pool(const char *fn, const tm_tensor *x, int nsp,
                          const tm_pool_opts *opts, bool is_max,
                          tm_tensor **indices)
{
    tm_pool_opts o = opts ? *opts : tm_pool_defaults();
    tm_tensor *xb = NULL, *yb = NULL, *ib = NULL, *y = NULL, *ix = NULL;
    if (indices) *indices = NULL;
    if (tm__check_tensor(fn, x, "x")) return NULL;
    if (nsp < 1 || nsp > 3) {
        tm__errf(TM_EINVAL, fn, "spatial dims must be 1, 2 or 3, got %d",
                 nsp);
        return NULL;
    }
    if (!tm_dtype_is_float(x->dtype) && !tm_dtype_is_integer(x->dtype)) {
        tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: a float or "
                 "integer dtype is needed", tm_dtype_name(x->dtype));
        return NULL;
    }
    char sx[TM_SHAPE_BUF];
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    bool batched = x->ndim == nsp + 2;
    if (x->ndim != nsp + 1 && !batched) {
        tm__errf(TM_ESHAPE, fn, "x must be %dD or %dD (batch mode), got "
                 "shape %s", nsp + 1, nsp + 2, sx);
        return NULL;
    }
    for (int i = batched ? 1 : 0; i < x->ndim; i++)
        if (x->shape[i] == 0) {
            tm__errf(TM_ESHAPE, fn, "x %s: only the batch dim may be empty",
                     sx);
            return NULL;
        }
    if (batched) {
        y = pl_batched(fn, x, nsp, &o, is_max, indices ? &ix : NULL);
        if (indices) *indices = ix;
        return y;
    }
    xb = tm_unsqueeze(x, 0);
    if (!xb) goto fail;
    yb = pl_batched(fn, xb, nsp, &o, is_max, indices ? &ib : NULL);
    if (!yb) goto fail;
    y = tm_squeeze(yb, 0);
    if (!y) goto fail;
    if (indices) {
        ix = tm_squeeze(ib, 0);
        if (!ix) goto fail;
        *indices = ix;
    }
    tm_free(xb), tm_free(yb), tm_free(ib);
    return y;
fail:
    tm__relabel_error(fn, tm_last_status());
    tm_free(xb), tm_free(yb), tm_free(ib), tm_free(y);
    return NULL;
}

tm_tensor *tm_max_pool_nd(const tm_tensor *x, int dims,
                          const tm_pool_opts *opts, tm_tensor **indices)
{
    return pl_pool(__func__, x, dims, opts, true, indices);
}

tm_tensor *tm_avg_pool_nd(const tm_tensor *x, int dims,
                          const tm_pool_opts *opts)
{
    return pl_pool(__func__, x, dims, opts, false, NULL);
}

/* The 2-D settings as N-d ones. */
static tm_pool_opts pl_from2d(const tm_pool2d_opts *opts)
{
    tm_pool2d_opts o2 = opts ? *opts : tm_pool2d_defaults();
    tm_pool_opts o = tm_pool_defaults();
    for (int i = 0; i < 2; i++) {
        o.kernel[i] = o2.kernel[i];
        o.stride[i] = o2.stride[i];
        o.padding[i] = o2.padding[i];
    }
    o.count_include_pad = o2.count_include_pad;
    return o;
}

tm_tensor *tm_max_pool2d(const tm_tensor *x, const tm_pool2d_opts *opts)
{
    tm_pool_opts o = pl_from2d(opts);
    return pl_pool(__func__, x, 2, &o, true, NULL);
}

tm_tensor *tm_avg_pool2d(const tm_tensor *x, const tm_pool2d_opts *opts)
{
    tm_pool_opts o = pl_from2d(opts);
    return pl_pool(__func__, x, 2, &o, false, NULL);
}
