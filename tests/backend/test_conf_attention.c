/*
 * test_conf_attention.c — tm_sdpa's fused path on the test devices
 * against the CPU: the `attention` and `attention_backward` entries run
 * queued on a device whose memory the host cannot touch, and the front
 * end's staging (test:1 takes F32 and I64 only) converts what the device
 * declines.  Each case runs forward and backward (sum(y * R)) from the
 * same leaves on the CPU and on each device; the output and every
 * gradient must be on the device, with the CPU's layout and values.
 *
 * Values.  test:0 runs the CPU's kernels on every dtype: bitwise equal.
 * test:1 gets F32 copies of F64 and F16 operands: bitwise equal to the
 * CPU's run on F32 copies of the float leaves, converted back (the
 * contract of the dtype fallback), and a BOOL mask as the additive float
 * mask (0 / -inf), which adds the same terms.
 */
#define _DEFAULT_SOURCE
#include "../c/harness.h"
#include "testdev.h"

#include <stdlib.h>

typedef struct conf_case {
    const char *name;
    int64_t b, h, hkv, tq, tk, d, dv;
    tm_dtype qdt, kvdt;
    int mask; /* 0 none, 1 BOOL (Tq, Tk), 2 float (1, H, 1, Tk) */
    tm_sdpa_opts o;
    bool grads;
    uint64_t rng_seed; /* dropout: a fixed generator per run */
} conf_case;

#define NLEAF 5 /* q, k, v, R, mask */

static tm_tensor *leaf(const int64_t *s, tm_dtype dt, uint64_t seed)
{
    tm_tensor *t = tm_empty(s, 4, TM_F32);
    tm_rng r = tm_rng_new(seed);
    if (!t || tm_normal_(t, 0, 1, &r)) {
        tm_free(t);
        return NULL;
    }
    tm_tensor *c = dt == TM_F32 ? tm_retain(t) : tm_to_dtype(t, dt);
    tm_free(t);
    return c;
}

static bool make_leaves(const conf_case *c, tm_tensor **in)
{
    in[0] = leaf((int64_t[]){c->b, c->h, c->tq, c->d}, c->qdt, 1);
    in[1] = leaf((int64_t[]){c->b, c->hkv, c->tk, c->d}, c->kvdt, 2);
    in[2] = leaf((int64_t[]){c->b, c->hkv, c->tk, c->dv}, c->kvdt, 3);
    in[3] = leaf((int64_t[]){c->b, c->h, c->tq, c->dv}, c->qdt, 4);
    in[4] = NULL;
    if (c->mask == 1) {
        tm_tensor *u = leaf((int64_t[]){1, 1, c->tq, c->tk}, TM_F32, 5);
        in[4] = u ? tm_binary_scalar(TM_OP_GT, u, -0.7) : NULL;
        tm_free(u);
    } else if (c->mask == 2) {
        in[4] = leaf((int64_t[]){1, c->h, 1, c->tk}, c->qdt, 6);
    }
    for (int i = 0; i < 4; i++)
        if (!in[i]) return false;
    return c->mask == 0 || in[4];
}

/* One run on dev from copies of in (F32 copies of the float leaves when
 * as_f32): the output and the gradients of q, k, v in out[] (on dev) and
 * copied to the host in host[] (back in the leaves' dtypes when as_f32).
 * Returns the count, -1 on failure. */
static int run_on(const conf_case *c, tm_tensor *const *in, tm_device dev,
                  bool as_f32, tm_tensor **out, tm_tensor **host)
{
    tm_tensor *x[NLEAF] = {0}, *y = NULL, *p = NULL, *l = NULL;
    int n = -1;
    for (int i = 0; i < NLEAF; i++) {
        if (!in[i]) continue;
        tm_tensor *s = as_f32 && tm_dtype_is_float(tm_dtype_of(in[i]))
                           ? tm_to_dtype(in[i], TM_F32)
                           : tm_retain(in[i]);
        x[i] = s ? (tm_device_eq(dev, TM_CPU) ? tm_clone(s) : tm_to(s, dev))
                 : NULL;
        tm_free(s);
        if (!x[i]) goto done;
    }
    if (c->grads)
        for (int i = 0; i < 3; i++) tm_requires_grad_(x[i], true);
    tm_sdpa_opts o = c->o;
    tm_rng r = tm_rng_new(c->rng_seed);
    if (o.dropout_p > 0) o.rng = &r;
    o.mask = x[4];
    if (!(y = tm_sdpa(x[0], x[1], x[2], &o))) goto done;
    out[0] = tm_detach(y);
    n = 1;
    if (c->grads) {
        if (!(p = tm_mul(y, x[3])) || !(l = tm_sum(p, NULL, 0, false)) ||
            tm_backward(l)) {
            n = -1;
            goto done;
        }
        for (int i = 0; i < 3; i++) out[n++] = tm_retain(tm_grad(x[i]));
    }
    for (int i = 0; i < n; i++) {
        tm_tensor *h = out[i] ? tm_to(out[i], TM_CPU) : NULL;
        host[i] = h && as_f32 ? tm_to_dtype(h, tm_dtype_of(in[i ? i - 1 : 0]))
                              : tm_retain(h);
        tm_free(h);
        if (!host[i]) n = -1;
    }
    if (tm_synchronize(dev)) n = -1;
done:
    if (n < 0)
        tt_fail(__FILE__, __LINE__, "%s on %s: %s", c->name,
                tm_device_name(dev), tm_last_error());
    tm_free(y), tm_free(p), tm_free(l);
    for (int i = 0; i < NLEAF; i++) tm_free(x[i]);
    return n;
}

static void free_all(tm_tensor **t, int n)
{
    for (int i = 0; i < n; i++) tm_free(t[i]), t[i] = NULL;
}

static void conf_run(const conf_case *c)
{
    tm_tensor *in[NLEAF] = {0};
    tm_tensor *cpu[4] = {0}, *cpuh[4] = {0}, *f32h[4] = {0}, *tmp[4] = {0};
    if (!make_leaves(c, in)) {
        tt_fail(__FILE__, __LINE__, "%s: leaves: %s", c->name,
                tm_last_error());
        free_all(in, NLEAF);
        return;
    }
    int n = run_on(c, in, TM_CPU, false, cpu, cpuh);
    int nf = run_on(c, in, TM_CPU, true, tmp, f32h);
    free_all(tmp, 4);
    for (int d = 0; n > 0 && nf == n && d < 2; d++) {
        tm_device dev = TM_DEVICE(TM_DEVICE_TEST, d);
        if (!tm_device_available(dev)) continue;
        tm_mem_stats m0, m1;
        tm_device_memory_stats(dev, &m0);
        tm_tensor *out[4] = {0}, *host[4] = {0};
        int nd = run_on(c, in, dev, false, out, host);
        for (int k = 0; nd == n && k < n; k++) {
            tm_tensor *want = d == 0 ? cpuh[k] : f32h[k];
            if (!tm_device_eq(tm_device_of(out[k]), dev))
                tt_fail(__FILE__, __LINE__, "%s on test:%d: result %d is "
                        "not on the device", c->name, d, k);
            else if (!tt_same_bits(host[k], want))
                tt_fail(__FILE__, __LINE__, "%s on test:%d: result %d "
                        "differs from the CPU's", c->name, d, k);
        }
        free_all(out, 4), free_all(host, 4);
        tm_synchronize(dev);
        tm_device_memory_stats(dev, &m1);
        if (m1.current_bytes != m0.current_bytes)
            tt_fail(__FILE__, __LINE__, "%s on test:%d: device memory %zu "
                    "bytes after, %zu before", c->name, d, m1.current_bytes,
                    m0.current_bytes);
    }
    if (n > 0 && nf != n)
        tt_fail(__FILE__, __LINE__, "%s: the F32 run failed", c->name);
    free_all(cpu, 4), free_all(cpuh, 4), free_all(f32h, 4);
    free_all(in, NLEAF);
}

TEST(conformance_attention_causal_gqa)
{
    conf_case c = {"causal gqa", 2, 4, 2, 37, 45, 16, 24, TM_F32, TM_F32, 0,
                   {.causal = true, .causal_offset = 8,
                    .impl = TM_SDPA_FUSED},
                   true, 0};
    conf_run(&c);
}

TEST(conformance_attention_masks_and_window)
{
    conf_case b = {"bool mask window", 1, 2, 1, 30, 30, 8, 8, TM_F32,
                   TM_F32, 1,
                   {.causal = true, .window = 9, .impl = TM_SDPA_FUSED},
                   true, 0};
    conf_run(&b);
    conf_case f = {"float mask", 2, 3, 3, 17, 40, 32, 32, TM_F32, TM_F32, 2,
                   {.scale = 0.2, .impl = TM_SDPA_FUSED}, true, 0};
    conf_run(&f);
}

TEST(conformance_attention_f64_dropout_and_narrow_cache)
{
    conf_case f64 = {"f64", 1, 2, 2, 21, 21, 16, 16, TM_F64, TM_F64, 2,
                     {.causal = true, .impl = TM_SDPA_FUSED}, true, 0};
    conf_run(&f64);
    conf_case dr = {"dropout", 1, 4, 2, 25, 33, 16, 16, TM_F32, TM_F32, 0,
                    {.dropout_p = 0.2, .impl = TM_SDPA_FUSED}, true, 9};
    conf_run(&dr);
    /* an F32 q over an F16 cache (no gradient): the forward only */
    conf_case kv = {"f16 cache", 1, 4, 1, 3, 50, 32, 32, TM_F32, TM_F16, 0,
                    {.causal = true, .causal_offset = 47,
                     .impl = TM_SDPA_FUSED},
                    false, 0};
    conf_run(&kv);
}

TEST(conformance_attention_refuses_mixed_devices)
{
    tm_tensor *q = tm_zeros((int64_t[]){1, 2, 3, 4}, 4, TM_F32);
    tm_tensor *k = q ? tm_to(q, TT_TEST0) : NULL;
    tm_tensor *m = tm_ones((int64_t[]){3, 3}, 2, TM_BOOL);
    REQUIRE(q && k && m);
    CHECK_NULL_ERR(tm_sdpa(q, k, k, NULL), TM_EDEVICE, "tm_sdpa");
    tm_tensor *kd = tm_to(q, TT_TEST0);
    tm_sdpa_opts o = {.mask = m};
    CHECK_NULL_ERR(tm_sdpa(kd, k, k, &o), TM_EDEVICE, "tm_sdpa");
    tm_free(q), tm_free(k), tm_free(m), tm_free(kd);
}
