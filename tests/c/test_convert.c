/* test_convert.c — dtype conversions against numpy-generated references,
 * plus bit-level F16/BF16 properties. */
#include "ref_dispatch.h"

#include "../../tensor/core/tensor_impl.h"

TEST(convert_matches_numpy_reference)
{
    tt_run_ref_file("convert.ref", tt_convert_dispatch);
}

TEST(f16_round_trips_every_bit_pattern)
{
    /* f16 -> f32 is exact, so converting back must give the same bits for
     * every non-NaN pattern, and a NaN for every NaN pattern. */
    int bad = 0;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = tm__f16_to_f32((uint16_t)h);
        uint16_t back = tm__f32_to_f16(f);
        uint16_t back64 = tm__f64_to_f16((double)f);
        bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan ? !(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff))
                   : (back != h || back64 != h))
            bad++;
    }
    CHECK_INT(bad, 0);
}

TEST(bf16_round_trips_and_keeps_nan)
{
    int bad = 0;
    for (uint32_t b = 0; b <= 0xffff; b++) {
        float f = tm__bf16_to_f32((uint16_t)b);
        bool is_nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f);
        uint16_t back = tm__f32_to_bf16(f), back64 = tm__f64_to_bf16(f);
        if (is_nan ? !(isnan(tm__bf16_to_f32(back)) &&
                       isnan(tm__bf16_to_f32(back64)))
                   : (back != b || back64 != b))
            bad++;
    }
    CHECK_INT(bad, 0);
    /* a NaN whose payload lives only in the low 16 bits must stay NaN */
    uint32_t bits = 0x7f800001;
    float nan_low;
    memcpy(&nan_low, &bits, 4);
    CHECK(isnan(tm__bf16_to_f32(tm__f32_to_bf16(nan_low))));
}

TEST(f16_ties_round_to_even)
{
    /* 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: even is 1.0 */
    CHECK_INT(tm__f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    /* 1 + 3*2^-11 lies halfway between 1+2^-10 and 1+2^-9: even is the
     * latter (mantissa 2) */
    CHECK_INT(tm__f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* slightly above the tie rounds up even from double */
    CHECK_INT(tm__f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
    CHECK_INT(tm__f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    CHECK_INT(tm__f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
}

TEST(to_dtype_rejects_bad_dtypes)
{
    tm_tensor *a = tm_zeros((int64_t[]){2}, 1, TM_F32);
    CHECK_NULL_ERR(tm_to_dtype(a, TM_Q4_0), TM_EDTYPE,
                   "cannot convert f32 to q4_0: use tm_quantize");
    CHECK_NULL_ERR(tm_to_dtype(a, (tm_dtype)77), TM_EDTYPE, "dtype 77");
    CHECK_NULL_ERR(tm_to_dtype(NULL, TM_F32), TM_EINVAL,
                   "tm_to_dtype: tensor is NULL");
    tm_free(a);
}
