/* ref_dispatch_optim.c — the dispatcher of optim.ref (ref_dispatch.h):
 * optimizer steps, schedules and clipping against PyTorch, moved here from
 * test_optim.c so that the CPU tests and the conformance suite run one
 * copy.
 *
 * Optimizers are compared one step at a time from a shared state: each
 * case holds torch's parameters, gradients and state before one step and
 * its parameters and state after it.  Whole trajectories are not compared
 * with torch: they are ill-conditioned (a one-ulp difference can grow past
 * any ulp-level tolerance), see gen_optim.py.
 */
#include "ref_dispatch.h"

#include <stdlib.h>

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

/* Foundry's state names per kind, in the order of a case's state rows
 * (gen_optim.py SLOTS). */
static const char *const SLOTS[5][3] = {
    [TM_OPTIM_SGD] = {"momentum_buffer", NULL, NULL},
    [TM_OPTIM_ADAM] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    [TM_OPTIM_ADAMW] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    [TM_OPTIM_RMSPROP] = {"square_avg", "grad_avg", "momentum_buffer"},
    [TM_OPTIM_ADAGRAD] = {"sum", NULL, NULL},
};

/* A contiguous copy of pack[r]. */
static tm_tensor *row(const tm_tensor *pack, int64_t r)
{
    tm_tensor *v = tm_select(pack, 0, r);
    tm_tensor *c = v ? tm_clone(v) : NULL;
    tm_free(v);
    return c;
}

/* One step of a case: parameters, gradients and (after step 1) state
 * from the inputs, into a fresh optimizer; outputs as gen_optim.py
 * describes them.  Returns the status; *ngot outputs in got[]. */
tm_status tt_optim_run_step(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    tm_optim_kind kind = (tm_optim_kind)(int)tt_arg(c, "kind", 0);
    tm_optim_hparams hp = case_hparams(c, kind), hp2 = hp;
    int fl[5] = {0}, mask[3] = {0}, nslots = 0;
    tt_arg_ints(c, "flags", fl, 5);
    tt_arg_ints(c, "slots", mask, 3);
    int64_t step = (int64_t)tt_arg(c, "step", 0);
    hp2.lr = hp.lr * tt_arg(c, "lr2", 1);
    bool nd2 = fl[4];
    if ((int)kind < 0 || (int)kind > 4 || step < 1 || c->nin != 2)
        return tm_set_error(TM_EINVAL, "malformed optim_step case");
    for (int j = 0; j < 3; j++) {
        if (mask[j] && !SLOTS[kind][j])
            return tm_set_error(TM_EINVAL, "slot %d of kind %d", j,
                                (int)kind);
        nslots += mask[j] != 0;
    }
    for (int j = 0; j < 2; j++)
        if (tm_ndim(c->in[j]) < 1 ||
            tm_shape(c->in[j])[0] != 2 + (step > 1 ? nslots : 0))
            return tm_set_error(TM_EINVAL, "input %d: wrong number of rows",
                                j);
    tm_tensor *p[2] = {NULL, NULL}, *out[3] = {NULL, NULL, NULL};
    tm_optim *opt = tm_optim_new(kind, &hp);
    tm_params *sd = tm_params_new(), *after = tm_params_new();
    tm_status st = TM_ENOMEM;
    int k = 0;
    if (!opt || !sd || !after) goto done;
    for (int j = 0; j < 2; j++)
        if (!(p[j] = row(c->in[j], 0)) ||
            (st = tm_requires_grad_(p[j], true)) != TM_OK)
            goto done;
    if (tm_optim_add_group(opt, &p[0], NULL, 1, NULL) != 0 ||
        tm_optim_add_group(opt, &p[1], &nd2, 1, &hp2) != 1) {
        st = tm_last_status();
        goto done;
    }
    /* the state before the step; at step 1 both start fresh */
    for (int j = 0; j < 2 && step > 1; j++) {
        char name[64];
        int r = 2;
        for (int s = 0; s < 3; s++) {
            if (!mask[s]) continue;
            tm_tensor *t = row(c->in[j], r++);
            snprintf(name, sizeof name, "state.%d.%s", j, SLOTS[kind][s]);
            st = t ? tm_params_add_buffer(sd, name, t) : tm_last_status();
            tm_free(t);
            if (st != TM_OK) goto done;
        }
        if (kind != TM_OPTIM_SGD) {
            tm_tensor *t = tm_scalar((double)(step - 1), TM_I64);
            snprintf(name, sizeof name, "state.%d.step", j);
            st = t ? tm_params_add_buffer(sd, name, t) : TM_ENOMEM;
            tm_free(t);
            if (st != TM_OK) goto done;
        }
    }
    if (step > 1 && (st = tm_optim_load_state_dict(opt, sd)) != TM_OK)
        goto done;
    for (int j = 0; j < 2; j++) {
        tm_tensor *g = row(c->in[j], 1);
        st = g ? tm_set_grad(p[j], g) : tm_last_status();
        tm_free(g);
        if (st != TM_OK) goto done;
    }
    if ((st = tm_optim_step(opt)) != TM_OK ||
        (st = tm_optim_state_dict(opt, after)) != TM_OK)
        goto done;
    /* exactly the state torch keeps: the slots of the mask, and step */
    int want = 2 * (nslots + (kind != TM_OPTIM_SGD));
    if (tm_params_count(after) != want) {
        st = tm_set_error(TM_EINVAL, "%d state tensors after the step, "
                          "expected %d", tm_params_count(after), want);
        goto done;
    }
    /* outputs: [p, state...] per parameter, then the step counts */
    int64_t steps[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
        tm_tensor *rows[4];
        int n = 0;
        char name[64];
        rows[n++] = tm_detach(p[j]);
        for (int s = 0; s < 3; s++) {
            if (!mask[s]) continue;
            snprintf(name, sizeof name, "state.%d.%s", j, SLOTS[kind][s]);
            rows[n] = tm_params_find(after, name);
            if (!rows[n]) {
                tm_free(rows[0]);
                st = tm_set_error(TM_EINVAL, "no %s after the step", name);
                goto done;
            }
            n++;
        }
        out[k] = rows[0] ? tm_stack(rows, n, 0) : NULL;
        tm_free(rows[0]);
        if (!out[k++]) {
            st = tm_last_status();
            goto done;
        }
        snprintf(name, sizeof name, "state.%d.step", j);
        const tm_tensor *t = tm_params_find(after, name);
        if (t && (st = tm_item_i64(t, &steps[j])) != TM_OK) goto done;
    }
    if (kind != TM_OPTIM_SGD && !(out[k++] = tm_from_buffer(
                                      steps, (int64_t[]){2}, 1, TM_I64))) {
        st = tm_last_status();
        goto done;
    }
    for (int j = 0; j < k; j++) got[j] = out[j];
    *ngot = k;
    k = 0;
    st = TM_OK;
done:
    for (int j = 0; j < k; j++) tm_free(out[j]);
    tm_params_free(sd);
    tm_params_free(after);
    tm_optim_free(opt);
    tm_free(p[0]);
    tm_free(p[1]);
    return st;
}

/* The bound of the file (arg ulps): |got - want| <= ulps ulps (of the
 * dtype) of max(|before|, |want|, |want - before|), elementwise, for each
 * [p, state...] output j; "before" is the matching input row (zero for
 * state at step 1). */
static void check_ulps(const tt_refcase *c, tm_tensor *const *got, int ngot)
{
    double ulps = tt_arg(c, "ulps", -1);
    int64_t step = (int64_t)tt_arg(c, "step", 0);
    if (ulps < 0) {
        tt_fail(__FILE__, __LINE__, "case %s: no ulps bound", c->name);
        return;
    }
    for (int j = 0; j < 2 && j < ngot && j < c->nout; j++) {
        const tm_tensor *want = c->out[j], *in = c->in[j];
        if (tm_ndim(got[j]) != tm_ndim(want) || tm_ndim(want) < 1 ||
            tm_numel(got[j]) != tm_numel(want) ||
            tm_shape(got[j])[0] != tm_shape(want)[0] ||
            tm_dtype_of(got[j]) != tm_dtype_of(want))
            continue; /* refcase reports it */
        bool f32 = tm_dtype_of(want) == TM_F32;
        int64_t n = tm_numel(want), m = n / tm_shape(want)[0];
        int64_t nin = tm_numel(in);
        if (nin < (step > 1 ? n + m : m)) {
            tt_fail(__FILE__, __LINE__, "case %s: input %d is too short",
                    c->name, j);
            continue;
        }
        double *g = malloc(sizeof(double) * (size_t)n);
        double *w = malloc(sizeof(double) * (size_t)n);
        double *b = malloc(sizeof(double) * (size_t)nin);
        if (!g || !w || !b ||
            tm_copy_to_buffer(got[j], g, sizeof(double) * (size_t)n,
                              TM_F64) ||
            tm_copy_to_buffer(want, w, sizeof(double) * (size_t)n, TM_F64) ||
            tm_copy_to_buffer(in, b, sizeof(double) * (size_t)nin, TM_F64)) {
            tt_fail(__FILE__, __LINE__, "case %s: cannot read output %d",
                    c->name, j);
        } else {
            int bad = 0;
            for (int64_t i = 0; i < n; i++) {
                /* row 0 is p (input row 0); row r >= 1 is state slot r - 1
                 * (input row r + 1, after p and grad) */
                int64_t r = i / m, e = i % m;
                double before = r == 0 ? b[e]
                                : step > 1 ? b[(r + 1) * m + e] : 0.0;
                double s = fmax(fmax(fabs(before), fabs(w[i])),
                                fabs(w[i] - before));
                double ulp = f32 ? (double)(nextafterf((float)s, INFINITY) -
                                            (float)s)
                                 : nextafter(s, INFINITY) - s;
                double err = fabs(g[i] - w[i]);
                if (!(err <= ulps * ulp) && bad++ < 3)
                    tt_fail(__FILE__, __LINE__,
                            "case %s output %d row %lld element %lld: got "
                            "%.17g, torch %.17g (before the step %.17g): "
                            "%.1f ulps apart, at most %g",
                            c->name, j, (long long)r, (long long)e, g[i],
                            w[i], before, err / ulp, ulps);
            }
        }
        free(g);
        free(w);
        free(b);
    }
}

static tm_status run_step_checked(const tt_refcase *c, tm_tensor **got,
                                  int *ngot)
{
    tm_status st = tt_optim_run_step(c, got, ngot);
    if (st == TM_OK) check_ulps(c, got, *ngot);
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

tm_status tt_optim_dispatch(const tt_refcase *c, tm_tensor **got, int *ngot)
{
    if (!strcmp(c->op, "optim_step")) return run_step_checked(c, got, ngot);
    if (!strcmp(c->op, "sched")) return run_sched(c, got, ngot);
    if (!strcmp(c->op, "clip_norm")) return run_clip(c, got, ngot, false);
    if (!strcmp(c->op, "clip_value")) return run_clip(c, got, ngot, true);
    return tm_set_error(TM_EUNSUPPORTED, "unknown op %s", c->op);
}
