/* sparse.c — the sparse payload of TOPK and UPDATE frames: delta-coded
 * LEB128 indices and F32 or F16 values, decoded with every check a
 * hostile sender calls for (compress.h). */
#include "compress.h"
#include "le.h"

#include "../tensor/core/tensor_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <string.h>

#define HEAD 20

size_t tm__sparse_max_bytes(int64_t k, int dtype)
{
    return HEAD + (size_t)k * (10 + (dtype == TM__SPARSE_F16 ? 2 : 4));
}

tm_status tm__sparse_encode(int64_t n, int64_t k, const int64_t *idx,
                            const float *val, int dtype, uint8_t *out,
                            size_t cap, size_t *len)
{
    if (n < 0 || k < 0 || k > n || (dtype != TM__SPARSE_F32 && dtype != TM__SPARSE_F16))
        return TM_ERR(TM_EINVAL, "bad n %lld, k %lld or dtype %d", (long long)n,
                      (long long)k, dtype);
    if (cap < tm__sparse_max_bytes(k, dtype))
        return TM_ERR(TM_EINVAL, "buffer of %zu bytes is too small", cap);
    tm__put_u64(out, (uint64_t)n);
    tm__put_u64(out + 8, (uint64_t)k);
    out[16] = (uint8_t)dtype;
    out[17] = out[18] = out[19] = 0;
    uint8_t *p = out + HEAD;
    for (int64_t i = 0; i < k; i++) {
        if (idx[i] < 0 || idx[i] >= n || (i && idx[i] <= idx[i - 1]))
            return TM_ERR(TM_EINVAL, "indices must be ascending, unique and in "
                          "[0, %lld): entry %lld is %lld", (long long)n,
                          (long long)i, (long long)idx[i]);
        uint64_t d = (uint64_t)(i ? idx[i] - idx[i - 1] : idx[i]);
        do {
            uint8_t b = d & 0x7f;
            d >>= 7;
            *p++ = b | (d ? 0x80 : 0);
        } while (d);
    }
    for (int64_t i = 0; i < k; i++) {
        if (dtype == TM__SPARSE_F16) {
            uint16_t h = tm__f32_to_f16(val[i]);
            p[0] = (uint8_t)h;
            p[1] = (uint8_t)(h >> 8);
            p += 2;
        } else {
            memcpy(p, &val[i], 4);
            p += 4;
        }
    }
    *len = (size_t)(p - out);
    return TM_OK;
}

tm_status tm__sparse_decode(const uint8_t *p, size_t len, int64_t n_expected,
                            int64_t k_max, int64_t *k_out, int64_t *idx,
                            float *val)
{
    if (len < HEAD) return TM_ERR(TM_EFORMAT, "sparse payload of %zu bytes", len);
    uint64_t n = tm__get_u64(p), k = tm__get_u64(p + 8);
    int dt = p[16];
    if (n != (uint64_t)n_expected)
        return TM_ERR(TM_EFORMAT, "sparse payload for %llu values, expected %lld",
                      (unsigned long long)n, (long long)n_expected);
    if (k > (uint64_t)k_max)
        return TM_ERR(TM_EFORMAT, "%llu entries, at most %lld allowed",
                      (unsigned long long)k, (long long)k_max);
    if ((dt != TM__SPARSE_F32 && dt != TM__SPARSE_F16) || p[17] || p[18] || p[19])
        return TM_ERR(TM_EFORMAT, "unknown value type %d", dt);
    const uint8_t *q = p + HEAD, *end = p + len;
    size_t vs = dt == TM__SPARSE_F16 ? 2 : 4;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < k; i++) {
        uint64_t d = 0;
        int shift = 0;
        for (;;) {
            if (q >= end) return TM_ERR(TM_EFORMAT, "indices truncated");
            uint8_t b = *q++;
            if (shift == 63 && (b & 0x7e))
                return TM_ERR(TM_EFORMAT, "index delta of entry %llu is over 64 bits",
                              (unsigned long long)i);
            d |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) {
                if (b == 0 && shift)
                    return TM_ERR(TM_EFORMAT, "non-canonical varint at entry %llu",
                                  (unsigned long long)i);
                break;
            }
            shift += 7;
            if (shift > 63)
                return TM_ERR(TM_EFORMAT, "index delta of entry %llu is over 64 bits",
                              (unsigned long long)i);
        }
        if (i && d == 0)
            return TM_ERR(TM_EFORMAT, "duplicate index %llu", (unsigned long long)prev);
        /* prev < n, so n - prev cannot wrap, nor prev + d when d < n */
        uint64_t base = i ? prev : 0;
        if (d >= n - base) {
            if (d >= n && i)
                return TM_ERR(TM_EFORMAT, "index delta %llu out of range for "
                              "%llu values (entry %llu)", (unsigned long long)d,
                              (unsigned long long)n, (unsigned long long)i);
            return TM_ERR(TM_EFORMAT, "index %llu out of range for %llu values "
                          "(entry %llu)", (unsigned long long)(base + d),
                          (unsigned long long)n, (unsigned long long)i);
        }
        prev = base + d;
        idx[i] = (int64_t)prev;
    }
    if ((size_t)(end - q) != vs * k)
        return TM_ERR(TM_EFORMAT, "%zu value bytes for %llu entries",
                      (size_t)(end - q), (unsigned long long)k);
    for (uint64_t i = 0; i < k; i++, q += vs) {
        float f;
        if (vs == 2) f = tm__f16_to_f32((uint16_t)(q[0] | q[1] << 8));
        else memcpy(&f, q, 4);
        if (!isfinite(f))
            return TM_ERR(TM_EFORMAT, "value %llu is not finite",
                          (unsigned long long)i);
        val[i] = f;
    }
    *k_out = (int64_t)k;
    return TM_OK;
}

double tm__l2norm(const float *v, int64_t k)
{
    double s = 0;
    for (int64_t i = 0; i < k; i++) s += (double)v[i] * v[i];
    return sqrt(s);
}
