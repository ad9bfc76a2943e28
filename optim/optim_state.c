/*
 * optim_state.c — optimizer state as named tensors
 * (tm_optim_state_dict / tm_optim_load_state_dict).  Names are
 * "state.<index>.<key>", index = the parameter's position across groups,
 * key = "step" or a slot name (tm__optim_slot_name), as PyTorch's
 * optimizer.state_dict()["state"].  Saved slots are copies on the device
 * they live on; "step" is host bookkeeping, saved as a CPU tensor (as
 * PyTorch keeps it) and read back with tm_item_i64 on loading (a host
 * synchronization when it was moved to a device).  Loaded slots are
 * copied to their parameter's device.
 */
#include "optim_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tm_status tm_optim_state_dict(const tm_optim *opt, tm_params *out)
{
    if (!opt || !out) return TM_ERR(TM_EINVAL, "optimizer or out is NULL");
    tm_status st = TM_OK;
    bool prev = tm_no_grad_begin();
    tm_params *tmp = tm_params_new();
    if (!tmp) {
        st = TM_ENOMEM;
        goto done;
    }
    for (int i = 0; i < opt->nparams; i++) {
        const tmo_param *pa = &opt->params[i];
        if (!pa->has_state) continue;
        char name[64];
        if (opt->kind != TM_OPTIM_SGD) {
            tm_tensor *s = tm_scalar((double)pa->step, TM_I64);
            snprintf(name, sizeof name, "state.%d.step", i);
            st = s ? tm_params_add_buffer(tmp, name, s) : TM_ENOMEM;
            tm_free(s);
            if (st != TM_OK) goto done;
        }
        for (int j = 0; j < TMO_NSTATE; j++) {
            if (!pa->s[j]) continue;
            tm_tensor *c = tm_clone(pa->s[j]);
            snprintf(name, sizeof name, "state.%d.%s", i,
                     tm__optim_slot_name(opt->kind, j));
            st = c ? tm_params_add_buffer(tmp, name, c) : TM_ENOMEM;
            tm_free(c);
            if (st != TM_OK) goto done;
        }
    }
    st = tm_params_add_all(out, NULL, tmp);
done:
    tm_params_free(tmp);
    tm_no_grad_end(prev);
    return st == TM_OK ? st : tm__relabel_error(__func__, st);
}

/* Splits "state.<i>.<key>" into i and key; false if it is not that. */
static bool parse_name(const char *name, long *idx, const char **key)
{
    if (strncmp(name, "state.", 6) != 0) return false;
    const char *s = name + 6;
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end != '.' || end[1] == '\0') return false;
    *idx = v;
    *key = end + 1;
    return true;
}

/* Slot j of key for kind, TMO_NSTATE for "step", -1 if unknown. */
static int slot_of(tm_optim_kind kind, const char *key)
{
    if (strcmp(key, "step") == 0) return kind == TM_OPTIM_SGD ? -1 : TMO_NSTATE;
    for (int j = 0; j < TMO_NSTATE; j++) {
        const char *nm = tm__optim_slot_name(kind, j);
        if (nm && strcmp(nm, key) == 0) return j;
    }
    return -1;
}

tm_status tm_optim_load_state_dict(tm_optim *opt, const tm_params *in)
{
    if (!opt || !in) return TM_ERR(TM_EINVAL, "optimizer or in is NULL");
    int n = opt->nparams, m = tm_params_count(in);
    tm_status st = TM_OK;
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    bool prev = tm_no_grad_begin();
    /* new state per parameter: src[i][slot] borrowed from `in`, then
     * cloned into neu[i][slot]; steps[i]; seen[i] */
    size_t ns = (size_t)(n ? n : 1) * (TMO_NSTATE + 1);
    const tm_tensor **src = tm__calloc(ns * sizeof *src, __func__);
    tm_tensor **neu = tm__calloc(ns * sizeof *neu, __func__);
    int64_t *steps = tm__calloc((size_t)(n ? n : 1) * sizeof *steps,
                                __func__);
    if (!src || !neu || !steps) {
        st = TM_ENOMEM;
        goto done;
    }
    for (int e = 0; e < m; e++) {
        const char *name = tm_params_name(in, e);
        const tm_tensor *t = tm_params_get(in, e);
        long idx;
        const char *key;
        if (!parse_name(name, &idx, &key)) {
            st = TM_ERR(TM_EINVAL, "'%s' is not an optimizer state name "
                        "(state.<index>.<key>)", name);
            goto done;
        }
        if (idx < 0 || idx >= n) {
            st = TM_ERR(TM_EINVAL, "'%s': parameter index %ld out of range "
                        "for %d parameters", name, idx, n);
            goto done;
        }
        int j = slot_of(opt->kind, key);
        if (j < 0) {
            st = TM_ERR(TM_EINVAL, "'%s': %s keeps no state called '%s'",
                        name, tm_optim_kind_name(opt->kind), key);
            goto done;
        }
        const tm_tensor *p = opt->params[idx].t;
        if (j == TMO_NSTATE) {
            int64_t v = -1;
            if (tm_dtype_of(t) != TM_I64 || tm_ndim(t) != 0) {
                st = TM_ERR(TM_EDTYPE, "'%s' must be a 0-d I64 tensor, not "
                            "%s %s", name, tm_dtype_name(tm_dtype_of(t)),
                            tm__fmt_shape(tm_shape(t), tm_ndim(t), a,
                                          sizeof a));
                goto done;
            }
            if ((st = tm_item_i64(t, &v)) != TM_OK) {
                st = tm__relabel_error(__func__, st);
                goto done;
            }
            if (v < 0) {
                st = TM_ERR(TM_EINVAL, "'%s' is %lld: must be >= 0", name,
                            (long long)v);
                goto done;
            }
            steps[idx] = v;
        } else {
            if (tm_dtype_of(t) != tm_dtype_of(p)) {
                st = TM_ERR(TM_EDTYPE, "'%s' is %s but parameter %ld is %s",
                            name, tm_dtype_name(tm_dtype_of(t)), idx,
                            tm_dtype_name(tm_dtype_of(p)));
                goto done;
            }
            if (tm_ndim(t) != tm_ndim(p) ||
                memcmp(tm_shape(t), tm_shape(p),
                       (size_t)tm_ndim(p) * sizeof(int64_t)) != 0) {
                st = TM_ERR(TM_ESHAPE, "'%s' has shape %s but parameter %ld "
                            "has %s", name,
                            tm__fmt_shape(tm_shape(t), tm_ndim(t), a,
                                          sizeof a),
                            idx,
                            tm__fmt_shape(tm_shape(p), tm_ndim(p), b,
                                          sizeof b));
                goto done;
            }
        }
        src[(size_t)idx * (TMO_NSTATE + 1) + (size_t)j] = t;
    }
    /* completeness: what a stepped parameter of this kind always has */
    for (int i = 0; i < n; i++) {
        const tm_tensor **s = &src[(size_t)i * (TMO_NSTATE + 1)];
        bool any = false;
        for (int j = 0; j <= TMO_NSTATE; j++) any = any || s[j];
        if (!any) continue;
        const char *missing = NULL;
        switch (opt->kind) {
        case TM_OPTIM_SGD: break;
        case TM_OPTIM_ADAM:
        case TM_OPTIM_ADAMW:
            missing = !s[0] ? "exp_avg" : !s[1] ? "exp_avg_sq" : NULL;
            break;
        case TM_OPTIM_RMSPROP: missing = !s[0] ? "square_avg" : NULL; break;
        case TM_OPTIM_ADAGRAD: missing = !s[0] ? "sum" : NULL; break;
        }
        if (!missing && opt->kind != TM_OPTIM_SGD && !s[TMO_NSTATE])
            missing = "step";
        if (missing) {
            st = TM_ERR(TM_EINVAL, "state of parameter %d is incomplete: "
                        "no 'state.%d.%s'", i, i, missing);
            goto done;
        }
        /* a state lives where its parameter does (the step reads it
         * there): a copy on the parameter's device */
        tm_device dev = tm_device_of(opt->params[i].t);
        for (int j = 0; j < TMO_NSTATE; j++) {
            if (!s[j]) continue;
            neu[(size_t)i * (TMO_NSTATE + 1) + (size_t)j] =
                tm_device_eq(tm_device_of(s[j]), dev) ? tm_clone(s[j])
                                                      : tm_to(s[j], dev);
            if (!neu[(size_t)i * (TMO_NSTATE + 1) + (size_t)j]) {
                st = tm__relabel_error(__func__, tm_last_status());
                goto done;
            }
        }
    }
    /* commit */
    for (int i = 0; i < n; i++) {
        tmo_param *pa = &opt->params[i];
        tm__optim_clear_state(pa);
        bool any = false;
        for (int j = 0; j <= TMO_NSTATE; j++)
            any = any || src[(size_t)i * (TMO_NSTATE + 1) + (size_t)j];
        if (!any) continue;
        for (int j = 0; j < TMO_NSTATE; j++) {
            pa->s[j] = neu[(size_t)i * (TMO_NSTATE + 1) + (size_t)j];
            neu[(size_t)i * (TMO_NSTATE + 1) + (size_t)j] = NULL;
        }
        pa->step = steps[i];
        pa->has_state = true;
    }
done:
    if (neu)
        for (size_t i = 0; i < ns; i++) tm_free(neu[i]);
    tm__dealloc(src);
    tm__dealloc(neu);
    tm__dealloc(steps);
    tm_no_grad_end(prev);
    return st;
}
