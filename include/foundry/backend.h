/*
 * foundry/backend.h — the table a device backend fills in.
 *
 * Op code (tm_add, tm_sum, ...) validates arguments, works out result
 * shapes and dtypes, allocates results and then calls the backend of the
 * tensors' device through this table.  A new backend (CUDA, Metal) plugs in
 * by filling a tm_backend and registering it; no op code changes.
 *
 * Kernels see tensors as tm_buf: a data pointer to the first element and
 * shape/strides in elements.  Front ends have already
 *   - broadcast every operand to the output's shape (stride 0 where
 *     broadcast), so kernels never apply broadcasting rules themselves;
 *   - checked dtypes, dims and shapes.
 * Kernels may still fail (TM_ERANGE for an out-of-range index, TM_ENOMEM,
 * TM_EDEVICE) and then set tm_last_error() themselves.
 */
#ifndef FOUNDRY_BACKEND_H
#define FOUNDRY_BACKEND_H

#include "ops.h"
#include "random.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the layout or meaning of tm_backend changes. */
#define TM_BACKEND_ABI_VERSION 3

/* A strided view as kernels see it.  `data` points at the first element
 * (host address, or a device address cast to a pointer). */
typedef struct tm_buf {
    void *data;
    tm_dtype dtype;
    int ndim;
    int64_t shape[TM_MAX_DIMS];
    int64_t strides[TM_MAX_DIMS];
} tm_buf;

typedef struct tm_backend {
    uint32_t abi_version; /* TM_BACKEND_ABI_VERSION: checked at registration */
    uint32_t size;        /* sizeof(tm_backend) as compiled by the backend */
    const char *name;     /* "cpu", "cuda", ... */
    tm_device device;

    /* Memory: alloc returns NULL (with an error set) on failure. */
    void *(*alloc)(size_t bytes);
    void (*free)(void *ptr);
    /* Byte copies between host and device memory, and within the device. */
    tm_status (*to_device)(void *dst, const void *src_host, size_t bytes);
    tm_status (*to_host)(void *dst_host, const void *src, size_t bytes);

    /* dst = src, same shape, converting dtype.  Overlap is handled by the
     * front end (it copies through a temporary). */
    tm_status (*copy)(const tm_buf *dst, const tm_buf *src);
    /* Every element of dst = value (converted to dst's dtype). */
    tm_status (*fill)(const tm_buf *dst, double value);

    /* out = op(in, p0, p1).  in's dtype is the compute input; out's dtype
     * may differ (BOOL for predicates, a narrower float to round into). */
    tm_status (*unary)(tm_unary_op op, const tm_buf *out, const tm_buf *in,
                       double p0, double p1);
    /* out = a op b, all the same shape.  a and b may have any dtypes; they
     * are converted to the compute type of their promoted dtype (F64 for
     * F64; F32 for F32/F16/BF16 and for div of integers; I64 for integers
     * and bool) and the result is converted to out's dtype.  Integer
     * floor_divide/remainder by zero and integer pow with a negative
     * exponent fail with TM_EINVAL (out may then be partly written). */
    tm_status (*binary)(tm_binary_op op, const tm_buf *out, const tm_buf *a,
                        const tm_buf *b);
    /* out = cond != 0 ? a : b, all the same shape; cond is any dtype; a
     * and b are any dtypes, converted to out's. */
    tm_status (*where)(const tm_buf *out, const tm_buf *cond, const tm_buf *a,
                       const tm_buf *b);

    /* Reduces the last `nred` dims of `in` (the front end permutes the
     * reduced dims to the end); out has in's leading ndim - nred dims.
     * `p` is the op's parameter (correction for var/std, order for norm). */
    tm_status (*reduce)(tm_reduce_op op, const tm_buf *out, const tm_buf *in,
                        int nred, double p);
    /* Index (I64) of the max (is_max) or min along the last dim of `in`;
     * `values` (may be NULL) receives the value. out has ndim - 1 dims. */
    tm_status (*arg_reduce)(bool is_max, const tm_buf *indices,
                            const tm_buf *values, const tm_buf *in);
    /* Running sum along `dim`; out and in have the same shape. */
    tm_status (*cumsum)(const tm_buf *out, const tm_buf *in, int dim);

    /* c[..., m, n] = alpha * sum_k a[..., m, k] * b[..., k, n]
     *                + beta * c[..., m, n]
     * All three have the same ndim >= 2 and equal batch dims (broadcast
     * batch dims have stride 0).  a and b may have any strides, so op(A) =
     * A^T is a transposed view, never a copy.  a, b, c share one dtype.
     * beta == 0 ignores c's old contents (NaN included), as BLAS does. */
    tm_status (*gemm)(const tm_buf *c, const tm_buf *a, const tm_buf *b,
                      double alpha, double beta);

    /* out = in gathered along `dim` by `index` (I64/I32, index's shape ==
     * out's shape).  Range-checks every index. */
    tm_status (*gather)(const tm_buf *out, const tm_buf *in, int dim,
                        const tm_buf *index);
    /* dst[index along dim] = src (or += when `add`), in row-major order of
     * `index`; src has index's shape (may be broadcast from a scalar). */
    tm_status (*scatter)(const tm_buf *dst, int dim, const tm_buf *index,
                         const tm_buf *src, bool add);
    /* out = in picked along `dim` by a 1-D `index`. */
    tm_status (*index_select)(const tm_buf *out, const tm_buf *in, int dim,
                              const tm_buf *index);
    /* Stable sort along the last dim; values and/or indices (I64) may have
     * data == NULL when not wanted. */
    tm_status (*sort)(const tm_buf *values, const tm_buf *indices,
                      const tm_buf *in, bool descending);

    /* Row ops over the last dim of same-shaped out and in (float dtypes):
     * softmax (log_softmax when `log`), and layer_norm / rms_norm with an
     * optional per-column weight and bias (tm_buf with data == NULL when
     * absent; 1-D, length = the last dim). */
    tm_status (*softmax)(const tm_buf *out, const tm_buf *in, bool log);
    tm_status (*norm_rows)(const tm_buf *out, const tm_buf *in,
                           const tm_buf *weight, const tm_buf *bias,
                           double eps, bool rms);
    /* Gradients of norm_rows in one fused pass per row: dx, and dw / db
     * summed over the rows (deterministic for a thread count); any of the
     * three may have data == NULL when not wanted, as may weight.  All
     * buffers contiguous with one float dtype (F32 or F64); rows are the
     * last dim of x, g and dx. */
    tm_status (*norm_rows_backward)(const tm_buf *dx, const tm_buf *dw,
                                    const tm_buf *db, const tm_buf *g,
                                    const tm_buf *x, const tm_buf *weight,
                                    double eps, bool rms);

    /* Fills dst (contiguous) from the Philox stream (see random.h):
     * kind 0 uniform [p0, p1), 1 normal (mean p0, std p1), 2 integers in
     * [p0, p1).  Advances *rng as random.h documents. */
    tm_status (*random)(const tm_buf *dst, int kind, double p0, double p1,
                        tm_rng *rng);
} tm_backend;

/* Registers a backend for its device (replacing any earlier one).  Checks
 * abi_version and size; TM_EINVAL if they do not match. */
tm_status tm_backend_register(const tm_backend *b);
/* The backend of `dev`, or NULL (with an error set) if none is loaded. */
const tm_backend *tm_backend_get(tm_device dev);

#ifdef __cplusplus
}
#endif
#endif
