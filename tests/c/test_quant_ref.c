/* test_quant_ref.c — the quantized dtypes' traits table, hand-built blocks
 * decoded by the reference dequantizers (expected values worked out by
 * hand from the published layouts), and every format's round-trip error
 * within its bound on Gaussian and heavy-tailed data.  The byte-exact
 * comparisons with independent implementations are test_quant_formats.c. */
#include "harness.h"
#include "../../quantize/quant_impl.h"
#include "quant_bounds.h"

#include <stdlib.h>

static const tm_dtype all_q[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q8_1, TM_Q5_0,
                                 TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K, TM_Q8_K};

TEST(quant_traits_cover_every_quantized_dtype)
{
    static const struct {
        tm_dtype dt;
        const char *name;
        int64_t block;
        size_t bytes;
        tm_dtype act;
        bool weight;
    } want[] = {
        {TM_Q8_0, "q8_0", 32, 34, TM_Q8_0, true},
        {TM_Q4_0, "q4_0", 32, 18, TM_Q8_0, true},
        {TM_Q4_1, "q4_1", 32, 20, TM_Q8_1, true},
        {TM_Q8_1, "q8_1", 32, 36, TM_Q8_1, false},
        {TM_Q5_0, "q5_0", 32, 22, TM_Q8_0, true},
        {TM_Q5_1, "q5_1", 32, 24, TM_Q8_1, true},
        {TM_Q4_K, "q4_k", 256, 144, TM_Q8_K, true},
        {TM_Q5_K, "q5_k", 256, 176, TM_Q8_K, true},
        {TM_Q6_K, "q6_k", 256, 210, TM_Q8_K, true},
        {TM_Q8_K, "q8_k", 256, 292, TM_Q8_K, false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const tm__qtraits *t = tm__qtraits_of(want[i].dt);
        REQUIRE(t);
        CHECK_INT(t->dtype, want[i].dt);
        CHECK(strcmp(t->name, want[i].name) == 0);
        CHECK_INT(t->block, want[i].block);
        CHECK_INT(t->bytes, want[i].bytes);
        CHECK_INT(t->act, want[i].act);
        CHECK(t->weight == want[i].weight);
        CHECK(t->quantize_ref && t->dequantize_ref);
    }
    CHECK(tm__qtraits_of(TM_F32) == NULL);
    CHECK(tm__qtraits_of((tm_dtype)31) == NULL);
    CHECK(tm__qtraits_of((tm_dtype)42) == NULL);
}

TEST(quant_half_conversions_round_to_nearest_even)
{
    CHECK_INT(tm__f32_to_half(1.0f), 0x3c00);
    CHECK_INT(tm__f32_to_half(-2.0f), 0xc000);
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even (1) wins */
    CHECK_INT(tm__f32_to_half(1.0f + 0x1p-11f), 0x3c00);
    CHECK_INT(tm__f32_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    CHECK_INT(tm__f32_to_half(65520.0f), 0x7c00); /* rounds to inf */
    CHECK_INT(tm__f32_to_half(0x1p-25f), 0x0000); /* tie to even: 0 */
    CHECK_INT(tm__f32_to_half(0x1p-24f * 1.5f), 0x0002);
    CHECK(tm__half_to_f32(0x3555) == 0x1.554p-2f);
    CHECK(tm__half_to_f32(0x0001) == 0x1p-24f);
}

/* Hand-built blocks: d = 0.5 (half 0x3800), m = -1 (0xbc00). */
TEST(quant_dequantize_hand_built_32_value_blocks)
{
    float y[32];
    tm__block_q8_0 b8 = {.d = 0x3800};
    for (int i = 0; i < 32; i++) b8.qs[i] = (int8_t)(i - 16);
    tm__qtraits_of(TM_Q8_0)->dequantize_ref(&b8, y, 32);
    for (int i = 0; i < 32; i++) CHECK(y[i] == 0.5f * (i - 16));

    /* Q4_0: byte j = value j (low nibble) | value j + 16 (high nibble) */
    tm__block_q4_0 b4 = {.d = 0x3800};
    for (int j = 0; j < 16; j++) b4.qs[j] = (uint8_t)(j | (15 - j) << 4);
    tm__qtraits_of(TM_Q4_0)->dequantize_ref(&b4, y, 32);
    for (int j = 0; j < 16; j++) {
        CHECK(y[j] == 0.5f * (j - 8));
        CHECK(y[j + 16] == 0.5f * (15 - j - 8));
    }

    tm__block_q4_1 b41 = {.d = 0x3800, .m = 0xbc00};
    memcpy(b41.qs, b4.qs, 16);
    tm__qtraits_of(TM_Q4_1)->dequantize_ref(&b41, y, 32);
    for (int j = 0; j < 16; j++) {
        CHECK(y[j] == 0.5f * j - 1.0f);
        CHECK(y[j + 16] == 0.5f * (15 - j) - 1.0f);
    }

    /* Q5_0: the fifth bit of value i is bit i of qh (little-endian) */
    tm__block_q5_0 b5 = {.d = 0x3800, .qh = {0x01, 0x00, 0x00, 0x80}};
    memcpy(b5.qs, b4.qs, 16);
    tm__qtraits_of(TM_Q5_0)->dequantize_ref(&b5, y, 32);
    CHECK(y[0] == 0.5f * (0 + 16 - 16));
    CHECK(y[1] == 0.5f * (1 - 16));
    CHECK(y[31] == 0.5f * (0 + 16 - 16)); /* value 31: high nibble 0 */
    CHECK(y[16] == 0.5f * (15 - 16));

    tm__block_q5_1 b51 = {.d = 0x3800, .m = 0xbc00,
                          .qh = {0x00, 0x00, 0x01, 0x00}};
    memcpy(b51.qs, b4.qs, 16);
    tm__qtraits_of(TM_Q5_1)->dequantize_ref(&b51, y, 32);
    CHECK(y[16] == 0.5f * (15 + 16) - 1.0f); /* bit 16 set */
    CHECK(y[17] == 0.5f * 14 - 1.0f);
}

/* Q4_K: sub-block j has scale j + 1 and min 2j (6-bit, packed as the
 * header describes); values 0..15 repeat. */
TEST(quant_dequantize_hand_built_q4_k_block)
{
    tm__block_q4_K b = {.d = 0x3800, .dmin = 0x3c00};
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)(j + 1 + (j >= 4 ? 40 : 0)); /* >= 16: high bits */
        mn[j] = (uint8_t)(2 * j + (j >= 4 ? 33 : 0));
    }
    for (int j = 0; j < 4; j++) {
        b.scales[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        b.scales[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        b.scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
    for (int g = 0; g < 4; g++)
        for (int l = 0; l < 32; l++)
            b.qs[32 * g + l] = (uint8_t)((l & 15) | (15 - (l & 15)) << 4);
    float y[256];
    tm__qtraits_of(TM_Q4_K)->dequantize_ref(&b, y, 256);
    for (int i = 0; i < 256; i++) {
        const int j = i / 32, l = i % 32;
        const int q = (j % 2 == 0) ? (l & 15) : 15 - (l & 15);
        const float want = (0.5f * sc[j]) * q - 1.0f * mn[j];
        CHECK(y[i] == want);
    }
}

/* Q6_K: scale of value i is scales[i / 16]; q at value i from the
 * interleave in quant_blocks.h, set here for q = (i * 7) % 64. */
TEST(quant_dequantize_hand_built_q6_k_block)
{
    tm__block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800;
    for (int s = 0; s < 16; s++) b.scales[s] = (int8_t)(s - 8);
    for (int i = 0; i < 256; i++) {
        const int q = (i * 7) % 64, h = i / 128, r = i % 128;
        const int l = r % 32, part = r / 32; /* part 0..3 */
        uint8_t *ql = b.ql + 64 * h, *qh = b.qh + 32 * h;
        const int qli = l + (part & 1) * 32;
        ql[qli] |= (uint8_t)((q & 15) << (part >= 2 ? 4 : 0));
        qh[l] |= (uint8_t)((q >> 4) << (2 * part));
    }
    float y[256];
    tm__qtraits_of(TM_Q6_K)->dequantize_ref(&b, y, 256);
    for (int i = 0; i < 256; i++) {
        const float want = (0.5f * (float)(i / 16 - 8)) * ((i * 7) % 64 - 32);
        CHECK(y[i] == want);
    }
}

/* ------------------------------------------------------- round trips */

static uint64_t rng_state;
static double uniform01(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return ((rng_state >> 11) + 0.5) * 0x1p-53;
}
static float gaussian(void)
{
    return (float)(sqrt(-2 * log(uniform01())) * cos(6.283185307179586 *
                                                      uniform01()));
}
/* Student-t with 3 degrees of freedom: heavy tails, as trained weights
 * often have a few. */
static float student_t3(void)
{
    double z = gaussian(), c = 0;
    for (int k = 0; k < 3; k++) {
        double g = gaussian();
        c += g * g;
    }
    return (float)(z / sqrt(c / 3));
}

static void check_round_trip_32(tm_dtype dt, float (*gen)(void))
{
    const tm__qtraits *t = tm__qtraits_of(dt);
    enum { N = 32 * 64 };
    float x[N], y[N];
    _Alignas(16) unsigned char q[64 * 36];
    for (int i = 0; i < N; i++) x[i] = gen();
    t->quantize_ref(x, q, N);
    t->dequantize_ref(q, y, N);
    const int64_t bad = tt_quant_bound_violations(dt, x, y, N);
    if (bad) tt_fail(__FILE__, __LINE__, "%s: %lld values beyond the bound",
                     t->name, (long long)bad);
}

TEST(quant_32_value_formats_round_trip_within_bound)
{
    static const tm_dtype fmts[] = {TM_Q8_0, TM_Q8_1, TM_Q4_0, TM_Q4_1,
                                    TM_Q5_0, TM_Q5_1};
    rng_state = 1;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        check_round_trip_32(fmts[i], gaussian);
        check_round_trip_32(fmts[i], student_t3);
    }
}

/* Q8_K: the extreme maps to -127 exactly and the rest round to nearest,
 * so |x - deq| <= d / 2 (d = amax / 127) plus F32 rounding. */
TEST(quant_q8_k_round_trips_within_half_a_step)
{
    const tm__qtraits *t = tm__qtraits_of(TM_Q8_K);
    float x[512], y[512];
    tm__block_q8_K q[2];
    rng_state = 7;
    for (int i = 0; i < 512; i++) x[i] = student_t3();
    t->quantize_ref(x, q, 512);
    t->dequantize_ref(q, y, 512);
    for (int b = 0; b < 2; b++) {
        float amax = 0;
        for (int i = 0; i < 256; i++) amax = fmaxf(amax, fabsf(x[256 * b + i]));
        const double bound = amax / 127.0 * 0.5 + 4 * 0x1p-24 * amax;
        int bad = 0, sum_ok = 1;
        for (int i = 256 * b; i < 256 * b + 256; i++)
            bad += fabs((double)x[i] - y[i]) > bound;
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int k = 0; k < 16; k++) s += q[b].qs[16 * j + k];
            sum_ok &= s == q[b].bsums[j];
        }
        CHECK_INT(bad, 0);
        CHECK(sum_ok);
    }
}

/* K-quants: the per-super-block RMS bound of quant_bounds.h. */
static void check_round_trip_k(tm_dtype dt, float (*gen)(void))
{
    const tm__qtraits *t = tm__qtraits_of(dt);
    enum { N = 256 * 16 };
    float x[N], y[N];
    _Alignas(16) unsigned char q[16 * 210];
    for (int i = 0; i < N; i++) x[i] = gen();
    t->quantize_ref(x, q, N);
    t->dequantize_ref(q, y, N);
    const int64_t bad = tt_quant_bound_violations(dt, x, y, N);
    if (bad)
        tt_fail(__FILE__, __LINE__, "%s: %lld super-blocks beyond the bound",
                t->name, (long long)bad);
}

TEST(quant_k_quants_round_trip_within_bound)
{
    static const tm_dtype fmts[] = {TM_Q4_K, TM_Q5_K, TM_Q6_K};
    rng_state = 3;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        check_round_trip_k(fmts[i], gaussian);
        check_round_trip_k(fmts[i], student_t3);
    }
}

/* All-zero input is all-zero output for every format (ggml's too). */
TEST(quant_zeros_round_trip_to_zeros)
{
    float x[256] = {0}, y[256];
    _Alignas(16) unsigned char q[292];
    for (size_t i = 0; i < sizeof all_q / sizeof all_q[0]; i++) {
        const tm__qtraits *t = tm__qtraits_of(all_q[i]);
        memset(y, 0x7f, sizeof y);
        t->quantize_ref(x, q, 256);
        t->dequantize_ref(q, y, 256);
        int nz = 0;
        for (int k = 0; k < 256; k++) nz += y[k] != 0.0f;
        if (nz) tt_fail(__FILE__, __LINE__, "%s: %d nonzero", t->name, nz);
    }
}

/* Non-finite inputs reach no undefined conversion (UBSan runs this) and
 * leave the other blocks of the row alone. */
TEST(quant_non_finite_inputs_are_defined)
{
    float x[512], y[512];
    _Alignas(16) unsigned char q[2 * 292];
    for (int i = 0; i < 512; i++) x[i] = (float)(i % 7) - 3.0f;
    x[3] = NAN;
    x[100] = INFINITY;
    x[200] = -INFINITY;
    for (size_t i = 0; i < sizeof all_q / sizeof all_q[0]; i++) {
        const tm__qtraits *t = tm__qtraits_of(all_q[i]);
        t->quantize_ref(x, q, 512);
        t->dequantize_ref(q, y, 512);
        CHECK(fabsf(y[400] - x[400]) <= 3.0f / 7.0f + 1e-6f);
    }
}

/* ------------------------------------------- SIMD against reference */

#include "../../cpu/cpu_features.h"

/* Every kernel family this CPU runs decodes random bytes (any pattern is a
 * block; halves that are NaN, Inf or subnormal included) bit for bit as
 * the reference does (a NaN matches any NaN). */
TEST(quant_simd_dequantizers_match_reference_on_random_bytes)
{
    enum { NB = 96 };
    static const tm_dtype fmts[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                    TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K};
    const tm__isa best = tm__cpu_isa();
    int families = 0;
    rng_state = 11;
    for (int isa = 0; isa < TM__ISA_COUNT; isa++) {
        if (!tm__set_isa((tm__isa)isa)) continue;
        families++;
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
            const tm__qtraits *t = tm__qtraits_of(fmts[f]);
            const size_t nbytes = NB * t->bytes;
            const int64_t n = NB * t->block;
            unsigned char *q = malloc(nbytes);
            float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
            REQUIRE(q && a && b);
            for (size_t i = 0; i < nbytes; i++)
                q[i] = (unsigned char)(uniform01() * 256);
            t->dequantize_ref(q, a, n);
            tm__dequantize_row(t->dtype, q, b, n);
            int64_t bad = 0, nan = 0;
            for (int64_t i = 0; i < n; i++) {
                uint32_t x, y;
                memcpy(&x, &a[i], 4);
                memcpy(&y, &b[i], 4);
                nan += a[i] != a[i];
                if (x != y && !(a[i] != a[i] && b[i] != b[i])) bad++;
            }
            if (bad)
                tt_fail(__FILE__, __LINE__, "%s on %s: %lld values differ",
                        t->name, tm__isa_name((tm__isa)isa), (long long)bad);
            /* random halves are NaN/Inf 1 time in 32: some must be here */
            CHECK(nan > 0);
            free(q);
            free(a);
            free(b);
        }
    }
    tm__set_isa(best);
    CHECK(families >= 1);
}
