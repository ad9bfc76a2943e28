/*
 * compose_impl.h — helpers for op front ends built from other public ops
 * (flip, roll, diag, nonzero, einsum, ...): they run on every device that
 * runs the ops they use, and record autograd through them.  Internal.
 */
#ifndef FOUNDRY_COMPOSE_IMPL_H
#define FOUNDRY_COMPOSE_IMPL_H

#include "../core/tensor_impl.h"

/* An I64 tensor [n] holding v[0..n), on `like`'s device.  New reference
 * or NULL. */
static inline tm_tensor *tm__index_like(const int64_t *v, int64_t n,
                                        const tm_tensor *like)
{
    int64_t dummy = 0;
    tm_tensor *h = tm_from_buffer(n ? (const void *)v : (const void *)&dummy,
                                  &n, 1, TM_I64);
    if (!h) return NULL;
    tm_tensor *d = tm_to(h, tm_device_of(like));
    tm_free(h);
    return d;
}

/* Replaces *cur by next (freeing the old one); false when next is NULL
 * (then *cur is freed too and set to NULL). */
static inline bool tm__step(tm_tensor **cur, tm_tensor *next)
{
    tm_free(*cur);
    *cur = next;
    return next != NULL;
}

/* Flat positions of the non-zero elements of t (row-major order), as a
 * new 1-D I64 tensor on t's device; the count needs a host
 * synchronization (nonzero.c). */
tm_tensor *tm__nonzero_flat(const char *fn, const tm_tensor *t);

#endif
