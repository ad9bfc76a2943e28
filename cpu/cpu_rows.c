/* cpu_rows.c — row kernels of the CPU backend: softmax / log_softmax and
 * layer_norm / rms_norm over the last dim.
 *
 * Each row is computed by one thread from its own elements only, so results
 * are identical for any thread count.  Rows are handed to a row function
 * as contiguous arrays of the compute type (F32 for F32/F16/BF16, F64 for
 * F64): rows that already are (unit stride, compute dtype) are used in
 * place, others go through a per-thread scratch row (tm__convert).
 *
 * Accuracy (F32 compute): the max and the elementwise steps run in F32;
 * every sum (softmax's sum of exponentials, the norms' sums of x and x^2)
 * is accumulated in F64 in a fixed order and rounded once, so a result is
 * within a few ulp of the float64 value.  layer_norm accumulates
 * sum(x - x0) and sum((x - x0)^2) with x0 the row's first element (one pass,
 * no cancellation for rows with a large mean) and subtracts the mean as
 * (x - fl(mean)) - fl(mean - fl(mean)) so that a large mean does not cost
 * accuracy either.
 *
 * Special values (the plain formula, as PyTorch): NaN anywhere in a row,
 * +inf, or a row of only -inf gives NaN for the whole row; -inf entries
 * among finite ones give 0 (softmax) and -inf (log_softmax).
 */
#include "cpu_impl.h"
#include "cpu_features.h"
#include "vmath/vmath.h"
#include "cpu_rows_impl.h"

#include <math.h>
#include <string.h>

/* Softmax runs its exp-and-sum pass in blocks of this many elements, so a
 * block stays in L1 between the subtract, exp and sum steps. */
#define TM__ROW_BLOCK 512


static float tm__max_f32(const float *x, int64_t n)
{
    float m[8];
    for (int k = 0; k < 8; k++) m[k] = -INFINITY;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int k = 1; k < 8; k++) m[0] = m[k] > m[0] ? m[k] : m[0];
    return m[0];
}

static double tm__sum_f32(const float *x, int64_t n)
{
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) s[k] += (double)x[i + k];
    for (; i < n; i++) s[0] += (double)x[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static void tm__sub_f32(const float *x, float *y, int64_t n, float m)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] - m;
}

static void tm__scale_f32(float *y, int64_t n, float s)
{
    for (int64_t i = 0; i < n; i++) y[i] *= s;
}

static void tm__logsub_f32(const float *x, float *y, int64_t n, float m,
                           float l)
{
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) - l;
}

static void tm__stats_f32(const float *x, int64_t n, double x0, double *s1,
                          double *s2)
{
    double a[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) {
            double d = (double)x[i + k] - x0;
            a[k] += d;
            q[k] += d * d;
        }
    for (; i < n; i++) {
        double d = (double)x[i] - x0;
        a[0] += d;
        q[0] += d * d;
    }
    *s1 = (a[0] + a[1]) + (a[2] + a[3]);
    *s2 = (q[0] + q[1]) + (q[2] + q[3]);
}

static void tm__norm_f32(const float *x, float *y, int64_t n, float fm,
                         float fd, float r, const float *w, const float *b)
{
    int64_t i;
    if (w && b)
        for (i = 0; i < n; i++) y[i] = (((x[i] - fm) - fd) * r) * w[i] + b[i];
    else if (w)
        for (i = 0; i < n; i++) y[i] = (((x[i] - fm) - fd) * r) * w[i];
    else if (b)
        for (i = 0; i < n; i++) y[i] = ((x[i] - fm) - fd) * r + b[i];
    else
        for (i = 0; i < n; i++) y[i] = ((x[i] - fm) - fd) * r;
}

static const tm__rows_f32_ops tm__rows_portable = {
    tm__max_f32, tm__sum_f32, tm__sub_f32, tm__scale_f32, tm__logsub_f32,
    tm__stats_f32, tm__norm_f32};


static const tm__rows_f32_ops *tm__rows_ops(void)
{
#if defined(__x86_64__)
    if (tm__cpu_isa() == TM__ISA_AVX512) return &tm__rows_avx512;
#endif
    return &tm__rows_portable;
}

/* y = softmax(x) (log_softmax when `logsm`); y != x.  The exp-and-sum
 * pass runs block by block so each block stays in L1. */
static void tm__softmax_row_f32(const tm__rows_f32_ops *o, const float *x,
                                float *y, int64_t n, bool logsm)
{
    float m = o->max(x, n);
    double s = 0;
    for (int64_t b = 0; b < n; b += TM__ROW_BLOCK) {
        int64_t k = n - b < TM__ROW_BLOCK ? n - b : TM__ROW_BLOCK;
        o->sub(x + b, y + b, k, m);
        tm__vexp_f32(k, y + b, y + b);
        s += o->sum(y + b, k);
    }
    if (logsm)
        o->logsub(x, y, n, m, (float)log(s));
    else
        o->scale(y, n, (float)(1.0 / s));
}

/* y = norm(x) * w + b over one row (w, b may be NULL); y may equal x. */
static void tm__norm_row_f32(const tm__rows_f32_ops *o, const float *x,
                             float *y, int64_t n, const float *w,
                             const float *b, double eps, bool rms)
{
    double x0 = rms ? 0.0 : (double)x[0], s1, s2;
    o->stats(x, n, x0, &s1, &s2);
    double m1 = rms ? 0.0 : s1 / (double)n;
    double var = s2 / (double)n - m1 * m1;
    if (var < 0) var = 0;
    double mean = x0 + m1;
    float fm = (float)mean, fd = (float)(mean - (double)fm);
    o->norm(x, y, n, fm, fd, (float)(1.0 / sqrt(var + eps)), w, b);
}

/* ------------------------------------------------------- F64 primitives */

static void tm__softmax_row_f64(const double *x, double *y, int64_t n,
                                bool logsm)
{
    double m = -INFINITY;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i < n; i++) y[i] = exp(x[i] - m);
    for (i = 0; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) s[k] += y[i + k];
    for (; i < n; i++) s[0] += y[i];
    double sum = (s[0] + s[1]) + (s[2] + s[3]);
    if (logsm) {
        double l = log(sum);
        for (i = 0; i < n; i++) y[i] = (x[i] - m) - l;
    } else {
        double inv = 1.0 / sum;
        for (i = 0; i < n; i++) y[i] *= inv;
    }
}

static void tm__norm_row_f64(const double *x, double *y, int64_t n,
                             const double *w, const double *b, double eps,
                             bool rms)
{
    double x0 = rms ? 0.0 : x[0], s1[4] = {0, 0, 0, 0},
           s2[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) {
            double d = x[i + k] - x0;
            s1[k] += d;
            s2[k] += d * d;
        }
    for (; i < n; i++) {
        double d = x[i] - x0;
        s1[0] += d;
        s2[0] += d * d;
    }
    double m1 = rms ? 0.0 : ((s1[0] + s1[1]) + (s1[2] + s1[3])) / (double)n;
    double var = ((s2[0] + s2[1]) + (s2[2] + s2[3])) / (double)n - m1 * m1;
    if (var < 0) var = 0;
    double r = 1.0 / sqrt(var + eps);
    for (i = 0; i < n; i++) {
        double v = ((x[i] - x0) - m1) * r; /* x - mean, without rounding it */
        if (w) v *= w[i];
        if (b) v += b[i];
        y[i] = v;
    }
}

/* ----------------------------------------------------------- row driver */

typedef struct {
    const tm_buf *out, *in;
    int64_t rows, n;   /* row count, row length */
    tm_dtype ct;       /* compute dtype: F32 or F64 */
    bool need_x, need_y;
    char *scratch;     /* per part: 2 rows of n compute elements */
    bool softmax, log, rms;
    const void *w, *b; /* compute-dtype, contiguous; NULL when absent */
    const tm__rows_f32_ops *ops;
    double eps;
} tm__rows_ctx;

/* Address of row r (row-major over the leading dims) of b. */
static char *tm__row_ptr(const tm_buf *b, int64_t r)
{
    int64_t off = 0;
    for (int d = b->ndim - 2; d >= 0 && r > 0; d--) {
        off += (r % b->shape[d]) * b->strides[d];
        r /= b->shape[d];
    }
    return (char *)tm__ptr(b) + off * (int64_t)tm_dtype_size(b->dtype);
}

static void tm__rows_part(int part, int nparts, void *vc)
{
    const tm__rows_ctx *c = vc;
    int64_t r0 = c->rows * part / nparts, r1 = c->rows * (part + 1) / nparts;
    int64_t n = c->n;
    size_t ce = tm_dtype_size(c->ct);
    char *xs = c->scratch ? c->scratch + (size_t)part * 2 * (size_t)n * ce
                          : NULL;
    char *ys = xs ? xs + (size_t)n * ce : NULL;
    int64_t ies = (int64_t)tm_dtype_size(c->in->dtype),
            oes = (int64_t)tm_dtype_size(c->out->dtype);
    int64_t ist = c->in->strides[c->in->ndim - 1] * ies,
            ost = c->out->strides[c->out->ndim - 1] * oes;
    for (int64_t r = r0; r < r1; r++) {
        char *ip = tm__row_ptr(c->in, r), *op = tm__row_ptr(c->out, r);
        void *x = ip, *y = op;
        if (c->need_x) {
            tm__convert(xs, c->ct, (int64_t)ce, ip, c->in->dtype, ist, n);
            x = xs;
        }
        if (c->need_y) y = ys;
        if (c->ct == TM_F32) {
            if (c->softmax)
                tm__softmax_row_f32(c->ops, x, y, n, c->log);
            else
                tm__norm_row_f32(c->ops, x, y, n, c->w, c->b, c->eps,
                                 c->rms);
        } else {
            if (c->softmax)
                tm__softmax_row_f64(x, y, n, c->log);
            else
                tm__norm_row_f64(x, y, n, c->w, c->b, c->eps, c->rms);
        }
        if (c->need_y)
            tm__convert(op, c->out->dtype, ost, ys, c->ct, (int64_t)ce, n);
    }
}

/* A 1-D parameter as a contiguous compute-dtype array: p's own memory
 * when it already is one, else a copy in *tmp. */
static tm_status tm__rows_param(const char *fn, const tm_buf *p, int64_t n,
                                tm_dtype ct, const void **out, void **tmp)
{
    *out = NULL;
    if (!p || !tm__ptr(p)) return TM_OK;
    if (p->dtype == ct && (p->strides[0] == 1 || n <= 1)) {
        *out = tm__ptr(p);
        return TM_OK;
    }
    size_t ce = tm_dtype_size(ct);
    *tmp = tm__alloc((size_t)n * ce, fn);
    if (!*tmp) return tm_last_status();
    tm__convert(*tmp, ct, (int64_t)ce, tm__ptr(p), p->dtype,
                p->strides[0] * (int64_t)tm_dtype_size(p->dtype), n);
    *out = *tmp;
    return TM_OK;
}

static tm_status tm__rows_run(const char *fn, tm__rows_ctx *c,
                              const tm_buf *weight, const tm_buf *bias)
{
    const tm_buf *in = c->in, *out = c->out;
    if (in->ndim < 1 || out->ndim != in->ndim)
        return tm__errf(TM_ESTATE, fn, "internal error: rows need ndim >= 1"
                        " (got %d and %d)", in->ndim, out->ndim);
    if (!tm_dtype_is_float(in->dtype) || !tm_dtype_is_float(out->dtype))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not a float dtype",
                        tm_dtype_name(in->dtype));
    c->n = in->shape[in->ndim - 1];
    c->rows = 1;
    for (int d = 0; d + 1 < in->ndim; d++) c->rows *= in->shape[d];
    if (c->rows == 0 || c->n == 0) return TM_OK;
    c->ct = in->dtype == TM_F64 ? TM_F64 : TM_F32;
    c->ops = tm__rows_ops();
    c->need_x = !(in->dtype == c->ct &&
                  (in->strides[in->ndim - 1] == 1 || c->n == 1));
    c->need_y = !(out->dtype == c->ct &&
                  (out->strides[out->ndim - 1] == 1 || c->n == 1));
    int64_t total = c->rows * c->n;
    int64_t nparts = tm_get_num_threads();
    if (nparts > total / TM__GRAIN) nparts = total / TM__GRAIN;
    if (nparts > c->rows) nparts = c->rows;
    if (nparts < 1) nparts = 1;
    void *wt = NULL, *bt = NULL;
    tm_status st = TM_OK;
    c->scratch = NULL;
    if (tm__rows_param(fn, weight, c->n, c->ct, &c->w, &wt) ||
        tm__rows_param(fn, bias, c->n, c->ct, &c->b, &bt)) {
        st = tm_last_status();
        goto done;
    }
    if (c->need_x || c->need_y) {
        size_t bytes = (size_t)nparts * 2 * (size_t)c->n *
                       tm_dtype_size(c->ct);
        c->scratch = tm__alloc(bytes, fn);
        if (!c->scratch) {
            st = tm_last_status();
            goto done;
        }
    }
    tm__parallel_parts((int)nparts, tm__rows_part, c);
done:
    tm__dealloc(c->scratch);
    tm__dealloc(wt);
    tm__dealloc(bt);
    return st;
}

tm_status tm__cpu_softmax(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, bool log)
{
    (void)ctx;
    tm__rows_ctx c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.in = in;
    c.softmax = true;
    c.log = log;
    return tm__rows_run(__func__, &c, NULL, NULL);
}

tm_status tm__cpu_norm_rows(tm_ctx *ctx, const tm_buf *out, const tm_buf *in,
                            const tm_buf *weight, const tm_buf *bias,
                            double eps, bool rms)
{
    (void)ctx;
    tm__rows_ctx c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.in = in;
    c.rms = rms;
    c.eps = eps;
    return tm__rows_run(__func__, &c, weight, rms ? NULL : bias);
}
