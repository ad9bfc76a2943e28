/*
 * dequant_simd.h — the SIMD dequantizers of the weight formats (internal):
 * one table lookup per kernel family, NULL for dtypes the family leaves
 * to the reference (the activation types Q8_1 / Q8_K) and on builds for
 * another architecture.  Every function is bit-identical to the reference
 * in quantize/: the same F32 operations in the same order, no FMA.
 */
#ifndef FOUNDRY_DEQUANT_SIMD_H
#define FOUNDRY_DEQUANT_SIMD_H

#include "../../quantize/quant_impl.h"

tm__dequant_row_fn tm__dequant_fn_avx2(tm_dtype dt);
tm__dequant_row_fn tm__dequant_fn_avx512(tm_dtype dt);
tm__dequant_row_fn tm__dequant_fn_neon(tm_dtype dt);

#endif
