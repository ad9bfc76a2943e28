/* clip_kern.c — the CPU backend's `grad_norm` entry (foundry/backend.h),
 * the norm that gradient clipping (optim/clip.c) scales by.
 *
 * The norm is accumulated in double over fixed chunks of CHUNK elements
 * of each buffer, each chunk summed in a fixed order (L2: 8 interleaved
 * lanes) on the thread pool, and the chunk partials are combined into one
 * total in buffer order, chunk by chunk (added; for the inf norm the
 * larger, a NaN kept): the result depends on the buffers' sizes only,
 * never on the thread count. */
#include "optim_kern.h"

#include "../cpu_impl.h"

#include <math.h>

#define CHUNK 65536
#define STACK_CHUNKS 64

typedef struct {
    const void *g;
    bool f64;
    int64_t n;
    tm_norm_kind kind;
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
        if (j->kind == TM_NORM_L2) {
            for (; i + 8 <= e; i += 8)
                for (int u = 0; u < 8; u++) {
                    double x = elem(j, i + u);
                    acc[u] += x * x;
                }
            for (; i < e; i++) {
                double x = elem(j, i);
                acc[0] += x * x;
            }
        } else if (j->kind == TM_NORM_INF) {
            for (; i < e; i++) {
                double x = fabs(elem(j, i));
                if (x > acc[0] || x != x) acc[0] = x;
                if (acc[0] != acc[0]) break;
            }
        } else {
            for (; i < e; i++) {
                double x = fabs(elem(j, i));
                acc[0] += j->kind == TM_NORM_L1 ? x : pow(x, j->p);
            }
        }
        double s = acc[0];
        if (j->kind == TM_NORM_L2) {
            s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        }
        j->part[c] = s;
    }
}

/* Folds the norm of the dense F32 / F64 array g (N) into *total. */
static tm_status accumulate(const void *g, bool f64, int64_t n,
                            tm_norm_kind kind, double p, double *total)
{
    int64_t nc = (n + CHUNK - 1) / CHUNK;
    double stackpart[STACK_CHUNKS];
    double *part = nc <= STACK_CHUNKS
                       ? stackpart
                       : tm__alloc((size_t)nc * sizeof(double), "grad_norm");
    if (!part) return tm_last_status();
    norm_job j = {g, f64, n, kind, p, part};
    tm__parallel_for(nc, 1, norm_range, &j);
    double t = *total;
    for (int64_t c = 0; c < nc; c++) {
        if (kind == TM_NORM_INF) {
            if (part[c] > t || part[c] != part[c]) t = part[c];
        } else {
            t += part[c];
        }
    }
    *total = t;
    if (part != stackpart) tm__dealloc(part);
    return TM_OK;
}

/* Elements of b when it is dense, else -1. */
static int64_t dense_numel(const tm_buf *b)
{
    int64_t expect = 1;
    for (int i = b->ndim - 1; i >= 0; i--) {
        if (b->shape[i] == 0) return 0;
        if (b->shape[i] != 1 && b->strides[i] != expect) return -1;
        expect *= b->shape[i];
    }
    return expect;
}

tm_status tm__cpu_grad_norm(tm_ctx *ctx, const tm_buf *out,
                            const tm_buf *bufs, int n, tm_norm_kind kind,
                            double p)
{
    (void)ctx;
    static const char *fn = "grad_norm";
    if (!tm_dtype_is_float(out->dtype))
        return tm__errf(TM_EDTYPE, fn, "out must be F64, not %s",
                        tm_dtype_name(out->dtype));
    for (int i = 0; i < n; i++) {
        tm_dtype dt = bufs[i].dtype;
        if (dt != TM_F32 && dt != TM_F64)
            return tm__errf(TM_EDTYPE, fn, "buffer %d is %s: F32 or F64 "
                            "only", i, tm_dtype_name(dt));
        if (dense_numel(&bufs[i]) < 0)
            return tm__errf(TM_EINVAL, fn, "buffer %d is not contiguous",
                            i);
    }
    double total = 0;
    for (int i = 0; i < n; i++) {
        tm_status st = accumulate(tm__ptr(&bufs[i]), bufs[i].dtype == TM_F64,
                                  dense_numel(&bufs[i]), kind, p, &total);
        if (st) return st;
    }
    if (kind == TM_NORM_L2)
        total = sqrt(total);
    else if (kind == TM_NORM_P)
        total = pow(total, 1.0 / p);
    /* F64 by contract; a staged F32 out gets the norm rounded once */
    tm__store_f64(tm__ptr(out), out->dtype, total);
    return TM_OK;
}
