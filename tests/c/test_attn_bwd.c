/* test_attn_bwd.c — the tiled F32 attention backward (cpu/attention/
 * attn_bwd.c) against the reference backward run in F64 on the same
 * values: head sizes 8..128, Dv != D, lengths off the 64-row tiles,
 * Tq != Tk, MHA / GQA / MQA, causal with offsets (rows that see nothing
 * included), windows, BOOL and float masks (broadcast and not), strided
 * q / k / v / g, dropout (the reference's decisions from the same rng),
 * each strategy, 1 and 2 threads (bit for bit the same), absent outputs,
 * and every GEMM kernel family this CPU runs.
 *
 * Tolerance: max |got - want| <= 1e-5 * max |want| per gradient.  The
 * kernel's sums are F32 (tiles of 64 products, then 64-wide blocks added
 * in order) against a double reference; the worst case measured here is
 * about 1.1e-6.  Gradients that cancel to 0 (a row seeing one key has
 * dS = P (dP - D) = 0 exactly) get an absolute 1e-6 instead: the F32
 * rounding of the O(1) terms (inputs are O(1)) that cancel. */
#include "gradcheck.h"
#include "harness.h"

#include "../../cpu/attention/attn_impl.h"
#include "../../cpu/cpu_features.h"

#include <stdlib.h>

typedef struct acase {
    int64_t b, h, hkv, tq, tk, d, dv;
    bool causal;
    int64_t offset, window;
    int mask;        /* 0 none, 1 BOOL, 2 float */
    bool mask_bcast; /* mask (1, 1, Tq, Tk) broadcast over B and H */
    double dropout, scale; /* scale 0: 1 / sqrt(D) */
    bool strided;    /* q, k, v, g as (B, T, H, D) storage transposed */
} acase;

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* An F32 (B, H, T, D) tensor of values in [-amp, amp): contiguous, or a
 * transposed view of (B, T, H, D) storage.  New reference. */
static tm_tensor *make4(const int64_t *sh, bool strided, double amp,
                        uint64_t seed)
{
    int64_t st[4] = {sh[0], strided ? sh[2] : sh[1],
                     strided ? sh[1] : sh[2], sh[3]};
    tm_tensor *base = tm_empty(st, 4, TM_F32);
    if (!base) return NULL;
    float *x = tm_data(base);
    int64_t n = sh[0] * sh[1] * sh[2] * sh[3];
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(amp * ((double)lcg(&seed) / 2147483648.0 * 2 - 1));
    if (!strided) return base;
    tm_tensor *t = tm_transpose(base, 1, 2);
    tm_free(base);
    return t;
}

/* A mask (1 or B, 1 or H, Tq, Tk): BOOL with about 1 key in 5 hidden and
 * row 3 of every head fully hidden, or float in [-2, 0) with -inf where
 * the BOOL one would be false. */
static tm_tensor *make_mask(const acase *c, tm_dtype dt)
{
    int64_t sh[4] = {c->mask_bcast ? 1 : c->b, c->mask_bcast ? 1 : c->h,
                     c->tq, c->tk};
    tm_tensor *m = tm_empty(sh, 4, dt);
    if (!m) return NULL;
    uint64_t seed = 77;
    int64_t n = sh[0] * sh[1] * sh[2] * sh[3];
    for (int64_t e = 0; e < n; e++) {
        bool on = lcg(&seed) % 5 != 0 && (e / c->tk) % c->tq != 3;
        if (dt == TM_BOOL)
            ((bool *)tm_data(m))[e] = on;
        else
            ((float *)tm_data(m))[e] =
                on ? (float)(-2.0 * (double)(lcg(&seed) % 1000) / 1000.0)
                   : -INFINITY;
    }
    return m;
}

static tm_buf buf_or_none(const tm_tensor *t)
{
    tm_buf b;
    if (t) return tm__buf(t);
    memset(&b, 0, sizeof b);
    return b;
}

static tm_tensor *empty4(int64_t a, int64_t b, int64_t c, int64_t d,
                         tm_dtype dt)
{
    int64_t sh[4] = {a, b, c, d};
    return tm_empty(sh, 4, dt);
}

/* The worst max|got - want| / max|want| seen, for the message. */
static double worst;

static void compare(const char *what, const tm_tensor *got,
                    const tm_tensor *want, const acase *c, int strategy)
{
    double *x = tt_values(got), *y = tt_values(want);
    int64_t n = tm_numel(want);
    double err = 0.0, mag = 0.0;
    if (!x || !y) {
        tt_fail(__FILE__, __LINE__, "tt_values failed");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(x[i] - y[i]);
        if (!(e <= err)) err = e; /* NaN sticks */
        if (fabs(y[i]) > mag) mag = fabs(y[i]);
    }
    if (mag > 0 && err / mag > worst) worst = err / mag;
    if (!(err <= 1e-5 * mag || err <= 1e-6))
        tt_fail(__FILE__, __LINE__,
                "%s: max err %.3g, max |grad| %.3g (B %lld H %lld Hkv %lld "
                "Tq %lld Tk %lld D %lld Dv %lld, strategy %d)",
                what, err, mag, (long long)c->b, (long long)c->h,
                (long long)c->hkv, (long long)c->tq, (long long)c->tk,
                (long long)c->d, (long long)c->dv, strategy);
done:
    free(x), free(y);
}

static bool same_bits(const tm_tensor *a, const tm_tensor *b)
{
    return memcmp(tm_data(a), tm_data(b),
                  sizeof(float) * (size_t)tm_numel(a)) == 0;
}

typedef struct grads {
    tm_tensor *dq, *dk, *dv;
} grads;

static void free_grads(grads *g)
{
    tm_free(g->dq), tm_free(g->dk), tm_free(g->dv);
    memset(g, 0, sizeof *g);
}

static bool alloc_grads(const acase *c, tm_dtype dt, grads *g, bool dq,
                        bool dk, bool dv)
{
    memset(g, 0, sizeof *g);
    if (dq) g->dq = empty4(c->b, c->h, c->tq, c->d, dt);
    if (dk) g->dk = empty4(c->b, c->hkv, c->tk, c->d, dt);
    if (dv) g->dv = empty4(c->b, c->hkv, c->tk, c->dv, dt);
    return (!dq || g->dq) && (!dk || g->dk) && (!dv || g->dv);
}

/* The inputs of one case in one dtype. */
typedef struct inputs {
    tm_tensor *q, *k, *v, *g, *mask, *out, *lse;
} inputs;

static void free_inputs(inputs *a)
{
    tm_free(a->q), tm_free(a->k), tm_free(a->v), tm_free(a->g);
    tm_free(a->mask), tm_free(a->out), tm_free(a->lse);
}

static tm_status backward(const acase *c, const inputs *in, grads *gr,
                          const tm_attn_params *p, int strategy)
{
    int64_t sh[4] = {c->b, c->h, c->tq, c->tk};
    tm_buf dq = buf_or_none(gr->dq), dk = buf_or_none(gr->dk),
           dv = buf_or_none(gr->dv), g = tm__buf(in->g), q = tm__buf(in->q),
           k = tm__buf(in->k), v = tm__buf(in->v), out = tm__buf(in->out),
           lse = tm__buf(in->lse), mask = buf_or_none(NULL);
    if (in->mask) mask = tm__buf_bcast(in->mask, sh, 4);
    if (strategy < 0)
        return tm__attn_ref_backward(&dq, &dk, &dv, &g, &q, &k, &v, &out,
                                     &lse, &mask, p);
    return tm__attn_bwd_f32(&dq, &dk, &dv, &g, &q, &k, &v, &out, &lse, &mask,
                            p, (tm__attn_bwd_strategy)strategy);
}

/* Runs one case: the F64 reference, then the tiled kernel with each
 * strategy on 1 and 2 threads (full: also bitwise across threads and with
 * absent outputs). */
static void check_case(const acase *c, uint64_t seed, bool full)
{
    tm_attn_params p = {.scale = c->scale > 0 ? c->scale
                                              : 1.0 / sqrt((double)c->d),
                        .causal = c->causal, .offset = c->offset,
                        .window = c->window, .dropout_p = c->dropout,
                        .rng = tm_rng_new(seed + 1000)};
    int64_t qs[4] = {c->b, c->h, c->tq, c->d}, ks[4] = {c->b, c->hkv, c->tk,
                                                        c->d};
    int64_t vs[4] = {c->b, c->hkv, c->tk, c->dv}, gs[4] = {c->b, c->h, c->tq,
                                                           c->dv};
    inputs f = {0}, d = {0};
    grads ref = {0}, got[2][2], part = {0};
    memset(got, 0, sizeof got);
    f.q = make4(qs, c->strided, 1.5, seed);
    f.k = make4(ks, c->strided, 1.5, seed + 1);
    f.v = make4(vs, c->strided, 1.0, seed + 2);
    f.g = make4(gs, c->strided, 1.0, seed + 3);
    if (c->mask) f.mask = make_mask(c, c->mask == 1 ? TM_BOOL : TM_F32);
    REQUIRE(f.q && f.k && f.v && f.g && (!c->mask || f.mask));
    d.q = tm_to_dtype(f.q, TM_F64), d.k = tm_to_dtype(f.k, TM_F64);
    d.v = tm_to_dtype(f.v, TM_F64), d.g = tm_to_dtype(f.g, TM_F64);
    if (f.mask)
        d.mask = c->mask == 1 ? tm_to_dtype(f.mask, TM_BOOL)
                              : tm_to_dtype(f.mask, TM_F64);
    d.out = empty4(c->b, c->h, c->tq, c->dv, TM_F64);
    d.lse = tm_empty(qs, 3, TM_F64);
    if (!d.q || !d.k || !d.v || !d.g || (f.mask && !d.mask) || !d.out ||
        !d.lse || !alloc_grads(c, TM_F64, &ref, true, true, true)) {
        tt_fail(__FILE__, __LINE__, "setup: %s", tm_last_error());
        goto done;
    }
    {
        int64_t sh[4] = {c->b, c->h, c->tq, c->tk};
        tm_buf o = tm__buf(d.out), l = tm__buf(d.lse), q = tm__buf(d.q),
               k = tm__buf(d.k), v = tm__buf(d.v), m = buf_or_none(NULL);
        if (d.mask) m = tm__buf_bcast(d.mask, sh, 4);
        CHECK_INT(tm__attn_ref_forward(&o, &l, &q, &k, &v, &m, &p), TM_OK);
    }
    CHECK_INT(backward(c, &d, &ref, &p, -1), TM_OK);
    f.out = tm_to_dtype(d.out, TM_F32), f.lse = tm_to_dtype(d.lse, TM_F32);
    if (!f.out || !f.lse) goto done;
    for (int s = 0; s < 2; s++) {
        int strategy = s ? TM__ATTN_BWD_FUSED : TM__ATTN_BWD_SPLIT;
        for (int t = 0; t < 2; t++) {
            if (!full && t != s) continue;
            tm_set_num_threads(t + 1);
            if (!alloc_grads(c, TM_F32, &got[s][t], true, true, true))
                goto done;
            CHECK_INT(backward(c, &f, &got[s][t], &p, strategy), TM_OK);
            compare("dq", got[s][t].dq, ref.dq, c, strategy);
            compare("dk", got[s][t].dk, ref.dk, c, strategy);
            compare("dv", got[s][t].dv, ref.dv, c, strategy);
        }
        if (!full) continue;
        CHECK(same_bits(got[s][0].dq, got[s][1].dq));
        CHECK(same_bits(got[s][0].dk, got[s][1].dk));
        CHECK(same_bits(got[s][0].dv, got[s][1].dv));
        /* Absent outputs: what is computed is computed the same way. */
        for (int which = 0; which < 3; which++) {
            if (!alloc_grads(c, TM_F32, &part, which == 0, which == 1,
                             which == 2))
                goto done;
            CHECK_INT(backward(c, &f, &part, &p, strategy), TM_OK);
            if (which == 0) CHECK(same_bits(part.dq, got[s][1].dq));
            if (which == 1) CHECK(same_bits(part.dk, got[s][1].dk));
            if (which == 2) CHECK(same_bits(part.dv, got[s][1].dv));
            free_grads(&part);
        }
    }
done:
    tm_set_num_threads(0);
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++) free_grads(&got[s][t]);
    free_grads(&part);
    free_grads(&ref);
    free_inputs(&f);
    free_inputs(&d);
}

static const acase cases[] = {
    /* b h hkv  tq  tk    d   dv causal off win mask bc drop scale strided */
    {1, 2, 2, 70, 70, 8, 8, true, 0, 0, 0, false, 0, 0, false},
    {2, 4, 2, 100, 130, 16, 24, false, 0, 0, 1, true, 0, 0, false},
    {1, 4, 1, 65, 129, 32, 32, true, 64, 0, 2, true, 0, 0, true},
    {1, 2, 2, 130, 130, 64, 64, true, 0, 40, 0, false, 0, 0, false},
    {2, 3, 3, 77, 91, 80, 48, true, -10, 0, 0, false, 0, 0, true},
    {1, 4, 2, 66, 66, 96, 96, true, 0, 0, 0, false, 0.3, 0, false},
    {1, 2, 1, 129, 64, 128, 128, false, 5, 17, 0, false, 0, 0.2, true},
    {1, 1, 1, 1, 200, 64, 64, false, 0, 0, 0, false, 0, 0, false},
    {2, 2, 2, 50, 70, 16, 16, false, 0, 0, 1, false, 0.2, 0, true},
    {1, 2, 1, 64, 128, 64, 32, true, 64, 0, 2, false, 0, 0, false},
    {1, 1, 1, 200, 1, 16, 8, true, 0, 0, 0, false, 0, 0, false},
    {1, 2, 1, 5, 0, 8, 8, false, 0, 0, 0, false, 0, 0, false}, /* no keys */
    {1, 2, 1, 0, 5, 8, 8, false, 0, 0, 0, false, 0, 0, false}, /* no rows */
};

TEST(attn_bwd_tiled_matches_reference)
{
    worst = 0.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = tt_failures();
        check_case(&cases[i], 11 * (uint64_t)i + 1, true);
        if (tt_failures() != before)
            tt_fail(__FILE__, __LINE__, "case %zu (worst so far %.3g)", i,
                    worst);
    }
}

TEST(attn_bwd_tiled_matches_reference_for_every_kernel_family)
{
    tm__isa isas[] = {TM__ISA_PORTABLE, TM__ISA_AVX2, TM__ISA_AVX512,
                      TM__ISA_NEON};
    tm__isa saved = tm__cpu_isa();
    for (size_t f = 0; f < sizeof isas / sizeof isas[0]; f++) {
        if (!tm__isa_supported(isas[f]) || !tm__set_isa(isas[f])) continue;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i += 2) {
            int before = tt_failures();
            check_case(&cases[i], 7 * (uint64_t)i + 3, false);
            if (tt_failures() != before)
                tt_fail(__FILE__, __LINE__, "case %zu, family %s", i,
                        tm__isa_name(isas[f]));
        }
    }
    tm__set_isa(saved);
}

TEST(attn_bwd_strategy_rule)
{
    tm__attn_geom ge = {1, 8, 8, 64, 64, 64, 64, 1};
    CHECK_INT(tm__attn_bwd_pick(&ge, 2), TM__ATTN_BWD_FUSED); /* 8 groups */
    CHECK_INT(tm__attn_bwd_pick(&ge, 16), TM__ATTN_BWD_SPLIT);
    ge.hkv = 1, ge.group = 8; /* MQA: one group */
    CHECK_INT(tm__attn_bwd_pick(&ge, 1), TM__ATTN_BWD_FUSED);
    CHECK_INT(tm__attn_bwd_pick(&ge, 2), TM__ATTN_BWD_SPLIT);
    ge.b = 3; /* 3 groups on 2 threads: 5 * 4 <= 7 * 3 */
    CHECK_INT(tm__attn_bwd_pick(&ge, 2), TM__ATTN_BWD_FUSED);
    ge.b = 5; /* 5 groups on 4 threads: 5 * 8 > 7 * 5 */
    CHECK_INT(tm__attn_bwd_pick(&ge, 4), TM__ATTN_BWD_SPLIT);
}

/* The CPU entry runs the tiled kernel for F32 (the same bits as AUTO) and
 * refuses a call without the forward's lse. */
TEST(attn_bwd_entry_dispatches_f32_and_needs_lse)
{
    acase c = {1, 2, 1, 40, 50, 16, 16, true, 10, 0, 0, false, 0, 0, false};
    int64_t qs[4] = {1, 2, 40, 16}, ks[4] = {1, 1, 50, 16};
    tm_tensor *q = make4(qs, false, 1.0, 5), *k = make4(ks, false, 1.0, 6);
    tm_tensor *v = make4(ks, false, 1.0, 7), *g = make4(qs, false, 1.0, 8);
    tm_tensor *out = make4(qs, false, 1.0, 9), *lse = tm_empty(qs, 3, TM_F32);
    grads a = {0}, b = {0};
    tm_attn_params p = {.scale = 0.25, .causal = true, .offset = 10};
    REQUIRE(q && k && v && g && out && lse);
    if (!alloc_grads(&c, TM_F32, &a, true, true, true) ||
        !alloc_grads(&c, TM_F32, &b, true, true, true))
        goto done;
    {
        tm_buf bq = tm__buf(q), bk = tm__buf(k), bv = tm__buf(v),
               bg = tm__buf(g), bo = tm__buf(out), bl = tm__buf(lse),
               none = buf_or_none(NULL);
        tm_buf dq = tm__buf(a.dq), dk = tm__buf(a.dk), dv = tm__buf(a.dv);
        tm_buf eq = tm__buf(b.dq), ek = tm__buf(b.dk), ev = tm__buf(b.dv);
        CHECK_INT(tm__cpu_attention(NULL, &bo, &bl, &bq, &bk, &bv, &none, &p),
                  TM_OK);
        CHECK_INT(tm__cpu_attention_backward(NULL, &dq, &dk, &dv, &bg, &bq,
                                             &bk, &bv, &bo, &bl, &none, &p),
                  TM_OK);
        CHECK_INT(tm__attn_bwd_f32(&eq, &ek, &ev, &bg, &bq, &bk, &bv, &bo,
                                   &bl, &none, &p, TM__ATTN_BWD_AUTO),
                  TM_OK);
        CHECK(same_bits(a.dq, b.dq) && same_bits(a.dk, b.dk) &&
              same_bits(a.dv, b.dv));
        CHECK_STATUS(tm__cpu_attention_backward(NULL, &dq, &dk, &dv, &bg, &bq,
                                                &bk, &bv, &bo, &none, &none,
                                                &p),
                     TM_EINVAL, "lse");
    }
done:
    free_grads(&a), free_grads(&b);
    tm_free(q), tm_free(k), tm_free(v), tm_free(g), tm_free(out), tm_free(lse);
}

/* Every allocation of a backward call (the tensors' and the kernel's
 * scratch) failing in turn: TM_ENOMEM, nothing leaked. */
static tm_status bwd_alloc_seq(void)
{
    int64_t qs[4] = {1, 2, 70, 16}, ks[4] = {1, 1, 70, 16};
    tm_tensor *t[9] = {tm_zeros(qs, 4, TM_F32), tm_zeros(ks, 4, TM_F32),
                       tm_zeros(ks, 4, TM_F32), tm_zeros(qs, 4, TM_F32),
                       tm_zeros(qs, 4, TM_F32), tm_zeros(qs, 3, TM_F32),
                       tm_zeros(qs, 4, TM_F32), tm_zeros(ks, 4, TM_F32),
                       tm_zeros(ks, 4, TM_F32)};
    tm_status st = TM_ENOMEM;
    tm_attn_params p = {.scale = 0.25, .causal = true};
    for (int x = 0; x < 9; x++)
        if (!t[x]) goto done;
    {
        tm_buf b[9], none = buf_or_none(NULL);
        for (int x = 0; x < 9; x++) b[x] = tm__buf(t[x]);
        st = tm__attn_bwd_f32(&b[6], &b[7], &b[8], &b[3], &b[0], &b[1],
                              &b[2], &b[4], &b[5], &none, &p,
                              TM__ATTN_BWD_SPLIT);
    }
done:
    for (int x = 0; x < 9; x++) tm_free(t[x]);
    return st;
}

TEST(attn_bwd_survives_every_allocation_failure)
{
    tt_check_every_alloc_failure(__FILE__, __LINE__, bwd_alloc_seq, 12);
}
