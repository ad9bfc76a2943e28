/* cpu_pool.c — the CPU's pool and pool_backward entries (contracts in
 * foundry/backend.h): the window loops of max and average pooling,
 * forward and backward, written once per element type in
 * cpu_pool_tmpl.h; windows with depth, dilation, a divisor override or
 * past the padded input (ceil mode) take the general loops of
 * cpu_pool_nd_tmpl.h.
 *
 * Work is split over the thread pool by (n, c) plane: every output
 * element (and, backward, every input plane) has one writer, so results
 * do not depend on the thread count. */
#include "cpu_impl.h"
#include "cpu_pool_max22.h"

#include <math.h>
#include <string.h>

typedef struct pool_job {
    const tm_pool_geom *q;
    const void *src; /* x (forward) or g (backward) */
    void *dst;       /* y (forward) or dx (backward) */
    int64_t *argmax;          /* max pooling forward: written */
    const int64_t *argmax_in; /* max pooling backward: read */
} pool_job;

/* The window of output (oy, ox), clipped to x: rows [*y0, *y1), columns
 * [*x0, *x1); returns the divisor of average pooling. */
static inline int64_t pool_window(const tm_pool_geom *q, int64_t oy,
                                  int64_t ox, int64_t *y0, int64_t *y1,
                                  int64_t *x0, int64_t *x1)
{
    int64_t ys = oy * q->sh - q->ph, xs = ox * q->sw - q->pw;
    int64_t ye = ys + q->kh, xe = xs + q->kw;
    *y0 = ys < 0 ? 0 : ys, *y1 = ye > q->h ? q->h : ye;
    *x0 = xs < 0 ? 0 : xs, *x1 = xe > q->w ? q->w : xe;
    if (q->include_pad) return q->kh * q->kw;
    return (*y1 - *y0) * (*x1 - *x0);
}

/* k (all ones or zero) ? a : b on the bits. */
static inline float pool_sel_f32(int64_t k, float a, float b)
{
    uint32_t ua, ub, m = (uint32_t)k;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, 4);
    return a;
}

static inline double pool_sel_f64(int64_t k, double a, double b)
{
    uint64_t ua, ub, m = (uint64_t)k;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, 8);
    return a;
}

/* One axis of an average window: output o's window clipped to the
 * padded input (returned: its length, the include_pad divisor's factor)
 * and to x ([*a, *b)). */
static inline int64_t pool_axis(int64_t o, int64_t s, int64_t p, int64_t k,
                                int64_t n, int64_t *a, int64_t *b)
{
    int64_t start = o * s - p, end = start + k;
    if (end > n + p) end = n + p;
    *a = start < 0 ? 0 : start;
    *b = end > n ? n : end;
    return end - start;
}

/* The average window of output (oz, oy, ox), clipped to x: [z0, z1) x
 * [y0, y1) x [x0, x1) in r[0..5]; returned: its divisor (0 or less for a
 * window that x clips away entirely). */
static inline int64_t pool_avg_window(const tm_pool_geom *q, int64_t oz,
                                      int64_t oy, int64_t ox, int64_t r[6])
{
    int64_t div = pool_axis(oz, q->sd, q->pd, q->kd, q->d, &r[0], &r[1]) *
                  pool_axis(oy, q->sh, q->ph, q->kh, q->h, &r[2], &r[3]) *
                  pool_axis(ox, q->sw, q->pw, q->kw, q->w, &r[4], &r[5]);
    if (!q->include_pad) div = (r[1] - r[0]) * (r[3] - r[2]) * (r[5] - r[4]);
    if (q->divisor > 0) div = q->divisor;
    return div;
}

#define T float
#define SUF f32
#define LOWEST (-INFINITY)
#include "cpu_pool_tmpl.h"
#include "cpu_pool_nd_tmpl.h"
#undef T
#undef SUF
#undef LOWEST

#define T double
#define SUF f64
#define LOWEST (-INFINITY)
#include "cpu_pool_tmpl.h"
#include "cpu_pool_nd_tmpl.h"
#undef T
#undef SUF
#undef LOWEST

/* Integer max pooling: every integer dtype is pooled as I64 (exact). */
#define T int64_t
#define SUF i64
#define LOWEST INT64_MIN
#define PND_MAX_ONLY
#include "cpu_pool_nd_tmpl.h"
#undef PND_MAX_ONLY
#undef T
#undef SUF
#undef LOWEST

static void pool_max22_f32(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    tm__pool_max22_f32(jb->q, jb->src, jb->dst, jb->argmax, p0, p1);
}

/* Runs one of the loops over all planes, at least about 32768 window
 * elements per thread. */
static void pool_run(const tm_pool_geom *q, tm__range_fn fn, pool_job *jb)
{
    int64_t per = q->od * q->oh * q->ow * q->kd * q->kh * q->kw;
    int64_t grain = 32768 / (per > 0 ? per : 1);
    tm__parallel_for(q->planes, grain > 0 ? grain : 1, fn, jb);
}

/* Whether the 2-D loops of cpu_pool_tmpl.h serve q: no depth, dilation
 * or divisor override, and every window inside the padded input. */
static bool pool_plain(const tm_pool_geom *q)
{
    return q->d == 1 && q->od == 1 && q->kd == 1 && q->dh == 1 &&
           q->dw == 1 && q->divisor == 0 &&
           (q->oh - 1) * q->sh + q->kh <= q->h + 2 * q->ph &&
           (q->ow - 1) * q->sw + q->kw <= q->w + 2 * q->pw;
}

/* x is (P, D, H, W), y and argmax are (P, OD, OH, OW), F32, F64 or (max
 * only) I64: y = the window's max (NaN
 * if the window holds one: the last NaN's index is kept), argmax = its
 * flat index yy*W + xx within the plane; or (is_max false) y = the
 * window's sum / divisor. */
tm_status tm__cpu_pool(tm_ctx *ctx, const tm_buf *y, const tm_buf *argmax,
                       const tm_buf *x, const tm_pool_geom *q, bool is_max)
{
    (void)ctx;
    bool f64 = y->dtype == TM_F64;
    pool_job jb = {q, tm__ptr(x), tm__ptr(y), NULL, NULL};
    bool plain = pool_plain(q);
    if (is_max && y->dtype == TM_I64) {
        jb.argmax = tm__ptr(argmax);
        pool_run(q, pool_nd_max_i64, &jb);
    } else if (is_max) {
        jb.argmax = tm__ptr(argmax);
        if (plain)
            pool_run(q, f64                       ? pool_max_f64
                        : tm__pool_max22_ok(q) ? pool_max22_f32
                                               : pool_max_f32,
                     &jb);
        else
            pool_run(q, f64 ? pool_nd_max_f64 : pool_nd_max_f32, &jb);
    } else if (plain) {
        pool_run(q, f64 ? pool_avg_f64 : pool_avg_f32, &jb);
    } else {
        pool_run(q, f64 ? pool_nd_avg_f64 : pool_nd_avg_f32, &jb);
    }
    return TM_OK;
}

/* g and argmax are (P, OD, OH, OW), dx is (P, D, H, W): dx is zeroed, then max
 * pooling adds g[p, l] at dx[p, argmax[p, l]] in order of l, and average
 * pooling gives every x of the window of (oy, ox) g[oy, ox] / divisor,
 * outputs in row-major order. */
tm_status tm__cpu_pool_backward(tm_ctx *ctx, const tm_buf *dx,
                                const tm_buf *g, const tm_buf *argmax,
                                const tm_pool_geom *q, bool is_max)
{
    (void)ctx;
    bool f64 = dx->dtype == TM_F64;
    int64_t n = q->planes * q->d * q->h * q->w;
    if (n > 0)
        memset(tm__ptr(dx), 0, (size_t)n * tm_dtype_size(dx->dtype));
    pool_job jb = {q, tm__ptr(g), tm__ptr(dx), NULL, NULL};
    bool plain = pool_plain(q);
    if (is_max) {
        jb.argmax_in = tm__ptr(argmax);
        if (plain)
            pool_run(q, f64 ? pool_max_backward_f64 : pool_max_backward_f32,
                     &jb);
        else
            pool_run(q,
                     f64 ? pool_nd_max_backward_f64 : pool_nd_max_backward_f32,
                     &jb);
    } else if (plain) {
        pool_run(q, f64 ? pool_avg_backward_f64 : pool_avg_backward_f32,
                 &jb);
    } else {
        pool_run(q, f64 ? pool_nd_avg_backward_f64 : pool_nd_avg_backward_f32,
                 &jb);
    }
    return TM_OK;
}
