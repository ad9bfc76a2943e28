/*
 * test_conformance_rope.c — rotary embeddings on the test devices against
 * the CPU: tm_rope_apply forward and backward (by offset and by explicit
 * positions, both layouts), results and gradients on the device and equal
 * to the CPU's bit for bit (test:0 on F32 and F64; test:1, which declines
 * F64, on F32), and the device's memory back where it was once the rope
 * (which caches its tables on the device) is freed.
 */
#include "../c/harness.h"
#include "testdev.h"

#include "foundry/attention.h"

typedef struct rope_run {
    tm_tensor *y, *g; /* on the host */
    bool ok;
} rope_run;

/* y = rope(x) on dev from the host x (and positions), and the gradient of
 * sum(y * w) with respect to x, both copied back to the host. */
static rope_run run_on(tm_device dev, const tm_rope_config *cfg,
                       const tm_tensor *x, const tm_tensor *w,
                       const tm_tensor *pos, int64_t offset)
{
    rope_run r = {NULL, NULL, false};
    tm_rope *rope = tm_rope_new(cfg);
    /* a copy on the CPU too: x itself must not become a leaf */
    bool cpu = tm_device_eq(dev, TM_CPU);
    tm_tensor *xd = cpu ? tm_clone(x) : tm_to(x, dev), *wd = tm_to(w, dev);
    tm_tensor *pd = pos ? tm_to(pos, dev) : NULL;
    tm_tensor *y = NULL, *p = NULL, *loss = NULL;
    if (!rope || !xd || !wd || (pos && !pd) || tm_requires_grad_(xd, true))
        goto done;
    y = tm_rope_apply(rope, xd, offset, pd);
    p = y ? tm_mul(y, wd) : NULL;
    loss = p ? tm_sum(p, NULL, 0, false) : NULL;
    if (!loss || tm_backward(loss)) goto done;
    if (!tm_device_eq(tm_device_of(y), dev) || !tm_grad(xd) ||
        !tm_device_eq(tm_device_of(tm_grad(xd)), dev)) {
        tt_fail(__FILE__, __LINE__, "rope's result or gradient left %s",
                tm_device_name(dev));
        goto done;
    }
    r.y = tm_to(y, TM_CPU);
    r.g = tm_to(tm_grad(xd), TM_CPU);
    r.ok = r.y && r.g;
done:
    if (!r.ok)
        tt_fail(__FILE__, __LINE__, "rope on %s: %s", tm_device_name(dev),
                tm_last_error());
    tm_free(loss);
    tm_free(p);
    tm_free(y);
    tm_free(pd);
    tm_free(wd);
    tm_free(xd);
    tm_rope_free(rope);
    return r;
}

static void compare(tm_device dev, tm_dtype dt, bool inter, bool positions)
{
    tm_rope_config c = tm_rope_defaults(24);
    c.rotary_dim = 20;
    c.interleaved = inter;
    c.scaling = TM_ROPE_SCALING_YARN;
    c.factor = 4.0;
    c.original_max_positions = 128;
    tm_rng g = tm_rng_new(41);
    int64_t shape[4] = {2, 3, 17, 24};
    int64_t pv[34];
    for (int i = 0; i < 34; i++) pv[i] = (i * 37) % 301;
    tm_tensor *x = tm_empty(shape, 4, dt), *w = tm_empty(shape, 4, dt);
    tm_tensor *pos = positions ? tm_from_buffer(pv, (int64_t[]){2, 17}, 2,
                                                TM_I64)
                               : NULL;
    if (!x || !w || (positions && !pos) || tm_normal_(x, 0, 1, &g) ||
        tm_normal_(w, 0, 1, &g)) {
        tt_fail(__FILE__, __LINE__, "inputs: %s", tm_last_error());
        goto done;
    }
    tm_mem_stats m0, m1;
    tm_synchronize(dev);
    tm_device_memory_stats(dev, &m0);
    rope_run cpu = run_on(TM_CPU, &c, x, w, pos, 5);
    rope_run got = run_on(dev, &c, x, w, pos, 5);
    if (cpu.ok && got.ok &&
        (!tt_same_bits(cpu.y, got.y) || !tt_same_bits(cpu.g, got.g)))
        tt_fail(__FILE__, __LINE__, "rope on %s (%s, %s, %s) differs from "
                "the CPU", tm_device_name(dev), tm_dtype_name(dt),
                inter ? "interleaved" : "halves",
                positions ? "positions" : "offset");
    tm_free(cpu.y);
    tm_free(cpu.g);
    tm_free(got.y);
    tm_free(got.g);
    tm_synchronize(dev);
    tm_device_memory_stats(dev, &m1);
    if (m1.current_bytes != m0.current_bytes)
        tt_fail(__FILE__, __LINE__, "rope on %s: device memory %zu bytes "
                "after, %zu before", tm_device_name(dev), m1.current_bytes,
                m0.current_bytes);
done:
    tm_free(pos);
    tm_free(w);
    tm_free(x);
}

TEST(conformance_rope_matches_the_cpu)
{
    REQUIRE(tt_testdev_register() == 0);
    for (int inter = 0; inter < 2; inter++)
        for (int positions = 0; positions < 2; positions++) {
            compare(TT_TEST0, TM_F32, inter, positions);
            compare(TT_TEST0, TM_F64, inter, positions);
            compare(TT_TEST1, TM_F32, inter, positions);
        }
}
