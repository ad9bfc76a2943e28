/*
 * cpu_loss.c — the CPU backend's `loss` and `loss_backward` entries
 * (foundry/backend.h) and the row loops of cross entropy and nll_loss
 * behind them (cpu_loss.h).
 *
 * F64 rows use the plain loops (exp in double).  F32 rows run exp through
 * the vectorized tm__vexp_f32 block by block (so a block stays in L1),
 * with sums in double: forward reads each row twice (max, exp-sum) plus
 * once more only when label smoothing or probability targets need
 * sum(q x); backward writes each gradient row once.  F16 and BF16
 * operands run as F32 (converted on entry, results converted back once),
 * so they give exactly what converting them with tm_to_dtype first would.
 * The class-index check runs before any row, and fails the call.
 */
#include "cpu_loss.h"

#include "cpu_impl.h"
#include "vmath/vmath.h"

#include <math.h>

#define LOSS_GRAIN 32768 /* elements per thread-pool task */
#define LOSS_BLOCK 256   /* floats per exp block (1 KiB, stays in L1) */

typedef tm__loss_rows rows_ctx;

static bool ignored(const rows_ctx *rc, int64_t r)
{
    return rc->kind != TM_LOSS_CE_PROB && rc->tgt[r] == rc->ignore;
}

/* Row r's share of the upstream gradient (backward). */
static double row_scale(const rows_ctx *rc, int64_t r)
{
    if (rc->reduction == TM_REDUCTION_NONE) return rc->g[r];
    if (rc->reduction == TM_REDUCTION_SUM) return rc->g[0];
    return rc->g[0] / rc->count;
}

/* q_j of row r: (1 - eps) y_j + eps / C, y the one-hot or probability
 * target (F64 probabilities). */
static inline double q_at_f64(const rows_ctx *rc, int64_t r, int64_t j)
{
    double c = (double)rc->c;
    if (rc->kind == TM_LOSS_CE_PROB)
        return (1.0 - rc->eps) * ((const double *)rc->prob)[r * rc->c + j] +
               rc->eps / c;
    return j == rc->tgt[r] ? 1.0 - rc->eps + rc->eps / c : rc->eps / c;
}

/* The same with F32 probabilities (the sum still in double). */
static inline double q_at_f32(const rows_ctx *rc, int64_t r, int64_t j)
{
    double c = (double)rc->c;
    if (rc->kind == TM_LOSS_CE_PROB)
        return (1.0 - rc->eps) *
                   (double)((const float *)rc->prob)[r * rc->c + j] +
               rc->eps / c;
    return j == rc->tgt[r] ? 1.0 - rc->eps + rc->eps / c : rc->eps / c;
}

/* *qs = sum(q) and *qx = sum(q x) of row r, xr its logits (q == 0
 * entries skipped, so a -inf logit with zero target weight does not give
 * NaN; a plain index target without smoothing reads its one logit). */
static void q_sums_f64(const rows_ctx *rc, int64_t r, const double *xr,
                       double *qs, double *qx)
{
    if (rc->kind == TM_LOSS_CE_INDEX && rc->eps == 0.0) {
        *qs = 1.0;
        *qx = xr[rc->tgt[r]];
        return;
    }
    double s = 0.0, sx = 0.0;
    for (int64_t j = 0; j < rc->c; j++) {
        double q = q_at_f64(rc, r, j);
        if (q != 0.0) {
            s += q;
            sx += q * xr[j];
        }
    }
    *qs = s;
    *qx = sx;
}

static void q_sums_f32(const rows_ctx *rc, int64_t r, const float *xr,
                       double *qs, double *qx)
{
    if (rc->kind == TM_LOSS_CE_INDEX && rc->eps == 0.0) {
        *qs = 1.0;
        *qx = (double)xr[rc->tgt[r]];
        return;
    }
    double s = 0.0, sx = 0.0;
    for (int64_t j = 0; j < rc->c; j++) {
        double q = q_at_f32(rc, r, j);
        if (q != 0.0) {
            s += q;
            sx += q * (double)xr[j];
        }
    }
    *qs = s;
    *qx = sx;
}

/* ---------------------------------------------------------------- F64 */

static void fwd_f64(const rows_ctx *rc, int64_t begin, int64_t end)
{
    int64_t c = rc->c;
    for (int64_t r = begin; r < end; r++) {
        const double *xr = (const double *)rc->x + r * c;
        if (ignored(rc, r)) {
            rc->loss[r] = 0.0;
            continue;
        }
        if (rc->kind == TM_LOSS_NLL) {
            rc->loss[r] = -xr[rc->tgt[r]];
            continue;
        }
        double mx = -INFINITY, se = 0.0, qs, qx;
        bool nan = false;
        for (int64_t j = 0; j < c; j++) {
            if (xr[j] > mx) mx = xr[j];
            if (isnan(xr[j])) nan = true;
        }
        /* NaN or +inf in the row, or only -inf: NaN, as log_softmax */
        bool bad = nan || !isfinite(mx);
        for (int64_t j = 0; j < c && !bad; j++) se += exp(xr[j] - mx);
        double l = bad ? NAN : mx + log(se);
        q_sums_f64(rc, r, xr, &qs, &qx);
        rc->lse[r] = l;
        rc->loss[r] = l * qs - qx;
    }
}

static void bwd_f64(const rows_ctx *rc, int64_t begin, int64_t end)
{
    int64_t c = rc->c;
    for (int64_t r = begin; r < end; r++) {
        const double *xr = (const double *)rc->x + r * c;
        double *gx = rc->gx ? (double *)rc->gx + r * c : NULL;
        double *gy = rc->gy ? (double *)rc->gy + r * c : NULL;
        double s = row_scale(rc, r);
        bool ign = ignored(rc, r);
        if (ign || rc->kind == TM_LOSS_NLL) {
            if (!gx) continue;
            for (int64_t j = 0; j < c; j++) gx[j] = 0.0;
            if (!ign) gx[rc->tgt[r]] = -s;
            continue;
        }
        double l = rc->lse[r], qs = 0.0;
        for (int64_t j = 0; j < c; j++) qs += q_at_f64(rc, r, j);
        for (int64_t j = 0; j < c; j++) {
            if (gx) gx[j] = (exp(xr[j] - l) * qs - q_at_f64(rc, r, j)) * s;
            if (gy) gy[j] = (1.0 - rc->eps) * (l - xr[j]) * s;
        }
    }
}

/* ---------------------------------------------------------------- F32 */

/* Sum of k floats in 8 interleaved lanes (vectorizable, and the same
 * order on every call). */
static double block_sum(const float *v, int64_t k)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= k; i += 8)
        for (int u = 0; u < 8; u++) acc[u] += v[i + u];
    double s = 0.0;
    for (int u = 0; u < 8; u++) s += acc[u];
    for (; i < k; i++) s += v[i];
    return s;
}

/* The largest of x[c] (NaN skipped) and whether any is NaN, in 8 lanes
 * that the compiler vectorizes.  The maximum does not depend on the order
 * it is taken in, except for the sign of a zero maximum, which no result
 * here depends on (x - (+-0) and (+-0) + log(1) come out the same). */
static float row_max_f32(const float *restrict x, int64_t c, bool *nan)
{
    float m[8];
    int bad[8] = {0};
    for (int u = 0; u < 8; u++) m[u] = -INFINITY;
    int64_t j = 0;
    for (; j + 8 <= c; j += 8)
        for (int u = 0; u < 8; u++) {
            float v = x[j + u];
            m[u] = v > m[u] ? v : m[u];
            bad[u] |= v != v;
        }
    float mx = -INFINITY;
    bool n = false;
    for (int u = 0; u < 8; u++) {
        mx = m[u] > mx ? m[u] : mx;
        n |= bad[u] != 0;
    }
    for (; j < c; j++) {
        mx = x[j] > mx ? x[j] : mx;
        n |= x[j] != x[j];
    }
    *nan = n;
    return mx;
}

/* dst[i] = x[i] - m and dst[i] = v[i] * a - b for i < k, in blocks of 8
 * (a loop shape gcc vectorizes at -O2; elementwise, so the same bits). */
static void sub_f32(float *restrict dst, const float *restrict x, float m,
                    int64_t k)
{
    int64_t i = 0;
    for (; i + 8 <= k; i += 8)
        for (int u = 0; u < 8; u++) dst[i + u] = x[i + u] - m;
    for (; i < k; i++) dst[i] = x[i] - m;
}

static void axmb_f32(float *restrict dst, const float *restrict v, float a,
                     float b, int64_t k)
{
    int64_t i = 0;
    for (; i + 8 <= k; i += 8)
        for (int u = 0; u < 8; u++) dst[i + u] = v[i + u] * a - b;
    for (; i < k; i++) dst[i] = v[i] * a - b;
}

static void fwd_f32(const rows_ctx *rc, int64_t begin, int64_t end)
{
    int64_t c = rc->c;
    float buf[LOSS_BLOCK];
    for (int64_t r = begin; r < end; r++) {
        const float *xr = (const float *)rc->x + r * c;
        if (ignored(rc, r)) {
            rc->loss[r] = 0.0;
            continue;
        }
        if (rc->kind == TM_LOSS_NLL) {
            rc->loss[r] = -(double)xr[rc->tgt[r]];
            continue;
        }
        bool nan;
        float mx = row_max_f32(xr, c, &nan);
        bool bad = nan || !isfinite(mx);
        double se = 0.0, qs, qx;
        for (int64_t b = 0; b < c && !bad; b += LOSS_BLOCK) {
            int64_t k = c - b < LOSS_BLOCK ? c - b : LOSS_BLOCK;
            sub_f32(buf, xr + b, mx, k);
            tm__vexp_f32(k, buf, buf);
            se += block_sum(buf, k);
        }
        double l = bad ? NAN : (double)mx + log(se);
        q_sums_f32(rc, r, xr, &qs, &qx);
        rc->lse[r] = l;
        rc->loss[r] = l * qs - qx;
    }
}

static void bwd_f32(const rows_ctx *rc, int64_t begin, int64_t end)
{
    int64_t c = rc->c;
    float buf[LOSS_BLOCK];
    for (int64_t r = begin; r < end; r++) {
        const float *xr = (const float *)rc->x + r * c;
        float *gx = rc->gx ? (float *)rc->gx + r * c : NULL;
        float *gy = rc->gy ? (float *)rc->gy + r * c : NULL;
        double s = row_scale(rc, r);
        bool ign = ignored(rc, r);
        if (ign || rc->kind == TM_LOSS_NLL) {
            if (!gx) continue;
            for (int64_t j = 0; j < c; j++) gx[j] = 0.0f;
            if (!ign) gx[rc->tgt[r]] = (float)-s;
            continue;
        }
        double l = rc->lse[r], qs;
        float lf = (float)l;
        if (rc->kind == TM_LOSS_CE_INDEX) {
            qs = 1.0;
        } else {
            qs = 0.0;
            for (int64_t j = 0; j < c; j++) qs += q_at_f32(rc, r, j);
        }
        if (gx) {
            float ps = (float)(qs * s);
            for (int64_t b = 0; b < c; b += LOSS_BLOCK) {
                int64_t k = c - b < LOSS_BLOCK ? c - b : LOSS_BLOCK;
                sub_f32(buf, xr + b, lf, k);
                tm__vexp_f32(k, buf, buf);
                if (rc->kind == TM_LOSS_CE_INDEX) {
                    float es = (float)(rc->eps / (double)c * s);
                    axmb_f32(gx + b, buf, ps, es, k);
                } else {
                    for (int64_t i = 0; i < k; i++)
                        gx[b + i] = buf[i] * ps -
                                    (float)(q_at_f32(rc, r, b + i) * s);
                }
            }
            if (rc->kind == TM_LOSS_CE_INDEX)
                gx[rc->tgt[r]] -= (float)((1.0 - rc->eps) * s);
        }
        if (gy) {
            for (int64_t j = 0; j < c; j++)
                gy[j] = (float)((1.0 - rc->eps) * (l - (double)xr[j]) * s);
        }
    }
}

/* --------------------------------------------------------------- driver */

static void fwd_range(int64_t begin, int64_t end, void *ctx)
{
    const rows_ctx *rc = ctx;
    if (rc->f64)
        fwd_f64(rc, begin, end);
    else
        fwd_f32(rc, begin, end);
}

static void bwd_range(int64_t begin, int64_t end, void *ctx)
{
    const rows_ctx *rc = ctx;
    if (rc->f64)
        bwd_f64(rc, begin, end);
    else
        bwd_f32(rc, begin, end);
}

void tm__loss_rows_run(tm__loss_rows *rc, bool forward)
{
    int64_t grain = rc->c > 0 ? LOSS_GRAIN / rc->c : LOSS_GRAIN;
    tm__parallel_for(rc->m, grain > 0 ? grain : 1,
                     forward ? fwd_range : bwd_range, rc);
}


/* ---------------------------------------------------------- the entries */

/* An entry's buffer as a dense array of dtype dt: the buffer's own memory
 * when it is one, else a host copy (converted as the copy entry converts,
 * so an F16 x reads exactly as tm_to_dtype(x, F32) would). */
typedef struct {
    const tm_buf *b; /* NULL or handle NULL: absent */
    void *p;         /* the dense array (NULL when absent) */
    void *tmp;       /* owned copy, or NULL */
    tm_buf tb;       /* the copy as a buffer */
} dense;

static bool is_dense(const tm_buf *b, tm_dtype dt)
{
    if (b->dtype != dt) return false;
    int64_t expect = 1;
    for (int i = b->ndim - 1; i >= 0; i--) {
        if (b->shape[i] == 0) return true;
        if (b->shape[i] != 1 && b->strides[i] != expect) return false;
        expect *= b->shape[i];
    }
    return true;
}

/* d views b as dt; `in`: its values are read (copied in when b is not
 * dense), else it is only written (dense_end copies it back). */
static tm_status dense_begin(tm_ctx *ctx, dense *d, const tm_buf *b,
                             tm_dtype dt, bool in)
{
    d->b = b;
    d->p = d->tmp = NULL;
    if (!b || !b->handle) return TM_OK;
    if (is_dense(b, dt)) {
        d->p = tm__ptr(b);
        return TM_OK;
    }
    int64_t n = 1;
    for (int i = 0; i < b->ndim; i++) n *= b->shape[i];
    d->tmp = tm__alloc((size_t)(n > 0 ? n : 1) * tm_dtype_size(dt), "loss");
    if (!d->tmp) return tm_last_status();
    tm_buf tb = {.handle = d->tmp, .dtype = dt, .ndim = b->ndim};
    for (int i = 0; i < b->ndim; i++) tb.shape[i] = b->shape[i];
    tm__contiguous_strides(tb.shape, tb.ndim, tb.strides);
    d->tb = tb;
    d->p = d->tmp;
    return in && n > 0 ? tm__cpu_copy(ctx, &d->tb, b) : TM_OK;
}

/* Copies an output's dense copy back into its buffer (when st is TM_OK)
 * and frees the copy; returns st or the copy's status. */
static tm_status dense_end(tm_ctx *ctx, dense *d, bool out, tm_status st)
{
    if (!d->tmp) return st;
    if (out && st == TM_OK) st = tm__cpu_copy(ctx, d->b, &d->tb);
    tm__dealloc(d->tmp);
    d->tmp = NULL;
    return st;
}

/* Range-checks the class indices tgt (M) and counts the rows not ignored
 * (the mean's divisor) into *count. */
static tm_status check_targets(const int64_t *tgt, int64_t m, int64_t c,
                               int64_t ignore, int64_t *count)
{
    int64_t n = 0;
    for (int64_t r = 0; r < m; r++) {
        if (tgt[r] == ignore) continue;
        if (tgt[r] < 0 || tgt[r] >= c)
            return tm__errf(TM_ERANGE, "loss", "target %lld at position "
                            "%lld is out of range for %lld classes",
                            (long long)tgt[r], (long long)r, (long long)c);
        n++;
    }
    *count = n;
    return TM_OK;
}

tm_status tm__cpu_loss(tm_ctx *ctx, const tm_buf *out, const tm_buf *lse,
                       const tm_buf *x, const tm_buf *target,
                       const tm_loss_params *p)
{
    int64_t m = x->shape[0], c = x->shape[1], count = m;
    bool f64 = x->dtype == TM_F64, prob = p->kind == TM_LOSS_CE_PROB;
    tm_dtype cd = f64 ? TM_F64 : TM_F32;
    dense dx = {0}, dt = {0}, dl = {0};
    double *loss = NULL;
    tm_status st = dense_begin(ctx, &dt, target, prob ? cd : TM_I64, true);
    if (!st && !prob)
        st = check_targets(dt.p, m, c, p->ignore_index, &count);
    if (!st) st = dense_begin(ctx, &dx, x, cd, true);
    if (!st && p->kind != TM_LOSS_NLL)
        st = dense_begin(ctx, &dl, lse, TM_F64, false);
    if (!st) {
        loss = tm__alloc((size_t)(m > 0 ? m : 1) * sizeof(double), "loss");
        if (!loss) st = tm_last_status();
    }
    if (!st) {
        tm__loss_rows rc = {
            .kind = p->kind, .f64 = f64, .m = m, .c = c, .x = dx.p,
            .prob = prob ? dt.p : NULL, .tgt = prob ? NULL : dt.p,
            .ignore = p->ignore_index, .eps = p->label_smoothing,
            .lse = dl.p, .loss = loss};
        tm__loss_rows_run(&rc, true);
        char *o = tm__ptr(out);
        if (p->reduction == TM_REDUCTION_NONE) {
            /* each row's loss rounded once to out's dtype */
            size_t step = tm_dtype_size(out->dtype) *
                          (size_t)(out->ndim ? out->strides[0] : 0);
            for (int64_t r = 0; r < m; r++)
                tm__store_f64(o + (size_t)r * step, out->dtype, loss[r]);
        } else {
            /* the sum in row order, then the mean's division */
            double total = 0.0;
            for (int64_t r = 0; r < m; r++) total += loss[r];
            if (p->reduction == TM_REDUCTION_MEAN) total /= (double)count;
            tm__store_f64(o, out->dtype, total);
        }
    }
    tm__dealloc(loss);
    st = dense_end(ctx, &dl, true, st);
    dense_end(ctx, &dx, false, TM_OK);
    dense_end(ctx, &dt, false, TM_OK);
    return st;
}

tm_status tm__cpu_loss_backward(tm_ctx *ctx, const tm_buf *gx,
                                const tm_buf *gtarget, const tm_buf *g,
                                const tm_buf *x, const tm_buf *target,
                                const tm_buf *lse, const tm_loss_params *p)
{
    int64_t m = x->shape[0], c = x->shape[1], count = m;
    bool f64 = x->dtype == TM_F64, prob = p->kind == TM_LOSS_CE_PROB;
    tm_dtype cd = f64 ? TM_F64 : TM_F32;
    dense dx = {0}, dt = {0}, dl = {0}, dg = {0}, dgx = {0}, dgy = {0};
    tm_status st = dense_begin(ctx, &dt, target, prob ? cd : TM_I64, true);
    /* the mean's divisor, recounted from the targets */
    if (!st && !prob)
        st = check_targets(dt.p, m, c, p->ignore_index, &count);
    if (!st) st = dense_begin(ctx, &dx, x, cd, true);
    if (!st) st = dense_begin(ctx, &dg, g, TM_F64, true);
    if (!st && p->kind != TM_LOSS_NLL)
        st = dense_begin(ctx, &dl, lse, TM_F64, true);
    if (!st) st = dense_begin(ctx, &dgx, gx, cd, false);
    if (!st && prob) st = dense_begin(ctx, &dgy, gtarget, cd, false);
    if (!st && (dgx.p || dgy.p)) {
        tm__loss_rows rc = {
            .kind = p->kind, .f64 = f64, .m = m, .c = c, .x = dx.p,
            .prob = prob ? dt.p : NULL, .tgt = prob ? NULL : dt.p,
            .ignore = p->ignore_index, .eps = p->label_smoothing,
            .lse = dl.p, .g = dg.p, .reduction = p->reduction,
            .count = (double)count, .gx = dgx.p, .gy = dgy.p};
        tm__loss_rows_run(&rc, false);
    }
    st = dense_end(ctx, &dgx, true, st);
    st = dense_end(ctx, &dgy, true, st);
    dense_end(ctx, &dl, false, TM_OK);
    dense_end(ctx, &dg, false, TM_OK);
    dense_end(ctx, &dx, false, TM_OK);
    dense_end(ctx, &dt, false, TM_OK);
    return st;
}
