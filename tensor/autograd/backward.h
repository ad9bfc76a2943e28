/*
 * backward.h — what backward rules are written with (internal): a scratch
 * arena for their temporaries, and the gradient shapes they share.
 *
 * A backward function builds its gradients from many intermediate tensors.
 * tm__sc_keep() records each one; a NULL result remembers the FIRST error
 * (its status and message), and once one step has failed the helpers below
 * skip their op and return NULL, so the error reported is always the
 * first.  tm__sc_done() frees every temporary and re-raises that error,
 * labelled with the node's name:
 *
 *   tm__scratch s = {0};
 *   tm_tensor *y = tm__sc_binary(&s, TM_OP_MUL, a, b);
 *   tm_tensor *r = tm__sc_keep(&s, tm_sum(y, NULL, 0, false));
 *   if (!s.st) grad_in[0] = tm_retain(r);
 *   return tm__sc_done(&s, n->name);
 */
#ifndef FOUNDRY_BACKWARD_H
#define FOUNDRY_BACKWARD_H

#include "autograd_impl.h"

#define TM__SC_MAX 48

typedef struct tm__scratch {
    tm_tensor *t[TM__SC_MAX];
    int n;
    tm_status st;  /* the first error, or TM_OK */
    char msg[256]; /* its message */
} tm__scratch;

/* Keeps t (freed by tm__sc_done) and returns it; a NULL t records the
 * current error as the first one (if none is recorded yet). */
tm_tensor *tm__sc_keep(tm__scratch *s, tm_tensor *t);
/* Frees the temporaries; the first error (relabelled as coming from fn)
 * or TM_OK. */
tm_status tm__sc_done(tm__scratch *s, const char *fn);

/* Kept results of one op each; NULL without running the op once a step
 * has failed. */
tm_tensor *tm__sc_binary(tm__scratch *s, tm_binary_op op, const tm_tensor *a,
                         const tm_tensor *b);
tm_tensor *tm__sc_scalar(tm__scratch *s, tm_binary_op op, const tm_tensor *a,
                         double v);
tm_tensor *tm__sc_rscalar(tm__scratch *s, tm_binary_op op, double v,
                          const tm_tensor *a);
tm_tensor *tm__sc_unary(tm__scratch *s, tm_unary_op op, const tm_tensor *a);
tm_tensor *tm__sc_where(tm__scratch *s, const tm_tensor *cond,
                        const tm_tensor *a, const tm_tensor *b);
/* cond ? g : 0 (pass) and cond ? 0 : g (block). */
tm_tensor *tm__sc_pass(tm__scratch *s, const tm_tensor *cond,
                       const tm_tensor *g);
tm_tensor *tm__sc_block(tm__scratch *s, const tm_tensor *cond,
                        const tm_tensor *g);
/* t in dtype dt: t itself (borrowed) when it has it, else a kept copy. */
const tm_tensor *tm__sc_cast(tm__scratch *s, const tm_tensor *t, tm_dtype dt);

/* The gradient g (the output's shape) for input e: summed over e's
 * broadcast dims and converted to e's dtype.  A new reference, not kept
 * (it goes to grad_in); NULL once a step has failed or when g is NULL. */
tm_tensor *tm__sc_grad_for(tm__scratch *s, const tm_tensor *g,
                           const tm__edge *e);

/* t converted to dtype dt (a new reference; t itself, retained, when it
 * has it already; NULL for a NULL t). */
tm_tensor *tm__sc_as(const tm_tensor *t, tm_dtype dt);

/* A fresh [shape] = op(a) · op(b) of dtype dt through tm_gemm (a kept
 * temporary; NULL once a step has failed). */
tm_tensor *tm__sc_gemm(tm__scratch *s, bool ta, bool tb, const tm_tensor *a,
                       const tm_tensor *b, const int64_t *shape, int nd,
                       tm_dtype dt);
/* The sum of g over all dims but the last (g itself for 1-D); kept. */
tm_tensor *tm__sc_sum_rows(tm__scratch *s, const tm_tensor *g);
/* d (a gradient in a computation dtype) reshaped to edge e's input and
 * converted to its dtype, into *out as a new reference. */
void tm__sc_finish(tm__scratch *s, tm_tensor *d, const tm__edge *e,
                   tm_tensor **out);

/* Records values = t picked along dim by indices (max/min over a dim,
 * sort, topk; keepdim: values keep t's dims): the gradient lands at the
 * indices.  As a recording hook (core/grad_hooks.h). */
typedef struct { int dim; bool keepdim; } tm__indexed_args;
tm_tensor *tm__grad_indexed(tm_tensor *values, const char *name,
                            const tm_tensor *t, int dim, bool keepdim,
                            const tm_tensor *indices);

/* Zeros of shape/dt on the device of `like` (a new reference). */
tm_tensor *tm__grad_zeros(const int64_t *shape, int ndim, tm_dtype dt,
                          const tm_tensor *like);
/* Zeros of shape/dt with g copied into the elements start[i] +
 * k * step[i] (start, step NULL: 0 and 1): the gradient of an input
 * that a view took those elements from.  A new reference. */
tm_tensor *tm__grad_place(const tm_tensor *g, const int64_t *shape, int ndim,
                          tm_dtype dt, const int64_t *start,
                          const int64_t *step);
/* v (consumed) converted to dt (v itself when it has it; NULL for NULL). */
tm_tensor *tm__grad_as(tm_tensor *v, tm_dtype dt);

#endif
