/*
 * sdpa.c — tm_sdpa: the fused path through the backend's `attention` and
 * `attention_backward` entries, and its autograd node
 * ("ScaledDotProductFlashAttentionBackward").
 *
 * Compute dtype: F64 for F64 queries, F32 otherwise (F16 / BF16 queries
 * are converted and the result rounded back).  Narrow k and v beside an
 * F32 q go to the forward as they are when they need no gradient (a KV
 * cache stored in F16); the backward takes one dtype, so it converts them.
 * The node saves q, k, v (the caller's tensors), the output and lse in the
 * compute dtype and the mask operand; the kernels recompute the weights.
 */
#include "sdpa_impl.h"

#include <math.h>
#include <string.h>

/* The node's parameters. */
typedef struct sdpa_args {
    tm__sdpa_geom g;
    tm_attn_params p;
    tm_dtype ct;
    bool bool_mask_as_float;
} sdpa_args;

enum { SV_Q, SV_K, SV_V, SV_OUT, SV_LSE, SV_MASK };

static tm_dtype compute_dtype(tm_dtype qt)
{
    return qt == TM_F64 ? TM_F64 : TM_F32;
}

static bool narrow(tm_dtype dt)
{
    return dt == TM_F16 || dt == TM_BF16;
}

/* Whether the device runs attention (entry e) with a BOOL mask beside
 * these float dtypes, as they are or as F32: if not, the mask goes to it
 * as an additive float mask instead (the dtype fallback would make it
 * I64, which no kernel takes). */
static bool takes_bool_mask(tm_ctx *cx, tm_entry e, tm_dtype ct, int nbufs)
{
    if (!cx->backend->supports) return true;
    tm_dtype dts[TM__STAGE_MAX];
    for (int i = 0; i < nbufs - 1; i++) dts[i] = ct;
    dts[nbufs - 1] = TM_BOOL;
    if (cx->backend->supports(cx, e, 0, dts, nbufs)) return true;
    for (int i = 0; i < nbufs - 1; i++) dts[i] = TM_F32;
    return cx->backend->supports(cx, e, 0, dts, nbufs);
}

static tm_status sdpa_backward(tm__node *n, const tm_tensor *g,
                               tm_tensor **gin);

/* The fused forward: out (lead..., H, Tq, Dv) in the compute dtype, lse
 * (B, H, Tq) when wanted for the backward. */
static tm_status fused_forward(const char *fn, const tm_tensor *q,
                               const tm_tensor *k, const tm_tensor *v,
                               const tm_tensor *mask, const sdpa_args *a,
                               bool kv_as_is, tm_tensor **out,
                               tm_tensor **lse, tm__sdpa_opnd *mo)
{
    const tm__sdpa_geom *g = &a->g;
    tm__sdpa_opnd qo = {0}, ko = {0}, vo = {0};
    tm_tensor *o = NULL, *l = NULL;
    tm_device dev = tm_device_of(q);
    int64_t oshape[TM_MAX_DIMS], lshape[3] = {g->b, g->h, g->tq};
    int nd = g->nlead + 3;
    memcpy(oshape, q->shape, sizeof(int64_t) * (size_t)nd);
    oshape[nd - 1] = g->dv;
    if (!(o = tm__tensor_new(fn, oshape, nd, a->ct, dev))) goto fail;
    if (lse && !(l = tm__tensor_new(fn, lshape, 3, a->ct, dev))) goto fail;
    if (tm__sdpa_operand(fn, q, a->ct, g->nlead, &qo) ||
        tm__sdpa_operand(fn, k, kv_as_is ? k->dtype : a->ct, g->nlead, &ko) ||
        tm__sdpa_operand(fn, v, kv_as_is ? v->dtype : a->ct, g->nlead, &vo) ||
        (mask && tm__sdpa_mask_operand(fn, mask, g, a->ct,
                                       a->bool_mask_as_float, mo)))
        goto fail;
    if (g->b * g->h * g->tq > 0 && g->tk > 0 && g->dv > 0) {
        tm_buf ob = tm__buf(o), lb = {0}, mb = mask ? mo->b : (tm_buf){0};
        if (l) lb = tm__buf(l);
        ob.ndim = 4;
        ob.shape[0] = g->b, ob.shape[1] = g->h, ob.shape[2] = g->tq;
        ob.shape[3] = g->dv;
        tm__contiguous_strides(ob.shape, 4, ob.strides);
        tm__stage sg = {0};
        tm__stage_out(&sg, &ob);
        tm__stage_out(&sg, &lb);
        tm__stage_in(&sg, &qo.b);
        tm__stage_in(&sg, &ko.b);
        tm__stage_in(&sg, &vo.b);
        tm__stage_in(&sg, &mb);
        if (TM__CALL_STAGED(fn, tm__ctx(o), &sg, ATTENTION, 0, attention,
                            &ob, &lb, &qo.b, &ko.b, &vo.b, &mb, &a->p))
            goto fail;
    } else if ((tm_numel(o) > 0 && tm_fill_(o, 0.0)) ||
               (l && tm_numel(l) > 0 && tm_fill_(l, -INFINITY))) {
        /* no key (or Dv = 0): zeros, and a gradient of zero in backward */
        goto fail;
    }
    tm_free(qo.t), tm_free(ko.t), tm_free(vo.t);
    *out = o;
    if (lse) *lse = l;
    return TM_OK;
fail:
    tm_free(qo.t), tm_free(ko.t), tm_free(vo.t), tm_free(o), tm_free(l);
    if (mo) tm_free(mo->t), mo->t = NULL;
    return tm__relabel_error(fn, tm_last_status());
}

tm_tensor *tm_sdpa(const tm_tensor *q, const tm_tensor *k,
                   const tm_tensor *v, const tm_sdpa_opts *opts)
{
    const char *fn = "tm_sdpa";
    tm_sdpa_opts o = {0};
    if (opts) o = *opts;
    sdpa_args a;
    memset(&a, 0, sizeof a);
    tm_tensor *out = NULL, *lse = NULL, *y = NULL;
    tm__sdpa_opnd mo = {0};
    if (tm__sdpa_check(fn, q, k, v, &o, &a.g, &a.p)) return NULL;
    if (o.mask && tm_dtype_is_float(o.mask->dtype) &&
        tm__ag_requires(o.mask)) {
        tm__errf(TM_EUNSUPPORTED, fn, "a float mask that requires grad is "
                 "not differentiable here: detach it (or pass a BOOL "
                 "mask)");
        return NULL;
    }
    if (a.p.dropout_p > 0.0) {
        uint64_t n = (uint64_t)a.g.b * (uint64_t)a.g.h * (uint64_t)a.g.tq *
                     (uint64_t)a.g.tk;
        a.p.rng = tm__rng_take(o.rng, n / 4 + (n % 4 != 0));
    }
    a.ct = compute_dtype(q->dtype);
    const tm_tensor *ins[3] = {q, k, v};
    bool grad = tm__ag_needed(3, ins);
    bool composed = o.impl == TM_SDPA_COMPOSED ||
                    (o.impl == TM_SDPA_AUTO &&
                     tm__sdpa_prefer_composed(&a.g, grad));
    if (composed) {
        y = tm__sdpa_composed(fn, q, k, v, o.mask, &a.g, &a.p);
        if (!y) goto fail;
        return y;
    }
    bool kv_as_is = a.ct == TM_F32 && narrow(k->dtype) &&
                    narrow(v->dtype) && !tm__ag_requires(k) &&
                    !tm__ag_requires(v);
    if (o.mask && o.mask->dtype == TM_BOOL)
        a.bool_mask_as_float =
            !takes_bool_mask(tm__ctx(q), TM_ENTRY_ATTENTION, a.ct, 6) ||
            (grad && !takes_bool_mask(tm__ctx(q), TM_ENTRY_ATTENTION_BACKWARD,
                                      a.ct, 10));
    if (fused_forward(fn, q, k, v, o.mask, &a, kv_as_is, &out,
                      grad ? &lse : NULL, &mo))
        goto fail;
    y = out->dtype == q->dtype ? tm_retain(out) : tm_to_dtype(out, q->dtype);
    if (!y) goto fail;
    tm__record r = {.name = "ScaledDotProductFlashAttentionBackward",
                    .backward = sdpa_backward, .nin = 3, .in = ins,
                    .save = {q, k, v, out, lse, mo.t},
                    .args = &a, .args_size = sizeof a};
    if (tm__ag_record(&r, y)) goto fail;
    tm_free(out), tm_free(lse), tm_free(mo.t);
    return y;
fail:
    /* a caller's own generator is left as it was; the default one may
     * have been drawn from by others meanwhile, so it stays advanced */
    if (a.p.dropout_p > 0.0 && o.rng) *o.rng = a.p.rng;
    tm__relabel_error(fn, tm_last_status());
    tm_free(out), tm_free(lse), tm_free(mo.t), tm_free(y);
    return NULL;
}

/* ------------------------------------------------------------ backward */

/* A contiguous gradient buffer (B, heads, T, dim) for edge e, or none. */
static tm_tensor *grad_buf(const char *fn, const tm__edge *e,
                           const tm__sdpa_geom *g, tm_dtype ct,
                           tm_device dev, tm_buf *b)
{
    if (!e->needed) return NULL;
    int nd = e->ndim;
    int64_t shape[4] = {g->b, e->shape[nd - 3], e->shape[nd - 2],
                        e->shape[nd - 1]};
    tm_tensor *t = tm__tensor_new(fn, shape, 4, ct, dev);
    if (t) *b = tm__buf(t);
    return t;
}

static tm_status sdpa_backward(tm__node *n, const tm_tensor *gr,
                               tm_tensor **gin)
{
    const sdpa_args *a = TM__AG_ARGS(n, sdpa_args);
    const tm__sdpa_geom *g = &a->g;
    const char *fn = n->name;
    tm__scratch s = {0};
    tm__sdpa_opnd go = {0}, qo = {0}, ko = {0}, vo = {0}, oo = {0};
    tm__sdpa_opnd mo = {0};
    tm_tensor *d[3] = {NULL, NULL, NULL};
    tm_buf db[3] = {{0}, {0}, {0}}, lb, mb = {0};
    tm_device dev = tm_device_of(gr);
    const tm_tensor *lse = tm__ag_saved(n, SV_LSE);
    const tm_tensor *mask = tm__ag_saved(n, SV_MASK);
    if (tm__sdpa_operand(fn, gr, a->ct, g->nlead, &go) ||
        tm__sdpa_operand(fn, tm__ag_saved(n, SV_Q), a->ct, g->nlead, &qo) ||
        tm__sdpa_operand(fn, tm__ag_saved(n, SV_K), a->ct, g->nlead, &ko) ||
        tm__sdpa_operand(fn, tm__ag_saved(n, SV_V), a->ct, g->nlead, &vo) ||
        tm__sdpa_operand(fn, tm__ag_saved(n, SV_OUT), a->ct, g->nlead, &oo) ||
        (mask && tm__sdpa_mask_operand(fn, mask, g, a->ct,
                                       a->bool_mask_as_float, &mo)))
        goto fail;
    if (mask) mb = mo.b;
    lb = tm__buf(lse);
    bool run = g->b * g->h * g->tq > 0 && g->tk > 0 && g->dv > 0;
    for (int i = 0; i < 3; i++) {
        d[i] = grad_buf(fn, &n->edges[i], g, a->ct, dev, &db[i]);
        if (n->edges[i].needed && !d[i]) goto fail;
        if (d[i] && !run && tm_numel(d[i]) > 0 && tm_fill_(d[i], 0.0))
            goto fail;
    }
    if (run) {
        tm__stage sg = {0};
        for (int i = 0; i < 3; i++) tm__stage_out(&sg, &db[i]);
        tm__stage_in(&sg, &go.b);
        tm__stage_in(&sg, &qo.b);
        tm__stage_in(&sg, &ko.b);
        tm__stage_in(&sg, &vo.b);
        tm__stage_in(&sg, &oo.b);
        tm__stage_in(&sg, &lb);
        tm__stage_in(&sg, &mb);
        if (TM__CALL_STAGED(fn, tm__ctx(gr), &sg, ATTENTION_BACKWARD, 0,
                            attention_backward, &db[0], &db[1], &db[2],
                            &go.b, &qo.b, &ko.b, &vo.b, &oo.b, &lb, &mb,
                            &a->p))
            goto fail;
    }
    for (int i = 0; i < 3; i++)
        if (d[i]) tm__sc_finish(&s, d[i], &n->edges[i], &gin[i]);
    goto done;
fail:
    tm__sc_keep(&s, NULL);
done:
    tm_free(go.t), tm_free(qo.t), tm_free(ko.t), tm_free(vo.t);
    tm_free(oo.t), tm_free(mo.t);
    for (int i = 0; i < 3; i++) tm_free(d[i]);
    return tm__sc_done(&s, fn);
}
