/* cpu_elementwise.c — the buffered elementwise engine (see cpu_impl.h). */
#include "cpu_impl.h"

typedef struct {
    int nin;
    tm_dtype out_dt, out_ct, in_ct;
    tm_dtype in_dt[TM__EW_MAX_IN];
    tm__ew_loop loop;
    void *ctx;
} tm__ew_job;

/* One inner run: ptrs[0] is the output, ptrs[1..] the inputs. */
static void tm__ew_inner(char **ptrs, const int64_t *strides, int64_t n,
                         void *p)
{
    const tm__ew_job *j = p;
    _Alignas(64) char ibuf[TM__EW_MAX_IN][TM__EW_CHUNK * 8];
    _Alignas(64) char obuf[TM__EW_CHUNK * 8];
    int64_t ies = (int64_t)tm_dtype_size(j->in_ct);
    int64_t oes = (int64_t)tm_dtype_size(j->out_ct);
    bool in_direct[TM__EW_MAX_IN];
    for (int k = 0; k < j->nin; k++)
        in_direct[k] = j->in_dt[k] == j->in_ct && strides[k + 1] == ies;
    bool out_direct = j->out_dt == j->out_ct && strides[0] == oes;
    for (int64_t done = 0; done < n; done += TM__EW_CHUNK) {
        int64_t m = n - done < TM__EW_CHUNK ? n - done : TM__EW_CHUNK;
        const void *in[TM__EW_MAX_IN];
        for (int k = 0; k < j->nin; k++) {
            const char *src = ptrs[k + 1] + done * strides[k + 1];
            if (in_direct[k]) {
                in[k] = src;
            } else {
                tm__convert(ibuf[k], j->in_ct, ies, src, j->in_dt[k],
                            strides[k + 1], m);
                in[k] = ibuf[k];
            }
        }
        char *dst = ptrs[0] + done * strides[0];
        if (out_direct) {
            j->loop(m, dst, in, j->ctx);
        } else {
            j->loop(m, obuf, in, j->ctx);
            tm__convert(dst, j->out_dt, strides[0], obuf, j->out_ct, oes, m);
        }
    }
}

tm_status tm__ew_run(const tm_buf *out, tm_dtype out_ct,
                     const tm_buf *const *ins, int nin, tm_dtype in_ct,
                     tm__ew_loop loop, void *ctx)
{
    TM_ASSERT(nin >= 0 && nin <= TM__EW_MAX_IN, TM_ESTATE);
    tm__ew_job j = {.nin = nin, .out_dt = out->dtype, .out_ct = out_ct,
                    .in_ct = in_ct, .loop = loop, .ctx = ctx};
    const tm_buf *bufs[1 + TM__EW_MAX_IN] = {out};
    for (int k = 0; k < nin; k++) {
        bufs[k + 1] = ins[k];
        j.in_dt[k] = ins[k]->dtype;
    }
    tm__iter it;
    tm__iter_init(&it, 1 + nin, bufs);
    tm__iter_run(&it, TM__GRAIN, tm__ew_inner, &j);
    return TM_OK;
}
