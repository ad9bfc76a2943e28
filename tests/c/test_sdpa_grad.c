/*
 * test_sdpa_grad.c — tm_sdpa's gradients: F64 central differences
 * (gradcheck.h) of q, k and v through the fused backward.
 */
#include "gradcheck.h"
#include "harness.h"

static tm_tensor *sdpa_fn(tm_tensor *const *in, void *ctx)
{
    return tm_sdpa(in[0], in[1], in[2], ctx);
}

TEST(sdpa_grad_causal_gqa_dv_differs)
{
    tm_tensor *in[3] = {TT_LEAF(1, 2, 4, 9, 8), TT_LEAF(2, 2, 2, 9, 8),
                        TT_LEAF(3, 2, 2, 9, 5)};
    tm_sdpa_opts o = {0};
    o.causal = true;
    o.impl = TM_SDPA_FUSED;
    CHECK(GRADCHECK("sdpa causal gqa", sdpa_fn, &o, in, 3, 1e-6));
    for (int i = 0; i < 3; i++) tm_free(in[i]);
}
