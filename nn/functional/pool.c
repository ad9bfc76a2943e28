/* pool.c — tm_max_pool2d and tm_avg_pool2d: validation, geometry and
 * their backward ("MaxPool2DBackward", "AvgPool2DBackward").  The window
 * loops are the backend's pool / pool_backward entries (contracts in
 * foundry/backend.h; the CPU's in cpu/cpu_pool.c): the front end makes x
 * contiguous in the compute dtype (F64 for F64, F32 otherwise), allocates
 * the results on x's device and sees x [N, C, H, W] as N*C planes.  Max
 * pooling keeps, per output element, the flat index y*W + x of its
 * maximum in an I64 tensor saved for backward.  No element memory is
 * touched here, so any device with those entries runs it. */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

tm_pool2d_opts tm_pool2d_defaults(void)
{
    tm_pool2d_opts o = {{2, 2}, {0, 0}, {0, 0}, true};
    return o;
}

/* Checks the settings against x and fills q (stride 0 -> kernel). */
static tm_status pl_geometry(const char *fn, const tm_tensor *x,
                             const tm_pool2d_opts *o, tm_pool_geom *q)
{
    char sx[TM_SHAPE_BUF];
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    if (x->ndim != 4)
        return tm__errf(TM_ESHAPE, fn, "x must be [N,C,H,W], got shape %s",
                        sx);
    int64_t s[2];
    for (int d = 0; d < 2; d++) {
        if (o->kernel[d] < 1)
            return tm__errf(TM_EINVAL, fn, "kernel must be >= 1, got "
                            "{%lld,%lld}", (long long)o->kernel[0],
                            (long long)o->kernel[1]);
        if (o->stride[d] < 0)
            return tm__errf(TM_EINVAL, fn, "stride must be >= 1 (or 0 for "
                            "the kernel size), got {%lld,%lld}",
                            (long long)o->stride[0], (long long)o->stride[1]);
        if (o->padding[d] < 0 || o->padding[d] > o->kernel[d] / 2)
            return tm__errf(TM_EINVAL, fn, "padding {%lld,%lld} must be >= 0 "
                            "and at most half of the kernel {%lld,%lld}",
                            (long long)o->padding[0], (long long)o->padding[1],
                            (long long)o->kernel[0], (long long)o->kernel[1]);
        s[d] = o->stride[d] ? o->stride[d] : o->kernel[d];
    }
    *q = (tm_pool_geom){x->shape[0] * x->shape[1], x->shape[2],
                        x->shape[3], 0, 0, o->kernel[0], o->kernel[1], s[0],
                        s[1], o->padding[0], o->padding[1],
                        o->count_include_pad};
    int64_t hp = q->h + 2 * q->ph, wp = q->w + 2 * q->pw;
    if (q->kh > hp || q->kw > wp)
        return tm__errf(TM_ESHAPE, fn, "kernel %lldx%lld does not fit the "
                        "padded input %lldx%lld of x %s", (long long)q->kh,
                        (long long)q->kw, (long long)hp, (long long)wp, sx);
    q->oh = (hp - q->kh) / q->sh + 1;
    q->ow = (wp - q->kw) / q->sw + 1;
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

/* The kernel view of contiguous t [N, C, A, B] as (N*C, A, B) planes. */
static tm_buf pl_planes(const tm_tensor *t)
{
    tm_buf b = tm__buf(t);
    b.ndim = 3;
    b.shape[0] = t->shape[0] * t->shape[1];
    b.shape[1] = t->shape[2];
    b.shape[2] = t->shape[3];
    tm__contiguous_strides(b.shape, 3, b.strides);
    return b;
}

/* ------------------------------------------------------------ backward */

/* A pooling's node: the window, and whether it takes the max (then the
 * argmax indices are saved in slot 0) or the average. */
typedef struct {
    int64_t kh, kw, sh, sw, ph, pw;
    bool include_pad, is_max;
} pool_args;

static tm_status pool_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    const pool_args *p = TM__AG_ARGS(n, pool_args);
    tm__scratch s = {0};
    const tm__edge *e = &n->edges[0];
    bool is_max = p->is_max;
    tm_dtype dt = e->dtype == TM_F64 ? TM_F64 : TM_F32;
    tm_pool_geom q = {e->shape[0] * e->shape[1], e->shape[2], e->shape[3],
                      tm_shape(g)[2], tm_shape(g)[3], p->kh, p->kw, p->sh,
                      p->sw, p->ph, p->pw, p->include_pad};
    tm_tensor *gc = tm__sc_keep(&s, pl_dense(g, dt));
    tm_tensor *dx = tm__sc_keep(&s, tm__tensor_new(n->name, e->shape, 4, dt,
                                                   tm_device_of(g)));
    tm_tensor *ix = NULL;
    if (is_max)
        ix = tm__sc_keep(&s, pl_dense(tm__ag_saved(n, 0), TM_I64));
    if (s.st) return tm__sc_done(&s, n->name);
    if (tm_numel(dx) > 0) {
        tm_buf db = pl_planes(dx), gb = pl_planes(gc), ib = {0};
        if (ix) ib = pl_planes(ix);
        tm__stage sg = {0};
        tm__stage_out(&sg, &db);
        tm__stage_in(&sg, &gb);
        tm__stage_in(&sg, &ib);
        if (TM__CALL_STAGED(n->name, tm__ctx(dx), &sg, POOL_BACKWARD, 0,
                            pool_backward, &db, &gb, &ib, &q, is_max)) {
            tm__sc_keep(&s, NULL);
            return tm__sc_done(&s, n->name);
        }
    }
    tm_tensor *r = tm__sc_keep(&s, tm__sc_as(dx, e->dtype));
    if (r) gin[0] = tm_retain(r);
    return tm__sc_done(&s, n->name);
}

/* ------------------------------------------------------------- forward */

static tm_tensor *pl_pool(const char *fn, const tm_tensor *x,
                          const tm_pool2d_opts *opts, bool is_max)
{
    tm_pool2d_opts o = opts ? *opts : tm_pool2d_defaults();
    tm_tensor *xc = NULL, *yc = NULL, *ix = NULL, *y = NULL;
    tm_pool_geom q;
    if (tm__check_tensor(fn, x, "x")) return NULL;
    if (!tm_dtype_is_float(x->dtype)) {
        tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: a float dtype "
                 "is needed", tm_dtype_name(x->dtype));
        return NULL;
    }
    if (pl_geometry(fn, x, &o, &q)) return NULL;
    tm_dtype dt = x->dtype == TM_F64 ? TM_F64 : TM_F32;
    int64_t shape[4] = {x->shape[0], x->shape[1], q.oh, q.ow};
    bool prev = tm_no_grad_begin();
    tm_device dev = tm_device_of(x);
    yc = tm__tensor_new(fn, shape, 4, dt, dev);
    if (is_max && yc) ix = tm__tensor_new(fn, shape, 4, TM_I64, dev);
    if (!yc || (is_max && !ix)) goto fail;
    if (tm_numel(yc) > 0) {
        xc = pl_dense(x, dt);
        if (!xc) goto fail;
        tm_buf yb = pl_planes(yc), xb = pl_planes(xc), ib = {0};
        if (ix) ib = pl_planes(ix);
        tm__stage sg = {0};
        tm__stage_out(&sg, &yb);
        tm__stage_out(&sg, &ib);
        tm__stage_in(&sg, &xb);
        if (TM__CALL_STAGED(fn, tm__ctx(yc), &sg, POOL, 0, pool, &yb, &ib,
                            &xb, &q, is_max))
            goto fail;
    }
    y = dt == x->dtype ? tm_retain(yc) : tm_to_dtype(yc, x->dtype);
    if (!y) goto fail;
    tm_no_grad_end(prev);
    tm_free(xc), tm_free(yc);
    pool_args p = {q.kh, q.kw, q.sh, q.sw, q.ph, q.pw, q.include_pad, is_max};
    tm__record r = {.name = is_max ? "MaxPool2DBackward" : "AvgPool2DBackward",
                    .backward = pool_backward, .nin = 1, .in = &x,
                    .save = {is_max ? ix : NULL}, .args = &p,
                    .args_size = sizeof p};
    if (tm__ag_record(&r, y)) goto fail_y;
    tm_free(ix);
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

tm_tensor *tm_max_pool2d(const tm_tensor *x, const tm_pool2d_opts *opts)
{
    return pl_pool(__func__, x, opts, true);
}

tm_tensor *tm_avg_pool2d(const tm_tensor *x, const tm_pool2d_opts *opts)
{
    return pl_pool(__func__, x, opts, false);
}
