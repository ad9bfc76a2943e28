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
/* A wide kernel for the 32-value formats: one weight row against exactly
 * TM__QNA8 activation rows, whose scales come pre-converted to F32 in
 * block-major order: da[8 b + j] = d of block b of row j (and sa the same
 * for Q8_1's s; NULL for Q8_0).  Its F32 work is vectorized across the
 * rows (one integer sum per row and block, then one multiply-add per
 * block for all 8), so it rounds differently from `rows`; the driver
 * uses it for whole groups of 8 rows only, decided by m alone. */
#define TM__QNA8 8
typedef void (*tm__qrows8_fn)(const void *w, const void *a, size_t a_stride,
                              int64_t nb, const float *da, const float *sa,
                              float *out);

typedef struct tm__qkern {
    const char *name;
    tm__qrows_fn rows[TM__QFMT_COUNT];
    tm__qrows8_fn rows8[TM__QFMT_COUNT]; /* NULL: none */
} tm__qkern;

const tm__qkern *tm__qkern_portable(void);
/* Each SIMD family's table, or NULL when built for another architecture
 * (the caller checks that the CPU runs it). */
const tm__qkern *tm__qkern_avx2(void);
const tm__qkern *tm__qkern_avx512vnni(void);
const tm__qkern *tm__qkern_neon(void);
const tm__qkern *tm__qkern_neondot(void);

/* The families this build has and this CPU runs now (the finer features
 * as cpu_features.h switches them), portable first; returns the count. */
#define TM__QKERN_MAX 8
int tm__qkern_families(const tm__qkern **out);
/* The family the backend uses: picked from tm__cpu_isa() and the finer
 * features (cpu_features.h). */
const tm__qkern *tm__qkern_current(void);
/* The row kernel the backend uses for weight dtype wt, and its wide
 * kernel (NULL when the family has none for wt). */
tm__qrows_fn tm__qrows_for(tm_dtype wt);
tm__qrows8_fn tm__qrows8_for(tm_dtype wt);

#endif
