/*
 * test_pool_nd.c — pooling over 1 to 3 spatial dims (dilation, ceil
 * mode, divisor override, batchless input, integer dtypes), adaptive
 * pooling, max unpooling, interpolate and the pad modes: values worked
 * out by hand from PyTorch's rules, errors, and finite-difference
 * gradient checks in F64 (gradcheck.h, tol 1e-6: every op here is
 * piecewise linear in x, so central differences are exact up to
 * rounding away from the kinks, which the random inputs avoid).
 */
#include "foundry.h"
#include "gradcheck.h"

#define TOL 1e-6

static tm_tensor *arange_f64(int64_t n, const int64_t *shape, int nd)
{
    tm_tensor *a = tm_arange(0, (double)n, 1, TM_F64), *r = NULL;
    if (a) r = tm_reshape(a, shape, nd);
    tm_free(a);
    return r;
}

/* ---------------------------------------------------------- values */

TEST(avg_pool1d_ceil_mode_divides_by_the_window_clipped_to_the_padding)
{
    /* ones(6), kernel 3, stride 2, padding 1, ceil: windows [-1,2), [1,4),
     * [3,6), [5,7): the last one holds 1 element of x and 1 of padding. */
    tm_tensor *x = tm_ones((int64_t[]){1, 1, 6}, 3, TM_F64);
    tm_pool_opts o = tm_pool_defaults();
    o.kernel[0] = 3, o.stride[0] = 2, o.padding[0] = 1, o.ceil_mode = true;
    tm_tensor *y = tm_avg_pool_nd(x, 1, &o);
    REQUIRE(y);
    CHECK_SHAPE(y, 1, 1, 4);
    double want[4] = {2.0 / 3, 1, 1, 0.5};
    CHECK_VALUES(y, want, 4, 0, 1e-15);
    o.divisor_override = 4;
    tm_tensor *y2 = tm_avg_pool_nd(x, 1, &o);
    REQUIRE(y2);
    double want2[4] = {0.5, 0.75, 0.75, 0.25};
    CHECK_VALUES(y2, want2, 4, 0, 1e-15);
    tm_free(y2), tm_free(y), tm_free(x);
}

TEST(max_pool2d_dilation_and_indices_of_a_batchless_input)
{
    /* arange(16) as [1, 4, 4]; kernel 2, dilation 2, stride 1: the max
     * of {y, y+2} x {x, x+2} is at (y+2, x+2). */
    tm_tensor *x = arange_f64(16, (int64_t[]){1, 4, 4}, 3), *ix = NULL;
    tm_pool_opts o = tm_pool_defaults();
    o.stride[0] = o.stride[1] = 1;
    o.dilation[0] = o.dilation[1] = 2;
    tm_tensor *y = tm_max_pool_nd(x, 2, &o, &ix);
    REQUIRE(y && ix);
    CHECK_SHAPE(y, 1, 2, 2);
    CHECK(tm_dtype_of(ix) == TM_I64);
    double want[4] = {10, 11, 14, 15};
    CHECK_VALUES(y, want, 4, 0, 0);
    CHECK_VALUES(ix, want, 4, 0, 0);
    tm_free(ix), tm_free(y), tm_free(x);
}

TEST(max_pool3d_indices_are_flat_in_the_volume)
{
    tm_tensor *x = arange_f64(27, (int64_t[]){1, 1, 3, 3, 3}, 5), *ix = NULL;
    tm_pool_opts o = tm_pool_defaults();
    o.ceil_mode = true; /* 3 -> 2 windows a dim, the last one of size 1 */
    tm_tensor *y = tm_max_pool_nd(x, 3, &o, &ix);
    REQUIRE(y && ix);
    CHECK_SHAPE(y, 1, 1, 2, 2, 2);
    double want[8] = {13, 14, 16, 17, 22, 23, 25, 26};
    CHECK_VALUES(y, want, 8, 0, 0);
    CHECK_VALUES(ix, want, 8, 0, 0);
    tm_free(ix), tm_free(y), tm_free(x);
}

TEST(integer_pools_keep_the_dtype_and_truncate_averages)
{
    int64_t v[4] = {-3, 0, 1, 7};
    tm_tensor *x = tm_from_buffer(v, (int64_t[]){1, 1, 4}, 3, TM_I64);
    tm_pool_opts o = tm_pool_defaults();
    tm_tensor *a = tm_avg_pool_nd(x, 1, &o), *m = tm_max_pool_nd(x, 1, &o,
                                                                 NULL);
    REQUIRE(a && m);
    CHECK(tm_dtype_of(a) == TM_I64 && tm_dtype_of(m) == TM_I64);
    double wa[2] = {-1, 4}, wm[2] = {0, 7}; /* -3/2 truncates to -1 */
    CHECK_VALUES(a, wa, 2, 0, 0);
    CHECK_VALUES(m, wm, 2, 0, 0);
    tm_free(a), tm_free(m), tm_free(x);
}

TEST(adaptive_windows_follow_floor_and_ceil)
{
    /* L = 5 to 3: [0,2), [1,4), [3,5) */
    tm_tensor *x = arange_f64(5, (int64_t[]){1, 1, 5}, 3), *ix = NULL;
    tm_tensor *a = tm_adaptive_avg_pool_nd(x, 1, (int64_t[]){3});
    tm_tensor *m = tm_adaptive_max_pool_nd(x, 1, (int64_t[]){3}, &ix);
    REQUIRE(a && m && ix);
    double wa[3] = {0.5, 2, 3.5}, wm[3] = {1, 3, 4};
    CHECK_VALUES(a, wa, 3, 0, 1e-15);
    CHECK_VALUES(m, wm, 3, 0, 0);
    CHECK_VALUES(ix, wm, 3, 0, 0);
    tm_tensor *k = tm_adaptive_avg_pool_nd(x, 1, (int64_t[]){-1});
    REQUIRE(k);
    CHECK_SHAPE(k, 1, 1, 5);
    tm_free(k), tm_free(ix), tm_free(m), tm_free(a), tm_free(x);
}

TEST(max_unpool_puts_values_at_their_indices)
{
    double v[2] = {5, 7};
    int64_t iv[2] = {3, 0};
    tm_tensor *x = tm_from_buffer(v, (int64_t[]){1, 2}, 2, TM_F64);
    tm_tensor *ix = tm_from_buffer(iv, (int64_t[]){1, 2}, 2, TM_I64);
    tm_tensor *y = tm_max_unpool_nd(x, ix, 1, (int64_t[]){4});
    REQUIRE(y);
    CHECK_SHAPE(y, 1, 4);
    double want[4] = {7, 0, 0, 5};
    CHECK_VALUES(y, want, 4, 0, 0);
    iv[0] = -1;
    tm_tensor *bad = tm_from_buffer(iv, (int64_t[]){1, 2}, 2, TM_I64);
    CHECK_NULL_ERR(tm_max_unpool_nd(x, bad, 1, (int64_t[]){4}), TM_ERANGE,
                   "invalid max index -1");
    CHECK_NULL_ERR(tm_max_unpool_nd(x, ix, 1, (int64_t[]){3}), TM_ERANGE,
                   "invalid max index 3");
    tm_free(bad), tm_free(y), tm_free(ix), tm_free(x);
}

TEST(interpolate_follows_pytorch_source_indices)
{
    tm_tensor *x = arange_f64(4, (int64_t[]){1, 1, 4}, 3);
    tm_tensor *n = tm_interpolate(x, 1, (int64_t[]){3}, NULL,
                                  TM_INTERP_NEAREST, false);
    tm_tensor *ne = tm_interpolate(x, 1, (int64_t[]){3}, NULL,
                                   TM_INTERP_NEAREST_EXACT, false);
    tm_tensor *la = tm_interpolate(x, 1, (int64_t[]){7}, NULL,
                                   TM_INTERP_LINEAR, true);
    tm_tensor *l = tm_interpolate(x, 1, (int64_t[]){8}, NULL,
                                  TM_INTERP_LINEAR, false);
    REQUIRE(n && ne && la && l);
    double wn[3] = {0, 1, 2};           /* floor(i * 4/3) */
    double wne[3] = {0, 2, 3};          /* floor((i + .5) * 4/3) */
    double wla[7] = {0, .5, 1, 1.5, 2, 2.5, 3};
    /* src = (i + .5)/2 - .5 clamped at 0; the last one clamps to 3 */
    double wl[8] = {0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3};
    CHECK_VALUES(n, wn, 3, 0, 0);
    CHECK_VALUES(ne, wne, 3, 0, 0);
    CHECK_VALUES(la, wla, 7, 0, 1e-15);
    CHECK_VALUES(l, wl, 8, 0, 1e-15);
    tm_free(l), tm_free(la), tm_free(ne), tm_free(n), tm_free(x);
}

TEST(pad_modes_reflect_replicate_and_wrap)
{
    tm_tensor *x = arange_f64(9, (int64_t[]){1, 9}, 2);
    tm_tensor *c = tm_pad_mode(x, (int64_t[]){2, -3}, 2, TM_PAD_CIRCULAR, 0);
    tm_tensor *r = tm_pad_mode(x, (int64_t[]){2, 1}, 2, TM_PAD_REFLECT, 0);
    tm_tensor *p = tm_pad_mode(x, (int64_t[]){-1, 2}, 2, TM_PAD_REPLICATE,
                               0);
    REQUIRE(c && r && p);
    /* circular crops (0..5 remain) and wraps what is left */
    double wc[8] = {4, 5, 0, 1, 2, 3, 4, 5};
    double wr[12] = {2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 7};
    double wp[10] = {1, 2, 3, 4, 5, 6, 7, 8, 8, 8};
    CHECK_VALUES(c, wc, 8, 0, 0);
    CHECK_VALUES(r, wr, 12, 0, 0);
    CHECK_VALUES(p, wp, 10, 0, 0);
    tm_free(p), tm_free(r), tm_free(c), tm_free(x);
}

/* ---------------------------------------------------------- errors */

TEST(pool_nd_errors_name_the_problem)
{
    tm_tensor *x = tm_zeros((int64_t[]){1, 2, 4}, 3, TM_F64);
    tm_tensor *e = tm_zeros((int64_t[]){1, 0, 4}, 3, TM_F64);
    tm_tensor *i = tm_zeros((int64_t[]){1, 2, 4}, 3, TM_I32);
    REQUIRE(x && e && i);
    tm_pool_opts o = tm_pool_defaults();
    CHECK_NULL_ERR(tm_max_pool_nd(x, 4, &o, NULL), TM_EINVAL,
                   "spatial dims must be 1, 2 or 3");
    CHECK_NULL_ERR(tm_max_pool_nd(x, 3, &o, NULL), TM_ESHAPE,
                   "x must be 4D or 5D (batch mode)");
    CHECK_NULL_ERR(tm_max_pool_nd(e, 1, &o, NULL), TM_ESHAPE,
                   "only the batch dim may be empty");
    o.kernel[0] = 3, o.padding[0] = 2;
    CHECK_NULL_ERR(tm_max_pool_nd(x, 1, &o, NULL), TM_EINVAL,
                   "at most half of the kernel size 3");
    o.padding[0] = 0, o.kernel[0] = 5;
    CHECK_NULL_ERR(tm_avg_pool_nd(x, 1, &o), TM_ESHAPE,
                   "output size is too small");
    o.kernel[0] = 2, o.dilation[0] = 2;
    CHECK_NULL_ERR(tm_avg_pool_nd(x, 1, &o), TM_EINVAL,
                   "average pooling has no dilation");
    o.dilation[0] = 1, o.divisor_override = -1;
    CHECK_NULL_ERR(tm_avg_pool_nd(x, 1, &o), TM_EINVAL, "divisor_override");
    CHECK_NULL_ERR(tm_adaptive_avg_pool_nd(i, 1, (int64_t[]){2}), TM_EDTYPE,
                   "dtype i32 is not supported");
    CHECK_NULL_ERR(tm_adaptive_max_pool_nd(e, 1, (int64_t[]){2}, NULL),
                   TM_ESHAPE, "non-batch dims must be non-empty");
    CHECK_NULL_ERR(tm_max_unpool_nd(x, i, 1, (int64_t[]){8}), TM_EDTYPE,
                   "indices must be i64");
    CHECK_NULL_ERR(tm_interpolate(x, 1, (int64_t[]){0}, NULL,
                                  TM_INTERP_LINEAR, false), TM_ESHAPE,
                   "input and output sizes must be > 0");
    CHECK_NULL_ERR(tm_interpolate(x, 2, (int64_t[]){2, 2}, NULL,
                                  TM_INTERP_LINEAR, false), TM_ESHAPE,
                   "x must be 4D");
    CHECK_NULL_ERR(tm_pad_mode(x, (int64_t[]){4, 0}, 2, TM_PAD_REFLECT, 0),
                   TM_EINVAL, "each amount must be below the size");
    CHECK_NULL_ERR(tm_pad_mode(x, (int64_t[]){5, 0}, 2, TM_PAD_CIRCULAR, 0),
                   TM_EINVAL, "no wrapping around more than once");
    CHECK_NULL_ERR(tm_pad_mode(x, (int64_t[]){1, 1, 1, 1, 1, 1}, 6,
                               TM_PAD_REPLICATE, 0), TM_ESHAPE,
                   "needs a 4D or 5D (batch mode) input");
    CHECK_NULL_ERR(tm_pad_mode(e, (int64_t[]){1, 1}, 2, TM_PAD_REFLECT, 0),
                   TM_ESHAPE, "dim 1 of t [1,0,4] is empty");
    tm_free(x), tm_free(e), tm_free(i);
}

TEST(pool_nd_null_arguments_are_reported)
{
    tm_tensor *x = tm_zeros((int64_t[]){1, 2, 4}, 3, TM_F64), *ix = x;
    REQUIRE(x);
    int64_t sz[1] = {2};
    CHECK_NULL_ERR(tm_max_pool_nd(NULL, 1, NULL, &ix), TM_EINVAL, "NULL");
    CHECK(ix == NULL);
    CHECK_NULL_ERR(tm_avg_pool_nd(NULL, 1, NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_adaptive_avg_pool_nd(NULL, 1, sz), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_adaptive_avg_pool_nd(x, 1, NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_adaptive_max_pool_nd(NULL, 1, sz, NULL), TM_EINVAL,
                   "NULL");
    CHECK_NULL_ERR(tm_max_unpool_nd(NULL, x, 1, sz), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_max_unpool_nd(x, NULL, 1, sz), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_interpolate(NULL, 1, sz, NULL, TM_INTERP_NEAREST,
                                  false), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_pad_mode(NULL, sz, 2, TM_PAD_REFLECT, 0), TM_EINVAL,
                   "NULL");
    CHECK_NULL_ERR(tm_interpolate_aa(NULL, 1, sz, NULL, TM_INTERP_LINEAR,
                                     false), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_interpolate_aa(x, 1, sz, NULL, TM_INTERP_NEAREST,
                                     false), TM_EINVAL,
                   "antialiasing needs the linear or cubic mode");
    tm_free(x);
}

/* ------------------------------------------------------- gradients */

typedef struct gctx {
    int kind, dims;
    tm_pool_opts o;
    int64_t size[3];
    tm_interp_mode mode;
    bool align;
    bool transposed; /* feed x with its last two dims swapped */
} gctx;

enum { G_MAX, G_AVG, G_AMAX, G_AAVG, G_INTERP, G_PAD, G_UNPOOL };

static tm_tensor *f_nd(tm_tensor *const *in, void *vc)
{
    const gctx *c = vc;
    int nd = tm_ndim(in[0]);
    tm_tensor *x = c->transposed ? tm_transpose(in[0], nd - 1, nd - 2)
                                 : tm_retain(in[0]);
    tm_tensor *y = NULL, *ix = NULL, *p = NULL;
    if (!x) return NULL;
    switch (c->kind) {
    case G_MAX: y = tm_max_pool_nd(x, c->dims, &c->o, NULL); break;
    case G_AVG: y = tm_avg_pool_nd(x, c->dims, &c->o); break;
    case G_AMAX: y = tm_adaptive_max_pool_nd(x, c->dims, c->size, NULL);
        break;
    case G_AAVG: y = tm_adaptive_avg_pool_nd(x, c->dims, c->size); break;
    case G_INTERP:
        y = tm_interpolate(x, c->dims, c->size, NULL, c->mode, c->align);
        break;
    case G_PAD:
        y = tm_pad_mode(x, c->size, 2 * c->dims, (tm_padding_mode)c->mode, 0);
        break;
    default: /* unpool what a max pool picked */
        if ((p = tm_max_pool_nd(x, c->dims, &c->o, &ix)))
            y = tm_max_unpool_nd(p, ix, c->dims, c->size);
        break;
    }
    tm_free(p), tm_free(ix), tm_free(x);
    return y;
}

static void gc_run(const char *name, gctx c, const int64_t *shape, int nd,
                   uint64_t seed)
{
    for (int t = 0; t < 2; t++) {
        c.transposed = t;
        tm_tensor *x = tt_leaf(shape, nd, seed + (uint64_t)t);
        if (!x) {
            tt_fail(__FILE__, __LINE__, "leaf: %s", tm_last_error());
            return;
        }
        GRADCHECK(name, f_nd, &c, &x, 1, TOL);
        tm_free(x);
    }
}

static tm_pool_opts popt(int64_t k, int64_t s, int64_t p, int64_t d,
                         bool ceil, bool inc, int64_t div)
{
    tm_pool_opts o = tm_pool_defaults();
    for (int i = 0; i < 3; i++)
        o.kernel[i] = k, o.stride[i] = s, o.padding[i] = p,
        o.dilation[i] = d;
    o.ceil_mode = ceil, o.count_include_pad = inc, o.divisor_override = div;
    return o;
}

TEST(grad_pool_nd)
{
    gctx c = {0};
    int64_t s1[3] = {2, 3, 7}, s2[4] = {1, 2, 5, 6}, s3[5] = {1, 1, 4, 5, 5};
    for (int mx = 0; mx < 2; mx++) {
        c.kind = mx ? G_MAX : G_AVG;
        c.dims = 1;
        c.o = popt(3, 2, 1, mx ? 2 : 1, true, false, 0);
        gc_run("pool1d", c, s1, 3, 2000);
        c.dims = 2;
        c.o = popt(3, 2, 1, 1, true, true, mx ? 0 : 5);
        gc_run("pool2d", c, s2, 4, 2010);
        c.dims = 3;
        c.o = popt(2, 2, 1, 1, true, false, 0);
        gc_run("pool3d", c, s3, 5, 2020);
    }
    c.kind = G_UNPOOL;
    c.dims = 2;
    c.o = popt(2, 2, 0, 1, false, true, 0);
    c.size[0] = 5, c.size[1] = 6;
    gc_run("max_unpool2d", c, s2, 4, 2030);
}

TEST(grad_adaptive_interpolate_and_pad)
{
    gctx c = {0};
    int64_t s2[4] = {1, 2, 5, 6}, s1[3] = {2, 7, 7};
    c.dims = 2, c.size[0] = 3, c.size[1] = 4;
    c.kind = G_AAVG;
    gc_run("adaptive_avg_pool2d", c, s2, 4, 2100);
    c.kind = G_AMAX;
    gc_run("adaptive_max_pool2d", c, s2, 4, 2110);
    c.kind = G_INTERP;
    c.size[0] = 7, c.size[1] = 4;
    for (int m = 0; m < 4; m++)
        for (int a = 0; a < 2; a++) {
            c.mode = (tm_interp_mode)m, c.align = a && m >= 2;
            gc_run("interpolate", c, s2, 4, 2120 + (uint64_t)(10 * m + a));
        }
    c.kind = G_PAD;
    c.dims = 1, c.size[0] = 3, c.size[1] = -2;
    for (int m = 1; m < 4; m++) {
        c.mode = (tm_interp_mode)m;
        gc_run("pad", c, s1, 3, 2200 + (uint64_t)m);
    }
}

TEST(integer_max_pooling_is_exact_beyond_2_pow_53)
{
    int64_t v[4] = {INT64_MAX - 1, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    tm_tensor *x = tm_from_buffer(v, (int64_t[]){1, 4}, 2, TM_I64), *ix;
    tm_pool_opts o = tm_pool_defaults();
    tm_tensor *y = tm_max_pool_nd(x, 1, &o, &ix);
    REQUIRE(y);
    int64_t a, b;
    tm_tensor *y0 = tm_select(y, 1, 0), *y1 = tm_select(y, 1, 1);
    REQUIRE(y0 && y1 && !tm_item_i64(y0, &a) && !tm_item_i64(y1, &b));
    CHECK(a == INT64_MAX && b == INT64_MIN + 1);
    double wi[2] = {1, 3};
    CHECK_VALUES(ix, wi, 2, 0, 0);
    tm_free(y0), tm_free(y1), tm_free(ix), tm_free(y), tm_free(x);
}

/* ------------------------------------------------- out of memory */

/* Every op of this file forward and backward, so each allocation they
 * make can be failed in turn. */
static tm_status oom_spatial(void)
{
    tm_tensor *t[12] = {0}, *ix = NULL, *iy = NULL;
    tm_status st = TM_OK;
    tm_pool_opts o = popt(3, 2, 1, 1, true, false, 0);
    int64_t sz[2] = {3, 4}, big[2] = {7, 9}, pd[4] = {2, 1, -1, 2};
    if (!(t[0] = TT_LEAF(7, 1, 2, 5, 6)) ||
        !(t[1] = tm_max_pool_nd(t[0], 2, &o, &ix)) ||
        !(t[2] = tm_avg_pool_nd(t[0], 2, &o)) ||
        !(t[3] = tm_adaptive_avg_pool_nd(t[0], 2, sz)) ||
        !(t[4] = tm_adaptive_max_pool_nd(t[0], 2, sz, &iy)) ||
        !(t[5] = tm_max_unpool_nd(t[1], ix, 2, (int64_t[]){5, 6})) ||
        !(t[6] = tm_interpolate(t[0], 2, big, NULL, TM_INTERP_CUBIC,
                                false)) ||
        !(t[7] = tm_pad_mode(t[0], pd, 4, TM_PAD_CIRCULAR, 0)) ||
        !(t[8] = tm_interpolate_aa(t[0], 2, sz, NULL, TM_INTERP_LINEAR,
                                   false)))
        goto fail;
    tm_tensor *s = NULL;
    for (int i = 1; i < 9; i++) {
        tm_tensor *u = tm_sum(t[i], NULL, 0, false);
        tm_tensor *n = u && s ? tm_add(s, u) : (u ? tm_retain(u) : NULL);
        tm_free(u), tm_free(s);
        s = n;
        if (!s) goto fail;
    }
    t[9] = s;
    st = tm_backward(t[9]);
    goto done;
fail:
    st = tm_last_status();
done:
    for (int i = 0; i < 12; i++) tm_free(t[i]);
    tm_free(ix), tm_free(iy);
    return st;
}

TEST(spatial_ops_survive_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(oom_spatial, 20);
}
