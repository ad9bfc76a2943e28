/* conv_geom.c — the checks, geometry and entry calls the convolution
 * front ends share (contracts in conv_impl.h).  Nothing here touches
 * element memory: the entries do the work on the tensors' device. */
#include "conv_impl.h"

#include <stdio.h>

tm_dtype tm__conv_compute(tm_dtype dt)
{
    return dt == TM_F64 ? TM_F64 : TM_F32;
}

tm_tensor *tm__conv_dense(const tm_tensor *t, tm_dtype dt)
{
    if (!t) return NULL;
    tm_tensor *a = tm__sc_as(t, dt);
    if (!a || tm_is_contiguous(a)) return a;
    tm_tensor *c = tm_contiguous(a);
    tm_free(a);
    return c;
}

tm_status tm__conv_check_tensors(const char *fn, const tm_tensor *x,
                                 const tm_tensor *w, const tm_tensor *b)
{
    tm_status st;
    if ((st = tm__check_tensor(fn, x, "x")) ||
        (st = tm__check_tensor(fn, w, "weight")))
        return st;
    const tm_tensor *ins[3] = {x, w, b};
    if ((st = tm__check_same_device(fn, ins, 3))) return st;
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return tm__errf(TM_EDTYPE, fn, "x, weight and bias must have one "
                        "dtype, got %s, %s and %s", tm_dtype_name(x->dtype),
                        tm_dtype_name(w->dtype),
                        b ? tm_dtype_name(b->dtype) : "none");
    if (!tm_dtype_is_float(x->dtype))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported: a float "
                        "dtype is needed", tm_dtype_name(x->dtype));
    return TM_OK;
}

tm_status tm__conv_check_ranks(const char *fn, const tm_tensor *x,
                               const tm_tensor *w, int nd, bool *batched)
{
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF];
    if (nd < 1 || nd > 3)
        return tm__errf(TM_EINVAL, fn, "nd (spatial dims) must be 1, 2 or "
                        "3, got %d", nd);
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw);
    if (x->ndim != nd + 1 && x->ndim != nd + 2)
        return tm__errf(TM_ESHAPE, fn, "expected a %dD (unbatched) or %dD "
                        "(batched) input, got x of shape %s", nd + 1,
                        nd + 2, sx);
    if (w->ndim != nd + 2)
        return tm__errf(TM_ESHAPE, fn, "expected a %dD weight, got shape "
                        "%s", nd + 2, sw);
    *batched = x->ndim == nd + 2;
    return TM_OK;
}

void tm__conv_slots(const int64_t *shape_tail, int nd, int64_t *slots)
{
    for (int i = 0; i < 3; i++)
        slots[i] = i < 3 - nd ? 1 : shape_tail[i - (3 - nd)];
}

const char *tm__conv_fmt(const int64_t *slots, int nd, bool sizes,
                         char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    if (!sizes) at = (size_t)snprintf(buf, cap, "{");
    for (int i = 3 - nd; i < 3 && at < cap; i++) {
        int k = snprintf(buf + at, cap - at, "%s%lld",
                         i == 3 - nd ? "" : sizes ? "x" : ",",
                         (long long)slots[i]);
        if (k < 0) break;
        at += (size_t)k;
    }
    if (!sizes && at < cap) snprintf(buf + at, cap - at, "}");
    return buf;
}

tm_conv_geom tm__conv_geom(const tm__conv_set *cs, int64_t n, int64_t c,
                           const int64_t *in, int64_t oc, const int64_t *k,
                           const int64_t *out)
{
    tm_conv_geom q = {n, c, in[1], in[2], oc, k[1], k[2], out[1], out[2],
                      cs->s[1], cs->s[2], cs->p[1], cs->p[2], cs->dl[1],
                      cs->dl[2], cs->g, in[0], k[0], out[0], cs->s[0],
                      cs->p[0], cs->dl[0]};
    return q;
}

tm_status tm__conv_run(const char *fn, const tm_conv_geom *q, tm_tensor *y,
                       const tm_tensor *x, const tm_tensor *w,
                       const tm_tensor *b)
{
    tm_buf yb = tm__buf(y), xb = tm__buf(x), wb = tm__buf(w), bb = {0};
    if (b) bb = tm__buf(b);
    tm__stage sg = {0};
    tm__stage_out(&sg, &yb);
    tm__stage_in(&sg, &xb);
    tm__stage_in(&sg, &wb);
    tm__stage_in(&sg, &bb);
    return TM__CALL_STAGED(fn, tm__ctx(y), &sg, CONV, 0, conv, &yb, &xb,
                           &wb, &bb, q);
}

tm_status tm__conv_run_backward(const char *fn, const tm_conv_geom *q,
                                tm_tensor *dx, tm_tensor *dw, tm_tensor *db,
                                const tm_tensor *g, const tm_tensor *x,
                                const tm_tensor *w)
{
    tm_buf dxb = {0}, dwb = {0}, dbb = {0}, xb = {0}, wb = {0};
    tm_buf gb = tm__buf(g);
    if (dx) dxb = tm__buf(dx), wb = tm__buf(w);
    if (dw) dwb = tm__buf(dw), xb = tm__buf(x);
    if (db) dbb = tm__buf(db);
    if (!dx && !dw && !db) return TM_OK;
    tm__stage sg = {0};
    tm__stage_out(&sg, &dxb);
    tm__stage_out(&sg, &dwb);
    tm__stage_out(&sg, &dbb);
    tm__stage_in(&sg, &gb);
    tm__stage_in(&sg, &xb);
    tm__stage_in(&sg, &wb);
    return TM__CALL_STAGED(fn, tm__ctx(g), &sg, CONV_BACKWARD, 0,
                           conv_backward, &dxb, &dwb, &dbb, &gb, &xb, &wb,
                           q);
}

tm_tensor *tm__conv_unbatched(const char *fn, tm__conv_batched_fn f,
                              const tm_tensor *x, const tm_tensor *w,
                              const tm_tensor *b, int nd, const void *opts)
{
    tm_tensor *xb = tm_unsqueeze(x, 0), *y = NULL, *r = NULL;
    if (!xb) goto fail;
    if (!(y = f(fn, xb, w, b, nd, opts))) goto fail;
    if (!(r = tm_squeeze(y, 0))) goto fail;
    tm_free(xb), tm_free(y);
    return r;
fail:
    tm__relabel_error(fn, tm_last_status());
    tm_free(xb), tm_free(y);
    return NULL;
}
