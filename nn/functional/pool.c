/* pool.c — tm_max_pool2d and tm_avg_pool2d on the CPU, with their
 * backward ("MaxPool2DBackward", "AvgPool2DBackward").
 *
 * x [N, C, H, W] is processed one (n, c) plane at a time on the thread
 * pool; every output element (and, backward, every input plane) has one
 * writer, so results do not depend on the thread count.  Max pooling
 * keeps, per output element, the flat index y*W + x of its maximum in an
 * I64 tensor saved for backward. */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

#include <math.h>
#include <string.h>

tm_pool2d_opts tm_pool2d_defaults(void)
{
    tm_pool2d_opts o = {{2, 2}, {0, 0}, {0, 0}, true};
    return o;
}

typedef struct pl_geom {
    int64_t planes, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw;
    bool include_pad;
} pl_geom;

/* Checks the settings against x and fills q (stride 0 -> kernel). */
static tm_status pl_geometry(const char *fn, const tm_tensor *x,
                             const tm_pool2d_opts *o, pl_geom *q)
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
    *q = (pl_geom){x->shape[0] * x->shape[1], x->shape[2], x->shape[3], 0, 0,
                   o->kernel[0], o->kernel[1], s[0], s[1], o->padding[0],
                   o->padding[1], o->count_include_pad};
    int64_t hp = q->h + 2 * q->ph, wp = q->w + 2 * q->pw;
    if (q->kh > hp || q->kw > wp)
        return tm__errf(TM_ESHAPE, fn, "kernel %lldx%lld does not fit the "
                        "padded input %lldx%lld of x %s", (long long)q->kh,
                        (long long)q->kw, (long long)hp, (long long)wp, sx);
    q->oh = (hp - q->kh) / q->sh + 1;
    q->ow = (wp - q->kw) / q->sw + 1;
    return TM_OK;
}

/* The window of output (oy, ox), clipped to x: rows [*y0, *y1), columns
 * [*x0, *x1); returns the divisor of average pooling. */
static inline int64_t pl_window(const pl_geom *q, int64_t oy, int64_t ox,
                         int64_t *y0, int64_t *y1, int64_t *x0, int64_t *x1)
{
    int64_t ys = oy * q->sh - q->ph, xs = ox * q->sw - q->pw;
    int64_t ye = ys + q->kh, xe = xs + q->kw;
    *y0 = ys < 0 ? 0 : ys, *y1 = ye > q->h ? q->h : ye;
    *x0 = xs < 0 ? 0 : xs, *x1 = xe > q->w ? q->w : xe;
    if (q->include_pad) return q->kh * q->kw;
    return (*y1 - *y0) * (*x1 - *x0);
}

typedef struct pl_job {
    const pl_geom *q;
    const void *src;
    void *dst;
    int64_t *idx; /* max pooling: argmax per output element */
} pl_job;

/* k (all ones or zero) ? a : b on the bits. */
static inline float pl_sel_f32(int64_t k, float a, float b)
{
    uint32_t ua, ub, m = (uint32_t)k;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, 4);
    return a;
}

static inline double pl_sel_f64(int64_t k, double a, double b)
{
    uint64_t ua, ub, m = (uint64_t)k;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, 8);
    return a;
}

/* Forward (planes [p0, p1)): src x, dst y; backward: src g, dst dx
 * (zero-filled).  T is float or double. */
#define PL_DEFINE(T, S)                                                       \
    static void maxfw_##S(int64_t p0, int64_t p1, void *vj)                   \
    {                                                                         \
        const pl_job *jb = vj;                                                \
        const pl_geom *q = jb->q;                                             \
        int64_t y0, y1, x0, x1, hw = q->h * q->w, L = q->oh * q->ow;          \
        bool k22 = q->kh == 2 && q->kw == 2 && q->sh == 2 && q->sw == 2 &&   \
                   q->ph == 0 && q->pw == 0;                                  \
        for (int64_t p = p0; p < p1; p++) {                                   \
            const T *x = (const T *)jb->src + p * hw;                         \
            T *y = (T *)jb->dst + p * L;                                      \
            int64_t *ix = jb->idx + p * L;                                    \
            if (k22) { /* the common 2x2 / stride 2 window, unrolled */      \
                for (int64_t oy = 0; oy < q->oh; oy++)                        \
                    for (int64_t ox = 0; ox < q->ow; ox++) {                  \
                        int64_t i0 = 2 * oy * q->w + 2 * ox;                  \
                        int64_t at[4] = {i0, i0 + 1, i0 + q->w,               \
                                         i0 + q->w + 1};                      \
                        T m = x[i0];                                          \
                        int64_t mi = i0;                                      \
                        /* a NaN first element keeps m NaN unless a     \
                         * later NaN takes its index (as below) */      \
                        for (int t = 1; t < 4; t++) {                         \
                            T v = x[at[t]];                                   \
                            int64_t k = -(int64_t)((v > m) | (v != v));       \
                            m = pl_sel_##S(k, v, m);                          \
                            mi = (mi & ~k) | (at[t] & k);                     \
                        }                                                     \
                        y[oy * q->ow + ox] = m;                               \
                        ix[oy * q->ow + ox] = mi;                             \
                    }                                                         \
                continue;                                                     \
            }                                                                 \
            for (int64_t oy = 0; oy < q->oh; oy++)                            \
                for (int64_t ox = 0; ox < q->ow; ox++) {                      \
                    pl_window(q, oy, ox, &y0, &y1, &x0, &x1);                 \
                    T m = (T)-INFINITY;                                       \
                    int64_t mi = y0 * q->w + x0;                              \
                    for (int64_t yy = y0; yy < y1; yy++)                      \
                        for (int64_t xx = x0; xx < x1; xx++) {                \
                            T v = x[yy * q->w + xx];                          \
                            /* bitwise selects, not branches: random     \
                             * data made a branch mispredict on most     \
                             * windows (20 ns an output at 2x2) */       \
                            int64_t k = -(int64_t)((v > m) | (v != v));       \
                            m = pl_sel_##S(k, v, m);                          \
                            mi = (mi & ~k) | ((yy * q->w + xx) & k);          \
                        }                                                     \
                    y[oy * q->ow + ox] = m;                                   \
                    ix[oy * q->ow + ox] = mi;                                 \
                }                                                             \
        }                                                                     \
    }                                                                         \
    static void maxbw_##S(int64_t p0, int64_t p1, void *vj)                   \
    {                                                                         \
        const pl_job *jb = vj;                                                \
        const pl_geom *q = jb->q;                                             \
        int64_t hw = q->h * q->w, L = q->oh * q->ow;                          \
        for (int64_t p = p0; p < p1; p++) {                                   \
            const T *g = (const T *)jb->src + p * L;                          \
            T *dx = (T *)jb->dst + p * hw;                                    \
            const int64_t *ix = jb->idx + p * L;                              \
            for (int64_t l = 0; l < L; l++) dx[ix[l]] += g[l];                \
        }                                                                     \
    }                                                                         \
    static void avgfw_##S(int64_t p0, int64_t p1, void *vj)                   \
    {                                                                         \
        const pl_job *jb = vj;                                                \
        const pl_geom *q = jb->q;                                             \
        int64_t y0, y1, x0, x1, hw = q->h * q->w, L = q->oh * q->ow;          \
        for (int64_t p = p0; p < p1; p++) {                                   \
            const T *x = (const T *)jb->src + p * hw;                         \
            T *y = (T *)jb->dst + p * L;                                      \
            for (int64_t oy = 0; oy < q->oh; oy++)                            \
                for (int64_t ox = 0; ox < q->ow; ox++) {                      \
                    int64_t div = pl_window(q, oy, ox, &y0, &y1, &x0, &x1);   \
                    T acc = 0;                                                \
                    for (int64_t yy = y0; yy < y1; yy++)                      \
                        for (int64_t xx = x0; xx < x1; xx++)                  \
                            acc += x[yy * q->w + xx];                         \
                    y[oy * q->ow + ox] = acc / (T)div;                        \
                }                                                             \
        }                                                                     \
    }                                                                         \
    static void avgbw_##S(int64_t p0, int64_t p1, void *vj)                   \
    {                                                                         \
        const pl_job *jb = vj;                                                \
        const pl_geom *q = jb->q;                                             \
        int64_t y0, y1, x0, x1, hw = q->h * q->w, L = q->oh * q->ow;          \
        for (int64_t p = p0; p < p1; p++) {                                   \
            const T *g = (const T *)jb->src + p * L;                          \
            T *dx = (T *)jb->dst + p * hw;                                    \
            for (int64_t oy = 0; oy < q->oh; oy++)                            \
                for (int64_t ox = 0; ox < q->ow; ox++) {                      \
                    int64_t div = pl_window(q, oy, ox, &y0, &y1, &x0, &x1);   \
                    T v = g[oy * q->ow + ox] / (T)div;                        \
                    for (int64_t yy = y0; yy < y1; yy++)                      \
                        for (int64_t xx = x0; xx < x1; xx++)                  \
                            dx[yy * q->w + xx] += v;                          \
                }                                                             \
        }                                                                     \
    }

PL_DEFINE(float, f32)
PL_DEFINE(double, f64)
#undef PL_DEFINE

/* Runs one of the loops over all planes. */
static void pl_run(const pl_geom *q, tm__range_fn fn, const void *src,
                   void *dst, int64_t *idx)
{
    pl_job jb = {q, src, dst, idx};
    int64_t per = q->oh * q->ow * q->kh * q->kw;
    int64_t grain = 32768 / (per > 0 ? per : 1);
    tm__parallel_for(q->planes, grain > 0 ? grain : 1, fn, &jb);
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
    pl_geom q = {e->shape[0] * e->shape[1], e->shape[2], e->shape[3],
                 tm_shape(g)[2], tm_shape(g)[3], p->kh, p->kw, p->sh,
                 p->sw, p->ph, p->pw, p->include_pad};
    tm_tensor *gc = tm__sc_keep(&s, pl_dense(g, dt));
    tm_tensor *dx = tm__sc_keep(&s, tm_zeros(e->shape, 4, dt));
    tm_tensor *ix = NULL;
    if (is_max)
        ix = tm__sc_keep(&s, pl_dense(tm__ag_saved(n, 0), TM_I64));
    if (gc && dx && (!is_max || ix)) {
        tm__range_fn fn = is_max ? (dt == TM_F64 ? maxbw_f64 : maxbw_f32)
                                 : (dt == TM_F64 ? avgbw_f64 : avgbw_f32);
        pl_run(&q, fn, tm_data(gc), tm_data(dx),
               ix ? (int64_t *)tm_data(ix) : NULL);
        tm_tensor *r = tm__sc_keep(&s, tm__sc_as(dx, e->dtype));
        if (r) gin[0] = tm_retain(r);
    }
    return tm__sc_done(&s, n->name);
}

/* ------------------------------------------------------------- forward */

static tm_tensor *pl_pool(const char *fn, const tm_tensor *x,
                          const tm_pool2d_opts *opts, bool is_max)
{
    tm_pool2d_opts o = opts ? *opts : tm_pool2d_defaults();
    tm_tensor *xc = NULL, *yc = NULL, *ix = NULL, *y = NULL;
    pl_geom q;
    if (tm__check_tensor(fn, x, "x")) return NULL;
    if (!tm_dtype_is_float(x->dtype)) {
        tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: a float dtype "
                 "is needed", tm_dtype_name(x->dtype));
        return NULL;
    }
    if (tm_device_of(x) != TM_CPU) {
        tm__errf(TM_EUNSUPPORTED, fn, "device %s is not supported yet (CPU "
                 "only)", tm_device_name(tm_device_of(x)));
        return NULL;
    }
    if (pl_geometry(fn, x, &o, &q)) return NULL;
    tm_dtype dt = x->dtype == TM_F64 ? TM_F64 : TM_F32;
    int64_t shape[4] = {x->shape[0], x->shape[1], q.oh, q.ow};
    bool prev = tm_no_grad_begin();
    yc = tm_empty(shape, 4, dt);
    if (is_max && yc) ix = tm_empty(shape, 4, TM_I64);
    if (!yc || (is_max && !ix)) goto fail;
    if (tm_numel(yc) > 0) {
        xc = pl_dense(x, dt);
        if (!xc) goto fail;
        tm__range_fn f = is_max ? (dt == TM_F64 ? maxfw_f64 : maxfw_f32)
                                : (dt == TM_F64 ? avgfw_f64 : avgfw_f32);
        pl_run(&q, f, tm_data(xc), tm_data(yc),
               ix ? (int64_t *)tm_data(ix) : NULL);
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
