/* dtype.c — dtype facts, type promotion, half-precision conversions and
 * one-element loads and stores. */
#include "convert.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} tm__dtypes[TM_NUM_DENSE_DTYPES] = {
    [TM_F32] = {"f32", 4}, [TM_F64] = {"f64", 8}, [TM_F16] = {"f16", 2},
    [TM_BF16] = {"bf16", 2}, [TM_I8] = {"i8", 1}, [TM_U8] = {"u8", 1},
    [TM_I16] = {"i16", 2}, [TM_I32] = {"i32", 4}, [TM_I64] = {"i64", 8},
    [TM_BOOL] = {"bool", 1},
};

bool tm_dtype_is_valid(tm_dtype dt)
{
    return (int)dt >= 0 && (int)dt < TM_NUM_DENSE_DTYPES;
}

const char *tm_dtype_name(tm_dtype dt)
{
    if (tm_dtype_is_valid(dt)) return tm__dtypes[dt].name;
    const char *q = tm__qdtype_name(dt);
    return q ? q : "invalid";
}

size_t tm_dtype_size(tm_dtype dt)
{
    return tm_dtype_is_valid(dt) ? tm__dtypes[dt].size : 0;
}

bool tm_dtype_is_float(tm_dtype dt)
{
    return dt == TM_F32 || dt == TM_F64 || dt == TM_F16 || dt == TM_BF16;
}

bool tm_dtype_is_integer(tm_dtype dt)
{
    return dt == TM_I8 || dt == TM_U8 || dt == TM_I16 || dt == TM_I32 ||
           dt == TM_I64;
}

/* Rank within a category: bool 0; integers 1 (by width); floats 2. */
static int tm__int_bits(tm_dtype dt)
{
    switch (dt) {
    case TM_I8: case TM_U8: return 8;
    case TM_I16: return 16;
    case TM_I32: return 32;
    default: return 64;
    }
}

tm_dtype tm_promote_types(tm_dtype a, tm_dtype b)
{
    if (a == b) return a;
    if (a == TM_BOOL) return b;
    if (b == TM_BOOL) return a;
    bool fa = tm_dtype_is_float(a), fb = tm_dtype_is_float(b);
    if (fa && !fb) return a;
    if (fb && !fa) return b;
    if (fa && fb) {
        if (a == TM_F64 || b == TM_F64) return TM_F64;
        return TM_F32; /* f32 with f16/bf16, or f16 with bf16 */
    }
    /* two different integer types */
    if (a == TM_U8 || b == TM_U8) {
        tm_dtype o = a == TM_U8 ? b : a;
        return o == TM_I8 ? TM_I16 : o;
    }
    return tm__int_bits(a) >= tm__int_bits(b) ? a : b;
}

/* ---------------------------------------------------------- f16 and bf16 */

static uint32_t tm__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float tm__bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float tm__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) /* inf / nan: keep the payload */
        return tm__bits_f32(sign | 0x7f800000 | (man << 13));
    if (exp == 0) { /* zero / subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return tm__bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tm__f32_to_f16(float f)
{
    uint32_t x = tm__f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffff;
    if (ax >= 0x7f800000) /* inf, or nan kept quiet with its top payload */
        return ax > 0x7f800000
                   ? (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff))
                   : (uint16_t)(sign | 0x7c00);
    if (ax >= 0x477ff000) return sign | 0x7c00; /* >= 65520 rounds to inf */
    if (ax < 0x38800000) {
        /* below 2^-14: a multiple of 2^-24; scaling is exact and the magic
         * add rounds to nearest even in the default rounding mode */
        volatile float v = tm__bits_f32(ax) * 0x1p24f;
        volatile float r = (v + 0x1p23f) - 0x1p23f;
        return (uint16_t)(sign | (uint16_t)r);
    }
    ax += 0xfff + ((ax >> 13) & 1); /* round to nearest even */
    ax -= 0x38000000;               /* rebias 127 -> 15 */
    return (uint16_t)(sign | (ax >> 13));
}

uint16_t tm__f64_to_f16(double d)
{
    uint64_t x;
    memcpy(&x, &d, 8);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
    uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax >= 0x7ff0000000000000ull)
        return ax > 0x7ff0000000000000ull
                   ? (uint16_t)(sign | 0x7e00 | ((ax >> 42) & 0x3ff))
                   : (uint16_t)(sign | 0x7c00);
    if (ax >= 0x40effe0000000000ull) return sign | 0x7c00; /* >= 65520 */
    if (ax < 0x3f10000000000000ull) {                       /* < 2^-14 */
        double v;
        memcpy(&v, &ax, 8);
        volatile double s = v * 0x1p24;
        volatile double r = (s + 0x1p52) - 0x1p52;
        return (uint16_t)(sign | (uint16_t)r);
    }
    ax += ((1ull << 41) - 1) + ((ax >> 42) & 1);
    ax -= 1008ull << 52; /* rebias 1023 -> 15 */
    return (uint16_t)(sign | (uint16_t)(ax >> 42));
}

float tm__bf16_to_f32(uint16_t b) { return tm__bits_f32((uint32_t)b << 16); }

uint16_t tm__f32_to_bf16(float f)
{
    uint32_t x = tm__f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) /* nan: keep it a (quiet) nan */
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

uint16_t tm__f64_to_bf16(double d)
{
    uint64_t x;
    memcpy(&x, &d, 8);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
    uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax > 0x7ff0000000000000ull) return sign | 0x7fc0;
    if (ax == 0x7ff0000000000000ull) return sign | 0x7f80;
    if (ax < 0x3810000000000000ull) { /* below 2^-126: subnormal bf16 */
        double v;
        memcpy(&v, &ax, 8);
        volatile double s = v * 0x1p133;
        volatile double r = (s + 0x1p52) - 0x1p52;
        return (uint16_t)(sign | (uint16_t)r);
    }
    ax += ((1ull << 44) - 1) + ((ax >> 45) & 1);
    uint64_t r = (ax >> 45) - (896ull << 7); /* rebias 1023 -> 127 */
    if (r >= 0x7f80) return sign | 0x7f80;
    return (uint16_t)(sign | (uint16_t)r);
}

/* ------------------------------------------------------------ conversion
 * One element through the rules of convert.h; the strided loops over
 * many elements are the CPU backend's (cpu/cpu_convert.c). */

double tm__load_f64(const void *p, tm_dtype dt)
{
    return tm__is_float_src(dt) ? tm__ld_float(p, dt)
                                : (double)tm__ld_int(p, dt);
}

void tm__store_f64(void *p, tm_dtype dt, double v)
{
    tm__st_float(p, dt, v);
}
