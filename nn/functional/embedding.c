/*
 * embedding.c — tm_embedding: validation, the row lookup (through
 * tm_index_select) and its backward ("EmbeddingBackward").  The index
 * range check and the gradient's scatter-add are CPU kernels
 * (cpu/cpu_embedding.c, contracts in cpu/cpu_nn.h).
 */
#include "foundry/nn_functional.h"

#include "../../tensor/autograd/autograd_impl.h"
#include "../../tensor/autograd/backward.h"
#include "../../cpu/cpu_nn.h"

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
    tm_tensor *gw = tm__sc_keep(&s, tm_zeros(ew->shape, 2, cd));
    tm_tensor *g2 = tm__sc_keep(&s, tm_reshape(g, (int64_t[]){k, dd}, 2));
    tm_tensor *gc = tm__sc_keep(
        &s, !g2                       ? NULL
            : tm_dtype_of(g2) == cd ? tm_contiguous(g2)
                                    : tm_to_dtype(g2, cd));
    if (s.st) return tm__sc_done(&s, n->name);
    tm__embedding_backward(cd, tm_data(gw), tm_data(gc), tm_data(ix), k, dd);
    if (!(gin[0] = tm__sc_as(gw, ew->dtype))) tm__sc_keep(&s, NULL);
    return tm__sc_done(&s, n->name);
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
    if (!tm__on_cpu(weight)) {
        tm__errf(TM_EUNSUPPORTED, fn, "only CPU tensors are supported");
        return NULL;
    }
    if (!tm_dtype_is_float(tm_dtype_of(weight))) {
        tm__errf(TM_EDTYPE, fn, "weight must be a float tensor, got %s",
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
    tm_tensor *ix = NULL, *flat = NULL, *rows = NULL, *out = NULL;
    bool prev = tm_no_grad_begin();
    ix = tm_to_dtype(indices, TM_I64); /* contiguous */
    if (!ix) goto fail;
    const int64_t *iv = tm_data(ix);
    int64_t bad = tm__index_find_outside(iv, k, v);
    if (bad >= 0) {
        tm__errf(TM_ERANGE, fn, "index %lld at position %lld is out of "
                 "range for %lld embeddings", (long long)iv[bad],
                 (long long)bad, (long long)v);
        goto fail;
    }
    flat = tm_reshape(ix, (int64_t[]){k}, 1);
    rows = flat ? tm_index_select(weight, 0, flat) : NULL;
    int64_t shp[TM_MAX_DIMS];
    for (int i = 0; i < ni; i++) shp[i] = tm_shape(indices)[i];
    shp[ni] = d;
    out = rows ? tm_reshape(rows, shp, ni + 1) : NULL;
    if (!out) goto fail;
    tm_no_grad_end(prev);
    tm__record r = {.name = "EmbeddingBackward",
                    .backward = embedding_backward, .nin = 1, .in = &weight,
                    .save = {flat}};
    if (tm__ag_record(&r, out)) goto fail_rec;
    tm_free(ix);
    tm_free(flat);
    tm_free(rows);
    return out;
fail:
    tm_no_grad_end(prev);
fail_rec:
    tm_free(ix);
    tm_free(flat);
    tm_free(rows);
    tm_free(out);
    return NULL;
}
