/*
 * qact.h — the SIMD activation quantizers (Q8_0, Q8_1, Q8_K) the CPU
 * backend offers tm__quantize_row, byte-identical to the references.
 * Internal to cpu/quant/.
 */
#ifndef FOUNDRY_QACT_H
#define FOUNDRY_QACT_H

#include "../../quantize/quant_impl.h"

#include <stdbool.h>

void tm__qact_q8_0_avx2(const float *x, void *dst, int64_t n);
void tm__qact_q8_1_avx2(const float *x, void *dst, int64_t n);
void tm__qact_q8_k_avx2(const float *x, void *dst, int64_t n);
void tm__qact_q8_0_neon(const float *x, void *dst, int64_t n);
void tm__qact_q8_1_neon(const float *x, void *dst, int64_t n);
void tm__qact_q8_k_neon(const float *x, void *dst, int64_t n);

/* Quantizes the row with this CPU's SIMD quantizer for dt when there is
 * one (true), else leaves it to the caller (false). */
bool tm__qact_quantize(tm_dtype dt, const float *x, void *dst, int64_t n);

#endif
