/*
 * cpu_loss.h — row loops of cross entropy and nll_loss (CPU, internal).
 *
 * There is no backend-table entry for losses yet, so tensor/loss.c calls
 * these directly and accepts CPU tensors only; a device backend would add
 * an entry with this contract.
 */
#ifndef FOUNDRY_CPU_LOSS_H
#define FOUNDRY_CPU_LOSS_H

#include <stdbool.h>
#include <stdint.h>

enum { TM__LOSS_CE_INDEX, TM__LOSS_CE_PROB, TM__LOSS_NLL };

/* One forward or backward pass over M rows of C classes.  x [M, C] and
 * prob [M, C] are contiguous F32 (f64 false) or F64; tgt [M] holds class
 * indices (index kinds; values already checked to be in [0, C) or equal
 * to `ignore`).  Forward fills loss[M] and, for cross entropy, lse[M].
 * Backward fills gx and/or gy [M, C] (x's dtype; either may be NULL) from
 * lse and the per-row gradient scale s[M]:
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
    const double *s;
    void *gx, *gy;
} tm__loss_rows;

void tm__loss_rows_run(tm__loss_rows *rc, bool forward);

#endif
