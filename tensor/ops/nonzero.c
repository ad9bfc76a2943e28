/* nonzero.c — nonzero, masked_select, take_along_dim, repeat_interleave.
 *
 * nonzero and masked_select have data-dependent shapes: the count of
 * non-zero elements is read back to the host (one synchronization), the
 * rest stays on t's device: a running sum numbers the non-zero elements
 * and a scatter writes each one's position to its number.  The others are
 * gathers and index_selects, which record their own gradients. */
#include "compose_impl.h"

#include <stdint.h>

tm_tensor *tm__nonzero_flat(const char *fn, const tm_tensor *t)
{
    int64_t n = tm_numel(t), count = 0, slots;
    tm_device dev = tm_device_of(t);
    tm_tensor *m = NULL, *mf = NULL, *cs = NULL, *last = NULL, *num = NULL,
              *dump = NULL, *pos = NULL, *z = NULL, *h = NULL, *src = NULL,
              *o = NULL, *r = NULL;
    if (!(m = tm_binary_scalar(TM_OP_NE, t, 0.0)) ||
        !(mf = tm_reshape(m, &n, 1)) || !(cs = tm_cumsum(mf, 0)))
        goto fail;
    if (n > 0 && (!(last = tm_select(cs, 0, n - 1)) ||
                  tm_item_i64(last, &count))) /* the host sync */
        goto fail;
    slots = count + 1; /* the extra slot takes the zero elements */
    if (!(num = tm_sub_scalar(cs, 1.0)) ||
        !(dump = tm__scalar_on(fn, (double)count, TM_I64, dev)) ||
        !(pos = tm_where(mf, num, dump)) ||
        !(z = tm_full_on(&slots, 1, 0.0, TM_I64, dev)) ||
        !(h = tm_arange(0.0, (double)n, 1.0, TM_I64)) ||
        !(src = tm_to(h, dev)) || !(o = tm_scatter(z, 0, pos, src)))
        goto fail;
    r = tm_narrow(o, 0, 0, count);
fail:
    if (!r) tm__relabel_error(fn, tm_last_status());
    tm_free(m);
    tm_free(mf);
    tm_free(cs);
    tm_free(last);
    tm_free(num);
    tm_free(dump);
    tm_free(pos);
    tm_free(z);
    tm_free(h);
    tm_free(src);
    tm_free(o);
    return r;
}

tm_tensor *tm_nonzero(const tm_tensor *t)
{
    tm_tensor *cols[TM_MAX_DIMS] = {NULL}, *flat = NULL, *r = NULL;
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        !(flat = tm__nonzero_flat(__func__, t)))
        return NULL;
    int nd = t->ndim;
    if (nd == 0) {
        int64_t shape[2] = {flat->shape[0], 0};
        r = tm_empty_on(shape, 2, TM_I64, tm_device_of(t));
        goto done;
    }
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        tm_tensor *q = tm_binary_scalar(TM_OP_FLOOR_DIVIDE, flat,
                                        (double)stride);
        cols[d] = q ? tm_binary_scalar(TM_OP_REMAINDER, q,
                                       (double)t->shape[d])
                    : NULL;
        tm_free(q);
        if (!cols[d]) goto done;
        stride *= t->shape[d] ? t->shape[d] : 1;
    }
    r = tm_stack(cols, nd, 1);
done:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    for (int d = 0; d < nd; d++) tm_free(cols[d]);
    tm_free(flat);
    return r;
}

tm_tensor *tm_masked_select(const tm_tensor *t, const tm_tensor *mask)
{
    int64_t shape[TM_MAX_DIMS], n = 1;
    int nd;
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, mask, "mask") ||
        tm__check_same_device(__func__, (const tm_tensor *[]){t, mask}, 2))
        return NULL;
    if (mask->dtype != TM_BOOL) {
        TM_ERR(TM_EDTYPE, "mask must be bool, got %s",
               tm_dtype_name(mask->dtype));
        return NULL;
    }
    if (tm_broadcast_shapes(t->shape, t->ndim, mask->shape, mask->ndim, shape,
                            &nd)) {
        tm__relabel_error(__func__, tm_last_status());
        return NULL;
    }
    for (int i = 0; i < nd; i++) n *= shape[i];
    tm_tensor *me = tm_broadcast_to(mask, shape, nd);
    tm_tensor *te = me ? tm_broadcast_to(t, shape, nd) : NULL;
    tm_tensor *flat = te ? tm__nonzero_flat(__func__, me) : NULL;
    tm_tensor *tf = flat ? tm_reshape(te, &n, 1) : NULL;
    tm_tensor *r = tf ? tm_index_select(tf, 0, flat) : NULL;
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(me);
    tm_free(te);
    tm_free(flat);
    tm_free(tf);
    return r;
}

tm_tensor *tm_take_along_dim(const tm_tensor *t, const tm_tensor *indices,
                             const int *dim)
{
    char a[TM_SHAPE_BUF], b[TM_SHAPE_BUF];
    int d;
    tm_tensor *x = NULL, *y = NULL, *r = NULL;
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, indices, "indices"))
        return NULL;
    if (!tm_dtype_is_integer(indices->dtype)) {
        TM_ERR(TM_EDTYPE, "indices must be an integer tensor, got %s",
               tm_dtype_name(indices->dtype));
        return NULL;
    }
    if (!dim) {
        int64_t n = tm_numel(t), m = tm_numel(indices);
        if ((x = tm_reshape(t, &n, 1)) && (y = tm_reshape(indices, &m, 1)))
            r = tm_gather(x, 0, y);
        goto done;
    }
    if (t->ndim != indices->ndim) {
        TM_ERR(TM_ESHAPE, "input %s and indices %s must have the same "
               "number of dims", tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
               tm__fmt_shape(indices->shape, indices->ndim, b, sizeof b));
        return NULL;
    }
    if (t->ndim == 0) { /* as torch: no dim to gather along */
        TM_ERR(TM_EINVAL, "dim %d is out of range for a 0-d tensor (pass "
               "no dim to index it flattened)", *dim);
        return NULL;
    }
    if (tm__wrap_dim(__func__, *dim, t->ndim, &d)) return NULL;
    int64_t ts[TM_MAX_DIMS], is[TM_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) {
        int64_t p = t->shape[i], q = indices->shape[i];
        if (i != d && p != q && p != 1 && q != 1) {
            TM_ERR(TM_ESHAPE, "input %s and indices %s do not broadcast "
                   "outside dim %d: %lld vs %lld",
                   tm__fmt_shape(t->shape, t->ndim, a, sizeof a),
                   tm__fmt_shape(indices->shape, indices->ndim, b, sizeof b),
                   d, (long long)p, (long long)q);
            return NULL;
        }
        ts[i] = is[i] = p == 1 ? q : p;
        ts[i] = i == d ? p : ts[i];
        is[i] = i == d ? q : is[i];
    }
    if ((x = tm_expand(t, ts, t->ndim)) &&
        (y = tm_expand(indices, is, t->ndim)))
        r = tm_gather(x, d, y);
done:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    tm_free(x);
    tm_free(y);
    return r;
}

/* The index i repeated rep[i] times, for every i, as in a row of
 * repeat_interleave; total is their sum. */
static tm_tensor *repeat_index(const int64_t *rep, int64_t n, bool one,
                               int64_t total, const tm_tensor *like)
{
    int64_t *v = tm__alloc(sizeof(int64_t) * (size_t)(total ? total : 1),
                           "tm_repeat_interleave");
    if (!v) return NULL;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < rep[one ? 0 : i]; j++) v[k++] = i;
    tm_tensor *r = tm__index_like(v, total, like);
    tm__dealloc(v);
    return r;
}

tm_tensor *tm_repeat_interleave(const tm_tensor *t, const tm_tensor *repeats,
                                const int *dim, int64_t output_size)
{
    int d = 0;
    int64_t *rep = NULL, total = 0;
    tm_tensor *src = NULL, *r64 = NULL, *idx = NULL, *r = NULL;
    if (tm__check_dense_operand(__func__, t, "tensor") ||
        tm__check_dense_operand(__func__, repeats, "repeats"))
        return NULL;
    if (!tm_dtype_is_integer(repeats->dtype) || repeats->ndim > 1) {
        TM_ERR(tm_dtype_is_integer(repeats->dtype) ? TM_ESHAPE : TM_EDTYPE,
               "repeats must be a 0-d or 1-D integer tensor, got %s with %d "
               "dims", tm_dtype_name(repeats->dtype), repeats->ndim);
        return NULL;
    }
    if (!dim || t->ndim == 0) {
        int64_t n = tm_numel(t);
        if (dim && tm__wrap_dim(__func__, *dim, 1, &d)) return NULL;
        if (!(src = tm_reshape(t, &n, 1))) goto fail;
    } else {
        if (tm__wrap_dim(__func__, *dim, t->ndim, &d)) return NULL;
        src = tm_retain((tm_tensor *)t);
    }
    int64_t n = src->shape[d], nr = tm_numel(repeats);
    if (nr != n && nr != 1) {
        TM_ERR(TM_ESHAPE, "repeats has %lld entries but dim %d has size %lld",
               (long long)nr, d, (long long)n);
        goto fail;
    }
    if (!(rep = tm__alloc(sizeof(int64_t) * (size_t)(nr ? nr : 1), __func__)) ||
        !(r64 = tm_to_dtype(repeats, TM_I64)) ||
        tm_copy_to_buffer(r64, rep, sizeof(int64_t) * (size_t)nr, TM_I64))
        goto fail;
    for (int64_t i = 0; i < nr; i++) {
        if (rep[i] < 0) {
            TM_ERR(TM_EINVAL, "repeats must not be negative, got %lld at %lld",
                   (long long)rep[i], (long long)i);
            goto fail;
        }
        int64_t add = nr == 1 ? rep[0] : rep[i], times = nr == 1 ? n : 1;
        if (add && times > (INT64_MAX - total) / add) {
            TM_ERR(TM_EOVERFLOW, "the result's size overflows");
            goto fail;
        }
        total += add * times;
    }
    if (output_size >= 0 && output_size != total) {
        TM_ERR(TM_EINVAL, "output_size = %lld but the repeats add up to %lld",
               (long long)output_size, (long long)total);
        goto fail;
    }
    if ((idx = repeat_index(rep, n, nr == 1, total, src)))
        r = tm_index_select(src, d, idx);
    if (!r) tm__relabel_error(__func__, tm_last_status());
fail:
    tm__dealloc(rep);
    tm_free(src);
    tm_free(r64);
    tm_free(idx);
    return r;
}

tm_tensor *tm_repeat_interleave_int(const tm_tensor *t, int64_t repeats,
                                    const int *dim, int64_t output_size)
{
    if (tm__check_dense_operand(__func__, t, "tensor")) return NULL;
    tm_tensor *r = tm__scalar_on(__func__, (double)repeats, TM_I64, TM_CPU);
    tm_tensor *o = r ? tm_repeat_interleave(t, r, dim, output_size) : NULL;
    tm_free(r);
    return o;
}
