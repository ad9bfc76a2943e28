/*
 * test_train_device.c — autograd end to end on the test device: whole
 * training runs on test:0 from the CPU's initial parameters must end on
 * the CPU's parameters bit for bit (test:0 runs the CPU's kernels, so any
 * difference is a front end computing something else, or somewhere else),
 * with every gradient on the device; and errors in the middle of a step
 * (a kernel failing in a queued stream, an allocation failing) surface as
 * errors and leave the device's memory where it was.
 *
 * The models:
 *   - the spiral MLP of tests/c/test_train.c (2-16-16-2, tanh), trained
 *     with plain SGD written with core ops and the cross entropy composed
 *     from log_softmax and gather, so it needs nothing but the tensor core;
 *   - the same MLP under 20 AdamW steps (the optimizer's step entry);
 *   - a Fashion-MNIST-shaped CNN: conv2d -> relu -> max_pool2d -> linear ->
 *     cross_entropy on random data (batch 8 of 1x28x28, 10 classes) under
 *     20 AdamW steps (the conv, pool, loss and optimizer entries).
 */
#include "../c/harness.h"
#include "../c/spirals.h"
#include "testdev.h"

#include <stdlib.h>

#define TT_DEV TT_TEST0


/* ------------------------------------------------------------- models */

enum { TT_MAXP = 8 };

/* A model's parameters on one device: leaves that require grad. */
typedef struct tt_model {
    int n;
    tm_tensor *p[TT_MAXP];
} tt_model;

static void tt_model_free(tt_model *m)
{
    for (int i = 0; i < m->n; i++) tm_free(m->p[i]);
    m->n = 0;
}

/* Copies of `init`'s parameters on `dev`, as fresh leaves. */
static bool tt_model_on(const tt_model *init, tm_device dev, tt_model *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < init->n; i++) {
        tm_tensor *t = tm_device_eq(dev, TM_CPU) ? tm_clone(init->p[i])
                                                 : tm_to(init->p[i], dev);
        if (!t || tm_requires_grad_(t, true)) {
            tm_free(t);
            tt_model_free(m);
            return false;
        }
        m->p[m->n++] = t;
    }
    return true;
}

/* Appends a linear layer's weight and bias (PyTorch's init from rng). */
static bool tt_add_linear(tt_model *m, int64_t in, int64_t out, tm_rng *rng)
{
    tm_linear_layer *l = tm_linear_layer_new(in, out, true, TM_F32, rng);
    if (!l) return false;
    m->p[m->n++] = tm_detach(l->weight);
    m->p[m->n++] = tm_detach(l->bias);
    tm_linear_layer_free(l);
    return m->p[m->n - 1] && m->p[m->n - 2];
}

/* The spiral MLP's initial parameters: fc1 2->16, fc2 16->16, fc3 16->2. */
static bool tt_mlp_init(tt_model *m)
{
    tm_rng rng = tm_rng_new(12);
    memset(m, 0, sizeof *m);
    return tt_add_linear(m, 2, 16, &rng) && tt_add_linear(m, 16, 16, &rng) &&
           tt_add_linear(m, 16, 2, &rng);
}

static tm_tensor *tt_mlp_forward(const tt_model *m, const tm_tensor *x)
{
    tm_tensor *h = tm_retain((tm_tensor *)x);
    for (int i = 0; h && i < 3; i++) {
        tm_tensor *z = tm_linear(h, m->p[2 * i], m->p[2 * i + 1]);
        tm_free(h);
        h = z;
        if (h && i < 2) {
            z = tm_tanh(h);
            tm_free(h);
            h = z;
        }
    }
    return h;
}

/* Mean cross entropy composed from core ops: -mean(log_softmax(z)[y]). */
static tm_tensor *tt_composed_xent(const tm_tensor *logits,
                                   const tm_tensor *y)
{
    tm_tensor *lp = tm_log_softmax(logits, 1);
    tm_tensor *yc = tm_unsqueeze(y, 1);
    tm_tensor *picked = lp && yc ? tm_gather(lp, 1, yc) : NULL;
    tm_tensor *mean = picked ? tm_mean(picked, NULL, 0, false) : NULL;
    tm_tensor *loss = mean ? tm_neg(mean) : NULL;
    tm_free(mean);
    tm_free(picked);
    tm_free(yc);
    tm_free(lp);
    return loss;
}

/* The CNN's initial parameters: conv 1->4 3x3 (with bias), linear
 * 4*13*13 -> 10. */
static bool tt_cnn_init(tt_model *m)
{
    tm_rng rng = tm_rng_new(21);
    memset(m, 0, sizeof *m);
    tm_conv2d_layer *c = tm_conv2d_layer_new(1, 4, 3, 3, NULL, true, TM_F32,
                                             &rng);
    if (!c) return false;
    m->p[m->n++] = tm_detach(c->weight);
    m->p[m->n++] = tm_detach(c->bias);
    tm_conv2d_layer_free(c);
    return m->p[0] && m->p[1] && tt_add_linear(m, 4 * 13 * 13, 10, &rng);
}

static tm_tensor *tt_cnn_forward(const tt_model *m, const tm_tensor *x)
{
    tm_pool2d_opts po = tm_pool2d_defaults(); /* 2x2, stride 2 */
    tm_tensor *c = tm_conv2d(x, m->p[0], m->p[1], NULL);
    tm_tensor *r = c ? tm_relu(c) : NULL;
    tm_tensor *p = r ? tm_max_pool2d(r, &po) : NULL;
    tm_tensor *f = p ? tm_reshape(p, (int64_t[]){tm_size(p, 0), -1}, 2)
                     : NULL;
    tm_tensor *z = f ? tm_linear(f, m->p[2], m->p[3]) : NULL;
    tm_free(f);
    tm_free(p);
    tm_free(r);
    tm_free(c);
    return z;
}

/* -------------------------------------------------------------- data */


/* The training tests' spirals (tests/c/spirals.h), on `dev`. */
static bool tt_spirals(tm_device dev, tm_tensor **x, tm_tensor **y)
{
    static float pts[2 * TT_SP_N];
    static int64_t labels[TT_SP_N];
    tt_make_spirals(pts, labels);
    tm_tensor *hx = tm_from_buffer(pts, (int64_t[]){TT_SP_N, 2}, 2, TM_F32);
    tm_tensor *hy = tm_from_buffer(labels, (int64_t[]){TT_SP_N}, 1, TM_I64);
    *x = hx ? tm_to(hx, dev) : NULL;
    *y = hy ? tm_to(hy, dev) : NULL;
    tm_free(hx);
    tm_free(hy);
    return *x && *y;
}

/* Random images (N(0, 1), batch 8 of 1x28x28) and labels in [0, 10). */
static bool tt_images(tm_device dev, tm_tensor **x, tm_tensor **y)
{
    tm_rng rng = tm_rng_new(5);
    tm_tensor *hx = tm_empty((int64_t[]){8, 1, 28, 28}, 4, TM_F32);
    tm_tensor *hy = tm_empty((int64_t[]){8}, 1, TM_I64);
    bool ok = hx && hy && !tm_normal_(hx, 0, 1, &rng) &&
              !tm_randint_(hy, 0, 10, &rng);
    *x = ok ? tm_to(hx, dev) : NULL;
    *y = ok ? tm_to(hy, dev) : NULL;
    tm_free(hx);
    tm_free(hy);
    return *x && *y;
}

/* ---------------------------------------------------------- training */

typedef tm_tensor *(*tt_forward_fn)(const tt_model *, const tm_tensor *);
typedef tm_tensor *(*tt_loss_fn)(const tm_tensor *, const tm_tensor *);

static tm_tensor *tt_fused_xent(const tm_tensor *z, const tm_tensor *y)
{
    return tm_cross_entropy(z, y, NULL);
}

/* Every parameter's gradient is on `dev`. */
static void tt_check_grads_on(const tt_model *m, tm_device dev)
{
    for (int i = 0; i < m->n; i++) {
        tm_tensor *g = tm_grad(m->p[i]);
        if (!g)
            tt_fail(__FILE__, __LINE__, "parameter %d has no gradient", i);
        else if (!tm_device_eq(tm_device_of(g), dev))
            tt_fail(__FILE__, __LINE__, "gradient of parameter %d is on %s",
                    i, tm_device_name(tm_device_of(g)));
    }
}

/* p -= lr grad(p) under no-grad, then the gradients are dropped. */
static tm_status tt_sgd_step(tt_model *m, double lr)
{
    tm_status st = TM_OK;
    bool prev = tm_no_grad_begin();
    for (int i = 0; !st && i < m->n; i++) {
        tm_tensor *d = tm_mul_scalar(tm_grad(m->p[i]), lr);
        st = d ? tm_sub_(m->p[i], d) : tm_last_status();
        tm_free(d);
    }
    tm_no_grad_end(prev);
    for (int i = 0; i < m->n; i++) tm_zero_grad(m->p[i]);
    return st;
}

/* `steps` steps of model m on (x, y) on its device: SGD with lr when opt
 * is NULL, else opt's steps.  *first and *last get the losses of the
 * first and the last step (before their updates); the gradients of the
 * last step are checked to be on `dev`. */
static tm_status tt_train(tt_model *m, tm_optim *opt, tt_forward_fn fwd,
                          tt_loss_fn lossf, const tm_tensor *x,
                          const tm_tensor *y, int steps, double lr,
                          tm_device dev, double *first, double *last)
{
    tm_status st = TM_OK;
    for (int s = 0; !st && s < steps; s++) {
        if (opt) tm_optim_zero_grad(opt);
        tm_tensor *z = fwd(m, x), *l = z ? lossf(z, y) : NULL;
        double v = 0;
        st = !l ? tm_last_status() : tm_backward(l);
        if (!st) st = tm_item(l, &v);
        if (!st && s == 0) *first = v;
        if (!st) *last = v;
        if (!st && s == steps - 1) tt_check_grads_on(m, dev);
        if (!st) st = opt ? tm_optim_step(opt) : tt_sgd_step(m, lr);
        tm_free(l);
        tm_free(z);
    }
    return st;
}

/* Trains copies of `init` on the CPU and on test:0 alike and requires
 * the final parameters (and the losses on the way) to be bitwise equal;
 * opt_kind < 0 is plain SGD.  The last loss must be below `bound`, or
 * below the first one when bound is 0. */
static void tt_train_both(const tt_model *init, int opt_kind,
                          tt_forward_fn fwd, tt_loss_fn lossf,
                          bool (*data)(tm_device, tm_tensor **, tm_tensor **),
                          int steps, double lr, double bound)
{
    tm_device devs[2] = {TM_CPU, TT_DEV};
    tt_model m[2];
    tm_optim *opt[2] = {NULL, NULL};
    tm_tensor *x[2] = {NULL, NULL}, *y[2] = {NULL, NULL};
    double first[2] = {0, 0}, last[2] = {0, 0};
    tm_status st[2] = {TM_OK, TM_OK};
    char msg[2][256] = {"", ""};
    for (int k = 0; k < 2; k++) {
        memset(&m[k], 0, sizeof m[k]);
        if (!tt_model_on(init, devs[k], &m[k]) ||
            !data(devs[k], &x[k], &y[k])) {
            st[k] = tm_last_status();
        } else if (opt_kind >= 0) {
            tm_optim_hparams hp = tm_optim_defaults((tm_optim_kind)opt_kind);
            hp.lr = lr;
            hp.weight_decay = 0.01;
            opt[k] = tm_optim_new((tm_optim_kind)opt_kind, &hp);
            if (!opt[k] ||
                tm_optim_add_group(opt[k], m[k].p, NULL, m[k].n, NULL) < 0)
                st[k] = tm_last_status();
        }
        if (!st[k])
            st[k] = tt_train(&m[k], opt[k], fwd, lossf, x[k], y[k], steps,
                             lr, devs[k], &first[k], &last[k]);
        if (st[k]) snprintf(msg[k], sizeof msg[k], "%s", tm_last_error());
    }
    if (st[0])
        tt_fail(__FILE__, __LINE__, "training on the CPU failed: %s", msg[0]);
    else if (st[1])
        tt_fail(__FILE__, __LINE__, "training on %s failed: %s",
                tm_device_name(TT_DEV), msg[1]);
    else {
        if (!(last[0] < (bound > 0 ? bound : first[0])))
            tt_fail(__FILE__, __LINE__, "the loss went from %g to %g in %d "
                    "steps", first[0], last[0], steps);
        CHECK(first[0] == first[1] && last[0] == last[1]);
        for (int i = 0; i < init->n; i++)
            if (!tt_same_bits(m[0].p[i], m[1].p[i]))
                tt_fail(__FILE__, __LINE__, "parameter %d differs from the "
                        "CPU's after %d steps", i, steps);
    }
    for (int k = 0; k < 2; k++) {
        tm_optim_free(opt[k]);
        tt_model_free(&m[k]);
        tm_free(x[k]);
        tm_free(y[k]);
    }
}

/* test_train.c's run: 1500 full-batch SGD steps at lr 1.0 take the cross
 * entropy from 0.69 to 0.0053 (stated bound, as there: 0.05). */
TEST(train_device_spiral_mlp_sgd_matches_the_cpu_bitwise)
{
    REQUIRE(tt_testdev_register() == 0);
    tt_model init;
    REQUIRE(tt_mlp_init(&init));
    tt_train_both(&init, -1, tt_mlp_forward, tt_composed_xent, tt_spirals,
                  1500, 1.0, 0.05);
    tt_model_free(&init);
}

TEST(train_device_spiral_mlp_adamw_matches_the_cpu_bitwise)
{
    REQUIRE(tt_testdev_register() == 0);
    tt_model init;
    REQUIRE(tt_mlp_init(&init));
    tt_train_both(&init, TM_OPTIM_ADAMW, tt_mlp_forward, tt_composed_xent,
                  tt_spirals, 20, 1e-2, 0);
    tt_model_free(&init);
}

TEST(train_device_cnn_adamw_matches_the_cpu_bitwise)
{
    REQUIRE(tt_testdev_register() == 0);
    tt_model init;
    REQUIRE(tt_cnn_init(&init));
    tt_train_both(&init, TM_OPTIM_ADAMW, tt_cnn_forward, tt_fused_xent,
                  tt_images, 20, 1e-3, 0);
    tt_model_free(&init);
}

/* A backward through an as_strided view whose elements overlap: each
 * storage position's gradient is split among the elements sharing it. */
TEST(train_device_overlapping_as_strided_backward_matches_the_cpu)
{
    REQUIRE(tt_testdev_register() == 0);
    float v[6] = {1, 2, 3, 4, 5, 6};
    tm_tensor *g[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        tm_device dev = k ? TT_DEV : TM_CPU;
        tm_tensor *h = tm_from_buffer(v, (int64_t[]){6}, 1, TM_F32);
        tm_tensor *x = h ? tm_to(h, dev) : NULL;
        tm_tensor *c = x && tm_device_eq(dev, TM_CPU) ? tm_clone(x)
                                                      : tm_retain(x);
        REQUIRE(c && !tm_requires_grad_(c, true));
        /* [3, 2] over positions {0,1}, {1,2}, {2,3}: 1 and 2 shared */
        tm_tensor *w = tm_as_strided(c, (int64_t[]){3, 2}, (int64_t[]){1, 1},
                                     2, 0);
        tm_tensor *o = w ? tm_as_strided(w, (int64_t[]){2, 2},
                                         (int64_t[]){1, 1}, 2, 1)
                         : NULL;
        tm_tensor *sq = o ? tm_mul(o, o) : NULL;
        tm_tensor *l = sq ? tm_sum(sq, NULL, 0, false) : NULL;
        CHECK(l && tm_backward(l) == TM_OK);
        g[k] = tm_retain(tm_grad(c));
        CHECK(g[k] && tm_device_eq(tm_device_of(g[k]), dev));
        tm_free(l);
        tm_free(sq);
        tm_free(o);
        tm_free(w);
        tm_free(c);
        tm_free(x);
        tm_free(h);
    }
    CHECK(tt_same_bits(g[0], g[1]));
    tm_free(g[0]);
    tm_free(g[1]);
}

/* ------------------------------------------------------------- errors */

/* A gather whose index is out of range, queued behind other work while
 * the stream is held: nothing fails until a host synchronization, which
 * reports it once, naming the device. */
static tm_tensor *tt_queue_bad_gather(tm_tensor **keep)
{
    float v[4] = {1, 2, 3, 4};
    int64_t bad[2] = {1, 9};
    tm_tensor *h = tm_from_buffer(v, (int64_t[]){4}, 1, TM_F32);
    tm_tensor *ih = tm_from_buffer(bad, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *d = h ? tm_to(h, TT_DEV) : NULL;
    tm_tensor *id = ih ? tm_to(ih, TT_DEV) : NULL;
    tm_tensor *out = NULL;
    if (d && id && tm_synchronize(TT_DEV) == TM_OK) {
        tt_testdev_hold(TT_DEV, 1);
        tm_tensor *e = tm_exp(d);
        tm_tensor *gt = e ? tm_gather(e, 0, id) : NULL;
        out = gt ? tm_mul(gt, gt) : NULL;
        tt_testdev_hold(TT_DEV, 0);
        keep[0] = e;
        keep[1] = gt;
    }
    tm_free(h);
    tm_free(ih);
    tm_free(d);
    tm_free(id);
    return out;
}

TEST(train_device_queued_kernel_error_surfaces_at_the_copy_to_the_host)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_tensor *keep[2] = {NULL, NULL};
    tm_tensor *out = tt_queue_bad_gather(keep);
    REQUIRE(out); /* queued: nothing has failed yet */
    CHECK_NULL_ERR(tm_to(out, TM_CPU), TM_ERANGE,
                   "reported at this synchronization");
    CHECK(strstr(tm_last_error(), "test:0") != NULL);
    CHECK_INT(tm_synchronize(TT_DEV), TM_OK); /* reported once */
    tm_tensor *again = tm_to(keep[0], TM_CPU); /* the device works again */
    CHECK(again != NULL);
    tm_free(again);
    tm_free(out);
    tm_free(keep[0]);
    tm_free(keep[1]);
}

TEST(train_device_queued_kernel_error_surfaces_at_copy_to_buffer)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_tensor *keep[2] = {NULL, NULL};
    tm_tensor *out = tt_queue_bad_gather(keep);
    REQUIRE(out);
    float buf[4];
    CHECK_STATUS(tm_copy_to_buffer(out, buf, 2 * sizeof *buf, TM_F32),
                 TM_ERANGE, "out of range");
    CHECK(strstr(tm_last_error(), "reported at this synchronization"));
    CHECK_INT(tm_synchronize(TT_DEV), TM_OK);
    CHECK_INT(tm_copy_to_buffer(keep[0], buf, sizeof buf, TM_F32), TM_OK);
    CHECK_NEAR(buf[0], exp(1.0), 1e-6); /* the exp before the failure ran */
    tm_free(out);
    tm_free(keep[0]);
    tm_free(keep[1]);
}

/* A training step whose labels hold a class out of range: the whole step
 * (forward and backward) is queued before any of it runs, the gather of
 * the loss fails in the middle, and the error surfaces when the loss is
 * read.  Afterwards the device holds exactly the memory it held before
 * the step, and a good step matches the CPU's bit for bit. */
TEST(train_device_kernel_error_mid_step_leaves_memory_at_baseline)
{
    REQUIRE(tt_testdev_register() == 0);
    tt_model init, m, mc;
    REQUIRE(tt_mlp_init(&init));
    REQUIRE(tt_model_on(&init, TT_DEV, &m) && tt_model_on(&init, TM_CPU, &mc));
    tm_tensor *x = NULL, *y = NULL, *xc = NULL, *yc = NULL;
    REQUIRE(tt_spirals(TT_DEV, &x, &y) && tt_spirals(TM_CPU, &xc, &yc));
    int64_t bad[TT_SP_N];
    for (int i = 0; i < TT_SP_N; i++) bad[i] = i == 77 ? 7 : i % 2;
    tm_tensor *bh = tm_from_buffer(bad, (int64_t[]){TT_SP_N}, 1, TM_I64);
    tm_tensor *yb = bh ? tm_to(bh, TT_DEV) : NULL;
    REQUIRE(yb && tm_synchronize(TT_DEV) == TM_OK);
    tm_mem_stats m0, m1;
    CHECK_INT(tm_device_memory_stats(TT_DEV, &m0), TM_OK);
    tt_testdev_hold(TT_DEV, 1);
    long before = tt_testdev_jobs(TT_DEV);
    tm_tensor *z = tt_mlp_forward(&m, x), *l = z ? tt_composed_xent(z, yb)
                                                 : NULL;
    tm_status bst = l ? tm_backward(l) : tm_last_status();
    CHECK(tt_testdev_jobs(TT_DEV) - before > 20); /* all of it queued */
    tt_testdev_hold(TT_DEV, 0);
    CHECK(l != NULL);
    CHECK_INT(bst, TM_OK); /* nothing has run yet */
    double v;
    CHECK_STATUS(tm_item(l, &v), TM_ERANGE, "reported at this sync");
    tm_free(l);
    tm_free(z);
    for (int i = 0; i < m.n; i++) tm_zero_grad(m.p[i]); /* undefined now */
    CHECK_INT(tm_synchronize(TT_DEV), TM_OK);
    CHECK_INT(tm_device_memory_stats(TT_DEV, &m1), TM_OK);
    CHECK_INT(m1.current_bytes, m0.current_bytes);
    /* the device works again: one good step on each side, same bits */
    double f[2], s[2];
    CHECK_INT(tt_train(&m, NULL, tt_mlp_forward, tt_composed_xent, x, y, 1,
                       0.5, TT_DEV, &f[1], &s[1]),
              TM_OK);
    CHECK_INT(tt_train(&mc, NULL, tt_mlp_forward, tt_composed_xent, xc, yc,
                       1, 0.5, TM_CPU, &f[0], &s[0]),
              TM_OK);
    CHECK(f[0] == f[1]);
    for (int i = 0; i < m.n; i++) CHECK(tt_same_bits(m.p[i], mc.p[i]));
    tm_free(yb);
    tm_free(bh);
    tm_free(x);
    tm_free(y);
    tm_free(xc);
    tm_free(yc);
    tt_model_free(&m);
    tt_model_free(&mc);
    tt_model_free(&init);
}

/* Every device allocation of one training step fails in turn (the cache
 * is off, so each reaches the backend): each step fails with TM_ENOMEM,
 * and freeing what it made brings the device's memory back to where it
 * was; the first step with no failure left completes. */
TEST(train_device_every_allocation_failure_in_a_step_is_clean)
{
    REQUIRE(tt_testdev_register() == 0);
    tt_model init, m;
    REQUIRE(tt_mlp_init(&init));
    REQUIRE(tt_model_on(&init, TT_DEV, &m));
    tm_tensor *x = NULL, *y = NULL;
    REQUIRE(tt_spirals(TT_DEV, &x, &y));
    REQUIRE(tm_device_set_cache_limit(TT_DEV, 0) == TM_OK);
    REQUIRE(tm_synchronize(TT_DEV) == TM_OK);
    tm_mem_stats m0, m1;
    CHECK_INT(tm_device_memory_stats(TT_DEV, &m0), TM_OK);
    int k = 0, unclean = 0;
    for (; k < 1000; k++) {
        /* allocation k fails, and so does the cache's retry */
        tt_testdev_fail_allocs(k, 2);
        double f, s;
        tm_status st = tt_train(&m, NULL, tt_mlp_forward, tt_composed_xent,
                                x, y, 1, 0.5, TT_DEV, &f, &s);
        tt_testdev_fail_allocs(0, 0);
        for (int i = 0; i < m.n; i++) tm_zero_grad(m.p[i]);
        tm_synchronize(TT_DEV);
        tm_device_memory_stats(TT_DEV, &m1);
        if (st == TM_OK) break;
        bool ok = st == TM_ENOMEM && strstr(tm_last_error(), "out of memory")
                  && m1.current_bytes == m0.current_bytes;
        if (!ok && unclean++ < 5)
            tt_fail(__FILE__, __LINE__, "failing allocation %d: %s (%s), "
                    "%zu device bytes held, %zu before", k,
                    tm_status_name(st), tm_last_error(), m1.current_bytes,
                    m0.current_bytes);
        tm_clear_error();
    }
    CHECK(k > 20 && k < 1000); /* a step allocates, and then completes */
    CHECK_INT(m1.current_bytes, m0.current_bytes);
    CHECK_INT(tm_device_set_cache_limit(TT_DEV, (size_t)1 << 30), TM_OK);
    tm_free(x);
    tm_free(y);
    tt_model_free(&m);
    tt_model_free(&init);
}
