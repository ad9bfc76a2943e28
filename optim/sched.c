/*
 * sched.c — learning-rate schedules as pure functions of the step
 * (foundry/optim.h has the formulas).  The arithmetic follows PyTorch's
 * closed forms (OneCycleLR operation by operation).
 */
#include "optim_impl.h"

#include <math.h>

/* math.pi (M_PI is not C11) */
#define TMO_PI 3.14159265358979323846

tm_lr_sched tm_lr_sched_defaults(tm_lr_sched_kind kind, double base_lr)
{
    tm_lr_sched s = {
        .kind = kind,
        .base_lr = base_lr,
        .gamma = 0.1,
        .step_size = 1,
        .warmup_steps = 0,
        .t_max = 1,
        .eta_min = 0,
        .start_factor = 1.0 / 3,
        .end_factor = 1.0,
        .total_steps = 5,
        .pct_start = 0.3,
        .div_factor = 25,
        .final_div_factor = 1e4,
    };
    return s;
}

static tm_status bad(const char *fn, const char *field, double v,
                     const char *rule)
{
    return tm__errf(TM_EINVAL, fn, "invalid %s %g: must be %s", field, v,
                    rule);
}

static tm_status check(const char *fn, const tm_lr_sched *s)
{
    if (!s) return tm__errf(TM_EINVAL, fn, "schedule is NULL");
    if (!(s->base_lr >= 0) || !isfinite(s->base_lr))
        return bad(fn, "base_lr", s->base_lr, ">= 0 and finite");
    switch (s->kind) {
    case TM_LR_CONSTANT: return TM_OK;
    case TM_LR_STEP:
        if (s->step_size < 1)
            return bad(fn, "step_size", (double)s->step_size, ">= 1");
        /* fall through */
    case TM_LR_EXPONENTIAL:
        if (!(s->gamma > 0) || !isfinite(s->gamma))
            return bad(fn, "gamma", s->gamma, "> 0 and finite");
        return TM_OK;
    case TM_LR_COSINE:
        if (s->warmup_steps < 0)
            return bad(fn, "warmup_steps", (double)s->warmup_steps, ">= 0");
        if (s->t_max < 1) return bad(fn, "t_max", (double)s->t_max, ">= 1");
        if (!isfinite(s->eta_min))
            return bad(fn, "eta_min", s->eta_min, "finite");
        if (s->warmup_steps > 0 &&
            !(s->start_factor > 0 && s->start_factor <= 1))
            return bad(fn, "start_factor", s->start_factor, "in (0, 1]");
        return TM_OK;
    case TM_LR_LINEAR:
        if (!(s->start_factor > 0 && s->start_factor <= 1))
            return bad(fn, "start_factor", s->start_factor, "in (0, 1]");
        if (!(s->end_factor >= 0 && s->end_factor <= 1))
            return bad(fn, "end_factor", s->end_factor, "in [0, 1]");
        if (s->total_steps < 1)
            return bad(fn, "total_steps", (double)s->total_steps, ">= 1");
        return TM_OK;
    case TM_LR_ONE_CYCLE:
        if (s->total_steps < 1)
            return bad(fn, "total_steps", (double)s->total_steps, ">= 1");
        if (!(s->pct_start >= 0 && s->pct_start <= 1))
            return bad(fn, "pct_start", s->pct_start, "in [0, 1]");
        if (!(s->div_factor > 0) || !isfinite(s->div_factor))
            return bad(fn, "div_factor", s->div_factor, "> 0 and finite");
        if (!(s->final_div_factor > 0) || !isfinite(s->final_div_factor))
            return bad(fn, "final_div_factor", s->final_div_factor,
                       "> 0 and finite");
        /* PyTorch divides by e1 = pct_start * total - 1 and e2 - e1 */
        {
            double e1 = s->pct_start * (double)s->total_steps - 1,
                   e2 = (double)s->total_steps - 1;
            if (e1 == 0 || e2 - e1 == 0)
                return tm__errf(TM_EINVAL, fn,
                                "pct_start %g with total_steps %lld gives "
                                "an empty phase (PyTorch divides by zero)",
                                s->pct_start, (long long)s->total_steps);
        }
        return TM_OK;
    }
    return tm__errf(TM_EINVAL, fn, "unknown schedule kind %d", (int)s->kind);
}

tm_status tm_lr_sched_check(const tm_lr_sched *s)
{
    return check(__func__, s);
}

static double anneal_cos(double start, double end, double pct)
{
    double cos_out = cos(TMO_PI * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
}

double tm_lr_sched_at(const tm_lr_sched *s, int64_t t)
{
    if (check(__func__, s) != TM_OK) return NAN;
    if (t < 0) {
        TM_ERR(TM_EINVAL, "step %lld must be >= 0", (long long)t);
        return NAN;
    }
    double b = s->base_lr, x = (double)t;
    switch (s->kind) {
    case TM_LR_CONSTANT: return b;
    case TM_LR_STEP: return b * pow(s->gamma, (double)(t / s->step_size));
    case TM_LR_EXPONENTIAL: return b * pow(s->gamma, x);
    case TM_LR_COSINE: {
        int64_t w = s->warmup_steps;
        if (t < w) {
            double f = s->start_factor;
            return b * (f + (1 - f) * x / (double)w);
        }
        double u = (double)(t - w);
        return s->eta_min + (b - s->eta_min) *
                                (1 + cos(TMO_PI * u / (double)s->t_max)) / 2;
    }
    case TM_LR_LINEAR: {
        double f = s->start_factor;
        double c = t < s->total_steps ? x : (double)s->total_steps;
        return b * (f + (s->end_factor - f) * c / (double)s->total_steps);
    }
    case TM_LR_ONE_CYCLE: {
        if (t > s->total_steps) {
            TM_ERR(TM_ERANGE, "step %lld is past total_steps %lld", (long long)t,
                   (long long)s->total_steps);
            return NAN;
        }
        double lo = b / s->div_factor, fin = lo / s->final_div_factor;
        double e1 = s->pct_start * (double)s->total_steps - 1;
        double e2 = (double)s->total_steps - 1;
        if (x <= e1) return anneal_cos(lo, b, x / e1);
        return anneal_cos(b, fin, (x - e1) / (e2 - e1));
    }
    }
    return NAN;
}
