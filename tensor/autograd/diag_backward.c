/* diag_backward.c — the gradient of tm_diagonal (ops/diag.c) and its
 * recording hook.  The gradient is zeros of the input's shape with g
 * copied onto the same diagonal: no positions are computed on the host
 * (as the general AsStridedBackward would), so traces and einsum's
 * repeated labels stay cheap on any device. */
#include "backward.h"
#include "../core/grad_hooks.h"

typedef struct {
    int64_t offset;
    int dim1, dim2;
} diagonal_args;

static tm_status diagonal_backward(tm__node *n, const tm_tensor *g,
                                   tm_tensor **gi)
{
    const diagonal_args *p = TM__AG_ARGS(n, diagonal_args);
    const tm__edge *e = &n->edges[0];
    tm_tensor *z = tm__grad_zeros(e->shape, e->ndim, g->dtype, g);
    tm_tensor *d = z ? tm_diagonal(z, p->offset, p->dim1, p->dim2) : NULL;
    tm_status st = d ? tm_copy_(d, g) : tm_last_status();
    tm_free(d);
    if (st) {
        tm_free(z);
        return st;
    }
    gi[0] = tm__grad_as(z, e->dtype);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_diagonal(tm_tensor *out, const tm_tensor *t,
                             int64_t offset, int dim1, int dim2)
{
    const tm_tensor *ins[1] = {t};
    diagonal_args p = {offset, dim1, dim2};
    tm__record r = {.name = "DiagonalBackward", .backward = diagonal_backward,
                    .nin = 1, .in = ins, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
