/* test_conv_nd.c — tm_conv (1-D, 2-D with 'same' / 'valid', 3-D) and
 * tm_conv_transpose (1-D, 2-D, 3-D).
 *
 * Forward values are compared in F64 with direct loops written here over
 * 3 spatial slots (a convolution reads x at o*s - p + k*d; a transposed
 * one scatters x[i] * w[k] to i*s - p + k*d), a different summation
 * order from im2col + GEMM, so the tolerance is rounding only: 1e-12
 * relative + 1e-12 absolute for sums of at most ~200 products of N(0,1)
 * values.  Gradients are central-difference checks (gradcheck.h, tol
 * 1e-6: both ops are linear in each input) on contiguous and
 * transposed (non-contiguous) x. */
#include "gradcheck.h"

#include <stdlib.h>
#include <string.h>

#define TOL 1e-6

/* One case: nd spatial dims, sizes in slots (leading ones 1). */
typedef struct ncase {
    int nd;
    bool transpose, bias, unbatched;
    int64_t n, c, oc, in[3], k[3];
    int64_t s[3], p[3], dl[3], op[3], g;
    tm_conv_pad_mode mode;
} ncase;

/* [a, b, the last nd slots of v] into shape; its rank. */
static int shape_of(const ncase *q, int64_t a, int64_t b, const int64_t *v,
                    int64_t *shape)
{
    int nd = 0;
    shape[nd++] = a;
    shape[nd++] = b;
    for (int i = 3 - q->nd; i < 3; i++) shape[nd++] = v[i];
    return nd;
}

static void out_slots(const ncase *q, int64_t *out, int64_t *pad)
{
    for (int i = 0; i < 3; i++) {
        int64_t ek = q->dl[i] * (q->k[i] - 1) + 1;
        pad[i] = q->p[i];
        if (q->transpose) {
            out[i] = (q->in[i] - 1) * q->s[i] - 2 * q->p[i] + ek + q->op[i];
        } else if (q->mode == TM_CONV_PAD_SAME) {
            pad[i] = (ek - 1) / 2;
            out[i] = q->in[i];
        } else {
            if (q->mode == TM_CONV_PAD_VALID) pad[i] = 0;
            out[i] = (q->in[i] + 2 * pad[i] - ek) / q->s[i] + 1;
        }
    }
}

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* y (n, C_out, out) from x, w, b by the definitions. */
static void ref(const ncase *q, const double *x, const double *w,
                const double *b, double *y, const int64_t *out,
                const int64_t *pad)
{
    int64_t cout = q->oc, g = q->g;
    int64_t cg = q->c / g, ocg = cout / g, L = prod3(out), X = prod3(q->in);
    int64_t K = prod3(q->k);
    for (int64_t i = 0; i < q->n * cout * L; i++)
        y[i] = b ? b[(i / L) % cout] : 0;
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t ci = 0; ci < q->c; ci++)
            for (int64_t col = 0; col < ocg; col++)
                for (int64_t kk = 0; kk < K; kk++) {
                    int64_t gi = ci / cg, co = gi * ocg + col;
                    int64_t kz = kk / (q->k[1] * q->k[2]);
                    int64_t ky = kk / q->k[2] % q->k[1], kx = kk % q->k[2];
                    double wv = q->transpose
                                    ? w[(ci * ocg + col) * K + kk]
                                    : w[(co * cg + ci % cg) * K + kk];
                    /* a pair (input position, output position) per
                     * output (conv) or input (transposed) position */
                    int64_t np = q->transpose ? X : L;
                    for (int64_t e = 0; e < np; e++) {
                        int64_t a[3] = {
                            e / ((q->transpose ? q->in : out)[1] *
                                 (q->transpose ? q->in : out)[2]),
                            e / (q->transpose ? q->in : out)[2] %
                                (q->transpose ? q->in : out)[1],
                            e % (q->transpose ? q->in : out)[2]};
                        int64_t kv[3] = {kz, ky, kx}, t[3];
                        const int64_t *lim = q->transpose ? out : q->in;
                        bool inside = true;
                        for (int d = 0; d < 3; d++) {
                            t[d] = a[d] * q->s[d] - pad[d] + kv[d] * q->dl[d];
                            inside = inside && t[d] >= 0 && t[d] < lim[d];
                        }
                        if (!inside) continue;
                        int64_t tf = (t[0] * lim[1] + t[1]) * lim[2] + t[2];
                        if (q->transpose)
                            y[(n * cout + co) * L + tf] +=
                                x[(n * q->c + ci) * X + e] * wv;
                        else
                            y[(n * cout + co) * L + e] +=
                                x[(n * q->c + ci) * X + tf] * wv;
                    }
                }
}

static tm_tensor *run(const ncase *q, const tm_tensor *x, const tm_tensor *w,
                      const tm_tensor *b)
{
    if (q->transpose) {
        tm_conv_transpose_opts o = tm_conv_transpose_defaults();
        for (int i = 0; i < q->nd; i++) {
            int j = 3 - q->nd + i;
            o.stride[i] = q->s[j], o.padding[i] = q->p[j];
            o.dilation[i] = q->dl[j], o.output_padding[i] = q->op[j];
        }
        o.groups = q->g;
        return tm_conv_transpose(x, w, b, q->nd, &o);
    }
    tm_conv_opts o = tm_conv_defaults();
    for (int i = 0; i < q->nd; i++) {
        int j = 3 - q->nd + i;
        o.stride[i] = q->s[j], o.padding[i] = q->p[j];
        o.dilation[i] = q->dl[j];
    }
    o.groups = q->g;
    o.pad_mode = q->mode;
    return q->nd == 1   ? tm_conv1d(x, w, b, &o)
           : q->nd == 3 ? tm_conv3d(x, w, b, &o)
                        : tm_conv(x, w, b, 2, &o);
}

/* F64 leaves of q: x [n, c, in], w, b (NULL without bias). */
static bool leaves(const ncase *q, uint64_t seed, tm_tensor **in)
{
    int64_t sh[5];
    int nd = shape_of(q, q->n, q->c, q->in, sh);
    in[0] = q->unbatched ? tt_leaf(sh + 1, nd - 1, seed)
                         : tt_leaf(sh, nd, seed);
    nd = q->transpose ? shape_of(q, q->c, q->oc / q->g, q->k, sh)
                      : shape_of(q, q->oc, q->c / q->g, q->k, sh);
    in[1] = tt_leaf(sh, nd, seed + 1);
    in[2] = q->bias ? tt_leaf(&q->oc, 1, seed + 2) : NULL;
    return in[0] && in[1] && (!q->bias || in[2]);
}

#define S1(a) {1, 1, (a)}
#define S2(a, b) {1, (a), (b)}
#define P0 {0, 0, 0}
/* paddings: the leading slots 0 */
#define Z1(a) {0, 0, (a)}
#define Z2(a, b) {0, (a), (b)}

static const ncase CASES[] = {
    /* conv 1-D: plain, strided+padded+grouped, dilated 'same' (even
     * kernel: one more zero after), unbatched */
    {1, false, true, false, 2, 3, 4, S1(9), S1(3), S1(1), P0, S1(1), P0, 1,
     TM_CONV_PAD_EXPLICIT},
    {1, false, true, false, 2, 4, 6, S1(10), S1(3), S1(2), Z1(1), S1(1), P0,
     2, TM_CONV_PAD_EXPLICIT},
    {1, false, false, false, 1, 2, 3, S1(8), S1(4), S1(1), P0, S1(3), P0, 1,
     TM_CONV_PAD_SAME},
    {1, false, true, true, 1, 3, 2, S1(7), S1(2), S1(3), P0, S1(1), P0, 1,
     TM_CONV_PAD_VALID},
    /* conv 2-D 'same' with an even kernel, depthwise */
    {2, false, true, false, 2, 2, 3, S2(5, 6), S2(2, 3), S2(1, 1), P0,
     S2(1, 2), P0, 1, TM_CONV_PAD_SAME},
    {2, false, true, false, 1, 3, 3, S2(5, 5), S2(3, 3), S2(2, 1), Z2(1, 1),
     S2(1, 1), P0, 3, TM_CONV_PAD_EXPLICIT},
    /* conv 3-D */
    {3, false, true, false, 2, 2, 3, {4, 5, 4}, {2, 3, 2}, {1, 1, 1}, P0,
     {1, 1, 1}, P0, 1, TM_CONV_PAD_EXPLICIT},
    {3, false, true, false, 1, 4, 4, {5, 4, 6}, {3, 2, 2}, {2, 1, 2},
     {1, 0, 1}, {1, 2, 1}, P0, 2, TM_CONV_PAD_EXPLICIT},
    {3, false, false, true, 1, 2, 2, {3, 4, 3}, {2, 2, 3}, {1, 1, 1}, P0,
     {1, 1, 1}, P0, 1, TM_CONV_PAD_SAME},
    /* transposed 1-D / 2-D / 3-D: stride, padding, output padding (below
     * the stride, and below the dilation only), groups */
    {1, true, true, false, 2, 3, 4, S1(5), S1(3), S1(2), Z1(1), S1(1), Z1(1),
     1, TM_CONV_PAD_EXPLICIT},
    {1, true, false, false, 1, 2, 4, S1(4), S1(3), S1(1), P0, S1(3), Z1(2), 2,
     TM_CONV_PAD_EXPLICIT},
    {2, true, true, false, 2, 4, 2, S2(3, 4), S2(3, 2), S2(2, 3), Z2(1, 0),
     S2(1, 1), Z2(1, 2), 2, TM_CONV_PAD_EXPLICIT},
    {2, true, true, true, 1, 2, 3, S2(3, 3), S2(2, 2), S2(1, 1), P0,
     S2(2, 1), P0, 1, TM_CONV_PAD_EXPLICIT},
    {3, true, true, false, 1, 2, 3, {2, 3, 2}, {2, 2, 3}, {2, 1, 2},
     {0, 1, 1}, {1, 1, 2}, {1, 0, 0}, 1, TM_CONV_PAD_EXPLICIT},
    {3, true, false, false, 2, 4, 2, {2, 2, 2}, {1, 2, 2}, {1, 2, 1}, P0,
     {1, 1, 1}, P0, 2, TM_CONV_PAD_EXPLICIT},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

TEST(conv_nd_and_transpose_match_direct_loops)
{
    for (int i = 0; i < NCASES; i++) {
        const ncase *q = &CASES[i];
        tm_tensor *in[3] = {NULL, NULL, NULL}, *y = NULL;
        int64_t out[3], pad[3], sh[5];
        out_slots(q, out, pad);
        int64_t ny = q->n * q->oc * prod3(out);
        double *xv = NULL, *wv = NULL, *bv = NULL;
        double *want = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
        if (!leaves(q, 100 + 10 * (uint64_t)i, in) || !want ||
            !(y = run(q, in[0], in[1], in[2])) ||
            !(xv = tt_values(in[0])) || !(wv = tt_values(in[1])) ||
            (q->bias && !(bv = tt_values(in[2])))) {
            tt_fail(__FILE__, __LINE__, "case %d: %s", i, tm_last_error());
        } else {
            ref(q, xv, wv, bv, want, out, pad);
            int nd = shape_of(q, q->n, q->oc, out, sh);
            if (q->unbatched)
                tt_check_shape(__FILE__, __LINE__, y, sh + 1, nd - 1);
            else
                tt_check_shape(__FILE__, __LINE__, y, sh, nd);
            CHECK_VALUES(y, want, ny, 1e-12, 1e-12);
        }
        free(xv), free(wv), free(bv), free(want);
        tm_free(y), tm_free(in[0]), tm_free(in[1]), tm_free(in[2]);
    }
}

typedef struct gctx {
    const ncase *q;
    bool xt; /* x stored with its last two dims swapped */
} gctx;

static tm_tensor *f_conv(tm_tensor *const *in, void *vc)
{
    const gctx *c = vc;
    int r = tm_ndim(in[0]);
    tm_tensor *x = c->xt ? tm_transpose(in[0], r - 2, r - 1)
                         : tm_retain(in[0]);
    tm_tensor *y = x ? run(c->q, x, in[1], in[2]) : NULL;
    tm_free(x);
    return y;
}

static void grad_case(int i, bool xt)
{
    ncase q = CASES[i];
    gctx c = {&q, xt};
    tm_tensor *in[3] = {NULL, NULL, NULL};
    if (xt) { /* x is made [.., W, H] and seen as [.., H, W] */
        int64_t t = q.in[1];
        q.in[1] = q.in[2], q.in[2] = t;
    }
    if (!leaves(&q, 500 + 10 * (uint64_t)i, in)) {
        tt_fail(__FILE__, __LINE__, "case %d: leaves: %s", i,
                tm_last_error());
    } else {
        if (xt) {
            int64_t t = q.in[1];
            q.in[1] = q.in[2], q.in[2] = t;
        }
        char name[48];
        snprintf(name, sizeof name, "case %d%s", i, xt ? " x transposed" :
                                                        "");
        tt_gradcheck_at(__FILE__, __LINE__, name, f_conv, &c, in,
                        q.bias ? 3 : 2, TOL);
    }
    tm_free(in[0]), tm_free(in[1]), tm_free(in[2]);
}

TEST(grad_conv_nd_and_transpose_all_cases)
{
    for (int i = 0; i < NCASES; i++) grad_case(i, false);
}

TEST(grad_conv_nd_and_transpose_non_contiguous_x)
{
    for (int i = 0; i < NCASES; i++)
        if (CASES[i].nd >= 2) grad_case(i, true);
}

TEST(conv3d_and_transpose_same_bits_for_any_thread_count)
{
    /* big enough for im2col and col2im to split across threads */
    tm_tensor *x = TT_LEAF(20, 2, 8, 10, 12, 11), *w = TT_LEAF(21, 6, 4, 3,
                                                               3, 2);
    REQUIRE(x && w);
    tm_conv_opts o = tm_conv_defaults();
    o.groups = 2, o.padding[0] = 1, o.stride[2] = 2;
    tm_conv_transpose_opts t = tm_conv_transpose_defaults();
    t.groups = 2, t.stride[1] = 2, t.output_padding[1] = 1;
    tm_tensor *wt = TT_LEAF(22, 8, 3, 2, 3, 3);
    REQUIRE(wt);
    double *v[2][4] = {{NULL}};
    int64_t nv[4] = {0};
    for (int r = 0; r < 2; r++) {
        tm_set_num_threads(r ? 3 : 1);
        tm_tensor *y = tm_conv3d(x, w, NULL, &o);
        tm_tensor *yt = tm_conv_transpose3d(x, wt, NULL, &t);
        tm_tensor *l1 = y ? tm_sum(y, NULL, 0, false) : NULL;
        tm_tensor *l2 = yt ? tm_sum(yt, NULL, 0, false) : NULL;
        tm_tensor *l = l1 && l2 ? tm_add(l1, l2) : NULL;
        if (l && !tm_backward(l)) {
            const tm_tensor *all[4] = {y, yt, tm_grad(x), tm_grad(w)};
            for (int k = 0; k < 4; k++) {
                v[r][k] = tt_values(all[k]);
                nv[k] = tm_numel(all[k]);
            }
        }
        tm_zero_grad(x), tm_zero_grad(w), tm_zero_grad(wt);
        tm_free(y), tm_free(yt), tm_free(l1), tm_free(l2), tm_free(l);
    }
    tm_set_num_threads(0);
    for (int k = 0; k < 4; k++) {
        if (!v[0][k] || !v[1][k])
            tt_fail(__FILE__, __LINE__, "runs failed: %s", tm_last_error());
        else
            CHECK(memcmp(v[0][k], v[1][k], sizeof(double) * (size_t)nv[k])
                  == 0);
        free(v[0][k]), free(v[1][k]);
    }
    tm_free(x), tm_free(w), tm_free(wt);
}

TEST(conv_nd_zero_batch_and_grad_names)
{
    tm_tensor *x = TT_LEAF(1, 0, 2, 3, 3, 3), *w = TT_LEAF(2, 2, 3, 2, 2, 2);
    tm_tensor *b = TT_LEAF(3, 3);
    REQUIRE(x && w && b);
    tm_tensor *y = tm_conv_transpose3d(x, w, b, NULL);
    REQUIRE(y);
    CHECK_SHAPE(y, 0, 3, 4, 4, 4);
    tm_tensor *w2 = TT_LEAF(4, 3, 2, 2, 2, 2);
    tm_tensor *y2 = w2 ? tm_conv3d(x, w2, NULL, NULL) : NULL;
    REQUIRE(y2);
    CHECK_SHAPE(y2, 0, 3, 2, 2, 2);
    CHECK(strcmp(tm_grad_fn_name(y2), "ConvolutionBackward") == 0);
    tm_tensor *y3 = tm_conv_transpose3d(x, w, NULL, NULL);
    REQUIRE(y3);
    CHECK(strcmp(tm_grad_fn_name(y3), "ConvTransposeBackward") == 0);
    tm_tensor *l = tm_sum(y, NULL, 0, false);
    REQUIRE(l && tm_backward(l) == TM_OK);
    CHECK_SHAPE(tm_grad(x), 0, 2, 3, 3, 3);
    CHECK_SHAPE(tm_grad(w), 2, 3, 2, 2, 2);
    double zeros[48] = {0};
    CHECK_VALUES(tm_grad(w), zeros, 48, 0, 0);
    tm_free(l), tm_free(y), tm_free(y2), tm_free(y3), tm_free(w2);
    tm_free(x), tm_free(w), tm_free(b);
}

TEST(conv_nd_errors_name_the_problem)
{
    tm_tensor *x1 = tm_zeros((int64_t[]){1, 4, 5}, 3, TM_F64);
    tm_tensor *w1 = tm_zeros((int64_t[]){6, 2, 3}, 3, TM_F64);
    tm_tensor *x3 = tm_zeros((int64_t[]){1, 2, 3, 3, 3}, 5, TM_F64);
    tm_tensor *w3 = tm_zeros((int64_t[]){2, 1, 2, 2, 2}, 5, TM_F64);
    tm_tensor *w3c = tm_zeros((int64_t[]){2, 2, 2, 2, 2}, 5, TM_F64);
    tm_tensor *x2 = tm_zeros((int64_t[]){5, 5}, 2, TM_F64);
    REQUIRE(x1 && w1 && x3 && w3 && w3c && x2);
    tm_conv_opts o = tm_conv_defaults();
    CHECK_NULL_ERR(tm_conv(x1, w1, NULL, 4, NULL), TM_EINVAL,
                   "nd (spatial dims) must be 1, 2 or 3, got 4");
    CHECK_NULL_ERR(tm_conv1d(x2, w1, NULL, NULL), TM_ESHAPE, "tm_conv1d");
    CHECK_NULL_ERR(tm_conv3d(x1, w3, NULL, NULL), TM_ESHAPE,
                   "expected a 4D (unbatched) or 5D (batched) input");
    CHECK_NULL_ERR(tm_conv3d(x3, w1, NULL, NULL), TM_ESHAPE,
                   "expected a 5D weight, got shape [6,2,3]");
    o.groups = 3;
    CHECK_NULL_ERR(tm_conv1d(x1, w1, NULL, &o), TM_ESHAPE,
                   "divisible by groups 3");
    o = tm_conv_defaults();
    o.pad_mode = TM_CONV_PAD_SAME;
    o.stride[0] = 2;
    CHECK_NULL_ERR(tm_conv1d(x1, w1, NULL, &o), TM_EINVAL,
                   "padding 'same' needs stride 1, got stride {2}");
    o = tm_conv_defaults();
    o.pad_mode = (tm_conv_pad_mode)7;
    CHECK_NULL_ERR(tm_conv1d(x1, w1, NULL, &o), TM_EINVAL, "pad_mode");
    o = tm_conv_defaults();
    o.dilation[2] = 3;
    CHECK_NULL_ERR(tm_conv3d(x3, w3c, NULL, &o), TM_ESHAPE,
                   "kernel 2x2x2 (dilated 2x2x4) does not fit the padded "
                   "input 3x3x3");

    tm_conv_transpose_opts t = tm_conv_transpose_defaults();
    CHECK_NULL_ERR(tm_conv_transpose1d(x1, w1, NULL, NULL), TM_ESHAPE,
                   "weight [6,2,3] expects 6 input channels, but x "
                   "[1,4,5] has 4");
    t.groups = 3;
    CHECK_NULL_ERR(tm_conv_transpose3d(x3, w3, NULL, &t), TM_ESHAPE,
                   "input channels 2 must be divisible by groups 3");
    t = tm_conv_transpose_defaults();
    t.stride[1] = 2, t.output_padding[1] = 2;
    CHECK_NULL_ERR(tm_conv_transpose3d(x3, w3, NULL, &t), TM_EINVAL,
                   "output_padding must be smaller than either stride or "
                   "dilation, got output_padding {0,2,0}, stride {1,2,1}, "
                   "dilation {1,1,1}");
    t = tm_conv_transpose_defaults();
    t.padding[0] = 3;
    CHECK_NULL_ERR(tm_conv_transpose3d(x3, w3, NULL, &t), TM_ESHAPE,
                   "the output size -2x4x4");
    t = tm_conv_transpose_defaults();
    t.output_padding[2] = -1;
    CHECK_NULL_ERR(tm_conv_transpose3d(x3, w3, NULL, &t), TM_EINVAL,
                   "output_padding must be >= 0");
    CHECK_NULL_ERR(tm_conv_transpose(x3, w3, NULL, 0, NULL), TM_EINVAL,
                   "tm_conv_transpose: nd");
    tm_free(x1), tm_free(w1), tm_free(x3), tm_free(w3), tm_free(w3c);
    tm_free(x2);
}

/* Forward and backward of an unbatched 'same' conv1d, a grouped conv3d
 * and a transposed conv2d with bias (F64), then an F16 transposed conv. */
static tm_status oom_sequence(void)
{
    tm_tensor *t[14] = {NULL};
    tm_status st = TM_OK;
    tm_conv_opts o = tm_conv_defaults();
    o.pad_mode = TM_CONV_PAD_SAME;
    tm_conv_opts o3 = tm_conv_defaults();
    o3.groups = 2, o3.stride[1] = 2;
    tm_conv_transpose_opts t2 = tm_conv_transpose_defaults();
    t2.stride[0] = 2, t2.output_padding[0] = 1, t2.groups = 2;
    if (!(t[0] = TT_LEAF(1, 2, 6)) || !(t[1] = TT_LEAF(2, 3, 2, 4)) ||
        !(t[2] = TT_LEAF(3, 1, 4, 3, 4, 3)) ||
        !(t[3] = TT_LEAF(4, 2, 2, 2, 2, 2)) ||
        !(t[4] = TT_LEAF(5, 2, 4, 3, 3)) || !(t[5] = TT_LEAF(6, 4, 1, 2, 3)) ||
        !(t[6] = TT_LEAF(7, 2)) || !(t[7] = tm_conv1d(t[0], t[1], NULL, &o)) ||
        !(t[8] = tm_conv3d(t[2], t[3], NULL, &o3)) ||
        !(t[9] = tm_conv_transpose2d(t[4], t[5], t[6], &t2)))
        goto fail;
    tm_tensor *ls[3] = {t[7], t[8], t[9]};
    for (int i = 0; i < 3; i++) {
        tm_tensor *l = tm_sum(ls[i], NULL, 0, false);
        if (!l) goto fail;
        st = tm_backward(l);
        tm_free(l);
        if (st) goto done;
    }
    bool prev = tm_no_grad_begin();
    t[10] = tm_to_dtype(t[4], TM_F16);
    t[11] = tm_to_dtype(t[5], TM_F16);
    tm_no_grad_end(prev);
    if (!t[10] || !t[11] ||
        !(t[12] = tm_conv_transpose2d(t[10], t[11], NULL, &t2)))
        goto fail;
    goto done;
fail:
    st = tm_last_status();
done:
    for (int i = 0; i < 14; i++) tm_free(t[i]);
    return st;
}

TEST(conv_nd_and_transpose_survive_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(oom_sequence, 20);
}
