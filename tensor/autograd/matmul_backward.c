/* matmul_backward.c — the gradients of ops/matmul.c's tm_matmul (every
 * numpy form, batch dims broadcast and reduced back) and tm_linear, and
 * their recording hooks (tm_gemm writes in place and records nothing).  The products go through tm_gemm with transpose flags, so no
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

/* ---------------------------------------------------------------- linear */

/* y = x·wᵀ + b:  dx = g·w,  dw = gᵀ·x over all rows,  db = sum of g's
 * rows. */
static tm_status linear_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *ex = &n->edges[0], *ew = &n->edges[1];
    const tm_tensor *x = tm__ag_saved(n, 0), *w = tm__ag_saved(n, 1);
    if (ex->needed) tm__sc_finish(&s, tm__sc_keep(&s, tm_matmul(g, w)), ex, &gin[0]);
    if (ew->needed) {
        int64_t out = ew->shape[0], in = ew->shape[1], rows = 1;
        for (int d = 0; d + 1 < tm_ndim(g); d++) rows *= tm_shape(g)[d];
        tm_tensor *g2 = tm__sc_keep(&s, tm_reshape(g, (int64_t[]){rows, out},
                                                   2));
        tm_tensor *x2 = tm__sc_keep(&s, tm_reshape(x, (int64_t[]){rows, in},
                                                   2));
        tm__sc_finish(&s, tm__sc_gemm(&s, true, false, g2, x2, ew->shape, 2,
                            tm_dtype_of(g)),
               ew, &gin[1]);
    }
    if (n->nin > 2 && n->edges[2].needed)
        tm__sc_finish(&s, tm__sc_sum_rows(&s, g), &n->edges[2], &gin[2]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_linear(tm_tensor *out, const tm_tensor *x,
                           const tm_tensor *w, const tm_tensor *bias)
{
    /* dx needs w and dw needs x: save only what is needed. */
    const tm_tensor *ins[3] = {x, w, bias};
    tm__record r = {.name = "LinearBackward", .backward = linear_backward,
                    .nin = bias ? 3 : 2, .in = ins,
                    .save = {tm__ag_requires(w) ? x : NULL,
                             tm__ag_requires(x) ? w : NULL}};
    return tm__ag_result(&r, out);
}
