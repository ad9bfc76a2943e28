/*
 * tape.h — the per-tensor autograd state shared by the tape (tape.c:
 * recording, requires_grad, .grad) and the engine (engine.c: backward).
 * Private to tensor/autograd/.
 */
#ifndef FOUNDRY_TAPE_H
#define FOUNDRY_TAPE_H

#include "autograd_impl.h"

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

/* The autograd state of t (NULL when it has none). */
static inline tm__meta *tm__meta_of(const tm_tensor *t)
{
    return t ? (tm__meta *)t->autograd : NULL;
}

/* Drops n's saved tensors (after a backward that does not retain). */
void tm__node_release_saved(tm__node *n);

#endif
