/* conv.c — tm_conv2d: validation, im2col / col2im on the CPU, the matrix
 * products through tm_gemm, and its backward ("ConvolutionBackward").
 *
 * Per image n and group g (K = C_in/groups * kH * kW, L = OH * OW):
 *   cols[g]  [K, L]         = im2col(x[n], group g's channels)
 *   y[n, g]  [C_out/G, L]   = w[g] [C_out/G, K] · cols[g]
 * Backward, with G = dL/dy:
 *   dcols[g] = w[g]ᵀ · G[n, g]      dx[n] = col2im(dcols)
 *   dw[g]   += G[n, g] · cols[g]ᵀ   db = sum of G over N, OH, OW
 * The three products are one batched tm_gemm each (batch = groups).
 * im2col and col2im run on the thread pool, split by rows / channels, so
 * every output element has one writer and a fixed summation order. */
#include "autograd_impl.h"
#include "grad_scratch.h"

#include <string.h>

tm_conv2d_opts tm_conv2d_defaults(void)
{
    tm_conv2d_opts o = {{1, 1}, {0, 0}, {1, 1}, 1};
    return o;
}

/* Geometry of one convolution. */
typedef struct cv_geom {
    int64_t n, c, h, w;   /* x [n, c, h, w] */
    int64_t oc, kh, kw;   /* weight [oc, c / g, kh, kw] */
    int64_t oh, ow;       /* y [n, oc, oh, ow] */
    int64_t sh, sw, ph, pw, dh, dw, g;
} cv_geom;

/* ---------------------------------------------------- im2col / col2im */

typedef struct cv_job {
    const cv_geom *q;
    const void *src; /* x[n] [c, h, w] (im2col) or dcols [c*kh*kw, L] */
    void *dst;       /* cols [c*kh*kw, L] (im2col) or dx[n] [c, h, w] */
} cv_job;

/* T is float or double; S the suffix of the generated functions. */
#define CV_DEFINE(T, S)                                                       \
    /* Rows [r0, r1) of cols: row r = (c*kh + i)*kw + j holds              \
     * x[c, oy*sh - ph + i*dh, ox*sw - pw + j*dw] (0 outside) at oy*ow+ox. */ \
    static void im2col_##S(int64_t r0, int64_t r1, void *vj)                  \
    {                                                                         \
        const cv_job *jb = vj;                                                \
        const cv_geom *q = jb->q;                                             \
        const T *x = jb->src;                                                 \
        T *cols = jb->dst;                                                    \
        int64_t L = q->oh * q->ow;                                            \
        for (int64_t r = r0; r < r1; r++) {                                   \
            int64_t j = r % q->kw, i = (r / q->kw) % q->kh;                   \
            int64_t c = r / (q->kw * q->kh);                                  \
            const T *xc = x + c * q->h * q->w;                                \
            T *row = cols + r * L;                                            \
            for (int64_t oy = 0; oy < q->oh; oy++) {                          \
                int64_t y = oy * q->sh - q->ph + i * q->dh;                   \
                T *o = row + oy * q->ow;                                      \
                if (y < 0 || y >= q->h) {                                     \
                    for (int64_t ox = 0; ox < q->ow; ox++) o[ox] = 0;         \
                    continue;                                                 \
                }                                                             \
                const T *xr = xc + y * q->w;                                  \
                int64_t x0 = j * q->dw - q->pw;                               \
                for (int64_t ox = 0; ox < q->ow; ox++) {                      \
                    int64_t xx = x0 + ox * q->sw;                             \
                    o[ox] = (xx >= 0 && xx < q->w) ? xr[xx] : (T)0;           \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    /* Channels [c0, c1) of dx[n] += the dcols entries that im2col took     \
     * from them, in row order. */                                           \
    static void col2im_##S(int64_t c0, int64_t c1, void *vj)                  \
    {                                                                         \
        const cv_job *jb = vj;                                                \
        const cv_geom *q = jb->q;                                             \
        const T *cols = jb->src;                                              \
        T *dx = jb->dst;                                                      \
        int64_t L = q->oh * q->ow;                                            \
        for (int64_t c = c0; c < c1; c++) {                                   \
            T *xc = dx + c * q->h * q->w;                                     \
            for (int64_t i = 0; i < q->kh; i++)                               \
                for (int64_t j = 0; j < q->kw; j++) {                         \
                    const T *row = cols + ((c * q->kh + i) * q->kw + j) * L;  \
                    for (int64_t oy = 0; oy < q->oh; oy++) {                  \
                        int64_t y = oy * q->sh - q->ph + i * q->dh;           \
                        if (y < 0 || y >= q->h) continue;                     \
                        T *xr = xc + y * q->w;                                \
                        const T *o = row + oy * q->ow;                        \
                        int64_t x0 = j * q->dw - q->pw;                       \
                        for (int64_t ox = 0; ox < q->ow; ox++) {              \
                            int64_t xx = x0 + ox * q->sw;                     \
                            if (xx >= 0 && xx < q->w) xr[xx] += o[ox];        \
                        }                                                     \
                    }                                                         \
                }                                                             \
        }                                                                     \
    }

CV_DEFINE(float, f32)
CV_DEFINE(double, f64)
#undef CV_DEFINE

/* Work items of at least this many elements per thread. */
static int64_t cv_grain(int64_t per_item)
{
    int64_t g = 32768 / (per_item > 0 ? per_item : 1);
    return g > 0 ? g : 1;
}

/* cols [c*kh*kw, L] = im2col of image x [c, h, w] (dtype dt: F32/F64). */
static void cv_im2col(const cv_geom *q, tm_dtype dt, const void *x,
                      void *cols)
{
    cv_job jb = {q, x, cols};
    int64_t rows = q->c * q->kh * q->kw;
    tm__parallel_for(rows, cv_grain(q->oh * q->ow),
                     dt == TM_F64 ? im2col_f64 : im2col_f32, &jb);
}

/* dx [c, h, w] += col2im of dcols [c*kh*kw, L]. */
static void cv_col2im(const cv_geom *q, tm_dtype dt, const void *dcols,
                      void *dx)
{
    cv_job jb = {q, dcols, dx};
    tm__parallel_for(q->c, cv_grain(q->kh * q->kw * q->oh * q->ow),
                     dt == TM_F64 ? col2im_f64 : col2im_f32, &jb);
}

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
    tm_tensor *a = tm__gs_as(t, dt);
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

/* The element address `off` elements into contiguous t. */
static char *cv_at(const tm_tensor *t, int64_t off)
{
    return (char *)tm_data(t) + off * (int64_t)tm_dtype_size(t->dtype);
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
                             cv_geom *q)
{
    const char *fn = "tm_conv2d";
    char sx[TM_SHAPE_BUF], sw[TM_SHAPE_BUF], sb[TM_SHAPE_BUF];
    tm__fmt_shape(x->shape, x->ndim, sx, sizeof sx);
    tm__fmt_shape(w->shape, w->ndim, sw, sizeof sw);
    if (x->ndim != 4 || w->ndim != 4)
        return tm__errf(TM_ESHAPE, fn, "x must be [N,C,H,W] and weight "
                        "[C_out,C_in/groups,kH,kW], got shapes %s and %s",
                        sx, sw);
    *q = (cv_geom){x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                   w->shape[0], w->shape[2], w->shape[3], 0, 0,
                   o->stride[0], o->stride[1], o->padding[0], o->padding[1],
                   o->dilation[0], o->dilation[1], o->groups};
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
static tm_status cv_forward(const cv_geom *q, const tm_tensor *xc,
                            const tm_tensor *wc, const tm_tensor *bc,
                            tm_tensor *y)
{
    tm_dtype dt = y->dtype;
    int64_t G = q->g, ocg = q->oc / G, L = q->oh * q->ow;
    int64_t K = q->c / G * q->kh * q->kw;
    tm_status st = TM_OK;
    tm_tensor *cols = tm_empty((int64_t[]){G, K, L}, 3, dt);
    if (!cols) return tm_last_status();
    for (int64_t n = 0; n < q->n && !st; n++) {
        cv_im2col(q, dt, cv_at(xc, n * q->c * q->h * q->w), tm_data(cols));
        st = cv_gemm(false, false, cv_view3(wc, 0, G, ocg, K),
                     tm_retain(cols), 0.0,
                     cv_view3(y, n * q->oc * L, G, ocg, L));
    }
    if (!st && bc) {
        for (int64_t n = 0; n < q->n; n++)
            for (int64_t o = 0; o < q->oc; o++) {
                int64_t off = (n * q->oc + o) * L;
                if (dt == TM_F64) {
                    double *p = (double *)cv_at(y, off);
                    double bv = ((const double *)tm_data(bc))[o];
                    for (int64_t l = 0; l < L; l++) p[l] += bv;
                } else {
                    float *p = (float *)cv_at(y, off);
                    float bv = ((const float *)tm_data(bc))[o];
                    for (int64_t l = 0; l < L; l++) p[l] += bv;
                }
            }
    }
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
    cv_geom q;
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
    if (tm_device_of(x) != TM_CPU) {
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
    yc = tm_zeros(shape, 4, dt);
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
    int nin = bias ? 3 : 2;
    if (tm__ag_needed(nin, ins)) {
        tm__node *nd = tm__ag_node("ConvolutionBackward", conv_backward,
                                   nin, ins);
        if (!nd) goto fail_y;
        int64_t p[7] = {q.sh, q.sw, q.ph, q.pw, q.dh, q.dw, q.g};
        memcpy(nd->i, p, sizeof p);
        if ((nd->edges[1].needed && tm__ag_save(nd, 0, x)) ||
            (nd->edges[0].needed && tm__ag_save(nd, 1, weight))) {
            tm__ag_node_free(nd);
            goto fail_y;
        }
        if (tm__ag_attach(nd, y)) goto fail_y;
    }
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
 * needed); i[] = stride, padding, dilation (h, w each), groups.  Shapes
 * come from the edges. */
static tm_status conv_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    tm__gs s = {0};
    const tm__edge *ex = &n->edges[0], *ew = &n->edges[1];
    const tm__edge *eb = n->nin > 2 ? &n->edges[2] : NULL;
    tm_dtype dt = cv_compute(ex->dtype);
    cv_geom q = {ex->shape[0], ex->shape[1], ex->shape[2], ex->shape[3],
                 ew->shape[0], ew->shape[2], ew->shape[3],
                 tm_shape(g)[2], tm_shape(g)[3], n->i[0], n->i[1], n->i[2],
                 n->i[3], n->i[4], n->i[5], n->i[6]};
    int64_t G = q.g, ocg = q.oc / G, L = q.oh * q.ow;
    int64_t K = q.c / G * q.kh * q.kw, xn = q.c * q.h * q.w;
    tm_tensor *gc = tm__gs_keep(&s, cv_dense(g, dt));
    tm_tensor *cols = NULL; /* im2col scratch, for dx and dw only */
    if (ex->needed || ew->needed)
        cols = tm__gs_keep(&s, tm_empty((int64_t[]){G, K, L}, 3, dt));
    if (ex->needed && gc && cols) {
        tm_tensor *wc = tm__gs_keep(&s, cv_dense(tm__ag_saved(n, 1), dt));
        tm_tensor *dx = tm__gs_keep(&s, tm_zeros(ex->shape, 4, dt));
        for (int64_t i = 0; wc && dx && i < q.n; i++) {
            if (cv_gemm(true, false, cv_view3(wc, 0, G, ocg, K),
                        cv_view3(gc, i * q.oc * L, G, ocg, L), 0.0,
                        tm_retain(cols))) {
                tm__gs_keep(&s, NULL);
                break;
            }
            cv_col2im(&q, dt, tm_data(cols), cv_at(dx, i * xn));
        }
        tm_tensor *r = dx ? tm__gs_keep(&s, tm__gs_as(dx, ex->dtype)) : NULL;
        if (r && !s.st) gin[0] = tm_retain(r);
    }
    if (ew->needed && gc && cols) {
        tm_tensor *xc = tm__gs_keep(&s, cv_dense(tm__ag_saved(n, 0), dt));
        tm_tensor *dw = tm__gs_keep(&s, tm_zeros(ew->shape, 4, dt));
        for (int64_t i = 0; xc && dw && i < q.n; i++) {
            cv_im2col(&q, dt, cv_at(xc, i * xn), tm_data(cols));
            if (cv_gemm(false, true, cv_view3(gc, i * q.oc * L, G, ocg, L),
                        tm_retain(cols), 1.0, cv_view3(dw, 0, G, ocg, K))) {
                tm__gs_keep(&s, NULL);
                break;
            }
        }
        tm_tensor *r = dw ? tm__gs_keep(&s, tm__gs_as(dw, ew->dtype)) : NULL;
        if (r && !s.st) gin[1] = tm_retain(r);
    }
    if (eb && eb->needed && gc) {
        int dims[3] = {0, 2, 3};
        tm_tensor *db = tm__gs_keep(&s, tm_sum(gc, dims, 3, false));
        tm_tensor *r = db ? tm__gs_keep(&s, tm__gs_as(db, eb->dtype)) : NULL;
        if (r && !s.st) gin[2] = tm_retain(r);
    }
    return tm__gs_done(&s, n->name);
}
