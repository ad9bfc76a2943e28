/* test_scan.c — cumprod, cummax, cummin and logcumsumexp: numpy
 * references (tests/data/scan.ref from tests/gen/gen_scan.py) on one and
 * three threads, argument errors, and gradients: central differences in
 * F64 (gradcheck.h; tol 1e-6, as for the reductions: each function is
 * smooth near the points used, cummax/cummin on distinct values so no
 * tie sits within h of another) on contiguous, transposed, step-sliced and
 * 0-d inputs, exact values for cumprod through zeros and cummax through
 * ties, and the F32 gradient's dtype. */
#include "gradcheck.h"
#include "ref_dispatch.h"

#include <math.h>

#define TOL 1e-6

TEST(scan_matches_numpy_references)
{
    tt_run_ref_file("scan.ref", tt_scan_dispatch);
}

TEST(scan_references_hold_on_three_threads)
{
    tm_set_num_threads(3);
    tt_run_ref_file("scan.ref", tt_scan_dispatch);
    tm_set_num_threads(0);
}

TEST(scan_errors_name_the_function_and_the_values)
{
    tm_tensor *a = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *i = tm_zeros((int64_t[]){3}, 1, TM_I64);
    tm_tensor *v = NULL, *ix = NULL;
    REQUIRE(a && i);
    CHECK_NULL_ERR(tm_cumprod(a, -3), TM_ERANGE,
                   "tm_cumprod: dim -3 is out of range");
    CHECK_NULL_ERR(tm_logcumsumexp(i, 0), TM_EDTYPE,
                   "tm_logcumsumexp: dtype i64 is not supported");
    CHECK_NULL_ERR(tm_cumprod(NULL, 0), TM_EINVAL, "NULL");
    CHECK_STATUS(tm_cummax(a, 2, &v, &ix), TM_ERANGE,
                 "tm_cummax: dim 2 is out of range");
    CHECK(v == NULL && ix == NULL);
    CHECK_STATUS(tm_cummin(NULL, 0, &v, &ix), TM_EINVAL, "NULL");
    CHECK_STATUS(tm_cummin(a, 0, NULL, &ix), TM_EINVAL,
                 "tm_cummin: values is NULL");
    CHECK(ix == NULL);
    /* indices are optional */
    CHECK(tm_cummax(a, 1, &v, NULL) == TM_OK && v);
    tm_free(v);
    tm_free(a);
    tm_free(i);
}

/* ------------------------------------------------------------ gradients */

enum { K_CUMPROD, K_CUMMAX, K_CUMMIN, K_LCSE };
enum { V_NONE, V_T, V_STEP };

typedef struct {
    int kind, dim, view;
} sctx;

static tm_tensor *f_scan(tm_tensor *const *in, void *vc)
{
    const sctx *c = vc;
    tm_tensor *x = c->view == V_T      ? tm_transpose(in[0], 0, 1)
                   : c->view == V_STEP ? tm_slice(in[0], -1, 0, TM_END, 2)
                                       : tm_retain(in[0]);
    tm_tensor *y = NULL, *ix = NULL;
    if (!x) return NULL;
    switch (c->kind) {
    case K_CUMPROD: y = tm_cumprod(x, c->dim); break;
    case K_CUMMAX: tm_cummax(x, c->dim, &y, &ix); break;
    case K_CUMMIN: tm_cummin(x, c->dim, &y, &ix); break;
    case K_LCSE: y = tm_logcumsumexp(x, c->dim); break;
    }
    tm_free(ix);
    tm_free(x);
    return y;
}

static void check_scan(const char *file, int line, const char *name,
                       sctx c, tm_tensor *x)
{
    if (!x) {
        tt_fail(file, line, "%s: no leaf: %s", name, tm_last_error());
        return;
    }
    tt_gradcheck_at(file, line, name, f_scan, &c, &x, 1, TOL);
    tm_free(x);
}
#define SCAN(name, c, x) check_scan(__FILE__, __LINE__, (name), (c), (x))

static const char *const KIND_NAMES[] = {"cumprod", "cummax", "cummin",
                                         "logcumsumexp"};

TEST(grad_scans_pass_gradcheck_in_every_layout)
{
    for (int k = K_CUMPROD; k <= K_LCSE; k++) {
        const char *n = KIND_NAMES[k];
        SCAN(n, ((sctx){k, 1, V_NONE}), TT_LEAF(600 + k, 3, 5));
        SCAN(n, ((sctx){k, 0, V_NONE}), TT_LEAF(610 + k, 3, 5));
        SCAN(n, ((sctx){k, -2, V_NONE}), TT_LEAF(620 + k, 2, 3, 4));
        SCAN(n, ((sctx){k, -1, V_T}), TT_LEAF(630 + k, 4, 3));
        SCAN(n, ((sctx){k, 1, V_STEP}), TT_LEAF(640 + k, 2, 8));
        SCAN(n, ((sctx){k, 0, V_NONE}), tt_leaf(NULL, 0, 650 + k));
    }
}

static tm_tensor *leaf_of(const double *v, const int64_t *shape, int nd)
{
    tm_tensor *x = tm_from_buffer(v, shape, nd, TM_F64);
    if (x && tm_requires_grad_(x, true)) {
        tm_free(x);
        return NULL;
    }
    return x;
}

/* The gradient of sum(f(x)) compared with want (exactly: every value
 * here is a small integer). */
static void grad_is(const char *file, int line, sctx c, tm_tensor *x,
                    const double *want)
{
    if (!x) {
        tt_fail(file, line, "no leaf: %s", tm_last_error());
        return;
    }
    tm_tensor *y = f_scan(&x, &c);
    tm_tensor *s = y ? tm_sum(y, NULL, 0, false) : NULL;
    if (!s || tm_backward(s) != TM_OK || !tm_grad(x)) {
        tt_fail(file, line, "backward failed: %s", tm_last_error());
    } else {
        const tm_tensor *g = tm_grad(x);
        for (int64_t j = 0; j < tm_numel(g); j++) {
            double got = ((const double *)tm_data(g))[j];
            if (got != want[j])
                tt_fail(file, line, "grad[%lld] = %g, expected %g",
                        (long long)j, got, want[j]);
        }
    }
    tm_free(s);
    tm_free(y);
    tm_free(x);
}
#define GRAD_IS(c, x, ...) grad_is(__FILE__, __LINE__, (c), (x), \
                                   (double[]){__VA_ARGS__})

TEST(grad_cumprod_through_zeros_is_exact)
{
    /* rows: no zero; one zero; two zeros; a zero first.  d sum(cumprod)
     * / dx_k = sum over i >= k of the product of x_0..x_i without x_k. */
    double v[] = {2, 3, 4, /**/ 2, 0, 5, /**/ 0, 3, 0, /**/ 0, 2, 3};
    sctx c = {K_CUMPROD, 1, V_NONE};
    GRAD_IS(c, leaf_of(v, (int64_t[]){4, 3}, 2),
            1 + 3 + 12, 2 + 8, 6, /**/ 1, 2 + 10, 0, /**/ 1 + 3, 0, 0,
            /**/ 1 + 2 + 6, 0, 0);
    /* cumprod is linear in each element, so central differences are
     * exact through the zeros too */
    SCAN("cumprod zeros", c, leaf_of(v, (int64_t[]){4, 3}, 2));
    sctx t = {K_CUMPROD, 0, V_T};
    SCAN("cumprod zeros transposed", t, leaf_of(v, (int64_t[]){4, 3}, 2));
}

TEST(grad_cummax_cummin_ties_go_to_the_latest_index)
{
    /* cummax of [1, 3, 3, 2]: values from positions 0, 1, 2, 2 */
    double v[] = {1, 3, 3, 2};
    GRAD_IS(((sctx){K_CUMMAX, 0, V_NONE}), leaf_of(v, (int64_t[]){4}, 1),
            1, 1, 2, 0);
    /* cummin of [1, 3, 3, 2]: every value from position 0 */
    GRAD_IS(((sctx){K_CUMMIN, 0, V_NONE}), leaf_of(v, (int64_t[]){4}, 1),
            4, 0, 0, 0);
}

TEST(grad_logcumsumexp_is_stable_for_large_inputs)
{
    /* 1000 + small: exp would overflow; the gradient of sum(lcse(x)) is
     * sum over i >= k of softmax(x_0..x_i)_k, here finite and in (0, 4] */
    double v[] = {1000, 1001, 999, 1000.5};
    tm_tensor *x = leaf_of(v, (int64_t[]){4}, 1);
    REQUIRE(x);
    tm_tensor *y = tm_logcumsumexp(x, 0);
    tm_tensor *s = y ? tm_sum(y, NULL, 0, false) : NULL;
    REQUIRE(s && tm_backward(s) == TM_OK && tm_grad(x));
    const double *g = tm_data(tm_grad(x));
    double total = 0;
    for (int k = 0; k < 4; k++) {
        CHECK(isfinite(g[k]) && g[k] > 0);
        total += g[k];
    }
    /* each output's softmax sums to 1: 4 outputs (1e-12: 4 roundings of
     * exp and log1p) */
    CHECK(fabs(total - 4.0) < 1e-12);
    tm_free(s);
    tm_free(y);
    tm_free(x);
    SCAN("logcumsumexp large", ((sctx){K_LCSE, 0, V_NONE}),
         leaf_of(v, (int64_t[]){4}, 1));
}

TEST(grad_scans_f32_gradient_has_input_shape_and_dtype)
{
    for (int k = K_CUMPROD; k <= K_LCSE; k++) {
        tm_tensor *x = tm_rand((int64_t[]){3, 4}, 2, TM_F32);
        REQUIRE(x && tm_requires_grad_(x, true) == TM_OK);
        sctx c = {k, 1, V_NONE};
        tm_tensor *y = f_scan(&x, &c);
        tm_tensor *s = y ? tm_sum(y, NULL, 0, false) : NULL;
        REQUIRE(s && tm_backward(s) == TM_OK);
        const tm_tensor *g = tm_grad(x);
        CHECK(g && tm_dtype_of(g) == TM_F32 && tm_ndim(g) == 2 &&
              tm_shape(g)[0] == 3 && tm_shape(g)[1] == 4);
        CHECK(!strcmp(tm_grad_fn_name(y), k == K_CUMPROD  ? "CumprodBackward"
                                          : k == K_CUMMAX ? "CummaxBackward"
                                          : k == K_CUMMIN ? "CumminBackward"
                                                          : "LogcumsumexpBackward"));
        tm_free(s);
        tm_free(y);
        tm_free(x);
    }
}

/* ------------------------------------------------- allocation failures */

/* Every scan forward and backward, with a zero in cumprod's input so its
 * gradient takes the zero branch too. */
static tm_status scan_sequence(void)
{
    tm_tensor *t[10] = {0};
    tm_status st = TM_OK;
    double v[] = {1.5, 0, 2, -1, 0.5, 3, 2, 1, -2, 1, 0.25, 4};
    if (!(t[0] = tt_tensor(v, (int64_t[]){3, 4}, 2, TM_F64)) ||
        (st = tm_requires_grad_(t[0], true)))
        goto fail;
    if (!(t[1] = tm_cumprod(t[0], 1)) ||
        (st = tm_cummax(t[0], 0, &t[2], &t[3])) ||
        (st = tm_cummin(t[0], -1, &t[4], NULL)) ||
        !(t[5] = tm_logcumsumexp(t[0], 0)) ||
        !(t[6] = tm_add(t[1], t[2])) || !(t[7] = tm_add(t[4], t[5])) ||
        !(t[8] = tm_add(t[6], t[7])) ||
        !(t[9] = tm_sum(t[8], NULL, 0, false)))
        goto fail;
    st = tm_backward(t[9]);
    goto done;
fail:
    if (!st) st = tm_last_status();
done:
    for (int i = 0; i < 10; i++) tm_free(t[i]);
    return st;
}

TEST(scan_every_allocation_failure_is_clean)
{
    CHECK_EVERY_ALLOC_FAILURE(scan_sequence, 20);
}
