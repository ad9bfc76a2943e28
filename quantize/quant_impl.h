/*
 * quant_impl.h — the quantized dtypes' internal interface, shared by the
 * quantize module (reference formats, front ends), the CPU kernels
 * (cpu/quant/) and the GGUF reader/writer.  Not installed.
 *
 * Every row function takes `n` values, a multiple of the dtype's block
 * (callers have checked), and packed blocks.  The reference functions in
 * quant_ref.c / quant_ref_k.c are plain C: the oracle for every SIMD path
 * and the definition of the rounding.
 */
#ifndef FOUNDRY_QUANT_IMPL_H
#define FOUNDRY_QUANT_IMPL_H

#include "quant_blocks.h"

#include "foundry/quantize.h"

#include <stddef.h>
#include <stdint.h>

typedef void (*tm__quant_row_fn)(const float *x, void *dst, int64_t n);
typedef void (*tm__dequant_row_fn)(const void *src, float *y, int64_t n);

typedef struct tm__qtraits {
    tm_dtype dtype;
    const char *name;          /* "q4_k" */
    int64_t block;             /* values per block */
    size_t bytes;              /* bytes per block */
    tm_dtype act;              /* activation type its dot products take
                                  (TM_Q8_0, TM_Q8_1 or TM_Q8_K); the
                                  activation types map to themselves */
    bool weight;               /* a weight format (not Q8_1 / Q8_K) */
    tm__quant_row_fn quantize_ref;
    tm__dequant_row_fn dequantize_ref;
} tm__qtraits;

/* The traits of a quantized dtype, or NULL for any other value. */
const tm__qtraits *tm__qtraits_of(tm_dtype dt);

/* binary16 <-> F32 exactly as ggml's reference (round to nearest even;
 * ggml_compute_fp32_to_fp16 semantics), shared by every format. */
float tm__half_to_f32(tm__half h);
tm__half tm__f32_to_half(float f);

/* The best dequantizer for this CPU (SIMD where there is one), bit-
 * identical to dequantize_ref; and the quantizer the backend uses
 * (byte-identical to quantize_ref).  cpu/quant/ fills these in. */
void tm__dequantize_row(tm_dtype dt, const void *src, float *y, int64_t n);
void tm__quantize_row(tm_dtype dt, const float *x, void *dst, int64_t n);

#endif
