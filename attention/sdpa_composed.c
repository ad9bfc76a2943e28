/*
 * sdpa_composed.c — the composed path of tm_sdpa (matmul, mask, softmax,
 * dropout, matmul through ordinary differentiable ops).
 */
#include "sdpa_impl.h"

tm_tensor *tm__sdpa_composed(const char *fn, const tm_tensor *q,
                             const tm_tensor *k, const tm_tensor *v,
                             const tm_tensor *mask, const tm__sdpa_geom *g,
                             const tm_attn_params *p)
{
    (void)q, (void)k, (void)v, (void)mask, (void)g, (void)p;
    tm__errf(TM_EUNSUPPORTED, fn, "the composed path is not built yet");
    return NULL;
}
