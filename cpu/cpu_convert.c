/* cpu_convert.c — strided dtype conversion loops (tm__convert): one loop
 * per (destination, source) pair, each applying the element rules of
 * tensor/core/convert.h. */
#include "cpu_impl.h"
#include "../tensor/core/convert.h"

#include <string.h>

/* The two loop shapes: a float source (loaded as double) or an integer
 * one (loaded as int64).  Always inlined into the pair's function, so the
 * load and store are inlined too. */
static TM__ALWAYS_INLINE void tm__cvt_from_float(
    char *d, int64_t ds, const char *s, int64_t ss, int64_t n,
    double (*ld)(const char *), void (*st)(char *, double))
{
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) st(d, ld(s));
}

static TM__ALWAYS_INLINE void tm__cvt_from_int(
    char *d, int64_t ds, const char *s, int64_t ss, int64_t n,
    int64_t (*ld)(const char *), void (*st)(char *, int64_t))
{
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) st(d, ld(s));
}

/* The pair functions, one per (source S, destination D): K is F for a
 * float source, I for an integer or bool one.  The macros only name the
 * functions and their table entries; the loops are the functions above. */
#define TM__SRC_LIST(X, D)                                                    \
    X(F32, F, D) X(F64, F, D) X(F16, F, D) X(BF16, F, D) X(I8, I, D)           \
    X(U8, I, D) X(I16, I, D) X(I32, I, D) X(I64, I, D) X(BOOL, I, D)
#define TM__LOOP_F tm__cvt_from_float
#define TM__LOOP_I tm__cvt_from_int
#define TM__CVT_FN(S, K, D)                                                   \
    static void tm__cvt_##S##_##D(char *d, int64_t ds, const char *s,          \
                                  int64_t ss, int64_t n)                      \
    {                                                                         \
        TM__LOOP_##K(d, ds, s, ss, n, tm__ld_##S, tm__st##K##_##D);           \
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

/* Same-dtype moves of one element size; a memcpy call per element costs
 * about 10x more. */
static void tm__move8(char *d, int64_t ds, const char *s, int64_t ss,
                      int64_t n)
{
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) *d = *s;
}

static void tm__move16(char *d, int64_t ds, const char *s, int64_t ss,
                       int64_t n)
{
    for (int64_t i = 0; i < n; i++, d += ds, s += ss)
        *(uint16_t *)(void *)d = *(const uint16_t *)(const void *)s;
}

static void tm__move32(char *d, int64_t ds, const char *s, int64_t ss,
                       int64_t n)
{
    for (int64_t i = 0; i < n; i++, d += ds, s += ss)
        *(uint32_t *)(void *)d = *(const uint32_t *)(const void *)s;
}

static void tm__move64(char *d, int64_t ds, const char *s, int64_t ss,
                       int64_t n)
{
    for (int64_t i = 0; i < n; i++, d += ds, s += ss)
        *(uint64_t *)(void *)d = *(const uint64_t *)(const void *)s;
}

void tm__convert(void *dst, tm_dtype ddt, int64_t dstride, const void *src,
                 tm_dtype sdt, int64_t sstride, int64_t n)
{
    if (n <= 0) return;
    size_t es = tm_dtype_size(ddt);
    char *d = dst;
    const char *s = src;
    if (ddt != sdt || ddt == TM_BOOL) { /* bool: normalise to 0/1 */
        tm__cvt[ddt][sdt](d, dstride, s, sstride, n);
        return;
    }
    if (dstride == (int64_t)es && sstride == (int64_t)es) {
        memmove(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: tm__move8(d, dstride, s, sstride, n); break;
    case 2: tm__move16(d, dstride, s, sstride, n); break;
    case 4: tm__move32(d, dstride, s, sstride, n); break;
    default: tm__move64(d, dstride, s, sstride, n); break;
    }
}
