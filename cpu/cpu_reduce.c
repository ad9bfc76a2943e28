/* cpu_reduce.c — reductions (sum, mean, prod, max, min, var, std,
 * logsumexp, norm, any, all) and arg reductions (argmax/argmin, optionally
 * with the values) on the CPU.
 *
 * in is (outer..., red...): the front end has moved the reduced dims last.
 * out (and values) are (outer...).  Each output is the fold of its reduced
 * elements, visited in row-major order in chunks of TM__RED_CHUNK: a chunk
 * is converted to double (int64 for integer sum/prod/max/min/arg), folded
 * into a partial result (tm__acc), and partials are merged left to right.
 *
 * Accuracy: everything but the integer folds computes in double, so an
 * F32/F16/BF16 result is the double result rounded once.  Float sums add
 * each chunk in four double lanes and add the chunk sums with Neumaier
 * compensation, so an F64 sum of n terms errs by about 64 ulp of sum|x|
 * rather than n ulp.  Variance folds each chunk in two passes (mean, then
 * squared deviations) and merges chunks with Chan's formula; logsumexp
 * keeps a running max; the 2-norm keeps a running scale (no overflow).
 *
 * Threads: with many outputs, outputs are split over the pool and each is
 * folded exactly as one thread would (bitwise independent of the thread
 * count).  With fewer outputs than threads and a long reduction, the
 * reduced range is cut into P = min(threads, n / TM__GRAIN) parts whose
 * partials are merged in part order: deterministic for a thread count.
 */
#include "cpu_impl.h"

#include <math.h>
#include <string.h>

#define TM__RED_CHUNK 256
/* Internal ops for arg_reduce, after the public tm_reduce_op values. */
#define TM__RED_ARGMAX (TM_REDUCE_OP_COUNT + 1)
#define TM__RED_ARGMIN (TM_REDUCE_OP_COUNT + 2)

/* A partial result over n elements (n == 0: nothing seen yet). */
typedef struct {
    int64_t n;
    double s, c;     /* sum and its compensation; product; lse sum */
    double m, m2;    /* max/min/extreme; var mean and M2; lse max;
                        2-norm scale and scaled sum of squares */
    int64_t im, idx; /* integer max/min; arg index */
    uint64_t u;      /* integer sum/product (wraps) */
    bool nan, inf, b;
} tm__acc;

typedef struct {
    int op;          /* tm_reduce_op or TM__RED_ARG* */
    double p;        /* correction (var/std) or order (norm) */
    bool ints;       /* fold in int64 */
    tm_dtype in_dt;
    int64_t count;   /* reduced elements per output */
    tm__iter red;    /* the reduced region; data[0] is set per output */
} tm__red_job;

static bool tm__is_max(int op)
{
    return op == TM_RED_MAX || op == TM__RED_ARGMAX;
}

static bool tm__is_arg(int op)
{
    return op == TM__RED_ARGMAX || op == TM__RED_ARGMIN;
}

static void tm__acc_init(const tm__red_job *j, tm__acc *a)
{
    memset(a, 0, sizeof *a);
    a->s = j->op == TM_RED_PROD ? 1.0 : 0.0;
    a->u = j->op == TM_RED_PROD ? 1 : 0;
    a->b = j->op == TM_RED_ALL;
    if (j->op == TM_RED_NORM && j->p == -INFINITY) a->m = INFINITY;
}

/* s + c += x, with the rounding error of the addition kept in c. */
static void tm__kahan_add(double *s, double *c, double x)
{
    double t = *s + x;
    if (fabs(*s) >= fabs(x)) *c += (*s - t) + x;
    else *c += (x - t) + *s;
    *s = t;
}

static double tm__sum4(const double *x, int64_t k)
{
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = 0;
    for (; i + 4 <= k; i += 4) {
        a0 += x[i];
        a1 += x[i + 1];
        a2 += x[i + 2];
        a3 += x[i + 3];
    }
    for (; i < k; i++) a0 += x[i];
    return (a0 + a1) + (a2 + a3);
}

/* The fast path: contiguous F32 sum (same lanes as tm__sum4). */
static double tm__sum4_f32(const float *x, int64_t k)
{
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = 0;
    for (; i + 4 <= k; i += 4) {
        a0 += (double)x[i];
        a1 += (double)x[i + 1];
        a2 += (double)x[i + 2];
        a3 += (double)x[i + 3];
    }
    for (; i < k; i++) a0 += (double)x[i];
    return (a0 + a1) + (a2 + a3);
}

/* Extreme (max or min) of non-NaN x; flags NaN.  For arg ops, idx is the
 * first extreme or the first NaN (which stops the scan). */
static void tm__fold_extreme(const tm__red_job *j, const double *x,
                             int64_t k, int64_t pos, tm__acc *t)
{
    bool mx = tm__is_max(j->op), arg = tm__is_arg(j->op);
    double m = mx ? -INFINITY : INFINITY;
    int64_t at = -1;
    for (int64_t i = 0; i < k; i++) {
        double v = x[i];
        if (v != v) {
            t->nan = true;
            if (arg) {
                at = pos + i;
                break;
            }
        } else if (at < 0 || (mx ? v > m : v < m)) {
            m = v;
            at = pos + i;
        }
    }
    t->m = m;
    t->idx = at;
}

static void tm__fold_norm(const tm__red_job *j, const double *x, int64_t k,
                          tm__acc *t)
{
    double p = j->p;
    if (p == 2) {
        double amax = 0;
        for (int64_t i = 0; i < k; i++) {
            double a = fabs(x[i]);
            if (a != a) t->nan = true;
            else if (a > amax) amax = a;
        }
        if (amax == INFINITY) t->inf = true;
        else if (amax > 0) {
            double ss = 0;
            for (int64_t i = 0; i < k; i++) {
                double r = x[i] / amax;
                ss += r * r;
            }
            t->m = amax;
            t->m2 = ss;
        }
    } else if (p == INFINITY || p == -INFINITY) {
        double m = p > 0 ? 0 : INFINITY;
        for (int64_t i = 0; i < k; i++) {
            double a = fabs(x[i]);
            if (a != a) t->nan = true;
            else if (p > 0 ? a > m : a < m) m = a;
        }
        t->m = m;
    } else if (p == 0) {
        double cnt = 0;
        for (int64_t i = 0; i < k; i++) cnt += x[i] != 0;
        t->s = cnt;
    } else if (p == 1) {
        double s = 0;
        for (int64_t i = 0; i < k; i++) s += fabs(x[i]);
        t->s = s;
    } else {
        double s = 0;
        for (int64_t i = 0; i < k; i++) s += pow(fabs(x[i]), p);
        t->s = s;
    }
}

/* Folds k doubles (elements pos.. of the reduction) into a fresh t. */
static void tm__fold_f64(const tm__red_job *j, const double *x, int64_t k,
                         int64_t pos, tm__acc *t)
{
    t->n = k;
    switch (j->op) {
    case TM_RED_SUM:
    case TM_RED_MEAN:
        t->s = tm__sum4(x, k);
        break;
    case TM_RED_PROD: {
        double pr = 1;
        for (int64_t i = 0; i < k; i++) pr *= x[i];
        t->s = pr;
        break;
    }
    case TM_RED_VAR:
    case TM_RED_STD: {
        double mean = tm__sum4(x, k) / (double)k, m2 = 0;
        for (int64_t i = 0; i < k; i++) {
            double d = x[i] - mean;
            m2 += d * d;
        }
        t->m = mean;
        t->m2 = m2;
        break;
    }
    case TM_RED_LOGSUMEXP: {
        double cm = -INFINITY;
        for (int64_t i = 0; i < k; i++) {
            if (x[i] != x[i]) t->nan = true;
            else if (x[i] > cm) cm = x[i];
        }
        if (cm == INFINITY) {
            t->inf = true;
        } else if (cm > -INFINITY) {
            double s = 0;
            for (int64_t i = 0; i < k; i++)
                if (x[i] == x[i]) s += exp(x[i] - cm);
            t->m = cm;
            t->s = s;
        }
        break;
    }
    case TM_RED_NORM:
        tm__fold_norm(j, x, k, t);
        break;
    case TM_RED_ANY:
    case TM_RED_ALL: {
        bool any = false, all = true;
        for (int64_t i = 0; i < k; i++) {
            bool nz = x[i] != 0; /* NaN is true */
            any |= nz;
            all &= nz;
        }
        t->b = j->op == TM_RED_ANY ? any : all;
        break;
    }
    default: /* max, min, argmax, argmin */
        tm__fold_extreme(j, x, k, pos, t);
        break;
    }
}

static void tm__fold_i64(const tm__red_job *j, const int64_t *x, int64_t k,
                         int64_t pos, tm__acc *t)
{
    t->n = k;
    if (j->op == TM_RED_SUM) {
        uint64_t u = 0;
        for (int64_t i = 0; i < k; i++) u += (uint64_t)x[i];
        t->u = u;
    } else if (j->op == TM_RED_PROD) {
        uint64_t u = 1;
        for (int64_t i = 0; i < k; i++) u *= (uint64_t)x[i];
        t->u = u;
    } else {
        bool mx = tm__is_max(j->op);
        int64_t m = x[0], at = pos;
        for (int64_t i = 1; i < k; i++)
            if (mx ? x[i] > m : x[i] < m) {
                m = x[i];
                at = pos + i;
            }
        t->im = m;
        t->idx = at;
    }
}

/* a = a then b (b's elements follow a's). */
static void tm__acc_merge(const tm__red_job *j, tm__acc *a, const tm__acc *b)
{
    if (b->n == 0) return;
    if (a->n == 0) {
        *a = *b;
        return;
    }
    int op = j->op;
    bool mx = tm__is_max(op);
    if (j->ints) {
        if (op == TM_RED_SUM) a->u += b->u;
        else if (op == TM_RED_PROD) a->u *= b->u;
        else if (mx ? b->im > a->im : b->im < a->im) {
            a->im = b->im;
            a->idx = b->idx;
        }
    } else if (op == TM_RED_SUM || op == TM_RED_MEAN ||
               (op == TM_RED_NORM && j->p != 2 && fabs(j->p) != INFINITY)) {
        tm__kahan_add(&a->s, &a->c, b->s);
        a->c += b->c;
    } else if (op == TM_RED_PROD) {
        a->s *= b->s;
    } else if (op == TM_RED_VAR || op == TM_RED_STD) {
        double n = (double)(a->n + b->n), d = b->m - a->m;
        a->m += d * ((double)b->n / n);
        a->m2 += b->m2 + d * d * ((double)a->n * (double)b->n / n);
    } else if (op == TM_RED_LOGSUMEXP) {
        if (b->s > 0 && a->s == 0) {
            a->m = b->m;
            a->s = b->s;
        } else if (b->s > 0) {
            double nm = a->m > b->m ? a->m : b->m;
            a->s = a->s * exp(a->m - nm) + b->s * exp(b->m - nm);
            a->m = nm;
        }
    } else if (op == TM_RED_NORM && j->p == 2) {
        if (b->m2 > 0 && a->m2 == 0) {
            a->m = b->m;
            a->m2 = b->m2;
        } else if (b->m2 > 0 && b->m > a->m) {
            double r = a->m / b->m;
            a->m2 = a->m2 * r * r + b->m2;
            a->m = b->m;
        } else if (b->m2 > 0) {
            double r = b->m / a->m;
            a->m2 += b->m2 * r * r;
        }
    } else if (op == TM_RED_NORM) { /* p = +-inf */
        if (j->p > 0 ? b->m > a->m : b->m < a->m) a->m = b->m;
    } else if (op == TM_RED_ANY) {
        a->b = a->b || b->b;
    } else if (op == TM_RED_ALL) {
        a->b = a->b && b->b;
    } else if (tm__is_arg(op)) {
        /* the first NaN wins; ties keep the earlier index */
        if (!a->nan && (b->nan || (mx ? b->m > a->m : b->m < a->m))) {
            a->m = b->m;
            a->idx = b->idx;
        }
    } else if (mx ? b->m > a->m : b->m < a->m) { /* max, min */
        a->m = b->m;
    }
    a->nan = a->nan || b->nan;
    a->inf = a->inf || b->inf;
    a->n += b->n;
}

static double tm__acc_sum(const tm__acc *a)
{
    return isfinite(a->s) ? a->s + a->c : a->s;
}

static void tm__store_i64(void *p, tm_dtype dt, int64_t v)
{
    tm__convert(p, dt, 0, &v, TM_I64, 0, 1);
}

/* Writes the result of `a` to out (and values, for arg ops). */
static void tm__acc_final(const tm__red_job *j, const tm__acc *a, char *out,
                          tm_dtype odt, char *val, tm_dtype vdt)
{
    double v = 0, cnt = (double)j->count, p = j->p;
    if (tm__is_arg(j->op)) {
        tm__store_i64(out, odt, a->idx);
        if (!val) return;
        if (j->ints) tm__store_i64(val, vdt, a->im);
        else tm__store_f64(val, vdt, a->nan ? NAN : a->m);
        return;
    }
    if (j->ints) {
        if (j->op == TM_RED_SUM || j->op == TM_RED_PROD)
            tm__store_i64(out, odt, (int64_t)a->u);
        else tm__store_i64(out, odt, a->im);
        return;
    }
    switch (j->op) {
    case TM_RED_SUM: v = tm__acc_sum(a); break;
    case TM_RED_MEAN: v = tm__acc_sum(a) / cnt; break; /* 0/0: NaN */
    case TM_RED_PROD: v = a->s; break;
    case TM_RED_VAR:
    case TM_RED_STD: {
        /* as PyTorch and numpy: divide by max(0, n - correction) */
        double d = (double)a->n - p;
        v = a->m2 / (d > 0 ? d : 0);
        if (j->op == TM_RED_STD) v = sqrt(v);
        break;
    }
    case TM_RED_LOGSUMEXP:
        v = a->nan ? NAN : a->inf ? INFINITY
            : a->s == 0 ? -INFINITY : a->m + log(a->s);
        break;
    case TM_RED_NORM:
        if (p == 2) v = a->nan ? NAN : a->inf ? INFINITY : a->m * sqrt(a->m2);
        else if (fabs(p) == INFINITY) v = a->nan ? NAN : a->m;
        else if (p == 0 || p == 1) v = tm__acc_sum(a);
        else v = pow(tm__acc_sum(a), 1.0 / p);
        break;
    case TM_RED_ANY:
    case TM_RED_ALL: v = a->b; break;
    default: v = a->nan ? NAN : a->m; break; /* max, min */
    }
    tm__store_f64(out, odt, v);
}

typedef struct {
    const tm__red_job *job;
    tm__acc *acc;
    int64_t pos; /* index in the reduction of the next element */
} tm__red_run_ctx;

/* One run of the reduced region: n elements stepping strides[0] bytes. */
static void tm__red_run(char **ptrs, const int64_t *strides, int64_t n,
                        void *p)
{
    tm__red_run_ctx *r = p;
    const tm__red_job *j = r->job;
    union {
        double f[TM__RED_CHUNK];
        int64_t i[TM__RED_CHUNK];
    } buf;
    int64_t st = strides[0];
    bool fast = j->in_dt == TM_F32 && st == 4 &&
                (j->op == TM_RED_SUM || j->op == TM_RED_MEAN);
    for (int64_t done = 0; done < n; done += TM__RED_CHUNK) {
        int64_t k = n - done < TM__RED_CHUNK ? n - done : TM__RED_CHUNK;
        const char *src = ptrs[0] + done * st;
        tm__acc t;
        tm__acc_init(j, &t);
        if (j->ints) {
            tm__convert(buf.i, TM_I64, 8, src, j->in_dt, st, k);
            tm__fold_i64(j, buf.i, k, r->pos, &t);
        } else if (fast) {
            t.n = k;
            t.s = tm__sum4_f32((const float *)(const void *)src, k);
        } else {
            tm__convert(buf.f, TM_F64, 8, src, j->in_dt, st, k);
            tm__fold_f64(j, buf.f, k, r->pos, &t);
        }
        tm__acc_merge(j, r->acc, &t);
        r->pos += k;
    }
}

/* Folds elements [b, e) of the reduction starting at `in` into *acc. */
static void tm__red_one(const tm__red_job *j, tm__iter *it, char *in,
                        int64_t b, int64_t e, tm__acc *acc)
{
    it->data[0] = in;
    tm__acc_init(j, acc);
    tm__red_run_ctx r = {j, acc, b};
    tm__iter_range(it, b, e, tm__red_run, &r);
}

typedef struct {
    const tm__red_job *job;
    tm_dtype odt, vdt;
    bool vals;
    /* split mode */
    const tm__iter *outer;
    tm__acc *parts;
    int nparts;
} tm__red_exec;

/* Outer run (one output per element): ptrs = out, in, [values]. */
static void tm__red_outer(char **ptrs, const int64_t *strides, int64_t n,
                          void *p)
{
    const tm__red_exec *x = p;
    tm__iter it = x->job->red;
    for (int64_t i = 0; i < n; i++) {
        tm__acc a;
        tm__red_one(x->job, &it, ptrs[1] + i * strides[1], 0, x->job->count,
                    &a);
        tm__acc_final(x->job, &a, ptrs[0] + i * strides[0], x->odt,
                      x->vals ? ptrs[2] + i * strides[2] : NULL, x->vdt);
    }
}

typedef struct {
    const tm__red_exec *x;
    int part;
    int64_t o; /* output counter */
} tm__red_split_ctx;

static void tm__red_split_outer(char **ptrs, const int64_t *strides,
                                int64_t n, void *p)
{
    tm__red_split_ctx *s = p;
    const tm__red_exec *x = s->x;
    int64_t cnt = x->job->count, np = x->nparts;
    int64_t b = cnt * s->part / np, e = cnt * (s->part + 1) / np;
    tm__iter it = x->job->red;
    for (int64_t i = 0; i < n; i++, s->o++)
        tm__red_one(x->job, &it, ptrs[1] + i * strides[1], b, e,
                    &x->parts[s->o * np + s->part]);
}

static void tm__red_split_part(int part, int nparts, void *p)
{
    (void)nparts;
    tm__red_split_ctx s = {p, part, 0};
    tm__iter_range(s.x->outer, 0, s.x->outer->numel, tm__red_split_outer,
                   &s);
}

static void tm__red_split_finish(char **ptrs, const int64_t *strides,
                                 int64_t n, void *p)
{
    tm__red_split_ctx *s = p;
    const tm__red_exec *x = s->x;
    for (int64_t i = 0; i < n; i++, s->o++) {
        tm__acc a = x->parts[s->o * x->nparts];
        for (int q = 1; q < x->nparts; q++)
            tm__acc_merge(x->job, &a, &x->parts[s->o * x->nparts + q]);
        tm__acc_final(x->job, &a, ptrs[0] + i * strides[0], x->odt,
                      x->vals ? ptrs[2] + i * strides[2] : NULL, x->vdt);
    }
}

/* Reduces the last nred dims of in into out (and values). */
static tm_status tm__red_run_all(tm__red_job *j, const tm_buf *out,
                                 const tm_buf *vals, const tm_buf *in,
                                 int nred)
{
    TM_ASSERT(nred >= 0 && nred <= in->ndim, TM_ESTATE);
    int nout = in->ndim - nred;
    TM_ASSERT(out->ndim == nout, TM_ESTATE);
    tm_buf outer = *in, red;
    outer.ndim = nout;
    memset(&red, 0, sizeof red);
    red.handle = in->handle;
    red.offset = in->offset;
    red.dtype = in->dtype;
    red.ndim = nred;
    for (int d = 0; d < nred; d++) {
        red.shape[d] = in->shape[nout + d];
        red.strides[d] = in->strides[nout + d];
    }
    const tm_buf *rb[1] = {&red};
    tm__iter_init(&j->red, 1, rb);
    j->count = j->red.numel;
    j->in_dt = in->dtype;

    tm__iter oit;
    const tm_buf *bufs[3] = {out, &outer, vals};
    tm__iter_init(&oit, vals ? 3 : 2, bufs);
    if (oit.numel == 0) return TM_OK;
    tm__red_exec x = {.job = j, .odt = out->dtype,
                      .vdt = vals ? vals->dtype : TM_F32,
                      .vals = vals != NULL, .outer = &oit};

    int nt = tm_get_num_threads();
    int64_t np = j->count / TM__GRAIN;
    if (np > nt) np = nt;
    if (np < 2 || oit.numel >= nt) {
        int64_t grain = TM__GRAIN / (j->count > 0 ? j->count : 1);
        tm__iter_run(&oit, grain > 0 ? grain : 1, tm__red_outer, &x);
        return TM_OK;
    }
    /* few outputs, long reductions: split each reduction into np parts */
    tm__acc local[64];
    size_t need = (size_t)oit.numel * (size_t)np;
    tm__acc *parts = local;
    if (need > sizeof local / sizeof local[0]) {
        parts = tm__alloc(need * sizeof(tm__acc), "cpu reduce");
        if (!parts) return tm_last_status();
    }
    x.parts = parts;
    x.nparts = (int)np;
    tm__parallel_parts((int)np, tm__red_split_part, &x);
    tm__red_split_ctx fin = {&x, 0, 0};
    tm__iter_range(&oit, 0, oit.numel, tm__red_split_finish, &fin);
    if (parts != local) tm__dealloc(parts);
    return TM_OK;
}

tm_status tm__cpu_reduce(tm_ctx *ctx, tm_reduce_op op, const tm_buf *out, const tm_buf *in,
                         int nred, double p)
{
    (void)ctx;
    TM_ASSERT((unsigned)op < TM_REDUCE_OP_COUNT, TM_ESTATE);
    if (tm__red_cols_applies(op, out, in, nred))
        return tm__red_cols(op, out, in, nred);
    tm__red_job j;
    memset(&j, 0, sizeof j);
    j.op = (int)op;
    j.p = p;
    j.ints = !tm_dtype_is_float(in->dtype) &&
             (op == TM_RED_SUM || op == TM_RED_PROD || op == TM_RED_MAX ||
              op == TM_RED_MIN);
    return tm__red_run_all(&j, out, NULL, in, nred);
}

tm_status tm__cpu_arg_reduce(tm_ctx *ctx, bool is_max, const tm_buf *indices,
                             const tm_buf *values, const tm_buf *in)
{
    (void)ctx;
    TM_ASSERT(in->ndim >= 1 && in->shape[in->ndim - 1] > 0, TM_ESTATE);
    tm__red_job j;
    memset(&j, 0, sizeof j);
    j.op = is_max ? TM__RED_ARGMAX : TM__RED_ARGMIN;
    j.ints = !tm_dtype_is_float(in->dtype);
    if (values && !tm__ptr(values)) values = NULL;
    return tm__red_run_all(&j, indices, values, in, 1);
}
