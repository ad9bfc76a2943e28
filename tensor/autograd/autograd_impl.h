/*
 * autograd_impl.h — the tape: how an op records itself for backward
 * (internal).
 *
 * An op that supports gradients computes its output, then records one node
 * with tm__ag_record:
 *
 *   typedef struct { int dim; bool log; } softmax_args;  // beside the rule
 *
 *   softmax_args a = {d, log};
 *   const tm_tensor *ins[1] = {t};
 *   tm__record r = {.name = "SoftmaxBackward", .backward = softmax_backward,
 *                   .nin = 1, .in = ins, .save = {out},
 *                   .args = &a, .args_size = sizeof a};
 *   if (tm__ag_record(&r, out)) { tm_free(out); return NULL; }
 *
 * The backward function receives the gradient of `out` (out's shape and
 * dtype) and returns, for each input i with n->edges[i].needed, a new
 * reference in grad_in[i] with exactly that input's shape (use
 * tm__ag_sum_to for broadcast inputs) — or NULL for "zero".  It reads its
 * parameters as the struct the op recorded (TM__AG_ARGS(n, softmax_args))
 * and its saved tensors with tm__ag_saved.  It runs with grad mode off.
 * Saved tensors are aliases (same storage, no graph), so a node never keeps
 * its own output's graph alive.
 */
#ifndef FOUNDRY_AUTOGRAD_IMPL_H
#define FOUNDRY_AUTOGRAD_IMPL_H

#include "../core/tensor_impl.h"

#define TM__AG_MAX_SAVED 6

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
    /* The op's parameters: a copy of the struct it recorded (NULL if it
     * recorded none), in the same allocation as the node. */
    const void *args;
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

/* What an op records for one output. */
typedef struct tm__record {
    const char *name;         /* the node's name (tm_grad_fn_name) */
    tm__backward_fn backward;
    int nin;                  /* inputs that get edges; NULL entries get */
    const tm_tensor *const *in; /* none (a mask, an index) */
    const tm_tensor *save[TM__AG_MAX_SAVED]; /* kept for backward (NULL:
                                                nothing in that slot) */
    const void *args;         /* the op's parameter struct, copied */
    size_t args_size;
} tm__record;

/* True when grad mode is on and some input requires grad. */
bool tm__ag_needed(int n, const tm_tensor *const *inputs);
/* Records r for `out` when grad mode is on, out has a float dtype and
 * some input requires grad; otherwise does nothing.  TM_OK, or an error
 * (TM_ENOMEM) with out unchanged: the caller frees out. */
tm_status tm__ag_record(const tm__record *r, tm_tensor *out);

/* tm__ag_record for a recording hook (core/grad_hooks.h): returns out, or
 * NULL with out freed on failure; a NULL out passes through. */
tm_tensor *tm__ag_result(const tm__record *r, tm_tensor *out);

/* The node's parameters as the struct T its op recorded (borrowed). */
#define TM__AG_ARGS(n, T) ((const T *)(n)->args)
/* The saved tensor in slot (borrowed; NULL when nothing was saved). */
static inline const tm_tensor *tm__ag_saved(const tm__node *n, int slot)
{
    return n->saved[slot];
}
/* g summed over broadcast dims down to shape[ndim] (a new reference; g
 * itself, retained, when the shapes already match). */
tm_tensor *tm__ag_sum_to(const tm_tensor *g, const int64_t *shape, int ndim);

#endif
