/* cpu_sort.c — stable sort along the last dim, with indices.
 *
 * values, indices and in have the same shape (..., n); each row of n is
 * sorted on its own, rows split over the thread pool.  A row is loaded as
 * (key, index) pairs — keys as double for float dtypes (exact), as int64
 * for integers and bool (exact, also for large I64) — and merge-sorted,
 * which is stable: equal keys keep their original order, also when sorting
 * in descending order.  NaN sorts as larger than every number: the NaNs of
 * a row are first moved (stably) to its end, or to its front when
 * descending, and the rest is sorted with plain comparisons (so -0.0 and
 * 0.0 are equal, as in numpy and PyTorch).  Values are copied from the
 * input element by element at the sorted indices, so they keep every bit.
 */
#include "cpu_impl.h"

#include <math.h>
#include <string.h>

/* A key (double for floats, int64 otherwise) and its original index. */
typedef struct {
    union {
        double f;
        int64_t n;
    } k;
    int64_t i;
} sort_pair;

/* Runs shorter than this are sorted by insertion (stable too). */
#define SORT_RUN 16

/* Stable sort of v[n], before(x, y) meaning "pair x strictly before pair
 * y"; tmp has room for n pairs.  Bottom-up merge sort over
 * insertion-sorted runs; the result ends in v.  Always inlined into the
 * four orders below, so the comparison is inlined too. */
static TM__ALWAYS_INLINE void sort_pairs(sort_pair *v, sort_pair *tmp,
                                         int64_t n,
                                         bool (*before)(sort_pair, sort_pair))
{
    for (int64_t lo = 0; lo < n; lo += SORT_RUN) {
        int64_t hi = lo + SORT_RUN < n ? lo + SORT_RUN : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            sort_pair x = v[i];
            int64_t j = i;
            for (; j > lo && before(x, v[j - 1]); j--) v[j] = v[j - 1];
            v[j] = x;
        }
    }
    sort_pair *src = v, *dst = tmp;
    for (int64_t w = SORT_RUN; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n;
            int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            /* take from the right only when strictly before: stable */
            while (i < mid && j < hi)
                dst[o++] = before(src[j], src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        sort_pair *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, sizeof *v * (size_t)n);
}

static inline bool sort_f_lt(sort_pair x, sort_pair y)
{
    return x.k.f < y.k.f;
}

static inline bool sort_f_gt(sort_pair x, sort_pair y)
{
    return x.k.f > y.k.f;
}

static inline bool sort_i_lt(sort_pair x, sort_pair y)
{
    return x.k.n < y.k.n;
}

static inline bool sort_i_gt(sort_pair x, sort_pair y)
{
    return x.k.n > y.k.n;
}


static void sort_f_asc(sort_pair *v, sort_pair *tmp, int64_t n)
{
    sort_pairs(v, tmp, n, sort_f_lt);
}

static void sort_f_desc(sort_pair *v, sort_pair *tmp, int64_t n)
{
    sort_pairs(v, tmp, n, sort_f_gt);
}

static void sort_i_asc(sort_pair *v, sort_pair *tmp, int64_t n)
{
    sort_pairs(v, tmp, n, sort_i_lt);
}

static void sort_i_desc(sort_pair *v, sort_pair *tmp, int64_t n)
{
    sort_pairs(v, tmp, n, sort_i_gt);
}

typedef struct {
    const tm_buf *values, *indices, *in;
    bool desc, is_float;
    int64_t rows, n;
    char *scratch; /* per part: 2 * n pairs */
} sort_ctx;

/* Byte offset of row `r` of t (row-major over all dims but the last). */
static int64_t sort_row_offset(const tm_buf *t, int64_t r)
{
    int64_t off = 0;
    for (int d = t->ndim - 2; d >= 0 && r > 0; d--) {
        off += (r % t->shape[d]) * t->strides[d];
        r /= t->shape[d];
    }
    return off * (int64_t)tm_dtype_size(t->dtype);
}

/* Moves the NaN pairs of v[n] to the end (or the front when `front`),
 * keeping the order within both groups; returns the number of NaNs. */
static int64_t sort_split_nan(sort_pair *v, sort_pair *tmp, int64_t n,
                              bool front)
{
    int64_t nn = 0, o = 0;
    for (int64_t i = 0; i < n; i++)
        if (isnan(v[i].k.f)) tmp[nn++] = v[i];
    if (nn == 0) return 0;
    if (front) {
        for (int64_t i = n - 1, w = n - 1; i >= 0; i--)
            if (!isnan(v[i].k.f)) v[w--] = v[i];
        memcpy(v, tmp, sizeof *v * (size_t)nn);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (!isnan(v[i].k.f)) v[o++] = v[i];
        memcpy(v + o, tmp, sizeof *v * (size_t)nn);
    }
    return nn;
}

static void sort_row(const sort_ctx *c, char *scr, int64_t r)
{
    const tm_buf *in = c->in, *vb = c->values, *ib = c->indices;
    int nd = in->ndim;
    int64_t n = c->n, es = (int64_t)tm_dtype_size(in->dtype);
    int64_t sin = in->strides[nd - 1] * es;
    const char *src = (const char *)tm__ptr(in) + sort_row_offset(in, r);
    sort_pair *p = (sort_pair *)scr, *t = p + n;
    for (int64_t i = 0; i < n; i++) p[i].i = i;
    if (c->is_float) {
        tm__convert(&p[0].k.f, TM_F64, sizeof *p, src, in->dtype, sin, n);
        int64_t nn = sort_split_nan(p, t, n, c->desc);
        if (c->desc) sort_f_desc(p + nn, t, n - nn);
        else sort_f_asc(p, t, n - nn);
    } else {
        tm__convert(&p[0].k.n, TM_I64, sizeof *p, src, in->dtype, sin, n);
        if (c->desc) sort_i_desc(p, t, n);
        else sort_i_asc(p, t, n);
    }
    if (tm__ptr(vb)) {
        int64_t sv = vb->strides[nd - 1] * es;
        char *dst = (char *)tm__ptr(vb) + sort_row_offset(vb, r);
        for (int64_t j = 0; j < n; j++)
            memcpy(dst + j * sv, src + p[j].i * sin, (size_t)es);
    }
    if (tm__ptr(ib)) {
        int64_t si = ib->strides[nd - 1];
        int64_t *dst = (int64_t *)((char *)tm__ptr(ib) + sort_row_offset(ib, r));
        for (int64_t j = 0; j < n; j++) dst[j * si] = p[j].i;
    }
}

static void sort_part(int part, int nparts, void *p)
{
    const sort_ctx *c = p;
    int64_t lo = c->rows * part / nparts, hi = c->rows * (part + 1) / nparts;
    char *scr = c->scratch +
                (size_t)part * 2 * sizeof(sort_pair) * (size_t)c->n;
    for (int64_t r = lo; r < hi; r++) sort_row(c, scr, r);
}

tm_status tm__cpu_sort(tm_ctx *ctx, const tm_buf *values, const tm_buf *indices,
                       const tm_buf *in, bool descending)
{
    (void)ctx;
    int nd = in->ndim;
    /* absent outputs (handle NULL) promise nothing but being absent */
    TM_ASSERT(nd >= 1 && (!values->handle || values->ndim == nd) &&
                  (!indices->handle || indices->ndim == nd),
              TM_ESTATE);
    TM_ASSERT(!tm__ptr(indices) || indices->dtype == TM_I64, TM_ESTATE);
    TM_ASSERT(!tm__ptr(values) || values->dtype == in->dtype, TM_ESTATE);
    if (!tm_dtype_is_valid(in->dtype))
        return tm__errf(TM_EDTYPE, "tm_sort", "dtype %s is not supported",
                        tm_dtype_name(in->dtype));
    sort_ctx c = {values, indices, in, descending,
                  tm_dtype_is_float(in->dtype), 1, in->shape[nd - 1], NULL};
    for (int d = 0; d < nd - 1; d++) c.rows *= in->shape[d];
    if (c.rows == 0 || c.n == 0) return TM_OK;
    if ((uint64_t)c.n > SIZE_MAX / 64)
        return tm__errf(TM_EOVERFLOW, "tm_sort", "dim of size %lld is too "
                        "long to sort", (long long)c.n);

    int64_t nparts = tm_get_num_threads();
    int64_t by_size = c.rows * c.n / (TM__GRAIN / 8);
    if (nparts > by_size) nparts = by_size;
    if (nparts > c.rows) nparts = c.rows;
    if (nparts < 1) nparts = 1;
    c.scratch = tm__alloc((size_t)nparts * 2 * sizeof(sort_pair) *
                              (size_t)c.n,
                          "tm_sort");
    if (!c.scratch) return TM_ENOMEM;
    tm__parallel_parts((int)nparts, sort_part, &c);
    tm__dealloc(c.scratch);
    return TM_OK;
}
