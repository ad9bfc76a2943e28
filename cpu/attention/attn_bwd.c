/*
 * attn_bwd.c — the tiled F32 attention backward (flash style).
 *
 * Per query row i, D_i = g_i . out_i (= sum_j P_ij dP_ij, with dropout
 * too).  Per tile of query rows against a tile of keys:
 *     S  = scale Q K^T (+ mask),  P = exp(S - lse)   (the forward's lse:
 *                                                     exact weights, no
 *                                                     running max)
 *     dV^T += dO^T (P Z),  dP = dO V^T,  dS = P (dP Z - D) scale,
 *     dK^T += Q^T dS,      dQ += dS K
 * with Z the dropout factor (0 or 1 / (1 - p), the forward's decisions).
 * dK and dV accumulate transposed so that P Z and dS are the GEMMs' B
 * operand as they lie; only dS is repacked per tile pair (the A of dS K).
 * Nothing of size Tq x Tk exists: each part of the pool has its own tile
 * buffers, and tiles outside every row's causal/window range are skipped.
 *
 * Two strategies (tm__attn_bwd_strategy):
 *  - split: one task per block of up to NB key tiles of a (b, key/value
 *    head) computes their dK and dV over every query tile of the head
 *    group's query heads (the group's sum made inside the task: no copies
 *    of k, v per query head, no atomics), and one task per block of up to
 *    NB query tiles of a (b, head) computes their dQ over the key tiles.
 *    S and P are computed twice (7 tile GEMMs), but there are about
 *    B * Hkv * Tk / (NB BK) + B * H * Tq / (NB BQ) tasks: the pool is busy
 *    whatever the batch.
 *  - fused: one task per (b, key/value head) computes dQ, dK and dV of the
 *    group together (5 tile GEMMs; the group's dQ accumulates in the
 *    task's own O(G * Tq * D) buffer).  Cheaper when B * Hkv tasks keep
 *    every thread busy (tm__attn_bwd_pick).
 * Every output element is summed by one task in a fixed order (query
 * tiles, then key tiles, ascending), whatever the block size, so results
 * do not depend on the thread count (for a given strategy).
 */
#include "attn_bwd_job.h"
#include "../../tensor/runtime/runtime_impl.h"
#include "../vmath/vmath.h"

static size_t up16(int64_t n)
{
    return (size_t)tm__abwd_up(n, 16); /* 64-byte aligned sub-buffers */
}

/* Carves one part's buffers out of base (NULL base: just the size). */
static size_t bwd_layout(const bwd_job *J, float *base, tile_ws *w)
{
    const tm__attn_geom *ge = &J->ge;
    tile_ws unused;
    if (!w) w = &unused;
    int64_t bq = TM__ABWD_BQ, bk = TM__ABWD_BK;
    size_t off = 0;
#define TAKE(ptr, n)                                                          \
    do {                                                                      \
        if (base) (ptr) = base + off;                                         \
        off += up16(n);                                                       \
    } while (0)
    for (int x = 0; x < NB; x++) {
        qtile *q = &w->qt[x];
        ktile *k = &w->kt[x];
        TAKE(q->qa, J->bqm * ge->d);
        TAKE(q->ga, J->bqm * ge->dv);
        TAKE(q->qta, J->dm * bq);
        TAKE(q->gta, J->dvm * bq);
        TAKE(q->dq, J->bqm * J->dp);
        TAKE(k->kt, ge->d * J->bkp);
        TAKE(k->vt, ge->dv * J->bkp);
        TAKE(k->kr, bk * J->dp);
        TAKE(k->dkt, J->dm * J->bkp);
        TAKE(k->dvt, J->dvm * J->bkp);
    }
    TAKE(w->s, J->bqm * J->bkp);
    TAKE(w->dp, J->bqm * J->bkp);
    TAKE(w->z, J->bqm * J->bkp);
    TAKE(w->dsa, J->bqm * bk);
    TAKE(w->gdq, J->fused ? ge->group * J->nqt * J->bqm * J->dp : 0);
#undef TAKE
    return off;
}

static void zero(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = 0.0f;
}

/* Rows [i0, i0 + m) of head (b, h) into x: what scores need always, the
 * rest where this pass computes dS, dK or dV. */
static void load_rows(const bwd_job *J, qtile *x, int64_t b, int64_t h,
                      int64_t i0, int64_t m, bool need_ds, bool dk, bool dv)
{
    const tm__attn_geom *ge = &J->ge;
    int mr = (int)J->mr;
    const float *q = row_f(J->q, b, h, i0), *g = row_f(J->g, b, h, i0);
    int64_t qs = J->q->strides[2], gs = J->g->strides[2];
    tm__abwd_pack_a(q, qs, m, ge->d, mr, x->qa);
    if (need_ds) tm__abwd_pack_a(g, gs, m, ge->dv, mr, x->ga);
    if (dk) tm__abwd_pack_at(q, qs, NULL, 0, m, ge->d, mr, x->qta);
    if (dv) tm__abwd_pack_at(g, gs, NULL, 0, m, ge->dv, mr, x->gta);
}

/* Keys [j0, j0 + n) of (b, key/value head hk) into x. */
static void load_keys(const bwd_job *J, ktile *x, int64_t b, int64_t hk,
                      int64_t j0, int64_t n, bool need_ds, bool dq)
{
    const tm__attn_geom *ge = &J->ge;
    const float *k = row_f(J->k, b, hk, j0), *v = row_f(J->v, b, hk, j0);
    int64_t ks = J->k->strides[2], vs = J->v->strides[2];
    tm__abwd_trans(k, ks, n, ge->d, x->kt, J->bkp);
    if (need_ds) tm__abwd_trans(v, vs, n, ge->dv, x->vt, J->bkp);
    if (dq && ge->d == J->dp) {
        x->kb = k, x->kbs = ks;
    } else if (dq) {
        tm__abwd_rows(k, ks, n, ge->d, x->kr, J->dp);
        x->kb = x->kr, x->kbs = J->dp;
    }
}

/* The tile's weights times their dropout factors into w->z (row stride
 * bkp, padding columns 0). */
static void tile_dropout(const bwd_job *J, tile_ws *w,
                         const tm__abwd_tile *t)
{
    const tm__attn_geom *ge = &J->ge;
    float ks = (float)J->dr.keep_scale;
    for (int64_t r = 0; r < t->m; r++) {
        uint64_t e0 = (uint64_t)(((t->b * ge->h + t->h) * ge->tq + t->i0 +
                                  r) *
                                 ge->tk);
        tm__attn_dropout_row(&J->dr, e0, t->j0, t->j0 + t->n, w->keep);
        float *z = w->z + r * J->bkp;
        const float *s = w->s + r * J->bkp;
        int64_t c = 0;
        for (; c < t->n; c++) z[c] = w->keep[c] ? s[c] * ks : 0.0f;
        for (; c < J->bkp; c++) z[c] = 0.0f;
    }
}

/* tm__abwd_gemm, or with a band its banded form. */
static void gemm(const bwd_job *J, const tm__abwd_band *bd, int kind,
                 int64_t m, int64_t n, int64_t kc, const float *a,
                 const float *b, int64_t ldb, float *c, int64_t ldc,
                 float alpha, float beta, tm__abwd_pf *pf)
{
    if (bd)
        tm__abwd_gemm_band(J->kr, kind, bd, m, n, kc, a, b, ldb, c, ldc,
                           alpha, beta, NULL, NULL, pf);
    else
        tm__abwd_gemm(J->kr, m, n, kc, a, b, ldb, c, ldc, alpha, beta, pf);
}

/* One tile pair: its share of dV^T, dK^T (into kx's accumulators, when
 * present) and of dQ (into qx->dq, when present). */
static void tile(const bwd_job *J, tile_ws *w, const qtile *qx,
                 const ktile *kx, const tm__abwd_tile *t)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t m = t->m, n = t->n, ld = J->bkp;
    float scale = (float)J->p->scale;
    int64_t row0 = (t->b * ge->h + t->h) * ge->tq + t->i0;
    bool drop = J->p->dropout_p > 0.0;
    tm__abwd_pf *pf = w->pfin.r < w->pfin.n ? &w->pfin
                      : w->nx_ok          ? &w->pfnx
                                          : NULL;
    bool full = tm__attn_tile_full(J->p, ge->tk, t->i0, t->i0 + m, t->j0,
                                   t->j0 + n);
    tm__abwd_band band, *bd = NULL;
    if (!full) { /* a diagonal (or window edge) tile: its rows' keys */
        bd = &band;
        for (int64_t r = 0; r < TM__ABWD_BQ + 16; r++) {
            int64_t lo = 0, hi = 0;
            if (r < m) {
                tm__attn_row_range(J->p, ge->tk, t->i0 + r, &lo, &hi);
                lo = lo < t->j0 ? 0 : lo - t->j0;
                hi = hi > t->j0 + n ? n : hi - t->j0;
            }
            band.lo[r] = lo, band.hi[r] = hi;
        }
    }
    bool fuse = J->avx512 && full && !J->mask && n == ld;
#if defined(__x86_64__)
    /* the row values of the fused epilogues, 0 past the tile's rows */
    float rv[TM__ABWD_BQ + 16];
    if (fuse) { /* "- lse" in the GEMM's stores, one exp over the tile */
        for (int64_t r = 0; r < J->bqm; r++)
            rv[r] = r < m ? J->lse[row0 + r] : 0.0f;
        tm__abwd_gemm_sub_avx512(m, n, ge->d, qx->qa, kx->kt, ld, w->s, ld,
                                 scale, rv, pf);
        tm__vexp_f32(m * ld, w->s, w->s);
        for (int64_t r = 0; r < m; r++) /* rows that saw nothing */
            if (rv[r] == -INFINITY) zero(w->s + r * ld, ld);
    }
#endif
    if (!fuse) {
        gemm(J, bd, TM__ABWD_OUT, m, n, ge->d, qx->qa, kx->kt, ld, w->s, ld,
             scale, 0.0f, pf);
        tm__abwd_weights(J->p, J->mask, ge->tk, t, full, J->lse + row0,
                         w->s, ld);
    }
    if (drop) tile_dropout(J, w, t);
    const float *pz = drop ? w->z : w->s;
    if (kx->dvt)
        gemm(J, bd, TM__ABWD_KEYS, ge->dv, n, m, qx->gta, pz, ld, kx->dvt,
             ld, 1.0f, 1.0f, pf);
    if (!kx->dkt && !qx->dq) return;
#if defined(__x86_64__)
    if (J->avx512 && !drop) { /* dS in the dP GEMM's stores */
        for (int64_t r = 0; r < J->bqm; r++)
            rv[r] = r < m ? J->drow[row0 + r] : 0.0f;
        if (bd)
            tm__abwd_gemm_band(J->kr, TM__ABWD_OUT, bd, m, n, ge->dv, qx->ga,
                               kx->vt, ld, w->dp, ld, scale, 0.0f, rv, w->s,
                               pf);
        else
            tm__abwd_gemm_ds_avx512(m, n, ge->dv, qx->ga, kx->vt, ld, w->dp,
                                    ld, scale, rv, w->s, pf);
    } else
#endif
    {
        gemm(J, bd, TM__ABWD_OUT, m, n, ge->dv, qx->ga, kx->vt, ld, w->dp,
             ld, 1.0f, 0.0f, pf);
        /* with Z: P (dP Z - D) = PZ dP - P D */
        for (int64_t r = 0; r < m; r++)
            tm__abwd_ds(w->s + r * ld, drop ? pz + r * ld : NULL,
                        w->dp + r * ld, n, J->drow[row0 + r], scale);
    }
    if (kx->dkt)
        gemm(J, bd, TM__ABWD_KEYS, ge->d, n, m, qx->qta, w->dp, ld, kx->dkt,
             ld, 1.0f, 1.0f, pf);
    if (qx->dq) {
        tm__abwd_pack_a(w->dp, ld, m, n, (int)J->mr, w->dsa);
        gemm(J, bd, TM__ABWD_ROWS, m, ge->d, n, w->dsa, kx->kb, kx->kbs,
             qx->dq, J->dp, 1.0f, 1.0f, pf);
    }
}

static void store_rows(const tm_buf *dst, int64_t b, int64_t h, int64_t r0,
                       int64_t m, int64_t n, const float *src, int64_t ld)
{
    for (int64_t r = 0; r < m; r++) {
        float *d = out_f(dst, b, h, r0 + r);
        for (int64_t c = 0; c < n; c++) d[c] = src[r * ld + c];
    }
}

/* Rows [r0, r0 + m) of dst from the transpose of src (n rows). */
static void store_trans(const tm_buf *dst, int64_t b, int64_t h, int64_t r0,
                        int64_t m, int64_t n, const float *src, int64_t ld)
{
    if (dst->strides[2] == n) { /* rows back to back: one transpose */
        tm__abwd_trans(src, ld, n, m, out_f(dst, b, h, r0), n);
        return;
    }
    for (int64_t r = 0; r < m; r++) {
        float *d = out_f(dst, b, h, r0 + r);
        for (int64_t c = 0; c < n; c++) d[c] = src[c * ld + r];
    }
}

/* Key block kb of (b, hk): dK and dV of its tiles over the group's query
 * tiles (and, fused, the group's dQ into w->gdq). */
static void key_block(const bwd_job *J, tile_ws *w, int64_t b, int64_t hk,
                      int64_t kb, bool last)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t jt0 = kb * J->nb, nsub = J->nkt - jt0;
    if (nsub > J->nb) nsub = J->nb;
    int64_t bj0 = jt0 * TM__ABWD_BK;
    int64_t bj1 = bj0 + (nsub - 1) * TM__ABWD_BK +
                  tile_len(jt0 + nsub - 1, TM__ABWD_BK, ge->tk);
    bool need_ds = J->want_dk || J->fused;
    ktile kx[NB];
    for (int64_t x = 0; x < nsub; x++) {
        kx[x] = w->kt[x];
        if (!J->want_dk) kx[x].dkt = NULL;
        if (!J->want_dv) kx[x].dvt = NULL;
        if (kx[x].dkt) zero(kx[x].dkt, J->dm * J->bkp);
        if (kx[x].dvt) zero(kx[x].dvt, J->dvm * J->bkp);
        load_keys(J, &kx[x], b, hk, (jt0 + x) * TM__ABWD_BK,
                  tile_len(jt0 + x, TM__ABWD_BK, ge->tk), need_ds, J->fused);
    }
    for (int64_t hh = 0; hh < ge->group; hh++) {
        int64_t h = hk * ge->group + hh;
        for (int64_t it = 0; it < J->nqt; it++) {
            int64_t i0 = it * TM__ABWD_BQ, lo, hi;
            int64_t m = tile_len(it, TM__ABWD_BQ, ge->tq);
            tm__attn_block_range(J->p, ge->tk, i0, i0 + m, &lo, &hi);
            if (lo >= hi || hi <= bj0 || lo >= bj1) continue;
            /* the next tile's rows while this one runs; the outputs' and
             * the next task's over this block's last three tiles */
            int64_t nh = hh, ni = it, left = 0;
            tm__abwd_pf_reset(&w->pfin);
            if (tm__abwd_next_qtile(J, bj0, bj1, &nh, &ni)) {
                tm__abwd_pf_qtile(J, &w->pfin, b, hk * ge->group + nh, ni,
                                  need_ds || J->want_dv);
                for (left = 1; left < 3; left++)
                    if (!tm__abwd_next_qtile(J, bj0, bj1, &nh, &ni)) break;
            }
            w->nx_ok = last && left < 3;
            qtile qx = w->qt[0];
            qx.dq = J->fused ? w->gdq + (hh * J->nqt + it) * J->bqm * J->dp
                             : NULL;
            load_rows(J, &qx, b, h, i0, m, need_ds, J->want_dk, J->want_dv);
            for (int64_t x = 0; x < nsub; x++) {
                int64_t j0 = (jt0 + x) * TM__ABWD_BK;
                int64_t n = tile_len(jt0 + x, TM__ABWD_BK, ge->tk);
                if (hi <= j0 || lo >= j0 + n) continue;
                tm__abwd_tile t = {b, h, i0, m, j0, n};
                tile(J, w, &qx, &kx[x], &t);
            }
        }
    }
    for (int64_t x = 0; x < nsub; x++) {
        int64_t j0 = (jt0 + x) * TM__ABWD_BK;
        int64_t n = tile_len(jt0 + x, TM__ABWD_BK, ge->tk);
        if (kx[x].dkt)
            store_trans(J->dk, b, hk, j0, n, ge->d, kx[x].dkt, J->bkp);
        if (kx[x].dvt)
            store_trans(J->dv, b, hk, j0, n, ge->dv, kx[x].dvt, J->bkp);
    }
}

/* Query block qb of (b, h): dQ of its tiles over the key tiles they see. */
static void query_block(const bwd_job *J, tile_ws *w, int64_t b, int64_t h,
                        int64_t qb)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t it0 = qb * J->nb, nsub = J->nqt - it0, lo, hi;
    if (nsub > J->nb) nsub = J->nb;
    int64_t bi0 = it0 * TM__ABWD_BQ;
    int64_t bi1 = bi0 + (nsub - 1) * TM__ABWD_BQ +
                  tile_len(it0 + nsub - 1, TM__ABWD_BQ, ge->tq);
    qtile qx[NB];
    int64_t rlo[NB], rhi[NB];
    for (int64_t x = 0; x < nsub; x++) {
        int64_t i0 = (it0 + x) * TM__ABWD_BQ;
        int64_t m = tile_len(it0 + x, TM__ABWD_BQ, ge->tq);
        qx[x] = w->qt[x];
        zero(qx[x].dq, J->bqm * J->dp);
        tm__attn_block_range(J->p, ge->tk, i0, i0 + m, &rlo[x], &rhi[x]);
        if (rlo[x] < rhi[x])
            load_rows(J, &qx[x], b, h, i0, m, true, false, false);
    }
    tm__attn_block_range(J->p, ge->tk, bi0, bi1, &lo, &hi);
    ktile kx = w->kt[0];
    kx.dkt = kx.dvt = NULL;
    for (int64_t jt = lo / TM__ABWD_BK; lo < hi && jt * TM__ABWD_BK < hi;
         jt++) {
        int64_t j0 = jt * TM__ABWD_BK, n = tile_len(jt, TM__ABWD_BK, ge->tk);
        int64_t j1 = j0 + TM__ABWD_BK; /* the next key tile, while this runs */
        int64_t hk = h / ge->group;
        tm__abwd_pf_reset(&w->pfin);
        if (j1 < hi) {
            int64_t n1 = tile_len(jt + 1, TM__ABWD_BK, ge->tk);
            tm__abwd_pf_rows(&w->pfin, J->k, b, hk, j1, n1, ge->d);
            tm__abwd_pf_rows(&w->pfin, J->v, b, hk, j1, n1, ge->dv);
        }
        w->nx_ok = j1 + TM__ABWD_BK >= hi;
        load_keys(J, &kx, b, h / ge->group, j0, n, true, true);
        for (int64_t x = 0; x < nsub; x++) {
            if (rlo[x] >= rhi[x] || rhi[x] <= j0 || rlo[x] >= j0 + n)
                continue;
            tm__abwd_tile t = {b, h, (it0 + x) * TM__ABWD_BQ,
                               tile_len(it0 + x, TM__ABWD_BQ, ge->tq), j0, n};
            tile(J, w, &qx[x], &kx, &t);
        }
    }
    for (int64_t x = 0; x < nsub; x++)
        store_rows(J->dq, b, h, (it0 + x) * TM__ABWD_BQ,
                   tile_len(it0 + x, TM__ABWD_BQ, ge->tq), ge->d, qx[x].dq,
                   J->dp);
}

/* Fused: every key block of (b, hk), the group's dQ stored at the end. */
static void group_task(const bwd_job *J, tile_ws *w, int64_t b, int64_t hk)
{
    const tm__attn_geom *ge = &J->ge;
    zero(w->gdq, ge->group * J->nqt * J->bqm * J->dp);
    for (int64_t kb = 0; kb * J->nb < J->nkt; kb++)
        key_block(J, w, b, hk, kb, (kb + 1) * J->nb >= J->nkt);
    for (int64_t hh = 0; hh < ge->group; hh++)
        for (int64_t it = 0; it < J->nqt; it++)
            store_rows(J->dq, b, hk * ge->group + hh, it * TM__ABWD_BQ,
                       tile_len(it, TM__ABWD_BQ, ge->tq), ge->d,
                       w->gdq + (hh * J->nqt + it) * J->bqm * J->dp, J->dp);
}

/* Runs task x.  Split: key blocks in order (causal: the busiest first),
 * then query blocks from the last (likewise). */
static void run_task(const bwd_job *J, tile_ws *w, int64_t x)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t groups = ge->b * ge->hkv, heads = ge->b * ge->h;
    int64_t nqb = (J->nqt + J->nb - 1) / J->nb;
    if (J->fused) {
        group_task(J, w, x / ge->hkv, x % ge->hkv);
    } else if (x < J->ntasks_a) {
        int64_t gi = x % groups;
        key_block(J, w, gi / ge->hkv, gi % ge->hkv, x / groups, true);
    } else {
        x -= J->ntasks_a;
        int64_t bh = x % heads;
        query_block(J, w, bh / ge->h, bh % ge->h, nqb - 1 - x / heads);
    }
}

static void bwd_part(int part, int nparts, void *ctx)
{
    bwd_job *J = ctx;
    tile_ws w;
    (void)nparts;
    bwd_layout(J, J->scratch + J->part_floats * (size_t)part, &w);
    w.keep = J->keep + (size_t)part * TM__ABWD_BK;
    tm__abwd_pf_reset(&w.pfin);
    w.nx_ok = false;
    /* Each part claims its next task before running the current one, so
     * that the next task's first rows can be fetched meanwhile (which
     * part runs a task does not change its result). */
    int64_t x = (int64_t)atomic_fetch_add(&J->next, 1);
    while (x < J->ntasks) {
        int64_t nx = (int64_t)atomic_fetch_add(&J->next, 1);
        tm__abwd_pf_reset(&w.pfnx);
        tm__abwd_pf_task_out(J, &w, x);
        tm__abwd_pf_task(J, &w, nx);
        run_task(J, &w, x);
        x = nx;
    }
}

/* D_i = g_i . out_i (in double) for rows [r0, r1). */
static void drow_range(int64_t r0, int64_t r1, void *ctx)
{
    bwd_job *J = ctx;
    const tm__attn_geom *ge = &J->ge;
    for (int64_t r = r0; r < r1; r++) {
        int64_t b = r / (ge->h * ge->tq), h = r / ge->tq % ge->h,
                i = r % ge->tq;
        const float *g = row_f(J->g, b, h, i), *o = row_f(J->out, b, h, i);
        /* 8 partial sums: one chain of dependent adds cost 2.5% of the
         * T = 256 backward */
        double s[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        int64_t c = 0;
        for (; c + 8 <= ge->dv; c += 8)
            for (int u = 0; u < 8; u++) s[u] += (double)g[c + u] * o[c + u];
        for (; c < ge->dv; c++) s[c % 8] += (double)g[c] * o[c];
        J->drow[r] = (float)(((s[0] + s[4]) + (s[2] + s[6])) +
                             ((s[1] + s[5]) + (s[3] + s[7])));
    }
}

static bool present(const tm_buf *b)
{
    return b && b->handle;
}

tm_status tm__attn_bwd_f32(const tm_buf *dq, const tm_buf *dk,
                           const tm_buf *dv, const tm_buf *g,
                           const tm_buf *q, const tm_buf *k, const tm_buf *v,
                           const tm_buf *out, const tm_buf *lse,
                           const tm_buf *mask, const tm_attn_params *p,
                           tm__attn_bwd_strategy strategy)
{
    bwd_job J = {.dq = dq, .dk = dk, .dv = dv, .g = g, .q = q, .k = k,
                 .v = v, .out = out, .mask = present(mask) ? mask : NULL,
                 .p = p, .ge = tm__attn_geom_of(q, k, v),
                 .dr = tm__attn_dropout_of(p), .kr = tm__abwd_kernel(),
                 .want_dq = present(dq), .want_dk = present(dk),
                 .want_dv = present(dv), .lse = tm__ptr(lse)};
    const tm__attn_geom *ge = &J.ge;
    tm_status st = TM_OK;
    int64_t rows = ge->b * ge->h * ge->tq, groups = ge->b * ge->hkv;
    if (ge->b == 0 || ge->h == 0 || (!J.want_dq && !J.want_dk && !J.want_dv))
        return TM_OK;
    J.mr = J.kr->mr, J.nr = J.kr->nr;
#if defined(__x86_64__)
    J.avx512 = J.kr == &tm__sgemm_avx512;
#endif
    J.dp = tm__abwd_up(ge->d, J.nr), J.dvp = tm__abwd_up(ge->dv, J.nr);
    J.bkp = tm__abwd_up(TM__ABWD_BK, J.nr);
    J.bqm = tm__abwd_up(TM__ABWD_BQ, J.mr);
    J.dm = tm__abwd_up(ge->d, J.mr), J.dvm = tm__abwd_up(ge->dv, J.mr);
    J.nqt = (ge->tq + TM__ABWD_BQ - 1) / TM__ABWD_BQ;
    J.nkt = (ge->tk + TM__ABWD_BK - 1) / TM__ABWD_BK;
    int threads = tm_get_num_threads();
    if (strategy == TM__ATTN_BWD_AUTO)
        strategy = tm__attn_bwd_pick(ge, threads);
    J.fused = strategy == TM__ATTN_BWD_FUSED && J.want_dq &&
              (J.want_dk || J.want_dv);
    /* Blocks as large as NB while the split leaves >= 4 tasks a thread
     * (the sums' order does not depend on the block size). */
    for (J.nb = NB;; J.nb /= 2) {
        int64_t nkb = (J.nkt + J.nb - 1) / J.nb;
        int64_t nqb = (J.nqt + J.nb - 1) / J.nb;
        J.ntasks_a = J.want_dk || J.want_dv ? groups * nkb : 0;
        J.ntasks = J.ntasks_a + (J.want_dq ? ge->b * ge->h * nqb : 0);
        if (J.nb == 1 || J.fused || J.ntasks >= 4 * (int64_t)threads) break;
    }
    if (J.fused) J.ntasks = groups;
    int parts = J.ntasks < threads ? (int)J.ntasks : threads;
    if (parts < 1) parts = 1;
    J.part_floats = bwd_layout(&J, NULL, NULL);
    J.drow = tm__alloc(sizeof(float) * (size_t)(rows > 0 ? rows : 1),
                       __func__);
    J.scratch = tm__alloc(sizeof(float) * J.part_floats * (size_t)parts,
                          __func__);
    J.keep = tm__alloc((size_t)parts * TM__ABWD_BK, __func__);
    if (!J.drow || !J.scratch || !J.keep) {
        st = TM_ENOMEM;
        goto fail;
    }
    tm__parallel_for(rows, 256, drow_range, &J);
    atomic_init(&J.next, 0);
    tm__parallel_parts(parts, bwd_part, &J);
fail:
    tm__dealloc(J.keep);
    tm__dealloc(J.scratch);
    tm__dealloc(J.drow);
    return st;
}

tm__attn_bwd_strategy tm__attn_bwd_pick(const tm__attn_geom *ge, int threads)
{
    int64_t groups = ge->b * ge->hkv, t = threads > 0 ? threads : 1;
    /* Fused does 5 tile GEMMs to split's 7 (measured: split costs 1.35 to
     * 1.5x the CPU time) but has only B * Hkv equal tasks: fused while the
     * threads it leaves idle in its last round cost less than split's
     * extra work, 5 * ceil(groups / t) * t <= 7 * groups. */
    int64_t rounds = (groups + t - 1) / t;
    return 5 * rounds * t <= 7 * groups ? TM__ATTN_BWD_FUSED
                                        : TM__ATTN_BWD_SPLIT;
}
