/*
 * foundry/autograd.h — reverse-mode automatic differentiation.
 *
 * When grad mode is on (the default, per thread) and an op's input requires
 * grad, the op's result records a node: its backward function, edges to its
 * inputs' nodes, and whatever it saved from the forward pass.
 * tm_backward(loss) then walks the recorded graph once, in reverse
 * topological order computed without recursion (graphs may be millions of
 * nodes deep), and accumulates gradients into the leaves (tm_grad).
 *
 *   tm_tensor *w = tm_randn((int64_t[]){3}, 1, TM_F32);
 *   tm_requires_grad_(w, true);                      // a leaf parameter
 *   tm_tensor *y = tm_mul(w, w), *l = tm_sum(y, NULL, 0, false);
 *   tm_backward(l);                                  // tm_grad(w) == 2 w
 *
 * Rules
 * - Only float tensors can require grad; integer/bool inputs never get one.
 * - Broadcast inputs receive gradients summed back to their own shape.
 * - Intermediate gradients are freed as soon as they are consumed, and the
 *   graph's saved tensors are released after backward unless retain_graph
 *   is set; a second backward through a released graph is an error.
 * - A tensor saved for backward that is modified in place afterwards makes
 *   backward fail (TM_ESTATE, naming the node) — never a silent wrong
 *   gradient.  Detection uses the storage's version counter.
 * - In-place ops on a tensor that requires grad are refused while grad
 *   mode is on (use tm_set_grad_enabled(false) for parameter updates), and
 *   so are in-place ops that read one (tm_copy_, tm_binary_ and its named
 *   forms, tm_scatter_, tm_scatter_add_: TM_EUNSUPPORTED), since in-place
 *   ops record nothing and its gradient would be lost.
 * - Gradients computed by backward are not themselves recorded.
 */
#ifndef FOUNDRY_AUTOGRAD_H
#define FOUNDRY_AUTOGRAD_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Grad mode of the calling thread (default on). */
bool tm_grad_enabled(void);
void tm_set_grad_enabled(bool on);
/* The usual no-grad scope:  bool prev = tm_no_grad_begin(); ...;
 * tm_no_grad_end(prev); */
bool tm_no_grad_begin(void);
void tm_no_grad_end(bool prev);

/* Marks a leaf tensor as requiring (or not) grad.  TM_EDTYPE for
 * non-float tensors; TM_ESTATE for a non-leaf (use tm_detach). */
tm_status tm_requires_grad_(tm_tensor *t, bool on);
bool tm_requires_grad(const tm_tensor *t);
/* True for tensors not produced by a recorded op. */
bool tm_is_leaf(const tm_tensor *t);
/* Name of the node that produced t ("MulBackward"), or NULL for leaves. */
const char *tm_grad_fn_name(const tm_tensor *t);
/* The accumulated gradient (borrowed; NULL if none yet). */
tm_tensor *tm_grad(const tm_tensor *t);
/* Drops the accumulated gradient (the next backward starts from zero). */
void tm_zero_grad(tm_tensor *t);
/* Replaces the accumulated gradient with `grad` (which gains a
 * reference; NULL drops it, as tm_zero_grad).  grad must have t's shape,
 * dtype and device; t must require grad (TM_ESTATE otherwise).  Later
 * backward passes add to it out of place (grad itself is never written). */
tm_status tm_set_grad(tm_tensor *t, tm_tensor *grad);
/* Keeps the gradient of a non-leaf tensor after backward (tm_grad). */
tm_status tm_retain_grad(tm_tensor *t);
/* A new tensor sharing t's storage, cut from the graph (a leaf that does
 * not require grad).  New reference. */
tm_tensor *tm_detach(const tm_tensor *t);

/* Backpropagates from a one-element tensor (gradient 1). */
tm_status tm_backward(tm_tensor *loss);
/* From any tensor with an explicit output gradient (its shape; NULL means
 * ones for a one-element output).  retain_graph keeps the graph's saved
 * tensors so backward can run through it again. */
tm_status tm_backward_ex(tm_tensor *out, const tm_tensor *grad_out,
                         bool retain_graph);

#ifdef __cplusplus
}
#endif
#endif
