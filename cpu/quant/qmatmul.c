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

#include <stddef.h>
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
    ptrdiff_t wrow; /* bytes from one weight row to the next */
    bool accumulate;
    tm__qrows_fn rows;
    tm__qrows8_fn rows8; /* NULL: groups of TM__QNA at most */
    const float *da, *sa; /* rows8's F32 scales, per group of 8 rows */
} mm_job;

/* y is F32 (tm__qcheck_f32): row i starts i * strides[0] floats after
 * the base, computed here rather than per element through tm__qbuf_row
 * (a call and a traits lookup per output: a few percent of a prefill). */
static void put(const mm_job *j, int64_t i, int64_t r, const float *out,
                int na)
{
    float *y0 = (float *)((char *)j->y->handle + j->y->offset);
    int64_t ys = j->y->strides[0];
    for (int t = 0; t < na; t++) {
        float *yp = y0 + (i + t) * ys + r;
        *yp = j->accumulate ? *yp + out[t] : out[t];
    }
}

static void mm_run(int64_t n0, int64_t n1, void *vctx)
{
    const mm_job *j = vctx;
    float out[TM__QNA8];
    int64_t gsz = j->nb * TM__QNA8;
    for (int64_t m0 = 0; m0 < j->m; m0 += j->mchunk) {
        int64_t m1 = m0 + j->mchunk < j->m ? m0 + j->mchunk : j->m;
        const char *w0 = tm__qbuf_row(j->w, n0);
        for (int64_t r = n0; r < n1; r++) {
            /* weight rows are wrow bytes apart (whole blocks, checked) */
            const char *wr = w0 + (r - n0) * j->wrow;
            int64_t i = m0;
            /* m0 is a multiple of 8: whole groups of rows 8g .. 8g + 7 */
            for (; j->rows8 && i + TM__QNA8 <= m1; i += TM__QNA8) {
                int64_t g = i / TM__QNA8;
                j->rows8(wr, j->aq + (size_t)i * j->arow, j->arow, j->nb,
                         j->da + g * gsz, j->sa ? j->sa + g * gsz : NULL,
                         out);
                put(j, i, r, out, TM__QNA8);
            }
            for (; i < m1; i += TM__QNA) {
                int na = m1 - i < TM__QNA ? (int)(m1 - i) : TM__QNA;
                j->rows(wr, j->aq + (size_t)i * j->arow, j->arow, na, j->nb,
                        out);
                put(j, i, r, out, na);
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
    int64_t nb = k / q->block, groups = m / TM__QNA8;
    tm__qrows8_fn rows8 = groups ? tm__qrows8_for(w->dtype) : NULL;
    bool has_s = q->act == TM_Q8_1;
    /* one scratch: the quantized rows, then rows8's F32 scales */
    size_t qbytes = ((size_t)m * arow + 63) / 64 * 64;
    size_t nsc = rows8 ? (size_t)(groups * nb * TM__QNA8) : 0;
    aq = tm__alloc(qbytes + nsc * sizeof(float) * (has_s ? 2 : 1), __func__);
    if (!aq) {
        st = TM_ENOMEM;
        goto fail;
    }
    act_job aj = {x, q->act, aq, arow};
    tm__parallel_for(m, k >= 16384 ? 1 : 16384 / k, act_run, &aj);
    float *da = rows8 ? (float *)(aq + qbytes) : NULL;
    float *sa = rows8 && has_s ? da + nsc : NULL;
    for (int64_t g = 0; rows8 && g < groups; g++)
        for (int64_t b = 0; b < nb; b++)
            for (int t = 0; t < TM__QNA8; t++) {
                const char *blk = aq + (size_t)(g * TM__QNA8 + t) * arow +
                                  (size_t)b * qa->bytes;
                size_t at = (size_t)((g * nb + b) * TM__QNA8 + t);
                tm__half h;
                memcpy(&h, blk, sizeof h); /* d leads both block types */
                da[at] = tm__half_to_f32(h);
                if (sa) {
                    memcpy(&h, blk + sizeof h, sizeof h);
                    sa[at] = tm__half_to_f32(h);
                }
            }

    int64_t mchunk = (int64_t)(ACT_CHUNK_BYTES / arow);
    if (mchunk < TM__QNA8) mchunk = TM__QNA8;
    mchunk -= mchunk % TM__QNA8;
    ptrdiff_t wrow = n > 1 ? tm__qbuf_row(w, 1) - tm__qbuf_row(w, 0) : 0;
    mm_job mj = {y, w, aq, arow, m, nb, mchunk, wrow, accumulate,
                 tm__qrows_for(w->dtype), rows8, da, sa};
    /* A task of at least ~64k multiply-adds. */
    int64_t per_row = k * (m < 64 ? m : 64);
    int64_t grain = per_row >= 65536 ? 1 : 65536 / per_row;
    tm__parallel_for(n, grain, mm_run, &mj);
fail:
    tm__dealloc(aq);
    return st;
}
