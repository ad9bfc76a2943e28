/* Gradient compression for the swarm (swarm/compress.h): TopK selection
 * against a full sort, the sparse payload's round trips and refusals, and
 * DGC's accumulator against hand-worked and loop references. */
#include "harness.h"

#include "../../swarm/compress.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <stdint.h>
#include <stdlib.h>

/* ------------------------------------------------------------ helpers */

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }
static float rng_normal(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return (float)(sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v));
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The reference order: |x| descending, every NaN above every number and
 * equal to every other NaN, ties to the lower index. */
typedef struct ref_item {
    double mag; /* |x| */
    int64_t i;
} ref_item;

static int ref_cmp(const void *a, const void *b)
{
    const ref_item *x = a, *y = b;
    if (x->mag != y->mag) return x->mag > y->mag ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i ? 1 : 0;
}
static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The whole of x in reference order (a new array of n): the NaNs first,
 * by index, then the numbers by |x| descending, ties by index. */
static ref_item *ref_order(const float *x, int64_t n)
{
    ref_item *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    int64_t nn = 0, o;
    for (int64_t i = 0; i < n; i++)
        if (isnan(x[i])) r[nn++] = (ref_item){0, i};
    o = nn;
    for (int64_t i = 0; i < n; i++)
        if (!isnan(x[i])) r[o++] = (ref_item){fabs((double)x[i]), i};
    qsort(r + nn, (size_t)(n - nn), sizeof *r, ref_cmp);
    return r;
}

/* Checks tm__topk_select(x, n, k) against the first k of `order`, sorted
 * by index; values must be x at those indices bit for bit. */
static void check_topk_vs(const char *what, const float *x, int64_t n,
                          int64_t k, const ref_item *order)
{
    int64_t *idx = malloc((size_t)(k + 1) * 8), *want = malloc((size_t)(k + 1) * 8);
    float *val = malloc((size_t)(k + 1) * 4);
    tm_status st = tm__topk_select(x, n, k, idx, val);
    if (st) {
        tt_fail(__FILE__, __LINE__, "%s n=%lld k=%lld: %s", what, (long long)n,
                (long long)k, tm_last_error());
        goto done;
    }
    for (int64_t i = 0; i < k; i++) want[i] = order[i].i;
    qsort(want, (size_t)k, 8, i64_cmp);
    for (int64_t i = 0; i < k; i++)
        if (idx[i] != want[i] || bits_of(val[i]) != bits_of(x[want[i]])) {
            tt_fail(__FILE__, __LINE__, "%s n=%lld k=%lld: entry %lld is "
                    "index %lld (value %g), reference %lld (value %g)", what,
                    (long long)n, (long long)k, (long long)i, (long long)idx[i],
                    (double)val[i], (long long)want[i], (double)x[want[i]]);
            break;
        }
done:
    free(idx);
    free(want);
    free(val);
}

/* Every k in ks[0..nk) (clamped to [0, n]) against one full sort. */
static void check_topk_ks(const char *what, const float *x, int64_t n,
                          const int64_t *ks, int nk)
{
    ref_item *order = ref_order(x, n);
    for (int j = 0; j < nk; j++) {
        int64_t k = ks[j] < 0 ? 0 : ks[j] > n ? n : ks[j];
        check_topk_vs(what, x, n, k, order);
    }
    free(order);
}

/* k values that matter for n: the ends, small ones, 0.1% and 1%, and
 * around where the sampled threshold gives up (k about n / 2). */
static int interesting_ks(int64_t n, int64_t *ks)
{
    int c = 0;
    int64_t base[] = {0, 1, 2, 3, n / 1000, n / 1000 + 1, n / 100, n / 10,
                      n * 4087 / 8192, n * 4088 / 8192, n / 2, n / 2 + 1,
                      n - 1, n};
    for (size_t i = 0; i < sizeof base / sizeof *base; i++) ks[c++] = base[i];
    return c;
}

/* ---------------------------------------------------- TopK selection */

TEST(topk_matches_full_sort_on_normal_data_of_many_sizes)
{
    static const int64_t sizes[] = {1, 2, 3, 7, 100, 4096, 8191, 8192, 8193,
                                    10000, 65537, 300001};
    uint64_t s = 1;
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        int64_t n = sizes[t], ks[20];
        float *x = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) x[i] = rng_normal(&s);
        int nk = interesting_ks(n, ks);
        check_topk_ks("normal", x, n, ks, nk);
        free(x);
    }
}

TEST(topk_of_nothing_and_bad_k)
{
    float x[4] = {1, -2, 3, -4};
    int64_t idx[4] = {-7, -7, -7, -7};
    float val[4];
    CHECK_INT(tm__topk_select(x, 0, 0, idx, val), TM_OK);
    CHECK_INT(tm__topk_select(x, 4, 0, idx, val), TM_OK);
    CHECK_INT(idx[0], -7); /* k = 0 writes nothing */
    CHECK_STATUS(tm__topk_select(x, 4, 5, idx, val), TM_EINVAL, "k = 5 for 4 values");
    CHECK_STATUS(tm__topk_select(x, 4, -1, idx, val), TM_EINVAL, "k = -1");
    CHECK_STATUS(tm__topk_select(x, 0, 1, idx, val), TM_EINVAL, "k = 1 for 0 values");
    CHECK_INT(tm__topk_select(x, 4, 2, idx, val), TM_OK);
    CHECK_INT(idx[0], 2);
    CHECK_INT(idx[1], 3);
    CHECK(val[0] == 3 && val[1] == -4);
}

/* Small n takes the direct path, big n the sampled one: run each input
 * at both sizes (tiled). */
static void check_pattern(const char *what, float (*gen)(int64_t i, int64_t n))
{
    static const int64_t sizes[] = {13, 5000, 100003};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        int64_t n = sizes[t], ks[20];
        float *x = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) x[i] = gen(i, n);
        int nk = interesting_ks(n, ks);
        check_topk_ks(what, x, n, ks, nk);
        free(x);
    }
}

static float gen_equal(int64_t i, int64_t n) { (void)n; return i % 2 ? 0.5f : -0.5f; }
static float gen_zeros(int64_t i, int64_t n) { (void)n; return i % 3 ? 0.0f : -0.0f; }
static float gen_ramp(int64_t i, int64_t n) { (void)n; return (float)i; }
static float gen_reverse(int64_t i, int64_t n) { return (float)(n - i); }
static float gen_three_levels(int64_t i, int64_t n)
{
    (void)n;
    uint64_t s = (uint64_t)i * 7919 + 3;
    return (float)(rng_next(&s) % 3) - 1.0f; /* -1, 0, 1: ties everywhere */
}
static float gen_denormals(int64_t i, int64_t n)
{
    (void)n;
    uint64_t s = (uint64_t)i + 99;
    uint32_t u = (uint32_t)(rng_next(&s) & 0x807fffffu); /* sign + mantissa */
    if (i % 17 == 0) u = 0x00800000u;                   /* smallest normal */
    return float_of(u);
}
static float gen_specials(int64_t i, int64_t n)
{
    (void)n;
    static const float finite[] = {0.0f, -0.0f, 1.0f, -1.0f, 3.0e38f, -3.0e38f,
                                   1e-45f, -1e-40f, 2.0f, -2.0f};
    uint64_t s = (uint64_t)i * 31 + 5;
    uint64_t r = rng_next(&s);
    /* rare NaNs and infinities, so small k picks among them */
    if (r % 1000 == 0) return (r >> 20) % 2 ? NAN : -NAN;
    if (r % 500 == 1) return (r >> 20) % 2 ? INFINITY : -INFINITY;
    return finite[(r >> 24) % 10];
}

TEST(topk_all_equal_values_go_to_the_lowest_indices)
{
    check_pattern("equal", gen_equal);
    check_pattern("zeros", gen_zeros);
}

TEST(topk_ramps_and_ties_at_the_threshold)
{
    check_pattern("ramp", gen_ramp);
    check_pattern("reverse", gen_reverse);
    check_pattern("three levels", gen_three_levels);
}

TEST(topk_denormals_signed_zeros_infinities_and_nan)
{
    check_pattern("denormals", gen_denormals);
    check_pattern("specials", gen_specials);
}

TEST(topk_nan_is_above_infinity)
{
    float x[10] = {1, INFINITY, 2, NAN, -INFINITY, 3, -NAN, 0, -5, 4};
    int64_t idx[10];
    float val[10];
    REQUIRE(tm__topk_select(x, 10, 2, idx, val) == TM_OK);
    CHECK_INT(idx[0], 3);
    CHECK_INT(idx[1], 6);
    REQUIRE(tm__topk_select(x, 10, 4, idx, val) == TM_OK);
    CHECK_INT(idx[0], 1);
    CHECK_INT(idx[1], 3);
    CHECK_INT(idx[2], 4);
    CHECK_INT(idx[3], 6);
    CHECK(isnan(val[1]) && val[2] == -INFINITY);
}

/* NaNs with different payloads are all "larger than any number" and tie
 * among themselves: ties go to the lower index, whatever the payload. */
TEST(topk_nans_tie_whatever_their_payload)
{
    float x[5] = {1, float_of(0x7fc00001u), float_of(0xffffffffu),
                  float_of(0x7f800001u), 2};
    int64_t idx[5];
    float val[5];
    REQUIRE(tm__topk_select(x, 5, 1, idx, val) == TM_OK);
    CHECK_INT(idx[0], 1);
    REQUIRE(tm__topk_select(x, 5, 2, idx, val) == TM_OK);
    CHECK_INT(idx[0], 1);
    CHECK_INT(idx[1], 2);
    /* the same on the sampled path */
    int64_t n = 20000;
    float *y = calloc((size_t)n, 4);
    for (int64_t i = 0; i < n; i++) y[i] = (float)(i % 100);
    y[5000] = float_of(0x7fffffffu);
    y[9000] = float_of(0x7f800001u);
    y[15000] = NAN;
    REQUIRE(tm__topk_select(y, n, 2, idx, val) == TM_OK);
    CHECK_INT(idx[0], 5000);
    CHECK_INT(idx[1], 9000);
    free(y);
}

/* The threshold comes from a strided sample: put everything large on
 * positions that are multiples of 64 (which any power-of-two stride of
 * 64 or more samples exclusively: the threshold comes out too high, too
 * few candidates) or everything large off them (too low: too many), so
 * the exact select over all of x has to run. */
TEST(topk_exact_when_the_sample_misjudges)
{
    int64_t n = 1 << 20, stride = 64, ks[20];
    float *x = malloc((size_t)n * 4);
    uint64_t s = 7;
    for (int64_t i = 0; i < n; i++)
        x[i] = i % stride == 0 ? 100.0f + (float)rng_unit(&s) : (float)rng_unit(&s);
    int nk = interesting_ks(n, ks);
    check_topk_ks("sample too high", x, n, ks, nk);
    for (int64_t i = 0; i < n; i++)
        x[i] = i % stride == 0 ? (float)rng_unit(&s) * 1e-3f : 1.0f + (float)rng_unit(&s);
    check_topk_ks("sample too low", x, n, ks, nk);
    /* ties: the threshold is a value a fifth of x shares, which floods
     * the collect */
    for (int64_t i = 0; i < n; i++) x[i] = i % 5 == 0 ? 2.0f : 1.0f;
    check_topk_ks("tied flood", x, n, ks, nk);
    free(x);
}

/* A big input over the pool: one thread, two, three give the same
 * selection, and it is the reference's. */
TEST(topk_large_input_is_exact_for_any_thread_count)
{
    int64_t n = 3000017;
    float *x = malloc((size_t)n * 4);
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) {
        x[i] = rng_normal(&s);
        /* 3000 ties at 3.3, where the 0.1% threshold lands (about 2900
     * normal draws are above it) */
        if (i % 1000 == 0) x[i] = 3.3f;
    }
    ref_item *order = ref_order(x, n);
    static const int64_t ks[] = {1, 3000, 3017, 30000, 300000, 1500000};
    for (int threads = 1; threads <= 3; threads++) {
        tm_set_num_threads(threads);
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
            check_topk_vs(threads == 1 ? "1 thread" : threads == 2 ? "2 threads"
                                                                   : "3 threads",
                          x, n, ks[j], order);
    }
    tm_set_num_threads(0);
    free(order);
    free(x);
}

/* ------------------------------------------------------ tm_swarm_topk */

TEST(swarm_topk_reads_any_shape_flat_in_row_major_order)
{
    /* [[0, 9, -1], [8, 2, -7]] */
    double v[6] = {0, 9, -1, 8, 2, -7};
    tm_tensor *x = tt_tensor(v, (int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *ti = NULL, *tv = NULL;
    REQUIRE(tm_swarm_topk(x, 3, &ti, &tv) == TM_OK);
    CHECK_SHAPE(ti, 3);
    CHECK_SHAPE(tv, 3);
    CHECK_INT(tm_dtype_of(ti), TM_I64);
    CHECK_INT(tm_dtype_of(tv), TM_F32);
    const int64_t *pi = tm_data(ti);
    const float *pv = tm_data(tv);
    CHECK_INT(pi[0], 1);
    CHECK_INT(pi[1], 3);
    CHECK_INT(pi[2], 5);
    CHECK(pv[0] == 9 && pv[1] == 8 && pv[2] == -7);
    tm_free(ti);
    tm_free(tv);
    /* a transposed view [[0, 8], [9, 2], [-1, -7]]: positions in its own
     * row-major order */
    tm_tensor *t = tm_transpose(x, 0, 1);
    REQUIRE(tm_swarm_topk(t, 2, &ti, &tv) == TM_OK);
    pi = tm_data(ti);
    pv = tm_data(tv);
    CHECK_INT(pi[0], 1);
    CHECK_INT(pi[1], 2);
    CHECK(pv[0] == 8 && pv[1] == 9);
    tm_free(ti);
    tm_free(tv);
    /* k = 0: empty results */
    REQUIRE(tm_swarm_topk(t, 0, &ti, &tv) == TM_OK);
    CHECK_SHAPE(ti, 0);
    CHECK_SHAPE(tv, 0);
    tm_free(ti);
    tm_free(tv);
    tm_free(t);
    tm_free(x);
}

TEST(swarm_topk_refuses_bad_dtype_k_and_null)
{
    double v[4] = {1, 2, 3, 4};
    tm_tensor *x = tt_tensor(v, (int64_t[]){4}, 1, TM_F32);
    tm_tensor *d = tt_tensor(v, (int64_t[]){4}, 1, TM_F64);
    tm_tensor *h = tt_tensor(v, (int64_t[]){4}, 1, TM_F16);
    tm_tensor *ti = (tm_tensor *)1, *tv = (tm_tensor *)1;
    CHECK_STATUS(tm_swarm_topk(d, 1, &ti, &tv), TM_EDTYPE, "F32");
    CHECK(ti == NULL && tv == NULL);
    CHECK_STATUS(tm_swarm_topk(h, 1, &ti, &tv), TM_EDTYPE, "F32");
    CHECK_STATUS(tm_swarm_topk(x, 5, &ti, &tv), TM_EINVAL, "k = 5 is not in [0, 4]");
    CHECK(ti == NULL && tv == NULL);
    CHECK_STATUS(tm_swarm_topk(x, -1, &ti, &tv), TM_EINVAL, "k = -1");
    CHECK_STATUS(tm_swarm_topk(NULL, 1, &ti, &tv), TM_EINVAL, "NULL");
    CHECK_STATUS(tm_swarm_topk(x, 1, NULL, &tv), TM_EINVAL, "NULL");
    CHECK_STATUS(tm_swarm_topk(x, 1, &ti, NULL), TM_EINVAL, "NULL");
    tm_free(x);
    tm_free(d);
    tm_free(h);
}

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
    tm__dgc_opts o = {ratio, warmup, momentum, clip};
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

static tm_status topk_big_select(void)
{
    static float x[20000];
    static int64_t idx[200];
    static float val[200];
    for (int i = 0; i < 20000; i++) x[i] = (float)((i * 7919) % 20011);
    return tm__topk_select(x, 20000, 200, idx, val);
}

/* Every allocation of the sampled path (histogram, sample, candidate
 * positions and values) can fail: TM_ENOMEM, nothing leaked. */
TEST(topk_survives_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(topk_big_select, 4);
}
