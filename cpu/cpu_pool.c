/* cpu_pool.c — the window loops of tm_max_pool2d and tm_avg_pool2d,
 * forward and backward (contracts in cpu_nn.h), written once per element
 * type in cpu_pool_tmpl.h.
 *
 * Work is split over the thread pool by (n, c) plane: every output
 * element (and, backward, every input plane) has one writer, so results
 * do not depend on the thread count. */
#include "cpu_nn.h"

#include "../tensor/core/tensor_impl.h"

#include <math.h>
#include <string.h>

typedef struct pool_job {
    const tm__pool_geom *q;
    const void *src; /* x (forward) or g (backward) */
    void *dst;       /* y (forward) or dx (backward) */
    int64_t *argmax;          /* max pooling forward: written */
    const int64_t *argmax_in; /* max pooling backward: read */
} pool_job;

/* The window of output (oy, ox), clipped to x: rows [*y0, *y1), columns
 * [*x0, *x1); returns the divisor of average pooling. */
static inline int64_t pool_window(const tm__pool_geom *q, int64_t oy,
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

/* Runs one of the loops over all planes, at least about 32768 window
 * elements per thread. */
static void pool_run(const tm__pool_geom *q, tm__range_fn fn, pool_job *jb)
{
    int64_t per = q->oh * q->ow * q->kh * q->kw;
    int64_t grain = 32768 / (per > 0 ? per : 1);
    tm__parallel_for(q->planes, grain > 0 ? grain : 1, fn, jb);
}

void tm__pool_max(const tm__pool_geom *q, tm_dtype dt, const void *x,
                  void *y, int64_t *argmax)
{
    pool_job jb = {q, x, y, argmax, NULL};
    pool_run(q, dt == TM_F64 ? pool_max_f64 : pool_max_f32, &jb);
}

void tm__pool_max_backward(const tm__pool_geom *q, tm_dtype dt,
                           const void *g, void *dx, const int64_t *argmax)
{
    pool_job jb = {q, g, dx, NULL, argmax};
    pool_run(q, dt == TM_F64 ? pool_max_backward_f64 : pool_max_backward_f32,
             &jb);
}

void tm__pool_avg(const tm__pool_geom *q, tm_dtype dt, const void *x,
                  void *y)
{
    pool_job jb = {q, x, y, NULL, NULL};
    pool_run(q, dt == TM_F64 ? pool_avg_f64 : pool_avg_f32, &jb);
}

void tm__pool_avg_backward(const tm__pool_geom *q, tm_dtype dt,
                           const void *g, void *dx)
{
    pool_job jb = {q, g, dx, NULL, NULL};
    pool_run(q, dt == TM_F64 ? pool_avg_backward_f64 : pool_avg_backward_f32,
             &jb);
}
