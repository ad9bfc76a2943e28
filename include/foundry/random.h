/*
 * foundry/random.h — one seeded, reproducible, splittable random generator.
 *
 * Foundry uses Philox4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11), a counter-based generator: the value for element
 * i of a fill depends only on (key, counter + i/4), so results are the same
 * for any thread count and, because the transforms use only IEEE-754
 * basic arithmetic in a fixed order, on every platform.
 *
 * A generator is a plain value: copy it to fork a stream at its current
 * position, tm_rng_split() to derive an independent one.  Functions that
 * take `tm_rng *rng` accept NULL for the process-wide default generator
 * (seeded with 0 at start, reseeded by tm_manual_seed; guarded by a lock).
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

/* A generator for `seed`, positioned at its start. */
tm_rng tm_rng_new(uint64_t seed);
/* Derives an independent generator from `rng` (advancing `rng`), so that a
 * worker or a layer can own its own stream reproducibly. */
tm_rng tm_rng_split(tm_rng *rng);
/* Fills out[n] with raw 32-bit Philox outputs (4 per counter step). */
void tm_rng_u32(tm_rng *rng, uint32_t *out, size_t n);
/* Reseeds the default generator. */
void tm_manual_seed(uint64_t seed);

/* Uniform [0,1), standard normal, and integers in [low, high) with the
 * default generator.  Float dtypes only for rand/randn; randint takes any
 * integer or float dtype.  New reference. */
tm_tensor *tm_rand(const int64_t *shape, int ndim, tm_dtype dt);
tm_tensor *tm_randn(const int64_t *shape, int ndim, tm_dtype dt);
tm_tensor *tm_randint(int64_t low, int64_t high, const int64_t *shape,
                      int ndim, tm_dtype dt);

/* In-place fills with an explicit generator (NULL: default).  Uniform over
 * [low, high); normal with `mean` and `std`; integers in [low, high).
 * The generator advances by ceil(numel / 4) counter steps for 32-bit draws
 * (uniform and normal in F32/F16/BF16) and ceil(numel / 2) for 64-bit
 * draws (F64, and every randint). */
tm_status tm_uniform_(tm_tensor *t, double low, double high, tm_rng *rng);
tm_status tm_normal_(tm_tensor *t, double mean, double std, tm_rng *rng);
tm_status tm_randint_(tm_tensor *t, int64_t low, int64_t high, tm_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
