/*
 * embedding.c — tm_embedding: validation, the row lookup (through
 * tm_index_select) and its backward ("EmbeddingBackward", the backend's
 * embedding_backward entry: contract in foundry/backend.h, the CPU's in
 * cpu/cpu_embedding.c).  No element memory is touched here, so any device
 * with those entries runs it.
 *
 * The indices are range-checked by the kernels, not on the host: an
 * embedding index must lie in [0, V), while index_select also takes
 * negative ones (counting from the end), so negative indices are replaced
 * by V before the lookup, which the kernel then refuses (TM_ERANGE).  The
 * error is then restated with the offending index and its position; that
 * restating reads the indices back (a host synchronization, on the error
 * path only).
 */
#include "foundry/nn_functional.h"
#include "foundry/quantize.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"

#include <stdio.h>

/* dW[idx[k], :] += g[k, :] in order of k (deterministic), accumulated in
 * F32 (F64 for F64 weights).  Saved: the indices (slot 0, I64 [K]
 * contiguous). */
static tm_status embedding_backward(tm__node *n, const tm_tensor *g,
                                    tm_tensor **gin)
{
    tm__scratch s = {0};
    const tm__edge *ew = &n->edges[0];
    tm_dtype cd = ew->dtype == TM_F64 ? TM_F64 : TM_F32;
    const tm_tensor *ix = tm__ag_saved(n, 0);
    int64_t k = tm_numel(ix), dd = ew->shape[1];
    tm_tensor *gw = tm__sc_keep(&s, tm__tensor_new(n->name, ew->shape, 2, cd,
                                                   tm_device_of(g)));
    tm_tensor *g2 = tm__sc_keep(&s, tm_reshape(g, (int64_t[]){k, dd}, 2));
    tm_tensor *gc = tm__sc_keep(
        &s, !g2                       ? NULL
            : tm_dtype_of(g2) == cd ? tm_contiguous(g2)
                                    : tm_to_dtype(g2, cd));
    if (s.st) return tm__sc_done(&s, n->name);
    tm_buf wb = tm__buf(gw), gb = tm__buf(gc), ib = tm__buf(ix);
    tm__stage sg = {0};
    tm__stage_out(&sg, &wb);
    tm__stage_in(&sg, &gb);
    tm__stage_in(&sg, &ib);
    if (tm_numel(gw) > 0 &&
        TM__CALL_STAGED(n->name, tm__ctx(gw), &sg, EMBEDDING_BACKWARD, 0,
                        embedding_backward, &wb, &gb, &ib)) {
        tm__sc_keep(&s, NULL);
        return tm__sc_done(&s, n->name);
    }
    if (!(gin[0] = tm__sc_as(gw, ew->dtype))) tm__sc_keep(&s, NULL);
    return tm__sc_done(&s, n->name);
}

/* After the lookup refused an index: names the first index of flat (I64
 * [K]) outside [0, V) and its position, reading them back to the host.
 * If that fails, the lookup's own error stands. */
static void emb_range_error(const char *fn, const tm_tensor *flat, int64_t v)
{
    char lookup[256];
    snprintf(lookup, sizeof lookup, "%s", tm_last_error());
    tm__scratch s = {0};
    int64_t pos = -1, bad = 0;
    tm_tensor *lo = tm__sc_keep(&s, tm_binary_scalar(TM_OP_LT, flat, 0.0));
    tm_tensor *hi = tm__sc_keep(&s, tm_binary_scalar(TM_OP_GE, flat,
                                                     (double)v));
    tm_tensor *out = tm__sc_binary(&s, TM_OP_LOGICAL_OR, lo, hi);
    tm_tensor *first = out ? tm__sc_keep(&s, tm_argmax_all(out)) : NULL;
    tm_tensor *at = NULL;
    if (first && !tm_item_i64(first, &pos))
        at = tm__sc_keep(&s, tm_select(flat, 0, pos));
    bool found = at && !tm_item_i64(at, &bad);
    tm__sc_done(&s, fn);
    if (found)
        tm__errf(TM_ERANGE, fn, "index %lld at position %lld is out of "
                 "range for %lld embeddings", (long long)bad, (long long)pos,
                 (long long)v);
    else
        tm__errf(TM_ERANGE, fn, "%s", lookup);
}

tm_tensor *tm_embedding(const tm_tensor *weight, const tm_tensor *indices)
{
    const char *fn = __func__;
    char sa[TM_SHAPE_BUF];
    if (tm__check_tensor(fn, weight, "weight") ||
        tm__check_tensor(fn, indices, "indices"))
        return NULL;
    const tm_tensor *both[2] = {weight, indices};
    if (tm__check_same_device(fn, both, 2)) return NULL;
    bool quant = tm_dtype_is_quantized(tm_dtype_of(weight));
    if (!tm_dtype_is_float(tm_dtype_of(weight)) && !quant) {
        tm__errf(TM_EDTYPE, fn, "weight must be a float or quantized "
                 "tensor, got %s",
                 tm_dtype_name(tm_dtype_of(weight)));
        return NULL;
    }
    if (!tm_dtype_is_integer(tm_dtype_of(indices))) {
        tm__errf(TM_EDTYPE, fn, "indices must be an integer tensor, got %s",
                 tm_dtype_name(tm_dtype_of(indices)));
        return NULL;
    }
    if (tm_ndim(weight) != 2) {
        tm__errf(TM_ESHAPE, fn, "weight must be 2-D [V, D], got %s",
                 tm__fmt_shape(tm_shape(weight), tm_ndim(weight), sa,
                               sizeof sa));
        return NULL;
    }
    int ni = tm_ndim(indices);
    if (ni + 1 > TM_MAX_DIMS) {
        tm__errf(TM_ESHAPE, fn, "indices have too many dims (%d)", ni);
        return NULL;
    }
    int64_t v = tm_shape(weight)[0], d = tm_shape(weight)[1];
    int64_t k = tm_numel(indices);
    tm_tensor *ix = NULL, *flat = NULL, *neg = NULL, *sel = NULL;
    tm_tensor *rows = NULL, *out = NULL, *wb = NULL, *qrows = NULL;
    bool prev = tm_no_grad_begin();
    /* a quantized weight's rows are gathered as bytes (U8 [V, row bytes])
     * and dequantized after the gather: only the rows looked up are */
    if (quant && !(wb = tm__q_bytes_view(fn, weight))) goto fail;
    ix = tm_to_dtype(indices, TM_I64); /* contiguous */
    flat = ix ? tm_reshape(ix, (int64_t[]){k}, 1) : NULL;
    /* negative indices -> V: out of range for the lookup as well */
    neg = flat ? tm_binary_scalar(TM_OP_LT, flat, 0.0) : NULL;
    sel = neg ? tm_masked_fill(flat, neg, (double)v) : NULL;
    if (!sel) goto fail;
    rows = tm_index_select(quant ? wb : weight, 0, sel);
    if (!rows) {
        if (tm_last_status() == TM_ERANGE) emb_range_error(fn, flat, v);
        goto fail;
    }
    if (quant) {
        int64_t st[2] = {d, 1};
        qrows = tm__reinterpret(fn, rows, tm_dtype_of(weight),
                                (int64_t[]){k, d}, st, 2, 0);
        tm_free(rows);
        rows = qrows ? tm_dequantize(qrows, TM_F32) : NULL;
        if (!rows) goto fail;
    }
    int64_t shp[TM_MAX_DIMS];
    for (int i = 0; i < ni; i++) shp[i] = tm_shape(indices)[i];
    shp[ni] = d;
    out = tm_reshape(rows, shp, ni + 1);
    if (!out) goto fail;
    tm_no_grad_end(prev);
    tm__record r = {.name = "EmbeddingBackward",
                    .backward = embedding_backward, .nin = 1, .in = &weight,
                    .save = {flat}};
    if (tm__ag_record(&r, out)) goto fail_rec;
    tm_free(ix);
    tm_free(flat);
    tm_free(neg);
    tm_free(sel);
    tm_free(rows);
    tm_free(wb);
    tm_free(qrows);
    return out;
fail:
    tm_no_grad_end(prev);
    tm__relabel_error(fn, tm_last_status());
fail_rec:
    tm_free(ix);
    tm_free(flat);
    tm_free(neg);
    tm_free(sel);
    tm_free(rows);
    tm_free(wb);
    tm_free(qrows);
    tm_free(out);
    return NULL;
}
