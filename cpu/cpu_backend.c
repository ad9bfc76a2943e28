/* cpu_backend.c — the CPU backend table, plus its memory, copy and fill. */
#include "cpu_impl.h"

#include <string.h>

static void *tm__cpu_alloc(size_t bytes)
{
    return tm__alloc(bytes, "cpu backend");
}

static tm_status tm__cpu_memcpy(void *dst, const void *src, size_t bytes)
{
    if (bytes) memmove(dst, src, bytes);
    return TM_OK;
}

typedef struct {
    tm_dtype ddt, sdt;
} tm__copy_ctx;

static void tm__copy_run(char **p, const int64_t *s, int64_t n, void *ctx)
{
    tm__copy_ctx *c = ctx;
    tm__convert(p[0], c->ddt, s[0], p[1], c->sdt, s[1], n);
}

tm_status tm__cpu_copy(const tm_buf *dst, const tm_buf *src)
{
    tm__iter it;
    const tm_buf *bufs[2] = {dst, src};
    tm__iter_init(&it, 2, bufs);
    tm__copy_ctx c = {dst->dtype, src->dtype};
    tm__iter_run(&it, TM__GRAIN, tm__copy_run, &c);
    return TM_OK;
}

static void tm__fill_run(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const tm_buf *v = ctx; /* one element of the destination dtype */
    size_t es = tm_dtype_size(v->dtype);
    char *d = p[0];
    if (s[0] == (int64_t)es) { /* contiguous: memset, or word stores */
        static const char zero[16];
        if (es == 1 || !memcmp(v->data, zero, es)) {
            memset(d, *(unsigned char *)v->data, (size_t)n * es);
            return;
        }
        if (es == 4) {
            uint32_t w, *o = (uint32_t *)(void *)d;
            memcpy(&w, v->data, 4);
            for (int64_t i = 0; i < n; i++) o[i] = w;
            return;
        }
        if (es == 8) {
            uint64_t w, *o = (uint64_t *)(void *)d;
            memcpy(&w, v->data, 8);
            for (int64_t i = 0; i < n; i++) o[i] = w;
            return;
        }
    }
    for (int64_t i = 0; i < n; i++, d += s[0]) memcpy(d, v->data, es);
}

tm_status tm__cpu_fill(const tm_buf *dst, double value)
{
    char elem[16];
    tm__store_f64(elem, dst->dtype, value);
    tm_buf v = {.data = elem, .dtype = dst->dtype};
    tm__iter it;
    const tm_buf *bufs[1] = {dst};
    tm__iter_init(&it, 1, bufs);
    tm__iter_run(&it, TM__GRAIN, tm__fill_run, &v);
    return TM_OK;
}

const tm_backend tm__cpu_backend = {
    .abi_version = TM_BACKEND_ABI_VERSION,
    .size = sizeof(tm_backend),
    .name = "cpu",
    .device = TM_CPU,
    .alloc = tm__cpu_alloc,
    .free = tm__dealloc,
    .to_device = tm__cpu_memcpy,
    .to_host = tm__cpu_memcpy,
    .copy = tm__cpu_copy,
    .fill = tm__cpu_fill,
    .unary = tm__cpu_unary,
    .binary = tm__cpu_binary,
    .where = tm__cpu_where,
    .reduce = tm__cpu_reduce,
    .arg_reduce = tm__cpu_arg_reduce,
    .cumsum = tm__cpu_cumsum,
    .gemm = tm__cpu_gemm,
    .softmax = tm__cpu_softmax,
    .norm_rows = tm__cpu_norm_rows,
    .norm_rows_backward = tm__cpu_norm_rows_backward,
    .gather = tm__cpu_gather,
    .scatter = tm__cpu_scatter,
    .index_select = tm__cpu_index_select,
    .sort = tm__cpu_sort,
    .random = tm__cpu_random,
};
