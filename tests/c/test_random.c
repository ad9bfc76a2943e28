/* test_random.c — Philox known answers, the fills against the pure-Python
 * reference (tests/gen/gen_random.py), reproducibility, independence of the
 * thread count, the counter advance random.h documents, statistics, error
 * messages, and the accuracy of the generator's own log and sincos. */
#include "harness.h"
#include "ref_dispatch.h"
#include "../../tensor/core/tensor_impl.h"
#include "../../tensor/core/random_impl.h"

#include <float.h>
#include <stdlib.h>

/* ------------------------------------------------------ reference cases */

TEST(random_reference_cases)
{
    tt_run_ref_file("random.ref", tt_random_dispatch);
    tm_manual_seed(0);
}

/* ----------------------------------------------------------- generator */

/* Random123's tests/kat_vectors for philox4x32 10 (counter, key, output). */
TEST(philox_matches_random123_known_answers)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
         0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822,
         0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        tm__philox4x32_10(kat[k], kat[k] + 4, out);
        for (int i = 0; i < 4; i++) CHECK_INT(out[i], kat[k][6 + i]);
    }
    /* seed 0 at counter 0 is the first vector */
    tm_rng r = tm_rng_new(0);
    uint32_t out[4];
    tm_rng_u32(&r, out, 4);
    CHECK_INT(out[0], 0x6627e8d5);
    CHECK_INT(out[3], 0x9b00dbd8);
    CHECK_INT(r.counter, 1);
}

TEST(mulhi64_matches_schoolbook)
{
    CHECK(tm__mulhi64(UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);
    CHECK(tm__mulhi64(1ull << 63, 10) == 5);
    CHECK(tm__mulhi64(0x123456789ABCDEF0ull, 0x0FEDCBA987654321ull) ==
          0x121FA00AD77D742ull);
    CHECK(tm__mulhi64(UINT64_MAX, 7) == 6);
}

static bool same_values(const tm_tensor *a, const tm_tensor *b)
{
    return a && b && tm_dtype_of(a) == tm_dtype_of(b) &&
           tm_numel(a) == tm_numel(b) &&
           !memcmp(tm_data(a), tm_data(b), tm_nbytes(a));
}

TEST(same_seed_same_numbers_different_seed_different)
{
    int64_t shape[] = {7, 9};
    tm_manual_seed(1234);
    tm_tensor *a = tm_randn(shape, 2, TM_F32);
    tm_tensor *a2 = tm_randn(shape, 2, TM_F32); /* continues the stream */
    tm_manual_seed(1234);
    tm_tensor *b = tm_randn(shape, 2, TM_F32);
    tm_manual_seed(1235);
    tm_tensor *c = tm_randn(shape, 2, TM_F32);
    REQUIRE(a && a2 && b && c);
    CHECK(same_values(a, b));
    CHECK(!same_values(a, a2));
    CHECK(!same_values(a, c));
    tm_free(a);
    tm_free(a2);
    tm_free(b);
    tm_free(c);
    tm_manual_seed(0);
}

TEST(split_streams_are_distinct_and_reproducible)
{
    tm_rng parent = tm_rng_new(99), start = parent;
    tm_rng c1 = tm_rng_split(&parent), c2 = tm_rng_split(&parent);
    CHECK(parent.counter == start.counter + 2);
    CHECK(c1.counter == 0 && c2.counter == 0);
    CHECK(c1.key != c2.key && c1.key != parent.key && c2.key != parent.key);
    uint32_t p[64], s1[64], s2[64];
    tm_rng_u32(&parent, p, 64);
    tm_rng_u32(&c1, s1, 64);
    tm_rng_u32(&c2, s2, 64);
    int eq1 = 0, eq2 = 0, eq12 = 0;
    for (int i = 0; i < 64; i++) {
        eq1 += p[i] == s1[i];
        eq2 += p[i] == s2[i];
        eq12 += s1[i] == s2[i];
    }
    CHECK(eq1 <= 1 && eq2 <= 1 && eq12 <= 1);
    tm_rng again = start;
    tm_rng d1 = tm_rng_split(&again), d2 = tm_rng_split(&again);
    CHECK(d1.key == c1.key && d2.key == c2.key);
    uint32_t t1[64];
    tm_rng_u32(&d1, t1, 64);
    CHECK(!memcmp(t1, s1, sizeof t1));
    /* a copy forks the stream at its position */
    tm_rng fork = c2;
    uint32_t f[8], g[8];
    tm_rng_u32(&fork, f, 8);
    tm_rng_u32(&c2, g, 8);
    CHECK(!memcmp(f, g, sizeof f));
}

/* Fill a tensor of n elements with each kind; returns the new tensors. */
static void fill_all(int64_t n, tm_tensor **out)
{
    tm_rng r = tm_rng_new(7);
    out[0] = tm_empty(&n, 1, TM_F32);
    out[1] = tm_empty(&n, 1, TM_F64);
    out[2] = tm_empty(&n, 1, TM_F32);
    out[3] = tm_empty(&n, 1, TM_I64);
    out[4] = tm_empty(&n, 1, TM_BF16);
    if (!out[0] || !out[1] || !out[2] || !out[3] || !out[4]) return;
    tm_normal_(out[0], 0, 1, &r);
    tm_normal_(out[1], 0, 1, &r);
    tm_uniform_(out[2], -1, 1, &r);
    tm_randint_(out[3], -1000, 1000, &r);
    tm_normal_(out[4], 2, 3, &r);
}

TEST(fills_are_identical_for_1_and_3_threads)
{
    tm_tensor *a[5] = {0}, *b[5] = {0};
    tm_set_num_threads(1);
    fill_all(1000003, a);
    tm_set_num_threads(3);
    fill_all(1000003, b);
    tm_set_num_threads(0);
    for (int k = 0; k < 5; k++) {
        CHECK(same_values(a[k], b[k]));
        tm_free(a[k]);
        tm_free(b[k]);
    }
}

TEST(element_i_does_not_depend_on_the_fill_size)
{
    tm_rng r1 = tm_rng_new(3), r2 = r1;
    tm_tensor *a = tm_empty((int64_t[]){10}, 1, TM_F64);
    tm_tensor *b = tm_empty((int64_t[]){25}, 1, TM_F64);
    REQUIRE(a && b);
    REQUIRE(!tm_normal_(a, 0, 1, &r1) && !tm_normal_(b, 0, 1, &r2));
    CHECK(!memcmp(tm_data(a), tm_data(b), 10 * sizeof(double)));
    tm_free(a);
    tm_free(b);
}

/* After a fill of n elements the counter advances by ceil(n/4) for 32-bit
 * draws and ceil(n/2) for 64-bit draws (random.h). */
TEST(counter_advances_as_documented)
{
    struct {
        int kind;
        tm_dtype dt;
        int64_t n;
        uint64_t blocks;
    } cases[] = {
        {0, TM_F32, 10, 3}, {0, TM_F16, 4, 1},   {0, TM_F64, 10, 5},
        {1, TM_BF16, 5, 2}, {1, TM_F64, 7, 4},   {2, TM_I8, 7, 4},
        {2, TM_F32, 8, 4},  {0, TM_F32, 0, 0},   {1, TM_F32, 1, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tm_rng r = tm_rng_new(5);
        r.counter = 100;
        tm_tensor *t = tm_empty(&cases[k].n, 1, cases[k].dt);
        REQUIRE(t);
        tm_status st = cases[k].kind == 0   ? tm_uniform_(t, 0, 1, &r)
                       : cases[k].kind == 1 ? tm_normal_(t, 0, 1, &r)
                                            : tm_randint_(t, 0, 9, &r);
        CHECK_INT(st, TM_OK);
        CHECK_INT(r.counter, 100 + cases[k].blocks);
        tm_free(t);
    }
    /* a failed call leaves the generator alone */
    tm_rng r = tm_rng_new(5);
    tm_tensor *t = tm_empty((int64_t[]){4}, 1, TM_F32);
    CHECK_STATUS(tm_normal_(t, 0, -1, &r), TM_EINVAL, "std -1 must be >= 0");
    CHECK_INT(r.counter, 0);
    tm_free(t);
    /* the default generator: rand(10) then rand(10) == 20 draws starting
     * at blocks 0 and 3 */
    tm_manual_seed(8);
    tm_tensor *a = tm_rand((int64_t[]){10}, 1, TM_F32);
    tm_tensor *b = tm_rand((int64_t[]){10}, 1, TM_F32);
    tm_rng ref = tm_rng_new(8);
    uint32_t raw[24];
    tm_rng_u32(&ref, raw, 24);
    REQUIRE(a && b);
    const float *pa = tm_data(a), *pb = tm_data(b);
    for (int i = 0; i < 10; i++) {
        CHECK(pa[i] == (float)((raw[i] >> 8) * 0x1p-24));
        CHECK(pb[i] == (float)((raw[12 + i] >> 8) * 0x1p-24));
    }
    tm_free(a);
    tm_free(b);
    tm_manual_seed(0);
}

/* -------------------------------------------------------------- statistics
 * Deterministic for the fixed seed, so these cannot be flaky; the bounds are
 * many standard errors wide (1M samples: uniform mean 0.0003, normal mean
 * 0.001, normal std 0.0007, count of one randint value 300). */

static void moments(const tm_tensor *t, double *mean, double *std,
                    double *lo, double *hi)
{
    int64_t n = tm_numel(t);
    double *v = malloc(sizeof(double) * (size_t)n);
    *mean = *std = *lo = *hi = NAN;
    if (!v || tm_copy_to_buffer(t, v, sizeof(double) * (size_t)n, TM_F64)) {
        free(v);
        return;
    }
    double s = 0, ss = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        s += v[i];
        *lo = v[i] < *lo ? v[i] : *lo;
        *hi = v[i] > *hi ? v[i] : *hi;
    }
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
    *std = sqrt(ss / (double)(n - 1));
    free(v);
}

TEST(uniform_and_normal_statistics)
{
    int64_t n = 1000000;
    double mean, std, lo, hi;
    tm_manual_seed(2024);
    tm_dtype dts[] = {TM_F32, TM_F64};
    for (int k = 0; k < 2; k++) {
        tm_tensor *u = tm_rand(&n, 1, dts[k]);
        REQUIRE(u);
        moments(u, &mean, &std, &lo, &hi);
        CHECK_NEAR(mean, 0.5, 0.002);
        CHECK_NEAR(std, sqrt(1.0 / 12), 0.002);
        CHECK(lo >= 0 && hi < 1);
        tm_free(u);
        tm_tensor *z = tm_randn(&n, 1, dts[k]);
        REQUIRE(z);
        moments(z, &mean, &std, &lo, &hi);
        CHECK_NEAR(mean, 0, 0.005);
        CHECK_NEAR(std, 1, 0.005);
        CHECK(lo > -6 && hi < 6);
        tm_free(z);
    }
    tm_manual_seed(0);
}

TEST(randint_covers_its_range_uniformly)
{
    int64_t n = 1000000;
    tm_manual_seed(77);
    tm_tensor *t = tm_randint(0, 10, &n, 1, TM_I64);
    REQUIRE(t);
    int64_t count[10] = {0}, bad = 0;
    const int64_t *v = tm_data(t);
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= 10) bad++;
        else count[v[i]]++;
    }
    CHECK_INT(bad, 0);
    for (int k = 0; k < 10; k++) CHECK_NEAR(count[k], 100000, 5000);
    tm_free(t);
    /* the extremes of a dtype's range are reached */
    int64_t m = 4096;
    tm_tensor *b = tm_randint(-128, 128, &m, 1, TM_I8);
    REQUIRE(b);
    const int8_t *p = tm_data(b);
    int lo = 0, hi = 0;
    for (int64_t i = 0; i < m; i++) {
        lo |= p[i] == -128;
        hi |= p[i] == 127;
    }
    CHECK(lo && hi);
    tm_free(b);
    tm_manual_seed(0);
}

/* ------------------------------------------------------- views, versions */

TEST(inplace_fill_of_a_view_writes_only_the_view_and_bumps_version)
{
    tm_tensor *a = tm_zeros((int64_t[]){4, 6}, 2, TM_F32);
    tm_tensor *s = tm_slice(a, 1, 0, 6, 3); /* columns 0 and 3 */
    REQUIRE(a && s);
    uint64_t v0 = atomic_load(&a->storage->version);
    tm_rng r = tm_rng_new(1), r2 = r;
    CHECK_INT(tm_uniform_(s, 1, 2, &r), TM_OK);
    CHECK(atomic_load(&a->storage->version) > v0);
    tm_tensor *ref = tm_empty((int64_t[]){4, 2}, 2, TM_F32);
    REQUIRE(ref);
    CHECK_INT(tm_uniform_(ref, 1, 2, &r2), TM_OK);
    const float *pa = tm_data(a), *pr = tm_data(ref);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
            float want = j % 3 ? 0.0f : pr[i * 2 + j / 3];
            CHECK(pa[i * 6 + j] == want);
        }
    CHECK(r.counter == r2.counter);
    tm_free(ref);
    tm_free(s);
    tm_free(a);
}

/* ------------------------------------------------------------- errors */

TEST(random_errors_name_the_problem)
{
    int64_t shape[] = {3};
    tm_rng r = tm_rng_new(0);
    CHECK_NULL_ERR(tm_rand(shape, 1, TM_I64), TM_EDTYPE,
                   "tm_rand: dtype i64 is not a float dtype");
    CHECK_NULL_ERR(tm_randn(shape, 1, TM_U8), TM_EDTYPE,
                   "tm_randn: dtype u8 is not a float dtype");
    CHECK_NULL_ERR(tm_randn((int64_t[]){1LL << 40, 1LL << 40}, 2, TM_F32),
                   TM_EOVERFLOW, "element count overflows");
    CHECK_NULL_ERR(tm_rand(NULL, 2, TM_F32), TM_EINVAL,
                   "shape is NULL with ndim 2");
    CHECK_NULL_ERR(tm_randint(5, 5, shape, 1, TM_I64), TM_EINVAL,
                   "tm_randint: low 5 must be < high 5");
    CHECK_NULL_ERR(tm_randint(0, 300, shape, 1, TM_U8), TM_EINVAL,
                   "range [0, 300) does not fit dtype u8, which holds the "
                   "integers in [0, 255]");
    CHECK_NULL_ERR(tm_randint(0, 2, shape, 1, (tm_dtype)77), TM_EDTYPE,
                   "dtype 77 (invalid) is not a dtype");
    CHECK_NULL_ERR(tm_randint(0, 2, (int64_t[]){32}, 1, TM_Q4_0), TM_EDTYPE,
                   "q4_0");
    CHECK_NULL_ERR(tm_randint(0, (1LL << 53) + 1, shape, 1, TM_I64),
                   TM_EINVAL, "must lie in [-2^53, 2^53]");
    CHECK_NULL_ERR(tm_randint(0, (1 << 24) + 2, shape, 1, TM_F32), TM_EINVAL,
                   "does not fit dtype f32");
    tm_tensor *f = tm_zeros(shape, 1, TM_F32);
    tm_tensor *i = tm_zeros(shape, 1, TM_I32);
    REQUIRE(f && i);
    CHECK_STATUS(tm_uniform_(NULL, 0, 1, &r), TM_EINVAL,
                 "tm_uniform_: tensor is NULL");
    CHECK_STATUS(tm_uniform_(f, 1, 0, &r), TM_EINVAL,
                 "tm_uniform_: low 1 must be <= high 0");
    CHECK_STATUS(tm_uniform_(f, 0, INFINITY, &r), TM_EINVAL,
                 "must be finite");
    CHECK_STATUS(tm_uniform_(f, -DBL_MAX, DBL_MAX, &r), TM_EINVAL,
                 "overflows");
    CHECK_STATUS(tm_uniform_(i, 0, 1, &r), TM_EDTYPE,
                 "tm_uniform_: dtype i32 is not a float dtype");
    CHECK_STATUS(tm_normal_(f, 0, -0.5, &r), TM_EINVAL,
                 "tm_normal_: std -0.5 must be >= 0");
    CHECK_STATUS(tm_normal_(f, NAN, 1, &r), TM_EINVAL, "must be finite");
    CHECK_STATUS(tm_normal_(i, 0, 1, &r), TM_EDTYPE,
                 "tm_normal_: dtype i32 is not a float dtype");
    CHECK_STATUS(tm_randint_(i, 3, 2, &r), TM_EINVAL,
                 "tm_randint_: low 3 must be < high 2");
    CHECK_STATUS(tm_randint_(NULL, 0, 2, &r), TM_EINVAL,
                 "tm_randint_: tensor is NULL");
    /* a broadcast view would receive several values per element */
    tm_tensor *one = tm_zeros((int64_t[]){1}, 1, TM_F32);
    tm_tensor *e = tm_expand(one, (int64_t[]){4}, 1);
    REQUIRE(e);
    CHECK_STATUS(tm_uniform_(e, 0, 1, &r), TM_EINVAL,
                 "dim 0 of size 4 has stride 0");
    CHECK_INT(r.counter, 0);
    tm_clear_error();
    tm_rng_u32(&r, NULL, 3);
    CHECK(strstr(tm_last_error(), "tm_rng_u32: out is NULL with n 3"));
    CHECK_INT(r.counter, 0);
    tm_free(e);
    tm_free(one);
    tm_free(f);
    tm_free(i);
}

TEST(random_fills_fail_cleanly_when_allocation_fails)
{
    for (int k = 1; k <= 4; k++) {
        tm_alloc_fail_after(k);
        tm_tensor *t = tm_randn((int64_t[]){5, 3}, 2, TM_F32);
        tm_alloc_fail_after(0);
        if (!t) CHECK_INT(tm_last_status(), TM_ENOMEM);
        tm_free(t);
        tm_tensor *a = tm_zeros((int64_t[]){5, 3}, 2, TM_F64);
        tm_tensor *v = a ? tm_transpose(a, 0, 1) : NULL;
        REQUIRE(v);
        tm_rng r = tm_rng_new(1);
        tm_alloc_fail_after(k);
        tm_status st = tm_normal_(v, 0, 1, &r);
        tm_alloc_fail_after(0);
        if (st) CHECK_INT(st, TM_ENOMEM);
        tm_free(v);
        tm_free(a);
    }
}

/* ------------------------------------------- the generator's log, sincos
 * Against libm in long double (80-bit on x86-64, 128-bit on aarch64), so
 * the reference's own rounding (and the rounding of 2 pi u in double, which
 * libm's sin(2*M_PI*u) would add near the zeros of sin and cos) stays far
 * below the tolerance: |ours - ref| <= 1e-16 + 4e-16 |ref|, about 2 ulps —
 * the proof in random_impl.h gives under 1 ulp for log and about 1.5 ulps
 * for sin and cos.  Where long double is just double the reference itself
 * is off by up to 1 ulp of 2 pi, so the absolute slack grows to 1e-15. */
TEST(generator_log_and_sincos_match_libm)
{
    const double atol = LDBL_MANT_DIG >= 64 ? 1e-16 : 1e-15;
    const long double two_pi = 6.283185307179586476925286766559L;
    tm_rng r = tm_rng_new(42);
    int bad = 0;
    for (int i = 0; i < 100000 && bad < 5; i++) {
        uint32_t x[4];
        tm__philox_block(r.key, (uint64_t)i, x);
        /* both grids of u1, and u1 close to 1 where log is near 0 */
        double u1 = i % 3 == 0   ? tm__u01_24_open0(x[0])
                    : i % 3 == 1 ? tm__u01_53_open0(tm__philox_u64(x, 0))
                                 : 1.0 - (x[0] >> 12) * 0x1p-53;
        double u2 = i % 2 ? tm__u01_24(x[2]) : tm__u01_53(tm__philox_u64(x, 1));
        double l = tm__rng_log(u1), lw = (double)logl((long double)u1);
        double s, c;
        tm__rng_sincos2pi(u2, &s, &c);
        double sw = (double)sinl(two_pi * u2), cw = (double)cosl(two_pi * u2);
        if (!tt_near(l, lw, 4e-16, 1e-300) || !tt_near(s, sw, 4e-16, atol) ||
            !tt_near(c, cw, 4e-16, atol)) {
            bad++;
            tt_fail(__FILE__, __LINE__,
                    "u1 %.17g u2 %.17g: log %.17g (libm %.17g), sin %.17g "
                    "(%.17g), cos %.17g (%.17g)", u1, u2, l, lw, s, sw, c,
                    cw);
        }
    }
    /* exact points */
    double s, c;
    tm__rng_sincos2pi(0.0, &s, &c);
    CHECK(s == 0 && c == 1);
    tm__rng_sincos2pi(0.25, &s, &c);
    CHECK(s == 1 && c == 0);
    tm__rng_sincos2pi(0.5, &s, &c);
    CHECK(s == 0 && c == -1);
    CHECK(tm__rng_log(1.0) == 0);
    CHECK_NEAR(tm__rng_log(0x1p-53), -53 * 0.69314718055994530942, 1e-14);
    CHECK_NEAR(tm__rng_log(0x1p-1074), (double)logl(0x1p-1074L), 1e-12);
    CHECK(isnan(tm__rng_log(0.0)) && isnan(tm__rng_log(-1.0)));
}
