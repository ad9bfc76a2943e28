/* test_base.c — status strings, errors, logging, allocator accounting and
 * fault injection, the thread pool and the backend registry. */
#include "harness.h"

#include "../../tensor/core/tensor_impl.h"

TEST(status_strings_and_names)
{
    CHECK(!strcmp(tm_status_name(TM_ESHAPE), "TM_ESHAPE"));
    CHECK(!strcmp(tm_status_str(TM_ESHAPE), "shape mismatch"));
    CHECK(!strcmp(tm_status_str((tm_status)-999), "unknown status"));
    CHECK(!strcmp(tm_version(), "0.1.0"));
}

TEST(errors_are_thread_local_and_clearable)
{
    CHECK_INT(tm_set_error(TM_EIO, "disk %d on fire", 3), TM_EIO);
    CHECK(!strcmp(tm_last_error(), "disk 3 on fire"));
    CHECK_INT(tm_last_status(), TM_EIO);
    /* re-raising the current message into itself is safe */
    tm_set_error(TM_EIO, "again: %s", tm_last_error());
    CHECK(!strcmp(tm_last_error(), "again: disk 3 on fire"));
    tm_clear_error();
    CHECK(!strcmp(tm_last_error(), ""));
    CHECK_INT(tm_last_status(), TM_OK);
}

typedef struct {
    int count;
    tm_log_level last;
    char msg[128];
} log_sink;

static void sink(tm_log_level level, const char *msg, void *user)
{
    log_sink *s = user;
    s->count++;
    s->last = level;
    snprintf(s->msg, sizeof s->msg, "%s", msg);
}

TEST(logging_respects_level_and_callback)
{
    log_sink s = {0};
    tm_log_level old = tm_get_log_level();
    tm_set_log_callback(sink, &s);
    tm_set_log_level(TM_LOG_INFO);
    tm_logf(TM_LOG_DEBUG, "hidden");
    tm_logf(TM_LOG_INFO, "shown %d", 1);
    tm_logf(TM_LOG_ERROR, "also shown");
    CHECK_INT(s.count, 2);
    CHECK_INT(s.last, TM_LOG_ERROR);
    CHECK(!strcmp(s.msg, "also shown"));
    tm_set_log_level(TM_LOG_OFF);
    tm_logf(TM_LOG_ERROR, "silenced");
    CHECK_INT(s.count, 2);
    tm_set_log_callback(NULL, NULL);
    tm_set_log_level(old);
}

TEST(memory_stats_track_current_and_peak)
{
    tm_mem_stats a, b, c;
    tm_memory_stats(&a);
    tm_memory_reset_peak();
    tm_tensor *t = tm_empty((int64_t[]){1000}, 1, TM_F64);
    REQUIRE(t);
    tm_memory_stats(&b);
    CHECK(b.current_bytes >= a.current_bytes + 8000);
    CHECK(b.peak_bytes >= b.current_bytes);
    CHECK(b.allocs > a.allocs);
    tm_free(t);
    tm_memory_stats(&c);
    CHECK_INT(c.current_bytes, a.current_bytes);
    CHECK(c.peak_bytes == b.peak_bytes);
    /* the freed block is cached and reused by an allocation of its class */
    CHECK(c.cached_bytes >= 8000);
    tm_tensor *u = tm_empty((int64_t[]){999}, 1, TM_F64);
    tm_mem_stats d;
    tm_memory_stats(&d);
    CHECK(d.cached_bytes < c.cached_bytes);
    tm_free(u);
    tm_memory_release_cache();
    tm_memory_stats(&d);
    CHECK_INT(d.cached_bytes, 0);
}

TEST(allocations_are_64_byte_aligned)
{
    for (int64_t n = 1; n < 5000; n = n * 3 + 1) {
        tm_tensor *t = tm_empty(&n, 1, TM_U8);
        REQUIRE(t);
        CHECK(((uintptr_t)tm_data(t) & 63) == 0);
        tm_free(t);
    }
}

TEST(injected_allocation_failure_is_clean)
{
    /* tm_zeros allocates the storage object, its memory and the tensor:
     * failing each in turn must give NULL, TM_ENOMEM and no leak (the
     * harness checks the byte count after the test). */
    for (int n = 1; n <= 3; n++) {
        tm_alloc_fail_after(n);
        CHECK_NULL_ERR(tm_zeros((int64_t[]){4, 4}, 2, TM_F32), TM_ENOMEM,
                       "injected failure");
    }
    tm_alloc_fail_after(4);
    tm_tensor *ok = tm_zeros((int64_t[]){4, 4}, 2, TM_F32);
    CHECK(ok != NULL);
    tm_free(ok);
    tm_alloc_fail_after(0);
    uint64_t r0 = tm_alloc_requests();
    tm_tensor *t = tm_ones((int64_t[]){3}, 1, TM_I8);
    CHECK_INT(tm_alloc_requests() - r0, 3);
    tm_free(t);
}

TEST(thread_count_setting)
{
    tm_set_num_threads(3);
    CHECK_INT(tm_get_num_threads(), 3);
    tm_set_num_threads(0);
    CHECK(tm_get_num_threads() >= 1);
}

static void mark_range(int64_t b, int64_t e, void *ctx)
{
    unsigned char *hit = ctx;
    for (int64_t i = b; i < e; i++) hit[i]++;
}

TEST(parallel_for_covers_every_index_once)
{
    enum { N = 100003 };
    static unsigned char hit[N];
    for (int threads = 1; threads <= 4; threads++) {
        memset(hit, 0, sizeof hit);
        tm_set_num_threads(threads);
        tm__parallel_for(N, 1000, mark_range, hit);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += hit[i] != 1;
        CHECK_INT(bad, 0);
    }
    tm_set_num_threads(0);
}

TEST(backend_registry)
{
    const tm_backend *cpu = tm_backend_get(TM_DEVICE_CPU);
    REQUIRE(cpu);
    CHECK(!strcmp(cpu->name, "cpu"));
    CHECK_INT(cpu->abi_version, TM_BACKEND_ABI_VERSION);
    CHECK_INT(TM_BACKEND_ABI_VERSION, 7);
    CHECK(tm_device_available(TM_CPU));
    tm_clear_error();
    CHECK(!tm_device_available(TM_DEVICE(TM_DEVICE_METAL, 0)));
    CHECK(strstr(tm_last_error(), "device type metal has no backend") !=
          NULL);
    tm_backend bad = *cpu;
    bad.abi_version = 999;
    CHECK_STATUS(tm_backend_register(&bad), TM_EINVAL,
                 "ABI version 999 and size");
    bad = *cpu;
    CHECK_STATUS(tm_backend_register(&bad), TM_EINVAL, "the CPU's is built");
    tm_tensor *a = tm_zeros((int64_t[]){2}, 1, TM_F32);
    CHECK_NULL_ERR(tm_to(a, TM_DEVICE(TM_DEVICE_CUDA, 1)), TM_EDEVICE,
                   "device type cuda has no backend");
    tm_tensor *same = tm_to(a, TM_CPU);
    CHECK(same == a);
    tm_free(same);
    tm_free(a);
}

TEST(device_names)
{
    CHECK(!strcmp(tm_device_name(TM_CPU), "cpu"));
    CHECK(!strcmp(tm_device_name(TM_DEVICE(TM_DEVICE_CUDA, 1)), "cuda:1"));
    CHECK(!strcmp(tm_device_name(TM_DEVICE(TM_DEVICE_METAL, 0)), "metal:0"));
    CHECK(!strcmp(tm_device_name(TM_DEVICE(TM_DEVICE_CPU, 1)), "invalid"));
    CHECK(!strcmp(tm_device_name(TM_DEVICE(TM_DEVICE_CUDA, 99)), "invalid"));
    tm_device d;
    CHECK_INT(tm_device_parse("cuda:1", &d), TM_OK);
    CHECK(tm_device_eq(d, TM_DEVICE(TM_DEVICE_CUDA, 1)));
    CHECK_INT(tm_device_parse("metal", &d), TM_OK);
    CHECK(tm_device_eq(d, TM_DEVICE(TM_DEVICE_METAL, 0)));
    CHECK_INT(tm_device_parse("cpu", &d), TM_OK);
    CHECK(tm_device_eq(d, TM_CPU));
    CHECK_STATUS(tm_device_parse("cpu:1", &d), TM_EINVAL, "out of range");
    CHECK_STATUS(tm_device_parse("cuda:", &d), TM_EINVAL, "is not a device");
    CHECK_STATUS(tm_device_parse("cuda:1x", &d), TM_EINVAL,
                 "is not a device");
    CHECK_STATUS(tm_device_parse("gpu", &d), TM_EINVAL, "'gpu' is not");
    CHECK_STATUS(tm_device_parse("cuda:01", &d), TM_EINVAL, "is not a device");
    CHECK_INT(tm_device_parse("cuda:0", &d), TM_OK);
    CHECK_INT(tm_device_parse("cuda:10", &d), TM_OK);
    CHECK_STATUS(tm_device_parse("cuda:16", &d), TM_EINVAL, "0..15");
    CHECK_INT(tm_device_count(TM_DEVICE_CPU), 1);
    CHECK_INT(tm_device_count(TM_DEVICE_CUDA), 0);
    CHECK_INT(tm_synchronize(TM_CPU), TM_OK);
    CHECK(!strcmp(tm_entry_name(TM_ENTRY_CONV), "conv"));
    CHECK(!strcmp(tm_entry_name(TM_ENTRY_COUNT), "invalid"));
}
