/* cpu_random.c — the CPU kernel of the random fills (backend entry
 * `random`; the element layout is documented in foundry/random.h).
 *
 * dst is contiguous, n elements.  Elements are grouped into Philox blocks of
 * `per` elements (4 for 32-bit draws, 2 for 64-bit draws); block b uses
 * counter rng->counter + b, so element i depends only on (key, counter, i)
 * and the blocks can be split over threads in any way. */
#include "cpu_impl.h"
#include "../tensor/core/random_impl.h"

#include <math.h>

enum { TM__RAND_UNIFORM = 0, TM__RAND_NORMAL = 1, TM__RAND_INT = 2 };

typedef struct tm__rand_job {
    char *data;
    tm_dtype dt;
    size_t es;
    int64_t n;
    int kind, per;
    double p0, p1;   /* low/high or mean/std, as given */
    double lim;      /* uniform: replaces results that round to >= high */
    bool guard;      /* uniform with low < high */
    int64_t ilow;    /* randint */
    uint64_t range;  /* randint: high - low */
    uint64_t key, counter;
} tm__rand_job;

/* ------------------------------------------------- dtype rounding helpers */

/* v rounded to float dtype dt, as a double (exact). */
static double tm__round_to(tm_dtype dt, double v)
{
    switch (dt) {
    case TM_F32: return (double)(float)v;
    case TM_F16: return (double)tm__f16_to_f32(tm__f64_to_f16(v));
    case TM_BF16: return (double)tm__bf16_to_f32(tm__f64_to_bf16(v));
    default: return v;
    }
}

/* The next value of float dtype dt below v (v is a finite value of dt). */
static double tm__step_down(tm_dtype dt, double v)
{
    if (dt == TM_F64) return nextafter(v, -INFINITY);
    if (dt == TM_F32) return (double)nextafterf((float)v, -INFINITY);
    uint16_t h = dt == TM_F16 ? tm__f64_to_f16(v) : tm__f64_to_bf16(v);
    if ((h & 0x7fff) == 0) h = 0x8001; /* +-0 -> smallest negative */
    else if (h & 0x8000) h++;          /* negative: away from zero */
    else h--;                          /* positive: toward zero */
    return dt == TM_F16 ? (double)tm__f16_to_f32(h)
                        : (double)tm__bf16_to_f32(h);
}

/* -------------------------------------------------------------- stores */

static inline void tm__store_float(const tm__rand_job *j, int64_t i,
                                   double v)
{
    char *p = j->data + (size_t)i * j->es;
    switch (j->dt) {
    case TM_F32: *(float *)p = (float)v; break;
    case TM_F64: *(double *)p = v; break;
    case TM_F16: *(uint16_t *)p = tm__f64_to_f16(v); break;
    default: *(uint16_t *)p = tm__f64_to_bf16(v); break;
    }
}

static inline void tm__store_int(const tm__rand_job *j, int64_t i,
                                 int64_t v)
{
    char *p = j->data + (size_t)i * j->es;
    switch (j->dt) {
    case TM_I8: *(int8_t *)p = (int8_t)v; break;
    case TM_U8: *(uint8_t *)p = (uint8_t)v; break;
    case TM_I16: *(int16_t *)p = (int16_t)v; break;
    case TM_I32: *(int32_t *)p = (int32_t)v; break;
    case TM_I64: *(int64_t *)p = v; break;
    case TM_BOOL: *(uint8_t *)p = (uint8_t)(v != 0); break;
    default: tm__store_float(j, i, (double)v); break; /* exact: checked */
    }
}

/* ---------------------------------------------------------------- fill */

static void tm__rand_blocks(int64_t b0, int64_t b1, void *ctx)
{
    const tm__rand_job *j = ctx;
    uint32_t x[4];
    double v[4];
    for (int64_t b = b0; b < b1; b++) {
        tm__philox_block(j->key, j->counter + (uint64_t)b, x);
        int64_t i0 = b * j->per;
        int cnt = j->n - i0 < j->per ? (int)(j->n - i0) : j->per;
        if (j->kind == TM__RAND_INT) {
            for (int l = 0; l < cnt; l++) {
                uint64_t q = tm__mulhi64(tm__philox_u64(x, l), j->range);
                tm__store_int(j, i0 + l,
                              (int64_t)((uint64_t)j->ilow + q));
            }
            continue;
        }
        if (j->kind == TM__RAND_UNIFORM) {
            for (int l = 0; l < cnt; l++) {
                double u = j->per == 4 ? tm__u01_24(x[l])
                                       : tm__u01_53(tm__philox_u64(x, l));
                v[l] = j->p0 + (j->p1 - j->p0) * u;
                if (j->guard && tm__round_to(j->dt, v[l]) >= j->p1)
                    v[l] = j->lim;
            }
        } else if (j->per == 4) { /* two Box–Muller pairs per block */
            tm__box_muller(tm__u01_24_open0(x[0]), tm__u01_24(x[1]), &v[0],
                           &v[1]);
            if (cnt > 2)
                tm__box_muller(tm__u01_24_open0(x[2]), tm__u01_24(x[3]),
                               &v[2], &v[3]);
            for (int l = 0; l < cnt; l++) v[l] = j->p0 + j->p1 * v[l];
        } else { /* one pair from the block's two 64-bit draws */
            tm__box_muller(tm__u01_53_open0(tm__philox_u64(x, 0)),
                           tm__u01_53(tm__philox_u64(x, 1)), &v[0], &v[1]);
            for (int l = 0; l < cnt; l++) v[l] = j->p0 + j->p1 * v[l];
        }
        for (int l = 0; l < cnt; l++) tm__store_float(j, i0 + l, v[l]);
    }
}

tm_status tm__cpu_random(tm_ctx *ctx, const tm_buf *dst, int kind, double p0,
                         double p1, tm_rng rng)
{
    (void)ctx;
    TM_ASSERT(dst && kind >= 0 && kind <= 2, TM_ESTATE);
    tm__rand_job j;
    memset(&j, 0, sizeof j);
    j.data = tm__ptr(dst);
    j.dt = dst->dtype;
    j.es = tm_dtype_size(dst->dtype);
    j.kind = kind;
    j.p0 = p0;
    j.p1 = p1;
    j.key = rng.key;
    j.counter = rng.counter;
    j.n = 1;
    for (int d = 0; d < dst->ndim; d++) j.n *= dst->shape[d];
    int64_t expect = 1;
    for (int d = dst->ndim - 1; d >= 0 && j.n > 0; d--) {
        TM_ASSERT(dst->shape[d] <= 1 || dst->strides[d] == expect,
                  TM_ESTATE);
        expect *= dst->shape[d];
    }
    bool is_float = tm_dtype_is_float(j.dt);
    TM_ASSERT(kind == TM__RAND_INT ? tm_dtype_is_valid(j.dt) : is_float,
              TM_ESTATE);
    j.per = kind == TM__RAND_INT || j.dt == TM_F64 ? 2 : 4;
    if (kind == TM__RAND_UNIFORM && p0 < p1) {
        /* largest value of the dtype below high; if the interval holds no
         * value of the dtype, low rounded (documented in random.h) */
        j.guard = true;
        j.lim = tm__round_to(j.dt, p1);
        while (j.lim >= p1) j.lim = tm__step_down(j.dt, j.lim);
        if (j.lim < p0) j.lim = tm__round_to(j.dt, p0);
    }
    if (kind == TM__RAND_INT) {
        TM_ASSERT(p0 < p1 && fabs(p0) <= 0x1p53 && fabs(p1) <= 0x1p53,
                  TM_ESTATE);
        j.ilow = (int64_t)p0;
        j.range = (uint64_t)((int64_t)p1 - j.ilow);
    }
    int64_t nblocks = j.n / j.per + (j.n % j.per != 0);
    /* a block of normals costs about as much as 8 blocks of uniforms */
    int64_t grain = TM__GRAIN / j.per / (kind == TM__RAND_NORMAL ? 8 : 1);
    if (nblocks > 0) tm__parallel_for(nblocks, grain, tm__rand_blocks, &j);
    return TM_OK;
}
