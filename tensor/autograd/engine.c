/* engine.c — tm_backward: discovers the graph below an output, runs each
 * node once after all its consumers (iterative: no recursion anywhere, so
 * graphs of millions of nodes do not overflow the stack) and accumulates
 * gradients into leaves. */
#include "tape.h"

#include <string.h>

static atomic_uint_fast64_t tm__ag_generation;

/* -------------------------------------------------------------- helpers */

tm_tensor *tm__ag_sum_to(const tm_tensor *g, const int64_t *shape, int ndim)
{
    int lead = g->ndim - ndim;
    int dims[TM_MAX_DIMS], nd = 0;
    for (int i = 0; i < g->ndim; i++)
        if (i < lead || (shape[i - lead] == 1 && g->shape[i] != 1))
            dims[nd++] = i;
    bool same = lead == 0 && nd == 0;
    if (same) return tm_retain((tm_tensor *)g);
    tm_tensor *s = tm_sum(g, dims, nd, true);
    if (!s) return NULL;
    tm_tensor *r = tm_reshape(s, shape, ndim);
    tm_free(s);
    return r;
}

/* *acc += g without writing into g or into memory g may share.  With
 * `copy`, the first gradient is copied unless nothing else can see it (g
 * is the only reference to itself and to its storage): then it is kept as
 * it is, saving a full copy of every parameter's gradient per step. */
static tm_status tm__accumulate(tm_tensor **acc, tm_tensor *g, bool copy)
{
    if (!*acc) {
        bool alone = atomic_load(&g->refs) == 1 &&
                     atomic_load(&g->storage->refs) == 1;
        *acc = copy && !alone ? tm_clone(g) : tm_retain(g);
        return *acc ? TM_OK : tm_last_status();
    }
    tm_tensor *s = tm_add(*acc, g);
    if (!s) return tm_last_status();
    tm_free(*acc);
    *acc = s;
    return TM_OK;
}

/* --------------------------------------------------------------- engine */

typedef struct {
    tm__node **v;
    size_t n, cap;
} tm__nodelist;

static tm_status tm__push(tm__nodelist *l, tm__node *n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        tm__node **v = tm__alloc(cap * sizeof *v, "tm_backward");
        if (!v) return tm_last_status();
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        tm__dealloc(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = n;
    return TM_OK;
}

static tm_status tm__check_saved(const char *fn, const tm__node *n)
{
    for (int s = 0; s < TM__AG_MAX_SAVED; s++) {
        const tm_tensor *t = n->saved[s];
        if (!t) continue;
        uint64_t now = atomic_load(&t->storage->version);
        if (now != n->saved_version[s])
            return tm__errf(TM_ESTATE, fn,
                            "a tensor saved by %s for backward was modified "
                            "in place afterwards (version %llu, saved at "
                            "%llu)", n->name, (unsigned long long)now,
                            (unsigned long long)n->saved_version[s]);
    }
    return TM_OK;
}

/* Runs node n on its accumulated gradient and routes the results. */
static tm_status tm__run_node(const char *fn, tm__node *n, tm__nodelist *ready)
{
    tm_tensor *g = n->grad_acc;
    n->grad_acc = NULL;
    tm_tensor *local[16], **gin = local;
    tm_status st = TM_OK;
    if (n->nin > 16) {
        gin = tm__calloc(sizeof(tm_tensor *) * (size_t)n->nin, fn);
        if (!gin) {
            tm_free(g);
            return tm_last_status();
        }
    } else {
        memset(local, 0, sizeof local);
    }
    if (g) {
        st = tm__check_saved(fn, n);
        if (!st) {
            st = n->backward(n, g, gin);
            if (st) tm__relabel_error(fn, st);
        }
    }
    for (int i = 0; i < n->nin; i++) {
        tm__edge *e = &n->edges[i];
        tm_tensor *gi = gin[i];
        if (!st && gi && e->needed) {
            if (e->box->leaf || e->box->retain)
                st = tm__accumulate(&e->box->grad, gi, true);
            if (!st && e->node) st = tm__accumulate(&e->node->grad_acc, gi,
                                                    false);
        }
        tm_free(gi);
        if (e->node && e->needed && --e->node->deps == 0 && !st)
            st = tm__push(ready, e->node);
    }
    if (gin != local) tm__dealloc(gin);
    tm_free(g);
    return st;
}

static tm_status tm__backward(const char *fn, tm_tensor *out,
                              const tm_tensor *grad_out, bool retain)
{
    if (tm__check_tensor(fn, out, "tensor")) return tm_last_status();
    tm__meta *m = tm__meta_of(out);
    if (!m || !m->requires_grad)
        return tm__errf(TM_ESTATE, fn, "the tensor does not require grad "
                        "and has no grad_fn");
    tm_tensor *g0;
    if (grad_out) {
        if (grad_out->ndim != out->ndim ||
            memcmp(grad_out->shape, out->shape,
                   sizeof(int64_t) * (size_t)out->ndim)) {
            char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
            return tm__errf(TM_ESHAPE, fn, "gradient of shape %s for an "
                            "output of shape %s",
                            tm__fmt_shape(grad_out->shape, grad_out->ndim, a,
                                          sizeof a),
                            tm__fmt_shape(out->shape, out->ndim, b,
                                          sizeof b));
        }
        g0 = tm_to_dtype(grad_out, out->dtype);
    } else {
        if (tm_numel(out) != 1)
            return tm__errf(TM_ESHAPE, fn, "backward without a gradient "
                            "needs a one-element output, not %lld elements",
                            (long long)tm_numel(out));
        g0 = tm_ones_like(out);
    }
    if (!g0) return tm_last_status();
    bool prev = tm_no_grad_begin();
    tm_status st = TM_OK;
    if (!m->grad_fn) { /* a leaf: its gradient is the given one */
        st = tm__accumulate(&m->box->grad, g0, true);
        tm_free(g0);
        tm_no_grad_end(prev);
        return st;
    }
    /* Discover the graph (iterative DFS) and count each node's consumers. */
    uint64_t gen = atomic_fetch_add(&tm__ag_generation, 1) + 1;
    tm__nodelist seen = {0}, stack = {0}, ready = {0};
    tm__node *root = m->grad_fn;
    root->mark = gen;
    root->deps = 0;
    st = tm__push(&seen, root);
    if (!st) st = tm__push(&stack, root);
    while (!st && stack.n) {
        tm__node *n = stack.v[--stack.n];
        if (n->released) {
            st = tm__errf(TM_ESTATE, fn, "backward through %s a second "
                          "time: its saved tensors were released (pass "
                          "retain_graph to the first backward)", n->name);
            break;
        }
        for (int i = 0; i < n->nin && !st; i++) {
            tm__node *c = n->edges[i].needed ? n->edges[i].node : NULL;
            if (!c) continue;
            if (c->mark != gen) {
                c->mark = gen;
                c->deps = 0;
                tm_free(c->grad_acc);
                c->grad_acc = NULL;
                st = tm__push(&seen, c);
                if (!st) st = tm__push(&stack, c);
            }
            c->deps++;
        }
    }
    if (!st) {
        root->grad_acc = g0;
        g0 = NULL;
        st = tm__push(&ready, root);
    }
    while (!st && ready.n) st = tm__run_node(fn, ready.v[--ready.n], &ready);
    for (size_t i = 0; i < seen.n; i++) {
        tm_free(seen.v[i]->grad_acc);
        seen.v[i]->grad_acc = NULL;
        if (!st && !retain) {
            tm__node_release_saved(seen.v[i]);
            seen.v[i]->released = true;
        }
    }
    tm_free(g0);
    tm__dealloc(seen.v);
    tm__dealloc(stack.v);
    tm__dealloc(ready.v);
    tm_no_grad_end(prev);
    return st;
}

tm_status tm_backward(tm_tensor *loss)
{
    return tm__backward(__func__, loss, NULL, false);
}

tm_status tm_backward_ex(tm_tensor *out, const tm_tensor *grad_out,
                         bool retain_graph)
{
    return tm__backward(__func__, out, grad_out, retain_graph);
}
