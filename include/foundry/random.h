/*
 * foundry/random.h — one seeded, reproducible, splittable random generator.
 *
 * Foundry uses Philox4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11), a counter-based generator: block b of a
 * generator is Philox applied to the 128-bit counter (b, 0) under the
 * 64-bit key, giving four 32-bit words x0..x3.  The value of element i of a
 * fill depends only on (key, counter + i / per_block, i % per_block), so
 * results are the same for any thread count and, because the transforms
 * below use only integer arithmetic and IEEE-754 basic operations (+ - * /
 * sqrt, with Foundry's own log and sin/cos instead of the platform's libm)
 * in a fixed order, the same on every platform and every device (a device
 * whose backend declines a fill's dtype is given the CPU's fill).
 *
 * Layout (what a fill of n elements produces; "row-major" means the
 * row-major order of the tensor as viewed, also for non-contiguous views):
 *   key words (seed low 32 bits, seed high 32 bits); counter words
 *   (block low, block high, 0, 0).
 *   32-bit draws (uniform and normal in F32, F16, BF16): 4 elements per
 *   block, element i takes word i % 4 of block counter + i / 4.
 *   64-bit draws (F64, and randint in every dtype): 2 elements per block,
 *   element i takes u = x[2j] | x[2j+1] << 32 with j = i % 2, of block
 *   counter + i / 2.
 *   uniform:  32-bit word w -> (w >> 8) 2^-24, 64-bit u -> (u >> 11) 2^-53,
 *             in [0, 1); then low + (high - low) x in double, rounded once
 *             to the dtype.  A result that rounds to >= high becomes the
 *             largest value of the dtype below high (or, when [low, high)
 *             holds no value of the dtype, low rounded); low == high fills
 *             low rounded.
 *   normal:   Box–Muller on a pair of draws (a, b): u1 = the uniform of a
 *             shifted up one step, in (0, 1]; u2 = the uniform of b;
 *             r = sqrt(-2 log u1); the even element of the pair gets
 *             r cos(2 pi u2), the odd one r sin(2 pi u2).  Pairs are words
 *             (x0, x1) and (x2, x3) for 32-bit draws, (u0, u1) of the
 *             block for F64.  The value is mean + std z in double, rounded
 *             once to the dtype.  log and sincos are within about 1 ulp of
 *             the exact functions.
 *   randint:  low + floor(u (high - low) / 2^64) (Lemire's multiply without
 *             rejection: each value's probability is off by at most
 *             (high - low) / 2^64 of itself, below 2^-10 for any range
 *             allowed here).
 * After a fill the counter has advanced by the number of blocks used:
 * ceil(n / 4) for 32-bit draws and ceil(n / 2) for 64-bit draws, so the
 * next fill starts on a fresh block.  A failed call leaves the generator as
 * it was.  The counter wraps modulo 2^64.
 *
 * A generator is a plain value: copy it to fork a stream at its current
 * position, tm_rng_split() to derive an independent one.  A generator that
 * several threads use at once needs the caller's lock.  Functions that take
 * `tm_rng *rng` accept NULL for the process-wide default generator (seeded
 * with 0 at start, reseeded by tm_manual_seed; guarded by a lock, so
 * concurrent users each get disjoint blocks in some order).
 */
#ifndef FOUNDRY_RANDOM_H
#define FOUNDRY_RANDOM_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tm_rng {
    uint64_t key;     /* Philox key (from the seed) */
    uint64_t counter; /* next unused 128-bit block (low 64 bits) */
} tm_rng;

/* A generator for `seed` at its start: {key = seed, counter = 0}. */
tm_rng tm_rng_new(uint64_t seed);
/* Derives an independent generator from `rng`, so that a worker or a layer
 * can own its own stream reproducibly: the child's key is
 * mix(key ^ mix(counter + 0x9E3779B97F4A7C15)), where mix is splitmix64's
 * finalizer, its counter 0; `rng` advances by one block. */
tm_rng tm_rng_split(tm_rng *rng);
/* Fills out[n] with raw 32-bit Philox outputs: words x0..x3 of each block
 * in turn; advances ceil(n / 4) blocks.  out NULL with n > 0 sets an error
 * (TM_EINVAL) and does nothing. */
void tm_rng_u32(tm_rng *rng, uint32_t *out, size_t n);
/* Reseeds the default generator: tm_rng_new(seed). */
void tm_manual_seed(uint64_t seed);

/* Uniform [0,1), standard normal, and integers in [low, high) with the
 * default generator, as the fills below.  rand and randn take float dtypes
 * only (TM_EDTYPE otherwise); randint takes any dtype that holds every
 * integer of [low, high) exactly (TM_EINVAL otherwise): F32 up to 2^24 in
 * magnitude, F64 2^53, F16 2048, BF16 256, BOOL [0, 2).  Bad shapes fail
 * as in tm_empty.  New reference. */
tm_tensor *tm_rand(const int64_t *shape, int ndim, tm_dtype dt);
tm_tensor *tm_randn(const int64_t *shape, int ndim, tm_dtype dt);
tm_tensor *tm_randint(int64_t low, int64_t high, const int64_t *shape,
                      int ndim, tm_dtype dt);

/* In-place fills with an explicit generator (NULL: default), in row-major
 * order of t's view (a non-contiguous t is filled through a contiguous
 * temporary).  Uniform over [low, high) (finite, low <= high, high - low
 * finite) and normal with `mean` and `std` (finite, std >= 0) need a float
 * dtype; integers in [low, high) need low < high, both within +-2^53
 * (backends receive them as doubles), and a dtype that holds them (see
 * tm_randint).  A t with a broadcast (stride 0) dim of size > 1 is
 * rejected: its elements share memory.  The generator advances by
 * ceil(numel / 4) counter steps for 32-bit draws (uniform and normal in
 * F32/F16/BF16) and ceil(numel / 2) for 64-bit draws (F64, and every
 * randint). */
tm_status tm_uniform_(tm_tensor *t, double low, double high, tm_rng *rng);
tm_status tm_normal_(tm_tensor *t, double mean, double std, tm_rng *rng);
tm_status tm_randint_(tm_tensor *t, int64_t low, int64_t high, tm_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
