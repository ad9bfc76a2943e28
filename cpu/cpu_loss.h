/*
 * cpu_loss.h — the element loops of cross entropy and nll_loss (CPU,
 * internal): the target check, the per-row forward and backward, and the
 * reduction of the per-row losses.
 *
 * There is no backend-table entry for losses yet, so nn/functional/loss.c
 * calls these directly and accepts CPU tensors only; a device backend
 * would add an entry with this contract.
 */
#ifndef FOUNDRY_CPU_LOSS_H
#define FOUNDRY_CPU_LOSS_H

#include "foundry/nn_functional.h"

#include <stdbool.h>
#include <stdint.h>

enum { TM__LOSS_CE_INDEX, TM__LOSS_CE_PROB, TM__LOSS_NLL };

/* tgt is (M): the first row r whose class index tgt[r] is neither
 * `ignore` nor in [0, C), or -1; then *count = the rows not ignored. */
int64_t tm__loss_check_targets(const int64_t *tgt, int64_t m, int64_t c,
                               int64_t ignore, int64_t *count);

/* One forward or backward pass over M rows of C classes.  x is (M, C) and
 * prob is (M, C), contiguous F32 (f64 false) or F64; tgt is (M), class
 * indices (index kinds; checked by tm__loss_check_targets).  Forward
 * fills loss (M) and, for cross entropy, lse (M).  Backward fills gx
 * and/or gy (M, C) (x's dtype; either may be NULL) from lse and each
 * row's share s of the upstream gradient g (F64):
 *   s = g[r] (TM_REDUCTION_NONE, g is (M)), g[0] (SUM) or
 *       g[0] / count (MEAN; g is (1))
 *   gx = (softmax(x) * Q - q) * s,   gy = (1 - eps) (lse - x) * s,
 * q = (1 - eps) y + eps / C the target distribution, Q its sum (nll:
 * gx = -s at the target).  Rows are split over the thread pool; each row
 * is computed the same way for any thread count. */
typedef struct tm__loss_rows {
    int kind;
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

/* loss is (M), out is (M) of dtype dt: out[r] = loss[r] rounded to dt. */
void tm__loss_store_rows(void *out, tm_dtype dt, const double *loss,
                         int64_t m);

/* loss is (M): their sum in row order, divided by count when red is
 * TM_REDUCTION_MEAN. */
double tm__loss_reduce(const double *loss, int64_t m, tm_reduction red,
                       int64_t count);

#endif
