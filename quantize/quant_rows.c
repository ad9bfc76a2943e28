/*
 * quant_rows.c — tm_quantize_rows / tm_dequantize_rows: rows of host
 * memory to and from a quantized dtype, threaded over rows, with the
 * CPU's fastest row functions (byte- and bit-identical to the reference).
 */
#include "quant_impl.h"

#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Rows per task: at least ~64K values each, so small calls stay on the
 * calling thread. */
static int64_t grain_for(int64_t n)
{
    return n >= 65536 ? 1 : 65536 / (n > 0 ? n : 1);
}

static tm_status check_args(const char *fn, tm_dtype qt, const void *src,
                            const void *dst, bool qt_is_src, int64_t rows,
                            int64_t n,
                            const tm__qtraits **out, size_t *row_bytes)
{
    const tm__qtraits *tr = tm__qtraits_of(qt);
    if (!tr)
        return tm__errf(TM_EDTYPE, fn, "dtype %s (%d) is not a quantized dtype",
                        tm_dtype_name(qt), (int)qt);
    if (!src || !dst)
        return tm__errf(TM_EINVAL, fn, "%s is NULL",
                        !src ? "src" : "dst");
    /* the block structs hold halves (and Q8_K an F32): aligned access */
    const uintptr_t qa = qt == TM_Q8_K ? 4 : 2;
    const uintptr_t qp = (uintptr_t)(qt_is_src ? src : dst);
    const uintptr_t fp = (uintptr_t)(qt_is_src ? dst : src);
    if (qp % qa || fp % sizeof(float))
        return tm__errf(TM_EINVAL, fn,
                        "the %s buffer must be %u-byte aligned and the float "
                        "buffer 4-byte aligned",
                        tr->name, (unsigned)qa);
    if (rows < 0 || n < 0)
        return tm__errf(TM_EINVAL, fn, "rows (%lld) and n (%lld) must be >= 0",
                        (long long)rows, (long long)n);
    if (n % tr->block)
        return tm__errf(TM_ESHAPE, fn,
                        "a row of %lld values is not a whole number of %s "
                        "blocks of %lld",
                        (long long)n, tr->name, (long long)tr->block);
    const uint64_t rb = (uint64_t)(n / tr->block) * tr->bytes;
    if (rows && (rb > (uint64_t)INT64_MAX / (uint64_t)rows ||
                 (uint64_t)n > (uint64_t)INT64_MAX / (uint64_t)rows / 4))
        return tm__errf(TM_EINVAL, fn,
                        "%lld rows of %lld values overflow the address space",
                        (long long)rows, (long long)n);
    *out = tr;
    *row_bytes = (size_t)rb;
    return TM_OK;
}

/* --------------------------------------------------------- quantize */

typedef struct {
    const tm__qtraits *tr;
    const float *src;
    char *dst;
    int64_t n;
    size_t row_bytes;
    /* the first non-finite value by (row, column), or -1 */
    int64_t bad_row, bad_col;
    float bad_val;
    int64_t inf_row; /* the first row whose block scale overflowed, or -1 */
    pthread_mutex_t *mu;
} qjob;

static void scan_range(int64_t begin, int64_t end, void *ctx)
{
    qjob *j = ctx;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->src + r * j->n;
        for (int64_t c = 0; c < j->n; c++) {
            if (isfinite(x[c])) continue;
            pthread_mutex_lock(j->mu);
            if (j->bad_row < 0 || r < j->bad_row) {
                j->bad_row = r;
                j->bad_col = c;
                j->bad_val = x[c];
            }
            pthread_mutex_unlock(j->mu);
            return; /* later rows of this range cannot be first */
        }
    }
}

/* Byte offsets of a block's binary16 scales (none for Q8_K: its d is an
 * F32, finite for finite inputs). */
static int half_offsets(tm_dtype dt, int off[2])
{
    switch (dt) {
    case TM_Q8_0:
    case TM_Q4_0:
    case TM_Q5_0: off[0] = 0; return 1;
    case TM_Q4_1:
    case TM_Q5_1:
    case TM_Q8_1:
    case TM_Q4_K:
    case TM_Q5_K: off[0] = 0, off[1] = 2; return 2;
    case TM_Q6_K: off[0] = 208; return 1;
    default: return 0;
    }
}

static bool row_scales_finite(const qjob *j, const unsigned char *q)
{
    int off[2];
    const int k = half_offsets(j->tr->dtype, off);
    for (size_t b = 0; b < j->row_bytes; b += j->tr->bytes)
        for (int i = 0; i < k; i++)
            if ((q[b + (size_t)off[i] + 1] & 0x7c) == 0x7c) return false;
    return true;
}

static void quant_range(int64_t begin, int64_t end, void *ctx)
{
    qjob *j = ctx;
    for (int64_t r = begin; r < end; r++) {
        unsigned char *q = (unsigned char *)j->dst + (size_t)r * j->row_bytes;
        tm__quantize_row(j->tr->dtype, j->src + r * j->n, q, j->n);
        if (row_scales_finite(j, q)) continue;
        pthread_mutex_lock(j->mu);
        if (j->inf_row < 0 || r < j->inf_row) j->inf_row = r;
        pthread_mutex_unlock(j->mu);
    }
}

tm_status tm_quantize_rows(tm_dtype qt, const float *src, void *dst,
                           int64_t rows, int64_t n)
{
    const tm__qtraits *tr;
    size_t rb;
    tm_status s = check_args(__func__, qt, src, dst, false, rows, n, &tr, &rb);
    if (s) return s;
    pthread_mutex_t mu;
    pthread_mutex_init(&mu, NULL);
    qjob j = {tr, src, dst, n, rb, -1, -1, 0.0f, -1, &mu};
    /* every value checked before any byte is written, so a failed call
     * leaves dst untouched */
    tm__parallel_for(rows, grain_for(n), scan_range, &j);
    if (j.bad_row >= 0) {
        s = TM_ERR(TM_EINVAL,
                   "value %g at row %lld, column %lld is not finite; a "
                   "%s block scale cannot hold it",
                   (double)j.bad_val, (long long)j.bad_row,
                   (long long)j.bad_col, tr->name);
        goto done;
    }
    tm__parallel_for(rows, grain_for(n), quant_range, &j);
    if (j.inf_row >= 0)
        s = TM_ERR(TM_ERANGE,
                   "row %lld has values too large for %s's half-precision "
                   "block scale (dst is left partly written)",
                   (long long)j.inf_row, tr->name);
done:
    pthread_mutex_destroy(&mu);
    return s;
}

/* ------------------------------------------------------- dequantize */

typedef struct {
    tm_dtype dt;
    const char *src;
    float *dst;
    int64_t n;
    size_t row_bytes;
} djob;

static void dequant_range(int64_t begin, int64_t end, void *ctx)
{
    djob *j = ctx;
    for (int64_t r = begin; r < end; r++)
        tm__dequantize_row(j->dt, j->src + (size_t)r * j->row_bytes,
                           j->dst + r * j->n, j->n);
}

tm_status tm_dequantize_rows(tm_dtype qt, const void *src, float *dst,
                             int64_t rows, int64_t n)
{
    const tm__qtraits *tr;
    size_t rb;
    tm_status s = check_args(__func__, qt, src, dst, true, rows, n, &tr, &rb);
    if (s) return s;
    djob j = {qt, src, dst, n, rb};
    tm__parallel_for(rows, grain_for(n), dequant_range, &j);
    return TM_OK;
}
