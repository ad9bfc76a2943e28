/* where_backward.c — the gradients of the selections of ops/where.c
 * (where, masked_fill, tril/triu) and their recording hooks.  Conditions
 * and masks are saved, never differentiated. */
#include "backward.h"
#include "../core/grad_hooks.h"

/* a gets g where cond holds, b where it does not. */
static tm_status where_backward(tm__node *n, const tm_tensor *g,
                                tm_tensor **grad_in)
{
    tm__scratch s = {0};
    const tm_tensor *cond = tm__ag_saved(n, 0);
    if (n->edges[1].needed)
        grad_in[1] = tm__sc_grad_for(&s, tm__sc_pass(&s, cond, g),
                                     &n->edges[1]);
    if (n->edges[2].needed)
        grad_in[2] = tm__sc_grad_for(&s, tm__sc_block(&s, cond, g),
                                     &n->edges[2]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_where(tm_tensor *out, const tm_tensor *cond,
                          const tm_tensor *a, const tm_tensor *b)
{
    /* cond gets no edge: it selects, it is not differentiated. */
    const tm_tensor *ins[3] = {NULL, a, b};
    tm__record r = {.name = "WhereBackward", .backward = where_backward,
                    .nin = 3, .in = ins, .save = {cond}};
    return tm__ag_result(&r, out);
}

/* t gets g where the mask is false. */
static tm_status masked_fill_backward(tm__node *n, const tm_tensor *g,
                                      tm_tensor **grad_in)
{
    tm__scratch s = {0};
    grad_in[0] = tm__sc_grad_for(&s, tm__sc_block(&s, tm__ag_saved(n, 0), g),
                                 &n->edges[0]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_masked_fill(tm_tensor *out, const tm_tensor *t,
                                const tm_tensor *mask)
{
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = "MaskedFillBackward",
                    .backward = masked_fill_backward, .nin = 1, .in = ins,
                    .save = {mask}};
    return tm__ag_result(&r, out);
}

typedef struct { int64_t k; bool upper; } tri_args;

/* The same triangle of g. */
static tm_status tri_backward(tm__node *n, const tm_tensor *g,
                              tm_tensor **grad_in)
{
    const tri_args *p = TM__AG_ARGS(n, tri_args);
    tm_tensor *r = p->upper ? tm_triu(g, p->k) : tm_tril(g, p->k);
    if (!r) return tm_last_status();
    tm__scratch s = {0};
    grad_in[0] = tm__sc_grad_for(&s, r, &n->edges[0]);
    tm_free(r);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_tri(tm_tensor *out, const tm_tensor *t, int64_t k,
                        bool upper)
{
    const tm_tensor *ins[1] = {t};
    tri_args p = {k, upper};
    tm__record r = {.name = upper ? "TriuBackward" : "TrilBackward",
                    .backward = tri_backward, .nin = 1, .in = ins,
                    .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
