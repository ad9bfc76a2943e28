/*
 * cpu_impl.h — shared machinery of the CPU backend: a strided multi-operand
 * iterator, the elementwise engine and the kernel entry points of the CPU
 * backend table.
 */
#ifndef FOUNDRY_CPU_IMPL_H
#define FOUNDRY_CPU_IMPL_H

#include "../tensor/core/tensor_impl.h"

/* Forces inlining of a loop template into its caller (so the op it is
 * given as a constant function pointer is inlined too). */
#if defined(__GNUC__)
#define TM__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TM__ALWAYS_INLINE inline
#endif

/* The address of b's first element: on the CPU a handle is the address of
 * its memory.  NULL for an absent operand. */
static inline void *tm__ptr(const tm_buf *b)
{
    return b->handle ? (char *)b->handle + b->offset : NULL;
}

#define TM__ITER_MAX_OPS 4

/* Walks up to four same-shaped operands in row-major order.  Dims of size
 * 1 are dropped and dims that are contiguous for every operand merged, so
 * the innermost run is as long as possible.  Strides are in bytes. */
typedef struct tm__iter {
    int nop, ndim;
    int64_t numel;
    int64_t shape[TM_MAX_DIMS];
    int64_t strides[TM__ITER_MAX_OPS][TM_MAX_DIMS];
    char *data[TM__ITER_MAX_OPS];
} tm__iter;

/* Called once per inner run: n elements, operand k starting at ptrs[k] and
 * stepping strides[k] bytes. */
typedef void (*tm__iter_fn)(char **ptrs, const int64_t *strides, int64_t n,
                            void *ctx);

/* bufs[0..nop) share bufs[0]'s shape. */
void tm__iter_init(tm__iter *it, int nop, const tm_buf *const *bufs);
/* Visits elements [begin, end) of the row-major order. */
void tm__iter_range(const tm__iter *it, int64_t begin, int64_t end,
                    tm__iter_fn fn, void *ctx);
/* Visits every element, split over the thread pool in ranges of at least
 * `grain` elements.  fn must be safe to run concurrently on disjoint
 * ranges. */
void tm__iter_run(const tm__iter *it, int64_t grain, tm__iter_fn fn,
                  void *ctx);

/* Converts n elements from (src, sdt, sstride bytes) to (dst, ddt, dstride
 * bytes), with the rules of tensor/core/convert.h (documented for users at
 * tm_to_dtype).  cpu_convert.c. */
void tm__convert(void *dst, tm_dtype ddt, int64_t dstride, const void *src,
                 tm_dtype sdt, int64_t sstride, int64_t n);

/* Elements per thread below which splitting does not pay. */
#define TM__GRAIN 32768

/* Kernel entry points (see foundry/backend.h for their contracts). */
tm_status tm__cpu_copy(tm_ctx *ctx, const tm_buf *dst, const tm_buf *src);
tm_status tm__cpu_fill(tm_ctx *ctx, const tm_buf *dst, double value);
tm_status tm__cpu_unary(tm_ctx *ctx, tm_unary_op op, const tm_buf *out, const tm_buf *in,
                        double p0, double p1);
tm_status tm__cpu_binary(tm_ctx *ctx, tm_binary_op op, const tm_buf *out, const tm_buf *a,
                         const tm_buf *b);
tm_status tm__cpu_where(tm_ctx *ctx, const tm_buf *out, const tm_buf *cond,
                        const tm_buf *a, const tm_buf *b);
tm_status tm__cpu_reduce(tm_ctx *ctx, tm_reduce_op op, const tm_buf *out, const tm_buf *in,
                         int nred, double p);
/* The column-sum path of tm__cpu_reduce (cpu_reduce_cols.c). */
bool tm__red_cols_applies(tm_reduce_op op, const tm_buf *out,
                          const tm_buf *in, int nred);
tm_status tm__red_cols(tm_reduce_op op, const tm_buf *out, const tm_buf *in,
                       int nred);
tm_status tm__cpu_arg_reduce(tm_ctx *ctx, bool is_max, const tm_buf *indices,
                             const tm_buf *values, const tm_buf *in);
tm_status tm__cpu_cumsum(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, int dim);
tm_status tm__cpu_scan(tm_ctx *ctx, tm_scan_kind kind, const tm_buf *out,
                       const tm_buf *indices, const tm_buf *in, int dim,
                       bool reverse);
tm_status tm__cpu_gemm(tm_ctx *ctx, const tm_buf *c, const tm_buf *a, const tm_buf *b,
                       double alpha, double beta);
tm_status tm__cpu_softmax(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, bool log);
tm_status tm__cpu_norm_rows(tm_ctx *ctx, const tm_buf *out, const tm_buf *in,
                            const tm_buf *weight, const tm_buf *bias,
                            double eps, bool rms);
tm_status tm__cpu_norm_rows_backward(tm_ctx *ctx, const tm_buf *dx, const tm_buf *dw,
                                     const tm_buf *db, const tm_buf *g,
                                     const tm_buf *x, const tm_buf *weight,
                                     double eps, bool rms);
tm_status tm__cpu_gather(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, int dim,
                         const tm_buf *index);
tm_status tm__cpu_scatter(tm_ctx *ctx, const tm_buf *dst, int dim, const tm_buf *index,
                          const tm_buf *src, bool add);
tm_status tm__cpu_index_select(tm_ctx *ctx, const tm_buf *out, const tm_buf *in, int dim,
                               const tm_buf *index);
tm_status tm__cpu_scatter_reduce(tm_ctx *ctx, const tm_buf *dst, int dim,
                                 const tm_buf *index, const tm_buf *src,
                                 tm_scatter_reduce_kind kind);
/* Attention (cpu/attention/attn_entry.c) and rotary embedding. */
tm_status tm__cpu_attention(tm_ctx *ctx, const tm_buf *out, const tm_buf *lse,
                            const tm_buf *q, const tm_buf *k, const tm_buf *v,
                            const tm_buf *mask, const tm_attn_params *p);
tm_status tm__cpu_attention_backward(tm_ctx *ctx, const tm_buf *dq,
                                     const tm_buf *dk, const tm_buf *dv,
                                     const tm_buf *g, const tm_buf *q,
                                     const tm_buf *k, const tm_buf *v,
                                     const tm_buf *out, const tm_buf *lse,
                                     const tm_buf *mask,
                                     const tm_attn_params *p);
tm_status tm__cpu_rope(tm_ctx *ctx, const tm_buf *out, const tm_buf *x,
                       const tm_buf *cos, const tm_buf *sin,
                       const tm_rope_params *p);
tm_status tm__cpu_sort(tm_ctx *ctx, const tm_buf *values, const tm_buf *indices,
                       const tm_buf *in, bool descending);
tm_status tm__cpu_random(tm_ctx *ctx, const tm_buf *dst, int kind, double p0,
                         double p1, tm_rng rng);
tm_status tm__cpu_sequence(tm_ctx *ctx, const tm_buf *dst, tm_seq_kind kind,
                           double a, double b, int64_t k);
/* The nn kernels: conv (cpu_conv_entry.c, its loops in cpu_nn.h), pooling
 * (cpu_pool.c) and the embedding gradient (cpu_embedding.c).  conv_backward
 * reads x only for dweight and weight only for dx: the other may be
 * absent. */
tm_status tm__cpu_conv(tm_ctx *ctx, const tm_buf *y, const tm_buf *x,
                       const tm_buf *weight, const tm_buf *bias,
                       const tm_conv_geom *q);
tm_status tm__cpu_conv_backward(tm_ctx *ctx, const tm_buf *dx,
                                const tm_buf *dweight, const tm_buf *dbias,
                                const tm_buf *g, const tm_buf *x,
                                const tm_buf *weight, const tm_conv_geom *q);
tm_status tm__cpu_pool(tm_ctx *ctx, const tm_buf *y, const tm_buf *argmax,
                       const tm_buf *x, const tm_pool_geom *q, bool is_max);
tm_status tm__cpu_pool_backward(tm_ctx *ctx, const tm_buf *dx,
                                const tm_buf *g, const tm_buf *argmax,
                                const tm_pool_geom *q, bool is_max);
tm_status tm__cpu_embedding_backward(tm_ctx *ctx, const tm_buf *dweight,
                                     const tm_buf *g, const tm_buf *index);
tm_status tm__cpu_loss(tm_ctx *ctx, const tm_buf *out, const tm_buf *lse,
                       const tm_buf *x, const tm_buf *target,
                       const tm_loss_params *p);
tm_status tm__cpu_loss_backward(tm_ctx *ctx, const tm_buf *gx,
                                const tm_buf *gtarget, const tm_buf *g,
                                const tm_buf *x, const tm_buf *target,
                                const tm_buf *lse, const tm_loss_params *p);
tm_status tm__cpu_optim_step(tm_ctx *ctx, const tm_optim_update *u,
                             const tm_buf *p, const tm_buf *g,
                             const tm_buf *s0, const tm_buf *s1,
                             const tm_buf *s2);
tm_status tm__cpu_grad_norm(tm_ctx *ctx, const tm_buf *out,
                            const tm_buf *bufs, int n, tm_norm_kind kind,
                            double p);


/* ------------------------------------------------------ elementwise engine
 * Elementwise kernels are written once per compute type (F32, F64, I64) as
 * loops over contiguous arrays; the engine feeds them from operands of any
 * dtype and strides by converting chunks into stack buffers, and writes the
 * loop's output back converted to the output dtype.  When an operand
 * already has the compute dtype and unit stride, the loop reads or writes
 * it in place (the fast path).  Each output element depends only on its own
 * inputs, so results are identical for any thread count. */

/* out[i] = f(in[0][i], in[1][i], ...) for i < n; arrays are contiguous. */
typedef void (*tm__ew_loop)(int64_t n, void *out, const void *const *in,
                            void *ctx);

#define TM__EW_MAX_IN 3
#define TM__EW_CHUNK 256

/* Runs `loop` with inputs converted to `in_ct` and its output produced in
 * `out_ct` (then converted to out->dtype).  All operands have out's shape
 * (front ends broadcast first).  `out` may be the very same memory as an
 * input (in-place ops) but must not partially overlap one. */
tm_status tm__ew_run(const tm_buf *out, tm_dtype out_ct,
                     const tm_buf *const *ins, int nin, tm_dtype in_ct,
                     tm__ew_loop loop, void *ctx);

#endif
