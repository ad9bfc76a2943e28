/*
 * gpt_quant.c — quantizing a model's parameters in place by a type plan
 * (foundry/models.h, foundry/quantize.h), and swapping parameters for
 * other tensors (quantized ones from a file, too).
 */
#include "gpt_impl.h"

#include "foundry/quantize.h"

#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <string.h>

/* Every slot of the model that may hold a parameter. */
static int slots(tm_gpt *m, tm_tensor ***out, int cap)
{
    int n = 0;
#define SLOT(p) do { if (n < cap) out[n] = &(p); n++; } while (0)
    SLOT(m->wte);
    SLOT(m->wpe);
    SLOT(m->lnf_w);
    SLOT(m->lnf_b);
    SLOT(m->head);
    for (int64_t i = 0; i < m->cfg.n_layers; i++) {
        tm__gpt_layer *L = &m->layers[i];
        SLOT(L->ln1_w); SLOT(L->ln1_b);
        SLOT(L->q_w); SLOT(L->q_b); SLOT(L->k_w); SLOT(L->k_b);
        SLOT(L->v_w); SLOT(L->v_b); SLOT(L->o_w); SLOT(L->o_b);
        SLOT(L->ln2_w); SLOT(L->ln2_b);
        SLOT(L->gate_w); SLOT(L->gate_b); SLOT(L->up_w); SLOT(L->up_b);
        SLOT(L->down_w); SLOT(L->down_b);
    }
#undef SLOT
    return n;
}

tm_status tm__gpt_replace_params(tm_gpt *m, tm_tensor *const *news,
                                 const char *fn)
{
    int n = tm_params_count(m->params);
    int ns = 5 + 18 * (int)m->cfg.n_layers;
    tm_tensor ***sl = tm__alloc(sizeof *sl * (size_t)ns, fn);
    tm_params *set = tm_params_new();
    tm_status st = TM_OK;
    if (!sl || !set) {
        st = tm__errf(TM_ENOMEM, fn, "out of memory");
        goto fail;
    }
    slots(m, sl, ns);
    for (int i = 0; i < n && !st; i++) {
        tm_tensor *t = news[i] ? news[i] : tm_params_get(m->params, i);
        const char *name = tm_params_name(m->params, i);
        /* A quantized weight is frozen state: a buffer, which optimizers
         * skip. */
        st = tm_dtype_is_quantized(tm_dtype_of(t))
                 ? tm_params_add_buffer(set, name, t)
                 : tm_params_add(set, name, t,
                                 tm_params_no_decay(m->params, i));
    }
    if (st) {
        tm__relabel_error(fn, st);
        goto fail;
    }
    /* Nothing can fail from here: repoint the slots, then drop the old
     * set (and with it the model's references to the old tensors). */
    for (int i = 0; i < n; i++) {
        tm_tensor *old = tm_params_get(m->params, i);
        if (!news[i]) continue;
        for (int k = 0; k < ns; k++)
            if (*sl[k] == old) *sl[k] = news[i];
    }
    tm_params_free(m->params);
    m->params = set;
    tm__dealloc(sl);
    return TM_OK;
fail:
    tm_params_free(set);
    tm__dealloc(sl);
    return st;
}

tm_dtype tm_gpt_param_store_dtype(const tm_gpt *m, int i)
{
    if (!m || i < 0 || i >= tm_params_count(m->params)) {
        TM_ERR(TM_EINVAL, "no parameter %d", i);
        return (tm_dtype)-1;
    }
    return m->store ? m->store[i] : tm_dtype_of(tm_params_get(m->params, i));
}

static size_t stored_bytes(const tm_tensor *t, tm_dtype dt)
{
    if (tm_dtype_is_quantized(dt)) return tm_nbytes(t);
    return (size_t)tm_numel(t) * tm_dtype_size(dt);
}

/* The new tensor for one parameter (NULL with an error); *keep when it
 * stays as it is. */
static tm_tensor *convert(const tm_tensor *p, tm_dtype from, tm_dtype to,
                          tm_quant_error *e, bool *keep, const char *name,
                          const char *fn)
{
    tm_tensor *src = NULL, *out = NULL, *rounded = NULL;
    memset(e, 0, sizeof *e);
    *keep = false;
    if (to == from && !tm_dtype_is_quantized(to)) {
        *keep = true;
        e->count = tm_numel(p);
        return NULL;
    }
    if (to != TM_F32 && to != TM_F16 && to != TM_BF16 &&
        !(tm_dtype_is_quantized(to) && to != TM_Q8_1 && to != TM_Q8_K)) {
        tm__errf(TM_EDTYPE, fn, "'%s': cannot store a weight as %s", name,
                 tm_dtype_name(to));
        return NULL;
    }
    src = tm_dtype_is_quantized(tm_dtype_of(p)) ? tm_dequantize(p, TM_F32)
                                             : tm_retain((tm_tensor *)p);
    if (!src) goto fail;
    if (tm_dtype_is_quantized(to)) {
        if (!(out = tm_quantize(src, to))) goto fail;
        if (tm_quant_error_of(src, out, e)) goto fail;
    } else {
        /* Dense storage types: the model computes in F32 with the values
         * the file will hold. */
        if (!(rounded = tm_to_dtype(src, to)) ||
            !(out = tm_to_dtype(rounded, TM_F32)) ||
            tm_quant_error_of(src, out, e))
            goto fail;
    }
    tm_free(src);
    tm_free(rounded);
    return out;
fail:
    tm__errf(tm_last_status(), fn, "'%s' to %s: %s", name, tm_dtype_name(to),
             tm_last_error());
    tm_free(src);
    tm_free(rounded);
    tm_free(out);
    return NULL;
}

tm_status tm_gpt_quantize(tm_gpt *m, const struct tm_quant_plan *plan,
                          tm_gpt_quant_fn cb, void *user)
{
    const char *fn = __func__;
    if (!m || !plan) return TM_ERR(TM_EINVAL, "model or plan is NULL");
    int n = tm_params_count(m->params);
    tm_tensor **news = tm__calloc(sizeof *news * (size_t)n, fn);
    tm_dtype *store = tm__alloc(sizeof *store * (size_t)n, fn);
    tm_status st = TM_OK;
    if (!news || !store) {
        st = TM_ENOMEM;
        goto done;
    }
    /* The new tensors are frozen values, not functions of the old ones. */
    bool prev = tm_no_grad_begin();
    for (int i = 0; i < n; i++) {
        const char *name = tm_params_name(m->params, i);
        tm_tensor *p = tm_params_get(m->params, i);
        tm_dtype from = m->store ? m->store[i] : tm_dtype_of(p);
        bool fb = false;
        tm_dtype to = tm_quant_plan_pick(plan, name, tm_shape(p), tm_ndim(p),
                                         &fb);
        if ((int)to < 0) {
            st = tm__relabel_error(fn, tm_last_status());
            break;
        }
        tm_quant_error e;
        bool keep;
        news[i] = convert(p, tm_dtype_of(p), to, &e, &keep, name, fn);
        if (!news[i] && !keep) {
            st = tm_last_status();
            break;
        }
        store[i] = to;
        if (cb) {
            tm_gpt_quant_info info = {
                .name = name, .shape = tm_shape(p), .ndim = tm_ndim(p),
                .from = from, .to = to, .fell_back = fb,
                .bytes_before = stored_bytes(p, from),
                .bytes_after = stored_bytes(news[i] ? news[i] : p, to),
                .rmse = e.rmse, .max_abs = e.max_abs, .ref_rms = e.ref_rms,
                .count = e.count,
            };
            cb(&info, user);
        }
    }
    tm_no_grad_end(prev);
    if (st) goto done;
    if ((st = tm__gpt_replace_params(m, news, fn))) goto done;
    tm__dealloc(m->store);
    m->store = store;
    store = NULL;
done:
    if (news)
        for (int i = 0; i < n; i++) tm_free(news[i]);
    tm__dealloc(news);
    tm__dealloc(store);
    return st;
}
