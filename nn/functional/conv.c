/* conv.c — tm_conv2d: validation, the geometry, and its backward
 * ("ConvolutionBackward").  The computation is the backend's: the front
 * end makes the operands contiguous in the compute dtype (F64 for F64,
 * F32 for the other float dtypes), allocates the results on the tensors'
 * device and calls the conv / conv_backward entries (contracts in
 * foundry/backend.h; the CPU's, with its im2col chunking and GEMMs, in
 * cpu/cpu_conv_entry.c).  It never touches element memory, so it runs on
 * any device whose backend has those entries. */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

tm_conv2d_opts tm_conv2d_defaults(void)
{
    tm_conv2d_opts o = {{1, 1}, {0, 0}, {1, 1}, 1};
    return o;
}

/* A convolution's node: stride, padding, dilation (h, w each), groups. */
typedef struct { int64_t sh, sw, ph, pw, dh, dw, g; } conv_args;

/* ----------------------------------------------------------- helpers */

/* F64 computes in F64, other float dtypes in F32. */
static tm_dtype cv_compute(tm_dtype dt)
{
    return dt == TM_F64 ? TM_F64 : TM_F32;
}

/* t as a contiguous tensor of dtype dt (a new reference). */
static tm_tensor *cv_dense(const tm_tensor *t, tm_dtype dt)
{
    if (!t) return NULL;
    tm_tensor *a = tm__sc_as(t, dt);
    if (!a || tm_is_contiguous(a)) return a;
    tm_tensor *c = tm_contiguous(a);
    tm_free(a);
    return c;
}

/* ------------------------------------------------------------- forward */

static tm_status cv_check_opts(const tm_conv2d_opts *o)
{
    const char *fn = "tm_conv2d";
    for (int d = 0; d < 2; d++) {
        if (o->stride[d] < 1)
            return tm__errf(TM_EINVAL, fn, "stride must be >= 1, got "
                            "{%lld,%lld}", (long long)o->stride[0],
                            (long long)o->stride[1]);
        if (o->padding[d] < 0)
            return tm__errf(TM_EINVAL, fn, "padding must be >= 0, got "
                            "{%lld,%lld}", (long long)o->padding[0],
                            (long long)o->padding[1]);
        if (o->dilation[d] < 1)
            return tm__errf(TM_EINVAL, fn, "dilation must be >= 1, got "
                            "{%lld,%lld}", (long long)o->dilation[0],
                            (long long)o->dilation[1]);
    }
    if (o->groups < 1)
        return tm__errf(TM_EINVAL, fn, "groups must be >= 1, got %lld",
                        (long long)o->groups);
    return TM_OK;
}

/* Fills q from validated tensors and settings, checking the shapes. */
static tm_status cv_geometry(const tm_tensor *x, const tm_tensor *w,
                             const tm_tensor *b, const tm_conv2d_opts *o,
                             tm_conv_geom *q)
{
    const char *fn = "tm_conv2d";
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw);
    if (x->ndim != 4 || w->ndim != 4)
        return tm__errf(TM_ESHAPE, fn, "x must be [N,C,H,W] and weight "
                        "[C_out,C_in/groups,kH,kW], got shapes %s and %s",
                        sx, sw);
    *q = (tm_conv_geom){x->shape[0], x->shape[1], x->shape[2],
                        x->shape[3], w->shape[0], w->shape[2], w->shape[3],
                        0, 0, o->stride[0], o->stride[1], o->padding[0],
                        o->padding[1], o->dilation[0], o->dilation[1],
                        o->groups, 1, 1, 1, 1, 0, 1};
    if (q->c % q->g || q->oc % q->g)
        return tm__errf(TM_ESHAPE, fn, "input channels %lld and output "
                        "channels %lld must both be divisible by groups "
                        "%lld", (long long)q->c, (long long)q->oc,
                        (long long)q->g);
    if (w->shape[1] != q->c / q->g)
        return tm__errf(TM_ESHAPE, fn, "weight %s expects %lld input "
                        "channels per group, but x %s with groups %lld "
                        "has %lld", sw, (long long)w->shape[1], sx,
                        (long long)q->g, (long long)(q->c / q->g));
    if (b && (b->ndim != 1 || b->shape[0] != q->oc))
        return tm__errf(TM_ESHAPE, fn, "bias has shape %s, expected [%lld] "
                        "for weight %s",
                        tm__fmt_shape(b->shape, b->ndim, sb, sizeof sb),
                        (long long)q->oc, sw);
    int64_t ekh = q->dh * (q->kh - 1) + 1, ekw = q->dw * (q->kw - 1) + 1;
    int64_t hp = q->h + 2 * q->ph, wp = q->w + 2 * q->pw;
    if (q->kh < 1 || q->kw < 1 || ekh > hp || ekw > wp)
        return tm__errf(TM_ESHAPE, fn, "kernel %lldx%lld (dilated "
                        "%lldx%lld) does not fit the padded input %lldx%lld "
                        "of x %s", (long long)q->kh, (long long)q->kw,
                        (long long)ekh, (long long)ekw, (long long)hp,
                        (long long)wp, sx);
    q->oh = (hp - ekh) / q->sh + 1;
    q->ow = (wp - ekw) / q->sw + 1;
    return TM_OK;
}

/* y [n, oc, oh, ow] (compute dtype, contiguous) = the conv entry of
 * contiguous xc, wc and bc (NULL: no bias), all of y's dtype. */
static tm_status cv_forward(const tm_conv_geom *q, const tm_tensor *xc,
                            const tm_tensor *wc, const tm_tensor *bc,
                            tm_tensor *y)
{
    tm_buf yb = tm__buf(y), xb = tm__buf(xc), wb = tm__buf(wc), bb = {0};
    if (bc) bb = tm__buf(bc);
    tm__stage sg = {0};
    tm__stage_out(&sg, &yb);
    tm__stage_in(&sg, &xb);
    tm__stage_in(&sg, &wb);
    tm__stage_in(&sg, &bb);
    return TM__CALL_STAGED("tm_conv2d", tm__ctx(y), &sg, CONV, 0, conv, &yb,
                           &xb, &wb, &bb, q);
}

static tm_status conv_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin);

tm_tensor *tm_conv2d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv2d_opts *opts)
{
    tm_conv2d_opts o = opts ? *opts : tm_conv2d_defaults();
    tm_tensor *xc = NULL, *wc = NULL, *bc = NULL, *yc = NULL, *y = NULL;
    tm_conv_geom q;
    if (tm__check_tensor(__func__, x, "x") ||
        tm__check_tensor(__func__, weight, "weight"))
        return NULL;
    const tm_tensor *ins[3] = {x, weight, bias};
    if (tm__check_same_device(__func__, ins, 3)) return NULL;
    if (weight->dtype != x->dtype || (bias && bias->dtype != x->dtype)) {
        TM_ERR(TM_EDTYPE, "x, weight and bias must have one dtype, got %s, "
               "%s and %s", tm_dtype_name(x->dtype),
               tm_dtype_name(weight->dtype),
               bias ? tm_dtype_name(bias->dtype) : "none");
        return NULL;
    }
    if (!tm_dtype_is_float(x->dtype)) {
        TM_ERR(TM_EDTYPE, "dtype %s is not supported: a float dtype is "
               "needed", tm_dtype_name(x->dtype));
        return NULL;
    }
    if (cv_check_opts(&o) || cv_geometry(x, weight, bias, &o, &q))
        return NULL;
    tm_dtype dt = cv_compute(x->dtype);
    int64_t shape[4] = {q.n, q.oc, q.oh, q.ow};
    /* The temporaries below are internal: nothing of them is recorded. */
    bool prev = tm_no_grad_begin();
    /* on x's device; the entry writes every element */
    yc = tm__tensor_new(__func__, shape, 4, dt, tm_device_of(x));
    if (!yc) goto fail;
    if (tm_numel(yc) > 0) {
        xc = cv_dense(x, dt);
        wc = cv_dense(weight, dt);
        bc = bias ? cv_dense(bias, dt) : NULL;
        if (!xc || !wc || (bias && !bc)) goto fail;
        if (cv_forward(&q, xc, wc, bc, yc)) goto fail;
    }
    y = dt == x->dtype ? tm_retain(yc) : tm_to_dtype(yc, x->dtype);
    if (!y) goto fail;
    tm_no_grad_end(prev);
    tm_free(xc), tm_free(wc), tm_free(bc), tm_free(yc);
    xc = wc = bc = yc = NULL;
    /* dw needs x and dx needs the weight: save only what is needed */
    conv_args p = {q.sh, q.sw, q.ph, q.pw, q.dh, q.dw, q.g};
    tm__record r = {.name = "ConvolutionBackward", .backward = conv_backward,
                    .nin = bias ? 3 : 2, .in = ins,
                    .save = {tm__ag_requires(weight) ? x : NULL,
                             tm__ag_requires(x) ? weight : NULL},
                    .args = &p, .args_size = sizeof p};
    if (tm__ag_record(&r, y)) goto fail_y;
    return y;
fail:
    tm_no_grad_end(prev);
    tm__relabel_error(__func__, tm_last_status());
    tm_free(xc), tm_free(wc), tm_free(bc), tm_free(yc);
fail_y:
    tm_free(y);
    return NULL;
}

/* ------------------------------------------------------------ backward */

/* Saved: x (slot 0, when dw is needed), weight (slot 1, when dx is
 * needed).  Shapes come from the edges.  The entry gets only the gradients
 * wanted, and x / weight only where they are saved. */
static tm_status conv_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    const conv_args *p = TM__AG_ARGS(n, conv_args);
    tm__scratch s = {0};
    const tm__edge *ex = &n->edges[0], *ew = &n->edges[1];
    const tm__edge *eb = n->nin > 2 ? &n->edges[2] : NULL;
    bool want_dx = ex->needed, want_dw = ew->needed;
    bool want_db = eb && eb->needed;
    tm_dtype dt = cv_compute(ex->dtype);
    tm_device dev = tm_device_of(g);
    tm_conv_geom q = {ex->shape[0], ex->shape[1], ex->shape[2],
                      ex->shape[3], ew->shape[0], ew->shape[2],
                      ew->shape[3], tm_shape(g)[2], tm_shape(g)[3], p->sh,
                      p->sw, p->ph, p->pw, p->dh, p->dw, p->g,
                      1, 1, 1, 1, 0, 1};
    tm_tensor *gc = tm__sc_keep(&s, cv_dense(g, dt));
    tm_tensor *wc = NULL, *xc = NULL, *dx = NULL, *dw = NULL, *db = NULL;
    if (want_dx) {
        wc = tm__sc_keep(&s, cv_dense(tm__ag_saved(n, 1), dt));
        dx = tm__sc_keep(&s, tm__tensor_new(n->name, ex->shape, 4, dt, dev));
    }
    if (want_dw) {
        xc = tm__sc_keep(&s, cv_dense(tm__ag_saved(n, 0), dt));
        dw = tm__sc_keep(&s, tm__tensor_new(n->name, ew->shape, 4, dt, dev));
    }
    if (want_db)
        db = tm__sc_keep(&s, tm__tensor_new(n->name, &q.oc, 1, dt, dev));
    if (s.st) return tm__sc_done(&s, n->name);
    tm_buf dxb = {0}, dwb = {0}, dbb = {0}, xb = {0}, wb = {0};
    tm_buf gb = tm__buf(gc);
    if (dx) dxb = tm__buf(dx), wb = tm__buf(wc);
    if (dw) dwb = tm__buf(dw), xb = tm__buf(xc);
    if (db) dbb = tm__buf(db);
    tm__stage sg = {0};
    tm__stage_out(&sg, &dxb);
    tm__stage_out(&sg, &dwb);
    tm__stage_out(&sg, &dbb);
    tm__stage_in(&sg, &gb);
    tm__stage_in(&sg, &xb);
    tm__stage_in(&sg, &wb);
    if ((dx || dw || db) &&
        TM__CALL_STAGED(n->name, tm__ctx(gc), &sg, CONV_BACKWARD, 0,
                        conv_backward, &dxb, &dwb, &dbb, &gb, &xb, &wb, &q))
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
