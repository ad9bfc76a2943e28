/* qdtype.c — facts about the block-quantized dtypes (foundry/quantize.h)
 * that the tensor core needs: block sizes and bytes, names, parsing, and
 * the geometry rules of quantized tensors.  The formats themselves live
 * in quantize/; the core keeps its own small table so it does not depend
 * on them. */
#include "tensor_impl.h"

#include "foundry/quantize.h"

#include <ctype.h>
#include <string.h>

static const struct {
    const char *name;
    int64_t block;
    size_t bytes;
} tm__qdtypes[TM_QUANT_DTYPE_LAST - TM_QUANT_DTYPE_FIRST + 1] = {
    [TM_Q8_0 - TM_Q8_0] = {"q8_0", 32, 34},
    [TM_Q4_0 - TM_Q8_0] = {"q4_0", 32, 18},
    [TM_Q4_1 - TM_Q8_0] = {"q4_1", 32, 20},
    [TM_Q8_1 - TM_Q8_0] = {"q8_1", 32, 36},
    [TM_Q5_0 - TM_Q8_0] = {"q5_0", 32, 22},
    [TM_Q5_1 - TM_Q8_0] = {"q5_1", 32, 24},
    [TM_Q4_K - TM_Q8_0] = {"q4_k", 256, 144},
    [TM_Q5_K - TM_Q8_0] = {"q5_k", 256, 176},
    [TM_Q6_K - TM_Q8_0] = {"q6_k", 256, 210},
    [TM_Q8_K - TM_Q8_0] = {"q8_k", 256, 292},
};

bool tm_dtype_is_quantized(tm_dtype dt)
{
    return (int)dt >= TM_QUANT_DTYPE_FIRST && (int)dt <= TM_QUANT_DTYPE_LAST;
}

const char *tm__qdtype_name(tm_dtype dt)
{
    return tm_dtype_is_quantized(dt) ? tm__qdtypes[dt - TM_Q8_0].name
                                     : NULL;
}

int64_t tm_dtype_block_elems(tm_dtype dt)
{
    if (tm_dtype_is_quantized(dt)) return tm__qdtypes[dt - TM_Q8_0].block;
    return tm_dtype_is_valid(dt) ? 1 : 0;
}

size_t tm_dtype_block_bytes(tm_dtype dt)
{
    if (tm_dtype_is_quantized(dt)) return tm__qdtypes[dt - TM_Q8_0].bytes;
    return tm_dtype_size(dt);
}

size_t tm_quant_row_bytes(tm_dtype dt, int64_t n)
{
    int64_t b = tm_dtype_block_elems(dt);
    if (b == 0) {
        TM_ERR(TM_EDTYPE, "dtype %d is not a dtype", (int)dt);
        return 0;
    }
    if (n < 0 || n % b != 0) {
        TM_ERR(TM_ESHAPE, "%lld values of %s are not a whole number of "
               "%lld-value blocks", (long long)n, tm_dtype_name(dt),
               (long long)b);
        return 0;
    }
    size_t bb = tm_dtype_block_bytes(dt);
    if ((uint64_t)(n / b) > SIZE_MAX / bb) {
        TM_ERR(TM_EOVERFLOW, "%lld values of %s overflow a byte count",
               (long long)n, tm_dtype_name(dt));
        return 0;
    }
    return (size_t)(n / b) * bb;
}

tm_status tm_dtype_parse(const char *name, tm_dtype *out)
{
    if (!name) return TM_ERR(TM_EINVAL, "name is NULL");
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    for (int i = 0; i <= TM_QUANT_DTYPE_LAST; i++) {
        tm_dtype dt = (tm_dtype)i;
        if (!tm_dtype_is_valid(dt) && !tm_dtype_is_quantized(dt)) continue;
        const char *n = tm_dtype_name(dt);
        size_t k = 0;
        while (n[k] && name[k] &&
               tolower((unsigned char)name[k]) == (unsigned char)n[k])
            k++;
        if (!n[k] && !name[k]) {
            *out = dt;
            return TM_OK;
        }
    }
    return TM_ERR(TM_EINVAL, "unknown dtype \"%.64s\" (expected f32, f64, "
                  "f16, bf16, i8, u8, i16, i32, i64, bool, q8_0, q4_0, q4_1, "
                  "q8_1, q5_0, q5_1, q4_k, q5_k, q6_k or q8_k)", name);
}

/* ------------------------------------------------------------ geometry */

size_t tm__q_byte_offset(tm_dtype dt, int64_t elem_offset)
{
    if (!tm_dtype_is_quantized(dt))
        return (size_t)elem_offset * tm_dtype_size(dt);
    const int64_t b = tm__qdtypes[dt - TM_Q8_0].block;
    return (size_t)(elem_offset / b) * tm__qdtypes[dt - TM_Q8_0].bytes;
}

size_t tm__span_bytes(tm_dtype dt, int64_t n)
{
    if (!tm_dtype_is_quantized(dt)) return (size_t)n * tm_dtype_size(dt);
    const int64_t b = tm__qdtypes[dt - TM_Q8_0].block;
    return (size_t)((n + b - 1) / b) * tm__qdtypes[dt - TM_Q8_0].bytes;
}

int tm__q_block_dim(tm_dtype dt, const int64_t *shape,
                    const int64_t *strides, int ndim)
{
    int64_t b = tm_dtype_block_elems(dt);
    for (int i = ndim - 1; i >= 0; i--)
        if (strides[i] == 1 && shape[i] > 0 && shape[i] % b == 0) return i;
    return -1;
}

tm_status tm__q_check_geometry(const char *fn, tm_dtype dt,
                               const int64_t *shape, const int64_t *strides,
                               int ndim, int64_t offset)
{
    char s[TM_SHAPE_BUF], st[TM_SHAPE_BUF];
    int64_t b = tm_dtype_block_elems(dt), numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    if (ndim == 0)
        return tm__errf(TM_EDTYPE, fn, "a %s tensor cannot be 0-d: its "
                        "values come in blocks of %lld along the block dim",
                        tm_dtype_name(dt), (long long)b);
    if (numel == 0) return TM_OK;
    int bd = tm__q_block_dim(dt, shape, strides, ndim);
    bool ok = bd >= 0 && offset % b == 0;
    for (int i = 0; ok && i < ndim; i++)
        if (i != bd && shape[i] > 1 && (strides[i] <= 0 || strides[i] % b))
            ok = false;
    if (!ok)
        return tm__errf(TM_EDTYPE, fn,
                        "this view of a %s tensor (shape %s, strides %s, "
                        "offset %lld) would split its %lld-value blocks: "
                        "quantized tensors allow only views that keep every "
                        "row of blocks whole (dequantize it first with "
                        "tm_dequantize)", tm_dtype_name(dt),
                        tm__fmt_shape(shape, ndim, s, sizeof s),
                        tm__fmt_shape(strides, ndim, st, sizeof st),
                        (long long)offset, (long long)b);
    return TM_OK;
}

tm_status tm__q_refuse(const char *fn, const tm_tensor *t, const char *what)
{
    if (!t || !tm_dtype_is_quantized(t->dtype)) return TM_OK;
    return tm__errf(TM_EDTYPE, fn, "%s is a %s tensor, a quantized dtype: "
                    "dequantize it first (tm_dequantize)", what,
                    tm_dtype_name(t->dtype));
}

tm_status tm__q_bytes_geometry(const char *fn, const tm_tensor *t,
                               int64_t *shape, int64_t *strides,
                               size_t *offset)
{
    int nd = t->ndim;
    if (nd == 0 || (tm_numel(t) > 0 && t->strides[nd - 1] != 1)) {
        char s[TM_SHAPE_BUF], st[TM_SHAPE_BUF];
        return tm__errf(TM_EDTYPE, fn, "this %s tensor (shape %s, strides "
                        "%s) does not have its block dim last, so its values "
                        "cannot be copied as blocks", tm_dtype_name(t->dtype),
                        tm__fmt_shape(t->shape, nd, s, sizeof s),
                        tm__fmt_shape(t->strides, nd, st, sizeof st));
    }
    int64_t b = tm_dtype_block_elems(t->dtype);
    int64_t bb = (int64_t)tm_dtype_block_bytes(t->dtype);
    for (int i = 0; i < nd; i++) {
        shape[i] = t->shape[i];
        strides[i] = t->strides[i] / b * bb;
    }
    shape[nd - 1] = t->shape[nd - 1] / b * bb;
    strides[nd - 1] = 1;
    *offset = tm__q_byte_offset(t->dtype, t->offset);
    return TM_OK;
}

tm_status tm__q_bytes_buf(const char *fn, const tm_tensor *t, tm_buf *out)
{
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    size_t off;
    if (tm__q_bytes_geometry(fn, t, sh, st, &off)) return tm_last_status();
    memset(out, 0, sizeof *out);
    out->handle = t->storage->handle;
    out->offset = off;
    out->dtype = TM_U8;
    out->ndim = t->ndim;
    memcpy(out->shape, sh, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(out->strides, st, sizeof(int64_t) * (size_t)t->ndim);
    return TM_OK;
}

tm_tensor *tm__q_bytes_view(const char *fn, const tm_tensor *t)
{
    int64_t sh[TM_MAX_DIMS], st[TM_MAX_DIMS];
    size_t off;
    if (tm__q_bytes_geometry(fn, t, sh, st, &off)) return NULL;
    return tm__reinterpret(fn, t, TM_U8, sh, st, t->ndim, (int64_t)off);
}
