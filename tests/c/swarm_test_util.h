/* swarm_test_util.h — what the swarm's compression tests share: a seeded
 * generator (splitmix64, Box-Muller normals) and float <-> bits. */
#ifndef FOUNDRY_TESTS_SWARM_TEST_UTIL_H
#define FOUNDRY_TESTS_SWARM_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }
static inline float rng_normal(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return (float)(sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v));
}

static inline uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
