/* quant_bounds.h — the round-trip error bounds of the quantized formats,
 * shared by the tests (test_quant_ref.c on synthetic data,
 * test_quant_formats.c on the committed real weights). */
#ifndef FOUNDRY_TEST_QUANT_BOUNDS_H
#define FOUNDRY_TEST_QUANT_BOUNDS_H

#include "../../quantize/quant_impl.h"

#include <math.h>

/* Per-value bound of the 32-value formats: half the step, the step widened
 * to a whole one where the format's grid stops short of the extreme
 * (Q4_0 / Q5_0 put the extreme at -8 / -16 and reach only +7 / +15), plus
 * the error of storing d (and m) as halves (relative 2^-11 times the
 * largest level), plus F32 rounding. */
static inline double tt_quant_bound_32(tm_dtype dt, const float *x)
{
    float amax = 0, mn = x[0], mx = x[0];
    for (int i = 0; i < 32; i++) {
        amax = fmaxf(amax, fabsf(x[i]));
        mn = fminf(mn, x[i]);
        mx = fmaxf(mx, x[i]);
    }
    const double h = 0x1p-11, f = 4 * 0x1p-24 * amax;
    switch (dt) {
    case TM_Q8_0:
    case TM_Q8_1: return amax / 127.0 * (0.5 + 127 * h) + f;
    case TM_Q4_0: return amax / 8.0 * (1.0 + 8 * h) + f;
    case TM_Q5_0: return amax / 16.0 * (1.0 + 16 * h) + f;
    case TM_Q4_1:
        return (mx - mn) / 15.0 * (0.5 + 15 * h) + fabs(mn) * h + f;
    case TM_Q5_1:
        return (mx - mn) / 31.0 * (0.5 + 31 * h) + fabs(mn) * h + f;
    default: return 0;
    }
}


/* K-quants: each super-block's RMS error stays below half the step a plain
 * uniform grid over its widest sub-block would have, R / (2 nmax) with R
 * the widest sub-block's range (our search can always pick that grid up
 * to the 6-bit scale rounding, and a uniform grid's RMS error is
 * step / sqrt(12), 0.58 of half the step, which leaves room for that
 * rounding). */
static inline double tt_quant_rms_bound_k(tm_dtype dt, const float *x)
{
    const int sub = dt == TM_Q6_K ? 16 : 32;
    const int nmax = dt == TM_Q4_K ? 15 : dt == TM_Q5_K ? 31 : 63;
    double R = 0;
    for (int s = 0; s < 256 / sub; s++) {
        const float *xs = x + sub * s;
        float mn = xs[0], mx = xs[0];
        for (int i = 0; i < sub; i++) {
            mn = fminf(mn, xs[i]);
            mx = fmaxf(mx, xs[i]);
        }
        if (dt != TM_Q6_K && mn > 0) mn = 0;
        R = fmax(R, (double)mx - mn);
    }
    return R / (2 * nmax);
}

/* Values (32-value formats: per value; K-quants: per super-block RMS)
 * of the round trip x -> y beyond their bound. */
static inline int64_t tt_quant_bound_violations(tm_dtype dt, const float *x,
                                                const float *y, int64_t n)
{
    const int64_t blk = tm__qtraits_of(dt)->block;
    int64_t bad = 0;
    for (int64_t b = 0; b < n / blk; b++) {
        const float *xb = x + b * blk, *yb = y + b * blk;
        if (blk == 32) {
            const double bound = tt_quant_bound_32(dt, xb);
            for (int i = 0; i < 32; i++)
                bad += fabs((double)xb[i] - yb[i]) > bound;
        } else {
            double se = 0;
            for (int i = 0; i < 256; i++)
                se += ((double)xb[i] - yb[i]) * ((double)xb[i] - yb[i]);
            bad += !(sqrt(se / 256) <= tt_quant_rms_bound_k(dt, xb));
        }
    }
    return bad;
}

#endif
