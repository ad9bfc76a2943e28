/*
 * quant_rows.c — the row quantizer and dequantizer the CPU backend uses:
 * per dtype, the fastest implementation this CPU runs, byte- (quantize)
 * and bit- (dequantize) identical to the references in quantize/.
 */
#include "../../quantize/quant_impl.h"

void tm__dequantize_row(tm_dtype dt, const void *src, float *y, int64_t n)
{
    const tm__qtraits *tr = tm__qtraits_of(dt);
    if (tr) tr->dequantize_ref(src, y, n);
}

void tm__quantize_row(tm_dtype dt, const float *x, void *dst, int64_t n)
{
    const tm__qtraits *tr = tm__qtraits_of(dt);
    if (tr) tr->quantize_ref(x, dst, n);
}
