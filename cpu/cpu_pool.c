/* cpu_pool.c — the CPU's pool and pool_backward entries (contracts in
 * foundry/backend.h): the window loops of max and average pooling,
 * forward and backward, written once per element type in
 * cpu_pool_tmpl.h.
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

#define T float
#define SUF f32
#include "cpu_pool_tmpl.h"
#undef T
#undef SUF

#define T double
#define SUF f64
#include "cpu_pool_tmpl.h"
#undef T
#undef SUF

static void pool_max22_f32(int64_t p0, int64_t p1, void *vj)
{
    const pool_job *jb = vj;
    tm__pool_max22_f32(jb->q, jb->src, jb->dst, jb->argmax, p0, p1);
}

/* Runs one of the loops over all planes, at least about 32768 window
 * elements per thread. */
static void pool_run(const tm_pool_geom *q, tm__range_fn fn, pool_job *jb)
{
    int64_t per = q->oh * q->ow * q->kh * q->kw;
    int64_t grain = 32768 / (per > 0 ? per : 1);
    tm__parallel_for(q->planes, grain > 0 ? grain : 1, fn, jb);
}

/* x is (P, H, W), y and argmax are (P, OH, OW): y = the window's max (NaN
 * if the window holds one: the last NaN's index is kept), argmax = its
 * flat index yy*W + xx within the plane; or (is_max false) y = the
 * window's sum / divisor. */
tm_status tm__cpu_pool(tm_ctx *ctx, const tm_buf *y, const tm_buf *argmax,
                       const tm_buf *x, const tm_pool_geom *q, bool is_max)
{
    (void)ctx;
    bool f64 = y->dtype == TM_F64;
    pool_job jb = {q, tm__ptr(x), tm__ptr(y), NULL, NULL};
    if (is_max) {
        jb.argmax = tm__ptr(argmax);
        pool_run(q, f64                       ? pool_max_f64
                    : tm__pool_max22_ok(q) ? pool_max22_f32
                                           : pool_max_f32,
                 &jb);
    } else {
        pool_run(q, f64 ? pool_avg_f64 : pool_avg_f32, &jb);
    }
    return TM_OK;
}

/* g and argmax are (P, OH, OW), dx is (P, H, W): dx is zeroed, then max
 * pooling adds g[p, l] at dx[p, argmax[p, l]] in order of l, and average
 * pooling gives every x of the window of (oy, ox) g[oy, ox] / divisor,
 * outputs in row-major order. */
tm_status tm__cpu_pool_backward(tm_ctx *ctx, const tm_buf *dx,
                                const tm_buf *g, const tm_buf *argmax,
                                const tm_pool_geom *q, bool is_max)
{
    (void)ctx;
    bool f64 = dx->dtype == TM_F64;
    if (q->planes * q->h * q->w > 0)
        memset(tm__ptr(dx), 0,
               (size_t)(q->planes * q->h * q->w) * tm_dtype_size(dx->dtype));
    pool_job jb = {q, tm__ptr(g), tm__ptr(dx), NULL, NULL};
    if (is_max) {
        jb.argmax_in = tm__ptr(argmax);
        pool_run(q, f64 ? pool_max_backward_f64 : pool_max_backward_f32,
                 &jb);
    } else {
        pool_run(q, f64 ? pool_avg_backward_f64 : pool_avg_backward_f32,
                 &jb);
    }
    return TM_OK;
}
