/* backward.c — the toolkit of backward rules (see backward.h). */
#include "backward.h"

#include <stdio.h>
#include <string.h>

tm_tensor *tm__sc_keep(tm__scratch *s, tm_tensor *t)
{
    if (t && s->n < TM__SC_MAX) {
        s->t[s->n++] = t;
        return t;
    }
    if (t) { /* out of slots: a bug in the caller */
        tm_free(t);
        tm__errf(TM_ESTATE, "backward", "internal error: more than %d "
                 "temporaries", TM__SC_MAX);
    }
    if (!s->st) {
        s->st = tm_last_status() ? tm_last_status() : TM_ESTATE;
        snprintf(s->msg, sizeof s->msg, "%s", tm_last_error());
    }
    return NULL;
}

tm_status tm__sc_done(tm__scratch *s, const char *fn)
{
    for (int i = 0; i < s->n; i++) tm_free(s->t[i]);
    s->n = 0;
    if (s->st) return tm__errf(s->st, fn, "%s", s->msg);
    return TM_OK;
}

tm_tensor *tm__sc_binary(tm__scratch *s, tm_binary_op op, const tm_tensor *a,
                         const tm_tensor *b)
{
    return s->st ? NULL : tm__sc_keep(s, tm_binary(op, a, b));
}

tm_tensor *tm__sc_scalar(tm__scratch *s, tm_binary_op op, const tm_tensor *a,
                         double v)
{
    return s->st ? NULL : tm__sc_keep(s, tm_binary_scalar(op, a, v));
}

tm_tensor *tm__sc_rscalar(tm__scratch *s, tm_binary_op op, double v,
                          const tm_tensor *a)
{
    return s->st ? NULL : tm__sc_keep(s, tm_binary_rscalar(op, v, a));
}

tm_tensor *tm__sc_unary(tm__scratch *s, tm_unary_op op, const tm_tensor *a)
{
    return s->st ? NULL : tm__sc_keep(s, tm_unary(op, a));
}

tm_tensor *tm__sc_where(tm__scratch *s, const tm_tensor *cond,
                        const tm_tensor *a, const tm_tensor *b)
{
    return s->st ? NULL : tm__sc_keep(s, tm_where(cond, a, b));
}

/* A 0-d zero of like's dtype and device. */
static tm_tensor *tm__sc_zero(tm__scratch *s, const tm_tensor *like)
{
    if (s->st) return NULL;
    return tm__sc_keep(s, tm__scalar_on("backward", 0, like->dtype,
                                        tm_device_of(like)));
}

tm_tensor *tm__sc_pass(tm__scratch *s, const tm_tensor *cond,
                       const tm_tensor *g)
{
    return tm__sc_where(s, cond, g, tm__sc_zero(s, g));
}

tm_tensor *tm__sc_block(tm__scratch *s, const tm_tensor *cond,
                        const tm_tensor *g)
{
    return tm__sc_where(s, cond, tm__sc_zero(s, g), g);
}

const tm_tensor *tm__sc_cast(tm__scratch *s, const tm_tensor *t, tm_dtype dt)
{
    if (s->st) return NULL;
    return t->dtype == dt ? t : tm__sc_keep(s, tm_to_dtype(t, dt));
}

tm_tensor *tm__sc_grad_for(tm__scratch *s, const tm_tensor *g,
                           const tm__edge *e)
{
    if (s->st || !g) return NULL;
    tm_tensor *r = tm__ag_sum_to(g, e->shape, e->ndim);
    if (r && r->dtype != e->dtype) {
        tm_tensor *c = tm_to_dtype(r, e->dtype);
        tm_free(r);
        r = c;
    }
    if (!r) tm__sc_keep(s, NULL);
    return r;
}

tm_tensor *tm__sc_as(const tm_tensor *t, tm_dtype dt)
{
    if (!t) return NULL;
    return t->dtype == dt ? tm_retain((tm_tensor *)t) : tm_to_dtype(t, dt);
}

/* ---------------------------------------------------- gradient shapes */

tm_tensor *tm__grad_zeros(const int64_t *shape, int ndim, tm_dtype dt,
                          const tm_tensor *like)
{
    return tm_full_on(shape, ndim, 0.0, dt, tm_device_of(like));
}

tm_tensor *tm__grad_place(const tm_tensor *g, const int64_t *shape, int ndim,
                          tm_dtype dt, const int64_t *start,
                          const int64_t *step)
{
    tm_tensor *z = tm__grad_zeros(shape, ndim, dt, g);
    if (!z || tm_numel(g) == 0) return z;
    int64_t st[TM_MAX_DIMS], off = z->offset;
    for (int i = 0; i < ndim; i++) {
        st[i] = z->strides[i] * (step ? step[i] : 1);
        off += (start ? start[i] : 0) * z->strides[i];
    }
    tm_tensor *v = tm__view_of("tm_backward", z, g->shape, st, ndim, off);
    if (!v || tm_copy_(v, g)) {
        tm_free(v);
        tm_free(z);
        return NULL;
    }
    tm_free(v);
    return z;
}

tm_tensor *tm__grad_as(tm_tensor *v, tm_dtype dt)
{
    tm_tensor *c = tm__sc_as(v, dt);
    tm_free(v);
    return c;
}

tm_tensor *tm__sc_gemm(tm__scratch *s, bool ta, bool tb, const tm_tensor *a,
                       const tm_tensor *b, const int64_t *shape, int nd,
                       tm_dtype dt)
{
    if (s->st || !a || !b) return NULL;
    /* beta 0: the GEMM writes every element, so no zero fill first */
    tm_tensor *c = tm__sc_keep(s, tm_empty_on(shape, nd, dt,
                                              tm_device_of(a)));
    if (c && tm_gemm(ta, tb, 1.0, a, b, 0.0, c)) {
        tm__sc_keep(s, NULL);
        return NULL;
    }
    return c;
}

tm_tensor *tm__sc_sum_rows(tm__scratch *s, const tm_tensor *g)
{
    if (s->st || !g) return NULL;
    int nd = tm_ndim(g), dims[TM_MAX_DIMS];
    if (nd == 1) return tm__sc_keep(s, tm_retain((tm_tensor *)g));
    for (int d = 0; d < nd - 1; d++) dims[d] = d;
    return tm__sc_keep(s, tm_sum(g, dims, nd - 1, false));
}

void tm__sc_finish(tm__scratch *s, tm_tensor *d, const tm__edge *e,
                   tm_tensor **out)
{
    if (s->st || !d) return;
    tm_tensor *r = tm__sc_keep(s, tm_reshape(d, e->shape, e->ndim));
    r = r ? tm__sc_keep(s, tm__sc_as(r, e->dtype)) : NULL;
    if (r) *out = tm_retain(r);
}
