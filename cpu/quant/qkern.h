/*
 * qkern.h — the per-ISA kernel tables of cpu/quant/ (internal to it).
 *
 * A row kernel computes one weight row (nb blocks of its format) against
 * na activation rows (1 <= na <= TM__QNA, each a_stride bytes after the
 * previous, already quantized to the format's activation type):
 * out[j] = the block dot product of the weight row and activation row j.
 * Each out[j] is computed the same way whatever na is, so the grouping of
 * activation rows never changes a result.
 */
#ifndef FOUNDRY_QKERN_H
#define FOUNDRY_QKERN_H

#include "quant_kernels.h"

#include <stdbool.h>
#include <stddef.h>

#define TM__QNA 4 /* activation rows one kernel call takes at most */

typedef void (*tm__qrows_fn)(const void *w, const void *a, size_t a_stride,
                             int na, int64_t nb, float *out);

/* Kernel tables, indexed by dtype - TM_Q8_0 (NULL for Q8_1 / Q8_K and for
 * formats a family lacks: the portable one is used for those). */
#define TM__QFMT_COUNT (TM_Q8_K - TM_Q8_0 + 1)
typedef struct tm__qkern {
    const char *name;
    tm__qrows_fn rows[TM__QFMT_COUNT];
} tm__qkern;

const tm__qkern *tm__qkern_portable(void);

/* The families this build has and this CPU runs now (the finer features
 * as cpu_features.h switches them), portable first; returns the count. */
#define TM__QKERN_MAX 8
int tm__qkern_families(const tm__qkern **out);
/* The family the backend uses: picked from tm__cpu_isa() and the finer
 * features (cpu_features.h). */
const tm__qkern *tm__qkern_current(void);
/* The row kernel the backend uses for weight dtype wt. */
tm__qrows_fn tm__qrows_for(tm_dtype wt);

#endif
