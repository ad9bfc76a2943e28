/* reduce.c — reductions over dims (sum, mean, ..., any, all), arg
 * reductions and cumsum: argument checks, result shapes and dtypes.  The
 * kernels see the input permuted so that the reduced dims come last (a
 * view of the same memory) and the output without its reduced dims. */
#include "op_table.h"
#include "../core/grad_hooks.h"

#include <string.h>

static tm_dtype tm__reduce_dtype(tm_reduce_op op, tm_dtype dt)
{
    bool fl = tm_dtype_is_float(dt);
    switch (op) {
    case TM_RED_SUM:
    case TM_RED_PROD: return fl ? dt : TM_I64;
    case TM_RED_MAX:
    case TM_RED_MIN: return dt;
    case TM_RED_ANY:
    case TM_RED_ALL: return TM_BOOL;
    default: return fl ? dt : TM_F32;
    }
}

static tm_status tm__check_dense(const char *fn, const tm_tensor *t)
{
    if (tm__check_dense_operand(fn, t, "tensor") || tm__q_refuse(fn, t, "tensor"))
        return tm_last_status();
    if (!tm_dtype_is_valid(t->dtype))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not supported",
                        tm_dtype_name(t->dtype));
    return TM_OK;
}

/* Marks the reduced dims of t in red[].  dims == NULL or ndims == 0: all.
 * A 0-d tensor accepts dim 0 or -1 (and reduces nothing). */
static tm_status tm__reduce_dims(const char *fn, const tm_tensor *t,
                                 const int *dims, int ndims, bool *red)
{
    memset(red, 0, sizeof(bool) * TM_MAX_DIMS);
    if (ndims < 0)
        return tm__errf(TM_EINVAL, fn, "ndims %d is negative", ndims);
    if (!dims || ndims == 0) {
        for (int d = 0; d < t->ndim; d++) red[d] = true;
        return TM_OK;
    }
    bool seen[TM_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++) {
        int d;
        if (tm__wrap_dim(fn, dims[i], t->ndim, &d)) return tm_last_status();
        if (seen[d])
            return tm__errf(TM_EINVAL, fn, "dim %d appears twice", d);
        seen[d] = true;
        if (t->ndim > 0) red[d] = true;
    }
    return TM_OK;
}

/* Fails when a reduced dim is empty (max, min, argmax, argmin). */
static tm_status tm__reduce_nonempty(const char *fn, const tm_tensor *t,
                                     const bool *red)
{
    for (int d = 0; d < t->ndim; d++) {
        if (!red[d] || t->shape[d] != 0) continue;
        char s[TM_SHAPE_BUF];
        return tm__errf(TM_EINVAL, fn,
                        "cannot reduce 0 elements: dim %d of shape %s is "
                        "empty", d,
                        tm__fmt_shape(t->shape, t->ndim, s, sizeof s));
    }
    return TM_OK;
}

/* Result shape (keepdim or not) into shape[*nd]; the kernel views of t
 * (reduced dims last) and of the result (reduced dims dropped). */
static void tm__reduce_geometry(const tm_tensor *t, const bool *red,
                                bool keepdim, int64_t *shape, int *nd,
                                tm_buf *in, int *nred)
{
    tm_buf b = tm__buf(t);
    int k = 0, r = 0;
    *nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (red[d]) {
            r++;
            if (keepdim) shape[(*nd)++] = 1;
            continue;
        }
        shape[(*nd)++] = t->shape[d];
        in->shape[k] = b.shape[d];
        in->strides[k++] = b.strides[d];
    }
    for (int d = 0; d < t->ndim; d++) {
        if (!red[d]) continue;
        in->shape[k] = b.shape[d];
        in->strides[k++] = b.strides[d];
    }
    in->handle = b.handle;
    in->offset = b.offset;
    in->dtype = b.dtype;
    in->ndim = t->ndim;
    *nred = r;
}

/* The kernel view of a fresh contiguous result without its size-1
 * reduced dims. */
static tm_buf tm__squeezed_buf(const tm_tensor *o, const int64_t *shape,
                               int ndim)
{
    tm_buf b = tm__buf(o);
    b.ndim = ndim;
    memcpy(b.shape, shape, sizeof(int64_t) * (size_t)ndim);
    tm__contiguous_strides(b.shape, ndim, b.strides);
    return b;
}

static tm_tensor *tm__reduce(const char *fn, tm_reduce_op op,
                             const tm_tensor *t, const int *dims, int ndims,
                             bool keepdim, double p)
{
    bool red[TM_MAX_DIMS];
    if (tm__check_dense(fn, t)) return NULL;
    if ((unsigned)op >= TM_REDUCE_OP_COUNT) {
        tm__errf(TM_EINVAL, fn, "unknown reduce op %d", (int)op);
        return NULL;
    }
    if (tm__reduce_dims(fn, t, dims, ndims, red)) return NULL;
    if ((op == TM_RED_MAX || op == TM_RED_MIN) &&
        tm__reduce_nonempty(fn, t, red))
        return NULL;
    tm_ctx *cx = tm__ctx(t);
    int64_t shape[TM_MAX_DIMS];
    int nd, nred;
    tm_buf in;
    memset(&in, 0, sizeof in);
    tm__reduce_geometry(t, red, keepdim, shape, &nd, &in, &nred);
    tm_tensor *o = tm__tensor_new(fn, shape, nd, tm__reduce_dtype(op, t->dtype),
                                  tm_device_of(t));
    if (!o) return NULL;
    tm_buf ob = tm__squeezed_buf(o, in.shape, t->ndim - nred);
    tm__stage sg = {0};
    tm__stage_out(&sg, &ob);
    tm__stage_in(&sg, &in);
    if (TM__CALL_STAGED(fn, cx, &sg, REDUCE, op, reduce, op, &ob, &in, nred,
                        p)) {
        tm_free(o);
        return NULL;
    }
    return tm__grad_reduce(o, op, t, red, p);
}

tm_tensor *tm_reduce(tm_reduce_op op, const tm_tensor *t, const int *dims,
                     int ndims, double p, bool keepdim)
{
    return tm__reduce(__func__, op, t, dims, ndims, keepdim, p);
}

#define TM__REDUCE_FN(name, op)                                               \
    tm_tensor *name(const tm_tensor *t, const int *dims, int ndims,           \
                    bool keepdim)                                             \
    {                                                                         \
        return tm__reduce(__func__, op, t, dims, ndims, keepdim, 0);          \
    }
TM__REDUCE_FN(tm_sum, TM_RED_SUM)
TM__REDUCE_FN(tm_mean, TM_RED_MEAN)
TM__REDUCE_FN(tm_prod, TM_RED_PROD)
TM__REDUCE_FN(tm_max, TM_RED_MAX)
TM__REDUCE_FN(tm_min, TM_RED_MIN)
TM__REDUCE_FN(tm_logsumexp, TM_RED_LOGSUMEXP)
TM__REDUCE_FN(tm_any, TM_RED_ANY)
TM__REDUCE_FN(tm_all, TM_RED_ALL)

tm_tensor *tm_var(const tm_tensor *t, const int *dims, int ndims,
                  double correction, bool keepdim)
{
    return tm__reduce(__func__, TM_RED_VAR, t, dims, ndims, keepdim,
                      correction);
}

tm_tensor *tm_std(const tm_tensor *t, const int *dims, int ndims,
                  double correction, bool keepdim)
{
    return tm__reduce(__func__, TM_RED_STD, t, dims, ndims, keepdim,
                      correction);
}

tm_tensor *tm_norm(const tm_tensor *t, const int *dims, int ndims, double p,
                   bool keepdim)
{
    if (p != p) {
        tm__errf(TM_EINVAL, __func__, "order p is NaN");
        return NULL;
    }
    return tm__reduce(__func__, TM_RED_NORM, t, dims, ndims, keepdim, p);
}

/* ------------------------------------------------------ arg reductions */

/* Index (and optionally value) of the max/min along `dim` (all dims,
 * flattened, when all_dims).  *idx and *val (if val) receive new
 * references, or NULL on failure. */
static tm_status tm__arg_reduce(const char *fn, bool is_max,
                                const tm_tensor *t, int dim, bool all_dims,
                                bool keepdim, tm_tensor **idx, tm_tensor **val)
{
    *idx = NULL;
    if (val) *val = NULL;
    if (tm__check_dense(fn, t)) return tm_last_status();
    bool red[TM_MAX_DIMS];
    tm_status st = all_dims ? tm__reduce_dims(fn, t, NULL, 0, red)
                            : tm__reduce_dims(fn, t, &dim, 1, red);
    if (st || (st = tm__reduce_nonempty(fn, t, red))) return st;
    tm_ctx *cx = tm__ctx(t);
    tm_tensor *flat = NULL, *i = NULL, *v = NULL;
    const tm_tensor *src = t;
    if (all_dims) { /* index into the row-major flattening */
        int64_t n = tm_numel(t);
        flat = tm_reshape(t, &n, 1);
        if (!flat) return tm__errf(tm_last_status(), fn, "%s", tm_last_error());
        src = flat;
        red[0] = true;
        keepdim = false;
    }
    int64_t shape[TM_MAX_DIMS];
    int nd, nred;
    tm_buf in;
    memset(&in, 0, sizeof in);
    tm__reduce_geometry(src, red, keepdim, shape, &nd, &in, &nred);
    if (nred == 0) { /* a 0-d tensor: one element along a size-1 dim */
        in.ndim = 1;
        in.shape[0] = 1;
        in.strides[0] = 0;
    }
    i = tm__tensor_new(fn, shape, nd, TM_I64, tm_device_of(src));
    if (!i) goto fail;
    if (val) {
        v = tm__tensor_new(fn, shape, nd, src->dtype, tm_device_of(src));
        if (!v) goto fail;
    }
    tm_buf ib = tm__squeezed_buf(i, in.shape, in.ndim - 1), vb = ib;
    if (v) vb = tm__squeezed_buf(v, in.shape, in.ndim - 1);
    tm__stage sg = {0};
    tm__stage_out(&sg, &ib);
    if (v) tm__stage_out(&sg, &vb);
    tm__stage_in(&sg, &in);
    if (TM__CALL_STAGED(fn, cx, &sg, ARG_REDUCE, 0, arg_reduce, is_max, &ib,
                        v ? &vb : NULL, &in)) goto fail;
    tm_free(flat);
    *idx = i;
    if (val) *val = v;
    return TM_OK;
fail:
    st = tm_last_status();
    tm_free(flat);
    tm_free(i);
    tm_free(v);
    return st;
}

tm_tensor *tm_argmax(const tm_tensor *t, int dim, bool keepdim)
{
    tm_tensor *i;
    tm__arg_reduce(__func__, true, t, dim, false, keepdim, &i, NULL);
    return i;
}

tm_tensor *tm_argmin(const tm_tensor *t, int dim, bool keepdim)
{
    tm_tensor *i;
    tm__arg_reduce(__func__, false, t, dim, false, keepdim, &i, NULL);
    return i;
}

tm_tensor *tm_argmax_all(const tm_tensor *t)
{
    tm_tensor *i;
    tm__arg_reduce(__func__, true, t, 0, true, false, &i, NULL);
    return i;
}

tm_tensor *tm_argmin_all(const tm_tensor *t)
{
    tm_tensor *i;
    tm__arg_reduce(__func__, false, t, 0, true, false, &i, NULL);
    return i;
}

static tm_status tm__minmax_dim(const char *fn, bool is_max,
                                const tm_tensor *t, int dim, bool keepdim,
                                tm_tensor **values, tm_tensor **indices)
{
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!values || !indices)
        return tm__errf(TM_EINVAL, fn, "%s is NULL",
                        values ? "indices" : "values");
    tm_status st = tm__arg_reduce(fn, is_max, t, dim, false, keepdim,
                                  indices, values);
    if (st) return st;
    int d = dim < 0 ? dim + (t->ndim ? t->ndim : 1) : dim;
    if (!(*values = tm__grad_minmax_dim(*values, is_max, t, d, keepdim,
                                        *indices))) {
        st = tm_last_status();
        tm_free(*indices);
        *indices = NULL;
    }
    return st;
}

tm_status tm_max_dim(const tm_tensor *t, int dim, bool keepdim,
                     tm_tensor **values, tm_tensor **indices)
{
    return tm__minmax_dim(__func__, true, t, dim, keepdim, values, indices);
}

tm_status tm_min_dim(const tm_tensor *t, int dim, bool keepdim,
                     tm_tensor **values, tm_tensor **indices)
{
    return tm__minmax_dim(__func__, false, t, dim, keepdim, values, indices);
}

/* --------------------------------------------------------------- cumsum */

tm_tensor *tm_cumsum(const tm_tensor *t, int dim)
{
    int d;
    if (tm__check_dense(__func__, t) ||
        tm__wrap_dim(__func__, dim, t->ndim, &d))
        return NULL;
    tm_ctx *cx = tm__ctx(t);
    tm_dtype odt = tm_dtype_is_float(t->dtype) ? t->dtype : TM_I64;
    tm_tensor *o = tm__tensor_new(__func__, t->shape, t->ndim, odt,
                                  tm_device_of(t));
    if (!o) return NULL;
    tm_buf ob = tm__buf(o), ib = tm__buf(t);
    if (t->ndim == 0) { /* one element along a size-1 dim */
        ob.ndim = ib.ndim = 1;
        ob.shape[0] = ib.shape[0] = 1;
        ob.strides[0] = ib.strides[0] = 0;
    }
    tm__stage sg = {0};
    tm__stage_out(&sg, &ob);
    tm__stage_in(&sg, &ib);
    if (TM__CALL_STAGED(__func__, cx, &sg, CUMSUM, 0, cumsum, &ob, &ib, d)) {
        tm_free(o);
        return NULL;
    }
    return tm__grad_cumsum(o, t, d);
}
