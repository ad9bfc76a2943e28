/* test_quant_rows.c — tm_quantize_rows / tm_dequantize_rows: the same
 * bytes and values for any thread count and row split as one reference
 * call over the whole buffer, and every bad argument a clear error that
 * leaves dst untouched. */
#include "harness.h"
#include "../../quantize/quant_impl.h"

#include <stdlib.h>

static float wave(int64_t i) { return (float)sin(0.37 * (double)i) * 0.1f; }

TEST(quant_rows_equal_one_reference_call_for_any_thread_count)
{
    static const tm_dtype fmts[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                    TM_Q5_1, TM_Q8_1, TM_Q4_K, TM_Q5_K,
                                    TM_Q6_K, TM_Q8_K};
    enum { ROWS = 37, N = 512 };
    float *x = malloc(ROWS * N * sizeof *x), *y = malloc(ROWS * N * sizeof *y);
    float *y0 = malloc(ROWS * N * sizeof *y0);
    unsigned char *q = malloc(ROWS * N / 256 * 292);
    unsigned char *q0 = malloc(ROWS * N / 256 * 292);
    REQUIRE(x && y && y0 && q && q0);
    for (int64_t i = 0; i < ROWS * N; i++) x[i] = wave(i);
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        const tm__qtraits *t = tm__qtraits_of(fmts[f]);
        const size_t nb = ROWS * N / (size_t)t->block * t->bytes;
        t->quantize_ref(x, q0, ROWS * N);
        t->dequantize_ref(q0, y0, ROWS * N);
        for (int threads = 1; threads <= 4; threads += 3) {
            tm_set_num_threads(threads);
            memset(q, 0, nb);
            CHECK_INT(tm_quantize_rows(t->dtype, x, q, ROWS, N), TM_OK);
            CHECK(memcmp(q, q0, nb) == 0);
            CHECK_INT(tm_dequantize_rows(t->dtype, q, y, ROWS, N), TM_OK);
            CHECK(memcmp(y, y0, ROWS * N * sizeof *y) == 0);
        }
        tm_set_num_threads(0);
    }
    free(x);
    free(y);
    free(y0);
    free(q);
    free(q0);
}

TEST(quant_rows_accept_empty_input)
{
    float x[1] = {0};
    _Alignas(16) unsigned char q[1] = {0x5a};
    CHECK_INT(tm_quantize_rows(TM_Q4_0, x, q, 0, 32), TM_OK);
    CHECK_INT(tm_quantize_rows(TM_Q4_K, x, q, 3, 0), TM_OK);
    CHECK_INT(tm_dequantize_rows(TM_Q6_K, q, x, 0, 256), TM_OK);
    CHECK_INT(q[0], 0x5a);
}

TEST(quant_rows_errors_name_the_problem)
{
    float x[64], y[64];
    _Alignas(16) unsigned char q[64];
    for (int i = 0; i < 64; i++) x[i] = 0.5f;
    CHECK_STATUS(tm_quantize_rows(TM_F32, x, q, 1, 32), TM_EDTYPE,
                 "tm_quantize_rows: dtype f32 (0) is not a quantized dtype");
    CHECK_STATUS(tm_dequantize_rows((tm_dtype)99, q, y, 1, 32), TM_EDTYPE,
                 "(99) is not a quantized dtype");
    CHECK_STATUS(tm_quantize_rows(TM_Q8_0, NULL, q, 1, 32), TM_EINVAL,
                 "tm_quantize_rows: src is NULL");
    CHECK_STATUS(tm_dequantize_rows(TM_Q8_0, q, NULL, 1, 32), TM_EINVAL,
                 "tm_dequantize_rows: dst is NULL");
    CHECK_STATUS(tm_quantize_rows(TM_Q8_0, x, q, -1, 32), TM_EINVAL,
                 "rows (-1) and n (32) must be >= 0");
    CHECK_STATUS(tm_quantize_rows(TM_Q8_0, x, q, 1, -32), TM_EINVAL,
                 "rows (1) and n (-32) must be >= 0");
    CHECK_STATUS(tm_quantize_rows(TM_Q4_1, x, q, 2, 48), TM_ESHAPE,
                 "tm_quantize_rows: a row of 48 values is not a whole "
                 "number of q4_1 blocks of 32");
    CHECK_STATUS(tm_dequantize_rows(TM_Q4_K, q, y, 1, 32), TM_ESHAPE,
                 "a row of 32 values is not a whole number of q4_k blocks "
                 "of 256");
    float xa[80];
    const float *odd = (const float *)(const void *)((const char *)xa + 2);
    CHECK_STATUS(tm_quantize_rows(TM_Q8_0, odd, q, 1, 32), TM_EINVAL,
                 "the q8_0 buffer must be 2-byte aligned and the float "
                 "buffer 4-byte aligned");
    CHECK_STATUS(tm_dequantize_rows(TM_Q8_K, q + 2, y, 1, 256), TM_EINVAL,
                 "the q8_k buffer must be 4-byte aligned");
    CHECK_STATUS(tm_quantize_rows(TM_Q8_0, x, q, INT64_MAX / 64, 64),
                 TM_EINVAL, "overflow the address space");
}

/* Non-finite input: TM_EINVAL naming the first bad value's row and column
 * (rows in order, whatever the threads), dst untouched. */
TEST(quant_rows_reject_non_finite_values_before_writing)
{
    enum { ROWS = 8, N = 64 };
    float x[ROWS * N];
    _Alignas(16) unsigned char q[ROWS * N];
    for (int i = 0; i < ROWS * N; i++) x[i] = 1.0f;
    x[6 * N + 40] = INFINITY;
    x[2 * N + 17] = NAN;
    memset(q, 0x5a, sizeof q);
    tm_set_num_threads(4);
    CHECK_STATUS(tm_quantize_rows(TM_Q8_0, x, q, ROWS, N), TM_EINVAL,
                 "tm_quantize_rows: value nan at row 2, column 17 is not "
                 "finite; a q8_0 block scale cannot hold it");
    tm_set_num_threads(0);
    int touched = 0;
    for (size_t i = 0; i < sizeof q; i++) touched += q[i] != 0x5a;
    CHECK_INT(touched, 0);
    x[2 * N + 17] = 1.0f;
    CHECK_STATUS(tm_quantize_rows(TM_Q4_K, x, q, 1, 256 * 2), TM_EINVAL,
                 "value inf at row 0, column 424 is not finite");
}

/* Values a half cannot scale: ggml's bytes (an infinite scale) are
 * written, and the call says so. */
TEST(quant_rows_report_block_scales_that_overflow)
{
    float x[64];
    _Alignas(16) unsigned char q[64 * 2];
    for (int i = 0; i < 64; i++) x[i] = 1.0f;
    x[40] = 1e6f; /* q4_0: d = 1e6 / 8 > 65504 */
    CHECK_STATUS(tm_quantize_rows(TM_Q4_0, x, q, 2, 32), TM_ERANGE,
                 "tm_quantize_rows: row 1 has values too large for q4_0's "
                 "half-precision block scale");
    CHECK_INT(tm_quantize_rows(TM_Q8_0, x, q, 2, 32), TM_OK); /* 1e6/127 */
    CHECK_INT(tm_quantize_rows(TM_Q8_K, x, q, 1, 0), TM_OK);
}
