/* qmatmul_backward.c — dx [m, k] (+)= dy [m, n] . w [n, k], w quantized
 * and frozen, dequantized block by block as it is read: never an F32 copy
 * of w (a few weight rows of one column chunk live on the stack).
 *
 * The threads split k (whole blocks), so no two write one dx element.
 * Each takes its columns in chunks of CHUNK values; per chunk and tile of
 * dx rows it dequantizes GROUP weight rows at a time and adds them, scaled
 * by dy, into the tile's dx rows.  Every dx element is accumulated over n
 * in order, so the result depends on neither the thread count nor the
 * tiling. */
#include "qmatmul.h"

#include "../../tensor/runtime/runtime_impl.h"

#include <string.h>

#define CHUNK 256 /* values: a multiple of every block size */
#define GROUP 4   /* weight rows dequantized together (<= 4: tm__qaxpy) */
#define TILE_BYTES (128 * 1024) /* of dx rows per tile */

void tm__qaxpy_portable(float *dx, const float *b, int64_t bstride,
                        const float *c, int nr, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float s = dx[i];
        for (int r = 0; r < nr; r++) s = s + c[r] * b[r * bstride + i];
        dx[i] = s;
    }
}

typedef struct {
    const tm_buf *dx, *dy, *w;
    const tm__qtraits *q;
    bool accumulate;
    tm__qaxpy_fn axpy;
} bw_job;

static void bw_run(int64_t b0, int64_t b1, void *vctx)
{
    const bw_job *j = vctx;
    int64_t blk = j->q->block, m = j->dy->shape[0], n = j->dy->shape[1];
    float buf[GROUP * CHUNK];
    for (int64_t c0 = b0 * blk; c0 < b1 * blk; c0 += CHUNK) {
        int64_t cw = b1 * blk - c0 < CHUNK ? b1 * blk - c0 : CHUNK;
        size_t woff = (size_t)(c0 / blk) * j->q->bytes;
        int64_t tile = TILE_BYTES / (cw * (int64_t)sizeof(float));
        if (tile < 1) tile = 1;
        for (int64_t m0 = 0; m0 < m; m0 += tile) {
            int64_t m1 = m0 + tile < m ? m0 + tile : m;
            if (!j->accumulate)
                for (int64_t i = m0; i < m1; i++)
                    memset((float *)tm__qbuf_row(j->dx, i) + c0, 0,
                           (size_t)cw * sizeof(float));
            for (int64_t r0 = 0; r0 < n; r0 += GROUP) {
                int nr = n - r0 < GROUP ? (int)(n - r0) : GROUP;
                for (int g = 0; g < nr; g++)
                    tm__dequantize_row(j->w->dtype,
                                       tm__qbuf_row(j->w, r0 + g) + woff,
                                       buf + g * CHUNK, cw);
                for (int64_t i = m0; i < m1; i++) {
                    const float *dyr = (const float *)tm__qbuf_row(j->dy, i);
                    j->axpy((float *)tm__qbuf_row(j->dx, i) + c0, buf, CHUNK,
                            dyr + r0, nr, cw);
                }
            }
        }
    }
}

tm_status tm__qmatmul_backward_run(const tm_buf *dx, const tm_buf *dy,
                                   const tm_buf *w, bool accumulate)
{
    const tm__qtraits *q = tm__qtraits_of(w->dtype);
    int64_t m = dy->shape[0], n = dy->shape[1], k = w->shape[1];
    if (m == 0 || k == 0) return TM_OK;
    if (n == 0) {
        if (!accumulate)
            for (int64_t i = 0; i < m; i++)
                memset(tm__qbuf_row(dx, i), 0, (size_t)k * sizeof(float));
        return TM_OK;
    }
    bw_job j = {dx, dy, w, q, accumulate, tm__qaxpy_current()};
    int64_t nbk = k / q->block;
    /* A task of at least ~64k multiply-adds (n * m per column). */
    int64_t per_blk = q->block * n * (m < 64 ? m : 64);
    int64_t grain = per_blk >= 65536 ? 1 : 65536 / per_blk;
    tm__parallel_for(nbk, grain, bw_run, &j);
    return TM_OK;
}
