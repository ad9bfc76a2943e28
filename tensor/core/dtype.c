/* dtype.c — dtype facts, type promotion and element conversion. */
#include "tensor_impl.h"

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
    switch (dt) {
    case TM_Q8_0: return "q8_0";
    case TM_Q4_0: return "q4_0";
    case TM_Q4_1: return "q4_1";
    case TM_Q8_1: return "q8_1";
    default: return "invalid";
    }
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
 * Every source is loaded into a wide value — double for float dtypes
 * (exact), int64 for integers and bool — and stored from it with one
 * rounding, so no conversion rounds twice (except integers beyond 2^53
 * into F16/BF16, which go through double). */

static inline int64_t tm__sat_i64(double v, double lo, double hi)
{
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

static inline int64_t tm__f64_to_i64_sat(double v)
{
    if (v != v) return 0;
    if (v >= 0x1p63) return INT64_MAX;
    if (v < -0x1p63) return INT64_MIN;
    return (int64_t)v;
}

#define LD_F32(p) ((double)*(const float *)(p))
#define LD_F64(p) (*(const double *)(p))
#define LD_F16(p) ((double)tm__f16_to_f32(*(const uint16_t *)(p)))
#define LD_BF16(p) ((double)tm__bf16_to_f32(*(const uint16_t *)(p)))
#define LD_I8(p) ((int64_t) * (const int8_t *)(p))
#define LD_U8(p) ((int64_t) * (const uint8_t *)(p))
#define LD_I16(p) ((int64_t) * (const int16_t *)(p))
#define LD_I32(p) ((int64_t) * (const int32_t *)(p))
#define LD_I64(p) (*(const int64_t *)(p))
#define LD_BOOL(p) ((int64_t)(*(const uint8_t *)(p) != 0))

/* Stores from a double (float source). */
#define STF_F32(p, v) (*(float *)(p) = (float)(v))
#define STF_F64(p, v) (*(double *)(p) = (v))
#define STF_F16(p, v) (*(uint16_t *)(p) = tm__f64_to_f16(v))
#define STF_BF16(p, v) (*(uint16_t *)(p) = tm__f64_to_bf16(v))
#define STF_I8(p, v) (*(int8_t *)(p) = (int8_t)tm__sat_i64(v, -128.0, 127.0))
#define STF_U8(p, v) (*(uint8_t *)(p) = (uint8_t)tm__sat_i64(v, 0.0, 255.0))
#define STF_I16(p, v)                                                         \
    (*(int16_t *)(p) = (int16_t)tm__sat_i64(v, -32768.0, 32767.0))
#define STF_I32(p, v)                                                         \
    (*(int32_t *)(p) = (int32_t)tm__sat_i64(v, -2147483648.0, 2147483647.0))
#define STF_I64(p, v) (*(int64_t *)(p) = tm__f64_to_i64_sat(v))
#define STF_BOOL(p, v) (*(uint8_t *)(p) = (uint8_t)((v) != 0))

/* Stores from an int64 (integer or bool source); narrowing wraps. */
#define STI_F32(p, v) (*(float *)(p) = (float)(v))
#define STI_F64(p, v) (*(double *)(p) = (double)(v))
#define STI_F16(p, v) (*(uint16_t *)(p) = tm__f64_to_f16((double)(v)))
#define STI_BF16(p, v) (*(uint16_t *)(p) = tm__f64_to_bf16((double)(v)))
#define STI_I8(p, v) (*(int8_t *)(p) = (int8_t)(v))
#define STI_U8(p, v) (*(uint8_t *)(p) = (uint8_t)(v))
#define STI_I16(p, v) (*(int16_t *)(p) = (int16_t)(v))
#define STI_I32(p, v) (*(int32_t *)(p) = (int32_t)(v))
#define STI_I64(p, v) (*(int64_t *)(p) = (v))
#define STI_BOOL(p, v) (*(uint8_t *)(p) = (uint8_t)((v) != 0))

/* K: F (float source, store from double) or I (integer source). */
#define TM__SRC_LIST(X, D)                                                    \
    X(F32, F, D) X(F64, F, D) X(F16, F, D) X(BF16, F, D) X(I8, I, D)           \
        X(U8, I, D) X(I16, I, D) X(I32, I, D) X(I64, I, D) X(BOOL, I, D)

#define TM__CVT_FN(S, K, D)                                                   \
    static void tm__cvt_##S##_##D(char *d, int64_t ds, const char *s,          \
                                  int64_t ss, int64_t n)                      \
    {                                                                         \
        for (int64_t i = 0; i < n; i++, d += ds, s += ss)                     \
            ST##K##_##D(d, LD_##S(s));                                        \
    }

#define TM__CVT_ALL_SRC(D) TM__SRC_LIST(TM__CVT_FN, D)
TM__CVT_ALL_SRC(F32)
TM__CVT_ALL_SRC(F64)
TM__CVT_ALL_SRC(F16)
TM__CVT_ALL_SRC(BF16)
TM__CVT_ALL_SRC(I8)
TM__CVT_ALL_SRC(U8)
TM__CVT_ALL_SRC(I16)
TM__CVT_ALL_SRC(I32)
TM__CVT_ALL_SRC(I64)
TM__CVT_ALL_SRC(BOOL)

typedef void (*tm__cvt_fn)(char *, int64_t, const char *, int64_t, int64_t);

#define TM__CVT_ENTRY(S, K, D) [TM_##S] = tm__cvt_##S##_##D,
#define TM__CVT_ROW(D) [TM_##D] = {TM__SRC_LIST(TM__CVT_ENTRY, D)},
static const tm__cvt_fn tm__cvt[TM_NUM_DENSE_DTYPES][TM_NUM_DENSE_DTYPES] = {
    TM__CVT_ROW(F32) TM__CVT_ROW(F64) TM__CVT_ROW(F16) TM__CVT_ROW(BF16)
        TM__CVT_ROW(I8) TM__CVT_ROW(U8) TM__CVT_ROW(I16) TM__CVT_ROW(I32)
            TM__CVT_ROW(I64) TM__CVT_ROW(BOOL)};

void tm__convert(void *dst, tm_dtype ddt, int64_t dstride, const void *src,
                 tm_dtype sdt, int64_t sstride, int64_t n)
{
    if (n <= 0) return;
    size_t es = tm_dtype_size(ddt);
    if (ddt == sdt && ddt != TM_BOOL) { /* bool: normalise to 0/1 */
        if (dstride == (int64_t)es && sstride == (int64_t)es) {
            memmove(dst, src, (size_t)n * es);
            return;
        }
        char *d = dst;
        const char *s = src;
        /* typed moves: a memcpy call per element costs ~10x more */
        switch (es) {
#define TM__MOVE(T)                                                           \
    for (int64_t i = 0; i < n; i++, d += dstride, s += sstride)              \
        *(T *)d = *(const T *)s;                                              \
    return;
        case 1: TM__MOVE(uint8_t)
        case 2: TM__MOVE(uint16_t)
        case 4: TM__MOVE(uint32_t)
        case 8: TM__MOVE(uint64_t)
#undef TM__MOVE
        }
        for (int64_t i = 0; i < n; i++, d += dstride, s += sstride)
            memcpy(d, s, es);
        return;
    }
    tm__cvt[ddt][sdt](dst, dstride, src, sstride, n);
}

double tm__load_f64(const void *p, tm_dtype dt)
{
    double v = 0;
    tm__convert(&v, TM_F64, 8, p, dt, 0, 1);
    return v;
}

void tm__store_f64(void *p, tm_dtype dt, double v)
{
    tm__convert(p, dt, 0, &v, TM_F64, 8, 1);
}
