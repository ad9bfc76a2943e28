/*
 * attn_entry.c — the CPU's attention and attention_backward entries:
 * check what the kernels take (foundry/backend.h) and pick a kernel.
 */
#include "attn_impl.h"

static bool narrow_kv(tm_dtype dt)
{
    return dt == TM_F16 || dt == TM_BF16;
}

/* The dtype rules of the entries; TM_EDTYPE (with a message) otherwise. */
static tm_status check(const char *fn, const tm_buf *q, const tm_buf *k,
                       const tm_buf *v, const tm_buf *mask, bool backward)
{
    tm_dtype qt = q->dtype;
    bool kv_ok = (k->dtype == qt && v->dtype == qt) ||
                 (!backward && qt == TM_F32 && narrow_kv(k->dtype) &&
                  narrow_kv(v->dtype));
    if ((qt != TM_F32 && qt != TM_F64) || !kv_ok ||
        (mask && mask->handle && mask->dtype != TM_BOOL &&
         mask->dtype != qt))
        return tm__errf(TM_EDTYPE, fn,
                        "the CPU's attention takes F32 or F64 q with k, v "
                        "of q's dtype (or F16/BF16 for an F32 q in the "
                        "forward) and a BOOL or q-dtype mask; got q %s, k "
                        "%s, v %s",
                        tm_dtype_name(qt), tm_dtype_name(k->dtype),
                        tm_dtype_name(v->dtype));
    return TM_OK;
}

tm_status tm__cpu_attention(tm_ctx *ctx, const tm_buf *out, const tm_buf *lse,
                            const tm_buf *q, const tm_buf *k, const tm_buf *v,
                            const tm_buf *mask, const tm_attn_params *p)
{
    (void)ctx;
    tm_status st = check(__func__, q, k, v, mask, false);
    if (st) return st;
    if (q->dtype == TM_F32)
        return tm__attn_fwd_f32(out, lse, q, k, v, mask, p, 0);
    return tm__attn_ref_forward(out, lse, q, k, v, mask, p);
}

tm_status tm__cpu_attention_backward(tm_ctx *ctx, const tm_buf *dq,
                                     const tm_buf *dk, const tm_buf *dv,
                                     const tm_buf *g, const tm_buf *q,
                                     const tm_buf *k, const tm_buf *v,
                                     const tm_buf *out, const tm_buf *lse,
                                     const tm_buf *mask,
                                     const tm_attn_params *p)
{
    (void)ctx;
    tm_status st = check(__func__, q, k, v, mask, true);
    if (st) return st;
    if (!lse || !lse->handle)
        return tm__errf(TM_EINVAL, __func__,
                        "the backward needs the forward's lse");
    if (q->dtype == TM_F32)
        return tm__attn_bwd_f32(dq, dk, dv, g, q, k, v, out, lse, mask, p,
                                TM__ATTN_BWD_AUTO);
    return tm__attn_ref_backward(dq, dk, dv, g, q, k, v, out, lse, mask, p);
}
