/*
 * cpu_loss.h — the row loops behind the CPU backend's `loss` and
 * `loss_backward` entries (internal to cpu/; contracts in
 * foundry/backend.h).
 *
 * Front ends (nn/functional/loss.c) never call these: they go through the
 * backend table, so the same front end serves every device.  The entries
 * (cpu_loss.c) make their operands dense in the compute dtype (F64 when x
 * is F64, else F32; F16/BF16 are converted, as tm_to_dtype converts),
 * check the class indices, run these loops and reduce or store the
 * per-row losses; outputs of another dtype are converted back once.
 */
#ifndef FOUNDRY_CPU_LOSS_H
#define FOUNDRY_CPU_LOSS_H

#include "foundry/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* One forward or backward pass over M rows of C classes.  x is (M, C) and
 * prob is (M, C), contiguous F32 (f64 false) or F64; tgt is (M), class
 * indices (index kinds), every one ignore or in [0, C).  Forward fills
 * loss (M) and, for cross entropy, lse (M).  Backward fills gx and/or gy
 * (M, C) (either may be NULL) from lse and each row's share s of the
 * upstream gradient g (F64):
 *   s = g[r] (TM_REDUCTION_NONE, g is (M)), g[0] (SUM) or
 *       g[0] / count (MEAN; g is (1), count the rows not ignored)
 *   gx = (softmax(x) * Q - q) * s,   gy = (1 - eps) (lse - x) * s,
 * q = (1 - eps) y + eps / C the target distribution, Q its sum (nll:
 * gx = -s at the target).  Rows are split over the thread pool; each row
 * is computed the same way for any thread count. */
typedef struct tm__loss_rows {
    tm_loss_kind kind;
    bool f64;
    int64_t m, c;
    const void *x, *prob;
    const int64_t *tgt;
    int64_t ignore;
    double eps;
    double *lse, *loss;
    const double *g;
    tm_reduction reduction;
    double count;
    void *gx, *gy;
} tm__loss_rows;

void tm__loss_rows_run(tm__loss_rows *rc, bool forward);

#endif
