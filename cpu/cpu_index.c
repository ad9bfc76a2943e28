/*
 * cpu_index.c — gather, scatter (write / add) and index_select on the CPU.
 *
 * All three walk the index tensor in row-major order.  Position p of the
 * index pairs one element of a "dense" operand (out for gather, src for
 * scatter), located at p, with one element of the "indexed" operand (in for
 * gather, dst for scatter), located at p with coordinate `dim` replaced by
 * the index value:
 *   gather   out[p] = in[p / dim := index[p]]
 *   scatter  dst[p / dim := index[p]] = src[p]   (+= for scatter add;
 *            *=, max, min for scatter_reduce)
 * Every index is range-checked in a first pass before anything is written,
 * so a failing scatter leaves dst untouched.  Gather and index_select split
 * rows over the thread pool (each output element is written once);
 * scatter runs on one thread in row-major order, so colliding indices
 * resolve the same way every time (the last write wins, adds accumulate in
 * a fixed order).
 */
#include "cpu_impl.h"
#include "../tensor/core/convert.h"

#include <math.h>
#include <string.h>

/* One index value (I64 or I32) at p. */
static inline int64_t tm__ix_load(const char *p, tm_dtype dt)
{
    if (dt == TM_I64) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static tm_status tm__ix_dtype(const char *fn, tm_dtype dt)
{
    if (dt == TM_I64 || dt == TM_I32) return TM_OK;
    return tm__errf(TM_EDTYPE, fn, "index must be i64 or i32, got %s",
                    tm_dtype_name(dt));
}

/* ------------------------------------------------------------ range check */

typedef struct {
    tm_dtype dt;
    int64_t size;
    int64_t pos;  /* row-major position of the next element */
    int64_t bad;  /* first bad position, or -1 */
} tm__chk_local;

static void tm__chk_run(char **p, const int64_t *s, int64_t n, void *ctx)
{
    tm__chk_local *c = ctx;
    if (c->bad >= 0) return;
    const char *ip = p[0];
    for (int64_t i = 0; i < n; i++, ip += s[0]) {
        int64_t k = tm__ix_load(ip, c->dt);
        if (k < -c->size || k >= c->size) {
            c->bad = c->pos + i;
            return;
        }
    }
    c->pos += n;
}

typedef struct {
    const tm__iter *it;
    tm_dtype dt;
    int64_t size;
    _Atomic int_least64_t first_bad; /* INT64_MAX: none */
} tm__chk_ctx;

static void tm__chk_part(int64_t begin, int64_t end, void *ctx)
{
    tm__chk_ctx *c = ctx;
    tm__chk_local l = {c->dt, c->size, begin, -1};
    tm__iter_range(c->it, begin, end, tm__chk_run, &l);
    if (l.bad < 0) return;
    int_least64_t cur = atomic_load(&c->first_bad);
    while (l.bad < cur &&
           !atomic_compare_exchange_weak(&c->first_bad, &cur, l.bad)) {
    }
}

typedef struct {
    tm_dtype dt;
    int64_t value;
} tm__get_ctx;

static void tm__get_run(char **p, const int64_t *s, int64_t n, void *ctx)
{
    (void)s;
    (void)n;
    tm__get_ctx *g = ctx;
    g->value = tm__ix_load(p[0], g->dt);
}

/* Fails (naming `fn`) on the first index in row-major order outside
 * [-size, size). */
static tm_status tm__ix_check(const char *fn, const tm_buf *index, int dim,
                              int64_t size)
{
    tm__iter it;
    const tm_buf *bufs[1] = {index};
    tm__iter_init(&it, 1, bufs);
    tm__chk_ctx c = {.it = &it, .dt = index->dtype, .size = size};
    atomic_init(&c.first_bad, INT64_MAX);
    tm__parallel_for(it.numel, TM__GRAIN, tm__chk_part, &c);
    int64_t bad = (int64_t)atomic_load(&c.first_bad);
    if (bad == INT64_MAX) return TM_OK;
    tm__get_ctx g = {index->dtype, 0};
    tm__iter_range(&it, bad, bad + 1, tm__get_run, &g);
    return tm__errf(TM_ERANGE, fn,
                    "index %lld is out of range for dim %d of size %lld",
                    (long long)g.value, dim, (long long)size);
}

/* ---------------------------------------------------------- the row walk */

enum { TM__IX_GATHER, TM__IX_SCATTER, TM__IX_ADD, TM__IX_MUL, TM__IX_MAX,
       TM__IX_MIN };

typedef struct {
    int mode, ndim, dim;
    int64_t shape[TM_MAX_DIMS]; /* the index's shape */
    /* byte strides: a = dense operand, i = index, t = indexed operand */
    int64_t as[TM_MAX_DIMS], is[TM_MAX_DIMS], ts[TM_MAX_DIMS];
    char *a, *i, *t;
    int64_t tsize; /* size of the indexed operand's `dim` */
    tm_dtype idt, dt;
    size_t es;
} tm__ix;

/* Fills the walk from kernel views; 0-d operands become shape [1]. */
static void tm__ix_init(tm__ix *c, int mode, const tm_buf *dense,
                        const tm_buf *index, const tm_buf *indexed, int dim)
{
    memset(c, 0, sizeof *c);
    c->mode = mode;
    c->dt = dense->dtype;
    c->idt = index->dtype;
    c->es = tm_dtype_size(dense->dtype);
    c->a = tm__ptr(dense);
    c->i = tm__ptr(index);
    c->t = tm__ptr(indexed);
    if (index->ndim == 0) {
        c->ndim = 1;
        c->shape[0] = 1;
        c->dim = 0;
        c->tsize = indexed->ndim ? indexed->shape[0] : 1;
        return; /* strides stay 0 */
    }
    c->ndim = index->ndim;
    c->dim = dim;
    c->tsize = indexed->shape[dim];
    int64_t ies = (int64_t)tm_dtype_size(index->dtype);
    for (int d = 0; d < c->ndim; d++) {
        c->shape[d] = index->shape[d];
        c->as[d] = dense->strides[d] * (int64_t)c->es;
        c->is[d] = index->strides[d] * ies;
        c->ts[d] = indexed->strides[d] * (int64_t)c->es;
    }
}

static void tm__add_elem(char *d, const char *s, tm_dtype dt)
{
    switch (dt) {
    case TM_F32: {
        float x, y;
        memcpy(&x, d, 4);
        memcpy(&y, s, 4);
        x += y;
        memcpy(d, &x, 4);
        break;
    }
    case TM_F64: {
        double x, y;
        memcpy(&x, d, 8);
        memcpy(&y, s, 8);
        x += y;
        memcpy(d, &x, 8);
        break;
    }
    case TM_F16: case TM_BF16: {
        /* one rounding per add, as numpy does for float16 */
        uint16_t x, y, r;
        memcpy(&x, d, 2);
        memcpy(&y, s, 2);
        if (dt == TM_F16) r = tm__f32_to_f16(tm__f16_to_f32(x) +
                                             tm__f16_to_f32(y));
        else r = tm__f32_to_bf16(tm__bf16_to_f32(x) + tm__bf16_to_f32(y));
        memcpy(d, &r, 2);
        break;
    }
    case TM_BOOL:
        *(unsigned char *)d =
            (unsigned char)(*(unsigned char *)d || *(const unsigned char *)s);
        break;
    case TM_I8: *(int8_t *)d = (int8_t)(uint8_t)((unsigned)*(int8_t *)d +
                                                 (unsigned)*(const int8_t *)s);
        break;
    case TM_U8: *(uint8_t *)d = (uint8_t)(*(uint8_t *)d + *(const uint8_t *)s);
        break;
    case TM_I16: {
        int16_t x, y;
        memcpy(&x, d, 2);
        memcpy(&y, s, 2);
        x = (int16_t)(uint16_t)((unsigned)x + (unsigned)y);
        memcpy(d, &x, 2);
        break;
    }
    case TM_I32: {
        int32_t x, y;
        memcpy(&x, d, 4);
        memcpy(&y, s, 4);
        x = (int32_t)((uint32_t)x + (uint32_t)y);
        memcpy(d, &x, 4);
        break;
    }
    case TM_I64: {
        int64_t x, y;
        memcpy(&x, d, 8);
        memcpy(&y, s, 8);
        x = (int64_t)((uint64_t)x + (uint64_t)y);
        memcpy(d, &x, 8);
        break;
    }
    default: break;
    }
}

static void tm__st_int(char *d, tm_dtype dt, int64_t v)
{
    switch (dt) {
    case TM_I8: tm__stI_I8(d, v); break;
    case TM_U8: tm__stI_U8(d, v); break;
    case TM_I16: tm__stI_I16(d, v); break;
    case TM_I32: tm__stI_I32(d, v); break;
    case TM_I64: tm__stI_I64(d, v); break;
    default: tm__stI_BOOL(d, v); break;
    }
}

/* *d = *d * s, max(*d, s) or min(*d, s).  Floats compute in double and
 * round once (a product of two floats is exact in double, so F32 gets
 * the F32 product); NaN propagates through max and min, as in PyTorch.
 * Integers wrap; for BOOL the product is `and`, max `or`, min `and`. */
static void tm__reduce_elem(char *d, const char *s, tm_dtype dt, int mode)
{
    if (tm__is_float_src(dt)) {
        double x = tm__ld_float(d, dt), y = tm__ld_float(s, dt), r;
        if (mode == TM__IX_MUL) r = x * y;
        else if (isnan(x) || isnan(y)) r = isnan(x) ? x : y;
        else if (mode == TM__IX_MAX) r = y > x ? y : x;
        else r = y < x ? y : x;
        tm__st_float(d, dt, r);
        return;
    }
    int64_t x = tm__ld_int(d, dt), y = tm__ld_int(s, dt), r;
    if (mode == TM__IX_MUL)
        r = dt == TM_BOOL ? (x && y) : (int64_t)((uint64_t)x * (uint64_t)y);
    else if (mode == TM__IX_MAX) r = y > x ? y : x;
    else r = y < x ? y : x;
    tm__st_int(d, dt, r);
}

/* Copies one element of es bytes (the switch lets the compiler inline). */
static inline void tm__mv(char *d, const char *s, size_t es)
{
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es);
    }
}

/* Processes rows [r0, r1) (a row: all of the last dim at one position of
 * the leading dims).  Indices have been checked. */
static void tm__ix_rows(const tm__ix *c, int64_t r0, int64_t r1)
{
    int last = c->ndim - 1;
    int64_t n = c->shape[last];
    if (n == 0 || r0 >= r1) return;
    int64_t pos[TM_MAX_DIMS] = {0}, r = r0;
    for (int d = last - 1; d >= 0; d--) {
        pos[d] = r % c->shape[d];
        r /= c->shape[d];
    }
    int64_t as = c->as[last], is = c->is[last];
    int64_t tj = last == c->dim ? 0 : c->ts[last], tk = c->ts[c->dim];
    /* index_select-style rows: one index for a whole contiguous row */
    bool rowcopy = c->mode == TM__IX_GATHER && last != c->dim && is == 0 &&
                   as == (int64_t)c->es && tj == (int64_t)c->es;
    for (int64_t row = r0; row < r1; row++) {
        char *a = c->a, *ip = c->i, *t = c->t;
        for (int d = 0; d < last; d++) {
            a += pos[d] * c->as[d];
            ip += pos[d] * c->is[d];
            if (d != c->dim) t += pos[d] * c->ts[d];
        }
        if (rowcopy) {
            int64_t k = tm__ix_load(ip, c->idt);
            if (k < 0) k += c->tsize;
            memcpy(a, t + k * tk, (size_t)n * c->es);
        } else {
            for (int64_t j = 0; j < n; j++, a += as, ip += is, t += tj) {
                int64_t k = tm__ix_load(ip, c->idt);
                if (k < 0) k += c->tsize;
                char *tp = t + k * tk;
                if (c->mode == TM__IX_GATHER) tm__mv(a, tp, c->es);
                else if (c->mode == TM__IX_SCATTER) tm__mv(tp, a, c->es);
                else if (c->mode == TM__IX_ADD) tm__add_elem(tp, a, c->dt);
                else tm__reduce_elem(tp, a, c->dt, c->mode);
            }
        }
        for (int d = last - 1; d >= 0; d--) {
            if (++pos[d] < c->shape[d]) break;
            pos[d] = 0;
        }
    }
}

static void tm__ix_part(int64_t begin, int64_t end, void *ctx)
{
    tm__ix_rows(ctx, begin, end);
}

/* Runs the walk: rows split over the pool for gather, one thread (in
 * row-major order) for scatter. */
static void tm__ix_run(const tm__ix *c)
{
    int64_t rows = 1, n = c->shape[c->ndim - 1];
    for (int d = 0; d < c->ndim - 1; d++) rows *= c->shape[d];
    if (rows == 0 || n == 0) return;
    if (c->mode != TM__IX_GATHER) {
        tm__ix_rows(c, 0, rows);
        return;
    }
    int64_t grain = TM__GRAIN / n > 0 ? TM__GRAIN / n : 1;
    tm__parallel_for(rows, grain, tm__ix_part, (void *)c);
}

/* ------------------------------------------------------------- entries */

tm_status tm__cpu_gather(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, int dim,
                         const tm_buf *index)
{
    (void)ctx;
    tm_status st = tm__ix_dtype(__func__, index->dtype);
    if (st) return st;
    int64_t size = in->ndim ? in->shape[dim] : 1;
    if ((st = tm__ix_check(__func__, index, dim, size))) return st;
    tm__ix c;
    tm__ix_init(&c, TM__IX_GATHER, out, index, in, dim);
    tm__ix_run(&c);
    return TM_OK;
}

tm_status tm__cpu_scatter(tm_ctx *ctx, const tm_buf *dst, int dim, const tm_buf *index,
                          const tm_buf *src, bool add)
{
    (void)ctx;
    tm_status st = tm__ix_dtype(__func__, index->dtype);
    if (st) return st;
    int64_t size = dst->ndim ? dst->shape[dim] : 1;
    if ((st = tm__ix_check(__func__, index, dim, size))) return st;
    tm__ix c;
    tm__ix_init(&c, add ? TM__IX_ADD : TM__IX_SCATTER, src, index, dst, dim);
    tm__ix_run(&c);
    return TM_OK;
}

tm_status tm__cpu_scatter_reduce(tm_ctx *ctx, const tm_buf *dst, int dim,
                                 const tm_buf *index, const tm_buf *src,
                                 tm_scatter_reduce_kind kind)
{
    (void)ctx;
    int mode;
    switch (kind) {
    case TM_SCATTER_SUM: mode = TM__IX_ADD; break;
    case TM_SCATTER_PROD: mode = TM__IX_MUL; break;
    case TM_SCATTER_AMAX: mode = TM__IX_MAX; break;
    case TM_SCATTER_AMIN: mode = TM__IX_MIN; break;
    default:
        return tm__errf(TM_EINVAL, __func__,
                        "reduce kind %d is not a kernel kind (sum, prod, "
                        "amax or amin)", (int)kind);
    }
    tm_status st = tm__ix_dtype(__func__, index->dtype);
    if (st) return st;
    int64_t size = dst->ndim ? dst->shape[dim] : 1;
    if ((st = tm__ix_check(__func__, index, dim, size))) return st;
    tm__ix c;
    tm__ix_init(&c, mode, src, index, dst, dim);
    tm__ix_run(&c);
    return TM_OK;
}

tm_status tm__cpu_index_select(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, int dim,
                               const tm_buf *index)
{
    (void)ctx;
    tm_status st = tm__ix_dtype(__func__, index->dtype);
    if (st) return st;
    int64_t size = in->ndim ? in->shape[dim] : 1;
    if ((st = tm__ix_check(__func__, index, dim, size))) return st;
    if (out->ndim == 0 || in->ndim == 0) { /* a 0-d tensor picks itself */
        memcpy(tm__ptr(out), tm__ptr(in), tm_dtype_size(in->dtype));
        return TM_OK;
    }
    /* A gather whose index is the 1-D index broadcast along every other
     * dim (stride 0), so each output row reads one index. */
    tm_buf ix = *out;
    ix.handle = index->handle;
    ix.offset = index->offset;
    ix.dtype = index->dtype;
    for (int d = 0; d < out->ndim; d++)
        ix.strides[d] = d == dim && index->ndim ? index->strides[0] : 0;
    tm__ix c;
    tm__ix_init(&c, TM__IX_GATHER, out, &ix, in, dim);
    tm__ix_run(&c);
    return TM_OK;
}
