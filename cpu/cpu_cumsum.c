/* cpu_cumsum.c — running sums along one dim on the CPU.
 *
 * out and in have the same shape; out is I64 for integer/bool input
 * (wrapping sums) and in's dtype for floats.  Floats accumulate in double
 * and each output is rounded once.  Lines (all positions of the other
 * dims) are independent, so they are split over the pool and results do
 * not depend on the thread count.
 */
#include "cpu_impl.h"

#include <string.h>

#define TM__CUMSUM_CHUNK 256

typedef struct {
    int64_t len, ist, ost; /* line length; byte strides along the dim */
    tm_dtype idt, odt;
} tm__cumsum_job;

static void tm__cumsum_line(const tm__cumsum_job *j, char *out,
                            const char *in)
{
    union {
        double f[TM__CUMSUM_CHUNK];
        int64_t i[TM__CUMSUM_CHUNK];
    } buf;
    bool ints = !tm_dtype_is_float(j->idt);
    double acc = 0;
    uint64_t iacc = 0;
    if (j->idt == TM_F32 && j->odt == TM_F32 && j->ist == 4 && j->ost == 4) {
        const float *x = (const float *)(const void *)in;
        float *y = (float *)(void *)out;
        for (int64_t i = 0; i < j->len; i++) {
            acc += (double)x[i];
            y[i] = (float)acc;
        }
        return;
    }
    for (int64_t done = 0; done < j->len; done += TM__CUMSUM_CHUNK) {
        int64_t k = j->len - done;
        if (k > TM__CUMSUM_CHUNK) k = TM__CUMSUM_CHUNK;
        const char *src = in + done * j->ist;
        char *dst = out + done * j->ost;
        if (ints) {
            tm__convert(buf.i, TM_I64, 8, src, j->idt, j->ist, k);
            for (int64_t i = 0; i < k; i++) {
                iacc += (uint64_t)buf.i[i];
                buf.i[i] = (int64_t)iacc;
            }
            tm__convert(dst, j->odt, j->ost, buf.i, TM_I64, 8, k);
        } else {
            tm__convert(buf.f, TM_F64, 8, src, j->idt, j->ist, k);
            for (int64_t i = 0; i < k; i++) {
                acc += buf.f[i];
                buf.f[i] = acc;
            }
            tm__convert(dst, j->odt, j->ost, buf.f, TM_F64, 8, k);
        }
    }
}

static void tm__cumsum_run(char **ptrs, const int64_t *strides, int64_t n,
                           void *p)
{
    const tm__cumsum_job *j = p;
    for (int64_t i = 0; i < n; i++)
        tm__cumsum_line(j, ptrs[0] + i * strides[0],
                        ptrs[1] + i * strides[1]);
}

tm_status tm__cpu_cumsum(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, int dim)
{
    (void)ctx;
    TM_ASSERT(dim >= 0 && dim < in->ndim && out->ndim == in->ndim,
              TM_ESTATE);
    /* the lines: every dim but `dim` */
    tm_buf lo = *out, li = *in;
    lo.ndim = li.ndim = in->ndim - 1;
    for (int d = dim; d < in->ndim - 1; d++) {
        lo.shape[d] = li.shape[d] = in->shape[d + 1];
        lo.strides[d] = out->strides[d + 1];
        li.strides[d] = in->strides[d + 1];
    }
    tm__cumsum_job j = {
        .len = in->shape[dim],
        .ist = in->strides[dim] * (int64_t)tm_dtype_size(in->dtype),
        .ost = out->strides[dim] * (int64_t)tm_dtype_size(out->dtype),
        .idt = in->dtype,
        .odt = out->dtype,
    };
    if (j.len == 0) return TM_OK;
    tm__iter it;
    const tm_buf *bufs[2] = {&lo, &li};
    tm__iter_init(&it, 2, bufs);
    tm__iter_run(&it, TM__GRAIN / j.len > 0 ? TM__GRAIN / j.len : 1,
                 tm__cumsum_run, &j);
    return TM_OK;
}
