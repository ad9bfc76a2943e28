/*
 * optim_step.c — tm_optim_step: check everything, create missing state on
 * each parameter's device, then one fused update per parameter through
 * the backend's `optim_step` entry (foundry/backend.h), with the settings
 * worked out here as a tm_optim_update.  No element is read or written
 * here, so parameters on any device are updated where they live.  The
 * CPU's entry (cpu/optim/optim_kern.c) splits large parameters over the
 * thread pool; the split cannot change results (see
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

/* The update settings for parameter pa at its step `step` (already
 * incremented). */
static void setup(const tm_optim *opt, const tmo_param *pa, int64_t step,
                  tm_optim_update *k)
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
        k->kind = TM_UPDATE_SGD;
        return;
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
        k->kind = TM_UPDATE_ADAM;
        return;
    case TM_OPTIM_RMSPROP:
        k->centered = h->centered;
        k->momentum = h->momentum > 0;
        k->mom = h->momentum;
        k->alpha = h->alpha;
        k->ca = 1 - h->alpha;
        k->kind = TM_UPDATE_RMSPROP;
        return;
    case TM_OPTIM_ADAGRAD:
        k->neg_step = -(h->lr / (1 + (st - 1) * h->lr_decay));
        k->kind = TM_UPDATE_ADAGRAD;
        return;
    }
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
    tm_device dev = tm_device_of(p);
    if (!tm_device_eq(tm_device_of(g), dev))
        return tm__errf(TM_EDEVICE, fn,
                        "gradient of parameter %d is on %s, parameter on %s",
                        i, tm_device_name(tm_device_of(g)),
                        tm_device_name(dev));
    for (int j = 0; j < TMO_NSTATE; j++) {
        const tm_tensor *sj = opt->params[i].s[j];
        if (sj && !tm_device_eq(tm_device_of(sj), dev))
            return tm__errf(TM_EDEVICE, fn,
                            "state '%s' of parameter %d is on %s, parameter "
                            "on %s", tm__optim_slot_name(opt->kind, j), i,
                            tm_device_name(tm_device_of(sj)),
                            tm_device_name(dev));
    }
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
            double v = opt->kind == TM_OPTIM_ADAGRAD
                           ? h->initial_accumulator_value
                           : 0.0;
            tm_tensor *t = tm_full_on(tm_shape(pa->t), tm_ndim(pa->t), v,
                                      tm_dtype_of(pa->t),
                                      tm_device_of(pa->t));
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
        tm_optim_update k;
        setup(opt, pa, pa->step + 1, &k);
        for (int j = 0; j < TMO_NSTATE; j++) {
            tm_tensor **f = &fresh[(size_t)i * TMO_NSTATE + (size_t)j];
            if (*f) {
                pa->s[j] = *f;
                *f = NULL;
            }
        }
        _Static_assert(TMO_NSTATE == 3, "optim_step takes three states");
        tm_buf bp = tm__buf(pa->t), bg = tm__buf(grads[i]), bs[TMO_NSTATE];
        memset(bs, 0, sizeof bs);
        for (int j = 0; j < TMO_NSTATE; j++)
            if (pa->s[j]) bs[j] = tm__buf(pa->s[j]);
        tm_ctx *cx = tm__ctx(pa->t);
        tm__stage sg = {0};
        tm__stage_inout(&sg, &bp);
        tm__stage_in(&sg, &bg);
        for (int j = 0; j < TMO_NSTATE; j++) tm__stage_inout(&sg, &bs[j]);
        tm__bump_version(pa->t);
        if (tm_numel(pa->t) > 0 &&
            TM__CALL_STAGED(__func__, cx, &sg, OPTIM_STEP, (int)k.kind,
                            optim_step, &k, &bp, &bg, &bs[0], &bs[1],
                            &bs[2])) {
            st = tm__relabel_error(__func__, tm_last_status());
            goto done;
        }
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
