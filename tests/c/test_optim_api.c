/*
 * test_optim_api.c — optimizer behaviour beyond the PyTorch reference steps:
 * bit-exact resume from a state dict, thread-count and kernel-family
 * invariance, parameter groups and buffers, validation errors, gradient
 * accumulation, clipping through the backend table, allocation failures.
 */
#include "harness.h"

#include "../../cpu/cpu_features.h"

/* p's gradient := a * (p - 0.5) + 0.01 p^2, elementwise (any float
 * dtype), through backward of sum(p * G). */
static tm_status give_grad(tm_tensor *p, double a)
{
    tm_tensor *G = tm_empty(tm_shape(p), tm_ndim(p), tm_dtype_of(p));
    if (!G) return TM_ENOMEM;
    int64_t n = tm_numel(p);
    for (int64_t i = 0; i < n; i++) {
        double v = tm_dtype_of(p) == TM_F32 ? ((float *)tm_data(p))[i]
                                            : ((double *)tm_data(p))[i];
        double g = a * (1 + (double)(i % 7) / 7) * (v - 0.5) + 0.01 * v * v;
        if (tm_dtype_of(p) == TM_F32)
            ((float *)tm_data(G))[i] = (float)g;
        else
            ((double *)tm_data(G))[i] = g;
    }
    tm_zero_grad(p);
    tm_tensor *m = tm_mul(p, G), *l = m ? tm_sum(m, NULL, 0, false) : NULL;
    tm_status st = l ? tm_backward(l) : TM_ENOMEM;
    tm_free(l);
    tm_free(m);
    tm_free(G);
    return st;
}

static tm_tensor *param(int64_t n, tm_dtype dt, uint64_t seed)
{
    tm_rng r = tm_rng_new(seed);
    tm_tensor *p = tm_empty(&n, 1, dt);
    if (!p) return NULL;
    if (tm_normal_(p, 0, 1, &r) != TM_OK ||
        tm_requires_grad_(p, true) != TM_OK) {
        tm_free(p);
        return NULL;
    }
    return p;
}

static bool same_bits(const tm_tensor *a, const tm_tensor *b)
{
    return tm_numel(a) == tm_numel(b) && tm_dtype_of(a) == tm_dtype_of(b) &&
           memcmp(tm_data(a), tm_data(b), tm_nbytes(a)) == 0;
}

/* Trains 2 params (sizes 37 and 1000: tail and vector paths) for `steps`
 * with optimizer opt. */
static tm_status train(tm_optim *opt, int steps, int64_t from)
{
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < tm_optim_param_count(opt); i++) {
            tm_tensor *p = tm_optim_param(opt, i, 0);
            tm_status st = give_grad(p, 1.0 + 0.1 * (double)(from + s));
            if (st != TM_OK) return st;
        }
        tm_status st = tm_optim_step(opt);
        if (st != TM_OK) return st;
    }
    return TM_OK;
}

static tm_optim *make_opt(tm_optim_kind k, const tm_optim_hparams *hp,
                          tm_tensor **ps)
{
    tm_optim *o = tm_optim_new(k, hp);
    if (!o) return NULL;
    bool nd = true;
    if (tm_optim_add_group(o, &ps[0], NULL, 1, NULL) < 0 ||
        tm_optim_add_group(o, &ps[1], &nd, 1, NULL) < 0) {
        tm_optim_free(o);
        return NULL;
    }
    return o;
}

static const struct {
    tm_optim_kind kind;
    const char *name;
    void (*tweak)(tm_optim_hparams *);
} CONFIGS[] = {
    {TM_OPTIM_SGD, "sgd", NULL},
    {TM_OPTIM_SGD, "sgd_nesterov", NULL},
    {TM_OPTIM_ADAM, "adam_amsgrad", NULL},
    {TM_OPTIM_ADAMW, "adamw", NULL},
    {TM_OPTIM_RMSPROP, "rmsprop_centered_momentum", NULL},
    {TM_OPTIM_ADAGRAD, "adagrad", NULL},
};

static tm_optim_hparams config_hp(int c)
{
    tm_optim_hparams hp = tm_optim_defaults(CONFIGS[c].kind);
    hp.lr = 0.01;
    hp.weight_decay = 0.05;
    switch (c) {
    case 0: hp.momentum = 0.9; hp.dampening = 0.1; break;
    case 1: hp.momentum = 0.9; hp.nesterov = true; break;
    case 2: hp.amsgrad = true; break;
    case 4: hp.centered = true; hp.momentum = 0.5; break;
    case 5: hp.lr_decay = 0.01; hp.initial_accumulator_value = 0.1; break;
    }
    return hp;
}

/* Acceptance 2: N steps, state dict + params saved, loaded into a fresh
 * optimizer over fresh parameter tensors, M more steps == N + M straight,
 * bitwise.  Each optimizer, F32 and F64. */
TEST(optim_resume_from_state_dict_is_bit_exact)
{
    const int N = 7, M = 6;
    for (int c = 0; c < (int)(sizeof CONFIGS / sizeof *CONFIGS); c++)
        for (int d = 0; d < 2; d++) {
            tm_dtype dt = d ? TM_F64 : TM_F32;
            tm_optim_hparams hp = config_hp(c);
            tm_tensor *a[2] = {param(37, dt, 1), param(1000, dt, 2)};
            tm_tensor *b[2] = {param(37, dt, 1), param(1000, dt, 2)};
            REQUIRE(a[0] && a[1] && b[0] && b[1]);
            tm_optim *oa = make_opt(CONFIGS[c].kind, &hp, a);
            tm_optim *ob = make_opt(CONFIGS[c].kind, &hp, b);
            REQUIRE(oa && ob);
            CHECK_INT(train(oa, N + M, 0), TM_OK);
            CHECK_INT(train(ob, N, 0), TM_OK);
            /* checkpoint: state + parameter values */
            tm_params *sd = tm_params_new();
            REQUIRE(sd);
            CHECK_INT(tm_optim_state_dict(ob, sd), TM_OK);
            tm_tensor *saved[2] = {tm_to_dtype(b[0], dt),
                                   tm_to_dtype(b[1], dt)};
            tm_optim_free(ob);
            tm_free(b[0]);
            tm_free(b[1]);
            /* fresh process stand-in: new tensors, new optimizer */
            tm_tensor *f[2] = {param(37, dt, 99), param(1000, dt, 98)};
            REQUIRE(f[0] && f[1]);
            bool prev = tm_no_grad_begin();
            CHECK_INT(tm_copy_(f[0], saved[0]), TM_OK);
            CHECK_INT(tm_copy_(f[1], saved[1]), TM_OK);
            tm_no_grad_end(prev);
            tm_optim *of = make_opt(CONFIGS[c].kind, &hp, f);
            REQUIRE(of);
            CHECK_INT(tm_optim_load_state_dict(of, sd), TM_OK);
            CHECK_INT(train(of, M, N), TM_OK);
            for (int j = 0; j < 2; j++)
                if (!same_bits(f[j], a[j]))
                    tt_fail(__FILE__, __LINE__, "%s %s param %d differs "
                            "after resume", CONFIGS[c].name,
                            tm_dtype_name(dt), j);
            tm_optim_free(of);
            tm_optim_free(oa);
            tm_params_free(sd);
            for (int j = 0; j < 2; j++) {
                tm_free(f[j]);
                tm_free(a[j]);
                tm_free(saved[j]);
            }
        }
}

TEST(optim_state_dict_names_follow_pytorch)
{
    tm_tensor *ps[2] = {param(5, TM_F32, 1), param(3, TM_F32, 2)};
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_ADAM);
    hp.amsgrad = true;
    tm_optim *o = make_opt(TM_OPTIM_ADAM, &hp, ps);
    REQUIRE(o);
    tm_params *sd = tm_params_new();
    CHECK_INT(tm_optim_state_dict(o, sd), TM_OK);
    CHECK_INT(tm_params_count(sd), 0); /* no state before the first step */
    /* only parameter 1 gets a gradient: parameter 0 is skipped */
    CHECK_INT(give_grad(ps[1], 1), TM_OK);
    CHECK_INT(tm_optim_step(o), TM_OK);
    CHECK_INT(tm_optim_state_dict(o, sd), TM_OK);
    const char *want[] = {"state.1.step", "state.1.exp_avg",
                          "state.1.exp_avg_sq", "state.1.max_exp_avg_sq"};
    CHECK_INT(tm_params_count(sd), 4);
    for (int i = 0; i < 4 && i < tm_params_count(sd); i++) {
        CHECK(!strcmp(tm_params_name(sd, i), want[i]));
        CHECK(tm_params_is_buffer(sd, i));
    }
    int64_t step = 0;
    tm_item_i64(tm_params_find(sd, "state.1.step"), &step);
    CHECK_INT(step, 1);
    CHECK_INT(tm_dtype_of(tm_params_find(sd, "state.1.step")), TM_I64);
    /* a second state_dict into the same set collides, all or nothing */
    CHECK_STATUS(tm_optim_state_dict(o, sd), TM_EINVAL, "duplicate");
    CHECK_INT(tm_params_count(sd), 4);
    tm_params_free(sd);
    tm_optim_free(o);
    tm_free(ps[0]);
    tm_free(ps[1]);
}

TEST(optim_load_state_dict_rejects_bad_entries)
{
    tm_tensor *ps[2] = {param(5, TM_F32, 1), param(3, TM_F32, 2)};
    tm_optim *o = make_opt(TM_OPTIM_ADAM, NULL, ps);
    REQUIRE(o);
    tm_tensor *good5 = tm_zeros((int64_t[]){5}, 1, TM_F32);
    tm_tensor *bad4 = tm_zeros((int64_t[]){4}, 1, TM_F32);
    tm_tensor *f64 = tm_zeros((int64_t[]){5}, 1, TM_F64);
    tm_tensor *step = tm_scalar(3, TM_I64), *fstep = tm_scalar(3, TM_F32);
    tm_tensor *neg = tm_scalar(-1, TM_I64);
    struct {
        const char *name;
        tm_tensor *t;
        tm_status st;
        const char *msg;
    } cases[] = {
        {"exp_avg", good5, TM_EINVAL, "not an optimizer state name"},
        {"state.7.exp_avg", good5, TM_EINVAL, "index 7 out of range"},
        {"state.0.momentum_buffer", good5, TM_EINVAL, "no state called"},
        {"state.0.exp_avg", bad4, TM_ESHAPE, "has shape [4]"},
        {"state.0.exp_avg", f64, TM_EDTYPE, "is f64 but parameter 0 is f32"},
        {"state.0.step", fstep, TM_EDTYPE, "0-d I64"},
        {"state.0.step", neg, TM_EINVAL, "must be >= 0"},
        {"state.0.step", step, TM_EINVAL, "no 'state.0.exp_avg'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tm_params *sd = tm_params_new();
        tm_params_add_buffer(sd, cases[i].name, cases[i].t);
        CHECK_STATUS(tm_optim_load_state_dict(o, sd), cases[i].st,
                     cases[i].msg);
        tm_params_free(sd);
    }
    tm_free(good5);
    tm_free(bad4);
    tm_free(f64);
    tm_free(step);
    tm_free(fstep);
    tm_free(neg);
    tm_optim_free(o);
    tm_free(ps[0]);
    tm_free(ps[1]);
}

/* Updates are elementwise, and the tail runs through the vector body:
 * any thread count and any kernel family give the same bits. */
TEST(optim_step_is_bitwise_equal_for_any_threads_and_isa)
{
    int saved_threads = tm_get_num_threads();
    tm__isa saved_isa = tm__cpu_isa();
    for (int c = 0; c < (int)(sizeof CONFIGS / sizeof *CONFIGS); c++) {
        tm_tensor *ref = NULL;
        for (int run = 0; run < 2 + TM__ISA_COUNT; run++) {
            int threads = run == 0 ? 1 : run == 1 ? 4 : 3;
            if (run >= 2 && !tm__set_isa((tm__isa)(run - 2))) continue;
            tm_set_num_threads(threads);
            tm_optim_hparams hp = config_hp(c);
            tm_tensor *ps[2] = {param(37, TM_F32, 1),
                                param(200003, TM_F32, 2)};
            tm_optim *o = make_opt(CONFIGS[c].kind, &hp, ps);
            REQUIRE(o);
            CHECK_INT(train(o, 3, 0), TM_OK);
            if (!ref)
                ref = tm_retain(ps[1]);
            else if (!same_bits(ref, ps[1]))
                tt_fail(__FILE__, __LINE__, "%s: run %d (threads %d, isa "
                        "%s) differs", CONFIGS[c].name, run, threads,
                        tm__isa_name(tm__cpu_isa()));
            tm_optim_free(o);
            tm_free(ps[0]);
            tm_free(ps[1]);
        }
        tm_free(ref);
        tm__set_isa(saved_isa);
    }
    tm_set_num_threads(saved_threads);
}

TEST(optim_hparams_are_validated)
{
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_ADAM);
    hp.lr = -1;
    CHECK_NULL_ERR((tm_tensor *)tm_optim_new(TM_OPTIM_ADAM, &hp), TM_EINVAL,
                   "invalid lr -1");
    hp = tm_optim_defaults(TM_OPTIM_ADAM);
    hp.beta2 = 1.0;
    CHECK_STATUS(tm_optim_check_hparams(TM_OPTIM_ADAM, &hp), TM_EINVAL,
                 "invalid beta2 1: must be in [0, 1)");
    hp = tm_optim_defaults(TM_OPTIM_SGD);
    hp.nesterov = true;
    CHECK_STATUS(tm_optim_check_hparams(TM_OPTIM_SGD, &hp), TM_EINVAL,
                 "nesterov momentum requires a momentum > 0");
    hp = tm_optim_defaults(TM_OPTIM_RMSPROP);
    hp.alpha = -0.5;
    CHECK_STATUS(tm_optim_check_hparams(TM_OPTIM_RMSPROP, &hp), TM_EINVAL,
                 "invalid alpha -0.5");
    hp = tm_optim_defaults(TM_OPTIM_ADAGRAD);
    hp.weight_decay = NAN;
    CHECK_STATUS(tm_optim_check_hparams(TM_OPTIM_ADAGRAD, &hp), TM_EINVAL,
                 "invalid weight_decay nan");
    CHECK_STATUS(tm_optim_check_hparams((tm_optim_kind)9, &hp), TM_EINVAL,
                 "unknown optimizer kind 9");
    tm_optim *o = tm_optim_new(TM_OPTIM_SGD, NULL);
    REQUIRE(o);
    CHECK_NEAR(tm_optim_defaults(TM_OPTIM_ADAMW).weight_decay, 1e-2, 0);
    tm_tensor *p = param(3, TM_F32, 1);
    CHECK_INT(tm_optim_add_group(o, &p, NULL, 1, NULL), 0);
    CHECK_STATUS(tm_optim_set_lr(o, 0, -0.1), TM_EINVAL, "invalid lr");
    CHECK_STATUS(tm_optim_set_lr(o, 3, 0.1), TM_ERANGE, "group 3");
    CHECK_INT(tm_optim_set_lr(o, -1, 0.25), TM_OK);
    CHECK_NEAR(tm_optim_get_lr(o, 0), 0.25, 0);
    tm_optim_free(o);
    tm_free(p);
}

TEST(optim_groups_refuse_duplicates_and_non_leaves)
{
    tm_optim *o = tm_optim_new(TM_OPTIM_ADAM, NULL);
    tm_tensor *p = param(3, TM_F32, 1), *q = param(3, TM_F32, 2);
    tm_tensor *nl = tm_mul(p, q);
    tm_tensor *ints = tm_zeros((int64_t[]){3}, 1, TM_I32);
    REQUIRE(o && p && q && nl && ints);
    tm_tensor *twice[2] = {p, p};
    CHECK_STATUS(tm_optim_add_group(o, twice, NULL, 2, NULL), TM_EINVAL,
                 "parameter 1 appears twice");
    CHECK_STATUS(tm_optim_add_group(o, &nl, NULL, 1, NULL), TM_ESTATE,
                 "not a leaf");
    CHECK_STATUS(tm_optim_add_group(o, &ints, NULL, 1, NULL), TM_EDTYPE,
                 "float tensor");
    CHECK_STATUS(tm_optim_add_group(o, &p, NULL, 0, NULL), TM_EINVAL,
                 "at least one");
    CHECK_INT(tm_optim_add_group(o, &p, NULL, 1, NULL), 0);
    CHECK_STATUS(tm_optim_add_group(o, &p, NULL, 1, NULL), TM_EINVAL,
                 "already in the optimizer");
    CHECK_INT(tm_optim_group_count(o), 1);
    /* a set: buffers skipped, a tied tensor taken once */
    tm_params *set = tm_params_new();
    CHECK_INT(tm_params_add(set, "q", q, false), TM_OK);
    CHECK_INT(tm_params_add(set, "q_tied", q, false), TM_OK);
    CHECK_INT(tm_params_add_buffer(set, "running", ints), TM_OK);
    CHECK_INT(tm_optim_add_params(o, set, NULL), 1);
    CHECK_INT(tm_optim_group_size(o, 1), 1);
    CHECK_INT(tm_optim_param_count(o), 2);
    CHECK(tm_optim_param(o, 1, 0) == q);
    CHECK_INT(tm_optim_param_index(o, 1, 0), 1);
    tm_params_free(set);
    tm_optim_free(o);
    tm_free(nl);
    tm_free(ints);
    tm_free(p);
    tm_free(q);
}

TEST(optim_step_checks_everything_before_writing)
{
    tm_tensor *ps[2] = {param(4, TM_F32, 1), param(4, TM_F16, 2)};
    REQUIRE(ps[0] && ps[1]);
    tm_optim *o = make_opt(TM_OPTIM_SGD, NULL, ps);
    REQUIRE(o);
    CHECK_INT(give_grad(ps[0], 1), TM_OK);
    tm_tensor *before = tm_to_dtype(ps[0], TM_F32);
    /* an F16 parameter with a grad: refused, the F32 one untouched */
    tm_tensor *g16 = tm_ones((int64_t[]){4}, 1, TM_F16);
    tm_tensor *m = tm_mul(ps[1], g16), *l = tm_sum(m, NULL, 0, false);
    CHECK_INT(tm_backward(l), TM_OK);
    CHECK_STATUS(tm_optim_step(o), TM_EDTYPE, "parameter 1 is f16");
    CHECK(same_bits(before, ps[0]));
    CHECK_INT(tm_optim_step_count(o), 0);
    /* without the F16 grad it steps; a read-only parameter is refused */
    tm_zero_grad(ps[1]);
    tm_storage_set_readonly(tm_storage_of(ps[0]));
    CHECK_STATUS(tm_optim_step(o), TM_ESTATE, "read-only");
    tm_optim_zero_grad(o);
    CHECK(tm_grad(ps[0]) == NULL);
    CHECK_INT(tm_optim_step(o), TM_OK); /* nothing has a grad: no-op */
    tm_free(m);
    tm_free(l);
    tm_free(g16);
    tm_free(before);
    tm_optim_free(o);
    tm_free(ps[0]);
    tm_free(ps[1]);
}

/* Gradient accumulation: backward accumulates into .grad, so two
 * micro-batches of 4 rows, each loss scaled by 1/2, give the gradient of
 * the mean loss over all 8 rows (F64: equal up to summation order,
 * 1e-13). */
TEST(optim_two_half_batches_accumulate_to_the_full_batch_gradient)
{
    tm_rng r = tm_rng_new(5);
    tm_tensor *x = tm_empty((int64_t[]){8, 3}, 2, TM_F64);
    tm_tensor *y = tm_empty((int64_t[]){8, 1}, 2, TM_F64);
    tm_tensor *w = tm_empty((int64_t[]){3, 1}, 2, TM_F64);
    REQUIRE(x && y && w);
    tm_normal_(x, 0, 1, &r);
    tm_normal_(y, 0, 1, &r);
    tm_normal_(w, 0, 1, &r);
    tm_requires_grad_(w, true);
    tm_tensor *full = NULL;
    for (int pass = 0; pass < 2; pass++) {
        tm_zero_grad(w);
        int parts = pass ? 2 : 1;
        for (int k = 0; k < parts; k++) {
            int64_t rows = 8 / parts;
            tm_tensor *xs = tm_narrow(x, 0, k * rows, rows);
            tm_tensor *ys = tm_narrow(y, 0, k * rows, rows);
            tm_tensor *pr = tm_matmul(xs, w);
            tm_tensor *l = tm_mse_loss(pr, ys, TM_REDUCTION_MEAN);
            tm_tensor *ls = tm_mul_scalar(l, 1.0 / parts);
            CHECK_INT(tm_backward(ls), TM_OK);
            tm_free(xs);
            tm_free(ys);
            tm_free(pr);
            tm_free(l);
            tm_free(ls);
        }
        if (!pass) {
            full = tm_clone(tm_grad(w));
        } else {
            const double *a = tm_data(full), *b = tm_data(tm_grad(w));
            for (int i = 0; i < 3; i++) CHECK_NEAR(b[i], a[i], 1e-13);
        }
    }
    tm_free(full);
    tm_free(x);
    tm_free(y);
    tm_free(w);
}

TEST(clip_and_schedules_validate_arguments)
{
    tm_tensor *p = param(3, TM_F32, 1);
    CHECK_STATUS(tm_clip_grad_norm_(&p, 1, -1, 2, NULL), TM_EINVAL,
                 "max_norm -1");
    CHECK_STATUS(tm_clip_grad_norm_(&p, 1, 1, 0, NULL), TM_EINVAL,
                 "norm_type 0");
    CHECK_STATUS(tm_clip_grad_value_(&p, 1, -2), TM_EINVAL, "clip_value -2");
    double tot = -1;
    CHECK_INT(tm_clip_grad_norm_(&p, 1, 1, 2, &tot), TM_OK); /* no grads */
    CHECK_NEAR(tot, 0, 0);
    tm_free(p);
    tm_lr_sched s = tm_lr_sched_defaults(TM_LR_STEP, 0.1);
    s.step_size = 0;
    tm_clear_error();
    CHECK(isnan(tm_lr_sched_at(&s, 1)));
    CHECK(strstr(tm_last_error(), "invalid step_size 0") != NULL);
    s = tm_lr_sched_defaults(TM_LR_ONE_CYCLE, 0.1);
    s.total_steps = 10;
    CHECK(isnan(tm_lr_sched_at(&s, 11)));
    CHECK(strstr(tm_last_error(), "past total_steps 10") != NULL);
    CHECK(isnan(tm_lr_sched_at(&s, -1)));
    CHECK_NEAR(tm_lr_sched_at(&s, 9), 0.1 / 25 / 1e4, 1e-15);
}

/* Two parameters (F32 and F64, the F32 one over two norm chunks) with
 * gradients, one element of each -0.0. */
static tm_status clip_params(tm_tensor **ps)
{
    ps[0] = param(70000, TM_F32, 4);
    ps[1] = param(33, TM_F64, 5);
    if (!ps[0] || !ps[1]) return TM_ENOMEM;
    tm_status st = give_grad(ps[0], 1);
    if (!st) st = give_grad(ps[1], 2);
    if (st) return st;
    ((float *)tm_data(tm_grad(ps[0])))[5] = -0.0f;
    ((double *)tm_data(tm_grad(ps[1])))[7] = -0.0;
    return TM_OK;
}

TEST(clip_grad_norm_runs_on_the_table_and_keeps_unclipped_bits)
{
    const tm_backend *b = tm_backend_get(TM_DEVICE_CPU);
    REQUIRE(b);
    CHECK(b->loss && b->loss_backward && b->optim_step && b->grad_norm);
    tm_tensor *a[2] = {0}, *c[2] = {0};
    REQUIRE(clip_params(a) == TM_OK && clip_params(c) == TM_OK);
    tm_tensor *g0[2] = {tm_clone(tm_grad(a[0])), tm_clone(tm_grad(a[1]))};
    REQUIRE(g0[0] && g0[1]);
    /* a max_norm above the norm: every gradient keeps its bits */
    double tot = -1, tot2 = -1;
    CHECK_INT(tm_clip_grad_norm_(a, 2, 1e30, 2, &tot), TM_OK);
    CHECK(tot > 0);
    CHECK(same_bits(tm_grad(a[0]), g0[0]) && same_bits(tm_grad(a[1]), g0[1]));
    /* clipping gives the same bits whether the norm is asked for or not */
    CHECK_INT(tm_clip_grad_norm_(a, 2, 0.5, 2, &tot2), TM_OK);
    CHECK(memcmp(&tot, &tot2, sizeof tot) == 0);
    CHECK_INT(tm_clip_grad_norm_(c, 2, 0.5, 2, NULL), TM_OK);
    CHECK(same_bits(tm_grad(a[0]), tm_grad(c[0])));
    CHECK(same_bits(tm_grad(a[1]), tm_grad(c[1])));
    CHECK(!same_bits(tm_grad(a[0]), g0[0]));
    for (int i = 0; i < 2; i++) {
        tm_free(a[i]);
        tm_free(c[i]);
        tm_free(g0[i]);
    }
}

static tm_status clip_seq(void)
{
    tm_tensor *ps[2] = {0};
    double tot;
    tm_status st = clip_params(ps);
    if (!st) st = tm_clip_grad_norm_(ps, 2, 0.5, 2, &tot);
    if (!st) st = tm_clip_grad_norm_(ps, 2, 0.1, 3, NULL);
    if (!st) st = tm_clip_grad_value_(ps, 2, 0.01);
    if (st == TM_ENOMEM && tm_last_status() != TM_ENOMEM)
        st = tm_last_status();
    tm_free(ps[0]);
    tm_free(ps[1]);
    return st;
}

TEST(clip_survives_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(clip_seq, 10);
}

static tm_status alloc_seq(void)
{
    tm_status st = TM_ENOMEM;
    tm_tensor *ps[2] = {param(40, TM_F32, 1), param(3, TM_F32, 2)};
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_RMSPROP);
    hp.centered = true;
    hp.momentum = 0.9;
    tm_optim *o = NULL, *o2 = NULL;
    tm_params *sd = tm_params_new();
    if (!ps[0] || !ps[1] || !sd) goto done;
    if (!(o = make_opt(TM_OPTIM_RMSPROP, &hp, ps))) goto done;
    if ((st = give_grad(ps[0], 1)) != TM_OK) goto done;
    if ((st = tm_optim_step(o)) != TM_OK) goto done;
    if ((st = tm_optim_state_dict(o, sd)) != TM_OK) goto done;
    st = TM_ENOMEM;
    if (!(o2 = make_opt(TM_OPTIM_RMSPROP, &hp, ps))) goto done;
    st = tm_optim_load_state_dict(o2, sd);
done:
    if (st == TM_ENOMEM && tm_last_status() != TM_ENOMEM)
        st = tm_last_status();
    tm_optim_free(o);
    tm_optim_free(o2);
    tm_params_free(sd);
    tm_free(ps[0]);
    tm_free(ps[1]);
    return st;
}

TEST(optim_survives_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(alloc_seq, 10);
}
