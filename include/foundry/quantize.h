/*
 * foundry/quantize.h — block-quantized tensors, bit-compatible with ggml.
 *
 * A quantized dtype stores values in blocks: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1
 * and Q8_1 in blocks of 32 values, the K-quants Q4_K, Q5_K, Q6_K and Q8_K in
 * super-blocks of 256.  Byte layouts are exactly ggml's (quantize/
 * quant_blocks.h), so the bytes of a GGUF tensor are the bytes of a Foundry
 * tensor.  Q8_K (and Q8_1) exist for activations: weights are Q8_0 .. Q6_K.
 *
 * A quantized tensor has a logical shape in values, like any tensor; its
 * innermost dim (the "block dim", stride 1) holds whole runs of blocks, so
 * its length is a multiple of the block size (anything else is TM_ESHAPE).
 * Strides and offsets are in values, and every row of the block dim starts
 * on a block.  Views that keep every row whole work: narrow / select /
 * slice (step 1) on the other dims, unsqueeze / squeeze, view / reshape
 * keeping the block dim, transpose / permute (the block dim keeps stride
 * 1), tm_to between devices, tm_clone / tm_contiguous when the block dim is
 * last.  Any other view, and every elementwise op, reductions and the rest
 * of ops.h, fail with TM_EDTYPE naming the dtype.  A quantized tensor
 * never requires grad (it is a frozen weight).
 *
 *   tm_tensor *w  = tm_randn((int64_t[]){4096, 4096}, 2, TM_F32);
 *   tm_tensor *wq = tm_quantize(w, TM_Q4_K);          // 4.5 bits per value
 *   tm_tensor *y  = tm_linear(x, wq, NULL);           // integer dot products
 *   tm_tensor *wd = tm_dequantize(wq, TM_F32);
 *
 * tm_linear(x, w, bias) and tm_matmul(x, tm_transpose(w, 0, 1)) and
 * tm_matmul(w, x) take a quantized w [out, in] with a float x: x's rows are
 * quantized on the fly to Q8_0 (Q8_1 for Q4_1/Q5_1, Q8_K for K-quants) as
 * ggml does, and each output is a sum of per-block integer dot products
 * scaled in F32, in block order (the same for any thread count).  The
 * result is F32 (x's dtype when x is F16/BF16).  The gradient flows to x
 * (dX = dY·W, W dequantized block by block on the fly: no F32 copy of W)
 * and to bias; tm_embedding accepts a quantized weight too (rows
 * dequantized on gather).
 */
#ifndef FOUNDRY_QUANTIZE_H
#define FOUNDRY_QUANTIZE_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------- dtype facts */

/* True for TM_Q8_0 .. TM_Q8_K. */
bool tm_dtype_is_quantized(tm_dtype dt);
/* Values per block: 32 or 256 for quantized dtypes, 1 for dense ones, 0
 * for invalid values. */
int64_t tm_dtype_block_elems(tm_dtype dt);
/* Bytes per block (the element size for dense dtypes; 0 when invalid). */
size_t tm_dtype_block_bytes(tm_dtype dt);
/* Bytes of `n` values of `dt` in a row: n / block * block bytes.  0 with
 * TM_ESHAPE set when n is negative or not a multiple of the block. */
size_t tm_quant_row_bytes(tm_dtype dt, int64_t n);
/* Parses "q8_0", "Q4_K", "f16", ... (any dtype name, case-insensitive)
 * into *out; TM_EINVAL naming the string otherwise. */
tm_status tm_dtype_parse(const char *name, tm_dtype *out);

/* ------------------------------------------------------ tensor level */

/* `t` (any float dtype, CPU or a device) quantized to `qt` along its last
 * dim, as a new contiguous tensor of t's shape.  The 32-value formats
 * round exactly as ggml's reference quantizers (byte-identical output);
 * the K-quants search their scales (RMSE no worse than ggml's reference).
 * Errors: qt not a weight/activation quantized dtype (TM_EDTYPE), t's
 * last dim not a multiple of the block (TM_ESHAPE), a 0-d t (TM_EINVAL),
 * non-finite values (TM_EINVAL: a block scale cannot hold them).  New
 * reference. */
tm_tensor *tm_quantize(const tm_tensor *t, tm_dtype qt);
/* A quantized tensor's values as a new contiguous float tensor of `dt`
 * (F32, F64, F16 or BF16: computed in F32, then converted).  Bit-identical
 * to ggml's dequantizers.  New reference. */
tm_tensor *tm_dequantize(const tm_tensor *q, tm_dtype dt);

/* How far a quantized tensor is from the values it was made from. */
typedef struct tm_quant_error {
    double rmse;     /* sqrt(mean((ref - deq)^2)) */
    double max_abs;  /* max |ref - deq| */
    double ref_rms;  /* sqrt(mean(ref^2)): rmse / ref_rms is relative */
    int64_t count;   /* values compared */
} tm_quant_error;
/* Compares `ref` (float) with `q` (quantized or float) of the same shape.
 * Sums in F64. */
tm_status tm_quant_error_of(const tm_tensor *ref, const tm_tensor *q,
                            tm_quant_error *out);

/* -------------------------------------------------------- raw rows
 * Host buffers, for file converters: `rows` rows of `n` values, each row
 * of the quantized side tm_quant_row_bytes(qt, n) bytes, rows packed.
 * Threaded over rows; the bytes equal tm_quantize's (the same for any
 * thread count).  The quantized buffer is aligned to 2 bytes (4 for
 * TM_Q8_K), the float one to 4, as malloc'd or mapped tensor data is.
 * Errors: qt not quantized (TM_EDTYPE); NULL or misaligned buffers,
 * negative counts, sizes that overflow (TM_EINVAL); n not a multiple of
 * the block (TM_ESHAPE); tm_quantize_rows: a non-finite value (TM_EINVAL
 * naming its row and column, found before anything is written: dst is
 * untouched), values whose block scale overflows a half (TM_ERANGE naming
 * the row; dst then holds ggml's bytes, with an infinite scale). */
tm_status tm_quantize_rows(tm_dtype qt, const float *src, void *dst,
                           int64_t rows, int64_t n);
tm_status tm_dequantize_rows(tm_dtype qt, const void *src, float *dst,
                             int64_t rows, int64_t n);

/* ---------------------------------------------------- type plans
 * Which dtype each tensor of a model gets when it is quantized: the first
 * rule whose glob (`*` matches any run of characters, `?` one) matches
 * the tensor's name wins, else `default_type` for tensors of >= 2 dims
 * and `vector_type` for 1-D ones (norm weights, biases). */
typedef struct tm_quant_rule {
    const char *pattern; /* e.g. "*.embed_tokens.weight", "lm_head.*" */
    tm_dtype dtype;      /* a quantized or float dtype */
} tm_quant_rule;

typedef struct tm_quant_plan {
    tm_dtype default_type;       /* e.g. TM_Q4_K */
    tm_dtype vector_type;        /* 1-D tensors (0 is TM_F32) */
    const tm_quant_rule *rules;  /* borrowed */
    int n_rules;
    /* For a tensor whose row length is not a multiple of its type's
     * block (0 is TM_F32); tm_quant_plan_pick reports the fallback. */
    tm_dtype fallback_type;
} tm_quant_plan;

/* The dtype `plan` gives tensor `name` of `shape` (ndim dims); sets
 * *fell_back when the row length forced the fallback type. */
tm_dtype tm_quant_plan_pick(const tm_quant_plan *plan, const char *name,
                            const int64_t *shape, int ndim, bool *fell_back);
/* Named mixes, as llama.cpp's: "q8_0", "q4_0", ... (every tensor of >= 2
 * dims in that type) and "q4_k_m" / "q5_k_m" (documented in
 * docs/quantize.md).  Fills *plan with static rules; TM_EINVAL naming the
 * string for an unknown name. */
tm_status tm_quant_plan_named(const char *name, tm_quant_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
