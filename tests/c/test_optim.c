/*
 * test_optim.c — optimizers, schedules and clipping against PyTorch
 * (tests/data/optim.ref from tests/gen/gen_optim.py; tolerances are
 * stated and justified there), and the properties PyTorch cannot check:
 * bitwise resume from a state dict, and bitwise equal results for every
 * thread count and SIMD family.
 */
#include "refcase.h"

#include "../../cpu/cpu_features.h"

/* Sets p's gradient to exactly G: backward of sum(p * G) (1 * G is
 * exact). */
static tm_status set_grad(tm_tensor *p, const tm_tensor *G)
{
    tm_zero_grad(p);
    tm_tensor *m = tm_mul(p, G);
    tm_tensor *l = m ? tm_sum(m, NULL, 0, false) : NULL;
    tm_status st = l ? tm_backward(l) : tm_last_status();
    tm_free(l);
    tm_free(m);
    return st;
}

/* grad = a * (p - t) + 0.01 * (p * p), elementwise in p's dtype, the
 * operations of gen_optim.py (no fused multiply-add: -ffp-contract=off). */
static tm_tensor *quad_grad(const tm_tensor *p, const tm_tensor *t,
                            const tm_tensor *a)
{
    tm_tensor *g = tm_empty(tm_shape(p), tm_ndim(p), tm_dtype_of(p));
    if (!g) return NULL;
    int64_t n = tm_numel(p);
    if (tm_dtype_of(p) == TM_F32) {
        const float *P = tm_data(p), *T = tm_data(t), *A = tm_data(a);
        float *G = tm_data(g);
        for (int64_t i = 0; i < n; i++)
            G[i] = A[i] * (P[i] - T[i]) + 0.01f * (P[i] * P[i]);
    } else {
        const double *P = tm_data(p), *T = tm_data(t), *A = tm_data(a);
        double *G = tm_data(g);
        for (int64_t i = 0; i < n; i++)
            G[i] = A[i] * (P[i] - T[i]) + 0.01 * (P[i] * P[i]);
    }
    return g;
}

static tm_optim_hparams case_hparams(const tt_refcase *c, tm_optim_kind k)
{
    tm_optim_hparams hp = tm_optim_defaults(k);
    hp.lr = tt_arg(c, "lr", hp.lr);
    hp.weight_decay = tt_arg(c, "wd", 0);
    hp.momentum = tt_arg(c, "momentum", 0);
    hp.dampening = tt_arg(c, "dampening", 0);
    int64_t b[2] = {0};
    double betas[2] = {0.9, 0.999};
    for (int i = 0; i < c->nargs; i++)
        if (!strcmp(c->args[i].key, "betas")) {
            betas[0] = c->args[i].v[0];
            betas[1] = c->args[i].v[1];
        }
    (void)b;
    hp.beta1 = betas[0];
    hp.beta2 = betas[1];
    if (tt_arg(c, "eps", -1) >= 0) hp.eps = tt_arg(c, "eps", -1);
    hp.alpha = tt_arg(c, "alpha", 0.99);
    hp.lr_decay = tt_arg(c, "lr_decay", 0);
    hp.initial_accumulator_value = tt_arg(c, "init_acc", 0);
    int fl[5] = {0};
    tt_arg_ints(c, "flags", fl, 5);
    hp.nesterov = fl[0];
    hp.centered = fl[1];
    hp.amsgrad = fl[2];
    hp.maximize = fl[3];
    return hp;
}

static tm_status run_optim(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    tm_optim_kind kind = (tm_optim_kind)(int)tt_arg(c, "kind", 0);
    tm_optim_hparams hp = case_hparams(c, kind), hp2 = hp;
    int fl[5] = {0}, steps[2] = {0};
    tt_arg_ints(c, "flags", fl, 5);
    tt_arg_ints(c, "steps", steps, 2);
    hp2.lr = hp.lr * tt_arg(c, "lr2", 1);
    bool nd2 = fl[4];
    tm_tensor *p[2] = {tm_clone(c->in[0]), tm_clone(c->in[3])};
    tm_optim *opt = tm_optim_new(kind, &hp);
    tm_status st = TM_ENOMEM;
    int k = 0;
    if (!p[0] || !p[1] || !opt) goto done;
    if ((st = tm_requires_grad_(p[0], true)) != TM_OK ||
        (st = tm_requires_grad_(p[1], true)) != TM_OK)
        goto done;
    if (tm_optim_add_group(opt, &p[0], NULL, 1, NULL) != 0 ||
        tm_optim_add_group(opt, &p[1], &nd2, 1, &hp2) != 1) {
        st = tm_last_status();
        goto done;
    }
    for (int s = 1; s <= steps[1]; s++) {
        for (int j = 0; j < 2; j++) {
            tm_tensor *g = quad_grad(p[j], c->in[3 * j + 1], c->in[3 * j + 2]);
            st = g ? set_grad(p[j], g) : TM_ENOMEM;
            tm_free(g);
            if (st != TM_OK) goto done;
        }
        if ((st = tm_optim_step(opt)) != TM_OK) goto done;
        if (s == steps[0] || s == steps[1])
            for (int j = 0; j < 2; j++) {
                tm_tensor *d = tm_detach(p[j]);
                got[k++] = d ? tm_clone(d) : NULL;
                tm_free(d);
                if (!got[k - 1]) {
                    st = TM_ENOMEM;
                    goto done;
                }
            }
    }
    *ngot = k;
    k = 0;
done:
    for (int j = 0; j < k; j++) tm_free(got[j]);
    tm_optim_free(opt);
    tm_free(p[0]);
    tm_free(p[1]);
    return st;
}

static tm_status run_sched(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    tm_lr_sched s = tm_lr_sched_defaults(
        (tm_lr_sched_kind)(int)tt_arg(c, "kind", 0), tt_arg(c, "base_lr", 0));
    s.gamma = tt_arg(c, "gamma", s.gamma);
    s.step_size = (int64_t)tt_arg(c, "step_size", (double)s.step_size);
    s.warmup_steps = (int64_t)tt_arg(c, "warmup", 0);
    s.t_max = (int64_t)tt_arg(c, "t_max", (double)s.t_max);
    s.eta_min = tt_arg(c, "eta_min", 0);
    s.start_factor = tt_arg(c, "start_factor", s.start_factor);
    s.end_factor = tt_arg(c, "end_factor", s.end_factor);
    s.total_steps = (int64_t)tt_arg(c, "total", (double)s.total_steps);
    s.pct_start = tt_arg(c, "pct_start", s.pct_start);
    s.div_factor = tt_arg(c, "div", s.div_factor);
    s.final_div_factor = tt_arg(c, "final_div", s.final_div_factor);
    int64_t n = (int64_t)tt_arg(c, "n", 0);
    tm_tensor *out = tm_empty(&n, 1, TM_F64);
    if (!out) return TM_ENOMEM;
    double *v = tm_data(out);
    for (int64_t t = 0; t < n; t++) {
        v[t] = tm_lr_sched_at(&s, t);
        if (v[t] != v[t]) {
            tm_free(out);
            return tm_last_status();
        }
    }
    got[0] = out;
    *ngot = 1;
    return TM_OK;
}

static tm_status run_clip(const tt_refcase *c, tm_tensor **got, int *ngot,
                          bool by_value)
{
    tm_tensor *p[2] = {tm_zeros_like(c->in[0]), tm_zeros_like(c->in[1])};
    tm_status st = TM_ENOMEM;
    int k = 0;
    double total = 0;
    if (!p[0] || !p[1]) goto done;
    for (int j = 0; j < 2; j++)
        if ((st = tm_requires_grad_(p[j], true)) != TM_OK ||
            (st = set_grad(p[j], c->in[j])) != TM_OK)
            goto done;
    st = by_value ? tm_clip_grad_value_(p, 2, tt_arg(c, "value", 0))
                  : tm_clip_grad_norm_(p, 2, tt_arg(c, "max_norm", 0),
                                       tt_arg(c, "norm_type", 2), &total);
    if (st != TM_OK) goto done;
    if (!by_value) got[k++] = tm_scalar(total, TM_F64);
    for (int j = 0; j < 2; j++) got[k++] = tm_clone(tm_grad(p[j]));
    *ngot = k;
done:
    tm_free(p[0]);
    tm_free(p[1]);
    return st;
}

static tm_status dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    if (!strcmp(c->op, "optim")) return run_optim(c, got, ngot);
    if (!strcmp(c->op, "sched")) return run_sched(c, got, ngot);
    if (!strcmp(c->op, "clip_norm")) return run_clip(c, got, ngot, false);
    if (!strcmp(c->op, "clip_value")) return run_clip(c, got, ngot, true);
    return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
}

TEST(optim_matches_torch_trajectories_schedules_and_clipping)
{
    tt_run_ref_file("optim.ref", dispatch);
}

/* The same trajectories through every SIMD family this CPU runs: the
 * kernels must agree bitwise, which the tolerance of the file would hide,
 * so each family's result is compared with the portable one exactly. */
TEST(optim_ref_cases_under_every_kernel_family)
{
    tm__isa saved = tm__cpu_isa();
    for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
        if (!tm__set_isa((tm__isa)isa)) continue;
        tt_run_ref_file("optim.ref", dispatch);
    }
    tm__set_isa(saved);
}
