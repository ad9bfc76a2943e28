/* conv.c — tm_conv2d: validation, the chunking, the matrix products
 * through tm_gemm, and its backward ("ConvolutionBackward").  The element
 * loops (im2col / col2im, the bias and its gradient, the regrouping of G)
 * are CPU kernels: cpu/cpu_conv.c, contracts in cpu/cpu_nn.h.
 *
 * Images are processed in chunks of B (cv_chunk: as many as keep the
 * im2col scratch in L2), so each product is one GEMM call for the
 * whole chunk instead of one small GEMM per image (measured: 2x faster
 * for the 16->32 channel 3x3 layer of a 64-image MNIST batch).  With
 * K = C_in/groups * kH * kW, L = OH * OW and g the group:
 *   cols[b, g]  [K, L]        = im2col of image b
 *   y[b, g]     [C_out/G, L]  = w[g] · cols[b, g]    (batched over b, g;
 *                               w broadcast over b; y written in place)
 * Backward, with G = dL/dy:
 *   dcols[b, g] = w[g]ᵀ · G[b, g]  (batched)     dx = col2im(dcols)
 *   dw[g]      += G[g] · cols[g]ᵀ over the chunk: one product with the
 *                 chunk's images side by side ([C_out/G, B*L] · [B*L, K]),
 *                 G copied into that order (tm__conv_regroup)
 *   db = sum of G over N, OH, OW
 * The kernels split their work so that every output element has one
 * writer and a fixed summation order, and the chunk size depends only on
 * the shapes, so results do not depend on the thread count. */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"
#include "../../cpu/cpu_nn.h"

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

/* A trusted contiguous view [d0, d1, d2] of t starting `off` elements
 * after t's first element (t is contiguous). */
static tm_tensor *cv_view3(const tm_tensor *t, int64_t off, int64_t d0,
                           int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2}, strides[3] = {d1 * d2, d2, 1};
    return tm__view_of("tm_conv2d", t, shape, strides, 3, t->offset + off);
}

/* A trusted view [d0, d1, d2, d3] of contiguous t from `off`, with the
 * first dim's stride s0 (0: the same block for every index, a broadcast). */
static tm_tensor *cv_view4(const tm_tensor *t, int64_t off, int64_t d0,
                           int64_t s0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t shape[4] = {d0, d1, d2, d3};
    int64_t strides[4] = {s0, d2 * d3, d3, 1};
    return tm__view_of("tm_conv2d", t, shape, strides, 4, t->offset + off);
}

/* The element address `off` elements into contiguous t. */
static char *cv_at(const tm_tensor *t, int64_t off)
{
    return (char *)tm_data(t) + off * (int64_t)tm_dtype_size(t->dtype);
}

/* Images per chunk: the im2col scratch holds about 2^17 elements (512 KiB
 * of F32), so it is still in L2 when the GEMM reads it (measured on the
 * 16->32 channel 3x3 layer, 64 images, forward + backward: 7.3 ms at 2^21,
 * 6.1 ms at 2^17, 9.4 ms at 2^16 and below); at least one image. */
static int64_t cv_chunk(const tm__conv_geom *q)
{
    int64_t per = q->c * q->kh * q->kw * q->oh * q->ow;
    int64_t b = per > 0 ? ((int64_t)1 << 17) / per : q->n;
    return b < 1 ? 1 : b > q->n ? q->n : b;
}

/* r = op(a) · op(b) (beta 0) or r += (beta 1) via tm_gemm on views of
 * contiguous buffers; frees the views. */
static tm_status cv_gemm(bool ta, bool tb, tm_tensor *a, tm_tensor *b,
                         double beta, tm_tensor *r)
{
    tm_status st = (a && b && r) ? tm_gemm(ta, tb, 1.0, a, b, beta, r)
                                 : tm_last_status();
    tm_free(a);
    tm_free(b);
    tm_free(r);
    return st ? st : TM_OK;
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
                             tm__conv_geom *q)
{
    const char *fn = "tm_conv2d";
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw);
    if (x->ndim != 4 || w->ndim != 4)
        return tm__errf(TM_ESHAPE, fn, "x must be [N,C,H,W] and weight "
                        "[C_out,C_in/groups,kH,kW], got shapes %s and %s",
                        sx, sw);
    *q = (tm__conv_geom){x->shape[0], x->shape[1], x->shape[2],
                         x->shape[3], w->shape[0], w->shape[2], w->shape[3],
                         0, 0, o->stride[0], o->stride[1], o->padding[0],
                         o->padding[1], o->dilation[0], o->dilation[1],
                         o->groups};
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

/* y [n, oc, oh, ow] (compute dtype, contiguous) of contiguous xc, wc. */
static tm_status cv_forward(const tm__conv_geom *q, const tm_tensor *xc,
                            const tm_tensor *wc, const tm_tensor *bc,
                            tm_tensor *y)
{
    tm_dtype dt = y->dtype;
    int64_t G = q->g, ocg = q->oc / G, L = q->oh * q->ow;
    int64_t K = q->c / G * q->kh * q->kw, B = cv_chunk(q);
    int64_t xn = q->c * q->h * q->w;
    tm_status st = TM_OK;
    /* One GEMM per chunk, batched over its images: y[b] (a view of y's
     * rows) = w · cols[b], w broadcast; small rows of cols are read in
     * place by the GEMM, and nothing is copied back. */
    tm_tensor *cols = tm_empty((int64_t[]){B, G, K, L}, 4, dt);
    if (!cols) return tm_last_status();
    for (int64_t n0 = 0; n0 < q->n && !st; n0 += B) {
        int64_t nb = q->n - n0 < B ? q->n - n0 : B;
        tm__conv_im2col(q, dt, cv_at(xc, n0 * xn), tm_data(cols), nb, false);
        st = cv_gemm(false, false, cv_view4(wc, 0, nb, 0, G, ocg, K),
                     cv_view4(cols, 0, nb, G * K * L, G, K, L), 0.0,
                     cv_view4(y, n0 * q->oc * L, nb, q->oc * L, G, ocg, L));
    }
    if (!st && bc) tm__conv_bias_add(q, dt, tm_data(y), tm_data(bc));
    tm_free(cols);
    return st;
}

static tm_status conv_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin);

tm_tensor *tm_conv2d(const tm_tensor *x, const tm_tensor *weight,
                     const tm_tensor *bias, const tm_conv2d_opts *opts)
{
    tm_conv2d_opts o = opts ? *opts : tm_conv2d_defaults();
    tm_tensor *xc = NULL, *wc = NULL, *bc = NULL, *yc = NULL, *y = NULL;
    tm__conv_geom q;
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
    if (!tm__on_cpu(x)) {
        TM_ERR(TM_EUNSUPPORTED, "device %s is not supported yet (CPU only)",
               tm_device_name(tm_device_of(x)));
        return NULL;
    }
    if (cv_check_opts(&o) || cv_geometry(x, weight, bias, &o, &q))
        return NULL;
    tm_dtype dt = cv_compute(x->dtype);
    int64_t shape[4] = {q.n, q.oc, q.oh, q.ow};
    /* The temporaries below are internal: nothing of them is recorded. */
    bool prev = tm_no_grad_begin();
    yc = tm_empty(shape, 4, dt); /* every element is written */
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
 * needed).  Shapes come from the edges. */
static tm_status conv_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    const conv_args *p = TM__AG_ARGS(n, conv_args);
    tm__scratch s = {0};
    const tm__edge *ex = &n->edges[0], *ew = &n->edges[1];
    const tm__edge *eb = n->nin > 2 ? &n->edges[2] : NULL;
    tm_dtype dt = cv_compute(ex->dtype);
    tm__conv_geom q = {ex->shape[0], ex->shape[1], ex->shape[2],
                       ex->shape[3], ew->shape[0], ew->shape[2],
                       ew->shape[3], tm_shape(g)[2], tm_shape(g)[3], p->sh,
                       p->sw, p->ph, p->pw, p->dh, p->dw, p->g};
    int64_t G = q.g, ocg = q.oc / G, L = q.oh * q.ow;
    int64_t K = q.c / G * q.kh * q.kw, xn = q.c * q.h * q.w;
    int64_t B = cv_chunk(&q);
    size_t es = tm_dtype_size(dt);
    tm_tensor *gc = tm__sc_keep(&s, cv_dense(g, dt));
    tm_tensor *cols = NULL, *gm = NULL, *wc = NULL, *xc = NULL;
    tm_tensor *dx = NULL, *dw = NULL;
    if (ex->needed || ew->needed) /* im2col / dcols scratch */
        cols = tm__sc_keep(&s, tm_empty((int64_t[]){B, G, K, L}, 4, dt));
    if (ew->needed) /* G in the [oc, nb*L] order of the dw product */
        gm = tm__sc_keep(&s, tm_empty((int64_t[]){q.oc, B * L}, 2, dt));
    if (ex->needed) {
        wc = tm__sc_keep(&s, cv_dense(tm__ag_saved(n, 1), dt));
        dx = tm__sc_keep(&s, tm_zeros(ex->shape, 4, dt));
    }
    if (ew->needed) {
        xc = tm__sc_keep(&s, cv_dense(tm__ag_saved(n, 0), dt));
        dw = tm__sc_keep(&s, tm_zeros(ew->shape, 4, dt));
    }
    for (int64_t n0 = 0; !s.st && gc && cols && n0 < q.n; n0 += B) {
        int64_t nb = q.n - n0 < B ? q.n - n0 : B;
        if (dx) { /* dcols[b] = wᵀ · G[b] (batched), then col2im */
            if (cv_gemm(true, false, cv_view4(wc, 0, nb, 0, G, ocg, K),
                        cv_view4(gc, n0 * q.oc * L, nb, q.oc * L, G, ocg,
                                 L), 0.0,
                        cv_view4(cols, 0, nb, G * K * L, G, K, L))) {
                tm__sc_keep(&s, NULL);
                break;
            }
            tm__conv_col2im(&q, dt, tm_data(cols), cv_at(dx, n0 * xn), nb);
        }
        if (dw) { /* dw += G · colsᵀ over the chunk's images: one GEMM */
            tm__conv_regroup(cv_at(gc, n0 * q.oc * L), tm_data(gm), nb, q.oc,
                             L, es);
            tm__conv_im2col(&q, dt, cv_at(xc, n0 * xn), tm_data(cols), nb,
                            true);
            if (cv_gemm(false, true, cv_view3(gm, 0, G, ocg, nb * L),
                        cv_view3(cols, 0, G, K, nb * L), 1.0,
                        cv_view3(dw, 0, G, ocg, K))) {
                tm__sc_keep(&s, NULL);
                break;
            }
        }
    }
    if (dx && !s.st) {
        tm_tensor *r = tm__sc_keep(&s, tm__sc_as(dx, ex->dtype));
        if (r && !s.st) gin[0] = tm_retain(r);
    }
    if (dw && !s.st) {
        tm_tensor *r = tm__sc_keep(&s, tm__sc_as(dw, ew->dtype));
        if (r && !s.st) gin[1] = tm_retain(r);
    }
    if (eb && eb->needed && gc) {
        tm_tensor *db = tm__sc_keep(&s, tm_empty(&q.oc, 1, dt));
        if (db) tm__conv_bias_grad(&q, dt, tm_data(gc), tm_data(db));
        tm_tensor *r = db ? tm__sc_keep(&s, tm__sc_as(db, eb->dtype)) : NULL;
        if (r && !s.st) gin[2] = tm_retain(r);
    }
    return tm__sc_done(&s, n->name);
}
