/* cpu_pool_max22.h — the 2x2 / stride-2 F32 max pooling loop of the CPU's
 * pool entry (cpu_pool.c; internal). */
#ifndef FOUNDRY_CPU_POOL_MAX22_H
#define FOUNDRY_CPU_POOL_MAX22_H

#include "foundry/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether q is 2x2 windows at stride 2 without padding, inside x. */
bool tm__pool_max22_ok(const tm_pool_geom *q);
/* Planes [p0, p1) of the pool entry's max pooling for such a q (x, y and
 * argmax ix as in tm__cpu_pool). */
void tm__pool_max22_f32(const tm_pool_geom *q, const float *x, float *y,
                        int64_t *ix, int64_t p0, int64_t p1);

#endif
