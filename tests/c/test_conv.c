/* test_conv.c — tm_conv2d, tm_max_pool2d and tm_avg_pool2d.
 *
 * Forward values are compared in F64 with direct loops written here (the
 * definitions, summed in another order than im2col + GEMM), so the
 * tolerance is rounding only: 1e-12 relative + 1e-12 absolute for sums of
 * at most ~100 products of N(0,1) values.  Gradients are central-difference
 * checks (gradcheck.h, tol 1e-6: convolution and average pooling are
 * linear; max pooling is piecewise linear and normal random data has no
 * ties, so no window's maximum is within h = 1e-6 of another value) on
 * contiguous, transposed (non-contiguous) and expanded (broadcast) inputs.
 * F32 runs check values against F64 (1e-5: F32 sums of <= 100 terms) and
 * the gradients' shape and dtype. */
#include "gradcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-6

/* ------------------------------------------------------------- helpers */

typedef struct cconf {
    int64_t n, c, h, w, oc, kh, kw;
    tm_conv2d_opts o;
    bool bias;
} cconf;

static cconf conf(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc,
                  int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                  int64_t pw, int64_t dh, int64_t dw, int64_t g, bool bias)
{
    cconf k = {n, c, h, w, oc, kh, kw, tm_conv2d_defaults(), bias};
    k.o.stride[0] = sh, k.o.stride[1] = sw;
    k.o.padding[0] = ph, k.o.padding[1] = pw;
    k.o.dilation[0] = dh, k.o.dilation[1] = dw;
    k.o.groups = g;
    return k;
}

/* The configurations every conv test runs. */
static cconf CONFS[11];
static int nconfs(void)
{
    int i = 0;
    CONFS[i++] = conf(2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, true);
    CONFS[i++] = conf(2, 3, 7, 8, 4, 3, 3, 2, 2, 0, 0, 1, 1, 1, false);
    CONFS[i++] = conf(1, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true);
    CONFS[i++] = conf(2, 2, 9, 8, 3, 3, 2, 1, 1, 0, 1, 2, 2, 1, true);
    CONFS[i++] = conf(2, 4, 6, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2, true);
    CONFS[i++] = conf(1, 3, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, false);
    CONFS[i++] = conf(2, 5, 4, 3, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, true);
    CONFS[i++] = conf(1, 4, 6, 9, 4, 2, 4, 2, 3, 1, 2, 2, 1, 2, true);
    /* kernel exactly the padded input: a 1x1 output */
    CONFS[i++] = conf(2, 2, 3, 4, 3, 5, 4, 1, 1, 1, 0, 1, 1, 1, true);
    /* stride larger than the kernel, 1x1 kernel with padding */
    CONFS[i++] = conf(1, 2, 7, 5, 2, 1, 1, 3, 2, 1, 1, 1, 1, 1, true);
    CONFS[i++] = conf(3, 6, 5, 4, 4, 2, 3, 1, 2, 1, 1, 1, 2, 2, false);
    return i;
}

/* Direct convolution: y [n, oc, oh, ow] from x, w, b (b may be NULL). */
static void ref_conv(const cconf *k, const double *x, const double *w,
                     const double *b, double *y, int64_t oh, int64_t ow)
{
    const tm_conv2d_opts *o = &k->o;
    int64_t cg = k->c / o->groups, ocg = k->oc / o->groups;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t oc = 0; oc < k->oc; oc++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double acc = b ? b[oc] : 0.0;
                    int64_t g = oc / ocg;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t i = 0; i < k->kh; i++)
                            for (int64_t j = 0; j < k->kw; j++) {
                                int64_t yy = oy * o->stride[0] -
                                             o->padding[0] + i * o->dilation[0];
                                int64_t xx = ox * o->stride[1] -
                                             o->padding[1] + j * o->dilation[1];
                                if (yy < 0 || yy >= k->h || xx < 0 ||
                                    xx >= k->w)
                                    continue;
                                int64_t c = g * cg + ci;
                                acc += x[((n * k->c + c) * k->h + yy) * k->w +
                                         xx] *
                                       w[((oc * cg + ci) * k->kh + i) * k->kw +
                                         j];
                            }
                    y[((n * k->oc + oc) * oh + oy) * ow + ox] = acc;
                }
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p,
                        int64_t d)
{
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Compares tm_conv2d(x, w, b) with ref_conv for configuration k. */
static void check_conv_values(const char *file, int line, const cconf *k,
                              const tm_tensor *x, const tm_tensor *w,
                              const tm_tensor *b)
{
    int64_t oh = out_size(k->h, k->kh, k->o.stride[0], k->o.padding[0],
                          k->o.dilation[0]);
    int64_t ow = out_size(k->w, k->kw, k->o.stride[1], k->o.padding[1],
                          k->o.dilation[1]);
    tm_tensor *y = tm_conv2d(x, w, b, &k->o);
    double *xv = tt_values(x), *wv = tt_values(w);
    double *bv = b ? tt_values(b) : NULL;
    double *want = malloc(sizeof(double) * (size_t)(k->n * k->oc * oh * ow));
    if (!y || !xv || !wv || (b && !bv) || !want) {
        tt_fail(file, line, "conv failed: %s", tm_last_error());
    } else {
        ref_conv(k, xv, wv, bv, want, oh, ow);
        tt_check_shape(file, line, y, (int64_t[]){k->n, k->oc, oh, ow}, 4);
        tt_check_values(file, line, y, want, k->n * k->oc * oh * ow, 1e-12,
                        1e-12);
    }
    free(xv), free(wv), free(bv), free(want);
    tm_free(y);
}

/* F64 leaves of configuration k (bias NULL when k has none). */
static bool conv_leaves(const cconf *k, uint64_t seed, tm_tensor **x,
                        tm_tensor **w, tm_tensor **b)
{
    *x = TT_LEAF(seed, k->n, k->c, k->h, k->w);
    *w = TT_LEAF(seed + 1, k->oc, k->c / k->o.groups, k->kh, k->kw);
    *b = k->bias ? TT_LEAF(seed + 2, k->oc) : NULL;
    return *x && *w && (!k->bias || *b);
}

/* ------------------------------------------------------- conv forward */

TEST(conv2d_matches_direct_loop_in_all_configurations)
{
    int nc = nconfs();
    for (int i = 0; i < nc; i++) {
        tm_tensor *x, *w, *b;
        if (conv_leaves(&CONFS[i], 100 + 10 * (uint64_t)i, &x, &w, &b))
            check_conv_values(__FILE__, __LINE__, &CONFS[i], x, w, b);
        else
            tt_fail(__FILE__, __LINE__, "leaves: %s", tm_last_error());
        tm_free(x), tm_free(w), tm_free(b);
    }
}

TEST(conv2d_non_contiguous_inputs_and_null_opts)
{
    /* x stored as [N, C, W, H] and seen transposed; w a step slice. */
    cconf k = conf(2, 3, 5, 6, 4, 3, 2, 1, 1, 1, 0, 1, 1, 1, true);
    tm_tensor *xs = TT_LEAF(7, 2, 3, 6, 5), *ws = TT_LEAF(8, 4, 3, 3, 4);
    tm_tensor *b = TT_LEAF(9, 4);
    tm_tensor *x = xs ? tm_transpose(xs, 2, 3) : NULL;
    tm_tensor *w = ws ? tm_slice(ws, 3, 0, TM_END, 2) : NULL;
    REQUIRE(x && w && b && !tm_is_contiguous(x) && !tm_is_contiguous(w));
    check_conv_values(__FILE__, __LINE__, &k, x, w, b);
    /* opts NULL is the defaults */
    cconf d = conf(2, 3, 5, 6, 4, 3, 2, 1, 1, 0, 0, 1, 1, 1, false);
    tm_tensor *y1 = tm_conv2d(x, w, NULL, NULL);
    tm_tensor *y2 = tm_conv2d(x, w, NULL, &d.o);
    REQUIRE(y1 && y2);
    double *v2 = tt_values(y2);
    REQUIRE(v2);
    CHECK_VALUES(y1, v2, tm_numel(y2), 0, 0);
    free(v2);
    tm_free(y1), tm_free(y2);
    tm_free(x), tm_free(w), tm_free(xs), tm_free(ws), tm_free(b);
}

TEST(conv2d_same_bits_for_any_thread_count)
{
    /* big enough for im2col and col2im to split across threads */
    cconf k = conf(2, 16, 32, 32, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, true);
    tm_tensor *x, *w, *b;
    REQUIRE(conv_leaves(&k, 300, &x, &w, &b));
    tm_tensor *y[2] = {NULL, NULL}, *gx[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        tm_set_num_threads(r ? 3 : 1);
        y[r] = tm_conv2d(x, w, b, &k.o);
        tm_tensor *l = y[r] ? tm_sum(y[r], NULL, 0, false) : NULL;
        if (l && !tm_backward(l)) gx[r] = tm_clone(tm_grad(x));
        tm_zero_grad(x), tm_zero_grad(w), tm_zero_grad(b);
        tm_free(l);
    }
    tm_set_num_threads(0);
    if (y[0] && y[1] && gx[0] && gx[1]) {
        double *v0 = tt_values(y[0]), *g0 = tt_values(gx[0]);
        if (v0 && g0) {
            CHECK_VALUES(y[1], v0, tm_numel(y[0]), 0, 0);
            CHECK_VALUES(gx[1], g0, tm_numel(gx[0]), 0, 0);
        }
        free(v0), free(g0);
    } else {
        tt_fail(__FILE__, __LINE__, "runs failed: %s", tm_last_error());
    }
    for (int r = 0; r < 2; r++) tm_free(y[r]), tm_free(gx[r]);
    tm_free(x), tm_free(w), tm_free(b);
}

TEST(conv2d_zero_batch_gives_empty_result)
{
    cconf k = conf(0, 2, 4, 4, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1, true);
    tm_tensor *x, *w, *b;
    REQUIRE(conv_leaves(&k, 400, &x, &w, &b));
    tm_tensor *y = tm_conv2d(x, w, b, &k.o);
    REQUIRE(y);
    CHECK_SHAPE(y, 0, 3, 2, 2);
    tm_free(y), tm_free(x), tm_free(w), tm_free(b);
}

/* -------------------------------------------------------- conv gradients */

enum { V_NONE, V_XT, V_XBCAST };

typedef struct gctx {
    const tm_conv2d_opts *o;
    int view; /* how f sees x */
} gctx;

static tm_tensor *f_conv(tm_tensor *const *in, void *vc)
{
    const gctx *c = vc;
    tm_tensor *x = NULL;
    if (c->view == V_XT) {
        x = tm_transpose(in[0], 2, 3);
    } else if (c->view == V_XBCAST) { /* [1, C, H, W] -> [2, C, H, W] */
        const int64_t *s = tm_shape(in[0]);
        x = tm_expand(in[0], (int64_t[]){2, s[1], s[2], s[3]}, 4);
    } else {
        x = tm_retain(in[0]);
    }
    tm_tensor *y = x ? tm_conv2d(x, in[1], in[2], c->o) : NULL;
    tm_free(x);
    return y;
}

/* Gradcheck of conv configuration k on x (+ w, b), x seen as `view`. */
static void check_conv_grad(const char *file, int line, const char *name,
                            const cconf *k, int view, uint64_t seed)
{
    gctx c = {&k->o, view};
    tm_tensor *in[3] = {NULL, NULL, NULL};
    if (view == V_XT)
        in[0] = TT_LEAF(seed, k->n, k->c, k->w, k->h);
    else
        in[0] = TT_LEAF(seed, view == V_XBCAST ? 1 : k->n, k->c, k->h, k->w);
    in[1] = TT_LEAF(seed + 1, k->oc, k->c / k->o.groups, k->kh, k->kw);
    in[2] = k->bias ? TT_LEAF(seed + 2, k->oc) : NULL;
    if (!in[0] || !in[1] || (k->bias && !in[2]))
        tt_fail(file, line, "%s: leaves: %s", name, tm_last_error());
    else
        tt_gradcheck_at(file, line, name, f_conv, &c, in, k->bias ? 3 : 2,
                        TOL);
    tm_free(in[0]), tm_free(in[1]), tm_free(in[2]);
}
#define CONV_GRAD(name, k, view, seed)                                        \
    check_conv_grad(__FILE__, __LINE__, (name), (k), (view), (seed))

TEST(grad_conv2d_basic_stride_padding_dilation)
{
    cconf a = conf(2, 2, 5, 5, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1, true);
    CONV_GRAD("basic", &a, V_NONE, 500);
    cconf s = conf(2, 2, 5, 5, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, true);
    CONV_GRAD("stride2_pad1", &s, V_NONE, 510);
    cconf d = conf(2, 3, 5, 5, 2, 2, 2, 1, 1, 1, 0, 2, 2, 1, true);
    CONV_GRAD("dilation2", &d, V_NONE, 520);
    cconf r = conf(1, 2, 5, 6, 2, 2, 3, 2, 1, 0, 1, 1, 2, 1, false);
    CONV_GRAD("non_square_no_bias", &r, V_NONE, 530);
}

TEST(grad_conv2d_groups_and_1x1)
{
    cconf g = conf(2, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2, true);
    CONV_GRAD("groups2", &g, V_NONE, 600);
    cconf dw = conf(2, 3, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, true);
    CONV_GRAD("depthwise", &dw, V_NONE, 610);
    cconf one = conf(2, 3, 4, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1, true);
    CONV_GRAD("1x1", &one, V_NONE, 620);
}

TEST(grad_conv2d_non_contiguous_and_broadcast_input)
{
    cconf k = conf(2, 2, 5, 4, 3, 3, 2, 1, 2, 1, 1, 1, 1, 1, true);
    CONV_GRAD("x_transposed", &k, V_XT, 700);
    CONV_GRAD("x_expanded", &k, V_XBCAST, 710);
}

TEST(grad_conv2d_bias_only)
{
    /* only b requires grad: d sum(y) / db[o] = N * OH * OW = 2 * 3 * 2 */
    cconf k = conf(2, 2, 5, 4, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1, true);
    tm_tensor *x, *w, *b;
    REQUIRE(conv_leaves(&k, 1200, &x, &w, &b));
    REQUIRE(!tm_requires_grad_(x, false) && !tm_requires_grad_(w, false));
    tm_tensor *y = tm_conv2d(x, w, b, &k.o);
    tm_tensor *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    REQUIRE(l && !tm_backward(l));
    CHECK(tm_grad(x) == NULL && tm_grad(w) == NULL);
    CHECK_VALUES(tm_grad(b), ((double[]){12, 12, 12}), 3, 0, 0);
    tm_free(l), tm_free(y), tm_free(x), tm_free(w), tm_free(b);
}

/* ------------------------------------------------------------ pooling */

/* Direct pooling of x [planes, h, w] into y [planes, oh, ow]. */
static void ref_pool(bool is_max, const tm_pool2d_opts *o, int64_t planes,
                     int64_t h, int64_t w, const double *x, double *y,
                     int64_t oh, int64_t ow)
{
    int64_t sh = o->stride[0] ? o->stride[0] : o->kernel[0];
    int64_t sw = o->stride[1] ? o->stride[1] : o->kernel[1];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                double m = -INFINITY, s = 0;
                int64_t cnt = 0;
                for (int64_t i = 0; i < o->kernel[0]; i++)
                    for (int64_t j = 0; j < o->kernel[1]; j++) {
                        int64_t yy = oy * sh - o->padding[0] + i;
                        int64_t xx = ox * sw - o->padding[1] + j;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                        double v = x[(p * h + yy) * w + xx];
                        m = v > m ? v : m;
                        s += v;
                        cnt++;
                    }
                int64_t div = o->count_include_pad
                                  ? o->kernel[0] * o->kernel[1] : cnt;
                y[(p * oh + oy) * ow + ox] = is_max ? m : s / (double)div;
            }
}

static tm_pool2d_opts popts(int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                            int64_t ph, int64_t pw, bool include_pad)
{
    tm_pool2d_opts o = tm_pool2d_defaults();
    o.kernel[0] = kh, o.kernel[1] = kw;
    o.stride[0] = sh, o.stride[1] = sw;
    o.padding[0] = ph, o.padding[1] = pw;
    o.count_include_pad = include_pad;
    return o;
}

static tm_pool2d_opts POPTS[6];
static int npopts(void)
{
    int i = 0;
    POPTS[i++] = tm_pool2d_defaults();           /* 2x2, stride 2 */
    POPTS[i++] = popts(3, 3, 2, 2, 1, 1, true);  /* padded, overlapping */
    POPTS[i++] = popts(3, 3, 2, 2, 1, 1, false); /* pad not counted */
    POPTS[i++] = popts(2, 3, 1, 2, 1, 1, true);  /* non-square */
    POPTS[i++] = popts(3, 2, 0, 0, 0, 1, false); /* stride = kernel */
    POPTS[i++] = popts(1, 1, 2, 1, 0, 0, true);  /* 1x1 subsampling */
    return i;
}

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p)
{
    return (in + 2 * p - k) / (s ? s : k) + 1;
}

TEST(pool2d_matches_direct_loop)
{
    int np = npopts();
    for (int mx = 0; mx < 2; mx++)
        for (int i = 0; i < np; i++) {
            const tm_pool2d_opts *o = &POPTS[i];
            /* [2, 3, 7, 7]; the second pass sees it transposed */
            tm_tensor *xs = TT_LEAF(800 + (uint64_t)i, 2, 3, 7, 7);
            for (int t = 0; t < 2 && xs; t++) {
                tm_tensor *x = t ? tm_transpose(xs, 2, 3) : tm_retain(xs);
                int64_t oh = pool_out(7, o->kernel[0], o->stride[0],
                                      o->padding[0]);
                int64_t ow = pool_out(7, o->kernel[1], o->stride[1],
                                      o->padding[1]);
                tm_tensor *y = mx ? tm_max_pool2d(x, o) : tm_avg_pool2d(x, o);
                double *xv = x ? tt_values(x) : NULL;
                double *want = malloc(sizeof(double) * (size_t)(6 * oh * ow));
                if (y && xv && want) {
                    ref_pool(mx, o, 6, 7, 7, xv, want, oh, ow);
                    CHECK_SHAPE(y, 2, 3, oh, ow);
                    CHECK_VALUES(y, want, 6 * oh * ow, 1e-12, 1e-12);
                } else {
                    tt_fail(__FILE__, __LINE__, "pool %d/%d: %s", mx, i,
                            tm_last_error());
                }
                free(xv), free(want);
                tm_free(y), tm_free(x);
            }
            tm_free(xs);
        }
}

TEST(max_pool2d_propagates_nan_and_routes_gradient_to_first_max)
{
    /* one 2x2 window per output: [1, nan; 3, 2] and a tie [5, 5; 1, 0] */
    double v[8] = {1, NAN, 5, 5, 3, 2, 1, 0};
    tm_tensor *x = tt_tensor(v, (int64_t[]){1, 1, 2, 4}, 4, TM_F64);
    REQUIRE(x && !tm_requires_grad_(x, true));
    tm_tensor *y = tm_max_pool2d(x, NULL);
    REQUIRE(y);
    CHECK_SHAPE(y, 1, 1, 1, 2);
    double got[2];
    REQUIRE(!tm_copy_to_buffer(y, got, sizeof got, TM_F64));
    CHECK(isnan(got[0]));
    CHECK_NEAR(got[1], 5, 0);
    CHECK(strcmp(tm_grad_fn_name(y), "MaxPool2DBackward") == 0);
    tm_tensor *l = tm_sum(y, NULL, 0, false);
    REQUIRE(l && !tm_backward(l));
    double want[8] = {0, 1, 1, 0, 0, 0, 0, 0};
    CHECK_VALUES(tm_grad(x), want, 8, 0, 0);
    tm_free(l), tm_free(y), tm_free(x);
}

typedef struct pctx {
    const tm_pool2d_opts *o;
    bool is_max, transposed;
} pctx;

static tm_tensor *f_pool(tm_tensor *const *in, void *vc)
{
    const pctx *c = vc;
    tm_tensor *x = c->transposed ? tm_transpose(in[0], 2, 3)
                                 : tm_retain(in[0]);
    tm_tensor *y = !x ? NULL : c->is_max ? tm_max_pool2d(x, c->o)
                                         : tm_avg_pool2d(x, c->o);
    tm_free(x);
    return y;
}

TEST(grad_pool2d_max_and_avg)
{
    int np = npopts();
    for (int mx = 0; mx < 2; mx++)
        for (int i = 0; i < np; i++)
            for (int t = 0; t < 2; t++) {
                pctx c = {&POPTS[i], mx, t};
                tm_tensor *x = TT_LEAF(900 + 10 * (uint64_t)i + (uint64_t)t,
                                       2, 2, 5, 6);
                if (!x) {
                    tt_fail(__FILE__, __LINE__, "leaf: %s", tm_last_error());
                    continue;
                }
                GRADCHECK(mx ? "max_pool2d" : "avg_pool2d", f_pool, &c, &x,
                          1, TOL);
                tm_free(x);
            }
}

/* ---------------------------------------------------------------- F32 */

/* out = f(x32 ...) vs the F64 result; backward gives F32 gradients of the
 * inputs' shapes. */
TEST(conv_and_pool_f32_values_and_gradients)
{
    cconf k = conf(2, 4, 6, 5, 4, 3, 3, 2, 1, 1, 1, 1, 2, 2, true);
    tm_tensor *x, *w, *b;
    REQUIRE(conv_leaves(&k, 1000, &x, &w, &b));
    bool prev = tm_no_grad_begin();
    tm_tensor *y64 = tm_conv2d(x, w, b, &k.o);
    tm_tensor *x32 = tm_to_dtype(x, TM_F32), *w32 = tm_to_dtype(w, TM_F32);
    tm_tensor *b32 = tm_to_dtype(b, TM_F32);
    tm_tensor *p64 = tm_max_pool2d(x, NULL), *a64 = tm_avg_pool2d(x, NULL);
    tm_no_grad_end(prev);
    tm_tensor *y32 = NULL, *p32 = NULL, *a32 = NULL, *l = NULL;
    double *vy = NULL, *vp = NULL, *va = NULL;
    if (!y64 || !x32 || !w32 || !b32 || !p64 || !a64 ||
        tm_requires_grad_(x32, true) || tm_requires_grad_(w32, true) ||
        tm_requires_grad_(b32, true))
        goto fail;
    y32 = tm_conv2d(x32, w32, b32, &k.o);
    p32 = tm_max_pool2d(x32, NULL);
    a32 = tm_avg_pool2d(x32, NULL);
    vy = tt_values(y64), vp = tt_values(p64), va = tt_values(a64);
    if (!y32 || !p32 || !a32 || !vy || !vp || !va) goto fail;
    CHECK(tm_dtype_of(y32) == TM_F32 && tm_dtype_of(p32) == TM_F32);
    CHECK_VALUES(y32, vy, tm_numel(y64), 1e-5, 1e-5);
    CHECK_VALUES(p32, vp, tm_numel(p64), 1e-6, 1e-6);
    CHECK_VALUES(a32, va, tm_numel(a64), 1e-5, 1e-5);
    CHECK(strcmp(tm_grad_fn_name(y32), "ConvolutionBackward") == 0);
    CHECK(strcmp(tm_grad_fn_name(a32), "AvgPool2DBackward") == 0);
    {
        tm_tensor *s1 = tm_sum(y32, NULL, 0, false);
        tm_tensor *s2 = tm_sum(p32, NULL, 0, false);
        tm_tensor *s3 = tm_sum(a32, NULL, 0, false);
        tm_tensor *s12 = s1 && s2 ? tm_add(s1, s2) : NULL;
        l = s12 && s3 ? tm_add(s12, s3) : NULL;
        tm_free(s1), tm_free(s2), tm_free(s3), tm_free(s12);
    }
    if (!l || tm_backward(l)) goto fail;
    tm_tensor *ins[3] = {x32, w32, b32};
    for (int i = 0; i < 3; i++) {
        tm_tensor *g = tm_grad(ins[i]);
        CHECK(g && tm_dtype_of(g) == TM_F32 &&
              tm_ndim(g) == tm_ndim(ins[i]) &&
              !memcmp(tm_shape(g), tm_shape(ins[i]),
                      sizeof(int64_t) * (size_t)tm_ndim(g)));
    }
    goto done;
fail:
    tt_fail(__FILE__, __LINE__, "F32 run failed: %s", tm_last_error());
done:
    free(vy), free(vp), free(va);
    tm_free(l), tm_free(y32), tm_free(p32), tm_free(a32);
    tm_free(y64), tm_free(p64), tm_free(a64);
    tm_free(x32), tm_free(w32), tm_free(b32);
    tm_free(x), tm_free(w), tm_free(b);
}

TEST(conv_and_pool_run_in_f16_and_bf16)
{
    cconf k = conf(1, 2, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true);
    tm_tensor *x, *w, *b;
    REQUIRE(conv_leaves(&k, 1100, &x, &w, &b));
    tm_dtype dts[2] = {TM_F16, TM_BF16};
    for (int i = 0; i < 2; i++) {
        bool prev = tm_no_grad_begin();
        tm_tensor *xh = tm_to_dtype(x, dts[i]), *wh = tm_to_dtype(w, dts[i]);
        tm_tensor *bh = tm_to_dtype(b, dts[i]);
        tm_no_grad_end(prev);
        tm_tensor *y = xh && wh && bh ? tm_conv2d(xh, wh, bh, &k.o) : NULL;
        tm_tensor *p = xh ? tm_max_pool2d(xh, NULL) : NULL;
        CHECK(y && tm_dtype_of(y) == dts[i]);
        CHECK(p && tm_dtype_of(p) == dts[i]);
        tm_free(y), tm_free(p), tm_free(xh), tm_free(wh), tm_free(bh);
    }
    tm_free(x), tm_free(w), tm_free(b);
}

/* -------------------------------------------------------------- errors */

TEST(conv2d_errors_name_the_problem)
{
    tm_tensor *x = tm_zeros((int64_t[]){1, 4, 5, 5}, 4, TM_F64);
    tm_tensor *w = tm_zeros((int64_t[]){6, 2, 3, 3}, 4, TM_F64);
    tm_tensor *w4 = tm_zeros((int64_t[]){6, 4, 3, 3}, 4, TM_F64);
    tm_tensor *big = tm_zeros((int64_t[]){6, 4, 7, 3}, 4, TM_F64);
    tm_tensor *b = tm_zeros((int64_t[]){5}, 1, TM_F64);
    tm_tensor *xi = tm_zeros((int64_t[]){1, 4, 5, 5}, 4, TM_I32);
    tm_tensor *wi = tm_zeros((int64_t[]){6, 4, 3, 3}, 4, TM_I32);
    tm_tensor *w32 = tm_zeros((int64_t[]){6, 4, 3, 3}, 4, TM_F32);
    tm_tensor *x3 = tm_zeros((int64_t[]){4, 5, 5}, 3, TM_F64);
    REQUIRE(x && w && w4 && big && b && xi && wi && w32 && x3);
    tm_conv2d_opts o = tm_conv2d_defaults();
    CHECK_NULL_ERR(tm_conv2d(NULL, w4, NULL, NULL), TM_EINVAL, "x");
    CHECK_NULL_ERR(tm_conv2d(x, NULL, NULL, NULL), TM_EINVAL, "weight");
    CHECK_NULL_ERR(tm_conv2d(xi, wi, NULL, NULL), TM_EDTYPE,
                   "tm_conv2d: dtype i32 is not supported");
    CHECK_NULL_ERR(tm_conv2d(x, w32, NULL, NULL), TM_EDTYPE,
                   "must have one dtype, got f64, f32");
    CHECK_NULL_ERR(tm_conv2d(x3, w4, NULL, NULL), TM_ESHAPE,
                   "x must be [N,C,H,W]");
    o.groups = 3;
    CHECK_NULL_ERR(tm_conv2d(x, w, NULL, &o), TM_ESHAPE,
                   "input channels 4 and output channels 6 must both be "
                   "divisible by groups 3");
    o.groups = 1;
    CHECK_NULL_ERR(tm_conv2d(x, w, NULL, &o), TM_ESHAPE,
                   "expects 2 input channels per group");
    CHECK_NULL_ERR(tm_conv2d(x, w4, b, NULL), TM_ESHAPE,
                   "bias has shape [5], expected [6]");
    CHECK_NULL_ERR(tm_conv2d(x, big, NULL, NULL), TM_ESHAPE,
                   "kernel 7x3 (dilated 7x3) does not fit the padded input "
                   "5x5");
    o.dilation[0] = 3;
    CHECK_NULL_ERR(tm_conv2d(x, w4, NULL, &o), TM_ESHAPE,
                   "(dilated 7x3)");
    o = tm_conv2d_defaults();
    o.stride[1] = 0;
    CHECK_NULL_ERR(tm_conv2d(x, w4, NULL, &o), TM_EINVAL,
                   "stride must be >= 1, got {1,0}");
    o = tm_conv2d_defaults();
    o.padding[0] = -1;
    CHECK_NULL_ERR(tm_conv2d(x, w4, NULL, &o), TM_EINVAL, "padding");
    o = tm_conv2d_defaults();
    o.dilation[1] = 0;
    CHECK_NULL_ERR(tm_conv2d(x, w4, NULL, &o), TM_EINVAL, "dilation");
    o = tm_conv2d_defaults();
    o.groups = 0;
    CHECK_NULL_ERR(tm_conv2d(x, w4, NULL, &o), TM_EINVAL,
                   "groups must be >= 1, got 0");
    tm_free(x), tm_free(w), tm_free(w4), tm_free(big), tm_free(b);
    tm_free(xi), tm_free(wi), tm_free(w32), tm_free(x3);
}

TEST(pool2d_errors_name_the_problem)
{
    tm_tensor *x = tm_zeros((int64_t[]){1, 2, 4, 4}, 4, TM_F64);
    tm_tensor *x2 = tm_zeros((int64_t[]){4, 4}, 2, TM_F64);
    tm_tensor *xb = tm_zeros((int64_t[]){1, 2, 4, 4}, 4, TM_BOOL);
    REQUIRE(x && x2 && xb);
    CHECK_NULL_ERR(tm_max_pool2d(NULL, NULL), TM_EINVAL, "tm_max_pool2d");
    CHECK_NULL_ERR(tm_avg_pool2d(xb, NULL), TM_EDTYPE,
                   "tm_avg_pool2d: dtype bool is not supported");
    CHECK_NULL_ERR(tm_max_pool2d(x2, NULL), TM_ESHAPE,
                   "x must be 3D or 4D (batch mode), got shape [4,4]");
    tm_pool2d_opts o = popts(5, 2, 0, 0, 0, 0, true);
    CHECK_NULL_ERR(tm_avg_pool2d(x, &o), TM_ESHAPE,
                   "spatial dim 0 of size 4 gives output size 0");
    o = popts(3, 3, 1, 1, 2, 0, true);
    CHECK_NULL_ERR(tm_max_pool2d(x, &o), TM_EINVAL,
                   "padding 2 of spatial dim 0 must be >= 0 and at most "
                   "half of the kernel size 3");
    o = popts(0, 3, 1, 1, 0, 0, true);
    CHECK_NULL_ERR(tm_max_pool2d(x, &o), TM_EINVAL, "kernel must be >= 1");
    o = popts(2, 2, -1, 1, 0, 0, true);
    CHECK_NULL_ERR(tm_avg_pool2d(x, &o), TM_EINVAL, "stride must be >= 1");
    tm_free(x), tm_free(x2), tm_free(xb);
}

/* --------------------------------------------------- out of memory */

/* Conv (with grad), both pools, backward, and an F16 forward. */
static tm_status oom_sequence(void)
{
    tm_tensor *t[12] = {0};
    tm_status st = TM_OK;
    tm_conv2d_opts o = tm_conv2d_defaults();
    o.padding[0] = o.padding[1] = 1;
    o.groups = 2;
    tm_pool2d_opts po = popts(3, 3, 2, 2, 1, 1, false);
    if (!(t[0] = TT_LEAF(1, 2, 4, 5, 5)) || !(t[1] = TT_LEAF(2, 4, 2, 3, 3)) ||
        !(t[2] = TT_LEAF(3, 4)) || !(t[3] = tm_conv2d(t[0], t[1], t[2], &o)) ||
        !(t[4] = tm_max_pool2d(t[3], NULL)) ||
        !(t[5] = tm_avg_pool2d(t[3], &po)) ||
        !(t[6] = tm_sum(t[4], NULL, 0, false)) ||
        !(t[7] = tm_sum(t[5], NULL, 0, false)) ||
        !(t[8] = tm_add(t[6], t[7])))
        goto fail;
    if ((st = tm_backward(t[8]))) goto done;
    bool prev = tm_no_grad_begin();
    t[9] = tm_to_dtype(t[0], TM_F16);
    t[10] = tm_to_dtype(t[1], TM_F16);
    tm_no_grad_end(prev);
    if (!t[9] || !t[10] || !(t[11] = tm_conv2d(t[9], t[10], NULL, &o)))
        goto fail;
    goto done;
fail:
    st = tm_last_status();
done:
    for (int i = 0; i < 12; i++) tm_free(t[i]);
    return st;
}

TEST(conv_and_pool_survive_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(oom_sequence, 20);
}
