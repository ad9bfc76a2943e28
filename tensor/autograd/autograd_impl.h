/*
 * autograd_impl.h — how ops record themselves for backward (internal).
 *
 * An op that supports gradients does, after computing `out`:
 *
 *   const tm_tensor *ins[2] = {a, b};
 *   if (tm__ag_needed(2, ins)) {
 *       tm__node *n = tm__ag_node("MulBackward", mul_backward, 2, ins);
 *       if (n && (tm__ag_save(n, 0, a) || tm__ag_save(n, 1, b))) {
 *           tm__ag_node_free(n);           // a failed save leaves n to us
 *           n = NULL;
 *       }
 *       if (!n || tm__ag_attach(n, out)) { // attach consumes n, even on error
 *           ... free out, return NULL (the error is set) ...
 *       }
 *   }
 *
 * The backward function receives the gradient of `out` (out's shape and
 * dtype) and returns, for each input i with n->edges[i].needed, a new
 * reference in grad_in[i] with exactly that input's shape (use
 * tm__ag_sum_to for broadcast inputs) — or NULL for "zero".  It runs with
 * grad mode off.  Saved tensors are aliases (same storage, no graph), so a
 * node never keeps its own output's graph alive.
 */
#ifndef FOUNDRY_AUTOGRAD_IMPL_H
#define FOUNDRY_AUTOGRAD_IMPL_H

#include "../core/tensor_impl.h"

#define TM__AG_MAX_SAVED 4

typedef struct tm__node tm__node;
typedef struct tm__gradbox tm__gradbox;

typedef tm_status (*tm__backward_fn)(tm__node *n, const tm_tensor *grad,
                                     tm_tensor **grad_in);

/* Where the gradient of one input goes. */
typedef struct tm__edge {
    tm__node *node;     /* the input's grad_fn (NULL for a leaf) */
    tm__gradbox *box;   /* the input's gradient holder (leaf/retain_grad) */
    bool needed;        /* the input requires grad */
    tm_dtype dtype;     /* the input's dtype and shape, for sum-to-shape */
    int ndim;
    int64_t shape[TM_MAX_DIMS];
} tm__edge;

struct tm__node {
    atomic_long refs;
    const char *name;
    tm__backward_fn backward;
    /* op parameters for the backward function */
    double d[4];
    int64_t i[TM_MAX_DIMS + 4];
    /* saved tensors (aliases) and the storage version when saved */
    tm_tensor *saved[TM__AG_MAX_SAVED];
    uint64_t saved_version[TM__AG_MAX_SAVED];
    bool released; /* saved tensors dropped after backward */
    /* engine scratch */
    uint64_t mark;
    int64_t deps;
    tm_tensor *grad_acc;
    int nin;
    tm__edge edges[]; /* nin entries */
};

/* True when grad mode is on and some input requires grad. */
bool tm__ag_needed(int n, const tm_tensor *const *inputs);
/* A node with edges to the inputs (NULL entries allowed: no edge).  New
 * reference; NULL with TM_ENOMEM set. */
tm__node *tm__ag_node(const char *name, tm__backward_fn fn, int n,
                      const tm_tensor *const *inputs);
/* Saves an alias of t in slot (0 .. TM__AG_MAX_SAVED-1). */
tm_status tm__ag_save(tm__node *n, int slot, const tm_tensor *t);
/* Makes `out` a non-leaf produced by n (requires grad).  Consumes the
 * caller's reference to n, also on failure. */
tm_status tm__ag_attach(tm__node *n, tm_tensor *out);
/* Drops a node reference (NULL is fine). */
void tm__ag_node_free(tm__node *n);
/* True when grad mode is on and t requires grad (in-place writes into
 * such a tensor are refused). */
bool tm__ag_requires(const tm_tensor *t);
/* Releases t's autograd state (called by tm_free). */
void tm__ag_meta_free(tm_tensor *t);

/* g summed over broadcast dims down to shape[ndim] (a new reference; g
 * itself, retained, when the shapes already match). */
tm_tensor *tm__ag_sum_to(const tm_tensor *g, const int64_t *shape, int ndim);
/* The saved tensor in slot (borrowed). */
static inline const tm_tensor *tm__ag_saved(const tm__node *n, int slot)
{
    return n->saved[slot];
}

#endif
