/* test_kv_cache.c — the key/value cache's storage: what append and update
 * keep and return (in position order, also from a ring that wrapped),
 * truncate and reset, bytes used, and every error leaving the cache as it
 * was.  Attention over the cache is in test_kv_cache_attend.c. */
#include "harness.h"

#include "foundry/attention.h"

#include <stdlib.h>

enum { B = 2, H = 2, D = 4, DV = 3 };

/* The value a token at `pos` carries in (b, h, d): its position is
 * readable back from it, `salt` tells two writes of one position apart.
 * Exact in F32. */
static double tok_val(int salt, int64_t b, int64_t h, int64_t pos, int64_t d)
{
    return salt * 1000.0 + (double)(b * H + h) * 100.0 + (double)pos +
           (double)d / 8.0;
}

/* Tokens pos0 .. pos0 + n - 1 as a (B, H, n, dim) F32 tensor. */
static tm_tensor *toks(int64_t pos0, int64_t n, int64_t dim, int salt)
{
    int64_t cnt = B * H * n * dim;
    double *x = malloc((size_t)cnt * sizeof *x);
    if (!x) return NULL;
    for (int64_t b = 0, i = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t p = 0; p < n; p++)
                for (int64_t d = 0; d < dim; d++)
                    x[i++] = tok_val(salt, b, h, pos0 + p, d);
    tm_tensor *t64 = tm_from_buffer(x, (int64_t[]){B, H, n, dim}, 4, TM_F64);
    tm_tensor *t = t64 ? tm_to_dtype(t64, TM_F32) : NULL;
    tm_free(t64);
    free(x);
    return t;
}

/* `t` (B, H, count, dim) holds positions from pos0 on, each written with
 * salt[pos] (NULL: 0). */
static void check_positions(const char *file, int line, const tm_tensor *t,
                            int64_t pos0, int64_t count, int64_t dim,
                            const int *salt)
{
    int64_t cnt = B * H * count * dim;
    double *want = malloc((size_t)(cnt ? cnt : 1) * sizeof *want);
    if (!want) return;
    for (int64_t b = 0, i = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t p = 0; p < count; p++)
                for (int64_t d = 0; d < dim; d++)
                    want[i++] = tok_val(salt ? salt[pos0 + p] : 0, b, h,
                                        pos0 + p, d);
    tt_check_shape(file, line, t, (int64_t[]){B, H, count, dim}, 4);
    if (tm_numel(t) == cnt) tt_check_values(file, line, t, want, cnt, 0, 0);
    free(want);
}
#define CHECK_POSITIONS(t, pos0, count, dim, salt)                            \
    check_positions(__FILE__, __LINE__, (t), (pos0), (count), (dim), (salt))

/* Appends tokens pos .. pos + n - 1 (salt) to `layer` through update and
 * checks what comes back: positions [want0, pos + n) and the offset of
 * the first new one. */
static void update_and_check(const char *file, int line, tm_kv_cache *c,
                             int layer, int64_t pos, int64_t n, int64_t want0,
                             const int *salt)
{
    tm_tensor *k = toks(pos, n, D, salt ? salt[pos] : 0);
    tm_tensor *v = toks(pos, n, DV, salt ? salt[pos] : 0);
    tm_tensor *ka = NULL, *va = NULL;
    int64_t off = -1;
    tm_status st = k && v ? tm_kv_cache_update(c, layer, k, v, &ka, &va, &off)
                          : TM_ENOMEM;
    if (st) {
        tt_fail(file, line, "update at %lld: %s", (long long)pos,
                tm_last_error());
    } else {
        check_positions(file, line, ka, want0, pos + n - want0, D, salt);
        check_positions(file, line, va, want0, pos + n - want0, DV, salt);
        if (off != pos - want0)
            tt_fail(file, line, "offset %lld, expected %lld", (long long)off,
                    (long long)(pos - want0));
        if (tm_kv_cache_length(c, layer) != pos + n)
            tt_fail(file, line, "length %lld, expected %lld",
                    (long long)tm_kv_cache_length(c, layer),
                    (long long)(pos + n));
    }
    tm_free(ka);
    tm_free(va);
    tm_free(k);
    tm_free(v);
}
#define UPDATE_AND_CHECK(c, layer, pos, n, want0, salt)                       \
    update_and_check(__FILE__, __LINE__, (c), (layer), (pos), (n), (want0),   \
                     (salt))

static tm_kv_cache *new_cache(int layers, int64_t tmax, int64_t window,
                              tm_dtype dt)
{
    tm_kv_cache_opts o = {0};
    o.dtype = dt;
    o.v_head_dim = DV;
    o.window = window;
    return tm_kv_cache_new(layers, B, H, tmax, D, &o);
}

TEST(kv_cache_bytes_are_the_allocated_storage)
{
    /* Full layers hold max_len slots, windowed ones W: 2 layers of 50 and
     * one of 8, (D + Dv) elements per slot, batch x heads of them. */
    tm_kv_cache_opts o = {0};
    o.v_head_dim = DV;
    o.windows = (int64_t[]){0, 8, 64};
    for (int i = 0; i < 3; i++) {
        o.dtype = (tm_dtype[]){TM_F32, TM_F16, TM_BF16}[i];
        tm_kv_cache *c = tm_kv_cache_new(3, B, H, 50, D, &o);
        REQUIRE(c);
        size_t per = (size_t)(B * H * (D + DV)) * tm_dtype_size(o.dtype);
        CHECK_INT(tm_kv_cache_nbytes(c), (50 + 8 + 50) * per);
        CHECK_INT(tm_kv_cache_layers(c), 3);
        CHECK_INT(tm_kv_cache_window(c, 1), 8);
        CHECK_INT(tm_kv_cache_window(c, 2), 64);
        CHECK_INT(tm_kv_cache_max_len(c), 50);
        CHECK_INT(tm_kv_cache_dtype(c), o.dtype);
        CHECK_INT(tm_kv_cache_length(c, 0), 0);
        tm_kv_cache_free(c);
    }
}

TEST(kv_cache_update_returns_every_position_in_order)
{
    tm_kv_cache *c = new_cache(2, 40, 0, TM_F32);
    REQUIRE(c);
    int64_t pos = 0, chunks[] = {1, 5, 1, 1, 7, 3, 1};
    for (int i = 0; i < 7; i++) {
        UPDATE_AND_CHECK(c, 1, pos, chunks[i], 0, NULL);
        pos += chunks[i];
    }
    CHECK_INT(tm_kv_cache_length(c, 0), 0);
    tm_tensor *k = toks(0, 2, D, 0), *v = toks(0, 2, DV, 0);
    CHECK_INT(tm_kv_cache_append(c, 0, k, v), TM_OK);
    CHECK_INT(tm_kv_cache_length(c, 0), 2);
    tm_free(k);
    tm_free(v);
    tm_kv_cache_free(c);
}

TEST(kv_cache_ring_returns_the_window_in_order_after_wrapping)
{
    /* W = 4: a new chunk sees the W - 1 positions before it; chunks of
     * every size against the ring's wrap point, some longer than W. */
    tm_kv_cache *c = new_cache(1, 100, 4, TM_F32);
    REQUIRE(c);
    CHECK_INT(tm_kv_cache_nbytes(c), 4 * B * H * (D + DV) * 4);
    int64_t pos = 0, chunks[] = {1, 2, 1, 1, 3, 1, 5, 1, 2, 4, 1, 1, 9, 1};
    for (int i = 0; i < 14; i++) {
        int64_t keep = pos < 3 ? pos : 3;
        UPDATE_AND_CHECK(c, 0, pos, chunks[i], pos - keep, NULL);
        pos += chunks[i];
    }
    tm_kv_cache_free(c);
}

TEST(kv_cache_truncate_drops_positions_and_reuses_their_slots)
{
    int salt[40] = {0};
    tm_kv_cache *c = new_cache(2, 40, 0, TM_F32);
    REQUIRE(c);
    UPDATE_AND_CHECK(c, 0, 0, 20, 0, salt);
    UPDATE_AND_CHECK(c, 1, 0, 20, 0, salt);
    CHECK_INT(tm_kv_cache_truncate(c, 15), TM_OK);
    CHECK_INT(tm_kv_cache_length(c, 0), 15);
    CHECK_INT(tm_kv_cache_length(c, 1), 15);
    /* Positions 15.. again, with other values. */
    for (int p = 15; p < 40; p++) salt[p] = 1;
    UPDATE_AND_CHECK(c, 0, 15, 3, 0, salt);
    CHECK_INT(tm_kv_cache_reset(c), TM_OK);
    CHECK_INT(tm_kv_cache_length(c, 0), 0);
    for (int p = 0; p < 40; p++) salt[p] = 2;
    UPDATE_AND_CHECK(c, 0, 0, 2, 0, salt);
    tm_kv_cache_free(c);
}

TEST(kv_cache_ring_truncates_only_while_it_holds_the_window)
{
    int salt[40] = {0};
    tm_kv_cache *c = new_cache(1, 40, 4, TM_F32);
    REQUIRE(c);
    /* Not wrapped yet: any length back works. */
    UPDATE_AND_CHECK(c, 0, 0, 3, 0, salt);
    CHECK_INT(tm_kv_cache_truncate(c, 1), TM_OK);
    salt[1] = salt[2] = salt[3] = 1;
    UPDATE_AND_CHECK(c, 0, 1, 3, 0, salt);
    /* Positions 0..9 written: slots hold 6..9; a query at 9 needs 6..8. */
    UPDATE_AND_CHECK(c, 0, 4, 6, 1, salt);
    CHECK_STATUS(tm_kv_cache_truncate(c, 8), TM_ESTATE, "needs them from 5");
    CHECK_INT(tm_kv_cache_length(c, 0), 10);
    CHECK_INT(tm_kv_cache_truncate(c, 9), TM_OK);
    salt[9] = salt[10] = 2;
    UPDATE_AND_CHECK(c, 0, 9, 2, 6, salt);
    /* Back by one again, then a single token. */
    CHECK_INT(tm_kv_cache_truncate(c, 10), TM_OK);
    salt[10] = 3;
    UPDATE_AND_CHECK(c, 0, 10, 1, 7, salt);
    CHECK_STATUS(tm_kv_cache_truncate(c, 0), TM_ESTATE, "no longer holds");
    CHECK_INT(tm_kv_cache_reset(c), TM_OK);
    UPDATE_AND_CHECK(c, 0, 0, 2, 0, NULL);
    tm_kv_cache_free(c);
}

TEST(kv_cache_stores_f16_and_bf16_rounded)
{
    /* 1 + 2^-10 survives F16 (10 fraction bits) but not BF16 (7). */
    tm_dtype dts[2] = {TM_F16, TM_BF16};
    for (int i = 0; i < 2; i++) {
        tm_kv_cache *c = new_cache(1, 8, 0, dts[i]);
        REQUIRE(c);
        tm_tensor *k = tm_full((int64_t[]){B, H, 1, D}, 4, 1.0 + 1.0 / 1024,
                               TM_F32);
        tm_tensor *v = tm_full((int64_t[]){B, H, 1, DV}, 4, 3.0, TM_F64);
        tm_tensor *ka = NULL, *va = NULL;
        REQUIRE(k && v);
        CHECK_INT(tm_kv_cache_update(c, 0, k, v, &ka, &va, NULL), TM_OK);
        REQUIRE(ka && va);
        CHECK_INT(tm_dtype_of(ka), dts[i]);
        double got;
        CHECK_INT(tm_get(ka, (int64_t[]){1, 1, 0, 3}, &got), TM_OK);
        CHECK_NEAR(got, i ? 1.0 : 1.0 + 1.0 / 1024, 0);
        CHECK_INT(tm_get(va, (int64_t[]){0, 1, 0, 2}, &got), TM_OK);
        CHECK_NEAR(got, 3.0, 0);
        tm_free(ka);
        tm_free(va);
        tm_free(k);
        tm_free(v);
        tm_kv_cache_free(c);
    }
}

TEST(kv_cache_new_rejects_bad_configurations)
{
    tm_kv_cache_opts o = {0};
    tm_clear_error();
    CHECK(!tm_kv_cache_new(0, B, H, 8, D, NULL));
    CHECK(strstr(tm_last_error(), "layers must be positive, got 0"));
    CHECK(!tm_kv_cache_new(1, B, H, -3, D, NULL));
    CHECK(strstr(tm_last_error(), "max_len must be positive, got -3"));
    CHECK(!tm_kv_cache_new(1, B, 0, 8, D, NULL));
    CHECK(strstr(tm_last_error(), "kv_heads"));
    o.v_head_dim = -1;
    CHECK(!tm_kv_cache_new(1, B, H, 8, D, &o));
    CHECK(strstr(tm_last_error(), "v_head_dim"));
    o.v_head_dim = 0;
    o.dtype = TM_I32;
    CHECK(!tm_kv_cache_new(1, B, H, 8, D, &o));
    CHECK_INT(tm_last_status(), TM_EDTYPE);
    CHECK(strstr(tm_last_error(), "got i32"));
    o.dtype = TM_F32;
    o.windows = (int64_t[]){0, -2};
    CHECK(!tm_kv_cache_new(2, B, H, 8, D, &o));
    CHECK(strstr(tm_last_error(), "layer 1: window must be >= 0, got -2"));
    o.windows = NULL;
    o.device = TM_DEVICE(TM_DEVICE_CUDA, 15);
    CHECK(!tm_kv_cache_new(1, B, H, 8, D, &o));
    CHECK_INT(tm_last_status(), TM_EDEVICE);
    tm_kv_cache_free(NULL);
}

TEST(kv_cache_errors_leave_the_cache_unchanged)
{
    tm_kv_cache *c = new_cache(2, 6, 0, TM_F32);
    REQUIRE(c);
    tm_tensor *k = toks(0, 4, D, 0), *v = toks(0, 4, DV, 0);
    tm_tensor *k3 = toks(0, 3, D, 0), *kd = toks(0, 4, DV, 0);
    tm_tensor *ki = tm_zeros((int64_t[]){B, H, 4, D}, 4, TM_I32);
    tm_tensor *kb = tm_zeros((int64_t[]){1, H, 4, D}, 4, TM_F32);
    tm_tensor *ka = NULL, *va = NULL;
    REQUIRE(k && v && k3 && kd && ki && kb);
    CHECK_STATUS(tm_kv_cache_append(c, 2, k, v), TM_ERANGE,
                 "layer 2 out of range for a cache of 2 layers");
    CHECK_STATUS(tm_kv_cache_append(c, -1, k, v), TM_ERANGE, "layer -1");
    CHECK_INT(tm_kv_cache_length(c, 5), -1);
    CHECK_STATUS(tm_kv_cache_append(c, 0, k3, v), TM_ESHAPE,
                 "v has shape [2,2,4,3], expected [2,2,n,3] with n >= 1 "
                 "equal to k's");
    CHECK_STATUS(tm_kv_cache_append(c, 0, kd, v), TM_ESHAPE,
                 "k has shape [2,2,4,3], expected [2,2,n,4]");
    CHECK_STATUS(tm_kv_cache_append(c, 0, kb, v), TM_ESHAPE, "[1,2,4,4]");
    CHECK_STATUS(tm_kv_cache_append(c, 0, ki, v), TM_EDTYPE,
                 "k must be a float tensor, got i32");
    CHECK_STATUS(tm_kv_cache_append(c, 0, k, NULL), TM_EINVAL, "v");
    CHECK_INT(tm_kv_cache_append(c, 0, k, v), TM_OK);
    /* 4 + 4 > 6: refused whole, nothing written. */
    CHECK_STATUS(tm_kv_cache_update(c, 0, k, v, &ka, &va, NULL), TM_ERANGE,
                 "layer 0: appending 4 tokens to 4 passes max_len 6");
    CHECK(!ka && !va);
    CHECK_INT(tm_kv_cache_length(c, 0), 4);
    CHECK_STATUS(tm_kv_cache_update(c, 0, k, v, NULL, &va, NULL), TM_EINVAL,
                 "must not be NULL");
    /* Layer 1 is empty, so no truncation to 1 for the cache. */
    CHECK_STATUS(tm_kv_cache_truncate(c, 1), TM_ERANGE,
                 "cannot truncate to 1: layer 1 holds 0 positions");
    CHECK_STATUS(tm_kv_cache_truncate(c, -1), TM_ERANGE, "to -1");
    CHECK_INT(tm_kv_cache_length(c, 0), 4);
    CHECK_STATUS(tm_kv_cache_truncate(NULL, 0), TM_EINVAL, "NULL");
    CHECK_STATUS(tm_kv_cache_reset(NULL), TM_EINVAL, "NULL");
    UPDATE_AND_CHECK(c, 0, 4, 2, 0, NULL);
    tm_free(k);
    tm_free(v);
    tm_free(k3);
    tm_free(kd);
    tm_free(ki);
    tm_free(kb);
    tm_kv_cache_free(c);
}
