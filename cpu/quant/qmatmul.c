/* qmatmul.c — y [m, n] (+)= x [m, k] . w [n, k]^T with w quantized.
 *
 * x's rows are quantized once to w's activation type into one scratch
 * buffer the threads share (rows in parallel), then the weight rows are
 * split over the threads: each streams its rows once per chunk of
 * activation rows sized to stay in L2, and each kernel call decodes one
 * weight row against up to TM__QNA activation rows.  Every y element is
 * one kernel result, whatever the split, so results do not depend on the
 * thread count. */
#include "qmatmul.h"

#include "../../tensor/runtime/runtime_impl.h"

#include <string.h>

/* Activation rows per chunk: about this many bytes of them. */
#define ACT_CHUNK_BYTES (192 * 1024)

typedef struct {
    const tm_buf *x;
    tm_dtype act;
    char *aq;
    size_t arow;
} act_job;

static void act_run(int64_t r0, int64_t r1, void *vctx)
{
    const act_job *j = vctx;
    int64_t k = j->x->shape[1];
    for (int64_t r = r0; r < r1; r++)
        tm__quantize_row(j->act, (const float *)tm__qbuf_row(j->x, r),
                         j->aq + (size_t)r * j->arow, k);
}

typedef struct {
    const tm_buf *y, *w;
    const char *aq;
    size_t arow;
    int64_t m, nb, mchunk;
    bool accumulate;
    tm__qrows_fn rows;
} mm_job;

static void mm_run(int64_t n0, int64_t n1, void *vctx)
{
    const mm_job *j = vctx;
    float out[TM__QNA];
    for (int64_t m0 = 0; m0 < j->m; m0 += j->mchunk) {
        int64_t m1 = m0 + j->mchunk < j->m ? m0 + j->mchunk : j->m;
        for (int64_t r = n0; r < n1; r++) {
            const char *wr = tm__qbuf_row(j->w, r);
            for (int64_t i = m0; i < m1; i += TM__QNA) {
                int na = m1 - i < TM__QNA ? (int)(m1 - i) : TM__QNA;
                j->rows(wr, j->aq + (size_t)i * j->arow, j->arow, na, j->nb,
                        out);
                for (int t = 0; t < na; t++) {
                    float *yp = (float *)tm__qbuf_row(j->y, i + t) + r;
                    *yp = j->accumulate ? *yp + out[t] : out[t];
                }
            }
        }
    }
}

static void zero_rows(const tm_buf *y, int64_t m, int64_t n)
{
    for (int64_t i = 0; i < m; i++)
        memset(tm__qbuf_row(y, i), 0, (size_t)n * sizeof(float));
}

tm_status tm__qmatmul_run(const tm_buf *y, const tm_buf *x, const tm_buf *w,
                          bool accumulate)
{
    tm_status st = TM_OK;
    const tm__qtraits *q = tm__qtraits_of(w->dtype);
    const tm__qtraits *qa = tm__qtraits_of(q->act);
    int64_t m = x->shape[0], k = x->shape[1], n = w->shape[0];
    char *aq = NULL;
    if (m == 0 || n == 0) return TM_OK;
    if (k == 0) {
        if (!accumulate) zero_rows(y, m, n);
        return TM_OK;
    }
    size_t arow = (size_t)(k / qa->block) * qa->bytes;
    aq = tm__alloc((size_t)m * arow, __func__);
    if (!aq) {
        st = TM_ENOMEM;
        goto fail;
    }
    act_job aj = {x, q->act, aq, arow};
    tm__parallel_for(m, k >= 16384 ? 1 : 16384 / k, act_run, &aj);

    int64_t mchunk = (int64_t)(ACT_CHUNK_BYTES / arow);
    if (mchunk < TM__QNA) mchunk = TM__QNA;
    mchunk -= mchunk % TM__QNA;
    mm_job mj = {y, w, aq, arow, m, k / q->block, mchunk, accumulate,
                 tm__qrows_for(w->dtype)};
    /* A task of at least ~64k multiply-adds. */
    int64_t per_row = k * (m < 64 ? m : 64);
    int64_t grain = per_row >= 65536 ? 1 : 65536 / per_row;
    tm__parallel_for(n, grain, mm_run, &mj);
fail:
    tm__dealloc(aq);
    return st;
}
