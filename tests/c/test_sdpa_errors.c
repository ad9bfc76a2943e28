/*
 * test_sdpa_errors.c — tm_sdpa refuses bad input with a status and a
 * message naming the function and the values, and leaks nothing.
 */
#include "harness.h"

static tm_tensor *t4(int64_t a, int64_t b, int64_t c, int64_t d, tm_dtype dt)
{
    return tm_zeros((int64_t[]){a, b, c, d}, 4, dt);
}

TEST(sdpa_rejects_bad_tensors)
{
    tm_tensor *q = t4(2, 4, 5, 8, TM_F32), *k = t4(2, 2, 6, 8, TM_F32);
    tm_tensor *v = t4(2, 2, 6, 3, TM_F32), *qi = t4(2, 4, 5, 8, TM_I32);
    tm_tensor *q2 = tm_zeros((int64_t[]){5, 8}, 2, TM_F32);
    tm_tensor *k3 = tm_zeros((int64_t[]){2, 6, 8}, 3, TM_F32);
    tm_tensor *kb = t4(3, 2, 6, 8, TM_F32), *kd = t4(2, 2, 6, 7, TM_F32);
    tm_tensor *vt = t4(2, 2, 7, 3, TM_F32), *k3h = t4(2, 3, 6, 8, TM_F32);
    tm_tensor *v3h = t4(2, 3, 6, 3, TM_F32);
    REQUIRE(q && k && v && qi && q2 && k3 && kb && kd && vt && k3h && v3h);
    CHECK_NULL_ERR(tm_sdpa(NULL, k, v, NULL), TM_EINVAL, "tm_sdpa");
    CHECK_NULL_ERR(tm_sdpa(qi, k, v, NULL), TM_EDTYPE, "q must have a float");
    CHECK_NULL_ERR(tm_sdpa(q2, k, v, NULL), TM_ESHAPE, "at least 3 dims");
    CHECK_NULL_ERR(tm_sdpa(q, k3, v, NULL), TM_ESHAPE, "number of dims");
    CHECK_NULL_ERR(tm_sdpa(q, kb, v, NULL), TM_ESHAPE, "leading (batch)");
    CHECK_NULL_ERR(tm_sdpa(q, kd, v, NULL), TM_ESHAPE, "8 != 7");
    CHECK_NULL_ERR(tm_sdpa(q, k, vt, NULL), TM_ESHAPE, "sequence length");
    CHECK_NULL_ERR(tm_sdpa(q, k3h, v3h, NULL), TM_ESHAPE,
                   "query heads (4, q [2,4,5,8]) must be a multiple");
    tm_tensor *q0 = t4(2, 4, 5, 0, TM_F32), *k0 = t4(2, 2, 6, 0, TM_F32);
    CHECK_NULL_ERR(tm_sdpa(q0, k0, v, NULL), TM_ESHAPE, "D >= 1");
    tm_free(q0), tm_free(k0);
    tm_free(q), tm_free(k), tm_free(v), tm_free(qi), tm_free(q2);
    tm_free(k3), tm_free(kb), tm_free(kd), tm_free(vt), tm_free(k3h);
    tm_free(v3h);
}

TEST(sdpa_rejects_bad_masks)
{
    tm_tensor *q = t4(2, 4, 5, 8, TM_F32), *k = t4(2, 2, 6, 8, TM_F32);
    tm_tensor *v = t4(2, 2, 6, 3, TM_F32);
    tm_tensor *mi = tm_zeros((int64_t[]){5, 6}, 2, TM_I64);
    tm_tensor *ms = tm_zeros((int64_t[]){5, 7}, 2, TM_BOOL);
    tm_tensor *m5 = tm_zeros((int64_t[]){1, 2, 4, 5, 6}, 5, TM_BOOL);
    tm_tensor *mg = tm_zeros((int64_t[]){5, 6}, 2, TM_F32);
    REQUIRE(q && k && v && mi && ms && m5 && mg);
    tm_sdpa_opts o = {.mask = mi};
    CHECK_NULL_ERR(tm_sdpa(q, k, v, &o), TM_EDTYPE, "BOOL (true = takes");
    o.mask = ms;
    CHECK_NULL_ERR(tm_sdpa(q, k, v, &o), TM_ESHAPE,
                   "mask [5,7] does not broadcast to the scores' shape "
                   "[2,4,5,6]");
    o.mask = m5;
    CHECK_NULL_ERR(tm_sdpa(q, k, v, &o), TM_ESHAPE, "does not broadcast");
    /* a float mask that wants a gradient gets none silently: refused */
    tm_requires_grad_(mg, true);
    o.mask = mg;
    CHECK_NULL_ERR(tm_sdpa(q, k, v, &o), TM_EUNSUPPORTED,
                   "not differentiable");
    tm_free(q), tm_free(k), tm_free(v), tm_free(mi), tm_free(ms);
    tm_free(m5), tm_free(mg);
}

TEST(sdpa_rejects_bad_options)
{
    tm_tensor *q = t4(1, 2, 5, 8, TM_F32), *k = t4(1, 2, 6, 8, TM_F32);
    REQUIRE(q && k);
    tm_sdpa_opts o = {.window = -1};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "window must be");
    o = (tm_sdpa_opts){.dropout_p = 1.0};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL,
                   "dropout_p must be in [0, 1), got 1");
    o.dropout_p = -0.5;
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "got -0.5");
    o.dropout_p = NAN;
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "dropout_p");
    o = (tm_sdpa_opts){.scale = INFINITY};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "scale must be finite");
    o = (tm_sdpa_opts){.scale = NAN};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "scale must be finite");
    o = (tm_sdpa_opts){.impl = (tm_sdpa_impl)7};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "got 7");
    o = (tm_sdpa_opts){.causal = true, .causal_offset = INT64_MIN};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "causal_offset");
    /* a failed call leaves the generator as it was */
    tm_rng r = tm_rng_new(1);
    o = (tm_sdpa_opts){.dropout_p = 0.5, .rng = &r, .window = -2};
    CHECK_NULL_ERR(tm_sdpa(q, k, k, &o), TM_EINVAL, "window");
    CHECK_INT(r.counter, 0);
    tm_free(q), tm_free(k);
}

/* Forward and backward of a masked GQA call with dropout, by `impl`:
 * every failing allocation must surface as TM_ENOMEM with nothing
 * leaked. */
static tm_status sdpa_seq_impl(tm_sdpa_impl impl)
{
    tm_status st = TM_ENOMEM;
    tm_tensor *q = t4(1, 4, 5, 8, TM_F32), *k = t4(1, 2, 6, 8, TM_F32);
    tm_tensor *v = t4(1, 2, 6, 3, TM_F32), *y = NULL, *l = NULL;
    tm_tensor *m = tm_ones((int64_t[]){5, 6}, 2, TM_BOOL);
    tm_rng r = tm_rng_new(4);
    if (!q || !k || !v || !m || tm_requires_grad_(q, true) ||
        tm_requires_grad_(k, true))
        goto done;
    tm_sdpa_opts o = {.mask = m, .causal = true, .dropout_p = 0.1,
                      .rng = &r, .impl = impl};
    if (!(y = tm_sdpa(q, k, v, &o))) {
        st = tm_last_status();
        if (r.counter != 0) st = TM_ESTATE; /* the generator moved */
        goto done;
    }
    if (!(l = tm_sum(y, NULL, 0, false))) goto done;
    st = tm_backward(l);
done:
    tm_free(q), tm_free(k), tm_free(v), tm_free(m), tm_free(y), tm_free(l);
    return st;
}

static tm_status sdpa_seq_fused(void) { return sdpa_seq_impl(TM_SDPA_FUSED); }
static tm_status sdpa_seq_composed(void)
{
    return sdpa_seq_impl(TM_SDPA_COMPOSED);
}

TEST(sdpa_every_allocation_failure_is_reported)
{
    CHECK_EVERY_ALLOC_FAILURE(sdpa_seq_fused, 10);
    CHECK_EVERY_ALLOC_FAILURE(sdpa_seq_composed, 20);
}
