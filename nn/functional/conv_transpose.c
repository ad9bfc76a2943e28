/* conv_transpose.c — tm_conv_transpose (1, 2 or 3 spatial dims) and
 * tm_conv_transpose1d/2d/3d ("ConvTransposeBackward").
 *
 * A transposed convolution of x [N, C_in, *in] with weight [C_in,
 * C_out/G, *k] is the input gradient of the convolution whose input is
 * the result [N, C_out, *out] and whose weight is the same tensor read
 * as [OC = C_in, C/G = C_out/G, *k]: with that geometry q (input `out`,
 * output `in`),
 *   y  = conv_backward's dx of q with g = x
 *   dx = conv of q applied to dL/dy (no bias)
 *   dw = conv_backward's dweight of q with g = x and input dL/dy
 *   db = dL/dy summed over all dims but the channel
 * so no kernel of its own is needed.  `out` is set explicitly (the
 * output_padding rows past the last window get no contribution; the
 * entries read and write nothing outside the input). */
#include "conv_impl.h"

#include <string.h>

tm_conv_transpose_opts tm_conv_transpose_defaults(void)
{
    tm_conv_transpose_opts o = {{1, 1, 1}, {0, 0, 0}, {0, 0, 0},
                                {1, 1, 1}, 1};
    return o;
}

static const char *ct_name(int nd)
{
    return nd == 1   ? "tm_conv_transpose1d"
           : nd == 3 ? "tm_conv_transpose3d"
                     : "tm_conv_transpose2d";
}

/* The settings in slots (cs, output padding op), checked. */
static tm_status ct_settings(const char *fn, const tm_conv_transpose_opts *o,
                             int nd, tm__conv_set *cs, int64_t *op)
{
    char b1[64], b2[64], b3[64];
    *cs = (tm__conv_set){{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, o->groups, nd};
    op[0] = op[1] = op[2] = 0;
    for (int i = 0; i < nd; i++) {
        cs->s[3 - nd + i] = o->stride[i];
        cs->p[3 - nd + i] = o->padding[i];
        cs->dl[3 - nd + i] = o->dilation[i];
        op[3 - nd + i] = o->output_padding[i];
    }
    for (int i = 3 - nd; i < 3; i++) {
        if (cs->s[i] < 1)
            return tm__errf(TM_EINVAL, fn, "stride must be >= 1, got %s",
                            tm__conv_fmt(cs->s, nd, false, b1, sizeof b1));
        if (cs->p[i] < 0)
            return tm__errf(TM_EINVAL, fn, "padding must be >= 0, got %s",
                            tm__conv_fmt(cs->p, nd, false, b1, sizeof b1));
        if (cs->dl[i] < 1)
            return tm__errf(TM_EINVAL, fn, "dilation must be >= 1, got %s",
                            tm__conv_fmt(cs->dl, nd, false, b1, sizeof b1));
        if (op[i] < 0)
            return tm__errf(TM_EINVAL, fn, "output_padding must be >= 0, "
                            "got %s", tm__conv_fmt(op, nd, false, b1,
                                                   sizeof b1));
    }
    for (int i = 3 - nd; i < 3; i++)
        if (op[i] >= cs->s[i] && op[i] >= cs->dl[i])
            return tm__errf(TM_EINVAL, fn, "output_padding must be smaller "
                            "than either stride or dilation, got "
                            "output_padding %s, stride %s, dilation %s",
                            tm__conv_fmt(op, nd, false, b1, sizeof b1),
                            tm__conv_fmt(cs->s, nd, false, b2, sizeof b2),
                            tm__conv_fmt(cs->dl, nd, false, b3, sizeof b3));
    if (o->groups < 1)
        return tm__errf(TM_EINVAL, fn, "groups must be >= 1, got %lld",
                        (long long)o->groups);
    return TM_OK;
}

/* The geometry q of the convolution this transposes (see the top), from
 * batched x, weight and bias (checked). */
static tm_status ct_geometry(const char *fn, const tm_tensor *x,
                             const tm_tensor *w, const tm_tensor *b,
                             const tm__conv_set *cs, const int64_t *op,
                             tm_conv_geom *q)
{
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    char b1[64];
    int nd = cs->nd;
    int64_t in[3], k[3], out[3], n = x->shape[0], cin = x->shape[1];
    int64_t g = cs->g;
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw);
    tm__conv_slots(x->shape + 2, nd, in);
    tm__conv_slots(w->shape + 2, nd, k);
    if (w->shape[0] != cin)
        return tm__errf(TM_ESHAPE, fn, "weight %s expects %lld input "
                        "channels, but x %s has %lld", sw,
                        (long long)w->shape[0], sx, (long long)cin);
    if (cin % g)
        return tm__errf(TM_ESHAPE, fn, "input channels %lld must be "
                        "divisible by groups %lld", (long long)cin,
                        (long long)g);
    if (w->shape[1] < 1)
        return tm__errf(TM_ESHAPE, fn, "weight %s has no output channels",
                        sw);
    int64_t cout = w->shape[1] * g;
    if (b && (b->ndim != 1 || b->shape[0] != cout))
        return tm__errf(TM_ESHAPE, fn, "bias has shape %s, expected [%lld] "
                        "for weight %s with groups %lld",
                        tm__fmt_shape(b->shape, b->ndim, sb, sizeof sb),
                        (long long)cout, sw, (long long)g);
    for (int i = 3 - nd; i < 3; i++) {
        if (k[i] < 1)
            return tm__errf(TM_ESHAPE, fn, "kernel sizes must be >= 1, got "
                            "weight %s", sw);
        if (in[i] < 1)
            return tm__errf(TM_ESHAPE, fn, "x %s has an empty spatial dim",
                            sx);
        out[i] = (in[i] - 1) * cs->s[i] - 2 * cs->p[i] +
                 cs->dl[i] * (k[i] - 1) + op[i] + 1;
    }
    for (int i = 0; i < 3 - nd; i++) out[i] = 1;
    for (int i = 3 - nd; i < 3; i++)
        if (out[i] < 1)
            return tm__errf(TM_ESHAPE, fn, "the output size %s of x %s and "
                            "weight %s is too small (<= 0 in some dim)",
                            tm__conv_fmt(out, nd, true, b1, sizeof b1), sx,
                            sw);
    *q = tm__conv_geom(cs, n, cout, out, cin, k, in);
    return TM_OK;
}

/* y + bias over the channel dim (dim 1) of an (nd+2)-dim y. */
static tm_tensor *ct_add_bias(const tm_tensor *y, const tm_tensor *bias,
                              int nd)
{
    int64_t shape[4] = {tm_shape(bias)[0], 1, 1, 1};
    tm_tensor *bv = tm_reshape(bias, shape, nd + 1);
    tm_tensor *r = bv ? tm_add(y, bv) : NULL;
    tm_free(bv);
    return r;
}

static tm_status ct_backward(tm__node *n, const tm_tensor *g,
                             tm_tensor **gin);

static tm_tensor *ct_batched(const char *fn, const tm_tensor *x,
                             const tm_tensor *weight, const tm_tensor *bias,
                             int nd, const void *vo)
{
    const tm_conv_transpose_opts *o = vo;
    tm_tensor *xc = NULL, *wc = NULL, *bc = NULL, *yc = NULL, *yb = NULL;
    tm_tensor *y = NULL;
    tm__conv_set cs;
    tm_conv_geom q;
    int64_t op[3];
    bool prev = false, in_ng = false;
    if (ct_settings(fn, o, nd, &cs, op) ||
        ct_geometry(fn, x, weight, bias, &cs, op, &q))
        return NULL;
    tm_dtype dt = tm__conv_compute(x->dtype);
    int64_t shape[5] = {q.n, q.c}, out[3] = {q.d, q.h, q.w};
    memcpy(shape + 2, out + 3 - nd, sizeof(int64_t) * (size_t)nd);
    prev = tm_no_grad_begin(), in_ng = true;
    yc = tm__tensor_new(fn, shape, nd + 2, dt, tm_device_of(x));
    if (!yc) goto fail;
    if (tm_numel(yc) > 0) {
        xc = tm__conv_dense(x, dt);
        wc = tm__conv_dense(weight, dt);
        if (!xc || !wc) goto fail;
        if (tm__conv_run_backward(fn, &q, yc, NULL, NULL, xc, NULL, wc))
            goto fail;
    }
    if (bias) {
        if (!(bc = tm__conv_dense(bias, dt)) ||
            !(yb = ct_add_bias(yc, bc, nd)))
            goto fail;
    } else {
        yb = tm_retain(yc);
    }
    y = dt == x->dtype ? tm_retain(yb) : tm_to_dtype(yb, x->dtype);
    if (!y) goto fail;
    tm_no_grad_end(prev), in_ng = false;
    tm_free(xc), tm_free(wc), tm_free(bc), tm_free(yc), tm_free(yb);
    xc = wc = bc = yc = yb = NULL;
    /* dw needs x and dx needs the weight: save only what is needed */
    const tm_tensor *ins[3] = {x, weight, bias};
    tm__record r = {.name = "ConvTransposeBackward", .backward = ct_backward,
                    .nin = bias ? 3 : 2, .in = ins,
                    .save = {tm__ag_requires(weight) ? x : NULL,
                             tm__ag_requires(x) ? weight : NULL},
                    .args = &cs, .args_size = sizeof cs};
    if (tm__ag_record(&r, y)) goto fail;
    return y;
fail:
    if (in_ng) tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
    tm_free(xc), tm_free(wc), tm_free(bc), tm_free(yc), tm_free(yb);
    tm_free(y);
    return NULL;
}

static tm_tensor *ct_front(const char *fn, const tm_tensor *x,
                           const tm_tensor *weight, const tm_tensor *bias,
                           int nd, const tm_conv_transpose_opts *opts)
{
    tm_conv_transpose_opts o = opts ? *opts : tm_conv_transpose_defaults();
    bool batched;
    if (tm__conv_check_tensors(fn, x, weight, bias) ||
        tm__conv_check_ranks(fn, x, weight, nd, &batched))
        return NULL;
    return batched ? ct_batched(fn, x, weight, bias, nd, &o)
                   : tm__conv_unbatched(fn, ct_batched, x, weight, bias, nd,
                                        &o);
}

tm_tensor *tm_conv_transpose(const tm_tensor *x, const tm_tensor *weight,
                             const tm_tensor *bias, int nd,
                             const tm_conv_transpose_opts *opts)
{
    return ct_front(nd >= 1 && nd <= 3 ? ct_name(nd) : "tm_conv_transpose",
                    x, weight, bias, nd, opts);
}

tm_tensor *tm_conv_transpose1d(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias,
                               const tm_conv_transpose_opts *opts)
{
    return ct_front(ct_name(1), x, weight, bias, 1, opts);
}

tm_tensor *tm_conv_transpose2d(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias,
                               const tm_conv_transpose_opts *opts)
{
    return ct_front(ct_name(2), x, weight, bias, 2, opts);
}

tm_tensor *tm_conv_transpose3d(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias,
                               const tm_conv_transpose_opts *opts)
{
    return ct_front(ct_name(3), x, weight, bias, 3, opts);
}

/* ------------------------------------------------------------ backward */

/* Saved: x (slot 0, when dw is needed), weight (slot 1, when dx is
 * needed); shapes from the edges and g. */
static tm_status ct_backward(tm__node *n, const tm_tensor *g,
                             tm_tensor **gin)
{
    const tm__conv_set *cs = TM__AG_ARGS(n, tm__conv_set);
    int nd = cs->nd;
    tm__scratch s = {0};
    const tm__edge *ex = &n->edges[0], *ew = &n->edges[1];
    const tm__edge *eb = n->nin > 2 ? &n->edges[2] : NULL;
    bool want_dx = ex->needed, want_dw = ew->needed;
    bool want_db = eb && eb->needed;
    tm_dtype dt = tm__conv_compute(ex->dtype);
    tm_device dev = tm_device_of(g);
    int64_t in[3], k[3], out[3];
    tm__conv_slots(ex->shape + 2, nd, in);
    tm__conv_slots(ew->shape + 2, nd, k);
    tm__conv_slots(tm_shape(g) + 2, nd, out);
    tm_conv_geom q = tm__conv_geom(cs, ex->shape[0], tm_shape(g)[1], out,
                                   ex->shape[1], k, in);
    tm_tensor *gc = tm__sc_keep(&s, tm__conv_dense(g, dt));
    tm_tensor *wc = NULL, *xc = NULL, *dx = NULL, *dw = NULL, *r;
    if (want_dx) {
        wc = tm__sc_keep(&s, tm__conv_dense(tm__ag_saved(n, 1), dt));
        dx = tm__sc_keep(&s, tm__tensor_new(n->name, ex->shape, nd + 2, dt,
                                            dev));
        if (!s.st && tm_numel(dx) > 0 &&
            tm__conv_run(n->name, &q, dx, gc, wc, NULL))
            tm__sc_keep(&s, NULL);
    }
    if (want_dw && !s.st) {
        xc = tm__sc_keep(&s, tm__conv_dense(tm__ag_saved(n, 0), dt));
        dw = tm__sc_keep(&s, tm__tensor_new(n->name, ew->shape, nd + 2, dt,
                                            dev));
        if (!s.st && tm__conv_run_backward(n->name, &q, NULL, dw, NULL, xc,
                                           gc, NULL))
            tm__sc_keep(&s, NULL);
    }
    if (want_db && !s.st) {
        int dims[4] = {0, 2, 3, 4};
        tm_tensor *db = tm__sc_keep(&s, tm_sum(gc, dims, nd + 1, false));
        if (db && (r = tm__sc_keep(&s, tm__sc_as(db, eb->dtype))))
            gin[2] = tm_retain(r);
    }
    if (dx && !s.st && (r = tm__sc_keep(&s, tm__sc_as(dx, ex->dtype))))
        gin[0] = tm_retain(r);
    if (dw && !s.st && (r = tm__sc_keep(&s, tm__sc_as(dw, ew->dtype))))
        gin[1] = tm_retain(r);
    return tm__sc_done(&s, n->name);
}
