/* clip_kern.c — the element loops of gradient clipping (optim/clip.c;
 * contracts in optim_kern.h): the partial norms, chunk by chunk, and the
 * in-place scale or clamp.
 *
 * The norm is accumulated in double over fixed chunks of CHUNK elements,
 * each summed in a fixed order, and the chunk partials are combined in
 * chunk order: the result is the same for any thread count.  Scaling and
 * clamping are elementwise, so their split cannot change results. */
#include "optim_kern.h"

#include "../../tensor/runtime/runtime_impl.h"

#include <math.h>

#define CHUNK 65536

typedef struct {
    const void *g;
    bool f64;
    int64_t n;
    tm__norm_kind kind;
    double p;
    double *part;
} norm_job;

static double elem(const norm_job *j, int64_t i)
{
    return j->f64 ? ((const double *)j->g)[i]
                  : (double)((const float *)j->g)[i];
}

/* Chunks [cb, ce): part[c] = chunk c's partial. */
static void norm_range(int64_t cb, int64_t ce, void *ctx)
{
    const norm_job *j = ctx;
    for (int64_t c = cb; c < ce; c++) {
        int64_t b = c * CHUNK, e = b + CHUNK < j->n ? b + CHUNK : j->n;
        double acc[8] = {0};
        int64_t i = b;
        if (j->kind == TM__NORM_L2) {
            for (; i + 8 <= e; i += 8)
                for (int u = 0; u < 8; u++) {
                    double x = elem(j, i + u);
                    acc[u] += x * x;
                }
            for (; i < e; i++) {
                double x = elem(j, i);
                acc[0] += x * x;
            }
        } else if (j->kind == TM__NORM_INF) {
            for (; i < e; i++) {
                double x = fabs(elem(j, i));
                if (x > acc[0] || x != x) acc[0] = x;
                if (acc[0] != acc[0]) break;
            }
        } else {
            for (; i < e; i++) {
                double x = fabs(elem(j, i));
                acc[0] += j->kind == TM__NORM_L1 ? x : pow(x, j->p);
            }
        }
        double s = acc[0];
        if (j->kind == TM__NORM_L2) {
            s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        }
        j->part[c] = s;
    }
}

int64_t tm__clip_norm_chunks(int64_t n)
{
    return (n + CHUNK - 1) / CHUNK;
}

void tm__clip_norm_accumulate(const void *g, bool f64, int64_t n,
                              tm__norm_kind kind, double p, double *part,
                              double *total)
{
    norm_job j = {g, f64, n, kind, p, part};
    int64_t nc = tm__clip_norm_chunks(n);
    tm__parallel_for(nc, 1, norm_range, &j);
    double t = *total;
    for (int64_t c = 0; c < nc; c++) {
        if (kind == TM__NORM_INF) {
            if (part[c] > t || part[c] != part[c]) t = part[c];
        } else {
            t += part[c];
        }
    }
    *total = t;
}

typedef struct {
    void *g;
    bool f64;
    double coef;
    double lo, hi; /* value clipping */
    bool clamp;
} scale_job;

static void scale_range(int64_t b, int64_t e, void *ctx)
{
    const scale_job *j = ctx;
    if (j->f64) {
        double *g = j->g;
        if (j->clamp) {
            for (int64_t i = b; i < e; i++)
                g[i] = g[i] < j->lo ? j->lo : g[i] > j->hi ? j->hi : g[i];
        } else {
            for (int64_t i = b; i < e; i++) g[i] *= j->coef;
        }
    } else {
        float *g = j->g;
        const float c = (float)j->coef, lo = (float)j->lo, hi = (float)j->hi;
        if (j->clamp) {
            for (int64_t i = b; i < e; i++)
                g[i] = g[i] < lo ? lo : g[i] > hi ? hi : g[i];
        } else {
            for (int64_t i = b; i < e; i++) g[i] *= c;
        }
    }
}

void tm__clip_scale(void *g, bool f64, int64_t n, double coef)
{
    scale_job j = {.g = g, .f64 = f64, .coef = coef};
    tm__parallel_for(n, CHUNK, scale_range, &j);
}

void tm__clip_clamp(void *g, bool f64, int64_t n, double lo, double hi)
{
    scale_job j = {.g = g, .f64 = f64, .lo = lo, .hi = hi, .clamp = true};
    tm__parallel_for(n, CHUNK, scale_range, &j);
}
