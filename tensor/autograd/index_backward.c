/* index_backward.c — the gradients of ops/index.c (gather, scatter,
 * scatter_add, index_select) and their recording hooks.  Indices are
 * saved, never differentiated. */
#include "backward.h"
#include "../core/grad_hooks.h"

#include <string.h>

typedef struct { int dim; } index_args;

/* g gathered along d by idx, in the leading block of zeros of e's shape. */
static tm_tensor *gather_into(const tm_tensor *g, int d, const tm_tensor *idx,
                              const tm__edge *e)
{
    tm_tensor *v = tm_gather(g, d, idx);
    if (!v) return NULL;
    if (v->ndim == e->ndim &&
        !memcmp(v->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim))
        return tm__grad_as(v, e->dtype);
    tm_tensor *z = tm__grad_place(v, e->shape, e->ndim, e->dtype, NULL, NULL);
    tm_free(v);
    return z;
}

/* An indexing node: the inputs that get edges, the index saved. */
static tm_tensor *index_record(tm_tensor *out, int nin,
                               const tm_tensor *const *ins, const char *name,
                               tm__backward_fn fn, int dim,
                               const tm_tensor *index)
{
    index_args p = {dim};
    tm__record r = {.name = name, .backward = fn, .nin = nin, .in = ins,
                    .save = {index}, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* -------------------------------------------------------------- gather */

/* The gradient scatter-adds back to the gathered positions. */
static tm_status gather_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    tm_tensor *z = tm__grad_zeros(e->shape, e->ndim, g->dtype, g);
    if (!z) return tm_last_status();
    gi[0] = tm_scatter_add(z, TM__AG_ARGS(n, index_args)->dim,
                           tm__ag_saved(n, 0), g);
    tm_free(z);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_gather(tm_tensor *out, const tm_tensor *t, int dim,
                           const tm_tensor *index)
{
    const tm_tensor *ins[1] = {t};
    return index_record(out, 1, ins, "GatherBackward", gather_backward, dim,
                        index);
}

/* ------------------------------------------------------------- scatter */

/* t's written positions get nothing; src gets g at them. */
static tm_status scatter_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gi)
{
    int d = TM__AG_ARGS(n, index_args)->dim;
    const tm_tensor *idx = tm__ag_saved(n, 0);
    if (n->edges[0].needed && !(gi[0] = tm_scatter_value(g, d, idx, 0.0)))
        return tm_last_status();
    if (n->nin > 1 && n->edges[1].needed &&
        !(gi[1] = gather_into(g, d, idx, &n->edges[1])))
        return tm_last_status();
    return TM_OK;
}

/* t gets g everywhere; src gets g at the positions it was added to. */
static tm_status scatter_add_backward(tm__node *n, const tm_tensor *g,
                                      tm_tensor **gi)
{
    if (n->edges[0].needed) gi[0] = tm_retain((tm_tensor *)g);
    if (n->edges[1].needed &&
        !(gi[1] = gather_into(g, TM__AG_ARGS(n, index_args)->dim,
                              tm__ag_saved(n, 0), &n->edges[1])))
        return tm_last_status();
    return TM_OK;
}

tm_tensor *tm__grad_scatter(tm_tensor *out, const tm_tensor *t, int dim,
                            const tm_tensor *index, const tm_tensor *src,
                            bool add)
{
    const tm_tensor *ins[2] = {t, src};
    return index_record(out, src ? 2 : 1, ins,
                        add ? "ScatterAddBackward" : "ScatterBackward",
                        add ? scatter_add_backward : scatter_backward, dim,
                        index);
}

/* -------------------------------------------------------- index_select */

/* index_add: the index, seen along d and expanded to g's shape, scatters g
 * into zeros (colliding indices accumulate). */
static tm_status index_select_backward(tm__node *n, const tm_tensor *g,
                                       tm_tensor **gi)
{
    const tm__edge *e = &n->edges[0];
    if (e->ndim == 0) {
        gi[0] = tm_reshape(g, NULL, 0);
        return gi[0] ? TM_OK : tm_last_status();
    }
    int d = TM__AG_ARGS(n, index_args)->dim;
    int64_t sh[TM_MAX_DIMS];
    for (int k = 0; k < e->ndim; k++) sh[k] = 1;
    sh[d] = g->shape[d];
    tm__scratch s = {0};
    tm_tensor *ix = tm__sc_keep(&s, tm_reshape(tm__ag_saved(n, 0), sh,
                                               e->ndim));
    tm_tensor *ixe = s.st ? NULL
                          : tm__sc_keep(&s, tm_expand(ix, g->shape, g->ndim));
    tm_tensor *z = s.st ? NULL
                        : tm__sc_keep(&s, tm__grad_zeros(e->shape, e->ndim,
                                                         g->dtype, g));
    if (!s.st) gi[0] = tm__sc_keep(&s, tm_scatter_add(z, d, ixe, g));
    if (gi[0]) tm_retain(gi[0]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_index_select(tm_tensor *out, const tm_tensor *t,
                                 int dim, const tm_tensor *index)
{
    const tm_tensor *ins[1] = {t};
    return index_record(out, 1, ins, "IndexSelectBackward",
                        index_select_backward, dim, index);
}
