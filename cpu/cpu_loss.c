/*
 * cpu_loss.c — row loops of cross entropy and nll_loss (see cpu_loss.h).
 *
 * F64 rows use the plain loops (exp in double).  F32 rows run exp through
 * the vectorized tm__vexp_f32 block by block (so a block stays in L1),
 * with sums in double: forward reads each row twice (max, exp-sum) plus
 * once more only when label smoothing or probability targets need
 * sum(q x); backward writes each gradient row once.
 */
#include "cpu_loss.h"

#include "../tensor/core/tensor_impl.h"
#include "vmath/vmath.h"

#include <math.h>

#define LOSS_GRAIN 32768 /* elements per thread-pool task */
#define LOSS_BLOCK 256   /* floats per exp block (1 KiB, stays in L1) */

typedef tm__loss_rows rows_ctx;

static bool ignored(const rows_ctx *rc, int64_t r)
{
    return rc->kind != TM__LOSS_CE_PROB && rc->tgt[r] == rc->ignore;
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
    if (rc->kind == TM__LOSS_CE_PROB)
        return (1.0 - rc->eps) * ((const double *)rc->prob)[r * rc->c + j] +
               rc->eps / c;
    return j == rc->tgt[r] ? 1.0 - rc->eps + rc->eps / c : rc->eps / c;
}

/* The same with F32 probabilities (the sum still in double). */
static inline double q_at_f32(const rows_ctx *rc, int64_t r, int64_t j)
{
    double c = (double)rc->c;
    if (rc->kind == TM__LOSS_CE_PROB)
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
    if (rc->kind == TM__LOSS_CE_INDEX && rc->eps == 0.0) {
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
    if (rc->kind == TM__LOSS_CE_INDEX && rc->eps == 0.0) {
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
        if (rc->kind == TM__LOSS_NLL) {
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
        if (ign || rc->kind == TM__LOSS_NLL) {
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
        if (rc->kind == TM__LOSS_NLL) {
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
        if (ign || rc->kind == TM__LOSS_NLL) {
            if (!gx) continue;
            for (int64_t j = 0; j < c; j++) gx[j] = 0.0f;
            if (!ign) gx[rc->tgt[r]] = (float)-s;
            continue;
        }
        double l = rc->lse[r], qs;
        float lf = (float)l;
        if (rc->kind == TM__LOSS_CE_INDEX) {
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
                if (rc->kind == TM__LOSS_CE_INDEX) {
                    float es = (float)(rc->eps / (double)c * s);
                    axmb_f32(gx + b, buf, ps, es, k);
                } else {
                    for (int64_t i = 0; i < k; i++)
                        gx[b + i] = buf[i] * ps -
                                    (float)(q_at_f32(rc, r, b + i) * s);
                }
            }
            if (rc->kind == TM__LOSS_CE_INDEX)
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

int64_t tm__loss_check_targets(const int64_t *tgt, int64_t m, int64_t c,
                               int64_t ignore, int64_t *count)
{
    int64_t n = 0;
    for (int64_t r = 0; r < m; r++) {
        if (tgt[r] == ignore) continue;
        if (tgt[r] < 0 || tgt[r] >= c) return r;
        n++;
    }
    *count = n;
    return -1;
}

void tm__loss_store_rows(void *out, tm_dtype dt, const double *loss,
                         int64_t m)
{
    size_t es = tm_dtype_size(dt);
    for (int64_t r = 0; r < m; r++)
        tm__store_f64((char *)out + (size_t)r * es, dt, loss[r]);
}

double tm__loss_reduce(const double *loss, int64_t m, tm_reduction red,
                       int64_t count)
{
    double total = 0.0;
    for (int64_t r = 0; r < m; r++) total += loss[r];
    if (red == TM_REDUCTION_MEAN) total /= (double)count;
    return total;
}
