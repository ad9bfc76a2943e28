/* autograd.c — grad mode, per-tensor autograd state, node recording and
 * the backward engine (iterative: no recursion anywhere, so graphs of
 * millions of nodes neither overflow the stack when run nor when freed). */
#include "autograd_impl.h"

#include <string.h>

struct tm__gradbox {
    atomic_long refs;
    tm_tensor *grad;
    bool leaf;   /* accumulate here (a leaf that requires grad) */
    bool retain; /* keep here (tm_retain_grad on a non-leaf) */
};

/* What t->autograd points to. */
typedef struct tm__meta {
    bool requires_grad;
    tm__node *grad_fn; /* NULL for leaves */
    tm__gradbox *box;  /* set whenever requires_grad */
} tm__meta;

static _Thread_local int tm__grad_off;
static atomic_uint_fast64_t tm__ag_generation;

bool tm_grad_enabled(void) { return tm__grad_off == 0; }
void tm_set_grad_enabled(bool on) { tm__grad_off = on ? 0 : 1; }

bool tm_no_grad_begin(void)
{
    bool prev = tm_grad_enabled();
    tm_set_grad_enabled(false);
    return prev;
}

void tm_no_grad_end(bool prev) { tm_set_grad_enabled(prev); }

static tm__meta *tm__meta_of(const tm_tensor *t)
{
    return t ? (tm__meta *)t->autograd : NULL;
}

bool tm_requires_grad(const tm_tensor *t)
{
    tm__meta *m = tm__meta_of(t);
    return m && m->requires_grad;
}

/* ------------------------------------------------------ boxes and nodes */

static tm__gradbox *tm__box_new(const char *fn, bool leaf)
{
    tm__gradbox *b = tm__calloc(sizeof *b, fn);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->leaf = leaf;
    return b;
}

static void tm__box_free(tm__gradbox *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
    tm_free(b->grad);
    tm__dealloc(b);
}

static void tm__node_release_saved(tm__node *n)
{
    for (int s = 0; s < TM__AG_MAX_SAVED; s++) {
        tm_free(n->saved[s]);
        n->saved[s] = NULL;
    }
}

/* Dropping the last reference to the head of a long chain frees the whole
 * chain: walk it with a list threaded through the dying nodes themselves
 * (their grad_acc field, unused by then) instead of recursing. */
void tm__ag_node_free(tm__node *n)
{
    tm__node *dying = NULL;
    if (n && atomic_fetch_sub(&n->refs, 1) == 1) {
        n->grad_acc = NULL;
        dying = n;
    }
    while (dying) {
        tm__node *d = dying;
        dying = (tm__node *)(void *)d->grad_acc;
        for (int i = 0; i < d->nin; i++) {
            tm__node *next = d->edges[i].node;
            tm__box_free(d->edges[i].box);
            if (next && atomic_fetch_sub(&next->refs, 1) == 1) {
                tm_free(next->grad_acc); /* nothing pending in a dead node */
                next->grad_acc = (tm_tensor *)(void *)dying;
                dying = next;
            }
        }
        tm__node_release_saved(d);
        tm__dealloc(d);
    }
}

void tm__ag_meta_free(tm_tensor *t)
{
    tm__meta *m = tm__meta_of(t);
    if (!m) return;
    tm__ag_node_free(m->grad_fn);
    tm__box_free(m->box);
    tm__dealloc(m);
    t->autograd = NULL;
}

bool tm__ag_needed(int n, const tm_tensor *const *inputs)
{
    if (!tm_grad_enabled()) return false;
    for (int i = 0; i < n; i++)
        if (tm_requires_grad(inputs[i])) return true;
    return false;
}

tm__node *tm__ag_node(const char *name, tm__backward_fn fn, int n,
                      const tm_tensor *const *inputs)
{
    tm__node *node = tm__calloc(sizeof *node + (size_t)n * sizeof(tm__edge),
                                name);
    if (!node) return NULL;
    atomic_init(&node->refs, 1);
    node->name = name;
    node->backward = fn;
    node->nin = n;
    for (int i = 0; i < n; i++) {
        tm__edge *e = &node->edges[i];
        const tm_tensor *t = inputs[i];
        if (!t) continue;
        e->dtype = t->dtype;
        e->ndim = t->ndim;
        memcpy(e->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        tm__meta *m = tm__meta_of(t);
        if (!m || !m->requires_grad) continue;
        e->needed = true;
        e->node = m->grad_fn;
        if (e->node) atomic_fetch_add(&e->node->refs, 1);
        e->box = m->box;
        atomic_fetch_add(&e->box->refs, 1);
    }
    return node;
}

tm_status tm__ag_save(tm__node *n, int slot, const tm_tensor *t)
{
    TM_ASSERT(slot >= 0 && slot < TM__AG_MAX_SAVED && !n->saved[slot],
              TM_ESTATE);
    tm_tensor *alias = tm__view_of(n->name, t, t->shape, t->strides, t->ndim,
                                   t->offset);
    if (!alias) return tm_last_status();
    n->saved[slot] = alias;
    n->saved_version[slot] = atomic_load(&t->storage->version);
    return TM_OK;
}

tm_status tm__ag_attach(tm__node *n, tm_tensor *out)
{
    TM_ASSERT(!out->autograd, (tm__ag_node_free(n), TM_ESTATE));
    tm__meta *m = tm__calloc(sizeof *m, n->name);
    tm__gradbox *b = m ? tm__box_new(n->name, false) : NULL;
    if (!b) {
        tm__dealloc(m);
        tm__ag_node_free(n);
        return tm_last_status();
    }
    m->requires_grad = true;
    m->grad_fn = n;
    m->box = b;
    out->autograd = m;
    return TM_OK;
}

/* ---------------------------------------------------------- public state */

tm_status tm_requires_grad_(tm_tensor *t, bool on)
{
    if (tm__check_tensor(__func__, t, "tensor")) return tm_last_status();
    tm__meta *m = tm__meta_of(t);
    if (m && m->grad_fn)
        return TM_ERR(TM_ESTATE, "only leaf tensors can change requires_grad "
                      "(this one comes from %s); use tm_detach",
                      m->grad_fn->name);
    if (on && !tm_dtype_is_float(t->dtype))
        return TM_ERR(TM_EDTYPE, "only float tensors can require grad, not "
                      "%s", tm_dtype_name(t->dtype));
    if (!on) {
        if (m) m->requires_grad = false;
        return TM_OK;
    }
    if (!m) {
        m = tm__calloc(sizeof *m, __func__);
        if (!m) return tm_last_status();
        m->box = tm__box_new(__func__, true);
        if (!m->box) {
            tm__dealloc(m);
            return tm_last_status();
        }
        t->autograd = m;
    }
    m->requires_grad = true;
    return TM_OK;
}

bool tm_is_leaf(const tm_tensor *t)
{
    tm__meta *m = tm__meta_of(t);
    return !m || !m->grad_fn;
}

const char *tm_grad_fn_name(const tm_tensor *t)
{
    tm__meta *m = tm__meta_of(t);
    return m && m->grad_fn ? m->grad_fn->name : NULL;
}

tm_tensor *tm_grad(const tm_tensor *t)
{
    tm__meta *m = tm__meta_of(t);
    return m && m->box ? m->box->grad : NULL;
}

void tm_zero_grad(tm_tensor *t)
{
    tm__meta *m = tm__meta_of(t);
    if (m && m->box) {
        tm_free(m->box->grad);
        m->box->grad = NULL;
    }
}

tm_status tm_set_grad(tm_tensor *t, tm_tensor *grad)
{
    if (tm__check_tensor(__func__, t, "tensor")) return tm_last_status();
    tm__meta *m = tm__meta_of(t);
    if (!grad) {
        tm_zero_grad(t);
        return TM_OK;
    }
    if (!m || !m->box)
        return TM_ERR(TM_ESTATE, "the tensor does not require grad");
    if (grad->dtype != t->dtype || grad->ndim != t->ndim ||
        memcmp(grad->shape, t->shape, (size_t)t->ndim * sizeof *t->shape)) {
        char a[64], b[64];
        return TM_ERR(TM_ESHAPE, "grad %s does not match the tensor's %s",
                      tm_describe(grad, a, sizeof a),
                      tm_describe(t, b, sizeof b));
    }
    if (grad->storage->device != t->storage->device)
        return TM_ERR(TM_EDEVICE, "grad is on %s, the tensor on %s",
                      tm_device_name(grad->storage->device),
                      tm_device_name(t->storage->device));
    tm_retain(grad);
    tm_free(m->box->grad);
    m->box->grad = grad;
    return TM_OK;
}

tm_status tm_retain_grad(tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return tm_last_status();
    tm__meta *m = tm__meta_of(t);
    if (!m || !m->requires_grad)
        return TM_ERR(TM_ESTATE, "the tensor does not require grad");
    m->box->retain = true;
    return TM_OK;
}

tm_tensor *tm_detach(const tm_tensor *t)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    return tm__view_of(__func__, t, t->shape, t->strides, t->ndim, t->offset);
}

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

bool tm__ag_requires(const tm_tensor *t)
{
    return tm_grad_enabled() && tm_requires_grad(t);
}
