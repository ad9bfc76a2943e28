/*
 * optim_step.c — tm_optim_step: check everything, create missing state,
 * then one fused kernel pass per parameter (tm__optk_run, in
 * cpu/optim/optim_kern.c: split over the thread pool for large
 * parameters; the split cannot change results, see
 * cpu/optim/optim_kern_tmpl.h).
 */
#include "optim_impl.h"

#include <math.h>
#include <string.h>

const char *tm__optim_slot_name(tm_optim_kind kind, int j)
{
    static const char *names[5][TMO_NSTATE] = {
        [TM_OPTIM_SGD] = {"momentum_buffer", NULL, NULL},
        [TM_OPTIM_ADAM] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
        [TM_OPTIM_ADAMW] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
        [TM_OPTIM_RMSPROP] = {"square_avg", "grad_avg", "momentum_buffer"},
        [TM_OPTIM_ADAGRAD] = {"sum", NULL, NULL},
    };
    if ((int)kind < 0 || (int)kind > 4 || j < 0 || j >= TMO_NSTATE)
        return NULL;
    return names[kind][j];
}

bool tm__optim_slot_used(tm_optim_kind kind, const tm_optim_hparams *hp,
                         int j)
{
    switch (kind) {
    case TM_OPTIM_SGD: return j == 0 && hp->momentum != 0;
    case TM_OPTIM_ADAM:
    case TM_OPTIM_ADAMW: return j < 2 || hp->amsgrad;
    case TM_OPTIM_RMSPROP:
        return j == 0 || (j == 1 && hp->centered) ||
               (j == 2 && hp->momentum > 0);
    case TM_OPTIM_ADAGRAD: return j == 0;
    }
    return false;
}

/* The kernel settings for parameter pa at its step `step` (already
 * incremented). */
static int setup(const tm_optim *opt, const tmo_param *pa, int64_t step,
                 tm__optk *k)
{
    const tm_optim_hparams *h = &opt->groups[pa->group].hp;
    memset(k, 0, sizeof *k);
    k->maximize = h->maximize;
    k->decay = h->weight_decay != 0 && !pa->no_decay;
    k->wd = h->weight_decay;
    k->eps = h->eps;
    k->neg_lr = -h->lr;
    double st = (double)step;
    switch (opt->kind) {
    case TM_OPTIM_SGD:
        k->momentum = h->momentum != 0;
        k->first = pa->s[0] == NULL;
        k->nesterov = h->nesterov;
        k->mom = h->momentum;
        k->damp1 = 1 - h->dampening;
        return TM__OPTK_SGD;
    case TM_OPTIM_ADAMW:
        k->decoupled = true;
        k->decay_mul = 1 - h->lr * h->weight_decay;
        /* fall through */
    case TM_OPTIM_ADAM:
        k->amsgrad = h->amsgrad;
        k->w1 = 1 - h->beta1;
        k->beta2 = h->beta2;
        k->c2 = 1 - h->beta2;
        /* bias_correction2 ** 0.5 in Python is pow(x, 0.5) */
        k->bc2_sqrt = pow(1 - pow(h->beta2, st), 0.5);
        k->neg_step = -(h->lr / (1 - pow(h->beta1, st)));
        return TM__OPTK_ADAM;
    case TM_OPTIM_RMSPROP:
        k->centered = h->centered;
        k->momentum = h->momentum > 0;
        k->mom = h->momentum;
        k->alpha = h->alpha;
        k->ca = 1 - h->alpha;
        return TM__OPTK_RMSPROP;
    case TM_OPTIM_ADAGRAD:
        k->neg_step = -(h->lr / (1 + (st - 1) * h->lr_decay));
        return TM__OPTK_ADAGRAD;
    }
    return TM__OPTK_SGD;
}

/* Checks parameter i with gradient g; stores the contiguous gradient to
 * use (a new reference) in *gc. */
static tm_status check_one(const tm_optim *opt, int i, tm_tensor **gc)
{
    static const char *fn = "tm_optim_step";
    tm_tensor *p = opt->params[i].t, *g = tm_grad(p);
    tm_dtype dt = tm_dtype_of(p);
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    *gc = NULL;
    if (dt != TM_F32 && dt != TM_F64)
        return tm__errf(TM_EDTYPE, fn,
                        "parameter %d is %s: only F32 and F64 parameters "
                        "are updated (keep an F32 master copy)",
                        i, tm_dtype_name(dt));
    if (tm_dtype_of(g) != dt)
        return tm__errf(TM_EDTYPE, fn,
                        "gradient of parameter %d is %s, parameter is %s", i,
                        tm_dtype_name(tm_dtype_of(g)), tm_dtype_name(dt));
    if (tm_ndim(g) != tm_ndim(p) ||
        memcmp(tm_shape(g), tm_shape(p),
               (size_t)tm_ndim(p) * sizeof(int64_t)) != 0)
        return tm__errf(TM_ESHAPE, fn,
                        "gradient of parameter %d has shape %s, parameter "
                        "%s", i,
                        tm__fmt_shape(tm_shape(g), tm_ndim(g), a, sizeof a),
                        tm__fmt_shape(tm_shape(p), tm_ndim(p), b, sizeof b));
    if (!tm__on_cpu(p) || !tm__on_cpu(g))
        return tm__errf(TM_EDEVICE, fn,
                        "parameter %d is not on the CPU", i);
    if (!tm_is_contiguous(p))
        return tm__errf(TM_EINVAL, fn, "parameter %d is not contiguous", i);
    tm_status st = tm__check_writable(fn, p);
    if (st != TM_OK) return st;
    *gc = tm_is_contiguous(g) ? tm_retain(g) : tm_contiguous(g);
    return *gc ? TM_OK : tm__relabel_error(fn, tm_last_status());
}

tm_status tm_optim_step(tm_optim *opt)
{
    if (!opt) return TM_ERR(TM_EINVAL, "optimizer is NULL");
    int n = opt->nparams;
    tm_status st = TM_OK;
    bool prev = tm_no_grad_begin();
    /* grads[i]: contiguous gradient to use, or NULL (skip); fresh[]: state
     * created for this step (freed on failure). */
    tm_tensor **grads = tm__calloc((size_t)(n ? n : 1) * sizeof *grads,
                                   __func__);
    tm_tensor **fresh = tm__calloc((size_t)(n ? n : 1) * TMO_NSTATE *
                                       sizeof *fresh, __func__);
    if (!grads || !fresh) {
        st = TM_ENOMEM;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (!tm_grad(opt->params[i].t)) continue;
        if ((st = check_one(opt, i, &grads[i])) != TM_OK) goto done;
    }
    for (int i = 0; i < n; i++) {
        tmo_param *pa = &opt->params[i];
        const tm_optim_hparams *h = &opt->groups[pa->group].hp;
        if (!grads[i]) continue;
        for (int j = 0; j < TMO_NSTATE; j++) {
            /* the SGD buffer is a clone of the first grad (the kernel
             * writes it whole), the rest start at zero */
            if (pa->s[j] || !tm__optim_slot_used(opt->kind, h, j)) continue;
            tm_tensor *t = opt->kind == TM_OPTIM_ADAGRAD
                               ? tm_full(tm_shape(pa->t), tm_ndim(pa->t),
                                         h->initial_accumulator_value,
                                         tm_dtype_of(pa->t))
                               : tm_zeros(tm_shape(pa->t), tm_ndim(pa->t),
                                          tm_dtype_of(pa->t));
            if (!t) {
                st = tm__relabel_error(__func__, tm_last_status());
                goto done;
            }
            fresh[(size_t)i * TMO_NSTATE + (size_t)j] = t;
        }
    }
    for (int i = 0; i < n; i++) {
        tmo_param *pa = &opt->params[i];
        if (!grads[i]) continue;
        tm__optk k;
        int which = setup(opt, pa, pa->step + 1, &k);
        for (int j = 0; j < TMO_NSTATE; j++) {
            tm_tensor **f = &fresh[(size_t)i * TMO_NSTATE + (size_t)j];
            if (*f) {
                pa->s[j] = *f;
                *f = NULL;
            }
        }
        _Static_assert(TMO_NSTATE == 3, "tm__optk_run takes three states");
        void *s[TMO_NSTATE];
        for (int j = 0; j < TMO_NSTATE; j++)
            s[j] = pa->s[j] ? tm_data(pa->s[j]) : NULL;
        tm__optk_run(which, tm_dtype_of(pa->t) == TM_F64, &k,
                     tm_numel(pa->t), tm_data(pa->t), tm_data(grads[i]), s);
        tm__bump_version(pa->t);
        pa->step++;
        pa->has_state = true;
    }
    opt->steps++;
done:
    if (grads)
        for (int i = 0; i < n; i++) tm_free(grads[i]);
    if (fresh)
        for (size_t i = 0; i < (size_t)n * TMO_NSTATE; i++) tm_free(fresh[i]);
    tm__dealloc(grads);
    tm__dealloc(fresh);
    tm_no_grad_end(prev);
    return st;
}
