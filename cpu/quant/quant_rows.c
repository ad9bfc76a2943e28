/*
 * quant_rows.c — the row quantizer and dequantizer the CPU backend uses:
 * per dtype, the fastest implementation this CPU runs (the kernel family
 * of cpu_features.h), byte- (quantize) and bit- (dequantize) identical to
 * the references in quantize/.
 */
#include "dequant_simd.h"
#include "qact.h"

#include "../cpu_features.h"

static tm__dequant_row_fn simd_dequant(tm_dtype dt)
{
    switch (tm__cpu_isa()) {
#if defined(__x86_64__)
    case TM__ISA_AVX512: return tm__dequant_fn_avx512(dt);
    case TM__ISA_AVX2: return tm__dequant_fn_avx2(dt);
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return tm__dequant_fn_neon(dt);
#endif
    default: return NULL;
    }
}

void tm__dequantize_row(tm_dtype dt, const void *src, float *y, int64_t n)
{
    const tm__qtraits *tr = tm__qtraits_of(dt);
    if (!tr) return;
    tm__dequant_row_fn fn = simd_dequant(dt);
    (fn ? fn : tr->dequantize_ref)(src, y, n);
}

void tm__quantize_row(tm_dtype dt, const float *x, void *dst, int64_t n)
{
    const tm__qtraits *tr = tm__qtraits_of(dt);
    if (tr && !tm__qact_quantize(dt, x, dst, n)) tr->quantize_ref(x, dst, n);
}
