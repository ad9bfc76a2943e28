/*
 * quant_traits.c — the table of quantized dtypes (block size, block bytes,
 * the activation type their dot products take, reference row functions)
 * and the binary16 conversions every format shares.
 */
#include "quant_impl.h"

#include "../tensor/core/tensor_impl.h"

#include <stddef.h>

/* The reference row functions (quant_ref.c, quant_ref_k.c). */
void tm__quantize_row_q8_0_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q4_0_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q4_1_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q5_0_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q5_1_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q8_1_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q8_k_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q4_k_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q5_k_ref(const float *x, void *dst, int64_t n);
void tm__quantize_row_q6_k_ref(const float *x, void *dst, int64_t n);
void tm__dequantize_row_q8_0_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q4_0_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q4_1_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q5_0_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q5_1_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q8_1_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q8_k_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q4_k_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q5_k_ref(const void *src, float *y, int64_t n);
void tm__dequantize_row_q6_k_ref(const void *src, float *y, int64_t n);

#define TM__QROW(DT, NAME, BLOCK, TYPE, ACT, WEIGHT, FN)                      \
    [DT - TM_Q8_0] = {DT,                                                     \
                      NAME,                                                   \
                      BLOCK,                                                  \
                      sizeof(TYPE),                                           \
                      ACT,                                                    \
                      WEIGHT,                                                 \
                      tm__quantize_row_##FN##_ref,                            \
                      tm__dequantize_row_##FN##_ref}

/* Indexed by dtype - TM_Q8_0; the dtype values are contiguous. */
static const tm__qtraits qtraits[] = {
    TM__QROW(TM_Q8_0, "q8_0", TM__QK, tm__block_q8_0, TM_Q8_0, true, q8_0),
    TM__QROW(TM_Q4_0, "q4_0", TM__QK, tm__block_q4_0, TM_Q8_0, true, q4_0),
    TM__QROW(TM_Q4_1, "q4_1", TM__QK, tm__block_q4_1, TM_Q8_1, true, q4_1),
    TM__QROW(TM_Q8_1, "q8_1", TM__QK, tm__block_q8_1, TM_Q8_1, false, q8_1),
    TM__QROW(TM_Q5_0, "q5_0", TM__QK, tm__block_q5_0, TM_Q8_0, true, q5_0),
    TM__QROW(TM_Q5_1, "q5_1", TM__QK, tm__block_q5_1, TM_Q8_1, true, q5_1),
    TM__QROW(TM_Q4_K, "q4_k", TM__QK_K, tm__block_q4_K, TM_Q8_K, true, q4_k),
    TM__QROW(TM_Q5_K, "q5_k", TM__QK_K, tm__block_q5_K, TM_Q8_K, true, q5_k),
    TM__QROW(TM_Q6_K, "q6_k", TM__QK_K, tm__block_q6_K, TM_Q8_K, true, q6_k),
    TM__QROW(TM_Q8_K, "q8_k", TM__QK_K, tm__block_q8_K, TM_Q8_K, false, q8_k),
};
static_assert(TM_Q8_K - TM_Q8_0 + 1 == sizeof qtraits / sizeof qtraits[0],
              "one traits row per quantized dtype");

const tm__qtraits *tm__qtraits_of(tm_dtype dt)
{
    if ((int)dt < (int)TM_Q8_0 || (int)dt > (int)TM_Q8_K) return NULL;
    return &qtraits[dt - TM_Q8_0];
}

/* The core's conversions are exact (half -> F32) and round to nearest
 * even with overflow to infinity (F32 -> half), as ggml's are; NaN keeps
 * its top payload bits, which only matters for inputs no quantizer
 * produces from finite values. */
float tm__half_to_f32(tm__half h) { return tm__f16_to_f32(h); }
tm__half tm__f32_to_half(float f) { return tm__f32_to_f16(f); }
