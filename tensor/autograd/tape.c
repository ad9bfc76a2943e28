/* tape.c — grad mode, per-tensor autograd state (requires_grad, .grad,
 * retain_grad, detach) and recording: the nodes ops attach to their
 * outputs (the "tape" the engine in engine.c runs backward). */
#include "tape.h"

#include <stddef.h>
#include <string.h>

static _Thread_local int tm__grad_off;

bool tm_grad_enabled(void) { return tm__grad_off == 0; }
void tm_set_grad_enabled(bool on) { tm__grad_off = on ? 0 : 1; }

bool tm_no_grad_begin(void)
{
    bool prev = tm_grad_enabled();
    tm_set_grad_enabled(false);
    return prev;
}

void tm_no_grad_end(bool prev) { tm_set_grad_enabled(prev); }

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

void tm__node_release_saved(tm__node *n)
{
    for (int s = 0; s < TM__AG_MAX_SAVED; s++) {
        tm_free(n->saved[s]);
        n->saved[s] = NULL;
    }
}

/* Dropping the last reference to the head of a long chain frees the whole
 * chain: walk it with a list threaded through the dying nodes themselves
 * (their grad_acc field, unused by then) instead of recursing. */
static void tm__ag_node_free(tm__node *n)
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

bool tm__ag_requires(const tm_tensor *t)
{
    return tm_grad_enabled() && tm_requires_grad(t);
}

bool tm__ag_needed(int n, const tm_tensor *const *inputs)
{
    if (!tm_grad_enabled()) return false;
    for (int i = 0; i < n; i++)
        if (tm_requires_grad(inputs[i])) return true;
    return false;
}

/* Offset of a node's parameter copy: after its edges, aligned for any
 * parameter struct. */
static size_t tm__args_offset(int nin)
{
    size_t a = _Alignof(max_align_t);
    size_t off = sizeof(tm__node) + (size_t)nin * sizeof(tm__edge);
    return (off + a - 1) / a * a;
}

/* A node with edges to the inputs (NULL entries: no edge) and a copy of
 * the op's parameters.  New reference; NULL with TM_ENOMEM set. */
static tm__node *tm__node_new(const tm__record *r)
{
    size_t off = tm__args_offset(r->nin);
    tm__node *node = tm__calloc(off + r->args_size, r->name);
    if (!node) return NULL;
    atomic_init(&node->refs, 1);
    node->name = r->name;
    node->backward = r->backward;
    node->nin = r->nin;
    if (r->args_size) {
        memcpy((char *)node + off, r->args, r->args_size);
        node->args = (char *)node + off;
    }
    for (int i = 0; i < r->nin; i++) {
        tm__edge *e = &node->edges[i];
        const tm_tensor *t = r->in[i];
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

/* Saves an alias of t in the node's slot. */
static tm_status tm__node_save(tm__node *n, int slot, const tm_tensor *t)
{
    tm_tensor *alias = tm__view_of(n->name, t, t->shape, t->strides, t->ndim,
                                   t->offset);
    if (!alias) return tm_last_status();
    n->saved[slot] = alias;
    n->saved_version[slot] = atomic_load(&t->storage->version);
    return TM_OK;
}

tm_status tm__ag_record(const tm__record *r, tm_tensor *out)
{
    if (!tm_dtype_is_float(out->dtype) || !tm__ag_needed(r->nin, r->in))
        return TM_OK;
    if (out->autograd)
        return TM_ERR(TM_ESTATE, "internal error: %s recorded twice for one "
                      "output", r->name);
    tm__node *n = tm__node_new(r);
    if (!n) return tm_last_status();
    for (int s = 0; s < TM__AG_MAX_SAVED; s++)
        if (r->save[s] && tm__node_save(n, s, r->save[s])) goto fail;
    tm__meta *m = tm__calloc(sizeof *m, r->name);
    tm__gradbox *b = m ? tm__box_new(r->name, false) : NULL;
    if (!b) {
        tm__dealloc(m);
        goto fail;
    }
    m->requires_grad = true;
    m->grad_fn = n;
    m->box = b;
    out->autograd = m;
    return TM_OK;
fail:
    tm__ag_node_free(n);
    return tm_last_status();
}

tm_tensor *tm__ag_result(const tm__record *r, tm_tensor *out)
{
    if (out && tm__ag_record(r, out)) {
        tm_free(out);
        return NULL;
    }
    return out;
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
    if (on && tm_dtype_is_quantized(t->dtype))
        return TM_ERR(TM_EDTYPE, "a %s tensor is a frozen quantized weight "
                      "and cannot require grad (its input's gradient still "
                      "flows through tm_linear / tm_matmul)",
                      tm_dtype_name(t->dtype));
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
    if (!tm_device_eq(tm_device_of(grad), tm_device_of(t)))
        return TM_ERR(TM_EDEVICE, "grad is on %s, the tensor on %s",
                      tm_device_name(tm_device_of(grad)),
                      tm_device_name(tm_device_of(t)));
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

