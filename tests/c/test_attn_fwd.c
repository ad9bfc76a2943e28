/* test_attn_fwd.c — the tiled F32 attention forward (cpu/attention/
 * attn_fwd.c) against the reference kernel (attn_ref.c: a row at a time,
 * sums in double) on the same inputs, with every kernel family this CPU
 * runs and 1 and 3 threads: head sizes off and on the vector widths,
 * Dv != D, lengths off the tiles, Tq != Tk, GQA and MQA, causal with
 * offsets, windows, bool and float masks broadcast over B and H, strided
 * q/k/v, F16 and BF16 keys and values, dropout (the same decisions as the
 * reference, so the same outputs), rows that see nothing, empty dims, and
 * the decode path with forced key splits.
 *
 * Tolerance: 1e-5 of max |out| (and of max(1, |lse|)).  The kernel sums
 * the D products of a score and the Tk weighted values of an output in
 * F32, each a rounding of at most 2^-24 of a partial sum; with inputs of
 * unit size, D <= 128 and Tk <= ~1000 the worst cases stay near 1e-6 of
 * the result, and the reference's own error (double, then one rounding to
 * F32) is 6e-8. */
#include "harness.h"

#include "../../cpu/attention/attn_fwd.h"
#include "../../cpu/attention/attn_impl.h"
#include "../../cpu/cpu_features.h"

#include <stdlib.h>

typedef struct acase {
    int64_t b, h, hkv, tq, tk, d, dv;
    bool causal;
    int64_t offset, window;
    int mask;        /* 0 none, 1 bool, 2 float */
    int mbcast;      /* bit 0: broadcast over B, bit 1: over H */
    bool permuted;   /* q, k, v stored [B, T, H, D] */
    tm_dtype kvt;    /* F32, F16 or BF16 */
    double drop, scale; /* scale 0: 1/sqrt(D) */
    int splits;      /* forced key splits (0: the kernel's choice) */
} acase;

static uint64_t lcg_state;
static double urand(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) * 0x1p-53;
}

/* A [n0, n1, n2, n3] buffer over fresh memory; `perm` stores it as
 * [n0, n2, n1, n3] (a permuted view). */
static tm_buf make_buf(tm_dtype dt, int64_t n0, int64_t n1, int64_t n2,
                       int64_t n3, bool perm)
{
    tm_buf b;
    memset(&b, 0, sizeof b);
    size_t n = (size_t)(n0 * n1 * n2 * n3);
    b.handle = calloc(n ? n : 1, tm_dtype_size(dt));
    b.dtype = dt;
    b.ndim = 4;
    b.shape[0] = n0, b.shape[1] = n1, b.shape[2] = n2, b.shape[3] = n3;
    b.strides[3] = 1;
    if (perm) {
        b.strides[1] = n3, b.strides[2] = n1 * n3;
    } else {
        b.strides[2] = n3, b.strides[1] = n2 * n3;
    }
    b.strides[0] = n1 * n2 * n3;
    return b;
}

static void *at(const tm_buf *b, int64_t i0, int64_t i1, int64_t i2,
                int64_t i3)
{
    return (char *)b->handle +
           (size_t)(i0 * b->strides[0] + i1 * b->strides[1] +
                    i2 * b->strides[2] + i3 * b->strides[3]) *
               tm_dtype_size(b->dtype);
}

static void fill(tm_buf *b)
{
    for (int64_t i = 0; i < b->shape[0]; i++)
        for (int64_t j = 0; j < b->shape[1]; j++)
            for (int64_t k = 0; k < b->shape[2]; k++)
                for (int64_t l = 0; l < b->shape[3]; l++) {
                    float x = (float)(urand() * 2.0 - 1.0);
                    void *p = at(b, i, j, k, l);
                    if (b->dtype == TM_F32) *(float *)p = x;
                    else if (b->dtype == TM_F16)
                        *(uint16_t *)p = tm__f32_to_f16(x);
                    else *(uint16_t *)p = tm__f32_to_bf16(x);
                }
}

/* A mask stored [mb, mh, Tq, Tk] (mb, mh 1 when broadcast) and seen as
 * [B, H, Tq, Tk] with stride 0 over the broadcast dims.  Bool: about 70%
 * true, with row 1 all false (a row that sees nothing); float: values in
 * [-2, 1] and a few -inf. */
static tm_buf make_mask(const acase *c)
{
    int64_t mb = c->mbcast & 1 ? 1 : c->b, mh = c->mbcast & 2 ? 1 : c->h;
    tm_buf m = make_buf(c->mask == 1 ? TM_BOOL : TM_F32, mb, mh, c->tq,
                        c->tk, false);
    for (int64_t i = 0; i < mb; i++)
        for (int64_t j = 0; j < mh; j++)
            for (int64_t r = 0; r < c->tq; r++)
                for (int64_t k = 0; k < c->tk; k++) {
                    double u = urand();
                    void *p = at(&m, i, j, r, k);
                    if (c->mask == 1)
                        *(bool *)p = r != 1 && u < 0.7;
                    else
                        *(float *)p = u < 0.05 ? -INFINITY
                                               : (float)(3.0 * u - 2.0);
                }
    m.shape[0] = c->b, m.shape[1] = c->h;
    if (c->mbcast & 1) m.strides[0] = 0;
    if (c->mbcast & 2) m.strides[1] = 0;
    return m;
}

static double max_abs(const float *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* Runs the case through the tiled kernel and compares with the reference;
 * returns false (after recording) on a mismatch. */
static bool run_case(const acase *c, unsigned seed)
{
    lcg_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    tm_buf q = make_buf(TM_F32, c->b, c->h, c->tq, c->d, c->permuted);
    tm_buf k = make_buf(c->kvt, c->b, c->hkv, c->tk, c->d, c->permuted);
    tm_buf v = make_buf(c->kvt, c->b, c->hkv, c->tk, c->dv, c->permuted);
    tm_buf o = make_buf(TM_F32, c->b, c->h, c->tq, c->dv, false);
    tm_buf o2 = make_buf(TM_F32, c->b, c->h, c->tq, c->dv, false);
    tm_buf l = make_buf(TM_F32, c->b, c->h, c->tq, 1, false);
    tm_buf l2 = make_buf(TM_F32, c->b, c->h, c->tq, 1, false);
    tm_buf m;
    memset(&m, 0, sizeof m);
    fill(&q), fill(&k), fill(&v);
    if (c->mask) m = make_mask(c);
    l.ndim = l2.ndim = 3;
    tm_attn_params p = {c->scale > 0 ? c->scale : 1.0 / sqrt((double)c->d),
                        c->causal, c->offset, c->window, c->drop,
                        tm_rng_new(seed)};
    if (c->d == 0) p.scale = 1.0;
    bool ok = true;
    int64_t no = c->b * c->h * c->tq * c->dv, nl = c->b * c->h * c->tq;
    if (tm__attn_ref_forward(&o, &l, &q, &k, &v, &m, &p) != TM_OK) {
        tt_fail(__FILE__, __LINE__, "reference failed: %s", tm_last_error());
        ok = false;
    }
    double tol = 1e-5 * (max_abs(o.handle, no) > 1e-30
                             ? max_abs(o.handle, no) : 1.0);
    float *first = malloc(sizeof(float) * (size_t)(no ? no : 1));
    for (int rep = 0; rep < 2 && ok; rep++) {
        tm_set_num_threads(rep ? 3 : 1);
        memset(o2.handle, 0x7f, sizeof(float) * (size_t)no);
        tm_status st = tm__attn_fwd_f32(&o2, &l2, &q, &k, &v, &m, &p,
                                        c->splits);
        if (st != TM_OK) {
            tt_fail(__FILE__, __LINE__, "kernel failed: %s", tm_last_error());
            ok = false;
            break;
        }
        const float *a = o2.handle, *r = o.handle;
        for (int64_t i = 0; i < no && ok; i++)
            if (!(fabs((double)a[i] - r[i]) <= tol)) {
                tt_fail(__FILE__, __LINE__, "out[%lld] = %.9g, reference "
                        "%.9g (tol %.3g, %d threads)", (long long)i,
                        (double)a[i], (double)r[i], tol, rep ? 3 : 1);
                ok = false;
            }
        /* the key split fixed, no result depends on the thread count */
        if (rep == 0 && first) memcpy(first, a, sizeof(float) * (size_t)no);
        if (rep == 1 && first && c->splits > 0 &&
            memcmp(first, a, sizeof(float) * (size_t)no) != 0) {
            tt_fail(__FILE__, __LINE__, "1 and 3 threads differ");
            ok = false;
        }
        const float *la = l2.handle, *lr = l.handle;
        for (int64_t i = 0; i < nl && ok; i++) {
            bool same = lr[i] == -INFINITY
                            ? la[i] == -INFINITY
                            : fabs((double)la[i] - lr[i]) <=
                                  1e-5 * fmax(1.0, fabs((double)lr[i]));
            if (!same) {
                tt_fail(__FILE__, __LINE__, "lse[%lld] = %.9g, reference "
                        "%.9g", (long long)i, (double)la[i],
                        (double)lr[i]);
                ok = false;
            }
        }
    }
    tm_set_num_threads(0);
    free(first);
    free(q.handle), free(k.handle), free(v.handle), free(o.handle);
    free(o2.handle), free(l.handle), free(l2.handle), free(m.handle);
    return ok;
}

#define F32 TM_F32
static const acase cases[] = {
    /* b h hkv tq tk d dv causal off win mask mb perm kvt drop scale sp */
    {1, 2, 2, 70, 90, 8, 8, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 70, 90, 16, 16, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 70, 90, 32, 32, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 70, 90, 64, 64, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 70, 90, 80, 80, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 70, 90, 96, 96, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 70, 90, 128, 128, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    /* Dv != D, head sizes off the vectors */
    {2, 2, 1, 33, 65, 64, 40, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 3, 3, 65, 129, 32, 80, true, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 1, 1, 20, 200, 8, 128, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 1, 17, 31, 5, 3, false, 0, 0, 0, 0, false, F32, 0, 0.37, 0},
    /* causal: top-left, bottom-right, negative offset (rows seeing
     * nothing), longer runs with skipped and full tiles */
    {1, 2, 2, 100, 130, 64, 64, true, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 100, 130, 64, 64, true, 30, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 100, 130, 64, 64, true, -20, 0, 0, 0, false, F32, 0, 0, 0},
    {2, 2, 2, 300, 300, 64, 64, true, 0, 0, 0, 0, false, F32, 0, 0, 0},
    /* windows, with and without causal */
    {1, 2, 2, 100, 130, 32, 32, true, 30, 17, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 200, 200, 32, 32, true, 0, 70, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 90, 90, 32, 32, false, 0, 40, 0, 0, false, F32, 0, 0, 0},
    /* GQA, MQA */
    {2, 4, 2, 70, 80, 64, 64, true, 10, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 3, 1, 70, 80, 32, 48, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    /* bool and float masks, full and broadcast over B, H, both */
    {2, 2, 2, 40, 70, 32, 32, false, 0, 0, 1, 0, false, F32, 0, 0, 0},
    {2, 2, 2, 40, 70, 32, 32, true, 20, 0, 1, 1, false, F32, 0, 0, 0},
    {2, 2, 1, 40, 70, 32, 32, false, 0, 0, 1, 2, false, F32, 0, 0, 0},
    {2, 2, 2, 40, 70, 32, 32, false, 0, 0, 1, 3, false, F32, 0, 0, 0},
    {2, 2, 2, 40, 70, 32, 32, false, 0, 0, 2, 0, false, F32, 0, 0, 0},
    {2, 2, 2, 40, 70, 32, 32, true, 20, 0, 2, 1, false, F32, 0, 0, 0},
    {2, 4, 2, 40, 70, 32, 32, false, 0, 0, 2, 2, false, F32, 0, 0, 0},
    {2, 2, 2, 40, 70, 32, 32, false, 0, 0, 2, 3, false, F32, 0, 0, 0},
    /* strided q, k, v; narrow k, v */
    {2, 4, 2, 50, 77, 64, 64, true, 27, 0, 0, 0, true, F32, 0, 0, 0},
    {1, 2, 2, 50, 77, 64, 40, false, 0, 0, 1, 0, false, TM_F16, 0, 0, 0},
    {1, 2, 1, 50, 77, 64, 64, true, 27, 0, 0, 0, true, TM_BF16, 0, 0, 0},
    {1, 2, 2, 3, 77, 24, 64, false, 0, 0, 2, 0, false, TM_F16, 0, 0, 0},
    /* dropout: the reference draws the same decisions */
    {1, 2, 2, 70, 90, 64, 64, true, 20, 0, 0, 0, false, F32, 0.3, 0, 0},
    {2, 4, 1, 2, 300, 32, 32, false, 0, 0, 1, 0, false, F32, 0.5, 0, 3},
    /* decode: few rows, long keys, forced splits */
    {1, 4, 2, 1, 1000, 64, 64, false, 0, 0, 0, 0, false, F32, 0, 0, 1},
    {1, 4, 2, 1, 1000, 64, 64, false, 0, 0, 0, 0, false, F32, 0, 0, 2},
    {1, 4, 2, 1, 1000, 64, 64, false, 0, 0, 0, 0, false, F32, 0, 0, 5},
    {1, 4, 2, 1, 1000, 64, 64, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 3, 700, 32, 40, true, 697, 100, 0, 0, false, F32, 0, 0, 4},
    {1, 2, 2, 5, 333, 16, 16, true, 328, 0, 2, 0, true, TM_BF16, 0, 0, 7},
    {1, 1, 1, 1, 100, 64, 64, false, 0, 0, 0, 0, false, F32, 0, 0, 9},
    /* decode with a query-head group stacked into one tile (GQA, MQA) */
    {2, 8, 2, 3, 200, 32, 32, true, 197, 50, 2, 1, true, F32, 0, 0, 2},
    {1, 6, 1, 1, 300, 64, 64, false, 0, 0, 1, 0, false, TM_F16, 0, 0, 0},
    {1, 6, 1, 1, 300, 64, 64, false, 0, 0, 0, 0, false, F32, 0.2, 0, 4},
    /* many key/value heads: each thread packs the heads it runs */
    {4, 6, 3, 40, 70, 32, 40, true, 0, 0, 0, 0, false, F32, 0, 0, 1},
    {6, 4, 4, 50, 77, 64, 40, false, 0, 0, 1, 0, false, TM_F16, 0, 0, 0},
    {3, 3, 3, 70, 90, 24, 24, false, 0, 0, 0, 0, true, F32, 0, 0, 0},
    {2, 16, 16, 20, 300, 16, 16, true, 280, 0, 0, 0, false, F32, 0, 0, 1},
    /* a packed tile run split over keys */
    {1, 2, 2, 80, 500, 32, 32, true, 420, 0, 0, 0, false, F32, 0, 0, 3},
    /* empty dims and rows that see nothing */
    {0, 2, 2, 5, 5, 8, 8, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 0, 5, 8, 8, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 20, 0, 8, 8, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 20, 30, 8, 0, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 20, 30, 0, 8, false, 0, 0, 0, 0, false, F32, 0, 0, 0},
    {1, 2, 2, 20, 30, 16, 16, true, -40, 0, 0, 0, false, F32, 0, 0, 0},
};

TEST(attn_fwd_matches_reference_for_every_kernel_family)
{
    tm__isa isas[] = {TM__ISA_PORTABLE, TM__ISA_AVX2, TM__ISA_AVX512,
                      TM__ISA_NEON};
    tm__isa saved = tm__cpu_isa();
    for (size_t f = 0; f < sizeof isas / sizeof isas[0]; f++) {
        if (!tm__isa_supported(isas[f]) || !tm__set_isa(isas[f])) continue;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (!run_case(&cases[i], (unsigned)(i + 1)))
                tt_fail(__FILE__, __LINE__, "case %zu, family %s", i,
                        tm__isa_name(isas[f]));
    }
    tm__set_isa(saved);
}

/* Keys no row may see are never read: NaN in their key and value rows
 * (past a causal diagonal, in a tile a bool mask hides, in the part of a
 * diagonal tile past every row's last key) leaves the output that of
 * clean data.  The tiles that hold them are skipped, or their weights
 * are not applied. */
TEST(attn_fwd_skips_keys_no_row_sees)
{
    for (int variant = 0; variant < 2; variant++) {
        /* 0: causal, rows [0, 50) see keys [0, 50); 1: a bool mask hides
         * the second key tile from every row */
        int64_t tq = 50, tk = 2 * AF_KT + 70, d = 32;
        lcg_state = 77 + (uint64_t)variant;
        tm_buf q = make_buf(TM_F32, 1, 2, tq, d, false);
        tm_buf k = make_buf(TM_F32, 1, 2, tk, d, false);
        tm_buf v = make_buf(TM_F32, 1, 2, tk, d, false);
        tm_buf o = make_buf(TM_F32, 1, 2, tq, d, false);
        tm_buf o2 = make_buf(TM_F32, 1, 2, tq, d, false);
        tm_buf m = make_buf(TM_BOOL, 1, 1, tq, tk, false);
        fill(&q), fill(&k), fill(&v);
        m.shape[1] = 2, m.strides[1] = 0;
        for (int64_t i = 0; i < tq; i++)
            for (int64_t j = 0; j < tk; j++)
                ((bool *)m.handle)[i * tk + j] = j < AF_KT || j >= 2 * AF_KT;
        tm_attn_params p = {0.2, variant == 0, 0, 0, 0.0, tm_rng_new(0)};
        tm_buf none;
        memset(&none, 0, sizeof none);
        const tm_buf *mask = variant ? &m : &none;
        REQUIRE(tm__attn_ref_forward(&o, NULL, &q, &k, &v, mask, &p) ==
                TM_OK);
        int64_t j0 = variant ? AF_KT : 50, j1 = variant ? 2 * AF_KT : tk;
        for (int64_t h = 0; h < 2; h++)
            for (int64_t j = j0; j < j1; j++)
                for (int64_t c = 0; c < d; c++) {
                    *(float *)at(&k, 0, h, j, c) = NAN;
                    *(float *)at(&v, 0, h, j, c) = NAN;
                }
        for (int splits = 0; splits < 3; splits++) {
            CHECK_INT(tm__attn_fwd_f32(&o2, NULL, &q, &k, &v, mask, &p,
                                       splits),
                      TM_OK);
            const float *a = o2.handle, *r = o.handle;
            for (int64_t i = 0; i < 2 * tq * d; i++)
                if (!(fabs((double)a[i] - r[i]) <= 1e-5)) {
                    tt_fail(__FILE__, __LINE__, "variant %d, splits %d: "
                            "out[%lld] = %g, want %g", variant, splits,
                            (long long)i, (double)a[i], (double)r[i]);
                    break;
                }
        }
        free(q.handle), free(k.handle), free(v.handle), free(o.handle);
        free(o2.handle), free(m.handle);
    }
}

/* Dropout drops: the output differs from the undropped one, while lse
 * (of the undropped weights) is the same. */
TEST(attn_fwd_dropout_changes_weights_not_lse)
{
    int64_t tq = 40, tk = 70, d = 16;
    lcg_state = 5;
    tm_buf q = make_buf(TM_F32, 1, 1, tq, d, false);
    tm_buf k = make_buf(TM_F32, 1, 1, tk, d, false);
    tm_buf v = make_buf(TM_F32, 1, 1, tk, d, false);
    tm_buf o = make_buf(TM_F32, 1, 1, tq, d, false);
    tm_buf o2 = make_buf(TM_F32, 1, 1, tq, d, false);
    tm_buf l = make_buf(TM_F32, 1, 1, tq, 1, false);
    tm_buf l2 = make_buf(TM_F32, 1, 1, tq, 1, false);
    fill(&q), fill(&k), fill(&v);
    l.ndim = l2.ndim = 3;
    tm_buf none;
    memset(&none, 0, sizeof none);
    tm_attn_params p = {0.25, false, 0, 0, 0.0, tm_rng_new(9)};
    REQUIRE(tm__attn_fwd_f32(&o, &l, &q, &k, &v, &none, &p, 0) == TM_OK);
    p.dropout_p = 0.4;
    REQUIRE(tm__attn_fwd_f32(&o2, &l2, &q, &k, &v, &none, &p, 0) == TM_OK);
    int differ = 0;
    for (int64_t i = 0; i < tq * d; i++)
        differ += ((float *)o.handle)[i] != ((float *)o2.handle)[i];
    CHECK(differ > tq * d / 2);
    CHECK(memcmp(l.handle, l2.handle, sizeof(float) * (size_t)tq) == 0);
    free(q.handle), free(k.handle), free(v.handle), free(o.handle);
    free(o2.handle), free(l.handle), free(l2.handle);
}

/* A packed call with narrow values and a forced key split: every scratch
 * buffer the kernel takes. */
static tm_status fwd_alloc_sequence(void)
{
    lcg_state = 3;
    tm_buf q = make_buf(TM_F32, 1, 2, 20, 16, false);
    tm_buf k = make_buf(TM_F32, 1, 1, 300, 16, false);
    tm_buf v = make_buf(TM_BF16, 1, 1, 300, 24, false);
    tm_buf o = make_buf(TM_F32, 1, 2, 20, 24, false);
    tm_buf none;
    memset(&none, 0, sizeof none);
    fill(&q), fill(&k), fill(&v);
    tm_attn_params p = {0.25, false, 0, 0, 0.0, tm_rng_new(0)};
    tm_status st = tm__attn_fwd_f32(&o, NULL, &q, &k, &v, &none, &p, 2);
    free(q.handle), free(k.handle), free(v.handle), free(o.handle);
    return st;
}

TEST(attn_fwd_reports_every_allocation_failure)
{
    CHECK_EVERY_ALLOC_FAILURE(fwd_alloc_sequence, 5);
}
