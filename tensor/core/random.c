/* random.c — generators, the default generator, and the random fills'
 * argument checking (the numbers themselves come from the backend's
 * `random` entry; the layout is documented in foundry/random.h). */
#include "tensor_impl.h"
#include "random_impl.h"

#include <math.h>
#include <pthread.h>

enum { TM__RAND_UNIFORM = 0, TM__RAND_NORMAL = 1, TM__RAND_INT = 2 };

/* The process-wide generator behind every `rng == NULL`. */
static pthread_mutex_t tm__rng_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_rng tm__rng_default = {0, 0}; /* tm_rng_new(0) */

/* rng itself, or the default generator with its lock held. */
static tm_rng *tm__rng_acquire(tm_rng *rng)
{
    if (rng) return rng;
    pthread_mutex_lock(&tm__rng_lock);
    return &tm__rng_default;
}

static void tm__rng_release(const tm_rng *rng)
{
    if (!rng) pthread_mutex_unlock(&tm__rng_lock);
}

tm_rng tm_rng_new(uint64_t seed)
{
    tm_rng r = {seed, 0};
    return r;
}

tm_rng tm_rng_split(tm_rng *rng)
{
    tm_rng *r = tm__rng_acquire(rng);
    tm_rng child = {
        tm__mix64(r->key ^ tm__mix64(r->counter + 0x9E3779B97F4A7C15ull)), 0};
    r->counter += 1;
    tm__rng_release(rng);
    return child;
}

void tm_rng_u32(tm_rng *rng, uint32_t *out, size_t n)
{
    if (n == 0) return;
    if (!out) {
        TM_ERR(TM_EINVAL, "out is NULL with n %zu", n);
        return;
    }
    tm_rng *r = tm__rng_acquire(rng);
    uint32_t x[4];
    size_t i = 0;
    while (i < n) {
        tm__philox_block(r->key, r->counter++, x);
        for (int l = 0; l < 4 && i < n; l++) out[i++] = x[l];
    }
    tm__rng_release(rng);
}

tm_rng tm__rng_take(tm_rng *rng, uint64_t blocks)
{
    tm_rng *r = tm__rng_acquire(rng);
    tm_rng was = *r;
    r->counter += blocks;
    tm__rng_release(rng);
    return was;
}

void tm_manual_seed(uint64_t seed)
{
    pthread_mutex_lock(&tm__rng_lock);
    tm__rng_default = tm_rng_new(seed);
    pthread_mutex_unlock(&tm__rng_lock);
}

/* ----------------------------------------------------------------- fills */

/* Runs the backend fill on t (through a contiguous temporary when t is
 * not contiguous: the temporary's row-major order is the view's).
 *
 * A device whose backend declines the fill's dtype gets the CPU's fill,
 * copied over, rather than the dtype fallback's: random.h defines the
 * values per dtype (64-bit draws for F64, 32-bit ones rounded once into
 * F16/BF16, uniform's results kept below high), which a fill computed in
 * F32 and converted does not give — F16/BF16 values would round twice and
 * reach high itself, F64 ones would come from other draws, and integers
 * past 2^24 would not be exact. */
static tm_status tm__random_fill(const char *fn, tm_tensor *t, int kind,
                                 double p0, double p1, tm_rng *rng)
{
    tm_tensor *tmp = NULL, *dst = t, *host = NULL;
    if (!tm_is_contiguous(t)) {
        tmp = tm__tensor_new(fn, t->shape, t->ndim, t->dtype,
                             tm_device_of(t));
        if (!tmp) return tm_last_status();
        dst = tmp;
    }
    tm_ctx *cx = tm__ctx(dst);
    if (cx->backend->supports &&
        !cx->backend->supports(cx, TM_ENTRY_RANDOM, kind, &dst->dtype, 1)) {
        host = tm__tensor_new(fn, dst->shape, dst->ndim, dst->dtype, TM_CPU);
        if (!host) {
            tm_free(tmp);
            return tm_last_status();
        }
        cx = tm__cpu_ctx();
    }
    tm_buf b = tm__buf(host ? host : dst);
    tm_rng *r = tm__rng_acquire(rng);
    tm__stage sg = {0};
    tm__stage_out(&sg, &b);
    tm_status st = TM__CALL_STAGED(fn, cx, &sg, RANDOM, kind, random, &b, kind,
                                   p0, p1, *r);
    if (!st && host) st = tm__transfer(fn, dst, host);
    if (!st) { /* the blocks random.h documents: 2 or 4 draws per block */
        int64_t n = tm_numel(dst), per = kind == 2 || dst->dtype == TM_F64
                                             ? 2 : 4;
        r->counter += (uint64_t)(n / per + (n % per != 0));
    }
    tm__rng_release(rng);
    if (!st && tmp) st = tm_copy_(t, tmp);
    tm_free(host);
    tm_free(tmp);
    if (!st) tm__bump_version(t);
    return st;
}

/* Checks shared by the in-place fills: a tensor whose elements do not
 * alias each other (a broadcast dim would receive several values). */
static tm_status tm__check_target(const char *fn, const tm_tensor *t)
{
    if (tm__check_tensor(fn, t, "tensor")) return tm_last_status();
    return tm__check_writable(fn, t);
}

static tm_status tm__check_float(const char *fn, tm_dtype dt)
{
    if (!tm_dtype_is_float(dt))
        return tm__errf(TM_EDTYPE, fn, "dtype %s is not a float dtype",
                        tm_dtype_name(dt));
    return TM_OK;
}

static tm_status tm__uniform(const char *fn, tm_tensor *t, double low,
                             double high, tm_rng *rng)
{
    if (tm__check_target(fn, t) || tm__check_float(fn, t->dtype))
        return tm_last_status();
    if (!isfinite(low) || !isfinite(high))
        return tm__errf(TM_EINVAL, fn, "low %g and high %g must be finite",
                        low, high);
    if (low > high)
        return tm__errf(TM_EINVAL, fn, "low %g must be <= high %g", low,
                        high);
    if (!isfinite(high - low))
        return tm__errf(TM_EINVAL, fn, "high - low (%g - %g) overflows",
                        high, low);
    return tm__random_fill(fn, t, TM__RAND_UNIFORM, low, high, rng);
}

static tm_status tm__normal(const char *fn, tm_tensor *t, double mean,
                            double std, tm_rng *rng)
{
    if (tm__check_target(fn, t) || tm__check_float(fn, t->dtype))
        return tm_last_status();
    if (!isfinite(mean) || !isfinite(std))
        return tm__errf(TM_EINVAL, fn, "mean %g and std %g must be finite",
                        mean, std);
    if (std < 0)
        return tm__errf(TM_EINVAL, fn, "std %g must be >= 0", std);
    return tm__random_fill(fn, t, TM__RAND_NORMAL, mean, std, rng);
}

/* The integers dtype dt holds exactly, as [*lo, *hi]. */
static void tm__int_limits(tm_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case TM_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case TM_U8: *lo = 0, *hi = UINT8_MAX; break;
    case TM_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case TM_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case TM_I64: *lo = INT64_MIN, *hi = INT64_MAX; break;
    case TM_BOOL: *lo = 0, *hi = 1; break;
    case TM_F16: *lo = -(1 << 11), *hi = 1 << 11; break;
    case TM_BF16: *lo = -(1 << 8), *hi = 1 << 8; break;
    case TM_F32: *lo = -(1 << 24), *hi = 1 << 24; break;
    default: *lo = -((int64_t)1 << 53), *hi = (int64_t)1 << 53; break;
    }
}

/* low < high, both within +-2^53 (backends receive them as doubles), and
 * every integer of [low, high) representable in dt. */
static tm_status tm__check_randint(const char *fn, int64_t low, int64_t high,
                                   tm_dtype dt)
{
    const int64_t big = (int64_t)1 << 53;
    if (low >= high)
        return tm__errf(TM_EINVAL, fn, "low %lld must be < high %lld",
                        (long long)low, (long long)high);
    if (low < -big || high > big)
        return tm__errf(TM_EINVAL, fn, "low %lld and high %lld must lie in "
                        "[-2^53, 2^53]", (long long)low, (long long)high);
    if (!tm_dtype_is_valid(dt))
        return tm__errf(TM_EDTYPE, fn, "dtype %d (%s) is not a dense dtype",
                        (int)dt, tm_dtype_name(dt));
    int64_t lo, hi;
    tm__int_limits(dt, &lo, &hi);
    if (low < lo || high - 1 > hi)
        return tm__errf(TM_EINVAL, fn, "range [%lld, %lld) does not fit "
                        "dtype %s, which holds the integers in [%lld, %lld]",
                        (long long)low, (long long)high, tm_dtype_name(dt),
                        (long long)lo, (long long)hi);
    return TM_OK;
}

tm_status tm_uniform_(tm_tensor *t, double low, double high, tm_rng *rng)
{
    return tm__uniform(__func__, t, low, high, rng);
}

tm_status tm_normal_(tm_tensor *t, double mean, double std, tm_rng *rng)
{
    return tm__normal(__func__, t, mean, std, rng);
}

tm_status tm_randint_(tm_tensor *t, int64_t low, int64_t high, tm_rng *rng)
{
    if (tm__check_target(__func__, t) ||
        tm__check_randint(__func__, low, high, t->dtype))
        return tm_last_status();
    return tm__random_fill(__func__, t, TM__RAND_INT, (double)low,
                           (double)high, rng);
}

/* ------------------------------------------------------------- creation */

/* A new float tensor for rand/randn after the shape and dtype checks. */
static tm_tensor *tm__new_float(const char *fn, const int64_t *shape,
                                int ndim, tm_dtype dt)
{
    if (tm__check_shape(fn, shape, ndim, dt, NULL) || tm__check_float(fn, dt))
        return NULL;
    return tm__tensor_new(fn, shape, ndim, dt, TM_CPU);
}

tm_tensor *tm_rand(const int64_t *shape, int ndim, tm_dtype dt)
{
    tm_tensor *t = tm__new_float(__func__, shape, ndim, dt);
    if (t && tm__uniform(__func__, t, 0.0, 1.0, NULL)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

tm_tensor *tm_randn(const int64_t *shape, int ndim, tm_dtype dt)
{
    tm_tensor *t = tm__new_float(__func__, shape, ndim, dt);
    if (t && tm__normal(__func__, t, 0.0, 1.0, NULL)) {
        tm_free(t);
        return NULL;
    }
    return t;
}

tm_tensor *tm_randint(int64_t low, int64_t high, const int64_t *shape,
                      int ndim, tm_dtype dt)
{
    if (tm__check_shape(__func__, shape, ndim, dt, NULL) ||
        tm__check_randint(__func__, low, high, dt))
        return NULL;
    tm_tensor *t = tm__tensor_new(__func__, shape, ndim, dt, TM_CPU);
    if (t && tm__random_fill(__func__, t, TM__RAND_INT, (double)low,
                             (double)high, NULL)) {
        tm_free(t);
        return NULL;
    }
    return t;
}
