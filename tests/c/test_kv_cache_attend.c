/* test_kv_cache_attend.c — decoding through the key/value cache gives what
 * attention over the whole sequence gives: token by token and in chunks of
 * mixed sizes, MHA/GQA/MQA, sliding windows (also once the ring wrapped),
 * after truncation, and with F16/BF16 storage.  The reference is the F64
 * loop of sdpa_ref.c over all T positions (causal from position 0).
 *
 * Tolerance for F32 storage: max |got - ref| / max |ref| <= 1e-5 — F32
 * rounding (6e-8 per operation) over sums of at most T = 23 products and
 * the softmax normalisation stays near 1e-6; a wrong mask, offset or key
 * order moves outputs by O(1). */
#include "harness.h"
#include "gradcheck.h"
#include "sdpa_ref.h"

#include "foundry/attention.h"

#include <stdlib.h>

enum { B = 2, T = 23, D = 16, DV = 8 };

typedef struct seq {
    int64_t h, hkv;
    tm_tensor *q, *k, *v; /* (B, H, T, D), (B, Hkv, T, D), (B, Hkv, T, Dv) */
    double *qv, *kv, *vv; /* their values */
} seq;

static bool seq_new(seq *s, int64_t h, int64_t hkv, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->h = h;
    s->hkv = hkv;
    s->q = tt_sdpa_input((int64_t[]){B, h, T, D}, 4, TM_F32, seed, &s->qv);
    s->k = tt_sdpa_input((int64_t[]){B, hkv, T, D}, 4, TM_F32, seed + 1,
                         &s->kv);
    s->v = tt_sdpa_input((int64_t[]){B, hkv, T, DV}, 4, TM_F32, seed + 2,
                         &s->vv);
    return s->q && s->k && s->v;
}

static void seq_free(seq *s)
{
    tm_free(s->q);
    tm_free(s->k);
    tm_free(s->v);
    free(s->qv);
    free(s->kv);
    free(s->vv);
}

/* F64 attention of every position over the prefix (window W, 0: none),
 * with k and v values `kv`, `vv` (NULL: the sequence's own). */
static double *reference(const seq *s, int64_t window, double scale,
                         const double *kv, const double *vv)
{
    tt_sdpa_case c = {B, s->h, s->hkv, T, T, D, DV, true, 0, window, scale};
    double *out = malloc(sizeof(double) * B * s->h * T * DV);
    if (out)
        tt_sdpa_ref(&c, s->qv, kv ? kv : s->kv, vv ? vv : s->vv, NULL, NULL,
                    out);
    return out;
}

/* Feeds positions [from, to) of `s` to `layer` in chunks (cycled), writing
 * each output row into out (B, H, T, Dv).  False with a recorded failure
 * when a call fails. */
static bool decode(tm_kv_cache *c, int layer, const seq *s, int64_t from,
                   int64_t to, const int64_t *chunks, int nchunks,
                   double scale, double *out)
{
    tm_sdpa_opts o = {0};
    o.scale = scale;
    for (int64_t pos = from, i = 0; pos < to; i++) {
        int64_t n = chunks[i % nchunks];
        if (n > to - pos) n = to - pos;
        tm_tensor *q = tm_narrow(s->q, 2, pos, n);
        tm_tensor *k = tm_narrow(s->k, 2, pos, n);
        tm_tensor *v = tm_narrow(s->v, 2, pos, n);
        tm_tensor *y = q && k && v ? tm_kv_cache_attend(c, layer, q, k, v, &o)
                                   : NULL;
        double *rows = malloc(sizeof(double) * B * s->h * n * DV);
        bool ok = y && rows &&
                  !tm_copy_to_buffer(y, rows, sizeof(double) * B * s->h * n *
                                                  DV, TM_F64);
        if (!ok)
            tt_fail(__FILE__, __LINE__, "layer %d at %lld (+%lld): %s", layer,
                    (long long)pos, (long long)n, tm_last_error());
        for (int64_t bh = 0; ok && bh < B * s->h; bh++)
            memcpy(out + (bh * T + pos) * DV, rows + bh * n * DV,
                   sizeof(double) * n * DV);
        free(rows);
        tm_free(y);
        tm_free(q);
        tm_free(k);
        tm_free(v);
        if (!ok) return false;
        pos += n;
    }
    return true;
}

/* Relative error of positions [from, T) of `got` against `want`. */
static double rows_err(const seq *s, const double *got, const double *want,
                       int64_t from)
{
    double num = 0, den = 0;
    for (int64_t bh = 0; bh < B * s->h; bh++)
        for (int64_t i = (bh * T + from) * DV; i < (bh + 1) * T * DV; i++) {
            double e = fabs(got[i] - want[i]), m = fabs(want[i]);
            if (e > num) num = e;
            if (m > den) den = m;
        }
    return den > 0 ? num / den : num;
}

static tm_kv_cache *cache_for(const seq *s, int layers, const int64_t *win,
                              tm_dtype dt)
{
    tm_kv_cache_opts o = {0};
    o.dtype = dt;
    o.v_head_dim = DV;
    o.windows = win;
    return tm_kv_cache_new(layers, B, s->hkv, T, D, &o);
}

static const int64_t ONE[] = {1};
static const int64_t MIXED[] = {5, 1, 1, 7, 2, 1, 6};

TEST(kv_cache_decoding_matches_full_causal_attention)
{
    /* MHA, GQA and MQA heads, one token at a time and in mixed chunks,
     * with the default scale and a given one. */
    int64_t heads[3][2] = {{2, 2}, {4, 2}, {4, 1}};
    for (int hc = 0; hc < 3; hc++) {
        seq s;
        tm_kv_cache *c = NULL;
        double *want = NULL, *got = NULL;
        double scale = hc == 1 ? 0.3 : 0.0;
        if (!seq_new(&s, heads[hc][0], heads[hc][1], 100 + 10 * (uint64_t)hc))
            goto done;
        c = cache_for(&s, 2, NULL, TM_F32);
        want = reference(&s, 0, scale, NULL, NULL);
        got = calloc((size_t)(B * s.h * T * DV), sizeof *got);
        if (!c || !want || !got) goto done;
        if (decode(c, 0, &s, 0, T, ONE, 1, scale, got))
            CHECK(rows_err(&s, got, want, 0) <= 1e-5);
        memset(got, 0, sizeof(double) * B * s.h * T * DV);
        if (decode(c, 1, &s, 0, T, MIXED, 7, scale, got))
            CHECK(rows_err(&s, got, want, 0) <= 1e-5);
        CHECK_INT(tm_kv_cache_length(c, 0), T);
        CHECK_INT(tm_kv_cache_length(c, 1), T);
    done:
        CHECK(c && want && got);
        free(want);
        free(got);
        tm_kv_cache_free(c);
        seq_free(&s);
    }
}

TEST(kv_cache_window_decoding_matches_windowed_attention)
{
    /* Rings of W = 5 and W = 1 (only itself) wrap several times; chunks
     * longer than W too.  Each layer is checked against attention over the
     * whole prefix with the same window. */
    int64_t wins[2] = {5, 1};
    const int64_t chunky[] = {1, 3, 1, 8, 1, 1, 2, 6};
    for (int wi = 0; wi < 2; wi++) {
        seq s;
        tm_kv_cache *c = NULL;
        double *want = NULL, *got = NULL;
        if (!seq_new(&s, 4, 2, 200 + (uint64_t)wi)) goto done;
        int64_t w = wins[wi];
        c = cache_for(&s, 2, (int64_t[]){w, w}, TM_F32);
        want = reference(&s, w, 0, NULL, NULL);
        got = calloc((size_t)(B * s.h * T * DV), sizeof *got);
        if (!c || !want || !got) goto done;
        CHECK_INT(tm_kv_cache_nbytes(c), 2 * w * B * 2 * (D + DV) * 4);
        if (decode(c, 0, &s, 0, T, ONE, 1, 0, got))
            CHECK(rows_err(&s, got, want, 0) <= 1e-5);
        memset(got, 0, sizeof(double) * B * s.h * T * DV);
        if (decode(c, 1, &s, 0, T, chunky, 8, 0, got))
            CHECK(rows_err(&s, got, want, 0) <= 1e-5);
    done:
        CHECK(c && want && got);
        free(want);
        free(got);
        tm_kv_cache_free(c);
        seq_free(&s);
    }
}

TEST(kv_cache_redecoding_after_truncate_matches_the_new_sequence)
{
    /* Decode 16 positions of sequence A, drop back to `keep`, decode the
     * rest from sequence B: the outputs from `keep` on must be attention
     * over A[0, keep) + B[keep, T).  Full layer: back to 11; a window of 5
     * (wrapped) can go back one position, to 15. */
    int64_t wins[2] = {0, 5}, keeps[2] = {11, 15};
    for (int wi = 0; wi < 2; wi++) {
        seq a, b, mix;
        tm_kv_cache *c = NULL;
        double *want = NULL, *got = NULL;
        int64_t keep = keeps[wi], w = wins[wi];
        memset(&mix, 0, sizeof mix);
        if (!seq_new(&a, 4, 2, 300) || !seq_new(&b, 4, 2, 400)) goto done;
        /* mix = A before keep, B from keep on. */
        mix.h = 4;
        mix.hkv = 2;
        tm_tensor **parts[3] = {&mix.q, &mix.k, &mix.v};
        const tm_tensor *from[3][2] = {{a.q, b.q}, {a.k, b.k}, {a.v, b.v}};
        for (int i = 0; i < 3; i++) {
            tm_tensor *p[2] = {tm_narrow(from[i][0], 2, 0, keep),
                               tm_narrow(from[i][1], 2, keep, T - keep)};
            *parts[i] = p[0] && p[1] ? tm_cat(p, 2, 2) : NULL;
            tm_free(p[0]);
            tm_free(p[1]);
        }
        if (!mix.q || !mix.k || !mix.v || !(mix.qv = tt_values(mix.q)) ||
            !(mix.kv = tt_values(mix.k)) || !(mix.vv = tt_values(mix.v)))
            goto done;
        c = cache_for(&a, 1, (int64_t[]){w}, TM_F32);
        want = reference(&mix, w, 0, NULL, NULL);
        got = calloc((size_t)(B * 4 * T * DV), sizeof *got);
        if (!c || !want || !got) goto done;
        /* B one token at a time, then (from a reset) in chunks of 3. */
        for (int pass = 0; pass < 2; pass++) {
            CHECK_INT(tm_kv_cache_reset(c), TM_OK);
            memset(got, 0, sizeof(double) * B * 4 * T * DV);
            if (!decode(c, 0, &a, 0, 16, MIXED, 7, 0, got)) goto done;
            if (w)
                CHECK_STATUS(tm_kv_cache_truncate(c, keep - 1), TM_ESTATE,
                             "no longer holds");
            CHECK_INT(tm_kv_cache_truncate(c, keep), TM_OK);
            if (decode(c, 0, &b, keep, T, pass ? (int64_t[]){3} : ONE, 1, 0,
                       got))
                CHECK(rows_err(&mix, got, want, keep) <= 1e-5);
        }
    done:
        CHECK(c && want && got);
        free(want);
        free(got);
        tm_kv_cache_free(c);
        seq_free(&a);
        seq_free(&b);
        seq_free(&mix);
    }
}

/* The values of `t` rounded to `dt`. */
static double *rounded(const tm_tensor *t, tm_dtype dt)
{
    tm_tensor *r = tm_to_dtype(t, dt);
    double *x = r ? tt_values(r) : NULL;
    tm_free(r);
    return x;
}

TEST(kv_cache_f16_bf16_storage_attends_over_the_rounded_keys)
{
    /* Against attention over the rounded k and v: only F32 rounding apart
     * (the kernel reads the stored values exactly), so 1e-5 holds.
     * Against the unrounded F32 keys: the storage rounding itself, a
     * relative 2^-11 (F16) or 2^-8 (BF16) per key and value element, moves
     * scores of size |q||k| ~ 16 by up to ~1e-2 (BF16 ~6e-2): bounds 5e-3
     * for F16 and 4e-2 for BF16 on the output. */
    tm_dtype dts[2] = {TM_F16, TM_BF16};
    double loose[2] = {5e-3, 4e-2};
    for (int di = 0; di < 2; di++) {
        seq s;
        tm_kv_cache *c = NULL;
        double *kr = NULL, *vr = NULL, *want = NULL, *want32 = NULL,
               *got = NULL;
        if (!seq_new(&s, 4, 2, 500)) goto done;
        c = cache_for(&s, 2, (int64_t[]){0, 4}, dts[di]);
        kr = rounded(s.k, dts[di]);
        vr = rounded(s.v, dts[di]);
        got = calloc((size_t)(B * s.h * T * DV), sizeof *got);
        if (!c || !kr || !vr || !got) goto done;
        for (int layer = 0; layer < 2; layer++) {
            int64_t w = layer ? 4 : 0;
            want = reference(&s, w, 0, kr, vr);
            want32 = reference(&s, w, 0, NULL, NULL);
            if (want && want32 &&
                decode(c, layer, &s, 0, T, MIXED, 7, 0, got)) {
                CHECK(rows_err(&s, got, want, 0) <= 1e-5);
                double e32 = rows_err(&s, got, want32, 0);
                CHECK(e32 <= loose[di]);
                CHECK(e32 > 0); /* the storage really rounds */
            }
            CHECK(want && want32);
            free(want);
            free(want32);
            want = want32 = NULL;
        }
    done:
        CHECK(c && kr && vr && got);
        free(kr);
        free(vr);
        free(got);
        tm_kv_cache_free(c);
        seq_free(&s);
    }
}

TEST(kv_cache_attend_rejects_what_the_cache_decides)
{
    seq s;
    tm_kv_cache *c = NULL;
    tm_tensor *q = NULL, *k = NULL, *v = NULL, *q2 = NULL, *m = NULL;
    if (!seq_new(&s, 4, 2, 600)) goto done;
    c = cache_for(&s, 1, NULL, TM_F32);
    q = tm_narrow(s.q, 2, 0, 2);
    k = tm_narrow(s.k, 2, 0, 2);
    v = tm_narrow(s.v, 2, 0, 2);
    q2 = tm_narrow(s.q, 2, 0, 3);
    m = tm_ones((int64_t[]){2, 2}, 2, TM_BOOL);
    if (!c || !q || !k || !v || !q2 || !m) goto done;
    tm_sdpa_opts o = {0};
    o.mask = m;
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 0, q, k, v, &o), TM_EINVAL,
                   "opts must leave mask (set)");
    o.mask = NULL;
    o.window = 3;
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 0, q, k, v, &o), TM_EINVAL,
                   "window (3)");
    o.window = 0;
    o.causal_offset = -1;
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 0, q, k, v, &o), TM_EINVAL,
                   "causal_offset (-1)");
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 0, q2, k, v, NULL), TM_ESHAPE,
                   "q has shape [2,4,3,16], expected [2,H,2,16] with H a "
                   "multiple of 2");
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 0, v, k, v, NULL), TM_ESHAPE,
                   "q has shape [2,2,2,8]");
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 0, NULL, k, v, NULL), TM_EINVAL,
                   "q is NULL");
    CHECK_NULL_ERR(tm_kv_cache_attend(c, 1, q, k, v, NULL), TM_ERANGE,
                   "layer 1 out of range");
    CHECK_INT(tm_kv_cache_length(c, 0), 0);
    /* A bad dropout reaches tm_sdpa after the append: undone. */
    o.causal_offset = 0;
    o.dropout_p = 2.0;
    tm_tensor *y = tm_kv_cache_attend(c, 0, q, k, v, &o);
    CHECK(!y);
    CHECK(strstr(tm_last_error(), "tm_kv_cache_attend"));
    tm_free(y);
    CHECK_INT(tm_kv_cache_length(c, 0), 0);
done:
    CHECK(c && q && k && v && q2 && m);
    tm_free(q);
    tm_free(k);
    tm_free(v);
    tm_free(q2);
    tm_free(m);
    tm_kv_cache_free(c);
    seq_free(&s);
}

/* One attend on `layer` that must leave the length as it was on failure
 * (TM_ESTATE, which the fault test does not expect, if it did not). */
static tm_status attend_once(tm_kv_cache *c, int layer, const tm_tensor *q,
                             const tm_tensor *k)
{
    int64_t len = tm_kv_cache_length(c, layer);
    tm_tensor *y = tm_kv_cache_attend(c, layer, q, k, k, NULL);
    if (y) {
        tm_free(y);
        return TM_OK;
    }
    tm_status st = tm_last_status();
    return tm_kv_cache_length(c, layer) == len ? st : TM_ESTATE;
}

/* A cache's life: new, chunks and single tokens on a full layer and on a
 * ring of 3 (unwrapped view, ordered copy, the ring as is), update,
 * truncate, free. */
static tm_status cache_sequence(void)
{
    tm_kv_cache_opts o = {0};
    o.windows = (int64_t[]){0, 3};
    tm_kv_cache *c = tm_kv_cache_new(2, 1, 2, 12, 4, &o);
    tm_tensor *q2 = NULL, *k2 = NULL, *q1 = NULL, *k1 = NULL, *ka = NULL,
              *va = NULL;
    tm_status st = TM_OK;
    if (!c || !(q2 = tm_ones((int64_t[]){1, 4, 2, 4}, 4, TM_F32)) ||
        !(k2 = tm_ones((int64_t[]){1, 2, 2, 4}, 4, TM_F32)) ||
        !(q1 = tm_ones((int64_t[]){1, 4, 1, 4}, 4, TM_F32)) ||
        !(k1 = tm_ones((int64_t[]){1, 2, 1, 4}, 4, TM_F32))) {
        st = tm_last_status();
        goto done;
    }
    for (int layer = 0; layer < 2 && !st; layer++)
        if ((st = attend_once(c, layer, q2, k2)) ||
            (st = attend_once(c, layer, q2, k2)) ||
            (st = attend_once(c, layer, q1, k1)) ||
            (st = attend_once(c, layer, q2, k2)))
            goto done;
    if ((st = tm_kv_cache_update(c, 1, k2, k2, &ka, &va, NULL)) ||
        (st = tm_kv_cache_append(c, 0, k2, k2)) ||
        (st = tm_kv_cache_truncate(c, 8)))
        goto done;
done:
    tm_free(q2);
    tm_free(k2);
    tm_free(q1);
    tm_free(k1);
    tm_free(ka);
    tm_free(va);
    tm_kv_cache_free(c);
    return st;
}

TEST(kv_cache_every_allocation_failure_is_clean)
{
    CHECK_EVERY_ALLOC_FAILURE(cache_sequence, 20);
}
