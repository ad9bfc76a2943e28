/*
 * convert.h — the rules for converting one element between dtypes
 * (internal), shared by the core (tm__load_f64, tm__store_f64) and the
 * CPU backend's strided conversion loops (cpu/cpu_convert.c), so both
 * convert alike.
 *
 * Every source is loaded into a wide value — double for float dtypes
 * (exact), int64 for integers and bool — and stored from it with one
 * rounding, so no conversion rounds twice (except integers beyond 2^53
 * into F16/BF16, which go through double).  Floats into integers
 * saturate (NaN gives 0); integers into narrower integers wrap; anything
 * into BOOL is (v != 0).
 */
#ifndef FOUNDRY_CONVERT_H
#define FOUNDRY_CONVERT_H

#include "tensor_impl.h"

#include <string.h>

/* ----------------------------------------------------------------- loads */

static inline double tm__ld_F32(const char *p)
{
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline double tm__ld_F64(const char *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline double tm__ld_F16(const char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return tm__f16_to_f32(v);
}
static inline double tm__ld_BF16(const char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return tm__bf16_to_f32(v);
}
static inline int64_t tm__ld_I8(const char *p) { return *(const int8_t *)p; }
static inline int64_t tm__ld_U8(const char *p) { return *(const uint8_t *)p; }
static inline int64_t tm__ld_I16(const char *p)
{
    int16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline int64_t tm__ld_I32(const char *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline int64_t tm__ld_I64(const char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline int64_t tm__ld_BOOL(const char *p)
{
    return *(const uint8_t *)p != 0;
}

/* ---------------------------------------------- stores from a float value */

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

static inline void tm__stF_F32(char *p, double v)
{
    float f = (float)v;
    memcpy(p, &f, sizeof f);
}
static inline void tm__stF_F64(char *p, double v) { memcpy(p, &v, sizeof v); }
static inline void tm__stF_F16(char *p, double v)
{
    uint16_t h = tm__f64_to_f16(v);
    memcpy(p, &h, sizeof h);
}
static inline void tm__stF_BF16(char *p, double v)
{
    uint16_t h = tm__f64_to_bf16(v);
    memcpy(p, &h, sizeof h);
}
static inline void tm__stF_I8(char *p, double v)
{
    *(int8_t *)p = (int8_t)tm__sat_i64(v, -128.0, 127.0);
}
static inline void tm__stF_U8(char *p, double v)
{
    *(uint8_t *)p = (uint8_t)tm__sat_i64(v, 0.0, 255.0);
}
static inline void tm__stF_I16(char *p, double v)
{
    int16_t x = (int16_t)tm__sat_i64(v, -32768.0, 32767.0);
    memcpy(p, &x, sizeof x);
}
static inline void tm__stF_I32(char *p, double v)
{
    int32_t x = (int32_t)tm__sat_i64(v, -2147483648.0, 2147483647.0);
    memcpy(p, &x, sizeof x);
}
static inline void tm__stF_I64(char *p, double v)
{
    int64_t x = tm__f64_to_i64_sat(v);
    memcpy(p, &x, sizeof x);
}
static inline void tm__stF_BOOL(char *p, double v)
{
    *(uint8_t *)p = (uint8_t)(v != 0);
}

/* ------------------------------------ stores from an integer value (wrap) */

static inline void tm__stI_F32(char *p, int64_t v) { tm__stF_F32(p, (double)v); }
static inline void tm__stI_F64(char *p, int64_t v) { tm__stF_F64(p, (double)v); }
static inline void tm__stI_F16(char *p, int64_t v) { tm__stF_F16(p, (double)v); }
static inline void tm__stI_BF16(char *p, int64_t v)
{
    tm__stF_BF16(p, (double)v);
}
static inline void tm__stI_I8(char *p, int64_t v) { *(int8_t *)p = (int8_t)v; }
static inline void tm__stI_U8(char *p, int64_t v)
{
    *(uint8_t *)p = (uint8_t)v;
}
static inline void tm__stI_I16(char *p, int64_t v)
{
    int16_t x = (int16_t)v;
    memcpy(p, &x, sizeof x);
}
static inline void tm__stI_I32(char *p, int64_t v)
{
    int32_t x = (int32_t)v;
    memcpy(p, &x, sizeof x);
}
static inline void tm__stI_I64(char *p, int64_t v) { memcpy(p, &v, sizeof v); }
static inline void tm__stI_BOOL(char *p, int64_t v)
{
    *(uint8_t *)p = (uint8_t)(v != 0);
}

/* ------------------------------------------------- one element, any dtype */

/* True for the dtypes loaded as a double (the float ones). */
static inline bool tm__is_float_src(tm_dtype dt)
{
    return dt == TM_F32 || dt == TM_F64 || dt == TM_F16 || dt == TM_BF16;
}

static inline double tm__ld_float(const void *p, tm_dtype dt)
{
    switch (dt) {
    case TM_F32: return tm__ld_F32(p);
    case TM_F64: return tm__ld_F64(p);
    case TM_F16: return tm__ld_F16(p);
    default: return tm__ld_BF16(p);
    }
}

static inline int64_t tm__ld_int(const void *p, tm_dtype dt)
{
    switch (dt) {
    case TM_I8: return tm__ld_I8(p);
    case TM_U8: return tm__ld_U8(p);
    case TM_I16: return tm__ld_I16(p);
    case TM_I32: return tm__ld_I32(p);
    case TM_I64: return tm__ld_I64(p);
    default: return tm__ld_BOOL(p);
    }
}

static inline void tm__st_float(void *p, tm_dtype dt, double v)
{
    switch (dt) {
    case TM_F32: tm__stF_F32(p, v); break;
    case TM_F64: tm__stF_F64(p, v); break;
    case TM_F16: tm__stF_F16(p, v); break;
    case TM_BF16: tm__stF_BF16(p, v); break;
    case TM_I8: tm__stF_I8(p, v); break;
    case TM_U8: tm__stF_U8(p, v); break;
    case TM_I16: tm__stF_I16(p, v); break;
    case TM_I32: tm__stF_I32(p, v); break;
    case TM_I64: tm__stF_I64(p, v); break;
    default: tm__stF_BOOL(p, v); break;
    }
}

#endif
