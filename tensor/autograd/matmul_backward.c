/* matmul_backward.c — the gradient of ops/matmul.c's tm_matmul (every
 * numpy form, batch dims broadcast and reduced back) and its recording
 * hook.  The products go through tm_gemm with transpose flags, so no
 * transposed copy is made:
 *   dA = G · Bᵀ,  dB = Aᵀ · G  (summed over A's / B's broadcast batch). */
#include "backward.h"
#include "../core/grad_hooks.h"

#include <string.h>

/* Both operands are seen as matrices (a 1-D a as [1,k], a 1-D b as
 * [k,1]) and g as [batch..., m, n]. */
static tm_status matmul_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *ea = &n->edges[0], *eb = &n->edges[1];
    tm_dtype dt = tm_dtype_of(g);
    bool a1 = ea->ndim == 1, b1 = eb->ndim == 1;
    int64_t k = ea->shape[ea->ndim - 1];
    int64_t m = a1 ? 1 : ea->shape[ea->ndim - 2];
    int64_t nn = b1 ? 1 : eb->shape[eb->ndim - 1];
    int nbd = tm_ndim(g) - !a1 - !b1, nd = nbd + 2;
    int64_t gs[TM_MAX_DIMS + 2], cs[TM_MAX_DIMS + 2];
    int64_t a2[2] = {1, k}, b2[2] = {k, 1};
    memcpy(gs, tm_shape(g), sizeof(int64_t) * (size_t)nbd);
    memcpy(cs, gs, sizeof cs);
    gs[nbd] = m, gs[nbd + 1] = nn;
    tm_tensor *g2 = tm__sc_keep(&s, tm_reshape(g, gs, nd));
    if (ea->needed) { /* dA = G · Bᵀ: [batch..., m, k] */
        tm_tensor *b = tm__sc_keep(&s, tm__sc_as(tm__ag_saved(n, 1), dt));
        if (b && b1) b = tm__sc_keep(&s, tm_reshape(b, b2, 2));
        cs[nbd] = m, cs[nbd + 1] = k;
        tm_tensor *c = tm__sc_gemm(&s, false, true, g2, b, cs, nd, dt);
        if (c)
            c = tm__sc_keep(&s, tm__ag_sum_to(c, a1 ? a2 : ea->shape,
                                              a1 ? 2 : ea->ndim));
        tm__sc_finish(&s, c, ea, &gin[0]);
    }
    if (eb->needed) { /* dB = Aᵀ · G: [batch..., k, n] */
        tm_tensor *a = tm__sc_keep(&s, tm__sc_as(tm__ag_saved(n, 0), dt));
        if (a && a1) a = tm__sc_keep(&s, tm_reshape(a, a2, 2));
        cs[nbd] = k, cs[nbd + 1] = nn;
        tm_tensor *c = tm__sc_gemm(&s, true, false, a, g2, cs, nd, dt);
        if (c)
            c = tm__sc_keep(&s, tm__ag_sum_to(c, b1 ? b2 : eb->shape,
                                              b1 ? 2 : eb->ndim));
        tm__sc_finish(&s, c, eb, &gin[1]);
    }
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_matmul(tm_tensor *out, const tm_tensor *a,
                           const tm_tensor *b)
{
    /* dA needs B and dB needs A: save only what is needed. */
    const tm_tensor *ins[2] = {a, b};
    tm__record r = {.name = "MatmulBackward", .backward = matmul_backward,
                    .nin = 2, .in = ins,
                    .save = {tm__ag_requires(b) ? a : NULL,
                             tm__ag_requires(a) ? b : NULL}};
    return tm__ag_result(&r, out);
}
