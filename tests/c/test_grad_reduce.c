/* test_grad_reduce.c — gradients of the reductions (sum, mean, prod, max,
 * min, var, std, logsumexp, norm), max_dim / min_dim, cumsum, sort and
 * topk: central-difference checks in F64 (gradcheck.h; tol 1e-6 for all:
 * every function here is smooth near the random points used, with no ties
 * in normal random data), on contiguous, transposed and step-sliced
 * inputs, keepdim true and false, negative dims, all dims and 0-d inputs;
 * exact checks for the special rules (zeros in prod, ties in max, norm at
 * 0); one F32 run per op (gradient shape and dtype). */
#include "gradcheck.h"

#define TOL 1e-6

/* How f sees its input: as is, transposed (dims 0, 1), or every second
 * element of the last dim. */
enum { V_NONE, V_T, V_STEP };

static tm_tensor *view_of(tm_tensor *x, int v)
{
    if (v == V_T) return tm_transpose(x, 0, 1);
    if (v == V_STEP) return tm_slice(x, -1, 0, TM_END, 2);
    return tm_retain(x);
}

enum { K_REDUCE, K_MAXDIM, K_MINDIM, K_CUMSUM, K_SORT, K_TOPK };

typedef struct {
    int kind;
    tm_reduce_op op;
    int dims[4], nd; /* nd 0: all dims */
    bool keep;
    double p;   /* correction or order; k for topk; descending for sort */
    int view;
} rctx;

static tm_tensor *f_red(tm_tensor *const *in, void *vc)
{
    const rctx *c = vc;
    tm_tensor *x = view_of(in[0], c->view), *y = NULL, *ix = NULL;
    if (!x) return NULL;
    switch (c->kind) {
    case K_REDUCE:
        y = tm_reduce(c->op, x, c->nd ? c->dims : NULL, c->nd, c->p, c->keep);
        break;
    case K_MAXDIM: tm_max_dim(x, c->dims[0], c->keep, &y, &ix); break;
    case K_MINDIM: tm_min_dim(x, c->dims[0], c->keep, &y, &ix); break;
    case K_CUMSUM: y = tm_cumsum(x, c->dims[0]); break;
    case K_SORT: tm_sort(x, c->dims[0], c->p != 0, &y, NULL); break;
    case K_TOPK: tm_topk(x, (int64_t)c->p, c->dims[0], true, &y, NULL); break;
    }
    tm_free(ix);
    tm_free(x);
    return y;
}

/* The same f on an F32 copy of x: runs backward from sum(out) and checks
 * that the gradient has x's shape and dtype F32. */
static void smoke_f32(const char *file, int line, rctx *c, tm_tensor *x64)
{
    bool prev = tm_no_grad_begin();
    tm_tensor *x = tm_to_dtype(x64, TM_F32);
    tm_no_grad_end(prev);
    tm_tensor *y = NULL, *l = NULL;
    if (!x || tm_requires_grad_(x, true)) goto fail;
    y = f_red(&x, c);
    l = y ? tm_sum(y, NULL, 0, false) : NULL;
    if (!l || tm_backward(l)) goto fail;
    tm_tensor *g = tm_grad(x);
    if (!g || tm_dtype_of(g) != TM_F32 || tm_ndim(g) != tm_ndim(x) ||
        memcmp(tm_shape(g), tm_shape(x), sizeof(int64_t) * (size_t)tm_ndim(x)))
        tt_fail(file, line, "F32 gradient has the wrong shape or dtype");
    goto done;
fail:
    tt_fail(file, line, "F32 run failed: %s", tm_last_error());
done:
    tm_free(l);
    tm_free(y);
    tm_free(x);
}
#define SMOKE(c, x) smoke_f32(__FILE__, __LINE__, (c), (x))

/* Gradcheck of one reduction on a leaf of the given shape and seed. */
static void check_red(const char *file, int line, const char *name, rctx c,
                      tm_tensor *x)
{
    if (!x) {
        tt_fail(file, line, "%s: no leaf: %s", name, tm_last_error());
        return;
    }
    tt_gradcheck_at(file, line, name, f_red, &c, &x, 1, TOL);
    tm_free(x);
}
#define RED(name, c, x) check_red(__FILE__, __LINE__, (name), (c), (x))

static const struct {
    const char *name;
    tm_reduce_op op;
    double p;
} ROPS[] = {
    {"sum", TM_RED_SUM, 0},       {"mean", TM_RED_MEAN, 0},
    {"prod", TM_RED_PROD, 0},     {"max", TM_RED_MAX, 0},
    {"min", TM_RED_MIN, 0},       {"var", TM_RED_VAR, 1},
    {"var0", TM_RED_VAR, 0},      {"std", TM_RED_STD, 1},
    {"std0", TM_RED_STD, 0},      {"logsumexp", TM_RED_LOGSUMEXP, 0},
    {"norm2", TM_RED_NORM, 2},    {"norm1", TM_RED_NORM, 1},
    {"norm_inf", TM_RED_NORM, INFINITY},
    {"norm_-inf", TM_RED_NORM, -INFINITY},
    {"norm3", TM_RED_NORM, 3},    {"norm0.5", TM_RED_NORM, 0.5},
    {"norm0", TM_RED_NORM, 0},
};
#define NROPS (int)(sizeof ROPS / sizeof ROPS[0])

TEST(grad_reductions_contiguous_dims_keepdim)
{
    for (int i = 0; i < NROPS; i++) {
        rctx c = {K_REDUCE, ROPS[i].op, {1}, 1, false, ROPS[i].p, V_NONE};
        RED(ROPS[i].name, c, TT_LEAF(10 + i, 3, 4));
        c.keep = true;
        c.dims[0] = -1;
        RED(ROPS[i].name, c, TT_LEAF(40 + i, 2, 3, 4));
        rctx two = {K_REDUCE, ROPS[i].op, {0, 2}, 2, true, ROPS[i].p, V_NONE};
        RED(ROPS[i].name, two, TT_LEAF(70 + i, 2, 3, 4));
        two.keep = false;
        RED(ROPS[i].name, two, TT_LEAF(100 + i, 2, 3, 4));
    }
}

TEST(grad_reductions_all_dims_and_0d)
{
    for (int i = 0; i < NROPS; i++) {
        rctx c = {K_REDUCE, ROPS[i].op, {0}, 0, false, ROPS[i].p, V_NONE};
        RED(ROPS[i].name, c, TT_LEAF(130 + i, 2, 3));
        c.keep = true;
        RED(ROPS[i].name, c, TT_LEAF(160 + i, 4));
        /* 0-d: reducing nothing (var/std with correction 1 is NaN). */
        if (ROPS[i].op == TM_RED_STD || ROPS[i].op == TM_RED_VAR) continue;
        rctx z = {K_REDUCE, ROPS[i].op, {-1}, 1, false, ROPS[i].p, V_NONE};
        RED(ROPS[i].name, z, tt_leaf(NULL, 0, 190 + (uint64_t)i));
    }
}

TEST(grad_reductions_non_contiguous)
{
    for (int i = 0; i < NROPS; i++) {
        rctx c = {K_REDUCE, ROPS[i].op, {0}, 1, false, ROPS[i].p, V_T};
        RED(ROPS[i].name, c, TT_LEAF(220 + i, 3, 4));
        c.view = V_STEP;
        c.dims[0] = -1;
        c.keep = true;
        RED(ROPS[i].name, c, TT_LEAF(250 + i, 3, 6));
        rctx t = {K_REDUCE, ROPS[i].op, {0}, 0, false, ROPS[i].p, V_T};
        RED(ROPS[i].name, t, TT_LEAF(280 + i, 3, 2, 2));
    }
}

TEST(grad_reductions_f32_smoke)
{
    for (int i = 0; i < NROPS; i++) {
        rctx c = {K_REDUCE, ROPS[i].op, {-1}, 1, false, ROPS[i].p, V_T};
        tm_tensor *x = TT_LEAF(310 + i, 3, 4);
        REQUIRE(x);
        SMOKE(&c, x);
        tm_free(x);
    }
}

/* x (F64, requires grad) with the given values. */
static tm_tensor *leaf_of(const double *v, const int64_t *shape, int nd)
{
    tm_tensor *x = tm_from_buffer(v, shape, nd, TM_F64);
    if (x && tm_requires_grad_(x, true)) {
        tm_free(x);
        return NULL;
    }
    return x;
}

/* The gradient of sum(f(x)) with f from c, compared with want. */
static void grad_is(const char *file, int line, rctx c, tm_tensor *x,
                    const double *want)
{
    tm_tensor *y = x ? f_red(&x, &c) : NULL;
    tm_tensor *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    if (!l || tm_backward(l)) {
        tt_fail(file, line, "backward failed: %s", tm_last_error());
    } else {
        int64_t n = tm_numel(x);
        double v[32];
        if (!tm_grad(x) || n > 32 ||
            tm_copy_to_buffer(tm_grad(x), v, sizeof v, TM_F64))
            tt_fail(file, line, "no gradient: %s", tm_last_error());
        else
            for (int64_t i = 0; i < n; i++)
                if (!(fabs(v[i] - want[i]) <= 1e-12))
                    tt_fail(file, line, "grad[%lld] = %.17g, expected %.17g",
                            (long long)i, v[i], want[i]);
    }
    tm_free(l);
    tm_free(y);
    tm_free(x);
}
#define GRAD_IS(c, x, ...) grad_is(__FILE__, __LINE__, (c), (x), \
                                   (double[]){__VA_ARGS__})

TEST(grad_prod_with_zeros_is_the_product_of_the_others)
{
    /* rows: no zero, one zero, two zeros */
    double v[] = {2, 3, 4, 2, 0, 5, 0, 3, 0};
    rctx c = {K_REDUCE, TM_RED_PROD, {1}, 1, false, 0, V_NONE};
    GRAD_IS(c, leaf_of(v, (int64_t[]){3, 3}, 2), 12, 8, 6, 0, 10, 0, 0, 0,
            0);
    /* gradcheck through the zeros (prod is linear in each element) */
    RED("prod zeros", c, leaf_of(v, (int64_t[]){3, 3}, 2));
    rctx all = {K_REDUCE, TM_RED_PROD, {0}, 0, false, 0, V_T};
    RED("prod zeros all", all, leaf_of(v + 3, (int64_t[]){2, 3}, 2));
}

TEST(grad_max_ties_share_evenly_and_norm_at_zero_is_zero)
{
    double v[] = {1, 3, 3, 2, 3, 3, 3, 3};
    rctx mx = {K_REDUCE, TM_RED_MAX, {0}, 0, false, 0, V_NONE};
    GRAD_IS(mx, leaf_of(v, (int64_t[]){4}, 1), 0, 0.5, 0.5, 0);
    rctx mn = {K_REDUCE, TM_RED_MIN, {-1}, 1, true, 0, V_NONE};
    GRAD_IS(mn, leaf_of(v, (int64_t[]){2, 4}, 2), 1, 0, 0, 0, 0.25, 0.25,
            0.25, 0.25);
    double z[] = {0, 0, 0};
    for (int k = 0; k < 4; k++) {
        double ps[] = {2, 1, INFINITY, 0.5};
        rctx nm = {K_REDUCE, TM_RED_NORM, {0}, 0, false, ps[k], V_NONE};
        GRAD_IS(nm, leaf_of(z, (int64_t[]){3}, 1), 0, 0, 0);
    }
    rctx sd = {K_REDUCE, TM_RED_STD, {0}, 0, false, 1, V_NONE};
    double same[] = {2, 2};
    GRAD_IS(sd, leaf_of(same, (int64_t[]){2}, 1), 0, 0);
}

TEST(grad_max_dim_min_dim_scatter_to_the_indices)
{
    for (int k = 0; k < 2; k++) {
        int kind = k ? K_MINDIM : K_MAXDIM;
        rctx c = {kind, 0, {1}, 1, false, 0, V_NONE};
        RED("max_dim", c, TT_LEAF(400 + k, 3, 4));
        c.keep = true;
        c.dims[0] = -1;
        RED("max_dim keep", c, TT_LEAF(402 + k, 2, 3, 4));
        c.view = V_T;
        c.dims[0] = 0;
        RED("max_dim transposed", c, TT_LEAF(404 + k, 3, 4));
        c.view = V_STEP;
        c.keep = false;
        RED("max_dim step", c, TT_LEAF(406 + k, 3, 6));
        rctx z = {kind, 0, {0}, 1, false, 0, V_NONE};
        RED("max_dim 0-d", z, tt_leaf(NULL, 0, 408 + (uint64_t)k));
        rctx s = {kind, 0, {1}, 1, false, 0, V_T};
        tm_tensor *x = TT_LEAF(410 + k, 3, 4);
        REQUIRE(x);
        SMOKE(&s, x);
        tm_free(x);
    }
    double v[] = {1, 5, 2, 7, 0, 3};
    rctx c = {K_MAXDIM, 0, {1}, 1, false, 0, V_NONE};
    GRAD_IS(c, leaf_of(v, (int64_t[]){2, 3}, 2), 0, 1, 0, 1, 0, 0);
}

TEST(grad_cumsum_is_a_reverse_cumsum)
{
    rctx c = {K_CUMSUM, 0, {1}, 1, false, 0, V_NONE};
    RED("cumsum", c, TT_LEAF(420, 3, 4));
    c.dims[0] = -3;
    RED("cumsum dim -3", c, TT_LEAF(421, 3, 2, 2));
    c.view = V_T;
    c.dims[0] = -1;
    RED("cumsum transposed", c, TT_LEAF(422, 4, 3));
    c.view = V_STEP;
    RED("cumsum step", c, TT_LEAF(423, 2, 6));
    rctx z = {K_CUMSUM, 0, {0}, 1, false, 0, V_NONE};
    RED("cumsum 0-d", z, tt_leaf(NULL, 0, 424));
    /* every second element: d sum(cumsum(v)) / dv_j = elements from j on */
    GRAD_IS(c, leaf_of((double[]){1, 2, 3, 4, 5, 6}, (int64_t[]){6}, 1), 3,
            0, 2, 0, 1, 0);
    tm_tensor *x = TT_LEAF(425, 3, 4);
    REQUIRE(x);
    SMOKE(&c, x);
    tm_free(x);
}

TEST(grad_sort_and_topk_values_scatter_through_indices)
{
    for (int desc = 0; desc < 2; desc++) {
        rctx c = {K_SORT, 0, {1}, 1, false, desc, V_NONE};
        RED("sort", c, TT_LEAF(430 + desc, 3, 4));
        c.dims[0] = -2;
        c.view = V_T;
        RED("sort transposed", c, TT_LEAF(432 + desc, 3, 4));
        c.view = V_STEP;
        c.dims[0] = -1;
        RED("sort step", c, TT_LEAF(434 + desc, 2, 6));
    }
    rctx z = {K_SORT, 0, {0}, 1, false, 0, V_NONE};
    RED("sort 0-d", z, tt_leaf(NULL, 0, 436));
    rctx t = {K_TOPK, 0, {1}, 1, false, 2, V_NONE};
    RED("topk", t, TT_LEAF(440, 3, 5));
    t.dims[0] = 0;
    t.view = V_T;
    RED("topk transposed", t, TT_LEAF(441, 3, 5));
    t.p = 0;
    RED("topk k=0", t, TT_LEAF(442, 3, 5));
    rctx tz = {K_TOPK, 0, {-1}, 1, false, 1, V_NONE};
    RED("topk 0-d", tz, tt_leaf(NULL, 0, 443));
    rctx sm = {K_SORT, 0, {-1}, 1, false, 1, V_T};
    tm_tensor *x = TT_LEAF(444, 3, 4);
    REQUIRE(x);
    SMOKE(&sm, x);
    rctx tk = {K_TOPK, 0, {-1}, 1, false, 2, V_STEP};
    SMOKE(&tk, x);
    tm_free(x);
    /* indices still come back when asked for, alongside recorded values */
    tm_tensor *v = NULL, *ix = NULL;
    tm_tensor *y = leaf_of((double[]){3, 1, 2}, (int64_t[]){3}, 1);
    REQUIRE(y);
    CHECK(tm_sort(y, 0, false, &v, &ix) == TM_OK);
    CHECK(v && ix && tm_requires_grad(v) && !tm_requires_grad(ix));
    CHECK(v && strcmp(tm_grad_fn_name(v), "SortBackward") == 0);
    tm_free(v);
    tm_free(ix);
    tm_free(y);
}
