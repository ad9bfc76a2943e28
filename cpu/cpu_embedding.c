/* cpu_embedding.c — the CPU's embedding_backward entry (contract in
 * foundry/backend.h): the range check of the indices, then the
 * scatter-add of the output gradient into the weight gradient.  Both run
 * on the calling thread: the check reports the first bad index, and rows
 * of dweight may repeat, so the order of k is what makes the sum
 * deterministic. */
#include "cpu_impl.h"

#include <string.h>

tm_status tm__cpu_embedding_backward(tm_ctx *ctx, const tm_buf *dweight,
                                     const tm_buf *g, const tm_buf *index)
{
    (void)ctx;
    int64_t v = dweight->shape[0], d = dweight->shape[1];
    int64_t k = index->shape[0];
    const int64_t *idx = tm__ptr(index);
    for (int64_t r = 0; r < k; r++)
        if (idx[r] < 0 || idx[r] >= v)
            return tm__errf(TM_ERANGE, "embedding_backward",
                            "index %lld at position %lld is out of range "
                            "for %lld embeddings", (long long)idx[r],
                            (long long)r, (long long)v);
    if (v * d > 0)
        memset(tm__ptr(dweight), 0,
               (size_t)(v * d) * tm_dtype_size(dweight->dtype));
    if (dweight->dtype == TM_F64) {
        double *w = tm__ptr(dweight);
        const double *gv = tm__ptr(g);
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < d; j++) w[idx[r] * d + j] += gv[r * d + j];
    } else {
        float *w = tm__ptr(dweight);
        const float *gv = tm__ptr(g);
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < d; j++) w[idx[r] * d + j] += gv[r * d + j];
    }
    return TM_OK;
}
