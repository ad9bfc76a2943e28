/* conv.c — tm_conv (1, 2 or 3 spatial dims) and tm_conv1d / tm_conv2d /
 * tm_conv3d: validation, the geometry, and the backward
 * ("ConvolutionBackward").  The computation is the backend's: the front
 * end makes the operands contiguous in the compute dtype (F64 for F64,
 * F32 for the other float dtypes), allocates the results on the tensors'
 * device and calls the conv / conv_backward entries (contracts in
 * foundry/backend.h; the CPU's, with its im2col chunking and GEMMs, in
 * cpu/cpu_conv_entry.c).  It never touches element memory, so it runs on
 * any device whose backend has those entries.  Shared helpers:
 * conv_geom.c. */
#include "conv_impl.h"

#include <string.h>

tm_conv2d_opts tm_conv2d_defaults(void)
{
    tm_conv2d_opts o = {{1, 1}, {0, 0}, {1, 1}, 1};
    return o;
}

tm_conv_opts tm_conv_defaults(void)
{
    tm_conv_opts o = {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1,
                      TM_CONV_PAD_EXPLICIT};
    return o;
}

static const char *cv_name(int nd)
{
    return nd == 1 ? "tm_conv1d" : nd == 3 ? "tm_conv3d" : "tm_conv2d";
}

/* ------------------------------------------------------------- forward */

/* The settings in slots (cs), checked; padding of 'same' / 'valid' is
 * filled in later, from the kernel. */
static tm_status cv_settings(const char *fn, const tm_conv_opts *o, int nd,
                             tm__conv_set *cs)
{
    char b[64];
    *cs = (tm__conv_set){{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, o->groups, nd};
    for (int i = 0; i < nd; i++) {
        cs->s[3 - nd + i] = o->stride[i];
        cs->p[3 - nd + i] = o->padding[i];
        cs->dl[3 - nd + i] = o->dilation[i];
    }
    if (o->pad_mode != TM_CONV_PAD_EXPLICIT &&
        o->pad_mode != TM_CONV_PAD_VALID && o->pad_mode != TM_CONV_PAD_SAME)
        return tm__errf(TM_EINVAL, fn, "pad_mode must be "
                        "TM_CONV_PAD_EXPLICIT, _VALID or _SAME, got %d",
                        (int)o->pad_mode);
    for (int i = 3 - nd; i < 3; i++) {
        if (cs->s[i] < 1)
            return tm__errf(TM_EINVAL, fn, "stride must be >= 1, got %s",
                            tm__conv_fmt(cs->s, nd, false, b, sizeof b));
        if (o->pad_mode == TM_CONV_PAD_EXPLICIT && cs->p[i] < 0)
            return tm__errf(TM_EINVAL, fn, "padding must be >= 0, got %s",
                            tm__conv_fmt(cs->p, nd, false, b, sizeof b));
        if (cs->dl[i] < 1)
            return tm__errf(TM_EINVAL, fn, "dilation must be >= 1, got %s",
                            tm__conv_fmt(cs->dl, nd, false, b, sizeof b));
        if (o->pad_mode == TM_CONV_PAD_SAME && cs->s[i] != 1)
            return tm__errf(TM_EINVAL, fn, "padding 'same' needs stride 1, "
                            "got stride %s",
                            tm__conv_fmt(cs->s, nd, false, b, sizeof b));
    }
    if (o->pad_mode != TM_CONV_PAD_EXPLICIT)
        cs->p[0] = cs->p[1] = cs->p[2] = 0;
    if (o->groups < 1)
        return tm__errf(TM_EINVAL, fn, "groups must be >= 1, got %lld",
                        (long long)o->groups);
    return TM_OK;
}

/* The geometry of batched x and weight (bias checked too).  For 'same'
 * the padding before is (k'-1)/2 and the output keeps the input's size:
 * the entries read zeros past x's far edge, which is the extra padding
 * after that PyTorch adds for an even dilated extent k'. */
static tm_status cv_geometry(const char *fn, const tm_tensor *x,
                             const tm_tensor *w, const tm_tensor *b,
                             tm__conv_set *cs, bool same, tm_conv_geom *q)
{
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    char b1[64], b2[64];
    int nd = cs->nd;
    int64_t in[3], k[3], out[3], n = x->shape[0], c = x->shape[1];
    int64_t oc = w->shape[0], g = cs->g;
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw);
    tm__conv_slots(x->shape + 2, nd, in);
    tm__conv_slots(w->shape + 2, nd, k);
    if (oc < 1)
        return tm__errf(TM_ESHAPE, fn, "weight %s has no output channels",
                        sw);
    if (c % g || oc % g)
        return tm__errf(TM_ESHAPE, fn, "input channels %lld and output "
                        "channels %lld must both be divisible by groups "
                        "%lld", (long long)c, (long long)oc, (long long)g);
    if (w->shape[1] != c / g)
        return tm__errf(TM_ESHAPE, fn, "weight %s expects %lld input "
                        "channels per group, but x %s with groups %lld "
                        "has %lld", sw, (long long)w->shape[1], sx,
                        (long long)g, (long long)(c / g));
    if (b && (b->ndim != 1 || b->shape[0] != oc))
        return tm__errf(TM_ESHAPE, fn, "bias has shape %s, expected [%lld] "
                        "for weight %s",
                        tm__fmt_shape(b->shape, b->ndim, sb, sizeof sb),
                        (long long)oc, sw);
    for (int i = 3 - nd; i < 3; i++) {
        int64_t ek = cs->dl[i] * (k[i] - 1) + 1;
        if (same) cs->p[i] = (ek - 1) / 2;
        int64_t padded = in[i] + 2 * cs->p[i];
        if (k[i] < 1)
            return tm__errf(TM_ESHAPE, fn, "kernel sizes must be >= 1, got "
                            "weight %s", sw);
        if (same) {
            out[i] = in[i];
            if (in[i] < 1)
                return tm__errf(TM_ESHAPE, fn, "x %s has an empty spatial "
                                "dim", sx);
        } else if (ek > padded) {
            int64_t ekv[3], pv[3];
            for (int j = 0; j < 3; j++) {
                ekv[j] = cs->dl[j] * (k[j] - 1) + 1;
                pv[j] = in[j] + 2 * cs->p[j];
            }
            return tm__errf(TM_ESHAPE, fn, "kernel %s (dilated %s) does not "
                            "fit the padded input %s of x %s",
                            tm__conv_fmt(k, nd, true, b1, sizeof b1),
                            tm__conv_fmt(ekv, nd, true, b2, sizeof b2),
                            tm__conv_fmt(pv, nd, true, sb, sizeof sb), sx);
        } else {
            out[i] = (padded - ek) / cs->s[i] + 1;
        }
    }
    for (int i = 0; i < 3 - nd; i++) out[i] = 1;
    *q = tm__conv_geom(cs, n, c, in, oc, k, out);
    return TM_OK;
}

static tm_status conv_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin);

/* The convolution of batched x (checked tensors, ranks). */
static tm_tensor *cv_batched(const char *fn, const tm_tensor *x,
                             const tm_tensor *weight, const tm_tensor *bias,
                             int nd, const void *vo)
{
    const tm_conv_opts *o = vo;
    tm_tensor *xc = NULL, *wc = NULL, *bc = NULL, *yc = NULL, *y = NULL;
    tm__conv_set cs;
    tm_conv_geom q;
    bool prev = false, in_ng = false;
    if (cv_settings(fn, o, nd, &cs) ||
        cv_geometry(fn, x, weight, bias, &cs, o->pad_mode == TM_CONV_PAD_SAME,
                    &q))
        return NULL;
    tm_dtype dt = tm__conv_compute(x->dtype);
    int64_t shape[5] = {q.n, q.oc}, out[3] = {q.od, q.oh, q.ow};
    memcpy(shape + 2, out + 3 - nd, sizeof(int64_t) * (size_t)nd);
    /* The temporaries below are internal: nothing of them is recorded. */
    prev = tm_no_grad_begin(), in_ng = true;
    /* on x's device; the entry writes every element */
    yc = tm__tensor_new(fn, shape, nd + 2, dt, tm_device_of(x));
    if (!yc) goto fail;
    if (tm_numel(yc) > 0) {
        xc = tm__conv_dense(x, dt);
        wc = tm__conv_dense(weight, dt);
        bc = bias ? tm__conv_dense(bias, dt) : NULL;
        if (!xc || !wc || (bias && !bc)) goto fail;
        if (tm__conv_run(fn, &q, yc, xc, wc, bc)) goto fail;
    }
    y = dt == x->dtype ? tm_retain(yc) : tm_to_dtype(yc, x->dtype);
    if (!y) goto fail;
    tm_no_grad_end(prev), in_ng = false;
    tm_free(xc), tm_free(wc), tm_free(bc), tm_free(yc);
    xc = wc = bc = yc = NULL;
    /* dw needs x and dx needs the weight: save only what is needed */
    const tm_tensor *ins[3] = {x, weight, bias};
    tm__record r = {.name = "ConvolutionBackward", .backward = conv_backward,
                    .nin = bias ? 3 : 2, .in = ins,
                    .save = {tm__ag_requires(weight) ? x : NULL,
                             tm__ag_requires(x) ? weight : NULL},
                    .args = &cs, .args_size = sizeof cs};
    if (tm__ag_record(&r, y)) goto fail;
    return y;
fail:
    if (in_ng) tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
    tm_free(xc), tm_free(wc), tm_free(bc), tm_free(yc), tm_free(y);
    return NULL;
}

static tm_tensor *cv_front(const char *fn, const tm_tensor *x,
                           const tm_tensor *weight, const tm_tensor *bias,
                           int nd, const tm_conv_opts *opts)
{
    tm_conv_opts o = opts ? *opts : tm_conv_defaults();
    bool batched;
    if (tm__conv_check_tensors(fn, x, weight, bias) ||
        tm__conv_check_ranks(fn, x, weight, nd, &batched))
        return NULL;
    return batched ? cv_batched(fn, x, weight, bias, nd, &o)
                   : tm__conv_unbatched(fn, cv_batched, x, weight, bias, nd,
                                        &o);
}

tm_tensor *tm_conv(const tm_tensor *x, const tm_tensor *weight,
                   const tm_tensor *bias, int nd, const tm_conv_opts *opts)
{
    return cv_front(nd >= 1 && nd <= 3 ? cv_name(nd) : "tm_conv", x, weight,
                    bias, nd, opts);
}

tm_tensor *tm_conv1d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv_opts *opts)
{
    return cv_front("tm_conv1d", x, weight, bias, 1, opts);
}

tm_tensor *tm_conv3d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv_opts *opts)
{
    return cv_front("tm_conv3d", x, weight, bias, 3, opts);
}

/* The 2-D API of before tm_conv: batched x only, explicit padding. */
tm_tensor *tm_conv2d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv2d_opts *opts)
{
    const char *fn = "tm_conv2d";
    tm_conv2d_opts o2 = opts ? *opts : tm_conv2d_defaults();
    tm_conv_opts o = tm_conv_defaults();
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF];
    if (tm__conv_check_tensors(fn, x, weight, bias)) return NULL;
    if (x->ndim != 4 || weight->ndim != 4) {
        tm__errf(TM_ESHAPE, fn, "x must be [N,C,H,W] and weight "
                 "[C_out,C_in/groups,kH,kW], got shapes %s and %s",
                 tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx),
                 tm__fmt_shape(weight->shape, weight->ndim, sw, sizeof sw));
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        o.stride[i] = o2.stride[i];
        o.padding[i] = o2.padding[i];
        o.dilation[i] = o2.dilation[i];
    }
    o.groups = o2.groups;
    return cv_batched(fn, x, weight, bias, 2, &o);
}

/* ------------------------------------------------------------ backward */

/* Saved: x (slot 0, when dw is needed), weight (slot 1, when dx is
 * needed).  Shapes come from the edges.  The entry gets only the gradients
 * wanted, and x / weight only where they are saved. */
static tm_status conv_backward(tm__node *n, const tm_tensor *g,
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
    tm_conv_geom q = tm__conv_geom(cs, ex->shape[0], ex->shape[1], in,
                                   ew->shape[0], k, out);
    tm_tensor *gc = tm__sc_keep(&s, tm__conv_dense(g, dt));
    tm_tensor *wc = NULL, *xc = NULL, *dx = NULL, *dw = NULL, *db = NULL;
    if (want_dx) {
        wc = tm__sc_keep(&s, tm__conv_dense(tm__ag_saved(n, 1), dt));
        dx = tm__sc_keep(&s, tm__tensor_new(n->name, ex->shape, nd + 2, dt,
                                            dev));
    }
    if (want_dw) {
        xc = tm__sc_keep(&s, tm__conv_dense(tm__ag_saved(n, 0), dt));
        dw = tm__sc_keep(&s, tm__tensor_new(n->name, ew->shape, nd + 2, dt,
                                            dev));
    }
    if (want_db)
        db = tm__sc_keep(&s, tm__tensor_new(n->name, &q.oc, 1, dt, dev));
    if (s.st) return tm__sc_done(&s, n->name);
    if (tm__conv_run_backward(n->name, &q, dx, dw, db, gc, xc, wc))
        tm__sc_keep(&s, NULL);
    tm_tensor *r;
    if (dx && !s.st && (r = tm__sc_keep(&s, tm__sc_as(dx, ex->dtype))))
        gin[0] = tm_retain(r);
    if (dw && !s.st && (r = tm__sc_keep(&s, tm__sc_as(dw, ew->dtype))))
        gin[1] = tm_retain(r);
    if (db && !s.st && (r = tm__sc_keep(&s, tm__sc_as(db, eb->dtype))))
        gin[2] = tm_retain(r);
    return tm__sc_done(&s, n->name);
}
