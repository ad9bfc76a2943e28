/* test_autograd.c — the backward engine itself, on two small ops defined
 * here through the recording API (so these tests do not depend on which
 * library ops record themselves): scale(x, c) = c * x and plus(a, b). */
#include "harness.h"

#include "../../tensor/autograd/autograd_impl.h"

typedef struct { double c; } scale_args;

static tm_status scale_backward(tm__node *n, const tm_tensor *g,
                                tm_tensor **gin)
{
    gin[0] = tm_mul_scalar(g, TM__AG_ARGS(n, scale_args)->c);
    return gin[0] ? TM_OK : tm_last_status();
}

/* c * x; saves x when `save` (to exercise the version check). */
static tm_tensor *scale_op(tm_tensor *x, double c, bool save)
{
    bool prev = tm_no_grad_begin();
    tm_tensor *y = tm_mul_scalar(x, c);
    tm_no_grad_end(prev);
    const tm_tensor *ins[1] = {x};
    scale_args p = {c};
    tm__record r = {.name = "ScaleBackward", .backward = scale_backward,
                    .nin = 1, .in = ins, .save = {save ? x : NULL},
                    .args = &p, .args_size = sizeof p};
    if (y && tm__ag_record(&r, y)) {
        tm_free(y);
        return NULL;
    }
    return y;
}

static tm_tensor *scale(tm_tensor *x, double c)
{
    return scale_op(x, c, true);
}

static tm_status plus_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin)
{
    for (int i = 0; i < 2; i++) {
        if (!n->edges[i].needed) continue;
        gin[i] = tm__ag_sum_to(g, n->edges[i].shape, n->edges[i].ndim);
        if (!gin[i]) return tm_last_status();
    }
    return TM_OK;
}

static tm_tensor *plus(tm_tensor *a, tm_tensor *b)
{
    bool prev = tm_no_grad_begin();
    tm_tensor *y = tm_add(a, b);
    tm_no_grad_end(prev);
    const tm_tensor *ins[2] = {a, b};
    tm__record r = {.name = "PlusBackward", .backward = plus_backward,
                    .nin = 2, .in = ins};
    if (y && tm__ag_record(&r, y)) {
        tm_free(y);
        return NULL;
    }
    return y;
}

static tm_tensor *leaf(double v, int64_t n)
{
    tm_tensor *t = tm_full(&n, 1, v, TM_F64);
    if (t && tm_requires_grad_(t, true)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

TEST(grad_of_a_chain_and_accumulation_into_leaves)
{
    tm_tensor *x = leaf(1.0, 3);
    tm_tensor *y = scale(x, 3.0), *z = scale(y, -2.0);
    REQUIRE(x && y && z);
    CHECK(!tm_is_leaf(z) && tm_is_leaf(x));
    CHECK(!strcmp(tm_grad_fn_name(z), "ScaleBackward"));
    tm_tensor *g = tm_full((int64_t[]){3}, 1, 1.0, TM_F64);
    CHECK_INT(tm_backward_ex(z, g, false), TM_OK);
    double want[] = {-6, -6, -6};
    CHECK_VALUES(tm_grad(x), want, 3, 0, 0);
    CHECK(tm_grad(y) == NULL); /* non-leaf grads are not kept by default */
    /* a second graph accumulates into the same leaf */
    tm_tensor *w = scale(x, 0.5);
    CHECK_INT(tm_backward_ex(w, g, false), TM_OK);
    double want2[] = {-5.5, -5.5, -5.5};
    CHECK_VALUES(tm_grad(x), want2, 3, 0, 0);
    tm_zero_grad(x);
    CHECK(tm_grad(x) == NULL);
    tm_free(w); tm_free(g); tm_free(z); tm_free(y); tm_free(x);
}

TEST(a_tensor_used_twice_and_a_diamond_accumulate)
{
    tm_tensor *x = leaf(2.0, 1);
    tm_tensor *a = scale(x, 3.0), *b = scale(x, 5.0); /* diamond */
    tm_tensor *s = plus(a, b), *t = plus(s, s);      /* s used twice */
    REQUIRE(x && a && b && s && t);
    CHECK_INT(tm_backward(t), TM_OK);
    double want[] = {16}; /* d/dx 2(3x + 5x) */
    CHECK_VALUES(tm_grad(x), want, 1, 0, 0);
    tm_free(t); tm_free(s); tm_free(b); tm_free(a); tm_free(x);
}

TEST(broadcast_input_gets_summed_gradient)
{
    tm_tensor *row = leaf(1.0, 3);
    tm_tensor *m = tm_zeros((int64_t[]){4, 3}, 2, TM_F64);
    REQUIRE(row && m && tm_requires_grad_(m, true) == TM_OK);
    tm_tensor *y = plus(m, row);
    tm_tensor *g = tm_ones((int64_t[]){4, 3}, 2, TM_F64);
    CHECK_INT(tm_backward_ex(y, g, false), TM_OK);
    double w3[] = {4, 4, 4};
    CHECK_VALUES(tm_grad(row), w3, 3, 0, 0);
    CHECK_SHAPE(tm_grad(m), 4, 3);
    tm_free(g); tm_free(y); tm_free(m); tm_free(row);
}

TEST(retain_graph_allows_a_second_backward_and_release_forbids_it)
{
    tm_tensor *x = leaf(1.0, 1);
    tm_tensor *y = scale(x, 4.0);
    REQUIRE(x && y);
    CHECK_INT(tm_backward_ex(y, NULL, true), TM_OK);
    CHECK_INT(tm_backward_ex(y, NULL, false), TM_OK);
    double want[] = {8};
    CHECK_VALUES(tm_grad(x), want, 1, 0, 0);
    CHECK_STATUS(tm_backward(y), TM_ESTATE,
                 "backward through ScaleBackward a second time");
    tm_free(y); tm_free(x);
}

TEST(in_place_write_to_a_saved_tensor_is_detected)
{
    tm_tensor *x = leaf(1.0, 2);
    tm_tensor *y = scale(x, 2.0);
    REQUIRE(x && y);
    bool prev = tm_no_grad_begin();
    CHECK_INT(tm_fill_(x, 7.0), TM_OK); /* allowed: grad mode is off */
    tm_no_grad_end(prev);
    CHECK_STATUS(tm_backward(y), TM_ESHAPE, "one-element output");
    tm_tensor *g = tm_ones((int64_t[]){2}, 1, TM_F64);
    CHECK_STATUS(tm_backward_ex(y, g, false), TM_ESTATE,
                 "a tensor saved by ScaleBackward for backward was modified "
                 "in place");
    CHECK(tm_grad(x) == NULL); /* nothing half-accumulated */
    tm_free(g); tm_free(y); tm_free(x);
}

TEST(in_place_into_a_tensor_requiring_grad_is_refused_in_grad_mode)
{
    tm_tensor *x = leaf(1.0, 2);
    REQUIRE(x);
    CHECK_STATUS(tm_fill_(x, 0.0), TM_ESTATE,
                 "in-place write into a tensor that requires grad");
    bool prev = tm_no_grad_begin();
    CHECK_INT(tm_fill_(x, 0.0), TM_OK);
    tm_no_grad_end(prev);
    tm_free(x);
}

TEST(grad_mode_off_records_nothing_and_detach_cuts)
{
    tm_tensor *x = leaf(1.0, 2);
    bool prev = tm_no_grad_begin();
    CHECK(!tm_grad_enabled());
    tm_tensor *y = scale(x, 2.0);
    tm_no_grad_end(prev);
    CHECK(tm_grad_enabled());
    CHECK(y && tm_is_leaf(y) && !tm_requires_grad(y));
    tm_tensor *d = tm_detach(x);
    CHECK(d && !tm_requires_grad(d) && tm_data(d) == tm_data(x));
    CHECK_STATUS(tm_backward(y), TM_ESTATE, "does not require grad");
    tm_free(d); tm_free(y); tm_free(x);
}

TEST(requires_grad_rules_and_retain_grad)
{
    tm_tensor *i = tm_zeros((int64_t[]){2}, 1, TM_I64);
    CHECK_STATUS(tm_requires_grad_(i, true), TM_EDTYPE,
                 "only float tensors can require grad, not i64");
    tm_tensor *x = leaf(3.0, 1);
    tm_tensor *y = scale(x, 2.0), *z = scale(y, 5.0);
    REQUIRE(x && y && z);
    CHECK_STATUS(tm_requires_grad_(y, false), TM_ESTATE,
                 "only leaf tensors can change requires_grad");
    CHECK_INT(tm_retain_grad(y), TM_OK);
    CHECK_INT(tm_backward(z), TM_OK);
    double wy[] = {5}, wx[] = {10};
    CHECK_VALUES(tm_grad(y), wy, 1, 0, 0);
    CHECK_VALUES(tm_grad(x), wx, 1, 0, 0);
    tm_free(z); tm_free(y); tm_free(x); tm_free(i);
}

TEST(a_million_node_chain_runs_and_frees_without_recursion)
{
    tm_mem_stats before, after;
    tm_memory_stats(&before);
    tm_tensor *x = leaf(1.0, 1);
    REQUIRE(x);
    tm_tensor *y = tm_retain(x);
    enum { N = 1000000 };
    for (int k = 0; k < N && y; k++) {
        tm_tensor *next = scale_op(y, k % 2 ? 1.0 : -1.0, false);
        tm_free(y);
        y = next;
    }
    REQUIRE(y);
    CHECK_INT(tm_backward(y), TM_OK);
    double want[] = {1}; /* an even number of sign flips */
    CHECK_VALUES(tm_grad(x), want, 1, 0, 0);
    tm_free(y); /* frees the whole chain, iteratively */
    tm_free(x);
    tm_memory_stats(&after);
    CHECK_INT(after.current_bytes, before.current_bytes);
}

TEST(a_million_node_chain_freed_without_backward)
{
    tm_tensor *x = leaf(1.0, 1);
    tm_tensor *y = tm_retain(x);
    for (int k = 0; k < 1000000 && y; k++) {
        tm_tensor *next = scale_op(y, 1.0, false);
        tm_free(y);
        y = next;
    }
    CHECK(y != NULL);
    tm_free(y);
    tm_free(x);
}

TEST(a_million_recorded_library_ops_backpropagate_and_free)
{
    /* The same through a real elementwise op of the library (mul by a
     * scalar, then its backward), not the test's own node. */
    tm_mem_stats before, after;
    tm_memory_stats(&before);
    tm_tensor *x = leaf(2.0, 1);
    REQUIRE(x);
    tm_tensor *y = tm_retain(x);
    for (int k = 0; k < 1000000 && y; k++) {
        tm_tensor *next = tm_mul_scalar(y, 1.0);
        tm_free(y);
        y = next;
    }
    REQUIRE(y);
    CHECK(!strcmp(tm_grad_fn_name(y), "MulBackward"));
    CHECK_INT(tm_backward(y), TM_OK);
    double want[] = {1};
    CHECK_VALUES(tm_grad(x), want, 1, 0, 0);
    tm_free(y);
    tm_free(x);
    tm_memory_stats(&after);
    CHECK_INT(after.current_bytes, before.current_bytes);
}

TEST(set_grad_replaces_the_gradient_and_backward_adds_out_of_place)
{
    tm_tensor *x = leaf(1.0, 3);
    tm_tensor *g = tm_full((int64_t[]){3}, 1, 10.0, TM_F64);
    REQUIRE(x && g);
    CHECK_INT(tm_set_grad(x, g), TM_OK);
    CHECK(tm_grad(x) == g);
    tm_tensor *y = scale(x, 2.0);
    tm_tensor *one = tm_ones((int64_t[]){3}, 1, TM_F64);
    CHECK_INT(tm_backward_ex(y, one, false), TM_OK);
    double want[] = {12, 12, 12}, ten[] = {10, 10, 10};
    CHECK_VALUES(tm_grad(x), want, 3, 0, 0);
    CHECK_VALUES(g, ten, 3, 0, 0); /* the assigned tensor was not written */
    tm_tensor *bad = tm_zeros((int64_t[]){4}, 1, TM_F64);
    CHECK_STATUS(tm_set_grad(x, bad), TM_ESHAPE,
                 "grad f64[4] does not match the tensor's f64[3]");
    CHECK_STATUS(tm_set_grad(bad, g), TM_ESTATE, "does not require grad");
    CHECK_STATUS(tm_set_grad(NULL, g), TM_EINVAL, "NULL");
    CHECK_INT(tm_set_grad(x, NULL), TM_OK);
    CHECK(tm_grad(x) == NULL);
    tm_free(bad); tm_free(one); tm_free(y); tm_free(g); tm_free(x);
}

TEST(in_place_ops_refuse_a_source_that_requires_grad)
{
    /* In-place ops record no node: reading a tensor that requires grad
     * would drop its gradient silently, so they refuse it. */
    tm_tensor *w = leaf(2.0, 3);
    tm_tensor *a = tm_zeros((int64_t[]){3}, 1, TM_F64);
    tm_tensor *ix = tm_zeros((int64_t[]){3}, 1, TM_I64);
    REQUIRE(w && a && ix);
    CHECK_STATUS(tm_copy_(a, w), TM_EUNSUPPORTED, "requires grad");
    CHECK_STATUS(tm_add_(a, w), TM_EUNSUPPORTED, "requires grad");
    CHECK_STATUS(tm_binary_(TM_OP_MUL, a, w), TM_EUNSUPPORTED,
                 "requires grad");
    CHECK_STATUS(tm_scatter_(a, 0, ix, w), TM_EUNSUPPORTED, "requires grad");
    CHECK_STATUS(tm_scatter_add_(a, 0, ix, w), TM_EUNSUPPORTED,
                 "requires grad");
    /* a is untouched, and with grad mode off the copy is allowed */
    double zero[3] = {0, 0, 0}, two[3] = {2, 2, 2};
    CHECK_VALUES(a, zero, 3, 0, 0);
    bool prev = tm_no_grad_begin();
    CHECK_INT(tm_copy_(a, w), TM_OK);
    tm_no_grad_end(prev);
    CHECK_VALUES(a, two, 3, 0, 0);
    tm_free(w);
    tm_free(a);
    tm_free(ix);
}
