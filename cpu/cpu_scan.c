/* cpu_scan.c — running sums, products, max/min (with indices) and
 * log-sum-exp along one dim on the CPU (the `scan` entry).
 *
 * A line (all positions of the other dims fixed) is read in chunks that
 * are converted to F64 (floats) or I64 (integers and bool), scanned, and
 * converted back, so every dtype and stride takes one loop.  Lines are
 * independent and split over the pool: results do not depend on the
 * thread count.  `reverse` walks a line from its end (negative strides);
 * indices are still positions counted from the start.
 */
#include "cpu_impl.h"

#include <math.h>

#define TM__SCAN_CHUNK 256

typedef struct {
    tm_scan_kind kind;
    int64_t len;
    int64_t ist, ost, xst; /* byte strides along the dim: in, out, indices */
    tm_dtype idt, odt;
    bool reverse, has_ix;
} tm__scan_job;

/* The running state of one line. */
typedef struct {
    double f;   /* float accumulator */
    uint64_t u; /* integer accumulator (wrapping) */
    int64_t i;  /* max/min of integers */
    int64_t at; /* index of the running extreme */
    bool started;
} tm__scan_acc;

/* log(exp(a) + exp(b)) without overflow.  Equal infinities are returned
 * as they are (exp(inf - inf) would be NaN); NaN propagates. */
static double tm__log_add_exp(double a, double b)
{
    if (isnan(a) || isnan(b)) return a + b;
    double hi = a > b ? a : b, lo = a > b ? b : a;
    if (hi == lo && !isfinite(hi)) return hi;
    return hi + log1p(exp(lo - hi));
}

/* One chunk of k floats in place (v), positions pos0, pos0 + 1, ... along
 * the line (pos counts from the line's start in walk order). */
static void tm__scan_f64(const tm__scan_job *j, tm__scan_acc *a, double *v,
                         int64_t *ix, int64_t k, int64_t pos0)
{
    for (int64_t i = 0; i < k; i++) {
        double x = v[i];
        switch (j->kind) {
        case TM_SCAN_SUM: a->f += x; break;
        case TM_SCAN_PROD: a->f *= x; break;
        case TM_SCAN_LOGSUMEXP: a->f = tm__log_add_exp(a->f, x); break;
        default: { /* max / min: ties and NaN take the newest, as torch */
            bool take = !a->started || isnan(x) ||
                        (!isnan(a->f) &&
                         (j->kind == TM_SCAN_MAX ? x >= a->f : x <= a->f));
            if (take) {
                a->f = x;
                a->at = pos0 + i;
                a->started = true;
            }
            ix[i] = a->at;
            break;
        }
        }
        v[i] = a->f;
    }
}

static void tm__scan_i64(const tm__scan_job *j, tm__scan_acc *a, int64_t *v,
                         int64_t *ix, int64_t k, int64_t pos0)
{
    for (int64_t i = 0; i < k; i++) {
        int64_t x = v[i];
        switch (j->kind) {
        case TM_SCAN_SUM:
            a->u += (uint64_t)x;
            v[i] = (int64_t)a->u;
            break;
        case TM_SCAN_PROD:
            a->u *= (uint64_t)x;
            v[i] = (int64_t)a->u;
            break;
        default: { /* max / min (logsumexp is refused for integers) */
            bool take = !a->started ||
                        (j->kind == TM_SCAN_MAX ? x >= a->i : x <= a->i);
            if (take) {
                a->i = x;
                a->at = pos0 + i;
                a->started = true;
            }
            v[i] = a->i;
            ix[i] = a->at;
            break;
        }
        }
    }
}

static void tm__scan_line(const tm__scan_job *j, char *out, char *ind,
                          const char *in)
{
    union {
        double f[TM__SCAN_CHUNK];
        int64_t i[TM__SCAN_CHUNK];
    } buf;
    int64_t ix[TM__SCAN_CHUNK];
    bool ints = !tm_dtype_is_float(j->idt);
    tm__scan_acc a = {.f = j->kind == TM_SCAN_PROD ? 1.0
                           : j->kind == TM_SCAN_LOGSUMEXP ? -INFINITY : 0.0,
                      .u = j->kind == TM_SCAN_PROD ? 1u : 0u};
    int64_t ist = j->ist, ost = j->ost, xst = j->xst;
    if (j->reverse) { /* start at the last element and step back */
        in += (j->len - 1) * ist;
        out += (j->len - 1) * ost;
        if (ind) ind += (j->len - 1) * xst;
        ist = -ist;
        ost = -ost;
        xst = -xst;
    }
    for (int64_t done = 0; done < j->len; done += TM__SCAN_CHUNK) {
        int64_t k = j->len - done;
        if (k > TM__SCAN_CHUNK) k = TM__SCAN_CHUNK;
        const char *src = in + done * ist;
        char *dst = out + done * ost;
        if (ints) {
            tm__convert(buf.i, TM_I64, 8, src, j->idt, ist, k);
            tm__scan_i64(j, &a, buf.i, ix, k, done);
            tm__convert(dst, j->odt, ost, buf.i, TM_I64, 8, k);
        } else {
            tm__convert(buf.f, TM_F64, 8, src, j->idt, ist, k);
            tm__scan_f64(j, &a, buf.f, ix, k, done);
            tm__convert(dst, j->odt, ost, buf.f, TM_F64, 8, k);
        }
        if (ind) {
            if (j->reverse)
                for (int64_t i = 0; i < k; i++) ix[i] = j->len - 1 - ix[i];
            tm__convert(ind + done * xst, TM_I64, xst, ix, TM_I64, 8, k);
        }
    }
}

static void tm__scan_run(char **ptrs, const int64_t *strides, int64_t n,
                         void *p)
{
    const tm__scan_job *j = p;
    for (int64_t i = 0; i < n; i++)
        tm__scan_line(j, ptrs[0] + i * strides[0],
                      j->has_ix ? ptrs[2] + i * strides[2] : NULL,
                      ptrs[1] + i * strides[1]);
}

/* The view of b without dim `dim` (the lines' starting points). */
static tm_buf tm__scan_lines(const tm_buf *b, int dim)
{
    tm_buf l = *b;
    l.ndim = b->ndim - 1;
    for (int d = dim; d < b->ndim - 1; d++) {
        l.shape[d] = b->shape[d + 1];
        l.strides[d] = b->strides[d + 1];
    }
    return l;
}

tm_status tm__cpu_scan(tm_ctx *ctx, tm_scan_kind kind, const tm_buf *out,
                       const tm_buf *indices, const tm_buf *in, int dim,
                       bool reverse)
{
    (void)ctx;
    /* out, in, indices are (..., L, ...) with L = in->shape[dim] */
    TM_ASSERT(dim >= 0 && dim < in->ndim && out->ndim == in->ndim,
              TM_ESTATE);
    if ((int)kind < TM_SCAN_SUM || kind > TM_SCAN_LOGSUMEXP)
        return TM_ERR(TM_EINVAL, "unknown scan kind %d", (int)kind);
    bool has_ix = indices && indices->handle;
    if (kind == TM_SCAN_LOGSUMEXP &&
        (!tm_dtype_is_float(in->dtype) || !tm_dtype_is_float(out->dtype)))
        return TM_ERR(TM_EDTYPE, "logsumexp scan of %s into %s: float "
                      "dtypes only", tm_dtype_name(in->dtype),
                      tm_dtype_name(out->dtype));
    if (has_ix && kind != TM_SCAN_MAX && kind != TM_SCAN_MIN)
        return TM_ERR(TM_EINVAL, "scan kind %d has no indices", (int)kind);
    if (has_ix && indices->dtype != TM_I64)
        return TM_ERR(TM_EDTYPE, "scan indices must be int64, not %s",
                      tm_dtype_name(indices->dtype));
    tm__scan_job j = {
        .kind = kind,
        .len = in->shape[dim],
        .ist = in->strides[dim] * (int64_t)tm_dtype_size(in->dtype),
        .ost = out->strides[dim] * (int64_t)tm_dtype_size(out->dtype),
        .xst = has_ix ? indices->strides[dim] * 8 : 0,
        .idt = in->dtype,
        .odt = out->dtype,
        .reverse = reverse,
        .has_ix = has_ix,
    };
    if (j.len == 0) return TM_OK;
    tm_buf lo = tm__scan_lines(out, dim), li = tm__scan_lines(in, dim);
    tm_buf lx = has_ix ? tm__scan_lines(indices, dim) : lo;
    tm__iter it;
    const tm_buf *bufs[3] = {&lo, &li, &lx};
    tm__iter_init(&it, has_ix ? 3 : 2, bufs);
    tm__iter_run(&it, TM__GRAIN / j.len > 0 ? TM__GRAIN / j.len : 1,
                 tm__scan_run, &j);
    return TM_OK;
}
