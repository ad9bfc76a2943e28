/* TopK selection for the swarm (swarm/compress.h, tm_swarm_topk) against
 * a full sort: sizes, k at the ends and around the sampled threshold's
 * limits, ties, special values, inputs that fool the sample, thread
 * counts, and every allocation failure. */
#include "harness.h"
#include "swarm_test_util.h"

#include "../../swarm/compress.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <stdint.h>
#include <stdlib.h>

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
