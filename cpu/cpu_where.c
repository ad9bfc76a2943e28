/* cpu_where.c — `where` for the CPU: out = cond != 0 ? a : b. */
#include "cpu_impl.h"

#include <string.h>

/* out = cond != 0 ? a : b.  cond is read as BOOL and a, b converted to
 * out's dtype chunk by chunk (in place when they already have it and unit
 * stride), so picking is exact whatever the operands' dtypes. */

typedef struct {
    tm_dtype out_dt, cond_dt, a_dt, b_dt;
} tm__where_job;

/* Pointer to m elements of `dt` at src (stride bytes), as contiguous
 * elements of `want`: src itself, or converted into buf. */
static const void *tm__as_contig(void *buf, tm_dtype want, const char *src,
                                 tm_dtype dt, int64_t stride, int64_t m)
{
    int64_t es = (int64_t)tm_dtype_size(want);
    if (dt == want && stride == es) return src;
    tm__convert(buf, want, es, src, dt, stride, m);
    return buf;
}

/* Bitwise select of m elements of 1, 2, 4 or 8 bytes (c is 0 or 1): no
 * branch, so random conditions cost nothing extra and the loop vectorizes
 * (a branch mispredicted on half the elements of a ReLU backward: 6 ns an
 * element). */
static void tm__select8(uint8_t *z, const uint8_t *c, const uint8_t *x,
                        const uint8_t *y, int64_t m)
{
    for (int64_t i = 0; i < m; i++) {
        uint8_t k = (uint8_t)(0u - c[i]);
        z[i] = (uint8_t)((x[i] & k) | (y[i] & (uint8_t)~k));
    }
}

static void tm__select16(uint16_t *z, const uint8_t *c, const uint16_t *x,
                         const uint16_t *y, int64_t m)
{
    for (int64_t i = 0; i < m; i++) {
        uint16_t k = (uint16_t)(0u - c[i]);
        z[i] = (uint16_t)((x[i] & k) | (y[i] & (uint16_t)~k));
    }
}

static void tm__select32(uint32_t *z, const uint8_t *c, const uint32_t *x,
                         const uint32_t *y, int64_t m)
{
    for (int64_t i = 0; i < m; i++) {
        uint32_t k = 0u - (uint32_t)c[i];
        z[i] = (x[i] & k) | (y[i] & ~k);
    }
}

static void tm__select64(uint64_t *z, const uint8_t *c, const uint64_t *x,
                         const uint64_t *y, int64_t m)
{
    for (int64_t i = 0; i < m; i++) {
        uint64_t k = 0u - (uint64_t)c[i];
        z[i] = (x[i] & k) | (y[i] & ~k);
    }
}

/* ptrs: out, cond, a, b. */
static void tm__where_inner(char **ptrs, const int64_t *strides, int64_t n,
                            void *p)
{
    const tm__where_job *j = p;
    _Alignas(64) char cbuf[TM__EW_CHUNK];
    _Alignas(64) char abuf[TM__EW_CHUNK * 8], bbuf[TM__EW_CHUNK * 8];
    _Alignas(64) char obuf[TM__EW_CHUNK * 8];
    int64_t es = (int64_t)tm_dtype_size(j->out_dt);
    bool out_direct = strides[0] == es;
    /* F32 condition, F32 operands in place (b may be a broadcast scalar):
     * one pass, no staging (the ReLU backward, where(y, g, 0)). */
    if (out_direct && j->cond_dt == TM_F32 && strides[1] == 4 &&
        j->out_dt == TM_F32 && j->a_dt == TM_F32 && j->b_dt == TM_F32 &&
        strides[2] == 4 && (strides[3] == 4 || strides[3] == 0)) {
        const float *c = (const float *)(const void *)ptrs[1];
        const uint32_t *x = (const uint32_t *)(const void *)ptrs[2];
        const uint32_t *y = (const uint32_t *)(const void *)ptrs[3];
        uint32_t *z = (uint32_t *)(void *)ptrs[0];
        int64_t sy = strides[3] / 4;
        for (int64_t i = 0; i < n; i++) {
            uint32_t k = 0u - (uint32_t)(c[i] != 0.0f);
            z[i] = (x[i] & k) | (y[i * sy] & ~k);
        }
        return;
    }
    for (int64_t done = 0; done < n; done += TM__EW_CHUNK) {
        int64_t m = n - done < TM__EW_CHUNK ? n - done : TM__EW_CHUNK;
        const uint8_t *c = tm__as_contig(cbuf, TM_BOOL,
                                         ptrs[1] + done * strides[1],
                                         j->cond_dt, strides[1], m);
        const void *pa = tm__as_contig(abuf, j->out_dt,
                                       ptrs[2] + done * strides[2], j->a_dt,
                                       strides[2], m);
        const void *pb = tm__as_contig(bbuf, j->out_dt,
                                       ptrs[3] + done * strides[3], j->b_dt,
                                       strides[3], m);
        char *dst = ptrs[0] + done * strides[0];
        void *po = out_direct ? (void *)dst : (void *)obuf;
        switch (es) {
        case 1: tm__select8(po, c, pa, pb, m); break;
        case 2: tm__select16(po, c, pa, pb, m); break;
        case 4: tm__select32(po, c, pa, pb, m); break;
        default: tm__select64(po, c, pa, pb, m); break;
        }
        if (!out_direct)
            tm__convert(dst, j->out_dt, strides[0], obuf, j->out_dt, es, m);
    }
}

tm_status tm__cpu_where(tm_ctx *ctx, const tm_buf *out, const tm_buf *cond,
                        const tm_buf *a, const tm_buf *b)
{
    (void)ctx;
    int64_t es = (int64_t)tm_dtype_size(out->dtype);
    TM_ASSERT(es == 1 || es == 2 || es == 4 || es == 8, TM_EDTYPE);
    tm__where_job j = {out->dtype, cond->dtype, a->dtype, b->dtype};
    const tm_buf *bufs[4] = {out, cond, a, b};
    tm__iter it;
    tm__iter_init(&it, 4, bufs);
    tm__iter_run(&it, TM__GRAIN, tm__where_inner, &j);
    return TM_OK;
}
