/* scatter_reduce_backward.c — the gradient of tm_scatter_reduce, by
 * PyTorch's rules (its scatter_reduce_backward), and its recording hook.
 *
 * t is [..] (the output's shape), index and the read block of src are
 * index's shape; g is the output's gradient.  "gather" below means
 * picking along dim at index (as the forward read the places), "scatter
 * add" sending values of index's shape to the places.
 *   sum   dt = g                         dsrc = gather(g)
 *   mean  dt = g / N                     dsrc = gather(g / N)
 *         N = values per place (+1 for t when included), 1 where none
 *   amax / amin: the gradient is split evenly among the values equal to
 *         the result: M = [t == out] + scatter add([src == gather(out)]),
 *         dt = [t == out] g / M, dsrc = [src == gather(out)] gather(g / M)
 *   prod  dt = g * out' / t' where t' is t with 0 replaced by 1 and out'
 *         the product with t' in place of t (exact when t holds zeros);
 *         dsrc = gather(g * out) / src where src != 0, and where src is
 *         the only zero sent to its place, gather(g * out'') with out''
 *         the product with that zero replaced by 1.
 * Without include_self, t gets no gradient at the places written. */
#include "backward.h"
#include "../core/grad_hooks.h"

#include <string.h>

typedef struct {
    int dim, kind;
    bool include_self;
} sr_args;

/* The leading index-shaped block of src (a view; src itself when they
 * match). */
static tm_tensor *src_block(tm__scratch *s, const tm_tensor *src,
                            const tm_tensor *index)
{
    if (s->st) return NULL;
    tm_tensor *v = tm_retain((tm_tensor *)src);
    for (int d = 0; v && d < index->ndim; d++) {
        if (v->shape[d] == index->shape[d]) continue;
        tm_tensor *w = tm_narrow(v, d, 0, index->shape[d]);
        tm_free(v);
        v = w;
    }
    return tm__sc_keep(s, v);
}

/* x along dim at index (kept). */
static tm_tensor *pick(tm__scratch *s, const tm_tensor *x, int d,
                       const tm_tensor *idx)
{
    return s->st ? NULL : tm__sc_keep(s, tm_gather(x, d, idx));
}

/* base + scatter add of v at index (kept). */
static tm_tensor *send(tm__scratch *s, const tm_tensor *base, int d,
                       const tm_tensor *idx, const tm_tensor *v)
{
    return s->st ? NULL : tm__sc_keep(s, tm_scatter_add(base, d, idx, v));
}

/* [a == b] in dtype dt (kept). */
static tm_tensor *same(tm__scratch *s, const tm_tensor *a, const tm_tensor *b,
                       tm_dtype dt)
{
    tm_tensor *m = tm__sc_binary(s, TM_OP_EQ, a, b);
    return s->st ? NULL : tm__sc_keep(s, tm_to_dtype(m, dt));
}

/* x with v where mask (kept). */
static tm_tensor *fill(tm__scratch *s, const tm_tensor *x,
                       const tm_tensor *mask, double v)
{
    return s->st ? NULL : tm__sc_keep(s, tm_masked_fill(x, mask, v));
}

static tm_status sr_backward(tm__node *n, const tm_tensor *g, tm_tensor **gi)
{
    const sr_args *p = TM__AG_ARGS(n, sr_args);
    const tm_tensor *idx = tm__ag_saved(n, 0), *t = tm__ag_saved(n, 1);
    const tm_tensor *src = tm__ag_saved(n, 2), *out = tm__ag_saved(n, 3);
    int d = p->dim;
    tm_dtype dt = g->dtype;
    tm__scratch s = {0};
    tm_tensor *sb = src_block(&s, src, idx);
    tm_tensor *dself = NULL, *dsrc = NULL; /* borrowed from s */
    switch (p->kind) {
    case TM_SCATTER_SUM:
        dself = (tm_tensor *)g;
        dsrc = pick(&s, g, d, idx);
        break;
    case TM_SCATTER_MEAN: {
        tm_tensor *cnt = s.st ? NULL : tm__sc_keep(&s, tm_full_like(
            g, p->include_self ? 1.0 : 0.0));
        tm_tensor *one = s.st ? NULL : tm__sc_keep(&s, tm_ones_like(sb));
        tm_tensor *one_t = s.st ? NULL : tm__sc_keep(&s, tm_to_dtype(one,
                                                                     dt));
        tm_tensor *c = send(&s, cnt, d, idx, one_t);
        tm_tensor *z = tm__sc_scalar(&s, TM_OP_EQ, c, 0.0);
        tm_tensor *nn = fill(&s, c, z, 1.0);
        dself = tm__sc_binary(&s, TM_OP_DIV, g, nn);
        dsrc = pick(&s, dself, d, idx);
        break;
    }
    case TM_SCATTER_AMAX:
    case TM_SCATTER_AMIN: {
        tm_tensor *val = pick(&s, out, d, idx);
        tm_tensor *self_is = same(&s, t, out, dt);
        tm_tensor *src_is = same(&s, sb, val, dt);
        tm_tensor *m = send(&s, self_is, d, idx, src_is);
        tm_tensor *gd = tm__sc_binary(&s, TM_OP_DIV, g, m);
        dself = tm__sc_binary(&s, TM_OP_MUL, self_is, gd);
        tm_tensor *gdp = pick(&s, gd, d, idx);
        dsrc = tm__sc_binary(&s, TM_OP_MUL, src_is, gdp);
        break;
    }
    case TM_SCATTER_PROD: {
        tm_tensor *tz = tm__sc_scalar(&s, TM_OP_EQ, t, 0.0);
        tm_tensor *tm1 = fill(&s, t, tz, 1.0);
        tm_tensor *r1 = s.st ? NULL : tm__sc_keep(&s, tm_scatter_reduce(
            tm1, d, idx, src, TM_SCATTER_PROD, p->include_self));
        tm_tensor *a = tm__sc_binary(&s, TM_OP_MUL, g, r1);
        dself = tm__sc_binary(&s, TM_OP_DIV, a, tm1);
        tm_tensor *sz = tm__sc_scalar(&s, TM_OP_EQ, sb, 0.0);
        tm_tensor *szf = s.st ? NULL : tm__sc_keep(&s, tm_to_dtype(sz, dt));
        tm_tensor *z0 = s.st ? NULL : tm__sc_keep(&s, tm_zeros_like(g));
        tm_tensor *nz = pick(&s, send(&s, z0, d, idx, szf), d, idx);
        tm_tensor *n1 = tm__sc_scalar(&s, TM_OP_EQ, nz, 1.0);
        tm_tensor *single = tm__sc_binary(&s, TM_OP_LOGICAL_AND, sz, n1);
        tm_tensor *ms = fill(&s, sb, single, 1.0);
        tm_tensor *r2 = s.st ? NULL : tm__sc_keep(&s, tm_scatter_reduce(
            t, d, idx, ms, TM_SCATTER_PROD, p->include_self));
        tm_tensor *g2 = pick(&s, tm__sc_binary(&s, TM_OP_MUL, g, r2), d,
                             idx);
        tm_tensor *g3 = pick(&s, tm__sc_binary(&s, TM_OP_MUL, g, out), d,
                             idx);
        tm_tensor *s1 = fill(&s, sb, sz, 1.0);
        tm_tensor *g4 = tm__sc_binary(&s, TM_OP_DIV, g3, s1);
        dsrc = tm__sc_where(&s, single, g2, g4);
        break;
    }
    default:
        tm__errf(TM_EINVAL, n->name, "bad reduce kind %d", p->kind);
        tm__sc_keep(&s, NULL);
    }
    if (!p->include_self && dself && !s.st)
        dself = tm__sc_keep(&s, tm_scatter_value(dself, d, idx, 0.0));
    if (n->edges[0].needed && !s.st)
        gi[0] = tm__grad_as(tm_retain(dself), n->edges[0].dtype);
    if (n->edges[1].needed && !s.st) {
        const tm__edge *e = &n->edges[1];
        if (dsrc->ndim == e->ndim &&
            !memcmp(dsrc->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim))
            gi[1] = tm__grad_as(tm_retain(dsrc), e->dtype);
        else
            gi[1] = tm__grad_place(dsrc, e->shape, e->ndim, e->dtype, NULL,
                                   NULL);
        if (!gi[1]) tm__sc_keep(&s, NULL);
    }
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_scatter_reduce(tm_tensor *out, const tm_tensor *t,
                                   int dim, const tm_tensor *index,
                                   const tm_tensor *src, int kind,
                                   bool include_self)
{
    static const char *const names[] = {
        "ScatterReduceSumBackward", "ScatterReduceProdBackward",
        "ScatterReduceMeanBackward", "ScatterReduceAmaxBackward",
        "ScatterReduceAminBackward"};
    sr_args p = {dim, kind, include_self};
    const tm_tensor *ins[2] = {t, src};
    tm__record r = {.name = names[kind], .backward = sr_backward, .nin = 2,
                    .in = ins, .save = {index, t, src, out}, .args = &p,
                    .args_size = sizeof p};
    return tm__ag_result(&r, out);
}
