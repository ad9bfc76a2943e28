/* attn_fwd_portable.c — the portable family of the tiled attention
 * forward's micro-kernels: one float a "vector", a separate multiply and
 * add (the build does not contract them). */
#include "attn_fwd.h"

#include <stdint.h>
#include <string.h>

static inline int32_t af_asi(float x)
{
    int32_t i;
    memcpy(&i, &x, sizeof i);
    return i;
}

static inline float af_asv(int32_t i)
{
    float x;
    memcpy(&x, &i, sizeof x);
    return x;
}

/* keeps a NaN x NaN, as the SIMD clamps do */
static inline float af_clamp(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

#define AF_FAM portable
#define AF_NAME "portable"
#define AF_W 1
#define AF_R 4
#define AF_NV 4
#define AF_V float
#define AF_VI int32_t
#define AF_ZERO() 0.0f
#define AF_SET1(x) ((float)(x))
#define AF_LOAD(p) (*(p))
#define AF_STORE(p, v) (*(p) = (v))
#define AF_FMA(a, b, c) ((a) * (b) + (c))
#define AF_MUL(a, b) ((a) * (b))
#define AF_ADD(a, b) ((a) + (b))
#define AF_SUB(a, b) ((a) - (b))
#define AF_MAX(a, b) ((b) > (a) ? (b) : (a))
#define AF_CLAMP(x, lo, hi) af_clamp(x, lo, hi)
#define AF_HSUM(v) (v)
#define AF_HMAX(v) (v)
#define AF_ASI(x) af_asi(x)
#define AF_ASV(i) af_asv(i)
#define AF_ISET(c) ((int32_t)(c))
#define AF_IADD(a, b) ((a) + (b))
#define AF_ISUB(a, b) ((a) - (b))
#define AF_ISRA1(a) ((a) >> 1)
#define AF_ISLL23(a) ((int32_t)((uint32_t)(a) << 23))
#include "attn_fwd_tmpl.h"
