/* view_backward.c — the gradients of the views of core/view.c (reshape
 * and its kin, transpose, permute, slice, select, expand, as_strided) and
 * their recording hooks.  Written with public ops (grad mode is off), so
 * they work on any device and dtype. */
#include "backward.h"
#include "../core/grad_hooks.h"

#include <string.h>

/* A view's node: one input, the view's parameters. */
static tm_tensor *view_record(tm_tensor *out, const tm_tensor *t,
                              const char *name, tm__backward_fn fn,
                              const void *args, size_t args_size)
{
    const tm_tensor *ins[1] = {t};
    tm__record r = {.name = name, .backward = fn, .nin = 1, .in = ins,
                    .args = args, .args_size = args_size};
    return tm__ag_result(&r, out);
}

/* ------------------------------------------------------------- reshape */

/* The gradient takes the input's shape back. */
static tm_status reshape_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gi)
{
    gi[0] = tm_reshape(g, n->edges[0].shape, n->edges[0].ndim);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_reshape(tm_tensor *out, const tm_tensor *t,
                            const char *name)
{
    return view_record(out, t, name, reshape_backward, NULL, 0);
}

/* ----------------------------------------------------------- transpose */

typedef struct { int dim0, dim1; } transpose_args;

static tm_status transpose_backward(tm__node *n, const tm_tensor *g,
                                    tm_tensor **gi)
{
    const transpose_args *p = TM__AG_ARGS(n, transpose_args);
    gi[0] = tm_transpose(g, p->dim0, p->dim1);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_transpose(tm_tensor *out, const tm_tensor *t, int dim0,
                              int dim1)
{
    transpose_args p = {dim0, dim1};
    return view_record(out, t, "TransposeBackward", transpose_backward, &p,
                       sizeof p);
}

/* ------------------------------------------------------------- permute */

typedef struct { int dims[TM_MAX_DIMS]; } permute_args;

/* The inverse permutation takes the gradient back. */
static tm_status permute_backward(tm__node *n, const tm_tensor *g,
                                  tm_tensor **gi)
{
    const permute_args *p = TM__AG_ARGS(n, permute_args);
    int inv[TM_MAX_DIMS];
    for (int k = 0; k < g->ndim; k++) inv[p->dims[k]] = k;
    gi[0] = tm_permute(g, inv, g->ndim);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_permute(tm_tensor *out, const tm_tensor *t,
                            const int *dims)
{
    permute_args p = {{0}};
    memcpy(p.dims, dims, sizeof(int) * (size_t)t->ndim);
    return view_record(out, t, "PermuteBackward", permute_backward, &p,
                       sizeof p);
}

/* ------------------------------------------------------- slice, select */

typedef struct { int dim; int64_t start, step; } slice_args;

static tm_status slice_backward(tm__node *n, const tm_tensor *g,
                                tm_tensor **gi)
{
    const slice_args *p = TM__AG_ARGS(n, slice_args);
    const tm__edge *e = &n->edges[0];
    int64_t start[TM_MAX_DIMS] = {0}, step[TM_MAX_DIMS];
    for (int k = 0; k < e->ndim; k++) step[k] = 1;
    start[p->dim] = p->start;
    step[p->dim] = p->step;
    gi[0] = tm__grad_place(g, e->shape, e->ndim, e->dtype, start, step);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_slice(tm_tensor *out, const tm_tensor *t,
                          const char *name, int dim, int64_t start,
                          int64_t step)
{
    slice_args p = {dim, start, step};
    return view_record(out, t, name, slice_backward, &p, sizeof p);
}

typedef struct { int dim; int64_t index; } select_args;

static tm_status select_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gi)
{
    const select_args *p = TM__AG_ARGS(n, select_args);
    const tm__edge *e = &n->edges[0];
    int64_t start[TM_MAX_DIMS] = {0};
    start[p->dim] = p->index;
    tm_tensor *u = tm_unsqueeze(g, p->dim);
    if (!u) return tm_last_status();
    gi[0] = tm__grad_place(u, e->shape, e->ndim, e->dtype, start, NULL);
    tm_free(u);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_select(tm_tensor *out, const tm_tensor *t, int dim,
                           int64_t index)
{
    select_args p = {dim, index};
    return view_record(out, t, "SelectBackward", select_backward, &p,
                       sizeof p);
}

/* -------------------------------------------------------------- expand */

static tm_status expand_backward(tm__node *n, const tm_tensor *g,
                                 tm_tensor **gi)
{
    gi[0] = tm__ag_sum_to(g, n->edges[0].shape, n->edges[0].ndim);
    return gi[0] ? TM_OK : tm_last_status();
}

tm_tensor *tm__grad_expand(tm_tensor *out, const tm_tensor *t)
{
    return view_record(out, t, "ExpandBackward", expand_backward, NULL, 0);
}

/* ---------------------------------------------------------- as_strided */

/* The two geometries over the storage: the view's and its input's. */
typedef struct {
    int64_t out_offset, out_strides[TM_MAX_DIMS];
    int64_t in_offset, in_strides[TM_MAX_DIMS];
} as_strided_args;

/* Storage positions of the elements of (off, shape, st) in row-major
 * order (index arithmetic on the geometry, not element data). */
static void positions(int64_t *p, int64_t off, const int64_t *shape,
                      const int64_t *st, int nd, int64_t count)
{
    int64_t idx[TM_MAX_DIMS] = {0}, pos = off;
    for (int64_t k = 0; k < count; k++) {
        p[k] = pos;
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) {
                pos += st[d];
                break;
            }
            pos -= (shape[d] - 1) * st[d];
            idx[d] = 0;
        }
    }
}

/* False when two elements of (shape, st) may share a position (a cheap
 * sufficient test: sorted by stride, each stride exceeds the span of the
 * smaller ones). */
static bool no_overlap(const int64_t *shape, const int64_t *st, int nd)
{
    int ord[TM_MAX_DIMS], m = 0;
    for (int i = 0; i < nd; i++)
        if (shape[i] > 1) ord[m++] = i;
    for (int i = 1; i < m; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && st[ord[j]] < st[ord[j - 1]]; j--) {
            int x = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = x;
        }
    int64_t span = 0;
    for (int i = 0; i < m; i++) {
        if (st[ord[i]] <= span) return false;
        span += (shape[ord[i]] - 1) * st[ord[i]];
    }
    return true;
}

/* The gradient reaches storage positions: it is scatter-added (overlaps
 * accumulate) into a zero buffer spanning both geometries, and the input
 * reads its elements back; an input whose elements share positions splits
 * each position's gradient evenly among them (as PyTorch does). */
static tm_status as_strided_backward(tm__node *n, const tm_tensor *g,
                                     tm_tensor **gi)
{
    const as_strided_args *p = TM__AG_ARGS(n, as_strided_args);
    const tm__edge *e = &n->edges[0];
    int64_t nout = tm_numel(g), nin = 1;
    for (int k = 0; k < e->ndim; k++) nin *= e->shape[k];
    if (nin == 0 || nout == 0) {
        gi[0] = tm__grad_zeros(e->shape, e->ndim, e->dtype, g);
        return gi[0] ? TM_OK : tm_last_status();
    }
    /* Positions come from the geometry alone: computed on the host and
     * uploaded (no element of g is read here). */
    tm__scratch s = {0};
    int64_t *a = tm__alloc(sizeof(int64_t) * (size_t)nout, n->name);
    int64_t *b = a ? tm__alloc(sizeof(int64_t) * (size_t)nin, n->name) : NULL;
    if (!b) {
        tm__dealloc(a);
        return tm_last_status();
    }
    positions(a, p->out_offset, g->shape, p->out_strides, g->ndim, nout);
    positions(b, p->in_offset, e->shape, p->in_strides, e->ndim, nin);
    int64_t lo = a[0], hi = a[0];
    for (int64_t k = 0; k < nout; k++) {
        lo = a[k] < lo ? a[k] : lo;
        hi = a[k] > hi ? a[k] : hi;
    }
    for (int64_t k = 0; k < nin; k++) {
        lo = b[k] < lo ? b[k] : lo;
        hi = b[k] > hi ? b[k] : hi;
    }
    for (int64_t k = 0; k < nout; k++) a[k] -= lo;
    for (int64_t k = 0; k < nin; k++) b[k] -= lo;
    int64_t ext = hi - lo + 1;
    tm_tensor *po = tm__sc_keep(&s, tm_from_buffer(a, &nout, 1, TM_I64));
    tm_tensor *pi = tm__sc_keep(&s, tm_from_buffer(b, &nin, 1, TM_I64));
    tm__dealloc(a);
    tm__dealloc(b);
    tm_tensor *pod = tm__sc_keep(&s, tm_to(po, tm_device_of(g)));
    tm_tensor *pid = tm__sc_keep(&s, tm_to(pi, tm_device_of(g)));
    tm_tensor *acc = tm__sc_keep(&s, tm__grad_zeros(&ext, 1, g->dtype, g));
    tm_tensor *gf = tm__sc_keep(&s, tm_reshape(g, &nout, 1));
    tm_tensor *sum = tm__sc_keep(&s, tm_scatter_add(acc, 0, pod, gf));
    tm_tensor *r = tm__sc_keep(&s, tm_gather(sum, 0, pid));
    if (!s.st && !no_overlap(e->shape, p->in_strides, e->ndim)) {
        tm_tensor *z = tm__sc_keep(&s, tm__grad_zeros(&ext, 1, g->dtype, g));
        tm_tensor *ones = tm__sc_keep(
            &s, tm_full_on(&nin, 1, 1.0, g->dtype, tm_device_of(g)));
        tm_tensor *cnt = tm__sc_keep(&s, tm_scatter_add(z, 0, pid, ones));
        tm_tensor *c = tm__sc_keep(&s, tm_gather(cnt, 0, pid));
        r = tm__sc_binary(&s, TM_OP_DIV, r, c);
    }
    if (!s.st) gi[0] = tm__sc_keep(&s, tm_reshape(r, e->shape, e->ndim));
    if (gi[0]) tm_retain(gi[0]);
    return tm__sc_done(&s, n->name);
}

tm_tensor *tm__grad_as_strided(tm_tensor *out, const tm_tensor *t)
{
    if (!out) return NULL;
    as_strided_args p = {out->offset, {0}, t->offset, {0}};
    memcpy(p.out_strides, out->strides, sizeof(int64_t) * (size_t)out->ndim);
    memcpy(p.in_strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return view_record(out, t, "AsStridedBackward", as_strided_backward, &p,
                       sizeof p);
}
