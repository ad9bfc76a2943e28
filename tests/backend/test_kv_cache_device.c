/*
 * test_kv_cache_device.c — the key/value cache on the test devices: its
 * storage lives in device memory the host cannot touch, tokens go in by
 * tensor copies and attention runs queued on the device.  Decoding the
 * same sequence (mixed chunks, a full layer and a ring that wraps, F32 and
 * F16 storage) must give the CPU's outputs bit for bit: test:0 runs the
 * CPU's kernels, and test:1's F32 fallback converts F16 keys to F32
 * exactly, as the CPU kernel does when it reads them.
 */
#include "../c/harness.h"
#include "testdev.h"

enum { B = 2, H = 4, HKV = 2, T = 17, D = 8, DV = 8 };

static tm_tensor *input(const int64_t *s, uint64_t seed)
{
    tm_tensor *t = tm_empty(s, 4, TM_F32);
    tm_rng r = tm_rng_new(seed);
    if (!t || tm_normal_(t, 0, 1, &r)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

/* The outputs of decoding q/k/v (CPU) on `dev` through a cache of
 * `dt`, layer by layer, chunk by chunk, copied back to the CPU (out has
 * 2 layers x 6 chunks).  False on failure (recorded). */
static bool decode_on(tm_device dev, tm_dtype dt, tm_tensor *const in[3],
                      tm_tensor *out[12])
{
    static const int64_t chunks[6] = {3, 1, 5, 1, 1, 6};
    tm_kv_cache_opts o = {0};
    o.dtype = dt;
    o.device = dev;
    o.windows = (int64_t[]){0, 4};
    tm_kv_cache *c = tm_kv_cache_new(2, B, HKV, T, D, &o);
    tm_tensor *x[3] = {NULL, NULL, NULL}, *y = NULL;
    bool ok = c != NULL;
    for (int l = 0, i = 0; ok && l < 2; l++)
        for (int64_t pos = 0, j = 0; ok && j < 6; pos += chunks[j++], i++) {
            for (int a = 0; ok && a < 3; a++) {
                tm_tensor *s = tm_narrow(in[a], 2, pos, chunks[j]);
                ok = s && (x[a] = tm_to(s, dev));
                tm_free(s);
            }
            ok = ok && (y = tm_kv_cache_attend(c, l, x[0], x[1], x[2], NULL)) &&
                 tm_device_eq(tm_device_of(y), dev) &&
                 (out[i] = tm_to(y, TM_CPU));
            for (int a = 0; a < 3; a++) tm_free(x[a]), x[a] = NULL;
            tm_free(y), y = NULL;
        }
    if (ok && tm_synchronize(dev)) ok = false;
    if (!ok)
        tt_fail(__FILE__, __LINE__, "decoding on %s (%s): %s",
                tm_device_name(dev), tm_dtype_name(dt), tm_last_error());
    tm_kv_cache_free(c);
    return ok;
}

TEST(kv_cache_on_the_test_devices_decodes_as_on_the_cpu)
{
    tm_tensor *in[3] = {input((int64_t[]){B, H, T, D}, 1),
                        input((int64_t[]){B, HKV, T, D}, 2),
                        input((int64_t[]){B, HKV, T, DV}, 3)};
    REQUIRE(in[0] && in[1] && in[2]);
    CHECK(tm_device_available(TT_TEST0) && tm_device_available(TT_TEST1));
    tm_dtype dts[2] = {TM_F32, TM_F16};
    for (int di = 0; di < 2; di++) {
        tm_tensor *cpu[12] = {0};
        if (!decode_on(TM_CPU, dts[di], in, cpu)) continue;
        for (int d = 0; d < 2; d++) {
            tm_device dev = TM_DEVICE(TM_DEVICE_TEST, d);
            tm_tensor *got[12] = {0};
            if (!tm_device_available(dev)) continue;
            tm_mem_stats m0, m1;
            tm_device_memory_stats(dev, &m0);
            if (decode_on(dev, dts[di], in, got))
                for (int i = 0; i < 12; i++)
                    if (!tt_same_bits(got[i], cpu[i]))
                        tt_fail(__FILE__, __LINE__, "%s, %s storage: chunk "
                                "%d differs from the CPU's",
                                tm_device_name(dev), tm_dtype_name(dts[di]),
                                i);
            for (int i = 0; i < 12; i++) tm_free(got[i]);
            tm_synchronize(dev);
            tm_device_memory_stats(dev, &m1);
            CHECK_INT(m1.current_bytes, m0.current_bytes);
        }
        for (int i = 0; i < 12; i++) tm_free(cpu[i]);
    }
    for (int a = 0; a < 3; a++) tm_free(in[a]);
}
