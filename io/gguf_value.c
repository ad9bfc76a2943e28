/*
 * gguf_value.c — reading metadata values (of a reader or a writer).
 */
#include "gguf_impl.h"

static bool is_int(uint32_t t)
{
    return t == TM_GGUF_UINT8 || t == TM_GGUF_INT8 || t == TM_GGUF_UINT16 ||
           t == TM_GGUF_INT16 || t == TM_GGUF_UINT32 || t == TM_GGUF_INT32 ||
           t == TM_GGUF_UINT64 || t == TM_GGUF_INT64 || t == TM_GGUF_BOOL;
}

static bool is_signed(uint32_t t)
{
    return t == TM_GGUF_INT8 || t == TM_GGUF_INT16 || t == TM_GGUF_INT32 ||
           t == TM_GGUF_INT64;
}

static tm_status need_value(const tm_gguf_value *v, const char *fn)
{
    if (!v) return tm__errf(TM_EINVAL, fn, "value is NULL");
    return TM_OK;
}

tm_gguf_type tm_gguf_value_type(const tm_gguf_value *v)
{
    return v ? (tm_gguf_type)v->type : (tm_gguf_type)-1;
}

static tm_status not_scalar(const tm_gguf_value *v, const char *fn,
                            const char *want)
{
    return tm__errf(TM_EDTYPE, fn, "value is %s, not %s",
                    tm_gguf_type_name((tm_gguf_type)v->type), want);
}

tm_status tm_gguf_value_u64(const tm_gguf_value *v, uint64_t *out)
{
    tm_status st = need_value(v, __func__);
    if (st) return st;
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    if (!is_int(v->type)) return not_scalar(v, __func__, "an integer");
    if (is_signed(v->type) && v->num.i < 0)
        return TM_ERR(TM_ERANGE, "%s value %lld is negative: it does not "
                      "fit in uint64", tm_gguf_type_name(v->type),
                      (long long)v->num.i);
    *out = v->num.u;
    return TM_OK;
}

tm_status tm_gguf_value_i64(const tm_gguf_value *v, int64_t *out)
{
    tm_status st = need_value(v, __func__);
    if (st) return st;
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    if (!is_int(v->type)) return not_scalar(v, __func__, "an integer");
    if (!is_signed(v->type) && v->num.u > (uint64_t)INT64_MAX)
        return TM_ERR(TM_ERANGE, "%s value %llu does not fit in int64",
                      tm_gguf_type_name(v->type),
                      (unsigned long long)v->num.u);
    *out = is_signed(v->type) ? v->num.i : (int64_t)v->num.u;
    return TM_OK;
}

tm_status tm_gguf_value_f64(const tm_gguf_value *v, double *out)
{
    tm_status st = need_value(v, __func__);
    if (st) return st;
    if (!out) return TM_ERR(TM_EINVAL, "out is NULL");
    if (v->type == TM_GGUF_FLOAT32 || v->type == TM_GGUF_FLOAT64)
        *out = v->num.f;
    else if (is_signed(v->type))
        *out = (double)v->num.i;
    else if (is_int(v->type))
        *out = (double)v->num.u;
    else
        return not_scalar(v, __func__, "a number");
    return TM_OK;
}

const char *tm_gguf_value_str(const tm_gguf_value *v, size_t *len)
{
    if (need_value(v, __func__)) return NULL;
    if (v->type != TM_GGUF_STRING) {
        not_scalar(v, __func__, "string");
        return NULL;
    }
    if (len) *len = (size_t)v->n;
    return v->str;
}

tm_gguf_type tm_gguf_array_type(const tm_gguf_value *v)
{
    if (!v || v->type != TM_GGUF_ARRAY) return (tm_gguf_type)-1;
    return (tm_gguf_type)v->elem;
}

int64_t tm_gguf_array_len(const tm_gguf_value *v)
{
    if (!v || v->type != TM_GGUF_ARRAY) return -1;
    return (int64_t)v->n;
}

const tm_gguf_value *tm_gguf_array_get(const tm_gguf_value *v, int64_t j)
{
    if (need_value(v, __func__)) return NULL;
    if (v->type != TM_GGUF_ARRAY) {
        not_scalar(v, __func__, "array");
        return NULL;
    }
    if (j < 0 || (uint64_t)j >= v->n) {
        TM_ERR(TM_ERANGE, "index %lld out of range for an array of %llu",
               (long long)j, (unsigned long long)v->n);
        return NULL;
    }
    return &v->items[j];
}

const void *tm_gguf_array_data(const tm_gguf_value *v)
{
    if (!v || v->type != TM_GGUF_ARRAY) return NULL;
    return v->raw;
}
