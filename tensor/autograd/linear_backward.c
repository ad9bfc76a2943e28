/* linear_backward.c — the gradient of ops/linear.c's tm_linear and its
 * recording hook (tm_gemm writes in place and records nothing). */
#include "backward.h"
#include "../core/grad_hooks.h"

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
