/* cpu_backend.c — the CPU backend table, plus its memory, copy and fill. */
#include "cpu_impl.h"
#include "quant/quant_kernels.h"

#include <string.h>

/* The CPU's storage comes from the host allocator directly (tensor.c);
 * these serve code that goes through the table generically. */
static void *tm__cpu_alloc(tm_ctx *ctx, size_t bytes)
{
    (void)ctx;
    return tm__alloc(bytes, "cpu backend");
}

static void tm__cpu_free(tm_ctx *ctx, void *handle)
{
    (void)ctx;
    tm__dealloc(handle);
}

static tm_status tm__cpu_to_device(tm_ctx *ctx, void *dst, size_t off,
                                   const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes) memmove((char *)dst + off, src, bytes);
    return TM_OK;
}

static tm_status tm__cpu_to_host(tm_ctx *ctx, void *dst, const void *src,
                                 size_t off, size_t bytes)
{
    (void)ctx;
    if (bytes) memmove(dst, (const char *)src + off, bytes);
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

tm_status tm__cpu_copy(tm_ctx *ctx, const tm_buf *dst, const tm_buf *src)
{
    (void)ctx;
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
        if (es == 1 || !memcmp(tm__ptr(v), zero, es)) {
            memset(d, *(unsigned char *)tm__ptr(v), (size_t)n * es);
            return;
        }
        if (es == 4) {
            uint32_t w, *o = (uint32_t *)(void *)d;
            memcpy(&w, tm__ptr(v), 4);
            for (int64_t i = 0; i < n; i++) o[i] = w;
            return;
        }
        if (es == 8) {
            uint64_t w, *o = (uint64_t *)(void *)d;
            memcpy(&w, tm__ptr(v), 8);
            for (int64_t i = 0; i < n; i++) o[i] = w;
            return;
        }
    }
    for (int64_t i = 0; i < n; i++, d += s[0]) memcpy(d, tm__ptr(v), es);
}

tm_status tm__cpu_fill(tm_ctx *ctx, const tm_buf *dst, double value)
{
    (void)ctx;
    char elem[16];
    tm__store_f64(elem, dst->dtype, value);
    tm_buf v = {.handle = elem, .dtype = dst->dtype};
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
    .type = TM_DEVICE_CPU,
    .alloc = tm__cpu_alloc,
    .free = tm__cpu_free,
    .to_device = tm__cpu_to_device,
    .to_host = tm__cpu_to_host,
    .copy = tm__cpu_copy,
    .fill = tm__cpu_fill,
    .sequence = tm__cpu_sequence,
    .unary = tm__cpu_unary,
    .binary = tm__cpu_binary,
    .where = tm__cpu_where,
    .reduce = tm__cpu_reduce,
    .arg_reduce = tm__cpu_arg_reduce,
    .cumsum = tm__cpu_cumsum,
    .gemm = tm__cpu_gemm,
    .gather = tm__cpu_gather,
    .scatter = tm__cpu_scatter,
    .index_select = tm__cpu_index_select,
    .sort = tm__cpu_sort,
    .softmax = tm__cpu_softmax,
    .norm_rows = tm__cpu_norm_rows,
    .norm_rows_backward = tm__cpu_norm_rows_backward,
    .random = tm__cpu_random,
    .conv = tm__cpu_conv,
    .conv_backward = tm__cpu_conv_backward,
    .pool = tm__cpu_pool,
    .pool_backward = tm__cpu_pool_backward,
    .loss = tm__cpu_loss,
    .loss_backward = tm__cpu_loss_backward,
    .embedding_backward = tm__cpu_embedding_backward,
    .optim_step = tm__cpu_optim_step,
    .grad_norm = tm__cpu_grad_norm,
    .scan = tm__cpu_scan,
    .scatter_reduce = tm__cpu_scatter_reduce,
    .attention = tm__cpu_attention,
    .attention_backward = tm__cpu_attention_backward,
    .rope = tm__cpu_rope,
    .quantize = tm__cpu_quantize,
    .qmatmul = tm__cpu_qmatmul,
    .qmatmul_backward = tm__cpu_qmatmul_backward,
};
