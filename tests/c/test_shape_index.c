/* test_shape_index.c — flip, roll, diagonal, diag, unfold, nonzero,
 * masked_select, take_along_dim, repeat_interleave, view_dtype and
 * im2col / col2im: values on small hand-checked cases, errors naming the
 * function, out-of-memory at every allocation, and GRADCHECK in F64 (tol
 * 1e-6: every op here moves or adds elements, so it is linear and the
 * central difference is exact up to rounding, ~1e-10), on contiguous and
 * non-contiguous inputs (views made inside f). */
#include "gradcheck.h"

#define TOL 1e-6

static tm_tensor *iota(int64_t n, const int64_t *shape, int nd, tm_dtype dt)
{
    tm_tensor *a = tm_arange(0, (double)n, 1, dt);
    tm_tensor *r = a ? tm_reshape(a, shape, nd) : NULL;
    tm_free(a);
    return r;
}

static tm_tensor *ix(const int64_t *v, const int64_t *shape, int nd)
{
    return tm_from_buffer(v, shape, nd, TM_I64);
}

/* ------------------------------------------------------------ values */

TEST(flip_reverses_each_listed_dim)
{
    tm_tensor *x = iota(6, (int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *a = tm_flip(x, (int[]){-1}, 1);
    tm_tensor *b = tm_flip(x, (int[]){0, 1}, 2);
    tm_tensor *c = tm_fliplr(x), *d = tm_flipud(x);
    REQUIRE(a && b && c && d);
    CHECK_VALUES(a, ((double[]){2, 1, 0, 5, 4, 3}), 6, 0, 0);
    CHECK_VALUES(b, ((double[]){5, 4, 3, 2, 1, 0}), 6, 0, 0);
    CHECK_VALUES(c, ((double[]){2, 1, 0, 5, 4, 3}), 6, 0, 0);
    CHECK_VALUES(d, ((double[]){3, 4, 5, 0, 1, 2}), 6, 0, 0);
    CHECK(tm_data(a) != tm_data(x));
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tm_free(d);
    tm_free(x);
}

TEST(roll_wraps_around_and_flattens_without_dims)
{
    tm_tensor *x = iota(6, (int64_t[]){2, 3}, 2, TM_I32);
    tm_tensor *a = tm_roll(x, (int64_t[]){1}, 1, (int[]){1}, 1);
    tm_tensor *b = tm_roll(x, (int64_t[]){-4}, 1, NULL, 0);
    tm_tensor *c = tm_roll(x, (int64_t[]){1, -1}, 2, (int[]){0, 1}, 2);
    REQUIRE(a && b && c);
    CHECK_VALUES(a, ((double[]){2, 0, 1, 5, 3, 4}), 6, 0, 0);
    CHECK_VALUES(b, ((double[]){4, 5, 0, 1, 2, 3}), 6, 0, 0);
    CHECK_VALUES(c, ((double[]){4, 5, 3, 1, 2, 0}), 6, 0, 0);
    CHECK_SHAPE(b, 2, 3);
    CHECK_INT(tm_dtype_of(a), TM_I32);
    tm_free(a);
    tm_free(b);
    tm_free(c);
    tm_free(x);
}

TEST(diagonal_is_a_view_and_diag_builds_and_takes)
{
    tm_tensor *x = iota(12, (int64_t[]){3, 4}, 2, TM_F64);
    tm_tensor *d1 = tm_diagonal(x, 1, 0, 1);
    tm_tensor *dm = tm_diagonal(x, -1, 1, 0); /* dims swapped: above */
    tm_tensor *de = tm_diagonal(x, 7, 0, 1);
    REQUIRE(d1 && dm && de);
    CHECK_VALUES(d1, ((double[]){1, 6, 11}), 3, 0, 0);
    CHECK_VALUES(dm, ((double[]){1, 6, 11}), 3, 0, 0);
    CHECK_SHAPE(de, 0);
    REQUIRE(tm_fill_(d1, -1.0) == TM_OK);
    double v;
    REQUIRE(tm_get(x, (int64_t[]){1, 2}, &v) == TM_OK);
    CHECK(v == -1.0);
    tm_tensor *vec = tt_tensor((double[]){1, 2}, (int64_t[]){2}, 1, TM_F32);
    tm_tensor *m = tm_diag(vec, -1), *back = m ? tm_diag(m, -1) : NULL;
    REQUIRE(m && back);
    CHECK_SHAPE(m, 3, 3);
    CHECK_VALUES(m, ((double[]){0, 0, 0, 1, 0, 0, 0, 2, 0}), 9, 0, 0);
    CHECK_VALUES(back, ((double[]){1, 2}), 2, 0, 0);
    tm_free(d1);
    tm_free(dm);
    tm_free(de);
    tm_free(vec);
    tm_free(m);
    tm_free(back);
    tm_free(x);
}

TEST(unfold_views_windows)
{
    tm_tensor *x = iota(7, (int64_t[]){7}, 1, TM_F32);
    tm_tensor *w = tm_unfold(x, 0, 3, 2);
    REQUIRE(w);
    CHECK_SHAPE(w, 3, 3);
    CHECK_VALUES(w, ((double[]){0, 1, 2, 2, 3, 4, 4, 5, 6}), 9, 0, 0);
    CHECK(tm_storage_of(w) == tm_storage_of(x));
    tm_free(w);
    tm_free(x);
}

TEST(nonzero_and_masked_select_keep_row_major_order)
{
    tm_tensor *x = tt_tensor((double[]){0, 2, 0, NAN, -1, 0},
                             (int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *nz = tm_nonzero(x);
    REQUIRE(nz);
    CHECK_SHAPE(nz, 3, 2);
    CHECK_INT(tm_dtype_of(nz), TM_I64);
    CHECK_VALUES(nz, ((double[]){0, 1, 1, 0, 1, 1}), 6, 0, 0);
    tm_tensor *m = tm_binary_scalar(TM_OP_NE, x, 0.0);
    tm_tensor *row = m ? tm_select(m, 0, 1) : NULL; /* broadcast [3] */
    tm_tensor *s = row ? tm_masked_select(x, row) : NULL;
    REQUIRE(s);
    CHECK_VALUES(s, ((double[]){0, 2, NAN, -1}), 4, 0, 0);
    tm_tensor *z = tm_zeros((int64_t[]){0, 4}, 2, TM_BOOL);
    tm_tensor *nz0 = z ? tm_nonzero(z) : NULL;
    REQUIRE(nz0);
    CHECK_SHAPE(nz0, 0, 2);
    tm_free(nz);
    tm_free(m);
    tm_free(row);
    tm_free(s);
    tm_free(z);
    tm_free(nz0);
    tm_free(x);
}

TEST(take_along_dim_and_repeat_interleave)
{
    tm_tensor *x = iota(6, (int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *i = ix((int64_t[]){2, 0}, (int64_t[]){1, 2}, 2);
    tm_tensor *t = tm_take_along_dim(x, i, (int[]){1});
    tm_tensor *f = tm_take_along_dim(x, i, NULL);
    REQUIRE(t && f);
    CHECK_SHAPE(t, 2, 2); /* index broadcast over dim 0 */
    CHECK_VALUES(t, ((double[]){2, 0, 5, 3}), 4, 0, 0);
    CHECK_VALUES(f, ((double[]){2, 0}), 2, 0, 0);
    tm_tensor *rep = ix((int64_t[]){0, 2, 1}, (int64_t[]){3}, 1);
    tm_tensor *r = tm_repeat_interleave(x, rep, (int[]){-1}, 3);
    tm_tensor *r2 = tm_repeat_interleave_int(x, 2, NULL, -1);
    REQUIRE(r && r2);
    CHECK_VALUES(r, ((double[]){1, 1, 2, 4, 4, 5}), 6, 0, 0);
    CHECK_SHAPE(r2, 12);
    CHECK_VALUES(r2, ((double[]){0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}), 12,
                 0, 0);
    tm_free(t);
    tm_free(f);
    tm_free(i);
    tm_free(rep);
    tm_free(r);
    tm_free(r2);
    tm_free(x);
}

TEST(view_dtype_reinterprets_bytes)
{
    tm_tensor *x = tt_tensor((double[]){1, -2}, (int64_t[]){1, 2}, 2, TM_F32);
    tm_tensor *i = tm_view_dtype(x, TM_I32), *b = tm_view_dtype(x, TM_U8);
    tm_tensor *d = tm_view_dtype(x, TM_F64);
    REQUIRE(i && b && d);
    CHECK_VALUES(i, ((double[]){1065353216.0, -1073741824.0}), 2, 0, 0);
    CHECK_SHAPE(b, 1, 8);
    CHECK_SHAPE(d, 1, 1);
    CHECK(tm_storage_of(i) == tm_storage_of(x));
    tm_free(i);
    tm_free(b);
    tm_free(d);
    tm_free(x);
}

TEST(im2col_and_col2im_are_adjoint)
{
    /* x [1,1,3,3], kernel 2: 4 blocks; each column is one 2x2 window */
    tm_tensor *x = iota(9, (int64_t[]){1, 1, 3, 3}, 4, TM_F32);
    tm_fold_opts o = tm_fold_defaults();
    o.kernel[0] = o.kernel[1] = 2;
    tm_tensor *c = tm_im2col(x, &o);
    REQUIRE(c);
    CHECK_SHAPE(c, 1, 4, 4);
    CHECK_VALUES(c, ((double[]){0, 1, 3, 4, 1, 2, 4, 5, 3, 4, 6, 7, 4, 5, 7,
                                8}),
                 16, 0, 0);
    tm_tensor *ones = tm_ones((int64_t[]){1, 4, 4}, 3, TM_F32);
    tm_tensor *cnt = ones ? tm_col2im(ones, (int64_t[]){3, 3}, &o) : NULL;
    REQUIRE(cnt); /* how many windows cover each pixel */
    CHECK_VALUES(cnt, ((double[]){1, 2, 1, 2, 4, 2, 1, 2, 1}), 9, 0, 0);
    tm_free(c);
    tm_free(ones);
    tm_free(cnt);
    tm_free(x);
}

/* ------------------------------------------------------------ errors */

TEST(bad_arguments_name_the_function)
{
    tm_tensor *x = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *v = tm_zeros((int64_t[]){3}, 1, TM_F32);
    tm_tensor *fi = tm_zeros((int64_t[]){2, 1}, 2, TM_F32);
    tm_tensor *neg = ix((int64_t[]){-1, 1}, (int64_t[]){2}, 1);
    REQUIRE(x && v && fi && neg);
    CHECK_NULL_ERR(tm_flip(x, (int[]){1, -1}, 2), TM_EINVAL,
                   "tm_flip: dim 1 appears more than once");
    CHECK_NULL_ERR(tm_flip(NULL, NULL, 0), TM_EINVAL, "tm_flip");
    CHECK_NULL_ERR(tm_fliplr(v), TM_EINVAL, "tm_fliplr: input must be >= 2-d");
    CHECK_NULL_ERR(tm_roll(x, (int64_t[]){1, 1}, 2, (int[]){0}, 1), TM_EINVAL,
                   "tm_roll: shifts and dims must align");
    CHECK_NULL_ERR(tm_roll(x, NULL, 0, NULL, 0), TM_EINVAL, "tm_roll");
    CHECK_NULL_ERR(tm_diagonal(v, 0, 0, 1), TM_EINVAL, "tm_diagonal");
    CHECK_NULL_ERR(tm_diagonal(x, 0, 0, -2), TM_EINVAL, "both dim 0");
    tm_tensor *cube = tm_unsqueeze(fi, 0);
    CHECK_NULL_ERR(tm_diag(cube, 0), TM_EINVAL, "tm_diag: expects a 1-D");
    tm_free(cube);
    tm_tensor *far = tm_diag(fi, INT64_MAX); /* past the matrix: empty */
    CHECK(far && tm_numel(far) == 0);
    tm_free(far);
    CHECK_NULL_ERR(tm_diag(v, INT64_MAX), TM_EOVERFLOW, "too large");
    CHECK_NULL_ERR(tm_unfold(x, 1, 4, 1), TM_EINVAL, "tm_unfold: size 4");
    CHECK_NULL_ERR(tm_unfold(x, 1, 2, 0), TM_EINVAL, "step 0");
    CHECK_NULL_ERR(tm_masked_select(x, x), TM_EDTYPE, "mask must be bool");
    CHECK_NULL_ERR(tm_take_along_dim(x, x, NULL), TM_EDTYPE, "integer");
    CHECK_NULL_ERR(tm_take_along_dim(x, neg, (int[]){0}), TM_ESHAPE,
                   "same number of dims");
    CHECK_NULL_ERR(tm_repeat_interleave(x, neg, (int[]){0}, -1), TM_EINVAL,
                   "must not be negative");
    CHECK_NULL_ERR(tm_repeat_interleave(x, x, NULL, -1), TM_EDTYPE,
                   "integer tensor");
    CHECK_NULL_ERR(tm_repeat_interleave_int(x, 2, (int[]){0}, 5), TM_EINVAL,
                   "output_size = 5");
    tm_tensor *t = tm_transpose(x, 0, 1);
    CHECK_NULL_ERR(tm_view_dtype(t, TM_I16), TM_EINVAL, "stride must be 1");
    CHECK_NULL_ERR(tm_view_dtype(x, TM_Q8_0), TM_EDTYPE, "dense");
    CHECK_NULL_ERR(tm_im2col(v, NULL), TM_ESHAPE, "tm_im2col");
    CHECK_NULL_ERR(tm_col2im(x, NULL, NULL), TM_EINVAL, "output_size");
    tm_free(t);
    tm_free(x);
    tm_free(v);
    tm_free(fi);
    tm_free(neg);
}

/* Every allocation of a composed op failing in turn: the error comes back
 * as TM_ENOMEM and nothing leaks. */
static tm_status composed_ops(void)
{
    tm_tensor *x = tm_arange(0, 12, 1, TM_F32), *m = NULL, *nz = NULL,
              *fl = NULL, *ro = NULL, *dg = NULL, *c = NULL;
    tm_status st = TM_ENOMEM;
    tm_fold_opts o = tm_fold_defaults();
    o.kernel[0] = o.kernel[1] = 2;
    if (!x || !(m = tm_reshape(x, (int64_t[]){1, 1, 3, 4}, 4))) goto done;
    if (!(nz = tm_nonzero(m)) || !(fl = tm_flip(m, (int[]){2, 3}, 2)) ||
        !(ro = tm_roll(m, (int64_t[]){1}, 1, NULL, 0)) ||
        !(dg = tm_diag(x, 1)) || !(c = tm_im2col(m, &o)))
        goto done;
    st = TM_OK;
done:
    if (st) st = tm_last_status();
    tm_free(x);
    tm_free(m);
    tm_free(nz);
    tm_free(fl);
    tm_free(ro);
    tm_free(dg);
    tm_free(c);
    return st;
}

TEST(composed_ops_survive_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(composed_ops, 10);
}

/* --------------------------------------------------------- gradients */

typedef struct {
    int mode;
} gctx;

/* in[0] or its transpose (non-contiguous) by mode bit 0. */
static tm_tensor *src(tm_tensor *const *in, const gctx *k)
{
    return k->mode & 1 ? tm_transpose(in[0], 0, -1) : tm_retain(in[0]);
}

static tm_tensor *g_flip(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c), *r = s ? tm_flip(s, (int[]){0, -1}, 2) : NULL;
    tm_free(s);
    return r;
}

static tm_tensor *g_roll(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c);
    tm_tensor *r = s ? tm_roll(s, (int64_t[]){2, -1}, 2, (int[]){0, 1}, 2)
                     : NULL;
    tm_free(s);
    return r;
}

static tm_tensor *g_diagonal(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c), *r = s ? tm_diagonal(s, -1, 0, 1) : NULL;
    tm_free(s);
    return r;
}

static tm_tensor *g_diag(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c), *r = s ? tm_diag(s, 2) : NULL;
    tm_free(s);
    return r;
}

static tm_tensor *g_unfold(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c), *r = s ? tm_unfold(s, 0, 2, 1) : NULL;
    tm_free(s);
    return r;
}

static tm_tensor *g_masked_select(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c);
    tm_tensor *m = s ? tm_binary_scalar(TM_OP_GT, s, 0.0) : NULL;
    tm_tensor *r = m ? tm_masked_select(s, m) : NULL;
    tm_free(s);
    tm_free(m);
    return r;
}

static tm_tensor *g_take(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c);
    tm_tensor *i = ix((int64_t[]){1, 1, 0}, (int64_t[]){3, 1}, 2);
    tm_tensor *r = s && i ? tm_take_along_dim(s, i, (int[]){1}) : NULL;
    tm_free(s);
    tm_free(i);
    return r;
}

static tm_tensor *g_repeat(tm_tensor *const *in, void *c)
{
    tm_tensor *s = src(in, c);
    tm_tensor *rep = ix((int64_t[]){3, 0, 1}, (int64_t[]){3}, 1);
    tm_tensor *r = s && rep ? tm_repeat_interleave(s, rep, (int[]){0}, -1)
                            : NULL;
    tm_free(s);
    tm_free(rep);
    return r;
}

static tm_tensor *g_im2col(tm_tensor *const *in, void *c)
{
    (void)c;
    tm_fold_opts o = tm_fold_defaults();
    o.kernel[0] = 2;
    o.kernel[1] = 3;
    o.padding[0] = 1;
    o.stride[1] = 2;
    return tm_im2col(in[0], &o);
}

static tm_tensor *g_col2im(tm_tensor *const *in, void *c)
{
    (void)c;
    tm_fold_opts o = tm_fold_defaults();
    o.kernel[0] = o.kernel[1] = 2;
    o.dilation[1] = 2;
    return tm_col2im(in[0], (int64_t[]){3, 4}, &o);
}

TEST(gradients_match_finite_differences)
{
    struct {
        const char *name;
        tt_gc_fn f;
        int64_t shape[4];
        int nd;
    } cases[] = {
        {"flip", g_flip, {3, 4}, 2},
        {"roll", g_roll, {3, 4}, 2},
        {"diagonal", g_diagonal, {3, 4}, 2},
        {"diag", g_diag, {3, 3}, 2},
        {"unfold", g_unfold, {4, 3}, 2},
        {"masked_select", g_masked_select, {3, 4}, 2},
        {"take_along_dim", g_take, {3, 3}, 2},
        {"repeat_interleave", g_repeat, {3, 3}, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int mode = 0; mode < 2; mode++) {
            gctx k = {mode};
            tm_tensor *x = tt_leaf(cases[i].shape, cases[i].nd,
                                   (uint64_t)(11 + i));
            REQUIRE(x);
            GRADCHECK(cases[i].name, cases[i].f, &k, &x, 1, TOL);
            tm_free(x);
        }
    tm_tensor *v = TT_LEAF(3, 4), *img = TT_LEAF(5, 2, 2, 4, 5);
    tm_tensor *cols = TT_LEAF(7, 1, 8, 4);
    REQUIRE(v && img && cols);
    gctx k = {0};
    GRADCHECK("diag_embed", g_diag, &k, &v, 1, TOL);
    GRADCHECK("im2col", g_im2col, NULL, &img, 1, TOL);
    GRADCHECK("col2im", g_col2im, NULL, &cols, 1, TOL);
    tm_free(v);
    tm_free(img);
    tm_free(cols);
}

TEST(null_tensor_arguments_are_reported)
{
    tm_tensor *x = tm_zeros((int64_t[]){2, 2}, 2, TM_F32);
    tm_tensor *i = tm_zeros((int64_t[]){2, 2}, 2, TM_I64);
    tm_tensor *m = tm_zeros((int64_t[]){2, 2}, 2, TM_BOOL);
    REQUIRE(x && i && m);
    int d = 0;
    int64_t s = 1;
    CHECK_NULL_ERR(tm_flip(NULL, &d, 1), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_fliplr(NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_flipud(NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_flip(x, NULL, 1), TM_EINVAL, "dims is NULL");
    CHECK_NULL_ERR(tm_roll(NULL, &s, 1, &d, 1), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_roll(x, &s, 1, NULL, 1), TM_EINVAL, "dims is NULL");
    CHECK_NULL_ERR(tm_diagonal(NULL, 0, 0, 1), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_diag(NULL, 0), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_unfold(NULL, 0, 1, 1), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_nonzero(NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_masked_select(NULL, m), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_masked_select(x, NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_take_along_dim(NULL, i, &d), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_take_along_dim(x, NULL, &d), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_repeat_interleave(NULL, i, &d, -1), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_repeat_interleave(x, NULL, &d, -1), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_repeat_interleave_int(NULL, 2, &d, -1), TM_EINVAL,
                   "NULL");
    CHECK_NULL_ERR(tm_view_dtype(NULL, TM_F32), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_im2col(NULL, NULL), TM_EINVAL, "NULL");
    CHECK_NULL_ERR(tm_col2im(NULL, &s, NULL), TM_EINVAL, "NULL");
    tm_free(x);
    tm_free(i);
    tm_free(m);
}
