/*
 * test_nn.c — parameter sets, initialisers and layers (foundry/nn.h).
 *
 * Init statistics are measured on large tensors with fixed seeds, so the
 * checks are deterministic; each bound is stated beside it as a multiple
 * of the statistic's own standard error, so a correct initialiser passes
 * with a wide margin and a wrong constant (a factor sqrt(2) or 3) fails.
 */
#include "harness.h"

/* ------------------------------------------------------------ helpers */

typedef struct stats {
    double mean, std, min, max;
} stats;

/* Mean, population std, min and max of every element, computed here in
 * double (independent of the reduction ops). */
static stats stats_of(const tm_tensor *t)
{
    stats s = {0, 0, INFINITY, -INFINITY};
    tm_tensor *d = tm_to_dtype(t, TM_F64), *c = d ? tm_contiguous(d) : NULL;
    if (!c) {
        tm_free(d);
        s.mean = NAN;
        return s;
    }
    const double *v = tm_data(c);
    int64_t n = tm_numel(c);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) sum += v[i];
    s.mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) {
        sq += (v[i] - s.mean) * (v[i] - s.mean);
        if (v[i] < s.min) s.min = v[i];
        if (v[i] > s.max) s.max = v[i];
    }
    s.std = sqrt(sq / (double)n);
    tm_free(c);
    tm_free(d);
    return s;
}

/* A fresh tensor that requires grad, like a parameter. */
static tm_tensor *leaf(const int64_t *shape, int ndim, tm_dtype dt)
{
    tm_tensor *t = tm_zeros(shape, ndim, dt);
    if (t && tm_requires_grad_(t, true) != TM_OK) {
        tm_free(t);
        return NULL;
    }
    return t;
}

/* sum(y), backward, then every parameter of `ps` must have a gradient of
 * its own shape. */
static bool grads_reach_all(tm_tensor *y, tm_params *ps)
{
    tm_tensor *l = tm_sum(y, NULL, 0, false);
    bool ok = l && tm_backward(l) == TM_OK;
    tm_free(l);
    for (int i = 0; ok && i < tm_params_count(ps); i++) {
        tm_tensor *p = tm_params_get(ps, i), *g = tm_grad(p);
        if (!g || tm_ndim(g) != tm_ndim(p) ||
            memcmp(tm_shape(g), tm_shape(p),
                   (size_t)tm_ndim(p) * sizeof(int64_t)) != 0) {
            fprintf(stderr, "  no gradient of the right shape for %s\n",
                    tm_params_name(ps, i));
            ok = false;
        }
    }
    return ok;
}

/* ------------------------------------------------------------- params */

TEST(nn_params_keep_order_names_and_flags)
{
    tm_params *ps = tm_params_new();
    REQUIRE(ps);
    tm_tensor *w = tm_zeros((int64_t[]){3, 2}, 2, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){3}, 1, TM_F32);
    tm_tensor *g = tm_ones((int64_t[]){3}, 1, TM_F64);
    REQUIRE(w && b && g);
    CHECK_INT(tm_params_add(ps, "fc.weight", w, false), TM_OK);
    CHECK_INT(tm_params_add(ps, "fc.bias", b, true), TM_OK);
    CHECK_INT(tm_params_add(ps, "norm.weight", g, true), TM_OK);
    /* the set holds its own references */
    tm_free(w);
    tm_free(b);
    tm_free(g);
    CHECK_INT(tm_params_count(ps), 3);
    CHECK_INT(tm_params_numel(ps), 12);
    CHECK(strcmp(tm_params_name(ps, 0), "fc.weight") == 0);
    CHECK(strcmp(tm_params_name(ps, 1), "fc.bias") == 0);
    CHECK(strcmp(tm_params_name(ps, 2), "norm.weight") == 0);
    CHECK(!tm_params_no_decay(ps, 0));
    CHECK(tm_params_no_decay(ps, 1) && tm_params_no_decay(ps, 2));
    CHECK(tm_params_find(ps, "fc.bias") == tm_params_get(ps, 1));
    CHECK_INT(tm_params_index(ps, "norm.weight"), 2);
    CHECK_INT(tm_params_index(ps, "nope"), -1);
    for (int i = 0; i < 3; i++) CHECK(tm_requires_grad(tm_params_get(ps, i)));
    CHECK_SHAPE(tm_params_find(ps, "fc.weight"), 3, 2);
    tm_params_free(ps);
    tm_params_free(NULL);
    CHECK_INT(tm_params_count(NULL), 0);
}

TEST(nn_params_reject_bad_entries)
{
    tm_params *ps = tm_params_new();
    tm_tensor *w = tm_zeros((int64_t[]){2}, 1, TM_F32);
    tm_tensor *i = tm_zeros((int64_t[]){2}, 1, TM_I64);
    REQUIRE(ps && w && i);
    CHECK_INT(tm_params_add(ps, "w", w, false), TM_OK);
    CHECK_STATUS(tm_params_add(ps, "w", w, false), TM_EINVAL,
                 "tm_params_add: duplicate parameter name 'w'");
    CHECK_STATUS(tm_params_add(ps, "", w, false), TM_EINVAL, "empty");
    CHECK_STATUS(tm_params_add(ps, NULL, w, false), TM_EINVAL, "NULL");
    CHECK_STATUS(tm_params_add(ps, "x", NULL, false), TM_EINVAL,
                 "tensor for 'x' is NULL");
    CHECK_STATUS(tm_params_add(ps, "idx", i, false), TM_EDTYPE,
                 "parameter 'idx' must be a float tensor, not i64");
    tm_tensor *y = tm_mul_scalar(w, 2.0); /* not a leaf: w requires grad */
    REQUIRE(y);
    CHECK_STATUS(tm_params_add(ps, "y", y, false), TM_ESTATE,
                 "must be a leaf tensor");
    CHECK_INT(tm_params_count(ps), 1);
    tm_clear_error();
    CHECK(tm_params_get(ps, 1) == NULL);
    CHECK_INT(tm_last_status(), TM_ERANGE);
    CHECK(strstr(tm_last_error(), "index 1 out of range for 1") != NULL);
    CHECK(tm_params_name(ps, -1) == NULL);
    CHECK(tm_params_find(ps, "zz") == NULL);
    CHECK(strstr(tm_last_error(), "no parameter named 'zz'") != NULL);
    tm_free(y);
    tm_free(w);
    tm_free(i);
    tm_params_free(ps);
}

TEST(nn_params_nest_with_prefixes_all_or_nothing)
{
    tm_params *inner = tm_params_new(), *outer = tm_params_new();
    tm_tensor *a = tm_zeros((int64_t[]){2}, 1, TM_F32);
    tm_tensor *b = tm_zeros((int64_t[]){2}, 1, TM_F32);
    REQUIRE(inner && outer && a && b);
    CHECK_INT(tm_params_add(inner, "weight", a, false), TM_OK);
    CHECK_INT(tm_params_add(inner, "bias", b, true), TM_OK);
    CHECK_INT(tm_params_add_all(outer, "blocks.0", inner), TM_OK);
    CHECK_INT(tm_params_add_all(outer, "blocks.1", inner), TM_OK);
    CHECK_INT(tm_params_count(outer), 4);
    CHECK(strcmp(tm_params_name(outer, 0), "blocks.0.weight") == 0);
    CHECK(strcmp(tm_params_name(outer, 3), "blocks.1.bias") == 0);
    CHECK(tm_params_no_decay(outer, 3) && !tm_params_no_decay(outer, 2));
    /* the same tensors, shared */
    CHECK(tm_params_get(outer, 0) == a && tm_params_get(outer, 2) == a);
    /* "bias" alone is new but "blocks.0.weight" collides: nothing added */
    CHECK_STATUS(tm_params_add_all(outer, "blocks.0", inner), TM_EINVAL,
                 "duplicate parameter name 'blocks.0.weight'");
    CHECK_INT(tm_params_count(outer), 4);
    CHECK_INT(tm_params_add_all(outer, NULL, inner), TM_OK);
    CHECK(strcmp(tm_params_name(outer, 4), "weight") == 0);
    CHECK_STATUS(tm_params_add_all(outer, "x", outer), TM_EINVAL, "same");
    tm_params_free(inner);
    tm_params_free(outer);
    tm_free(a);
    tm_free(b);
}

TEST(nn_params_zero_grad_drops_gradients)
{
    tm_params *ps = tm_params_new();
    tm_tensor *w = tm_ones((int64_t[]){3}, 1, TM_F32);
    REQUIRE(ps && w);
    REQUIRE(tm_params_add(ps, "w", w, false) == TM_OK);
    tm_tensor *y = tm_mul(w, w), *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    REQUIRE(l && tm_backward(l) == TM_OK);
    REQUIRE(tm_grad(w));
    CHECK_VALUES(tm_grad(w), ((double[]){2, 2, 2}), 3, 0, 0);
    tm_params_zero_grad(ps);
    CHECK(tm_grad(w) == NULL);
    tm_free(l);
    tm_free(y);
    tm_free(w);
    tm_params_free(ps);
}

TEST(nn_params_survive_allocation_failures)
{
    tm_tensor *a = tm_zeros((int64_t[]){2}, 1, TM_F32);
    REQUIRE(a);
    for (int n = 1; n < 40; n++) {
        tm_params *inner = tm_params_new(), *outer = tm_params_new();
        if (inner) (void)tm_params_add(inner, "weight", a, false);
        tm_alloc_fail_after(n);
        tm_status st = tm_params_add_all(outer, "m", inner);
        tm_alloc_fail_after(0);
        if (outer && inner && st != TM_OK) {
            CHECK_INT(st, TM_ENOMEM);
            CHECK_INT(tm_params_count(outer), 0);
        }
        tm_params_free(inner);
        tm_params_free(outer);
    }
    /* every allocation of a layer's creation and listing fails in turn:
     * NULL or an error, never a leak (the harness checks) */
    for (int n = 1; n < 60; n++) {
        tm_alloc_fail_after(n);
        tm_mlp_layer *m = tm_mlp_layer_new(3, 4, true, TM_F32, NULL);
        tm_conv2d_layer *c = tm_conv2d_layer_new(2, 2, 3, 3, NULL, true,
                                                 TM_F32, NULL);
        tm_embedding_layer *e = tm_embedding_layer_new(5, 2, TM_F32, NULL);
        tm_params *ps = tm_params_new();
        if (ps && m && tm_mlp_layer_params(m, ps, "mlp") != TM_OK)
            CHECK_INT(tm_params_count(ps), 0);
        tm_alloc_fail_after(0);
        tm_params_free(ps);
        tm_mlp_layer_free(m);
        tm_conv2d_layer_free(c);
        tm_embedding_layer_free(e);
    }
    tm_free(a);
}

/* --------------------------------------------------------------- init */

TEST(nn_init_fans_as_pytorch)
{
    int64_t fi = 0, fo = 0;
    tm_tensor *lin = tm_empty((int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *conv = tm_empty((int64_t[]){8, 3, 5, 5}, 4, TM_F32);
    tm_tensor *vec = tm_empty((int64_t[]){7}, 1, TM_F32);
    REQUIRE(lin && conv && vec);
    CHECK_INT(tm_init_fans(lin, &fi, &fo), TM_OK);
    CHECK_INT(fi, 4);
    CHECK_INT(fo, 3);
    CHECK_INT(tm_init_fans(conv, &fi, &fo), TM_OK);
    CHECK_INT(fi, 75);
    CHECK_INT(fo, 200);
    CHECK_STATUS(tm_init_fans(vec, &fi, &fo), TM_EINVAL,
                 "tm_init_fans: fans need a tensor with >= 2 dims, got 1");
    CHECK_STATUS(tm_init_kaiming_uniform_(vec, 0, TM_FAN_IN, TM_NL_RELU,
                                          NULL),
                 TM_EINVAL, "tm_init_kaiming_uniform_: fans need");
    CHECK_NEAR(tm_init_gain(TM_NL_LINEAR, 0), 1.0, 0);
    CHECK_NEAR(tm_init_gain(TM_NL_TANH, 0), 5.0 / 3.0, 1e-15);
    CHECK_NEAR(tm_init_gain(TM_NL_RELU, 0), sqrt(2.0), 1e-15);
    CHECK_NEAR(tm_init_gain(TM_NL_LEAKY_RELU, sqrt(5.0)), sqrt(1.0 / 3.0),
               1e-15);
    CHECK_NEAR(tm_init_gain(TM_NL_SELU, 0), 0.75, 0);
    tm_free(lin);
    tm_free(conv);
    tm_free(vec);
}

/* Uniform on [-B, B): std B/sqrt(3).  n = 262144, so the mean's standard
 * error is std/512 and the std's relative error about 0.09%: bounds of
 * 0.02 std on the mean and 1% on the std are > 10 standard errors. */
TEST(nn_init_kaiming_and_xavier_uniform_statistics)
{
    tm_rng rng = tm_rng_new(1);
    tm_tensor *w = leaf((int64_t[]){256, 1024}, 2, TM_F32);
    REQUIRE(w);
    /* grad mode on, w requires grad: the initialiser must still write */
    REQUIRE(tm_init_kaiming_uniform_(w, sqrt(5.0), TM_FAN_IN,
                                     TM_NL_LEAKY_RELU, &rng) == TM_OK);
    double bound = 1.0 / 32.0, sd = bound / sqrt(3.0);
    stats s = stats_of(w);
    CHECK(s.min >= -bound && s.max < bound);
    CHECK(s.min < -0.99 * bound && s.max > 0.99 * bound);
    CHECK(fabs(s.mean) < 0.02 * sd);
    CHECK_NEAR(s.std / sd, 1.0, 0.01);

    REQUIRE(tm_init_xavier_uniform_(w, 2.0, &rng) == TM_OK);
    sd = 2.0 * sqrt(2.0 / (256 + 1024));
    s = stats_of(w);
    CHECK(s.max < sqrt(3.0) * sd && s.min >= -sqrt(3.0) * sd);
    CHECK_NEAR(s.std / sd, 1.0, 0.01);
    CHECK(fabs(s.mean) < 0.02 * sd);
    tm_free(w);
}

/* Normal: the std's relative standard error is 1/sqrt(2n) ~ 0.14%
 * (n = 262144), so 1% is 7 standard errors. */
TEST(nn_init_kaiming_and_xavier_normal_statistics)
{
    tm_rng rng = tm_rng_new(2);
    tm_tensor *w = leaf((int64_t[]){512, 512}, 2, TM_F64);
    tm_tensor *c = leaf((int64_t[]){64, 32, 3, 3}, 4, TM_F32); /* 18432 */
    REQUIRE(w && c);
    REQUIRE(tm_init_xavier_normal_(w, 1.0, &rng) == TM_OK);
    double sd = sqrt(2.0 / 1024);
    stats s = stats_of(w);
    CHECK_NEAR(s.std / sd, 1.0, 0.01);
    CHECK(fabs(s.mean) < 0.02 * sd);
    /* relu, fan_out = 64 * 9 = 576; n = 18432: std rel. error 0.5%, so 3% */
    REQUIRE(tm_init_kaiming_normal_(c, 0, TM_FAN_OUT, TM_NL_RELU, &rng) ==
            TM_OK);
    sd = sqrt(2.0 / 576);
    s = stats_of(c);
    CHECK_NEAR(s.std / sd, 1.0, 0.03);
    CHECK(fabs(s.mean) < 0.05 * sd);
    tm_free(w);
    tm_free(c);
}

TEST(nn_init_trunc_normal_stays_in_bounds_with_truncated_moments)
{
    tm_rng rng = tm_rng_new(3);
    tm_tensor *w = leaf((int64_t[]){512, 512}, 2, TM_F32);
    REQUIRE(w);
    REQUIRE(tm_init_trunc_normal_(w, 0.0, 1.0, -2.0, 2.0, &rng) == TM_OK);
    stats s = stats_of(w);
    CHECK(s.min >= -2.0 && s.max <= 2.0);
    CHECK(s.min < -1.99 && s.max > 1.99);
    /* variance of N(0,1) cut to [-2,2]: 1 - 2*2*phi(2)/(Phi(2)-Phi(-2)) */
    double phi2 = exp(-2.0) / sqrt(2 * 3.14159265358979323846);
    double mass = erf(2.0 / sqrt(2.0));
    double sd = sqrt(1.0 - 4.0 * phi2 / mass); /* 0.8796 */
    CHECK_NEAR(s.std / sd, 1.0, 0.01);
    CHECK(fabs(s.mean) < 0.02);
    /* the common ViT use: std 0.02 cut at +-2 (i.e. 100 std) is a plain
     * normal */
    REQUIRE(tm_init_trunc_normal_(w, 0.0, 0.02, -2.0, 2.0, &rng) == TM_OK);
    s = stats_of(w);
    CHECK_NEAR(s.std / 0.02, 1.0, 0.01);
    CHECK_STATUS(tm_init_trunc_normal_(w, 0, 1, 2, 2, NULL), TM_EINVAL,
                 "a < b");
    CHECK_STATUS(tm_init_trunc_normal_(w, 0, 1, 10, 11, NULL), TM_EINVAL,
                 "below 1e-3");
    tm_free(w);
}

TEST(nn_init_is_deterministic_and_fills_constants)
{
    tm_tensor *a = leaf((int64_t[]){33, 7}, 2, TM_F32);
    tm_tensor *b = leaf((int64_t[]){33, 7}, 2, TM_F32);
    tm_tensor *h = leaf((int64_t[]){5}, 1, TM_F16);
    tm_tensor *n = tm_zeros((int64_t[]){4}, 1, TM_I32);
    tm_tensor *e = leaf((int64_t[]){0, 3}, 2, TM_F32);
    REQUIRE(a && b && h && n && e);
    tm_rng r1 = tm_rng_new(9), r2 = tm_rng_new(9);
    REQUIRE(tm_init_trunc_normal_(a, 0, 1, -1, 1, &r1) == TM_OK);
    REQUIRE(tm_init_trunc_normal_(b, 0, 1, -1, 1, &r2) == TM_OK);
    CHECK(memcmp(tm_data(a), tm_data(b), tm_nbytes(a)) == 0);
    CHECK(r1.counter == r2.counter);
    CHECK_INT(tm_init_ones_(h), TM_OK);
    CHECK_VALUES(h, ((double[]){1, 1, 1, 1, 1}), 5, 0, 0);
    CHECK_INT(tm_init_constant_(h, -0.5), TM_OK);
    CHECK_VALUES(h, ((double[]){-.5, -.5, -.5, -.5, -.5}), 5, 0, 0);
    CHECK_INT(tm_init_zeros_(h), TM_OK);
    CHECK_VALUES(h, ((double[]){0, 0, 0, 0, 0}), 5, 0, 0);
    CHECK_INT(tm_init_uniform_(h, 2, 3, NULL), TM_OK);
    stats s = stats_of(h);
    CHECK(s.min >= 2 && s.max <= 3);
    CHECK_INT(tm_init_kaiming_uniform_(e, 0, TM_FAN_IN, TM_NL_RELU, NULL),
              TM_OK);
    CHECK_STATUS(tm_init_normal_(n, 0, 1, NULL), TM_EDTYPE,
                 "tm_init_normal_: needs a float tensor, not i32");
    CHECK_STATUS(tm_init_zeros_(NULL), TM_EINVAL, "tm_init_zeros_");
    tm_free(a);
    tm_free(b);
    tm_free(h);
    tm_free(n);
    tm_free(e);
}

/* ------------------------------------------------------------- layers */

TEST(nn_linear_layer_init_shapes_and_gradients)
{
    tm_rng rng = tm_rng_new(4);
    tm_linear_layer *l = tm_linear_layer_new(64, 10, true, TM_F32, &rng);
    tm_linear_layer *nb = tm_linear_layer_new(64, 10, false, TM_F32, &rng);
    tm_params *ps = tm_params_new();
    REQUIRE(l && nb && ps);
    CHECK_SHAPE(l->weight, 10, 64);
    CHECK_SHAPE(l->bias, 10);
    CHECK(nb->bias == NULL);
    /* PyTorch: weight and bias both U(+-1/sqrt(in)) = U(+-0.125) */
    stats w = stats_of(l->weight), b = stats_of(l->bias);
    CHECK(w.min >= -0.125 && w.max < 0.125 && w.max > 0.1);
    CHECK(b.min >= -0.125 && b.max < 0.125);
    CHECK_NEAR(w.std, 0.125 / sqrt(3.0), 0.1 * 0.125 / sqrt(3.0));
    REQUIRE(tm_linear_layer_params(l, ps, "head") == TM_OK);
    REQUIRE(tm_linear_layer_params(nb, ps, NULL) == TM_OK);
    CHECK_INT(tm_params_count(ps), 3);
    CHECK(strcmp(tm_params_name(ps, 0), "head.weight") == 0);
    CHECK(strcmp(tm_params_name(ps, 1), "head.bias") == 0);
    CHECK(strcmp(tm_params_name(ps, 2), "weight") == 0);
    CHECK(!tm_params_no_decay(ps, 0) && tm_params_no_decay(ps, 1));
    tm_params_free(ps);
    ps = tm_params_new();
    REQUIRE(ps && tm_linear_layer_params(l, ps, "") == TM_OK);

    tm_tensor *x = tm_randn((int64_t[]){5, 3, 64}, 3, TM_F32);
    REQUIRE(x);
    tm_tensor *y = tm_linear_layer_forward(l, x);
    REQUIRE(y);
    CHECK_SHAPE(y, 5, 3, 10);
    CHECK(grads_reach_all(y, ps));
    CHECK_NULL_ERR(tm_linear_layer_forward(NULL, x), TM_EINVAL, "NULL");
    tm_free(y);
    tm_free(x);
    tm_params_free(ps);
    tm_linear_layer_free(l);
    tm_linear_layer_free(nb);
    tm_linear_layer_free(NULL);

    tm_clear_error();
    CHECK(tm_linear_layer_new(2, 3, true, TM_I32, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "tm_linear_layer_new: needs a float "
                                  "dtype, not i32") != NULL);
    CHECK(tm_linear_layer_new(-1, 3, true, TM_F32, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "in -1") != NULL);
}

TEST(nn_norm_layers_init_shapes_and_gradients)
{
    tm_layer_norm_layer *ln = tm_layer_norm_layer_new(8, 1e-5, true, TM_F32);
    tm_layer_norm_layer *ln0 = tm_layer_norm_layer_new(8, 1e-5, false,
                                                       TM_F32);
    tm_rms_norm_layer *rms = tm_rms_norm_layer_new(8, 1e-6, TM_F64);
    tm_params *ps = tm_params_new(), *pr = tm_params_new();
    REQUIRE(ln && ln0 && rms && ps && pr);
    CHECK_VALUES(ln->weight, ((double[]){1, 1, 1, 1, 1, 1, 1, 1}), 8, 0, 0);
    CHECK_VALUES(ln->bias, ((double[]){0, 0, 0, 0, 0, 0, 0, 0}), 8, 0, 0);
    CHECK_VALUES(rms->weight, ((double[]){1, 1, 1, 1, 1, 1, 1, 1}), 8, 0, 0);
    CHECK(ln0->weight == NULL && ln0->bias == NULL);
    REQUIRE(tm_layer_norm_layer_params(ln, ps, "ln") == TM_OK);
    REQUIRE(tm_layer_norm_layer_params(ln0, ps, "ln0") == TM_OK);
    REQUIRE(tm_rms_norm_layer_params(rms, pr, "rms") == TM_OK);
    CHECK_INT(tm_params_count(ps), 2);
    CHECK(strcmp(tm_params_name(ps, 1), "ln.bias") == 0);
    CHECK(tm_params_no_decay(ps, 0) && tm_params_no_decay(ps, 1));
    CHECK(strcmp(tm_params_name(pr, 0), "rms.weight") == 0);

    /* gradients of sum(norm(x) * r): a plain sum would give a zero
     * gradient for the layer-norm weight direction only by accident */
    tm_tensor *x = tm_randn((int64_t[]){4, 8}, 2, TM_F32);
    tm_tensor *r = tm_randn((int64_t[]){4, 8}, 2, TM_F32);
    tm_tensor *xd = x ? tm_to_dtype(x, TM_F64) : NULL;
    REQUIRE(x && r && xd);
    tm_tensor *y = tm_layer_norm_layer_forward(ln, x);
    tm_tensor *yr = y ? tm_mul(y, r) : NULL;
    REQUIRE(yr);
    CHECK_SHAPE(y, 4, 8);
    CHECK(grads_reach_all(yr, ps));
    tm_tensor *z = tm_rms_norm_layer_forward(rms, xd);
    REQUIRE(z);
    CHECK_SHAPE(z, 4, 8);
    CHECK(tm_dtype_of(z) == TM_F64);
    CHECK(grads_reach_all(z, pr));
    tm_tensor *u = tm_layer_norm_layer_forward(ln0, x);
    CHECK(u && tm_ndim(u) == 2);
    tm_free(u);
    CHECK(tm_layer_norm_layer_new(0, 1e-5, true, TM_F32) == NULL);
    CHECK(strstr(tm_last_error(), "dim >= 1") != NULL);
    CHECK(tm_rms_norm_layer_new(4, -1, TM_F32) == NULL);
    CHECK(strstr(tm_last_error(), "tm_rms_norm_layer_new") != NULL);
    tm_free(z);
    tm_free(yr);
    tm_free(y);
    tm_free(xd);
    tm_free(r);
    tm_free(x);
    tm_params_free(ps);
    tm_params_free(pr);
    tm_layer_norm_layer_free(ln);
    tm_layer_norm_layer_free(ln0);
    tm_rms_norm_layer_free(rms);
}

TEST(nn_mlp_block_names_shapes_and_gradients)
{
    tm_rng rng = tm_rng_new(5);
    tm_mlp_layer *m = tm_mlp_layer_new(16, 64, true, TM_F32, &rng);
    tm_params *ps = tm_params_new();
    REQUIRE(m && ps);
    REQUIRE(tm_mlp_layer_params(m, ps, "blocks.0.mlp") == TM_OK);
    const char *want[] = {"blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc1.bias",
                          "blocks.0.mlp.fc2.weight", "blocks.0.mlp.fc2.bias"};
    CHECK_INT(tm_params_count(ps), 4);
    for (int i = 0; i < 4 && i < tm_params_count(ps); i++)
        CHECK(strcmp(tm_params_name(ps, i), want[i]) == 0);
    CHECK_INT(tm_params_numel(ps), 16 * 64 + 64 + 64 * 16 + 16);
    CHECK_SHAPE(m->fc1->weight, 64, 16);
    CHECK_SHAPE(m->fc2->weight, 16, 64);
    /* the second merge under the same prefix collides: all or nothing */
    CHECK_STATUS(tm_mlp_layer_params(m, ps, "blocks.0.mlp"), TM_EINVAL,
                 "duplicate");
    CHECK_INT(tm_params_count(ps), 4);
    tm_tensor *x = tm_randn((int64_t[]){2, 3, 16}, 3, TM_F32);
    REQUIRE(x);
    tm_tensor *y = tm_mlp_layer_forward(m, x);
    REQUIRE(y);
    CHECK_SHAPE(y, 2, 3, 16);
    CHECK(grads_reach_all(y, ps));
    tm_free(y);
    tm_free(x);
    tm_params_free(ps);
    tm_mlp_layer_free(m);
}

TEST(nn_embedding_layer_init_shapes_and_gradients)
{
    tm_rng rng = tm_rng_new(6);
    tm_embedding_layer *e = tm_embedding_layer_new(1000, 64, TM_F32, &rng);
    tm_params *ps = tm_params_new();
    REQUIRE(e && ps);
    CHECK_SHAPE(e->weight, 1000, 64);
    /* N(0, 1) over 64000 values: std rel. error ~0.3%, so 2% */
    stats s = stats_of(e->weight);
    CHECK_NEAR(s.std, 1.0, 0.02);
    CHECK(fabs(s.mean) < 0.02);
    REQUIRE(tm_embedding_layer_params(e, ps, "wte") == TM_OK);
    CHECK(strcmp(tm_params_name(ps, 0), "wte.weight") == 0);
    static const int64_t ids[] = {3, 999, 3, 0, 7, 1};
    tm_tensor *idx = tm_from_buffer(ids, (int64_t[]){2, 3}, 2, TM_I64);
    REQUIRE(idx);
    tm_tensor *y = tm_embedding_layer_forward(e, idx);
    REQUIRE(y);
    CHECK_SHAPE(y, 2, 3, 64);
    CHECK(grads_reach_all(y, ps));
    /* row 3 was picked twice: its gradient (of a sum) is 2 */
    double g = 0;
    CHECK(tm_get(tm_grad(e->weight), (int64_t[]){3, 5}, &g) == TM_OK);
    CHECK_NEAR(g, 2.0, 0);
    CHECK(tm_get(tm_grad(e->weight), (int64_t[]){2, 5}, &g) == TM_OK);
    CHECK_NEAR(g, 0.0, 0);
    tm_free(y);
    tm_free(idx);
    tm_params_free(ps);
    tm_embedding_layer_free(e);
    CHECK(tm_embedding_layer_new(-1, 4, TM_F32, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "tm_embedding_layer_new") != NULL);
}

TEST(nn_dropout_layer_train_flag_and_own_stream)
{
    tm_rng rng = tm_rng_new(8), rng2 = tm_rng_new(8);
    tm_dropout_layer *d = tm_dropout_layer_new(0.5, &rng);
    tm_dropout_layer *d2 = tm_dropout_layer_new(0.5, &rng2);
    tm_tensor *x = tm_ones((int64_t[]){4096}, 1, TM_F32);
    REQUIRE(d && d2 && x);
    CHECK(d->train);
    tm_tensor *y = tm_dropout_layer_forward(d, x);
    tm_tensor *y2 = tm_dropout_layer_forward(d2, x);
    REQUIRE(y && y2);
    /* same parent seed: the same mask; kept values are scaled by 2 */
    CHECK(memcmp(tm_data(y), tm_data(y2), tm_nbytes(y)) == 0);
    stats s = stats_of(y);
    CHECK(s.min == 0 && s.max == 2);
    /* mean of 4096 values 0/2: standard error 1/64, so 0.1 is 6 s.e. */
    CHECK_NEAR(s.mean, 1.0, 0.1);
    d->train = false;
    tm_tensor *z = tm_dropout_layer_forward(d, x);
    REQUIRE(z);
    s = stats_of(z);
    CHECK(s.min == 1 && s.max == 1);
    tm_free(z);
    tm_free(y);
    tm_free(y2);
    tm_free(x);
    tm_dropout_layer_free(d);
    tm_dropout_layer_free(d2);
    tm_dropout_layer_free(NULL);
    CHECK(tm_dropout_layer_new(1.5, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "p must be in [0, 1], got 1.5") != NULL);
}

TEST(nn_conv2d_layer_init_shapes_and_gradients)
{
    tm_rng rng = tm_rng_new(7);
    tm_conv2d_opts o = tm_conv2d_defaults();
    o.padding[0] = o.padding[1] = 1;
    o.stride[0] = o.stride[1] = 2;
    o.groups = 2;
    tm_conv2d_layer *c = tm_conv2d_layer_new(4, 6, 3, 3, &o, true, TM_F32,
                                             &rng);
    tm_params *ps = tm_params_new();
    REQUIRE(c && ps);
    CHECK_SHAPE(c->weight, 6, 2, 3, 3);
    CHECK_SHAPE(c->bias, 6);
    /* fan_in = 4/2 * 3 * 3 = 18: U(+-1/sqrt(18)) */
    double bound = 1.0 / sqrt(18.0);
    stats w = stats_of(c->weight), b = stats_of(c->bias);
    CHECK(w.min >= -bound && w.max < bound);
    CHECK(b.min >= -bound && b.max < bound);
    REQUIRE(tm_conv2d_layer_params(c, ps, "conv1") == TM_OK);
    CHECK_INT(tm_params_count(ps), 2);
    CHECK(strcmp(tm_params_name(ps, 0), "conv1.weight") == 0);
    CHECK(tm_params_no_decay(ps, 1));
    tm_tensor *x = tm_randn((int64_t[]){2, 4, 7, 7}, 4, TM_F32);
    REQUIRE(x);
    tm_tensor *y = tm_conv2d_layer_forward(c, x);
    REQUIRE(y);
    CHECK_SHAPE(y, 2, 6, 4, 4); /* (7 + 2 - 3) / 2 + 1 */
    CHECK(grads_reach_all(y, ps));
    tm_free(y);
    tm_free(x);
    tm_params_free(ps);
    tm_conv2d_layer_free(c);
    tm_conv2d_layer_free(NULL);
    o.groups = 3;
    CHECK(tm_conv2d_layer_new(4, 6, 3, 3, &o, true, TM_F32, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "groups 3 must be >= 1 and divide in 4") !=
          NULL);
    CHECK(tm_conv2d_layer_new(4, 6, 0, 3, NULL, true, TM_F32, NULL) == NULL);
    CHECK(strstr(tm_last_error(), "kernel 0x3") != NULL);
}
