/* shape_backward.c — the gradients of ops/shape.c (cat, stack, pad,
 * repeat; split and chunk are slices, see view_backward.c) and their
 * recording hooks. */
#include "backward.h"
#include "../core/grad_hooks.h"

#include <string.h>

typedef struct { int dim; } join_args;

/* A node over n inputs (cat, stack). */
static tm_tensor *join_record(tm_tensor *out, tm_tensor *const *ts, int n,
                              const char *name, tm__backward_fn fn, int dim)
{
    join_args p = {dim};
    tm__record r = {.name = name, .backward = fn, .nin = n,
                    .in = (const tm_tensor *const *)ts, .args = &p,
                    .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* ----------------------------------------------------------- cat, stack */

/* Each input gets its stretch of g along the dim. */
static tm_status cat_backward(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    int d = TM__AG_ARGS(n, join_args)->dim;
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
        const tm__edge *e = &n->edges[k];
        /* [0] tensors that were skipped (their ndim differs from g's) */
        bool skipped = e->ndim == 1 && e->shape[0] == 0 && g->ndim != 1;
        int64_t len = skipped ? 0 : e->shape[d], numel = 1;
        for (int j = 0; j < e->ndim; j++) numel *= e->shape[j];
        if (e->needed) {
            gi[k] = numel == 0
                        ? tm__grad_zeros(e->shape, e->ndim, e->dtype, g)
                        : tm__grad_as(tm_narrow(g, d, off, len), e->dtype);
            if (!gi[k]) return tm_last_status();
        }
        off += len;
    }
    return TM_OK;
}

tm_tensor *tm__grad_cat(tm_tensor *out, tm_tensor *const *ts, int n, int dim)
{
    return join_record(out, ts, n, "CatBackward", cat_backward, dim);
}

/* Each input gets its slice of g along the new dim. */
static tm_status stack_backward(tm__node *n, const tm_tensor *g,
                                tm_tensor **gi)
{
    int d = TM__AG_ARGS(n, join_args)->dim;
    for (int k = 0; k < n->nin; k++)
        if (n->edges[k].needed &&
            !(gi[k] = tm__grad_as(tm_select(g, d, k), n->edges[k].dtype)))
            return tm_last_status();
    return TM_OK;
}

tm_tensor *tm__grad_stack(tm_tensor *out, tm_tensor *const *ts, int n,
                          int dim)
{
    return join_record(out, ts, n, "StackBackward", stack_backward, dim);
}

/* ------------------------------------------------------------------ pad */

typedef struct { int64_t before[TM_MAX_DIMS]; } pad_args;

/* The window of t that survived (cropped by negative pads) sits at
 * dstart in the output: it is cut from g and placed at sstart. */
static tm_status pad_backward(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const pad_args *p = TM__AG_ARGS(n, pad_args);
    const tm__edge *e = &n->edges[0];
    int nd = e->ndim;
    int64_t sstart[TM_MAX_DIMS] = {0}, len[TM_MAX_DIMS] = {0};
    int64_t off = g->offset;
    bool whole = true, empty = false;
    for (int k = 0; k < nd; k++) {
        int64_t s = e->shape[k], lo = p->before[k],
                hi = g->shape[k] - s - lo;
        sstart[k] = lo < 0 ? -lo : 0;
        len[k] = s - sstart[k] - (hi < 0 ? -hi : 0);
        if (len[k] < 0) len[k] = 0;
        off += (lo > 0 ? lo : 0) * g->strides[k];
        whole = whole && len[k] == s;
        empty = empty || len[k] == 0;
    }
    if (empty) {
        gi[0] = tm__grad_zeros(e->shape, nd, e->dtype, g);
        return gi[0] ? TM_OK : tm_last_status();
    }
    tm_tensor *w = tm__view_of("tm_backward", g, len, g->strides, nd, off);
    if (!w || whole) {
        gi[0] = w;
        return w ? TM_OK : tm_last_status();
    }
    gi[0] = tm__grad_place(w, e->shape, nd, e->dtype, sstart, NULL);
    tm_free(w);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_pad(tm_tensor *out, const tm_tensor *t,
                        const int64_t *before)
{
    const tm_tensor *ins[1] = {t};
    pad_args p = {{0}};
    memcpy(p.before, before, sizeof(int64_t) * (size_t)t->ndim);
    tm__record r = {.name = "PadBackward", .backward = pad_backward,
                    .nin = 1, .in = ins, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}

/* --------------------------------------------------------------- repeat */

typedef struct { int64_t repeats[TM_MAX_DIMS]; } repeat_args;

/* Sums the tiles one repeated dim at a time: with dims before k already
 * reduced, g is seen as [before, r_k, s_k, after] and summed over r_k. */
static tm_status repeat_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gi)
{
    const repeat_args *p = TM__AG_ARGS(n, repeat_args);
    const tm__edge *e = &n->edges[0];
    int nrep = g->ndim, lead = nrep - e->ndim;
    int64_t cur[TM_MAX_DIMS];
    memcpy(cur, g->shape, sizeof(int64_t) * (size_t)nrep);
    tm_tensor *c = tm_retain((tm_tensor *)g);
    for (int k = 0; k < nrep && c; k++) {
        int64_t r = p->repeats[k], s = k < lead ? 1 : e->shape[k - lead];
        if (r == 1) continue;
        int64_t before = 1, after = 1;
        for (int j = 0; j < k; j++) before *= cur[j];
        for (int j = k + 1; j < nrep; j++) after *= cur[j];
        tm_tensor *v = tm_reshape(c, (int64_t[]){before, r, s, after}, 4);
        tm_free(c);
        c = v ? tm_sum(v, (int[]){1}, 1, false) : NULL;
        tm_free(v);
        cur[k] = s;
    }
    if (!c) return tm_last_status();
    gi[0] = tm_reshape(c, e->shape, e->ndim);
    tm_free(c);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_repeat(tm_tensor *out, const tm_tensor *t,
                           const int64_t *repeats, int nrep)
{
    const tm_tensor *ins[1] = {t};
    repeat_args p = {{0}};
    memcpy(p.repeats, repeats, sizeof(int64_t) * (size_t)nrep);
    tm__record r = {.name = "RepeatBackward", .backward = repeat_backward,
                    .nin = 1, .in = ins, .args = &p, .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
