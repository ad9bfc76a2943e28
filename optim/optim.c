/*
 * optim.c — optimizers: groups and hyperparameters (foundry/optim.h).
 * The step is optim_step.c (the backend's `optim_step` entry; the CPU's
 * arithmetic is cpu/optim/optim_kern_tmpl.h); state naming and
 * checkpoints are optim_state.c.
 */
#include "optim_impl.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- hparams */

const char *tm_optim_kind_name(tm_optim_kind kind)
{
    switch (kind) {
    case TM_OPTIM_SGD: return "SGD";
    case TM_OPTIM_ADAM: return "Adam";
    case TM_OPTIM_ADAMW: return "AdamW";
    case TM_OPTIM_RMSPROP: return "RMSprop";
    case TM_OPTIM_ADAGRAD: return "Adagrad";
    }
    return "?";
}

static bool kind_ok(tm_optim_kind kind)
{
    return kind >= TM_OPTIM_SGD && kind <= TM_OPTIM_ADAGRAD;
}

tm_optim_hparams tm_optim_defaults(tm_optim_kind kind)
{
    tm_optim_hparams hp;
    memset(&hp, 0, sizeof hp);
    switch (kind) {
    case TM_OPTIM_SGD: hp.lr = 1e-3; break;
    case TM_OPTIM_ADAMW: hp.weight_decay = 1e-2; /* fall through */
    case TM_OPTIM_ADAM:
        hp.lr = 1e-3;
        hp.beta1 = 0.9;
        hp.beta2 = 0.999;
        hp.eps = 1e-8;
        break;
    case TM_OPTIM_RMSPROP:
        hp.lr = 1e-2;
        hp.alpha = 0.99;
        hp.eps = 1e-8;
        break;
    case TM_OPTIM_ADAGRAD:
        hp.lr = 1e-2;
        hp.eps = 1e-10;
        break;
    }
    return hp;
}

/* Fails unless lo <= v (and v < hi when hi_open, finite always). */
static tm_status check_field(const char *fn, const char *name, double v,
                             double lo, bool hi_open, double hi,
                             const char *rule)
{
    if (!(v >= lo) || !isfinite(v) || (hi_open && !(v < hi)))
        return tm__errf(TM_EINVAL, fn, "invalid %s %g: must be %s", name, v,
                        rule);
    return TM_OK;
}

/* The two rules most fields follow. */
static tm_status check_nonneg(const char *fn, const char *name, double v)
{
    return check_field(fn, name, v, 0, false, 0, ">= 0 and finite");
}

static tm_status check_unit(const char *fn, const char *name, double v)
{
    return check_field(fn, name, v, 0, true, 1, "in [0, 1)");
}

/* Each check returns its status; the first failure is returned (and its
 * message kept), in the order the fields are listed. */
static tm_status check_hparams(const char *fn, tm_optim_kind kind,
                               const tm_optim_hparams *hp)
{
    if (!kind_ok(kind))
        return tm__errf(TM_EINVAL, fn, "unknown optimizer kind %d",
                        (int)kind);
    if (!hp) return tm__errf(TM_EINVAL, fn, "hparams is NULL");
    tm_status st;
    if ((st = check_nonneg(fn, "lr", hp->lr)) ||
        (st = check_nonneg(fn, "weight_decay", hp->weight_decay)))
        return st;
    switch (kind) {
    case TM_OPTIM_SGD:
        if ((st = check_nonneg(fn, "momentum", hp->momentum)) ||
            (st = check_field(fn, "dampening", hp->dampening, -INFINITY,
                              false, 0, "finite")))
            return st;
        if (hp->nesterov && (hp->momentum <= 0 || hp->dampening != 0))
            return tm__errf(TM_EINVAL, fn,
                            "nesterov momentum requires a momentum > 0 and "
                            "zero dampening (momentum %g, dampening %g)",
                            hp->momentum, hp->dampening);
        break;
    case TM_OPTIM_ADAM:
    case TM_OPTIM_ADAMW:
        if ((st = check_unit(fn, "beta1", hp->beta1)) ||
            (st = check_unit(fn, "beta2", hp->beta2)) ||
            (st = check_nonneg(fn, "eps", hp->eps)))
            return st;
        break;
    case TM_OPTIM_RMSPROP:
        if ((st = check_nonneg(fn, "alpha", hp->alpha)) ||
            (st = check_nonneg(fn, "eps", hp->eps)) ||
            (st = check_nonneg(fn, "momentum", hp->momentum)))
            return st;
        break;
    case TM_OPTIM_ADAGRAD:
        if ((st = check_nonneg(fn, "lr_decay", hp->lr_decay)) ||
            (st = check_nonneg(fn, "initial_accumulator_value",
                               hp->initial_accumulator_value)) ||
            (st = check_nonneg(fn, "eps", hp->eps)))
            return st;
        break;
    }
    return TM_OK;
}

tm_status tm_optim_check_hparams(tm_optim_kind kind,
                                 const tm_optim_hparams *hp)
{
    return check_hparams(__func__, kind, hp);
}

/* -------------------------------------------------------------- object */

tm_optim *tm_optim_new(tm_optim_kind kind, const tm_optim_hparams *defaults)
{
    tm_optim_hparams d = kind_ok(kind) ? tm_optim_defaults(kind)
                                       : tm_optim_defaults(TM_OPTIM_SGD);
    if (defaults) d = *defaults;
    if (check_hparams(__func__, kind, &d) != TM_OK) return NULL;
    tm_optim *opt = tm__calloc(sizeof *opt, __func__);
    if (!opt) return NULL;
    opt->kind = kind;
    opt->defaults = d;
    return opt;
}

void tm__optim_clear_state(tmo_param *pa)
{
    for (int j = 0; j < TMO_NSTATE; j++) {
        tm_free(pa->s[j]);
        pa->s[j] = NULL;
    }
    pa->step = 0;
    pa->has_state = false;
}

void tm_optim_free(tm_optim *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->nparams; i++) {
        tm__optim_clear_state(&opt->params[i]);
        tm_free(opt->params[i].t);
    }
    tm__dealloc(opt->params);
    tm__dealloc(opt->groups);
    tm__dealloc(opt);
}

tm_optim_kind tm_optim_kind_of(const tm_optim *opt)
{
    return opt ? opt->kind : TM_OPTIM_SGD;
}

static tm_status grow(void **arr, int *cap, int need, size_t elem,
                      int count, const char *fn)
{
    if (need <= *cap) return TM_OK;
    if (need > INT32_MAX / 4)
        return tm__errf(TM_EOVERFLOW, fn, "too many parameters (%d)", need);
    int c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    void *p = tm__alloc((size_t)c * elem, fn);
    if (!p) return TM_ENOMEM;
    if (count) memcpy(p, *arr, (size_t)count * elem);
    tm__dealloc(*arr);
    *arr = p;
    *cap = c;
    return TM_OK;
}

static int find_param(const tm_optim *opt, const tm_tensor *t)
{
    for (int i = 0; i < opt->nparams; i++)
        if (opt->params[i].t == t) return i;
    return -1;
}

/* Appends list[n] (already deduplicated when dedup) as one group. */
static int add_group(const char *fn, tm_optim *opt, tm_tensor *const *list,
                     const bool *no_decay, int n,
                     const tm_optim_hparams *hp, bool dedup)
{
    if (!opt) return tm__errf(TM_EINVAL, fn, "optimizer is NULL");
    if (!list || n <= 0)
        return tm__errf(TM_EINVAL, fn, "a group needs at least one "
                        "parameter (got %d)", n);
    tm_optim_hparams h = hp ? *hp : opt->defaults;
    tm_status st = check_hparams(fn, opt->kind, &h);
    if (st != TM_OK) return st;
    int keep = 0;
    for (int i = 0; i < n; i++) {
        const tm_tensor *t = list[i];
        if (!t) return tm__errf(TM_EINVAL, fn, "parameter %d is NULL", i);
        if (!tm_dtype_is_float(tm_dtype_of(t)))
            return tm__errf(TM_EDTYPE, fn,
                            "parameter %d must be a float tensor, not %s", i,
                            tm_dtype_name(tm_dtype_of(t)));
        if (!tm_is_leaf(t))
            return tm__errf(TM_ESTATE, fn,
                            "parameter %d is not a leaf tensor (produced "
                            "by %s)", i, tm_grad_fn_name(t));
        if (find_param(opt, t) >= 0)
            return tm__errf(TM_EINVAL, fn,
                            "parameter %d is already in the optimizer "
                            "(a parameter may be in one group only)", i);
        bool dup = false;
        for (int j = 0; j < i && !dup; j++) dup = list[j] == t;
        if (dup && !dedup)
            return tm__errf(TM_EINVAL, fn,
                            "parameter %d appears twice in the group", i);
        if (!dup) keep++;
    }
    if ((st = grow((void **)&opt->params, &opt->pcap, opt->nparams + keep,
                   sizeof *opt->params, opt->nparams, fn)) != TM_OK ||
        (st = grow((void **)&opt->groups, &opt->gcap, opt->ngroups + 1,
                   sizeof *opt->groups, opt->ngroups, fn)) != TM_OK)
        return st;
    int g = opt->ngroups, first = opt->nparams;
    for (int i = 0; i < n; i++) {
        bool dup = false;
        for (int j = 0; j < i && !dup; j++) dup = list[j] == list[i];
        if (dup) continue;
        tmo_param *pa = &opt->params[opt->nparams++];
        memset(pa, 0, sizeof *pa);
        pa->t = tm_retain(list[i]);
        pa->no_decay = no_decay ? no_decay[i] : false;
        pa->group = g;
    }
    opt->groups[g].hp = h;
    opt->groups[g].first = first;
    opt->groups[g].count = opt->nparams - first;
    opt->ngroups++;
    return g;
}

int tm_optim_add_group(tm_optim *opt, tm_tensor *const *params,
                       const bool *no_decay, int n,
                       const tm_optim_hparams *hp)
{
    return add_group(__func__, opt, params, no_decay, n, hp, false);
}

int tm_optim_add_params(tm_optim *opt, const tm_params *set,
                        const tm_optim_hparams *hp)
{
    if (!opt || !set) return TM_ERR(TM_EINVAL, "optimizer or set is NULL");
    int n = tm_params_count(set), m = 0;
    tm_tensor **list = tm__alloc((size_t)(n ? n : 1) * sizeof *list, __func__);
    bool *nd = tm__alloc((size_t)(n ? n : 1) * sizeof *nd, __func__);
    int r = TM_ENOMEM;
    if (list && nd) {
        for (int i = 0; i < n; i++) {
            if (tm_params_is_buffer(set, i)) continue;
            list[m] = tm_params_get(set, i);
            nd[m++] = tm_params_no_decay(set, i);
        }
        if (m == 0)
            r = TM_ERR(TM_EINVAL, "the set has no parameters");
        else
            r = add_group(__func__, opt, list, nd, m, hp, true);
    }
    tm__dealloc(list);
    tm__dealloc(nd);
    return r;
}

int tm_optim_group_count(const tm_optim *opt)
{
    return opt ? opt->ngroups : 0;
}

int tm_optim_param_count(const tm_optim *opt)
{
    return opt ? opt->nparams : 0;
}

static bool group_ok(const tm_optim *opt, int g, const char *fn)
{
    if (!opt) {
        tm__errf(TM_EINVAL, fn, "optimizer is NULL");
        return false;
    }
    if (g < 0 || g >= opt->ngroups) {
        tm__errf(TM_ERANGE, fn, "group %d out of range for %d groups", g,
                 opt->ngroups);
        return false;
    }
    return true;
}

int tm_optim_group_size(const tm_optim *opt, int group)
{
    return group_ok(opt, group, __func__) ? opt->groups[group].count : -1;
}

int tm_optim_param_index(const tm_optim *opt, int group, int i)
{
    if (!group_ok(opt, group, __func__)) return -1;
    if (i < 0 || i >= opt->groups[group].count) {
        TM_ERR(TM_ERANGE, "parameter %d out of range for group %d of %d",
               i, group, opt->groups[group].count);
        return -1;
    }
    return opt->groups[group].first + i;
}

tm_tensor *tm_optim_param(const tm_optim *opt, int group, int i)
{
    int k = tm_optim_param_index(opt, group, i);
    if (k < 0) {
        tm__relabel_error(__func__, tm_last_status());
        return NULL;
    }
    return opt->params[k].t;
}

tm_status tm_optim_get_hparams(const tm_optim *opt, int group,
                               tm_optim_hparams *out)
{
    if (!group_ok(opt, group, __func__)) return tm_last_status();
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    *out = opt->groups[group].hp;
    return TM_OK;
}

tm_status tm_optim_set_hparams(tm_optim *opt, int group,
                               const tm_optim_hparams *hp)
{
    if (!group_ok(opt, group, __func__)) return tm_last_status();
    tm_status st = check_hparams(__func__, opt->kind, hp);
    if (st != TM_OK) return st;
    opt->groups[group].hp = *hp;
    return TM_OK;
}

tm_status tm_optim_set_lr(tm_optim *opt, int group, double lr)
{
    if (!opt) return TM_ERR(TM_EINVAL, "optimizer is NULL");
    if (group != -1 && !group_ok(opt, group, __func__))
        return tm_last_status();
    tm_status st = check_field(__func__, "lr", lr, 0, false, 0,
                               ">= 0 and finite");
    if (st != TM_OK) return st;
    for (int g = 0; g < opt->ngroups; g++)
        if (group == -1 || g == group) opt->groups[g].hp.lr = lr;
    return TM_OK;
}

double tm_optim_get_lr(const tm_optim *opt, int group)
{
    return group_ok(opt, group, __func__) ? opt->groups[group].hp.lr : NAN;
}

int64_t tm_optim_step_count(const tm_optim *opt)
{
    return opt ? opt->steps : 0;
}

void tm_optim_zero_grad(tm_optim *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->nparams; i++) tm_zero_grad(opt->params[i].t);
}
