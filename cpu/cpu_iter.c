/* cpu_iter.c — the strided multi-operand iterator. */
#include "cpu_impl.h"

void tm__iter_init(tm__iter *it, int nop, const tm_buf *const *bufs)
{
    const tm_buf *b0 = bufs[0];
    it->nop = nop;
    it->ndim = 0;
    it->numel = 1;
    for (int k = 0; k < nop; k++) it->data[k] = tm__ptr(bufs[k]);
    for (int d = 0; d < b0->ndim; d++) it->numel *= b0->shape[d];
    if (it->numel == 0) { /* nothing to visit; other dims may be huge */
        it->ndim = 1;
        it->shape[0] = 0;
        for (int k = 0; k < nop; k++) it->strides[k][0] = 0;
        return;
    }
    for (int d = 0; d < b0->ndim; d++) {
        if (b0->shape[d] == 1) continue;
        int n = it->ndim;
        bool merge = n > 0;
        for (int k = 0; k < nop && merge; k++) {
            int64_t es = (int64_t)tm_dtype_size(bufs[k]->dtype);
            merge = it->strides[k][n - 1] ==
                    bufs[k]->strides[d] * es * b0->shape[d];
        }
        if (merge) {
            it->shape[n - 1] *= b0->shape[d];
            for (int k = 0; k < nop; k++)
                it->strides[k][n - 1] =
                    bufs[k]->strides[d] *
                    (int64_t)tm_dtype_size(bufs[k]->dtype);
            continue;
        }
        it->shape[n] = b0->shape[d];
        for (int k = 0; k < nop; k++)
            it->strides[k][n] =
                bufs[k]->strides[d] * (int64_t)tm_dtype_size(bufs[k]->dtype);
        it->ndim++;
    }
    if (it->ndim == 0) { /* a scalar, or all dims of size 1 */
        it->ndim = 1;
        it->shape[0] = 1;
        for (int k = 0; k < nop; k++) it->strides[k][0] = 0;
    }
}

void tm__iter_range(const tm__iter *it, int64_t begin, int64_t end,
                    tm__iter_fn fn, void *ctx)
{
    if (it->numel == 0 || begin >= end) return;
    int nd = it->ndim, last = nd - 1;
    int64_t idx[TM_MAX_DIMS];
    char *ptrs[TM__ITER_MAX_OPS];
    int64_t inner[TM__ITER_MAX_OPS];
    int64_t rem = begin;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int k = 0; k < it->nop; k++) {
        ptrs[k] = it->data[k];
        for (int d = 0; d < nd; d++) ptrs[k] += idx[d] * it->strides[k][d];
        inner[k] = it->strides[k][last];
    }
    int64_t pos = begin;
    while (pos < end) {
        int64_t n = it->shape[last] - idx[last];
        if (n > end - pos) n = end - pos;
        fn(ptrs, inner, n, ctx);
        pos += n;
        if (pos >= end) break;
        /* advance the multi-index by n (the run ends a row, or the range) */
        idx[last] += n;
        for (int k = 0; k < it->nop; k++) ptrs[k] += n * inner[k];
        for (int d = last; d > 0 && idx[d] == it->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < it->nop; k++)
                ptrs[k] += it->strides[k][d - 1] -
                           it->shape[d] * it->strides[k][d];
        }
    }
}

typedef struct {
    const tm__iter *it;
    tm__iter_fn fn;
    void *ctx;
} tm__iter_job;

static void tm__iter_part(int64_t begin, int64_t end, void *p)
{
    tm__iter_job *j = p;
    tm__iter_range(j->it, begin, end, j->fn, j->ctx);
}

void tm__iter_run(const tm__iter *it, int64_t grain, tm__iter_fn fn,
                  void *ctx)
{
    tm__iter_job j = {it, fn, ctx};
    tm__parallel_for(it->numel, grain, tm__iter_part, &j);
}
