/*
 * grad_scratch.h — temporaries of a backward function (internal).
 *
 * A backward function builds its gradients from many intermediate tensors.
 * tm__gs_keep() records each one (a NULL result remembers the FIRST error,
 * so later calls that receive NULL arguments cannot overwrite it), and
 * tm__gs_done() frees them all and re-raises that first error:
 *
 *   tm__gs s = {0};
 *   tm_tensor *y = tm__gs_keep(&s, tm_mul(a, b));
 *   tm_tensor *r = tm__gs_keep(&s, tm_sum(y, NULL, 0, false));
 *   if (!s.st) grad_in[0] = tm_retain(r);
 *   return tm__gs_done(&s, n->name);
 */
#ifndef FOUNDRY_GRAD_SCRATCH_H
#define FOUNDRY_GRAD_SCRATCH_H

#include "../core/tensor_impl.h"

#include <stdio.h>

#define TM__GS_MAX 40

typedef struct tm__gs {
    tm_tensor *t[TM__GS_MAX];
    int n;
    tm_status st;
    char msg[256];
} tm__gs;

static inline tm_tensor *tm__gs_keep(tm__gs *s, tm_tensor *t)
{
    if (t && s->n < TM__GS_MAX) {
        s->t[s->n++] = t;
        return t;
    }
    if (t) { /* out of slots: a bug in the caller */
        tm_free(t);
        tm__errf(TM_ESTATE, "tm__gs_keep", "internal error: too many "
                 "temporaries");
    }
    if (!s->st) {
        s->st = tm_last_status() ? tm_last_status() : TM_ESTATE;
        snprintf(s->msg, sizeof s->msg, "%s", tm_last_error());
    }
    return NULL;
}

/* Frees the temporaries; the first error (relabelled as coming from fn)
 * or TM_OK. */
static inline tm_status tm__gs_done(tm__gs *s, const char *fn)
{
    for (int i = 0; i < s->n; i++) tm_free(s->t[i]);
    s->n = 0;
    if (s->st) return tm__errf(s->st, fn, "%s", s->msg);
    return TM_OK;
}

/* t converted to dtype dt (a new reference; t itself when it has it). */
static inline tm_tensor *tm__gs_as(const tm_tensor *t, tm_dtype dt)
{
    if (!t) return NULL;
    return tm_dtype_of(t) == dt ? tm_retain((tm_tensor *)t)
                                : tm_to_dtype(t, dt);
}

#endif
