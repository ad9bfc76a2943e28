/* cpu_embedding.c — the element loops of tm_embedding (contracts in
 * cpu_nn.h): the range check of the indices and the scatter-add of the
 * weight gradient.  Both run on the calling thread: the check stops at the
 * first bad index, and the scatter-add's rows of dw may repeat, so its
 * order of k is what makes the sum deterministic. */
#include "cpu_nn.h"

int64_t tm__index_find_outside(const int64_t *idx, int64_t k, int64_t v)
{
    for (int64_t r = 0; r < k; r++)
        if (idx[r] < 0 || idx[r] >= v) return r;
    return -1;
}

void tm__embedding_backward(tm_dtype dt, void *dw, const void *g,
                            const int64_t *idx, int64_t k, int64_t d)
{
    if (dt == TM_F64) {
        double *w = dw;
        const double *gv = g;
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < d; j++) w[idx[r] * d + j] += gv[r * d + j];
    } else {
        float *w = dw;
        const float *gv = g;
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < d; j++) w[idx[r] * d + j] += gv[r * d + j];
    }
}
