/* test_grad_shape.c — gradients of views, copies, indexing and shaping ops:
 * GRADCHECK in F64 (tol 1e-6: every function here is linear in its inputs,
 * so the central difference is exact up to rounding, ~1e-10) on
 * contiguous and non-contiguous inputs (views applied inside f), negative
 * dims and indices, 0-size cases and I32 indices; then one F32 run per op
 * checking the gradient's shape and dtype. */
#include "gradcheck.h"

#define TOL 1e-6

/* An index tensor of dtype dt from int64 values. */
static tm_tensor *ix(tm_dtype dt, const int64_t *v, const int64_t *shape,
                     int nd)
{
    tm_tensor *a = tm_from_buffer(v, shape, nd, TM_I64);
    if (!a || dt == TM_I64) return a;
    tm_tensor *b = tm_to_dtype(a, dt);
    tm_free(a);
    return b;
}

static void free_all(tm_tensor **ts, int n)
{
    for (int i = 0; i < n; i++) tm_free(ts[i]);
}

/* x transposed over its first and last dims (a non-contiguous view). */
static tm_tensor *tr(const tm_tensor *x)
{
    return tm_transpose(x, 0, -1);
}

/* g(f_inner(x)) helpers: apply op to in[0] or to its transpose. */
typedef struct {
    int mode; /* which variant */
    const tm_tensor *index;
} ctx_t;

/* ---------------------------------------------------------------- views */

static tm_tensor *f_transpose(tm_tensor *const *in, void *c)
{
    (void)c;
    return tm_transpose(in[0], -1, 1);
}

static tm_tensor *f_permute(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_permute(in[0], (int[]){-1, 0, 1}, 3);
    tm_tensor *t = tr(in[0]);
    tm_tensor *p = t ? tm_permute(t, (int[]){1, 2, 0}, 3) : NULL;
    tm_free(t);
    return p;
}

static tm_tensor *f_view(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_view(in[0], (int64_t[]){6, -1}, 2);
    /* [2,3,4] -> transpose(0,1) [3,2,4] -> split the last dim */
    tm_tensor *t = tm_transpose(in[0], 0, 1);
    tm_tensor *v = t ? tm_view(t, (int64_t[]){3, 2, 2, 2}, 4) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_reshape(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_reshape(in[0], (int64_t[]){4, -1}, 2);
    tm_tensor *t = tr(in[0]); /* non-contiguous: the copy path */
    tm_tensor *v = t ? tm_reshape(t, (int64_t[]){-1}, 1) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_flatten(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_flatten(in[0], 1, -1);
    tm_tensor *t = tm_permute(in[0], (int[]){2, 0, 1}, 3);
    tm_tensor *v = t ? tm_flatten(t, 0, 1) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_slice(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    switch (k->mode) {
    case 0: return tm_slice(in[0], -1, 1, TM_END, 2);
    case 1: return tm_slice(in[0], 0, -4, -1, 2);
    case 2: return tm_slice(in[0], 1, 3, 3, 1); /* empty */
    default: {
        tm_tensor *t = tr(in[0]);
        tm_tensor *v = t ? tm_slice(t, 1, 0, TM_END, 3) : NULL;
        tm_free(t);
        return v;
    }
    }
}

static tm_tensor *f_narrow(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_narrow(in[0], -1, -3, 2);
    tm_tensor *t = tr(in[0]);
    tm_tensor *v = t ? tm_narrow(t, 0, 1, 3) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_select(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_select(in[0], -1, -2);
    tm_tensor *t = tr(in[0]);
    tm_tensor *v = t ? tm_select(t, 1, 2) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_squeeze(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    switch (k->mode) {
    case 0: return tm_squeeze(in[0], -2);      /* [3,1,4] -> [3,4] */
    case 1: return tm_squeeze(in[0], 0);       /* size 3: a plain view */
    case 2: return tm_squeeze_all(in[0]);      /* [3,4] */
    default: {
        tm_tensor *t = tr(in[0]);              /* [4,1,3] */
        tm_tensor *v = t ? tm_unsqueeze(t, -1) : NULL;
        tm_free(t);
        return v;
    }
    }
}

static tm_tensor *f_expand(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) /* [3,1] -> [2,3,4] */
        return tm_expand(in[0], (int64_t[]){2, -1, 4}, 3);
    tm_tensor *t = tr(in[0]); /* [1,3] */
    tm_tensor *v = t ? tm_broadcast_to(t, (int64_t[]){2, 5, 3}, 3) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_as_strided(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    switch (k->mode) {
    case 0: /* overlapping windows of a contiguous [10] */
        return tm_as_strided(in[0], (int64_t[]){3, 4}, (int64_t[]){2, 1}, 2,
                             1);
    case 1: { /* reading only the odd positions of a strided view */
        tm_tensor *t = tm_slice(in[0], 0, 1, TM_END, 2);
        tm_tensor *v = t ? tm_as_strided(t, (int64_t[]){2, 3},
                                         (int64_t[]){4, 2}, 2, 1)
                         : NULL;
        tm_free(t);
        return v;
    }
    default: { /* an input whose elements share storage (expanded) */
        tm_tensor *t = tm_expand(in[0], (int64_t[]){2, 3}, 2);
        tm_tensor *v = t ? tm_as_strided(t, (int64_t[]){3, 2},
                                         (int64_t[]){1, 0}, 2, 0)
                         : NULL;
        tm_free(t);
        return v;
    }
    }
}

static tm_tensor *f_copy(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    tm_tensor *t = tr(in[0]), *v = NULL;
    if (!t) return NULL;
    switch (k->mode) {
    case 0: v = tm_contiguous(t); break;
    case 1: v = tm_clone(t); break;
    case 2: v = tm_to_dtype(t, TM_F64); break;
    default: v = tm_to(t, TM_CPU); break;
    }
    tm_free(t);
    return v;
}

static tm_tensor *f_chain(tm_tensor *const *in, void *c)
{
    (void)c; /* [4,6] -> transpose [6,4] -> slice rows 1::2 [3,4] -> [2,6] */
    tm_tensor *t = tm_transpose(in[0], 0, 1);
    tm_tensor *s = t ? tm_slice(t, 0, 1, TM_END, 2) : NULL;
    tm_tensor *r = s ? tm_reshape(s, (int64_t[]){2, 6}, 2) : NULL;
    tm_tensor *u = r ? tm_unsqueeze(r, 0) : NULL;
    tm_free(t);
    tm_free(s);
    tm_free(r);
    return u;
}

/* ------------------------------------------------------------- indexing */

static tm_tensor *f_gather(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_gather(in[0], -1, k->index);
    tm_tensor *t = tr(in[0]);
    tm_tensor *v = t ? tm_gather(t, 0, k->index) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_scatter(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    tm_tensor *t = k->mode == 1 ? tr(in[0]) : tm_retain(in[0]), *v = NULL;
    if (!t) return NULL;
    switch (k->mode) {
    case 0:
    case 1: v = tm_scatter(t, -1, k->index, in[1]); break;
    case 2: v = tm_scatter_value(t, 1, k->index, 2.5); break;
    default: v = tm_scatter_add(t, 1, k->index, in[1]); break;
    }
    tm_free(t);
    return v;
}

static tm_tensor *f_index_select(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_index_select(in[0], 0, k->index);
    tm_tensor *t = tr(in[0]);
    tm_tensor *v = t ? tm_index_select(t, -1, k->index) : NULL;
    tm_free(t);
    return v;
}

/* -------------------------------------------------------------- shaping */

static tm_tensor *f_cat(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_cat(in, 3, 0);
    if (k->mode == 2) /* with a legacy empty [0] in the middle */
        return tm_cat(in, 3, -1);
    tm_tensor *t = tr(in[1]); /* [3,2] seen as... cat along dim -1 */
    tm_tensor *ts[3] = {in[0], t, in[2]};
    tm_tensor *v = t ? tm_cat(ts, 3, -1) : NULL;
    tm_free(t);
    return v;
}

static tm_tensor *f_stack(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    if (k->mode == 0) return tm_stack(in, 2, -1);
    tm_tensor *t = tr(in[1]);
    tm_tensor *ts[2] = {in[0], t};
    tm_tensor *v = t ? tm_stack(ts, 2, 0) : NULL;
    tm_free(t);
    return v;
}

/* cat of the pieces in reverse order (every piece reaches the output). */
static tm_tensor *f_split(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    tm_tensor *p[8] = {0}, *t = tr(in[0]); /* [5,4] */
    int np;
    if (!t) return NULL;
    switch (k->mode) {
    case 0: np = tm_split(t, 2, 0, p, 8); break;
    case 1: np = tm_split_sizes(t, (int64_t[]){1, 0, 3}, 3, -1, p, 8); break;
    default: np = tm_chunk(t, 3, -2, p, 8); break;
    }
    tm_free(t);
    if (np < 0) return NULL;
    tm_tensor *r[8];
    for (int i = 0; i < np; i++) r[i] = p[np - 1 - i];
    tm_tensor *v = tm_cat(r, np, k->mode == 1 ? -1 : 0);
    free_all(p, np);
    return v;
}

static tm_tensor *f_pad(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    switch (k->mode) {
    case 0: return tm_pad(in[0], (int64_t[]){1, 2}, 2, 0.5);
    case 1: return tm_pad(in[0], (int64_t[]){-1, 2, 1, -2}, 4, 0);
    case 2: return tm_pad(in[0], (int64_t[]){-2, -2}, 2, 0); /* [3,0] */
    default: {
        tm_tensor *t = tr(in[0]);
        tm_tensor *v = t ? tm_pad(t, (int64_t[]){0, 1, -1, 1}, 4, 3) : NULL;
        tm_free(t);
        return v;
    }
    }
}

static tm_tensor *f_repeat(tm_tensor *const *in, void *c)
{
    ctx_t *k = c;
    switch (k->mode) {
    case 0: return tm_repeat(in[0], (int64_t[]){2, 3}, 2);
    case 1: return tm_repeat(in[0], (int64_t[]){2, 1, 3}, 3);
    case 2: return tm_repeat(in[0], (int64_t[]){2, 0}, 2);
    default: {
        tm_tensor *t = tr(in[0]);
        tm_tensor *v = t ? tm_repeat(t, (int64_t[]){2, 2, 2, 1, 1, 2, 2, 2},
                                     8)
                         : NULL;
        tm_free(t);
        return v;
    }
    }
}

/* ------------------------------------------------------------ the tests */

/* Runs GRADCHECK for modes 0..nmodes-1 on fresh leaves of `shape`. */
static void check_modes(const char *name, tt_gc_fn f, int nmodes,
                        const int64_t *shape, int nd, const tm_tensor *index)
{
    for (int m = 0; m < nmodes; m++) {
        tm_tensor *x = tt_leaf(shape, nd, 10 + (uint64_t)m);
        REQUIRE(x);
        ctx_t c = {m, index};
        char label[64];
        snprintf(label, sizeof label, "%s mode %d", name, m);
        CHECK(GRADCHECK(label, f, &c, &x, 1, TOL));
        tm_free(x);
    }
}

TEST(grad_shape_transpose_permute)
{
    tm_tensor *x = TT_LEAF(1, 3, 4);
    ctx_t c = {0, NULL};
    CHECK(GRADCHECK("transpose", f_transpose, &c, &x, 1, TOL));
    tm_free(x);
    check_modes("permute", f_permute, 2, (int64_t[]){2, 3, 4}, 3, NULL);
}

TEST(grad_shape_view_reshape_flatten)
{
    check_modes("view", f_view, 2, (int64_t[]){2, 3, 4}, 3, NULL);
    check_modes("reshape", f_reshape, 2, (int64_t[]){2, 3, 4}, 3, NULL);
    check_modes("flatten", f_flatten, 2, (int64_t[]){2, 3, 4}, 3, NULL);
}

TEST(grad_shape_slice_narrow_select)
{
    check_modes("slice", f_slice, 4, (int64_t[]){5, 6}, 2, NULL);
    check_modes("narrow", f_narrow, 2, (int64_t[]){5, 6}, 2, NULL);
    check_modes("select", f_select, 2, (int64_t[]){3, 4}, 2, NULL);
}

TEST(grad_shape_squeeze_unsqueeze_expand)
{
    check_modes("squeeze", f_squeeze, 4, (int64_t[]){3, 1, 4}, 3, NULL);
    check_modes("expand", f_expand, 2, (int64_t[]){3, 1}, 2, NULL);
}

TEST(grad_shape_as_strided_overlaps_accumulate)
{
    check_modes("as_strided", f_as_strided, 2, (int64_t[]){12}, 1, NULL);
    tm_tensor *x = TT_LEAF(3, 3);
    ctx_t c = {2, NULL};
    CHECK(GRADCHECK("as_strided of an expanded input", f_as_strided, &c, &x,
                    1, TOL));
    /* overlapping windows: element k of [10] is read by every window that
     * covers it, so its gradient (upstream ones) counts the windows */
    tm_tensor *y = tm_as_strided(x, (int64_t[]){2, 2}, (int64_t[]){1, 1}, 2,
                                 0);
    REQUIRE(y);
    tm_tensor *g = tm_ones((int64_t[]){2, 2}, 2, TM_F64);
    CHECK_INT(tm_backward_ex(y, g, false), TM_OK);
    double want[] = {1, 2, 1};
    CHECK_VALUES(tm_grad(x), want, 3, 0, 0);
    tm_free(g);
    tm_free(y);
    tm_free(x);
}

TEST(grad_shape_copies)
{
    check_modes("copy", f_copy, 4, (int64_t[]){3, 4}, 2, NULL);
    check_modes("chain", f_chain, 1, (int64_t[]){4, 6}, 2, NULL);
}

TEST(grad_shape_gather_index_select)
{
    for (int k = 0; k < 2; k++) {
        tm_dtype dt = k ? TM_I32 : TM_I64;
        /* repeated indices: their gradients add up */
        tm_tensor *i1 = ix(dt, (int64_t[]){0, 3, 3, 1, 2, 2}, (int64_t[]){3, 2}, 2);
        tm_tensor *i2 = ix(dt, (int64_t[]){2, 0, 1, 2, 2, 2}, (int64_t[]){3, 2}, 2);
        tm_tensor *i3 = ix(dt, (int64_t[]){2, 0, 2}, (int64_t[]){3}, 1);
        tm_tensor *i0 = ix(dt, (int64_t[]){1}, (int64_t[]){1}, 1);
        tm_tensor *i00 = ix(dt, (int64_t[]){0}, (int64_t[]){1}, 1);
        REQUIRE(i1 && i2 && i3 && i0 && i00);
        tm_tensor *z = tm_reshape(i0, NULL, 0); /* a 0-d index */
        REQUIRE(z);
        check_modes("gather", f_gather, 1, (int64_t[]){3, 4}, 2, i1);
        /* mode 1 transposes a [4,3] input into [3,4], gathers along 0 */
        ctx_t c = {1, i2};
        tm_tensor *x = TT_LEAF(5, 4, 3);
        CHECK(GRADCHECK("gather (transposed input)", f_gather, &c, &x, 1,
                        TOL));
        tm_free(x);
        check_modes("index_select", f_index_select, 2, (int64_t[]){4, 3}, 2,
                    i3);
        check_modes("index_select 0-d index", f_index_select, 2,
                    (int64_t[]){4, 3}, 2, z);
        check_modes("index_select 0-d input", f_index_select, 1, NULL, 0,
                    i00);
        tm_free(z);
        tm_free(i00);
        tm_free(i0);
        tm_free(i1);
        tm_free(i2);
        tm_free(i3);
    }
}

TEST(grad_shape_scatter_family)
{
    for (int k = 0; k < 2; k++) {
        tm_dtype dt = k ? TM_I32 : TM_I64;
        /* distinct positions within each row (scatter is then a function) */
        tm_tensor *i1 = ix(dt, (int64_t[]){3, 0, 1, 2, 2, 3}, (int64_t[]){3, 2}, 2);
        tm_tensor *i2 = ix(dt, (int64_t[]){1, 0, 2, 1, 0, 2}, (int64_t[]){3, 2}, 2);
        REQUIRE(i1 && i2);
        for (int m = 0; m < 4; m++) {
            tm_tensor *in[2] = {m == 1 ? TT_LEAF(20, 4, 3) : TT_LEAF(20, 3, 4),
                                TT_LEAF(21, 3, 3)};
            REQUIRE(in[0] && in[1]);
            if (m == 2) /* scatter_value does not use src */
                CHECK_INT(tm_requires_grad_(in[1], false), TM_OK);
            ctx_t c = {m, m == 1 ? i2 : i1};
            char label[32];
            snprintf(label, sizeof label, "scatter mode %d", m);
            CHECK(GRADCHECK(label, f_scatter, &c, in, 2, TOL));
            free_all(in, 2);
        }
        tm_free(i1);
        tm_free(i2);
    }
    /* scatter_add with colliding indices */
    tm_tensor *i3 = ix(TM_I64, (int64_t[]){1, 1, 1, 0, 0, 2}, (int64_t[]){3, 2}, 2);
    tm_tensor *in[2] = {TT_LEAF(22, 3, 4), TT_LEAF(23, 3, 2)};
    REQUIRE(i3 && in[0] && in[1]);
    ctx_t c = {3, i3};
    CHECK(GRADCHECK("scatter_add colliding", f_scatter, &c, in, 2, TOL));
    free_all(in, 2);
    tm_free(i3);
}

TEST(grad_shape_cat_stack_split)
{
    tm_tensor *in[3] = {TT_LEAF(30, 2, 3), TT_LEAF(31, 1, 3),
                        TT_LEAF(32, 4, 3)};
    ctx_t c = {0, NULL};
    CHECK(GRADCHECK("cat dim 0", f_cat, &c, in, 3, TOL));
    free_all(in, 3);
    tm_tensor *jn[3] = {TT_LEAF(33, 3, 2), TT_LEAF(34, 2, 3),
                        TT_LEAF(35, 3, 1)};
    c.mode = 1;
    CHECK(GRADCHECK("cat dim -1 transposed", f_cat, &c, jn, 3, TOL));
    free_all(jn, 3);
    tm_tensor *kn[3] = {TT_LEAF(36, 3, 2), TT_LEAF(37, 0),
                        TT_LEAF(38, 3, 0)};
    c.mode = 2;
    CHECK(GRADCHECK("cat with empty", f_cat, &c, kn, 3, TOL));
    free_all(kn, 3);

    tm_tensor *sn[2] = {TT_LEAF(40, 2, 3), TT_LEAF(41, 2, 3)};
    c.mode = 0;
    CHECK(GRADCHECK("stack dim -1", f_stack, &c, sn, 2, TOL));
    free_all(sn, 2);
    tm_tensor *tn[2] = {TT_LEAF(42, 2, 3), TT_LEAF(43, 3, 2)};
    c.mode = 1;
    CHECK(GRADCHECK("stack transposed", f_stack, &c, tn, 2, TOL));
    free_all(tn, 2);

    check_modes("split", f_split, 3, (int64_t[]){4, 5}, 2, NULL);
}

TEST(grad_shape_pad_repeat)
{
    check_modes("pad", f_pad, 4, (int64_t[]){3, 4}, 2, NULL);
    check_modes("repeat", f_repeat, 3, (int64_t[]){2, 3}, 2, NULL);
    tm_tensor *x = TT_LEAF(50, 2, 3, 2);
    ctx_t c = {3, NULL}; /* 8 dims: more [r, s] pairs than TM_MAX_DIMS */
    CHECK(GRADCHECK("repeat 8 dims", f_repeat, &c, &x, 1, TOL));
    tm_free(x);
}

/* ------------------------------------------------- graph shape and F32 */

TEST(grad_shape_views_record_and_detach_does_not)
{
    tm_tensor *x = TT_LEAF(60, 3, 4);
    REQUIRE(x);
    tm_tensor *t = tm_transpose(x, 0, 1), *s = tm_slice(x, 0, 0, 2, 1);
    tm_tensor *d = tm_detach(x), *c = tm_contiguous(x);
    REQUIRE(t && s && d && c);
    CHECK(!tm_is_leaf(t) && tm_requires_grad(t));
    CHECK(!strcmp(tm_grad_fn_name(t), "TransposeBackward"));
    CHECK(!strcmp(tm_grad_fn_name(s), "SliceBackward"));
    CHECK(tm_is_leaf(d) && !tm_requires_grad(d));
    CHECK(c == x); /* contiguous already: x itself, no node */
    /* writes through a view of a tensor that requires grad are refused */
    CHECK_STATUS(tm_fill_(s, 1.0), TM_ESTATE, "requires grad");
    bool prev = tm_no_grad_begin();
    tm_tensor *n = tm_transpose(x, 0, 1);
    tm_no_grad_end(prev);
    CHECK(n && tm_is_leaf(n) && !tm_requires_grad(n));
    tm_tensor *ii = ix(TM_I64, (int64_t[]){0, 1}, (int64_t[]){2}, 1);
    tm_tensor *iv = tm_index_select(ii, 0, ii); /* integer: never recorded */
    CHECK(iv && tm_is_leaf(iv));
    tm_free(iv);
    tm_free(ii);
    tm_free(n);
    tm_free(c);
    tm_free(d);
    tm_free(s);
    tm_free(t);
    tm_free(x);
}

/* F32 copy of an F64 leaf, requiring grad. */
static tm_tensor *f32_leaf(const int64_t *shape, int nd, uint64_t seed)
{
    tm_tensor *a = tt_leaf(shape, nd, seed);
    bool prev = tm_no_grad_begin();
    tm_tensor *b = a ? tm_to_dtype(a, TM_F32) : NULL;
    tm_no_grad_end(prev);
    tm_free(a);
    if (b && tm_requires_grad_(b, true)) {
        tm_free(b);
        return NULL;
    }
    return b;
}

/* Runs f on F32 leaves with upstream ones and checks each gradient's
 * dtype and shape. */
static void smoke(const char *name, tt_gc_fn f, int mode,
                  const tm_tensor *index, tm_tensor **in, int n)
{
    ctx_t c = {mode, index};
    tm_tensor *out = f(in, &c);
    tm_tensor *g = out ? tm_ones_like(out) : NULL;
    if (!g || tm_backward_ex(out, g, false)) {
        tt_fail(__FILE__, __LINE__, "%s: %s", name, tm_last_error());
    } else {
        for (int i = 0; i < n; i++) {
            const tm_tensor *gr = tm_grad(in[i]);
            if (!gr || tm_dtype_of(gr) != tm_dtype_of(in[i]) ||
                tm_ndim(gr) != tm_ndim(in[i]) ||
                memcmp(tm_shape(gr), tm_shape(in[i]),
                       sizeof(int64_t) * (size_t)tm_ndim(in[i])))
                tt_fail(__FILE__, __LINE__, "%s: bad gradient of input %d",
                        name, i);
        }
    }
    tm_free(g);
    tm_free(out);
    free_all(in, n);
}

#define SMOKE1(name, f, mode, index, ...)                                     \
    do {                                                                      \
        tm_tensor *in_[1] = {f32_leaf(                                        \
            (int64_t[]){__VA_ARGS__},                                         \
            (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), 7)};   \
        REQUIRE(in_[0]);                                                      \
        smoke((name), (f), (mode), (index), in_, 1);                          \
    } while (0)

TEST(grad_shape_f32_smoke)
{
    tm_tensor *i1 = ix(TM_I32, (int64_t[]){0, 3, 3, 1, 2, 2}, (int64_t[]){3, 2}, 2);
    tm_tensor *i3 = ix(TM_I64, (int64_t[]){2, 0, 2}, (int64_t[]){3}, 1);
    REQUIRE(i1 && i3);
    SMOKE1("transpose", f_transpose, 0, NULL, 3, 4);
    SMOKE1("permute", f_permute, 1, NULL, 2, 3, 4);
    SMOKE1("view", f_view, 1, NULL, 2, 3, 4);
    SMOKE1("reshape", f_reshape, 1, NULL, 2, 3, 4);
    SMOKE1("flatten", f_flatten, 1, NULL, 2, 3, 4);
    SMOKE1("slice", f_slice, 3, NULL, 5, 6);
    SMOKE1("narrow", f_narrow, 1, NULL, 5, 6);
    SMOKE1("select", f_select, 1, NULL, 3, 4);
    SMOKE1("squeeze", f_squeeze, 0, NULL, 3, 1, 4);
    SMOKE1("squeeze_all", f_squeeze, 2, NULL, 3, 1, 4);
    SMOKE1("unsqueeze", f_squeeze, 3, NULL, 3, 1, 4);
    SMOKE1("expand", f_expand, 1, NULL, 3, 1);
    SMOKE1("as_strided", f_as_strided, 1, NULL, 12);
    SMOKE1("contiguous", f_copy, 0, NULL, 3, 4);
    SMOKE1("clone", f_copy, 1, NULL, 3, 4);
    SMOKE1("to_dtype", f_copy, 2, NULL, 3, 4); /* F32 -> F64: grad F32 */
    SMOKE1("gather", f_gather, 0, i1, 3, 4);
    SMOKE1("index_select", f_index_select, 0, i3, 4, 3);
    SMOKE1("split", f_split, 0, NULL, 4, 5);
    SMOKE1("chunk", f_split, 2, NULL, 4, 5);
    SMOKE1("pad", f_pad, 1, NULL, 3, 4);
    SMOKE1("repeat", f_repeat, 1, NULL, 2, 3);
    tm_tensor *sc[2] = {f32_leaf((int64_t[]){3, 4}, 2, 8),
                        f32_leaf((int64_t[]){3, 3}, 2, 9)};
    REQUIRE(sc[0] && sc[1]);
    smoke("scatter", f_scatter, 0, i1, sc, 2);
    /* cat / stack of F32 with F64: the result is F64, each gradient keeps
     * its input's dtype */
    tm_tensor *mix[3] = {f32_leaf((int64_t[]){2, 3}, 2, 10),
                         TT_LEAF(11, 1, 3), f32_leaf((int64_t[]){4, 3}, 2, 12)};
    REQUIRE(mix[0] && mix[1] && mix[2]);
    smoke("cat mixed", f_cat, 0, NULL, mix, 3);
    tm_tensor *st[2] = {f32_leaf((int64_t[]){2, 3}, 2, 13),
                        TT_LEAF(14, 2, 3)};
    REQUIRE(st[0] && st[1]);
    smoke("stack mixed", f_stack, 0, NULL, st, 2);
    tm_free(i1);
    tm_free(i3);
}
