/*
 * spirals.h — the two interleaved spirals the training tests learn
 * (1.5 turns each, TT_SP_PER points per class), shared by the CPU and the
 * device training tests so both train on the same data.
 */
#ifndef FOUNDRY_TEST_SPIRALS_H
#define FOUNDRY_TEST_SPIRALS_H

#include <stdint.h>

enum { TT_SP_PER = 64, TT_SP_N = 2 * TT_SP_PER };

/* pts[2 * TT_SP_N] gets (x, y) per point, labels[TT_SP_N] its class. */
void tt_make_spirals(float *pts, int64_t *labels);

#endif
