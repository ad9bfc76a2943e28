/*
 * foundry/swarm.h — data-parallel training across processes and machines.
 *
 * Gradient compression: TopK by magnitude (exact, deterministic).
 */
#ifndef FOUNDRY_SWARM_H
#define FOUNDRY_SWARM_H

#include "foundry/base.h"
#include "foundry/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The k entries of x (F32, any shape, read flat in row-major order)
 * largest in magnitude: *indices a new I64 [k] tensor of flat positions in
 * ascending order, *values a new F32 [k] tensor of x at them.  Ties go to
 * the lower position, so the result is the same for any thread count.
 * 0 <= k <= numel (TM_EINVAL otherwise); TM_EDTYPE for a non-F32 x. */
tm_status tm_swarm_topk(const tm_tensor *x, int64_t k, tm_tensor **indices,
                        tm_tensor **values);

#ifdef __cplusplus
}
#endif

#endif
