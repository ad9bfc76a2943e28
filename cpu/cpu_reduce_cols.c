/* cpu_reduce_cols.c — F32 sum/mean over leading dims ("column sums", e.g. a
 * bias gradient summed over the batch).
 *
 * in is (kept..., red...) with the last kept dim contiguous; out is
 * (kept...).  Folding each output on its own would walk memory with the
 * large reduced strides; instead whole rows of the last kept dim are added
 * into a block of double accumulators, one reduced index after another.
 * Each column is summed in the same order whatever the thread count, so
 * results are bitwise independent of it. */
#include "cpu_impl.h"

#define TM__COLS 512 /* accumulators per work item (4 KiB of doubles) */

typedef struct {
    const tm_buf *out, *in;
    int nk, nred;
    int64_t outer, width, nblocks, count;
    bool mean;
} tm__cols_job;

/* Element offset of kept-outer index o (kept dims except the last). */
static int64_t tm__outer_off(const tm_buf *b, int nk, int64_t o)
{
    int64_t off = 0;
    for (int d = nk - 2; d >= 0; d--) {
        off += (o % b->shape[d]) * b->strides[d];
        o /= b->shape[d];
    }
    return off;
}

static void tm__cols_range(int64_t begin, int64_t end, void *p)
{
    const tm__cols_job *j = p;
    const tm_buf *in = j->in;
    double acc[TM__COLS];
    for (int64_t item = begin; item < end; item++) {
        int64_t o = item / j->nblocks, c0 = (item % j->nblocks) * TM__COLS;
        int64_t w = j->width - c0 < TM__COLS ? j->width - c0 : TM__COLS;
        const float *base = (const float *)tm__ptr(in) +
                            tm__outer_off(in, j->nk, o) + c0;
        for (int64_t c = 0; c < w; c++) acc[c] = 0;
        int64_t idx[TM_MAX_DIMS] = {0}, off = 0;
        for (int64_t r = 0; r < j->count; r++) {
            const float *row = base + off;
            for (int64_t c = 0; c < w; c++) acc[c] += row[c];
            /* advance the odometer over the reduced dims */
            for (int d = j->nred - 1; d >= 0; d--) {
                int dd = j->nk + d;
                off += in->strides[dd];
                if (++idx[d] < in->shape[dd]) break;
                off -= in->strides[dd] * in->shape[dd];
                idx[d] = 0;
            }
        }
        float *dst = (float *)tm__ptr(j->out) +
                     tm__outer_off(j->out, j->nk, o) + c0;
        double div = j->mean ? (double)j->count : 1.0;
        for (int64_t c = 0; c < w; c++) dst[c] = (float)(acc[c] / div);
    }
}

bool tm__red_cols_applies(tm_reduce_op op, const tm_buf *out,
                          const tm_buf *in, int nred)
{
    int nk = in->ndim - nred;
    return (op == TM_RED_SUM || op == TM_RED_MEAN) && nred >= 1 && nk >= 1 &&
           in->dtype == TM_F32 && out->dtype == TM_F32 &&
           in->shape[nk - 1] >= 8 && in->strides[nk - 1] == 1 &&
           out->strides[nk - 1] == 1;
}

tm_status tm__red_cols(tm_reduce_op op, const tm_buf *out, const tm_buf *in,
                       int nred)
{
    tm__cols_job j = {.out = out, .in = in, .nk = in->ndim - nred,
                      .nred = nred, .outer = 1, .count = 1,
                      .mean = op == TM_RED_MEAN};
    j.width = in->shape[j.nk - 1];
    for (int d = 0; d < j.nk - 1; d++) j.outer *= in->shape[d];
    for (int d = j.nk; d < in->ndim; d++) j.count *= in->shape[d];
    j.nblocks = (j.width + TM__COLS - 1) / TM__COLS;
    int64_t items = j.outer * j.nblocks;
    int64_t per_item = (j.count > 0 ? j.count : 1) * TM__COLS;
    int64_t grain = TM__GRAIN / per_item;
    tm__parallel_for(items, grain > 0 ? grain : 1, tm__cols_range, &j);
    return TM_OK;
}
