/*
 * attn_impl.h — the CPU attention kernels (internal).  The entries of the
 * CPU table (attn_entry.c) check what a kernel takes and dispatch; every
 * kernel follows the contracts of `attention` and `attention_backward` in
 * foundry/backend.h.
 */
#ifndef FOUNDRY_CPU_ATTN_IMPL_H
#define FOUNDRY_CPU_ATTN_IMPL_H

#include "attn_common.h"

/* The reference kernels: one query row at a time, every sum in double, in
 * key order.  Any dtype the entries accept; O(Tk) scratch per thread.  The
 * oracle of the tiled kernels' tests and the path for what they decline. */
tm_status tm__attn_ref_forward(const tm_buf *out, const tm_buf *lse,
                               const tm_buf *q, const tm_buf *k,
                               const tm_buf *v, const tm_buf *mask,
                               const tm_attn_params *p);
tm_status tm__attn_ref_backward(const tm_buf *dq, const tm_buf *dk,
                                const tm_buf *dv, const tm_buf *g,
                                const tm_buf *q, const tm_buf *k,
                                const tm_buf *v, const tm_buf *out,
                                const tm_buf *lse, const tm_buf *mask,
                                const tm_attn_params *p);

/* The tiled forward (attn_fwd.c): q, out and lse F32; k and v F32, F16 or
 * BF16; a BOOL or F32 mask.  splits > 0 forces that many key chunks per
 * (b, h, query tile), combined at the end (tests of the decode path); 0
 * picks them from the thread count. */
tm_status tm__attn_fwd_f32(const tm_buf *out, const tm_buf *lse,
                           const tm_buf *q, const tm_buf *k, const tm_buf *v,
                           const tm_buf *mask, const tm_attn_params *p,
                           int splits);
/* ------------------------------------------- the tiled F32 backward */

/* How the tiled backward (attn_bwd.c) splits its work: split (dK/dV by
 * key tiles, dQ by query tiles: parallel whatever the batch), fused (one
 * pass per (b, key/value head) group: fewer GEMMs, parallel over groups
 * only), or AUTO: tm__attn_bwd_pick's choice. */
typedef enum tm__attn_bwd_strategy {
    TM__ATTN_BWD_AUTO,
    TM__ATTN_BWD_SPLIT,
    TM__ATTN_BWD_FUSED
} tm__attn_bwd_strategy;

/* The strategy AUTO runs for geometry ge on `threads` threads. */
tm__attn_bwd_strategy tm__attn_bwd_pick(const tm__attn_geom *ge,
                                        int threads);

/* The backward of F32 buffers (the attention_backward contract; the
 * entry has checked dtypes, lse present) with the given strategy. */
tm_status tm__attn_bwd_f32(const tm_buf *dq, const tm_buf *dk,
                           const tm_buf *dv, const tm_buf *g,
                           const tm_buf *q, const tm_buf *k, const tm_buf *v,
                           const tm_buf *out, const tm_buf *lse,
                           const tm_buf *mask, const tm_attn_params *p,
                           tm__attn_bwd_strategy strategy);

#endif
