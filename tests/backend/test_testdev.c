/* test_testdev.c — the test device itself: its memory is not host memory,
 * its stream is asynchronous with sticky errors, its allocator fails on
 * demand, and test:1 exercises the front ends' dtype fallback. */
#define _DEFAULT_SOURCE
#include "../c/harness.h"
#include "testdev.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The devices' contexts live as long as the process: open them before the
 * first test, outside any test's leak check. */
__attribute__((constructor)) static void tt_open_devices(void)
{
    if (tt_testdev_register() == 0) {
        tm_device_available(TT_TEST0);
        tm_device_available(TT_TEST1);
    }
}

/* Devices finish their work and give cached blocks back after every test,
 * so the harness's host leak check sees only what the test kept. */
void tt_after_test(void)
{
    for (int i = 0; i < 2; i++) {
        tm_device d = TM_DEVICE(TM_DEVICE_TEST, i);
        if (!tm_device_available(d)) continue;
        if (tm_synchronize(d) != TM_OK)
            tt_fail(__FILE__, __LINE__, "%s had an unreported error: %s",
                    tm_device_name(d), tm_last_error());
        tm_device_empty_cache(d);
    }
    tm_clear_error();
}

static tm_tensor *f32(const float *v, int64_t n)
{
    return tm_from_buffer(v, &n, 1, TM_F32);
}


TEST(testdev_registers_two_devices)
{
    REQUIRE(tt_testdev_register() == 0);
    CHECK_INT(tt_testdev_register(), 0); /* idempotent */
    CHECK_INT(tm_device_count(TM_DEVICE_TEST), 2);
    CHECK(tm_device_available(TT_TEST0));
    CHECK(tm_device_available(TT_TEST1));
    CHECK(!tm_device_available(TM_DEVICE(TM_DEVICE_TEST, 2)));
    CHECK(strstr(tm_last_error(), "test:2 does not exist") != NULL);
}

TEST(testdev_round_trip_and_no_host_pointer)
{
    REQUIRE(tt_testdev_register() == 0);
    float v[6] = {1, -2, 3.5f, 4, 5, 6};
    tm_tensor *x = f32(v, 6), *d = tm_to(x, TT_TEST0);
    REQUIRE(d);
    CHECK(tm_device_eq(tm_device_of(d), TT_TEST0));
    CHECK(tm_data(d) == NULL);
    CHECK_INT(tm_last_status(), TM_EDEVICE);
    CHECK(strstr(tm_last_error(), "test:0") != NULL);
    tm_tensor *back = tm_to(d, TM_CPU);
    CHECK(back && !memcmp(tm_data(back), v, sizeof v));
    double e;
    CHECK_INT(tm_get(d, (int64_t[]){2}, &e), TM_OK);
    CHECK(e == 3.5);
    CHECK_INT(tm_set(d, (int64_t[]){2}, 7.0), TM_OK);
    CHECK_INT(tm_get(d, (int64_t[]){2}, &e), TM_OK);
    CHECK(e == 7.0);
    tm_free(back);
    tm_free(d);
    tm_free(x);
}

TEST(testdev_host_cannot_read_device_memory)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_ctx *cx = tm_device_ctx(TT_TEST0);
    const tm_backend *b = tm_backend_get(TM_DEVICE_TEST);
    REQUIRE(cx && b);
    volatile char *h = b->alloc(cx, 64);
    REQUIRE(h);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* the child reads device memory: it must die */
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2);
        char c = h[0];
        (void)c;
        _exit(0); /* reached only if the read did not fault */
    }
    int status = 0;
    REQUIRE(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    b->free(cx, (void *)h);
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK);
}

TEST(testdev_ops_match_the_cpu_bitwise)
{
    REQUIRE(tt_testdev_register() == 0);
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)(i * 0.37 - 2.1);
    tm_tensor *x = tm_from_buffer(v, (int64_t[]){3, 4}, 2, TM_F32);
    tm_tensor *d = tm_to(x, TT_TEST0);
    REQUIRE(d);
    tm_tensor *dt = tm_transpose(d, 0, 1), *xt = tm_transpose(x, 0, 1);
    tm_tensor *c[6] = {tm_exp(x), tm_matmul(x, xt), tm_sum(x, NULL, 0, false),
                       tm_softmax(x, 1), tm_add(x, x),
                       tm_cumsum(x, 1)};
    tm_tensor *g[6] = {tm_exp(d), tm_matmul(d, dt), tm_sum(d, NULL, 0, false),
                       tm_softmax(d, 1), tm_add(d, d), tm_cumsum(d, 1)};
    for (int i = 0; i < 6; i++) {
        CHECK(g[i] && tm_device_eq(tm_device_of(g[i]), TT_TEST0));
        if (!tt_same_bits(c[i], g[i])) tt_fail(__FILE__, __LINE__, "op %d", i);
        tm_free(c[i]);
        tm_free(g[i]);
    }
    tm_free(dt);
    tm_free(xt);
    tm_free(d);
    tm_free(x);
}

TEST(testdev_mixing_devices_names_both)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_tensor *x = tm_ones((int64_t[]){2}, 1, TM_F32);
    tm_tensor *d = tm_to(x, TT_TEST0), *e = tm_to(x, TT_TEST1);
    REQUIRE(d && e);
    CHECK_NULL_ERR(tm_add(x, d), TM_EDEVICE, "cpu and test:0");
    CHECK_NULL_ERR(tm_add(d, e), TM_EDEVICE, "test:0 and test:1");
    tm_tensor *moved = tm_to(d, TT_TEST1); /* between devices: via host */
    CHECK(tt_same_bits(moved, x));
    tm_free(moved);
    tm_free(e);
    tm_free(d);
    tm_free(x);
}

TEST(testdev_error_in_a_queued_stream_is_sticky_until_sync)
{
    REQUIRE(tt_testdev_register() == 0);
    float v[3] = {1, 2, 3};
    int64_t bad[2] = {0, 5};
    tm_tensor *x = f32(v, 3), *d = tm_to(x, TT_TEST0);
    tm_tensor *ih = tm_from_buffer(bad, (int64_t[]){2}, 1, TM_I64);
    tm_tensor *id = tm_to(ih, TT_TEST0);
    REQUIRE(d && id);
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK);
    tt_testdev_hold(TT_TEST0, 1); /* queue several jobs before any runs */
    long before = tt_testdev_jobs(TT_TEST0);
    tm_tensor *a = tm_exp(d);
    tm_tensor *g = tm_gather(d, 0, id); /* index 5 of a dim of size 3 */
    tm_tensor *b = tm_add(a, a);
    CHECK(a && g && b); /* queued: nothing has failed yet */
    CHECK(tt_testdev_jobs(TT_TEST0) - before >= 3);
    tt_testdev_hold(TT_TEST0, 0);
    double s;
    /* the first host synchronization reports it, naming the device */
    tm_tensor *sum = tm_sum(b, NULL, 0, false);
    CHECK_STATUS(tm_item(sum, &s), TM_ERANGE, "test:0");
    CHECK(strstr(tm_last_error(), "reported at this synchronization"));
    CHECK(strstr(tm_last_error(), "out of range"));
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK); /* reported once */
    tm_free(sum);
    tm_tensor *ok = tm_to(d, TM_CPU);
    CHECK(tt_same_bits(ok, x)); /* the device works again */
    tm_free(ok);
    tm_free(a);
    tm_free(g);
    tm_free(b);
    tm_free(id);
    tm_free(ih);
    tm_free(d);
    tm_free(x);
}

TEST(testdev_error_surfaces_at_item)
{
    REQUIRE(tt_testdev_register() == 0);
    float v[3] = {1, 2, 3};
    int64_t bad[1] = {-7};
    tm_tensor *x = f32(v, 3), *d = tm_to(x, TT_TEST0);
    tm_tensor *ih = tm_from_buffer(bad, (int64_t[]){1}, 1, TM_I64);
    tm_tensor *id = tm_to(ih, TT_TEST0);
    tm_tensor *g = tm_index_select(d, 0, id);
    REQUIRE(g);
    double s = 0;
    CHECK_STATUS(tm_item(g, &s), TM_ERANGE, "reported at this sync");
    tm_free(g);
    tm_free(id);
    tm_free(ih);
    tm_free(d);
    tm_free(x);
}

TEST(testdev_failed_allocations_leak_nothing)
{
    REQUIRE(tt_testdev_register() == 0);
    CHECK_INT(tm_device_empty_cache(TT_TEST0), TM_OK);
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK); /* frees are queued */
    tm_mem_stats s0, s1;
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &s0), TM_OK);
    size_t used0 = tt_testdev_bytes_in_use();
    tt_testdev_fail_allocs(0, 2); /* the cache's retry fails too */
    CHECK_NULL_ERR(tm_empty_on((int64_t[]){256}, 1, TM_F32, TT_TEST0),
                   TM_ENOMEM, "out of memory on test:0");
    tt_testdev_fail_allocs(0, 0);
    float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i;
    tm_tensor *x = tm_from_buffer(v, (int64_t[]){8, 8}, 2, TM_F32);
    tm_tensor *d = tm_to(x, TT_TEST0);
    REQUIRE(d);
    /* every allocation of a few ops fails in turn: clean errors only (no
     * caching, so each allocation reaches the backend) */
    CHECK_INT(tm_device_set_cache_limit(TT_TEST0, 0), TM_OK);
    int failed = 0;
    for (int k = 0; k < 6; k++) {
        tt_testdev_fail_allocs(k, 2);
        tm_tensor *m = tm_matmul(d, d), *s = m ? tm_softmax(m, 1) : NULL;
        tm_tensor *t = s ? tm_sum(s, (int[]){0}, 1, false) : NULL;
        tt_testdev_fail_allocs(0, 0);
        if (!t) {
            failed++;
            CHECK_INT(tm_last_status(), TM_ENOMEM);
        }
        tm_free(t);
        tm_free(s);
        tm_free(m);
    }
    CHECK(failed >= 3); /* the three results' allocations each failed */
    CHECK_INT(tm_device_set_cache_limit(TT_TEST0, (size_t)1 << 30), TM_OK);
    tm_free(d);
    tm_free(x);
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK);
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &s1), TM_OK);
    CHECK_INT(s1.current_bytes, s0.current_bytes);
    CHECK_INT(tm_device_empty_cache(TT_TEST0), TM_OK);
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK);
    CHECK_INT(tt_testdev_bytes_in_use(), used0);
}

TEST(testdev_cache_reuses_blocks)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_mem_stats a, b;
    tm_tensor *t = tm_empty_on((int64_t[]){1000}, 1, TM_F32, TT_TEST0);
    tm_free(t);
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &a), TM_OK);
    CHECK(a.cached_bytes >= 4000);
    t = tm_empty_on((int64_t[]){1000}, 1, TM_F32, TT_TEST0);
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &b), TM_OK);
    CHECK_INT(b.cached_bytes + 4096, a.cached_bytes); /* its 4 KiB class */
    CHECK(b.current_bytes >= 4000);
    CHECK(b.peak_bytes >= b.current_bytes);
    tm_free(t);
    CHECK_INT(tm_device_set_cache_limit(TT_TEST0, 0), TM_OK);
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &b), TM_OK);
    CHECK_INT(b.cached_bytes, 0);
    CHECK_INT(tm_device_set_cache_limit(TT_TEST0, (size_t)1 << 30), TM_OK);
}

TEST(testdev_fallback_runs_declined_dtypes_as_f32)
{
    REQUIRE(tt_testdev_register() == 0);
    double v[5] = {0.1, -1.5, 2.25, 3.0, -0.7};
    int64_t n = 5;
    tm_tensor *x = tm_from_buffer(v, &n, 1, TM_F64);
    tm_tensor *d = tm_to(x, TT_TEST1);
    tm_tensor *y = tm_exp(d); /* F64 declined: computed on F32 copies */
    REQUIRE(y);
    CHECK_INT(tm_dtype_of(y), TM_F64);
    tm_tensor *x32 = tm_to_dtype(x, TM_F32), *e32 = tm_exp(x32);
    tm_tensor *want = tm_to_dtype(e32, TM_F64);
    CHECK(tt_same_bits(y, want));
    /* F16 on the CPU computes in F32 too: the fallback is exact */
    tm_tensor *h = tm_to_dtype(x, TM_F16), *hd = tm_to(h, TT_TEST1);
    tm_tensor *hc = tm_mul(h, h), *hg = tm_mul(hd, hd);
    CHECK(tt_same_bits(hc, hg));
    /* integers run as I64 */
    int32_t iv[5] = {3, -4, 5, 3, -1};
    tm_tensor *i = tm_from_buffer(iv, (int64_t[]){5}, 1, TM_I32);
    tm_tensor *id = tm_to(i, TT_TEST1);
    tm_tensor *ic = tm_sum(i, NULL, 0, false), *ig = tm_sum(id, NULL, 0,
                                                            false);
    CHECK(tt_same_bits(ic, ig));
    tm_tensor *pc = tm_lt(i, x), *pg = tm_lt(id, d); /* BOOL out via I64 */
    CHECK(tt_same_bits(pc, pg));
    tm_tensor *all[] = {x, d, y, x32, e32, want, h, hd, hc, hg,
                        i, id, ic, ig, pc, pg};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) tm_free(all[k]);
}

TEST(testdev_random_fills_match_the_cpu)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_rng r1 = tm_rng_new(42), r2 = tm_rng_new(42);
    tm_tensor *c = tm_empty((int64_t[]){37}, 1, TM_F32);
    tm_tensor *d = tm_empty_on((int64_t[]){37}, 1, TM_F32, TT_TEST0);
    REQUIRE(c && d);
    CHECK_INT(tm_normal_(c, 0.5, 2.0, &r1), TM_OK);
    CHECK_INT(tm_normal_(d, 0.5, 2.0, &r2), TM_OK);
    CHECK(tt_same_bits(c, d));
    CHECK(r1.counter == r2.counter && r1.key == r2.key);
    tm_free(c);
    tm_free(d);
}

/* test:1 declines F16 and F64 fills: it gets the CPU's, so the values are
 * the ones random.h defines (a fill computed in F32 and rounded to F16
 * would reach `high` at the top of [low, high); F64 values come from
 * 64-bit draws) and the generator advances as on the CPU. */
TEST(testdev_declined_random_dtypes_get_the_cpus_fill)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_dtype dts[3] = {TM_F16, TM_BF16, TM_F64};
    for (int k = 0; k < 3; k++) {
        tm_rng r1 = tm_rng_new(7), r2 = tm_rng_new(7);
        tm_tensor *c = tm_empty((int64_t[]){4, 25}, 2, dts[k]);
        tm_tensor *d = tm_empty_on((int64_t[]){4, 25}, 2, dts[k], TT_TEST1);
        tm_tensor *dt = d ? tm_transpose(d, 0, 1) : NULL;
        tm_tensor *ct = c ? tm_transpose(c, 0, 1) : NULL;
        REQUIRE(ct && dt);
        /* draws at the top of [0.99, 1) round to 1 in F16 and BF16 */
        CHECK_INT(tm_uniform_(ct, 0.99, 1.0, &r1), TM_OK);
        CHECK_INT(tm_uniform_(dt, 0.99, 1.0, &r2), TM_OK);
        CHECK(tt_same_bits(c, d));
        CHECK(r1.counter == r2.counter);
        tm_tensor *top = tm_max(c, NULL, 0, false);
        double m = 2;
        CHECK(top && tm_item(top, &m) == TM_OK && m < 1.0);
        CHECK_INT(tm_normal_(c, 0, 1, &r1), TM_OK);
        CHECK_INT(tm_normal_(d, 0, 1, &r2), TM_OK);
        CHECK(tt_same_bits(c, d));
        tm_free(top);
        tm_free(ct);
        tm_free(dt);
        tm_free(c);
        tm_free(d);
    }
}

TEST(testdev_context_scratch_grows_and_stays_device_memory)
{
    REQUIRE(tt_testdev_register() == 0);
    tm_ctx *cx = tm_device_ctx(TT_TEST0);
    REQUIRE(cx);
    tm_mem_stats s0, s1;
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &s0), TM_OK);
    void *a = tm_ctx_scratch(cx, 100);
    CHECK(a != NULL);
    CHECK(tm_ctx_scratch(cx, 50) == a); /* big enough: the same block */
    void *b = tm_ctx_scratch(cx, 1 << 20);
    CHECK(b != NULL);
    CHECK_INT(tm_device_memory_stats(TT_TEST0, &s1), TM_OK);
    CHECK(s1.current_bytes >= s0.current_bytes + (1 << 20));
    /* a device handle: a device entry accepts it as one of its buffers */
    tm_buf d = {.handle = b, .dtype = TM_F32, .ndim = 1, .shape = {4},
                .strides = {1}};
    CHECK_INT(tm_backend_get(TM_DEVICE_TEST)->fill(cx, &d, 2.0), TM_OK);
    CHECK_INT(tm_synchronize(TT_TEST0), TM_OK);
    CHECK_NULL_ERR(tm_ctx_scratch(tm_device_ctx(TM_CPU), 64),
                   TM_EUNSUPPORTED, "cpu has no context scratch");
}
