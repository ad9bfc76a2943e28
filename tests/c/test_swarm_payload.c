/* The swarm's sparse payload (round trips and every refusal) and DGC's
 * accumulator (swarm/compress.h) against hand-worked and loop
 * references. */
#include "harness.h"
#include "swarm_test_util.h"

#include "../../swarm/compress.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <stdint.h>
#include <stdlib.h>

/* ------------------------------------------------------ sparse payload */

/* F32 -> F16 bits, round to nearest even, by arithmetic in double (not
 * bit tricks, so it does not share tm__f32_to_f16's method). */
static uint16_t ref_f16(float f)
{
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (isnan(f)) return 0x7e00;
    if (a >= 65520.0) return sign | 0x7c00; /* 65504 + half an ulp and up */
    if (a < 0x1p-14) {                      /* subnormal: units of 2^-24 */
        double m = nearbyint(a * 0x1p24);   /* ties to even */
        return sign | (uint16_t)m;          /* 1024 is the smallest normal */
    }
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    double m = nearbyint(ldexp(a, 11 - e)); /* 11 bits, [1024, 2048] */
    int be = e - 1 + 15;
    if (m == 2048) {
        m = 1024;
        be++;
    }
    if (be >= 31) return sign | 0x7c00;
    return sign | (uint16_t)(be << 10) | (uint16_t)((int)m - 1024);
}
static float ref_f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (float)((h & 0x8000) ? -v : v);
}

TEST(sparse_round_trip_f32_keeps_every_bit)
{
    int64_t n = (int64_t)1 << 62, k = 300;
    int64_t *idx = malloc(8 * (size_t)k), *got_i = malloc(8 * (size_t)k);
    float *val = malloc(4 * (size_t)k), *got_v = malloc(4 * (size_t)k);
    uint64_t s = 3;
    int64_t at = 0;
    for (int64_t i = 0; i < k; i++) {
        /* gaps of 1 byte to 6 bytes of varint, and the last index n - 1 */
        int64_t gap = 1 + (int64_t)(rng_next(&s) % ((uint64_t)1 << (7 * (i % 6 + 1))));
        at = i == 0 ? 0 : at + gap;
        idx[i] = i == k - 1 ? n - 1 : at;
        val[i] = i % 7 == 0 ? -0.0f : i % 11 == 0 ? 1e-45f : rng_normal(&s);
    }
    size_t cap = tm__sparse_max_bytes(k, TM__SPARSE_F32), len = 0;
    uint8_t *buf = malloc(cap);
    REQUIRE(tm__sparse_encode(n, k, idx, val, TM__SPARSE_F32, buf, cap, &len) == TM_OK);
    /* header 20, values 4 each, at least one varint byte each */
    CHECK(len >= 20 + 5 * (size_t)k && len <= cap);
    CHECK_INT(buf[16], TM__SPARSE_F32);
    int64_t got_k = -1;
    REQUIRE(tm__sparse_decode(buf, len, n, k, &got_k, got_i, got_v) == TM_OK);
    CHECK_INT(got_k, k);
    for (int64_t i = 0; i < k; i++) {
        CHECK_INT(got_i[i], idx[i]);
        CHECK_INT(bits_of(got_v[i]), bits_of(val[i]));
    }
    /* k = 0 is a 20-byte header */
    REQUIRE(tm__sparse_encode(10, 0, idx, val, TM__SPARSE_F32, buf, cap, &len) == TM_OK);
    CHECK_INT(len, 20);
    REQUIRE(tm__sparse_decode(buf, len, 10, 0, &got_k, got_i, got_v) == TM_OK);
    CHECK_INT(got_k, 0);
    free(buf);
    free(idx);
    free(got_i);
    free(val);
    free(got_v);
}

TEST(sparse_round_trip_f16_rounds_to_nearest_even)
{
    enum { K = 4000 };
    static int64_t idx[K], got_i[K];
    static float val[K], got_v[K];
    uint64_t s = 5;
    /* halfway cases first: 1 + 2^-11 -> 1 (even), 1 + 3 * 2^-11 -> 1 + 2^-9,
     * subnormal halves 2^-25 -> 0 and 3 * 2^-25 -> 2^-23, 65519 -> 65504,
     * a float subnormal -> 0, -0 -> -0, the largest and smallest F16 */
    static const float edge[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
                                 0x1p-25f, 3 * 0x1p-25f, 65519.0f, 1e-40f,
                                 -0.0f, 65504.0f, -0x1p-24f, 0x1p-14f,
                                 0x1.ffcp-15f, 2049.0f, 2051.0f, -1e-8f};
    int ne = (int)(sizeof edge / sizeof *edge);
    for (int i = 0; i < K; i++) {
        idx[i] = 3 * i + 1;
        if (i < ne) val[i] = edge[i];
        else if (i % 3 == 0) val[i] = float_of((uint32_t)rng_next(&s) & 0x807fffffu); /* tiny */
        else {
            /* any float whose magnitude F16 can hold */
            float f;
            do f = float_of((uint32_t)rng_next(&s));
            while (!(fabsf(f) < 65504.0f && fabsf(f) > 1e-9f));
            val[i] = f;
        }
    }
    size_t cap = tm__sparse_max_bytes(K, TM__SPARSE_F16), len = 0;
    uint8_t *buf = malloc(cap);
    REQUIRE(tm__sparse_encode(3 * K + 1, K, idx, val, TM__SPARSE_F16, buf, cap, &len) == TM_OK);
    CHECK_INT(buf[16], TM__SPARSE_F16);
    int64_t k = 0;
    REQUIRE(tm__sparse_decode(buf, len, 3 * K + 1, K, &k, got_i, got_v) == TM_OK);
    CHECK_INT(k, K);
    for (int i = 0; i < K; i++) {
        uint16_t h = ref_f16(val[i]);
        float want = ref_f16_value(h);
        CHECK_INT(got_i[i], idx[i]);
        if (bits_of(got_v[i]) != bits_of(want)) {
            tt_fail(__FILE__, __LINE__, "F16 of %a is %a, reference %a", (double)val[i],
                    (double)got_v[i], (double)want);
            break;
        }
    }
    CHECK(got_v[0] == 1.0f);
    CHECK(got_v[1] == 1.0f + 0x1p-9f);
    CHECK(got_v[2] == 0.0f);
    CHECK(got_v[3] == 0x1p-23f);
    CHECK(got_v[4] == 65504.0f);
    CHECK(bits_of(got_v[6]) == 0x80000000u);
    CHECK(got_v[11] == 2048.0f && got_v[12] == 2052.0f);
    free(buf);
}

TEST(sparse_f16_overflow_becomes_inf_and_is_refused)
{
    int64_t idx[2] = {0, 4}, got_i[2];
    float val[2] = {1.0f, 65520.0f}, got_v[2];
    uint8_t buf[64];
    size_t len;
    REQUIRE(tm__sparse_encode(8, 2, idx, val, TM__SPARSE_F16, buf, sizeof buf, &len) == TM_OK);
    CHECK_INT(buf[len - 2] | buf[len - 1] << 8, 0x7c00);
    int64_t k;
    CHECK_STATUS(tm__sparse_decode(buf, len, 8, 2, &k, got_i, got_v), TM_EFORMAT,
                 "value 1 is not finite");
    val[1] = -1e6f;
    REQUIRE(tm__sparse_encode(8, 2, idx, val, TM__SPARSE_F16, buf, sizeof buf, &len) == TM_OK);
    CHECK_INT(buf[len - 2] | buf[len - 1] << 8, 0xfc00);
    CHECK_STATUS(tm__sparse_decode(buf, len, 8, 2, &k, got_i, got_v), TM_EFORMAT,
                 "value 1 is not finite");
}

/* A payload built by hand: header, raw index bytes, raw value bytes. */
typedef struct raw {
    uint8_t b[128];
    size_t len;
} raw;

static void raw_head(raw *r, uint64_t n, uint64_t k, int dtype)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 8; i++) {
        r->b[i] = (uint8_t)(n >> 8 * i);
        r->b[8 + i] = (uint8_t)(k >> 8 * i);
    }
    r->b[16] = (uint8_t)dtype;
    r->len = 20;
}
static void raw_bytes(raw *r, const uint8_t *p, size_t n)
{
    memcpy(r->b + r->len, p, n);
    r->len += n;
}
static void raw_f32(raw *r, float f)
{
    memcpy(r->b + r->len, &f, 4);
    r->len += 4;
}

static tm_status decode(const raw *r, int64_t n, int64_t kmax)
{
    int64_t k, idx[16];
    float val[16];
    return tm__sparse_decode(r->b, r->len, n, kmax, &k, idx, val);
}

TEST(sparse_decode_accepts_a_hand_built_payload)
{
    raw r;
    raw_head(&r, 300, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0x05, 0xa3, 0x01}, 3); /* 5, then +163 */
    raw_f32(&r, 1.5f);
    raw_f32(&r, -2.0f);
    int64_t k, idx[2];
    float val[2];
    REQUIRE(tm__sparse_decode(r.b, r.len, 300, 2, &k, idx, val) == TM_OK);
    CHECK_INT(k, 2);
    CHECK_INT(idx[0], 5);
    CHECK_INT(idx[1], 168);
    CHECK(val[0] == 1.5f && val[1] == -2.0f);
}

TEST(sparse_decode_refuses_header_problems)
{
    raw r;
    raw_head(&r, 10, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){3}, 1);
    raw_f32(&r, 1);
    CHECK_INT(decode(&r, 10, 1), TM_OK);
    CHECK_STATUS(decode(&r, 11, 1), TM_EFORMAT, "sparse payload for 10 values, expected 11");
    CHECK_STATUS(decode(&r, 10, 0), TM_EFORMAT, "1 entries, at most 0 allowed");
    raw_head(&r, 10, (uint64_t)1 << 63, TM__SPARSE_F32); /* a k beyond int64 */
    CHECK_STATUS(decode(&r, 10, 16), TM_EFORMAT, "at most 16 allowed");
    raw_head(&r, 10, 1, 2);
    raw_bytes(&r, (const uint8_t[]){3}, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 1), TM_EFORMAT, "unknown value type 2");
    raw_head(&r, 10, 1, TM__SPARSE_F32);
    r.b[18] = 1; /* a reserved byte set */
    raw_bytes(&r, (const uint8_t[]){3}, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 1), TM_EFORMAT, "value type");
    raw_head(&r, 10, 1, TM__SPARSE_F32);
    r.len = 19;
    CHECK_STATUS(decode(&r, 10, 1), TM_EFORMAT, "sparse payload of 19 bytes");
    r.len = 0;
    CHECK_STATUS(decode(&r, 10, 1), TM_EFORMAT, "sparse payload of 0 bytes");
}

TEST(sparse_decode_refuses_bad_indices)
{
    raw r;
    /* index 12 of 10 */
    raw_head(&r, 10, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){12}, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 4), TM_EFORMAT, "index 12 out of range for 10 values");
    /* index exactly n */
    raw_head(&r, 10, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){10}, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 4), TM_EFORMAT, "index 10 out of range for 10 values");
    /* 4 then +6 = 10: out of range through the delta */
    raw_head(&r, 10, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){4, 6}, 2);
    raw_f32(&r, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 4), TM_EFORMAT, "index 10 out of range for 10 values");
    /* a delta that wraps 64 bits: 5, then + (2^64 - 1) */
    raw_head(&r, 10, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0x01}, 11);
    raw_f32(&r, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 4), TM_EFORMAT, "out of range for 10 values");
    /* duplicate: 5, then + 0 */
    raw_head(&r, 10, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){5, 0}, 2);
    raw_f32(&r, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 10, 4), TM_EFORMAT, "duplicate index 5");
    /* the first index 0 is fine (a delta of 0 only matters after it) */
    raw_head(&r, 10, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0, 1}, 2);
    raw_f32(&r, 1);
    raw_f32(&r, 1);
    CHECK_INT(decode(&r, 10, 4), TM_OK);
}

TEST(sparse_decode_refuses_noncanonical_and_overlong_varints)
{
    raw r;
    /* 3 written as 0x83 0x00: a trailing zero group */
    raw_head(&r, 1000, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0x83, 0x00}, 2);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "non-canonical varint at entry 0");
    /* 0 written as 0x80 0x80 0x00 */
    raw_head(&r, 1000, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0x01, 0x80, 0x80, 0x00}, 4);
    raw_f32(&r, 1);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "non-canonical varint at entry 1");
    /* eleven bytes */
    raw_head(&r, 1000, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                    0x80, 0x80, 0x80, 0x01}, 11);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "delta of entry 0 is over 64 bits");
    /* ten bytes whose last carries more than bit 63 */
    raw_head(&r, 1000, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                    0x80, 0x80, 0x02}, 10);
    raw_f32(&r, 1);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "delta of entry 0 is over 64 bits");
}

TEST(sparse_decode_refuses_truncation_trailing_bytes_and_non_finite)
{
    raw r;
    /* the varint runs off the end */
    raw_head(&r, 1000, 1, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){0x85}, 1);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "indices truncated");
    /* k says 3, two indices present */
    raw_head(&r, 1000, 3, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){1, 2}, 2);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "indices truncated");
    /* a value cut short */
    raw_head(&r, 1000, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){1, 2}, 2);
    raw_f32(&r, 1);
    raw_bytes(&r, (const uint8_t[]){0, 0, 0x80}, 3);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "7 value bytes for 2 entries");
    /* one byte too many */
    raw_head(&r, 1000, 2, TM__SPARSE_F32);
    raw_bytes(&r, (const uint8_t[]){1, 2}, 2);
    raw_f32(&r, 1);
    raw_f32(&r, 2);
    CHECK_INT(decode(&r, 1000, 4), TM_OK);
    raw_bytes(&r, (const uint8_t[]){0}, 1);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "9 value bytes for 2 entries");
    /* F16 values: two bytes each */
    raw_head(&r, 1000, 1, TM__SPARSE_F16);
    raw_bytes(&r, (const uint8_t[]){1, 0x00, 0x3c}, 3);
    CHECK_INT(decode(&r, 1000, 4), TM_OK);
    raw_bytes(&r, (const uint8_t[]){0, 0}, 2);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "4 value bytes for 1 entries");
    /* non-finite values: F32 NaN and -inf, F16 NaN */
    static const float bad[] = {NAN, -INFINITY, INFINITY};
    for (int b = 0; b < 3; b++) {
        raw_head(&r, 1000, 2, TM__SPARSE_F32);
        raw_bytes(&r, (const uint8_t[]){1, 2}, 2);
        raw_f32(&r, 1);
        raw_f32(&r, bad[b]);
        CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "value 1 is not finite");
    }
    raw_head(&r, 1000, 1, TM__SPARSE_F16);
    raw_bytes(&r, (const uint8_t[]){1, 0x01, 0x7e}, 3);
    CHECK_STATUS(decode(&r, 1000, 4), TM_EFORMAT, "value 0 is not finite");
}

TEST(sparse_encode_refuses_unsorted_indices_small_buffers_and_bad_dtype)
{
    int64_t idx[3] = {1, 5, 5};
    float val[3] = {1, 2, 3};
    uint8_t buf[128];
    size_t len;
    CHECK_STATUS(tm__sparse_encode(10, 3, idx, val, TM__SPARSE_F32, buf, sizeof buf, &len),
                 TM_EINVAL, "entry 2 is 5");
    idx[2] = 3;
    CHECK_STATUS(tm__sparse_encode(10, 3, idx, val, TM__SPARSE_F32, buf, sizeof buf, &len),
                 TM_EINVAL, "entry 2 is 3");
    idx[2] = 10;
    CHECK_STATUS(tm__sparse_encode(10, 3, idx, val, TM__SPARSE_F32, buf, sizeof buf, &len),
                 TM_EINVAL, "entry 2 is 10");
    idx[0] = -1;
    idx[2] = 7;
    CHECK_STATUS(tm__sparse_encode(10, 3, idx, val, TM__SPARSE_F32, buf, sizeof buf, &len),
                 TM_EINVAL, "entry 0 is -1");
    idx[0] = 1;
    CHECK_STATUS(tm__sparse_encode(10, 3, idx, val, TM__SPARSE_F32, buf, 20, &len),
                 TM_EINVAL, "too small");
    CHECK_STATUS(tm__sparse_encode(10, 3, idx, val, 2, buf, sizeof buf, &len),
                 TM_EINVAL, "dtype 2");
    CHECK_STATUS(tm__sparse_encode(2, 3, idx, val, TM__SPARSE_F32, buf, sizeof buf, &len),
                 TM_EINVAL, "k 3");
    CHECK_INT(tm__sparse_encode(10, 3, idx, val, TM__SPARSE_F32, buf, sizeof buf, &len), TM_OK);
    CHECK_INT(len, 20 + 3 + 12);
}

/* ----------------------------------------------------------------- DGC */

static tm__dgc_opts dgc_opts(double ratio, int64_t warmup, double momentum, double clip)
{
    tm__dgc_opts o = {ratio, warmup, momentum, clip, false};
    return o;
}

/* Sent + residual = everything folded in, exactly: small integers keep
 * every sum exact in F32, and without momentum or clipping the
 * accumulator only adds and moves values. */
TEST(dgc_error_feedback_conserves_every_value_exactly)
{
    enum { N = 5000, ROUNDS = 30 };
    tm__dgc_opts o = dgc_opts(0.01, 3, 0, 0);
    tm__dgc *d = tm__dgc_new(N, &o);
    REQUIRE(d);
    static float g[N], sent[N], folded[N], val[N];
    static int64_t idx[N];
    uint64_t s = 9;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++) {
            g[i] = (float)((int)(rng_next(&s) % 17) - 8);
            folded[i] += g[i];
        }
        int64_t k = -1;
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
        CHECK_INT(k, tm__dgc_k(d, r));
        for (int64_t j = 0; j < k; j++) sent[idx[j]] += val[j];
    }
    const float *v = tm__dgc_residual(d);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += sent[i] + v[i] != folded[i];
    CHECK_INT(bad, 0);
    tm__dgc_free(d);
}

/* With F16 values: every value sent is an F16, and what its rounding
 * lost stays in the residual, so sent + residual is still exactly what
 * was folded in.  The draws have 12 fractional bits and sums up to 270,
 * so every F32 sum is exact while most values need more bits than F16's
 * 11 (dropping the rounding error would break the equality). */
TEST(dgc_f16_rounding_error_stays_in_the_residual)
{
    enum { N = 5000, ROUNDS = 30 };
    tm__dgc_opts o = dgc_opts(0.01, 3, 0, 0);
    o.values_f16 = true;
    tm__dgc *d = tm__dgc_new(N, &o);
    REQUIRE(d);
    static float g[N], val[N];
    static double sent[N], folded[N];
    static int64_t idx[N];
    uint64_t s = 19;
    int not_f16 = 0, rounded = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++) {
            g[i] = (float)((int)(rng_next(&s) % 17) - 8) +
                   (float)(rng_next(&s) % 4096) / 4096.0f;
            folded[i] += g[i];
        }
        int64_t k;
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
        const float *v = tm__dgc_residual(d);
        for (int64_t j = 0; j < k; j++) {
            not_f16 += ref_f16_value(ref_f16(val[j])) != val[j];
            rounded += v[idx[j]] != 0;
            sent[idx[j]] += val[j];
        }
    }
    CHECK_INT(not_f16, 0);
    CHECK(rounded > 1000); /* the rounding is exercised, not dodged */
    const float *v = tm__dgc_residual(d);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += sent[i] + v[i] != folded[i];
    CHECK_INT(bad, 0);
    tm__dgc_free(d);

    /* beyond F16's range: sent as infinity (the receiver refuses it),
     * and no NaN or infinity is left in the residual */
    o = dgc_opts(0.25, 0, 0, 0);
    o.values_f16 = true;
    d = tm__dgc_new(4, &o);
    REQUIRE(d);
    float big[4] = {70000.0f, 1, 2, 3}, bv[1];
    int64_t k, bi[1];
    REQUIRE(tm__dgc_compress(d, big, 0, &k, bi, bv) == TM_OK);
    CHECK_INT(k, 1);
    CHECK_INT(bi[0], 0);
    CHECK(isinf(bv[0]) && bv[0] > 0);
    CHECK(tm__dgc_residual(d)[0] == 0);
    tm__dgc_free(d);
}

/* The same on normal data: each value's sum of what was sent and what
 * remains differs from the plain running sum only by F32 rounding of the
 * accumulations (at most a few ulps of the largest partial sum). */
TEST(dgc_error_feedback_conserves_within_rounding)
{
    enum { N = 20000, ROUNDS = 20 };
    tm__dgc_opts o = dgc_opts(0.001, 0, 0, 0);
    tm__dgc *d = tm__dgc_new(N, &o);
    REQUIRE(d);
    static float g[N], val[N];
    static double sent[N], folded[N], peak[N];
    static int64_t idx[N];
    uint64_t s = 10;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++) {
            g[i] = rng_normal(&s);
            folded[i] += g[i];
        }
        int64_t k;
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
        const float *v = tm__dgc_residual(d);
        for (int i = 0; i < N; i++) peak[i] = fmax(peak[i], fabs(v[i]));
        for (int64_t j = 0; j < k; j++) {
            sent[idx[j]] += val[j];
            peak[idx[j]] = fmax(peak[idx[j]], fabs(val[j]));
        }
    }
    const float *v = tm__dgc_residual(d);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        /* ROUNDS additions, each off by at most half an ulp of a partial
         * sum no larger than peak + |g| (|g| < 9 for these draws) */
        double tol = ROUNDS * 0x1p-24 * (peak[i] + 9);
        double e = fabs(sent[i] + v[i] - folded[i]) / tol;
        /* not fmax: a NaN must fail (and gcc 12 for aarch64 crashed
         * vectorizing the fmax reduction) */
        if (!(e <= worst)) worst = e;
    }
    CHECK(worst <= 1.0);
    tm__dgc_free(d);
}

/* Worked by hand (every value exact in binary): m = 0.5, n = 4, k = 1. */
TEST(dgc_momentum_correction_by_hand)
{
    tm__dgc_opts o = dgc_opts(0.25, 0, 0.5, 0);
    tm__dgc *d = tm__dgc_new(4, &o);
    REQUIRE(d);
    int64_t k, idx[4];
    float val[4];
    const float *v = tm__dgc_residual(d);
    /* u = g = [1 2 3 -4]; v = u; send index 3 (-4); clear v[3], u[3] */
    REQUIRE(tm__dgc_compress(d, (float[]){1, 2, 3, -4}, 0, &k, idx, val) == TM_OK);
    CHECK_INT(k, 1);
    CHECK_INT(idx[0], 3);
    CHECK(val[0] == -4);
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 0);
    /* u = 0.5 [1 2 3 0] + [1 1 -1 1] = [1.5 2 0.5 1]; v = [2.5 4 3.5 1] */
    REQUIRE(tm__dgc_compress(d, (float[]){1, 1, -1, 1}, 1, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 1);
    CHECK(val[0] == 4);
    CHECK(v[0] == 2.5f && v[1] == 0 && v[2] == 3.5f && v[3] == 1);
    /* u = 0.5 [1.5 0 0.5 1] = [0.75 0 0.25 0.5]; v = [3.25 0 3.75 1.5] */
    REQUIRE(tm__dgc_compress(d, (float[]){0, 0, 0, 0}, 2, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 2);
    CHECK(val[0] == 3.75f);
    CHECK(v[0] == 3.25f && v[1] == 0 && v[2] == 0 && v[3] == 1.5f);
    /* u = [0.375 + 2, 0, 0, 0.25]; v = [5.625 0 0 1.75] */
    REQUIRE(tm__dgc_compress(d, (float[]){2, 0, 0, 0}, 3, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 0);
    CHECK(val[0] == 5.625f);
    CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 1.75f);
    tm__dgc_free(d);
}

/* Against a loop written from DGC's algorithm (u = m u + g, v += u, send
 * the top k of v, clear v and u there), in F32 with the same operations:
 * equal bit for bit. */
TEST(dgc_momentum_correction_matches_a_reference_loop)
{
    enum { N = 3000, ROUNDS = 12 };
    tm__dgc_opts o = dgc_opts(0.02, 2, 0.9, 0);
    tm__dgc *d = tm__dgc_new(N, &o);
    REQUIRE(d);
    static float g[N], u[N], v[N], val[N], rval[N];
    static int64_t idx[N], ridx[N];
    uint64_t s = 12;
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++) {
            g[i] = rng_normal(&s);
            u[i] = 0.9f * u[i] + g[i];
            v[i] += u[i];
        }
        double ratio = r < 2 ? pow(0.02, (r + 1) / 2.0) : 0.02;
        int64_t rk = (int64_t)ceil(N * ratio), k;
        REQUIRE(tm__topk_select(v, N, rk, ridx, rval) == TM_OK);
        for (int64_t j = 0; j < rk; j++) u[ridx[j]] = v[ridx[j]] = 0;
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
        CHECK_INT(k, rk);
        for (int64_t j = 0; j < k && j < rk; j++)
            bad += idx[j] != ridx[j] || bits_of(val[j]) != bits_of(rval[j]);
        bad += memcmp(tm__dgc_residual(d), v, sizeof v) != 0;
    }
    CHECK_INT(bad, 0);
    tm__dgc_free(d);
}

/* The clip scales each incoming gradient to norm clip_norm; what is
 * already in the residual is not clipped again. */
TEST(dgc_clips_each_gradient_not_the_residual)
{
    tm__dgc_opts o = dgc_opts(0.25, 0, 0, 5);
    tm__dgc *d = tm__dgc_new(4, &o);
    REQUIRE(d);
    int64_t k, idx[4];
    float val[4];
    const float *v = tm__dgc_residual(d);
    /* norm 10 -> halved: [0 3 4 0]; send 4 */
    REQUIRE(tm__dgc_compress(d, (float[]){0, 6, 8, 0}, 0, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 2);
    CHECK(val[0] == 4);
    CHECK(v[1] == 3);
    /* norm 10 -> [0 0 0 5]; v = [0 3 0 5] (norm 5.8, not clipped) */
    REQUIRE(tm__dgc_compress(d, (float[]){0, 0, 0, 10}, 1, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 3);
    CHECK(val[0] == 5);
    CHECK(v[1] == 3 && v[3] == 0);
    /* under the bound: unchanged (norm 2.5) */
    REQUIRE(tm__dgc_compress(d, (float[]){0, 0, 1.5f, -2}, 2, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 1);
    CHECK(val[0] == 3);
    CHECK(v[2] == 1.5f && v[3] == -2);
    tm__dgc_free(d);

    /* with momentum the clipped gradient is what enters u */
    o = dgc_opts(0.25, 0, 0.5, 1);
    d = tm__dgc_new(4, &o);
    REQUIRE(d);
    v = tm__dgc_residual(d);
    float sc = (float)(1.0 / 5.0); /* clip 1 over norm 5 */
    REQUIRE(tm__dgc_compress(d, (float[]){0, 0, 3, 4}, 0, &k, idx, val) == TM_OK);
    CHECK(val[0] == sc * 4);
    CHECK(v[2] == sc * 3);
    /* u = 0.5 [0 0 3sc 0] + 0; v = 3sc + 0.5 (3sc) */
    REQUIRE(tm__dgc_compress(d, (float[]){0, 0, 0, 0}, 1, &k, idx, val) == TM_OK);
    CHECK_INT(idx[0], 2);
    CHECK(val[0] == sc * 3 + 0.5f * (sc * 3));
    tm__dgc_free(d);
}

/* k / n is ratio^((r + 1) / W) for r < W = warmup_rounds, then ratio;
 * k = ceil(n k/n), at least 1; a negative round (a flush) is all n.
 * The expected values by hand (Python's math.ceil of the same formula). */
TEST(dgc_warmup_schedule)
{
    tm__dgc_opts o = dgc_opts(0.02, 4, 0, 0);
    tm__dgc *d = tm__dgc_new(1000, &o);
    REQUIRE(d);
    CHECK_INT(tm__dgc_k(d, 0), 377); /* 0.02^0.25 = 37.6% */
    CHECK_INT(tm__dgc_k(d, 1), 142); /* 0.02^0.5 = 14.14% */
    CHECK_INT(tm__dgc_k(d, 2), 54);  /* 0.02^0.75 = 5.32% */
    CHECK_INT(tm__dgc_k(d, 3), 20);  /* the ratio */
    CHECK_INT(tm__dgc_k(d, 4), 20);
    CHECK_INT(tm__dgc_k(d, 1000), 20);
    CHECK_INT(tm__dgc_k(d, -1), 1000);
    /* compress sends exactly that many */
    static float g[1000], val[1000];
    static int64_t idx[1000];
    for (int i = 0; i < 1000; i++) g[i] = (float)(i % 13) + 1;
    for (int r = 0; r < 6; r++) {
        int64_t k = -1;
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
        CHECK_INT(k, tm__dgc_k(d, r));
    }
    tm__dgc_free(d);
    /* a large ratio: 0.5^(1/3), 0.5^(2/3), 0.5 of 10 */
    o = dgc_opts(0.5, 3, 0, 0);
    d = tm__dgc_new(10, &o);
    REQUIRE(d);
    CHECK_INT(tm__dgc_k(d, 0), 8);
    CHECK_INT(tm__dgc_k(d, 1), 7);
    CHECK_INT(tm__dgc_k(d, 2), 5);
    CHECK_INT(tm__dgc_k(d, 3), 5);
    tm__dgc_free(d);
    /* at least 1; no warm-up: the ratio from round 0 */
    o = dgc_opts(1e-9, 0, 0, 0);
    d = tm__dgc_new(10, &o);
    REQUIRE(d);
    CHECK_INT(tm__dgc_k(d, 0), 1);
    tm__dgc_free(d);
    o = dgc_opts(1, 0, 0, 0);
    d = tm__dgc_new(7, &o);
    REQUIRE(d);
    CHECK_INT(tm__dgc_k(d, 0), 7);
    tm__dgc_free(d);
}

/* After reset the accumulator behaves as a new one: residual and
 * momentum both zero. */
TEST(dgc_reset_forgets_residual_and_momentum)
{
    enum { N = 64 };
    tm__dgc_opts o = dgc_opts(0.125, 0, 0.75, 0);
    tm__dgc *d = tm__dgc_new(N, &o), *fresh = tm__dgc_new(N, &o);
    REQUIRE(d && fresh);
    float g[N], val[N], val2[N];
    int64_t idx[N], idx2[N], k, k2;
    uint64_t s = 13;
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < N; i++) g[i] = rng_normal(&s);
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
    }
    tm__dgc_reset(d);
    const float *v = tm__dgc_residual(d);
    int nz = 0;
    for (int i = 0; i < N; i++) nz += v[i] != 0;
    CHECK_INT(nz, 0);
    /* two more rounds: identical to a fresh accumulator (so u was zeroed
     * too: with m = 0.75 a stale u would show in round 2) */
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < N; i++) g[i] = rng_normal(&s);
        REQUIRE(tm__dgc_compress(d, g, r, &k, idx, val) == TM_OK);
        REQUIRE(tm__dgc_compress(fresh, g, r, &k2, idx2, val2) == TM_OK);
        CHECK_INT(k, k2);
        CHECK(memcmp(idx, idx2, (size_t)k * 8) == 0);
        CHECK(memcmp(val, val2, (size_t)k * 4) == 0);
        CHECK(memcmp(tm__dgc_residual(d), tm__dgc_residual(fresh), N * 4) == 0);
    }
    tm__dgc_free(d);
    tm__dgc_free(fresh);
}

TEST(dgc_refuses_bad_options)
{
    tm__dgc_opts o = dgc_opts(0, 0, 0, 0);
    tm_clear_error();
    CHECK(tm__dgc_new(10, &o) == NULL);
    CHECK(strstr(tm_last_error(), "ratio 0 is not in (0, 1]") != NULL);
    o.ratio = 1.5;
    CHECK(tm__dgc_new(10, &o) == NULL);
    CHECK(strstr(tm_last_error(), "ratio 1.5") != NULL);
    o.ratio = NAN;
    CHECK(tm__dgc_new(10, &o) == NULL);
    o = dgc_opts(0.1, -1, 0, 0);
    CHECK(tm__dgc_new(10, &o) == NULL);
    CHECK(strstr(tm_last_error(), "warmup_rounds") != NULL);
    o = dgc_opts(0.1, 0, 1, 0);
    CHECK(tm__dgc_new(10, &o) == NULL);
    o = dgc_opts(0.1, 0, -0.5, 0);
    CHECK(tm__dgc_new(10, &o) == NULL);
    o = dgc_opts(0.1, 0, 0, INFINITY);
    CHECK(tm__dgc_new(10, &o) == NULL);
    o = dgc_opts(0.1, 0, 0, -1);
    CHECK(tm__dgc_new(10, &o) == NULL);
    CHECK_INT(tm_last_status(), TM_EINVAL);
    o = dgc_opts(0.1, 0, 0, 0);
    CHECK(tm__dgc_new(0, &o) == NULL);
    CHECK(tm__dgc_new(10, NULL) == NULL);
}
