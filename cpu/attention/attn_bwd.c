/*
 * attn_bwd.c — the tiled F32 attention backward (flash style).
 *
 * Per query row i, D_i = g_i . out_i (= sum_j P_ij dP_ij, with dropout
 * too).  Per tile of query rows against a tile of keys:
 *     S  = scale Q K^T (+ mask),  P = exp(S - lse)   (the forward's lse:
 *                                                     exact weights, no
 *                                                     running max)
 *     dV += (P Z)^T dO,  dP = dO V^T,  dS = P (dP Z - D) scale,
 *     dK += dS^T Q,      dQ += dS K
 * with Z the dropout factor (0 or 1 / (1 - p), the forward's decisions).
 * Nothing of size Tq x Tk exists: each part of the pool has its own tile
 * buffers, and tiles outside every row's causal/window range are skipped.
 *
 * Two strategies (tm__attn_bwd_strategy):
 *  - split: one task per key tile of a (b, key/value head) computes its dK
 *    and dV over every query tile of the head group's query heads (the
 *    group's sum made inside the task: no copies of k, v per query head,
 *    no atomics), and one task per query tile of a (b, head) computes its
 *    dQ over the key tiles.  S and P are computed twice (7 tile GEMMs),
 *    but there are B * Hkv * Tk / BK + B * H * Tq / BQ tasks: the pool is
 *    busy whatever the batch.
 *  - fused: one task per (b, key/value head) computes dQ, dK and dV of the
 *    group together (5 tile GEMMs; the group's dQ accumulates in the
 *    task's own O(G * Tq * D) buffer).  Cheaper when B * Hkv tasks keep
 *    every thread busy.
 * Every output element is computed by one task in a fixed order, so
 * results do not depend on the thread count (for a given strategy).
 */
#include "attn_bwd.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <stdatomic.h>

/* One part's tile buffers (attn_bwd.h's layouts; sizes in bwd_layout). */
typedef struct tile_ws {
    float *qa, *qr, *ga, *gr, *kt, *vt, *kr, *s, *dp, *z, *pta, *dsa;
    float *dkacc, *dvacc, *dqacc, *gdq;
    uint8_t *keep;
} tile_ws;

typedef struct bwd_job {
    const tm_buf *dq, *dk, *dv, *g, *q, *k, *v, *out, *mask;
    const tm_attn_params *p;
    tm__attn_geom ge;
    tm__attn_dropout dr;
    const tm__gemm_kernel *kr;
    int64_t mr, nr, dp, dvp, bkp, bqm, bkm, nqt, nkt;
    bool want_dq, want_dk, want_dv, fused;
    const float *lse;
    float *drow;       /* D_i of every row, (B, H, Tq) */
    float *scratch;    /* per part: part_floats */
    size_t part_floats;
    uint8_t *keep;     /* per part: BK */
    int64_t ntasks_a;  /* split: key-tile tasks first, then query tiles */
    int64_t ntasks;
    atomic_llong next;
} bwd_job;

static size_t up16(int64_t n)
{
    return (size_t)tm__abwd_up(n, 16); /* 64-byte aligned sub-buffers */
}

/* Carves one part's buffers out of base (NULL base: just the size). */
static size_t bwd_layout(const bwd_job *J, float *base, tile_ws *w)
{
    tile_ws unused;
    if (!w) w = &unused;
    const tm__attn_geom *ge = &J->ge;
    int64_t bq = TM__ABWD_BQ, bk = TM__ABWD_BK;
    size_t sizes[] = {
        up16(J->bqm * ge->d),  up16(bq * J->dp),     /* qa, qr */
        up16(J->bqm * ge->dv), up16(bq * J->dvp),    /* ga, gr */
        up16(ge->d * J->bkp),  up16(ge->dv * J->bkp), /* kt, vt */
        up16(bk * J->dp),                             /* kr */
        up16(J->bqm * J->bkp), up16(J->bqm * J->bkp), /* s, dp */
        up16(bq * J->bkp),                            /* z */
        up16(J->bkm * bq),     up16(J->bqm * bk),     /* pta, dsa */
        up16(J->bkm * J->dp),  up16(J->bkm * J->dvp), /* dkacc, dvacc */
        up16(J->bqm * J->dp),                         /* dqacc */
        J->fused ? up16(ge->group * J->nqt * J->bqm * J->dp) : 0, /* gdq */
    };
    float **dst[] = {&w->qa, &w->qr, &w->ga, &w->gr, &w->kt, &w->vt,
                     &w->kr, &w->s, &w->dp, &w->z, &w->pta, &w->dsa,
                     &w->dkacc, &w->dvacc, &w->dqacc, &w->gdq};
    size_t off = 0;
    for (size_t x = 0; x < sizeof sizes / sizeof sizes[0]; x++) {
        if (base) *dst[x] = base + off;
        off += sizes[x];
    }
    return off;
}

static const float *row_f(const tm_buf *t, int64_t a, int64_t b, int64_t c)
{
    return tm__attn_row_ptr(t, a, b, c);
}

static float *out_f(const tm_buf *t, int64_t a, int64_t b, int64_t c)
{
    return (float *)tm__attn_row_ptr(t, a, b, c);
}

/* Rows [i0, i0 + m) of head (b, h): q as A panels (scores) and rows (dK);
 * g as A panels (dP) and rows (dV) — each only where a result needs it. */
static void load_rows(const bwd_job *J, tile_ws *w, int64_t b, int64_t h,
                      int64_t i0, int64_t m, bool dkdv, bool need_ds)
{
    const tm__attn_geom *ge = &J->ge;
    int mr = (int)J->mr;
    const float *q = row_f(J->q, b, h, i0), *g = row_f(J->g, b, h, i0);
    int64_t qs = J->q->strides[2], gs = J->g->strides[2];
    tm__abwd_pack_a(q, qs, m, ge->d, mr, w->qa);
    if (dkdv && J->want_dk) tm__abwd_rows(q, qs, m, ge->d, w->qr, J->dp);
    if (need_ds) tm__abwd_pack_a(g, gs, m, ge->dv, mr, w->ga);
    if (dkdv && J->want_dv) tm__abwd_rows(g, gs, m, ge->dv, w->gr, J->dvp);
}

/* Keys [j0, j0 + n) of (b, key/value head hk): k^T (scores), v^T (dP)
 * and k rows (dQ), where needed. */
static void load_keys(const bwd_job *J, tile_ws *w, int64_t b, int64_t hk,
                      int64_t j0, int64_t n, bool need_ds, bool dq)
{
    const tm__attn_geom *ge = &J->ge;
    const float *k = row_f(J->k, b, hk, j0), *v = row_f(J->v, b, hk, j0);
    int64_t ks = J->k->strides[2], vs = J->v->strides[2];
    tm__abwd_trans(k, ks, n, ge->d, w->kt, J->bkp);
    if (need_ds) tm__abwd_trans(v, vs, n, ge->dv, w->vt, J->bkp);
    if (dq) tm__abwd_rows(k, ks, n, ge->d, w->kr, J->dp);
}

/* The dropout factors of the tile into w->z (row stride bkp). */
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
        for (int64_t c = 0; c < t->n; c++) z[c] = w->keep[c] ? ks : 0.0f;
    }
}

/* One tile: its share of dK, dV (into w->dkacc, w->dvacc) when dkdv, of
 * dQ (into dqacc, row stride dp) when dqacc. */
static void tile(const bwd_job *J, tile_ws *w, const tm__abwd_tile *t,
                 bool dkdv, float *dqacc)
{
    const tm__attn_geom *ge = &J->ge;
    const tm__gemm_kernel *kr = J->kr;
    int mr = (int)J->mr;
    int64_t m = t->m, n = t->n, ld = J->bkp;
    float scale = (float)J->p->scale;
    int64_t row0 = (t->b * ge->h + t->h) * ge->tq + t->i0;
    bool need_ds = (dkdv && J->want_dk) || dqacc;
    bool drop = J->p->dropout_p > 0.0;
    tm__abwd_gemm(kr, m, n, ge->d, w->qa, w->kt, ld, w->s, ld, scale, 0.0f);
    bool full = tm__attn_tile_full(J->p, ge->tk, t->i0, t->i0 + m, t->j0,
                                   t->j0 + n);
    tm__abwd_weights(J->p, J->mask, ge->tk, t, full, J->lse + row0, w->s,
                     ld);
    if (drop) tile_dropout(J, w, t);
    if (dkdv && J->want_dv) {
        tm__abwd_pack_at(w->s, ld, drop ? w->z : NULL, ld, m, n, mr,
                         w->pta);
        tm__abwd_gemm(kr, n, ge->dv, m, w->pta, w->gr, J->dvp, w->dvacc,
                      J->dvp, 1.0f, 1.0f);
    }
    if (!need_ds) return;
    tm__abwd_gemm(kr, m, n, ge->dv, w->ga, w->vt, ld, w->dp, ld, 1.0f, 0.0f);
    for (int64_t r = 0; r < m; r++) {
        float di = J->drow[row0 + r];
        const float *s = w->s + r * ld, *z = w->z + r * ld;
        float *dp = w->dp + r * ld;
        if (drop)
            for (int64_t c = 0; c < n; c++)
                dp[c] = s[c] * (dp[c] * z[c] - di) * scale;
        else
            for (int64_t c = 0; c < n; c++)
                dp[c] = s[c] * (dp[c] - di) * scale;
    }
    if (dkdv && J->want_dk) {
        tm__abwd_pack_at(w->dp, ld, NULL, 0, m, n, mr, w->pta);
        tm__abwd_gemm(kr, n, ge->d, m, w->pta, w->qr, J->dp, w->dkacc,
                      J->dp, 1.0f, 1.0f);
    }
    if (dqacc) {
        tm__abwd_pack_a(w->dp, ld, m, n, mr, w->dsa);
        tm__abwd_gemm(kr, m, ge->d, n, w->dsa, w->kr, J->dp, dqacc, J->dp,
                      1.0f, 1.0f);
    }
}

static void zero(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = 0.0f;
}

static void store_rows(const tm_buf *dst, int64_t b, int64_t h, int64_t r0,
                       int64_t m, int64_t n, const float *src, int64_t ld)
{
    for (int64_t r = 0; r < m; r++) {
        float *d = out_f(dst, b, h, r0 + r);
        for (int64_t c = 0; c < n; c++) d[c] = src[r * ld + c];
    }
}

/* Key tile jt of (b, hk): dK and dV over the group's query tiles (and,
 * fused, the group's dQ into w->gdq). */
static void key_tile(const bwd_job *J, tile_ws *w, int64_t b, int64_t hk,
                     int64_t jt)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t j0 = jt * TM__ABWD_BK, n = ge->tk - j0;
    if (n > TM__ABWD_BK) n = TM__ABWD_BK;
    bool need_ds = J->want_dk || J->fused;
    zero(w->dkacc, J->bkm * J->dp);
    zero(w->dvacc, J->bkm * J->dvp);
    load_keys(J, w, b, hk, j0, n, need_ds, J->fused);
    for (int64_t hh = 0; hh < ge->group; hh++) {
        int64_t h = hk * ge->group + hh;
        for (int64_t it = 0; it < J->nqt; it++) {
            int64_t i0 = it * TM__ABWD_BQ, m = ge->tq - i0, lo, hi;
            if (m > TM__ABWD_BQ) m = TM__ABWD_BQ;
            tm__attn_block_range(J->p, ge->tk, i0, i0 + m, &lo, &hi);
            if (lo >= hi || hi <= j0 || lo >= j0 + n) continue;
            tm__abwd_tile t = {b, h, i0, m, j0, n};
            load_rows(J, w, b, h, i0, m, true, need_ds);
            float *dq = J->fused ? w->gdq + (hh * J->nqt + it) * J->bqm *
                                                J->dp
                                 : NULL;
            tile(J, w, &t, true, dq);
        }
    }
    if (J->want_dk) store_rows(J->dk, b, hk, j0, n, ge->d, w->dkacc, J->dp);
    if (J->want_dv)
        store_rows(J->dv, b, hk, j0, n, ge->dv, w->dvacc, J->dvp);
}

/* Query tile it of (b, h): its dQ over the key tiles its rows see. */
static void query_tile(const bwd_job *J, tile_ws *w, int64_t b, int64_t h,
                       int64_t it)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t i0 = it * TM__ABWD_BQ, m = ge->tq - i0, lo, hi;
    if (m > TM__ABWD_BQ) m = TM__ABWD_BQ;
    zero(w->dqacc, J->bqm * J->dp);
    tm__attn_block_range(J->p, ge->tk, i0, i0 + m, &lo, &hi);
    if (lo < hi) {
        load_rows(J, w, b, h, i0, m, false, true);
        for (int64_t jt = lo / TM__ABWD_BK; jt * TM__ABWD_BK < hi; jt++) {
            int64_t j0 = jt * TM__ABWD_BK, n = ge->tk - j0;
            if (n > TM__ABWD_BK) n = TM__ABWD_BK;
            tm__abwd_tile t = {b, h, i0, m, j0, n};
            load_keys(J, w, b, h / ge->group, j0, n, true, true);
            tile(J, w, &t, false, w->dqacc);
        }
    }
    store_rows(J->dq, b, h, i0, m, ge->d, w->dqacc, J->dp);
}

/* Fused: every key tile of (b, hk), the group's dQ stored at the end. */
static void group_task(const bwd_job *J, tile_ws *w, int64_t b, int64_t hk)
{
    const tm__attn_geom *ge = &J->ge;
    zero(w->gdq, ge->group * J->nqt * J->bqm * J->dp);
    for (int64_t jt = 0; jt < J->nkt; jt++) key_tile(J, w, b, hk, jt);
    for (int64_t hh = 0; hh < ge->group; hh++)
        for (int64_t it = 0; it < J->nqt; it++) {
            int64_t i0 = it * TM__ABWD_BQ, m = ge->tq - i0;
            if (m > TM__ABWD_BQ) m = TM__ABWD_BQ;
            store_rows(J->dq, b, hk * ge->group + hh, i0, m, ge->d,
                       w->gdq + (hh * J->nqt + it) * J->bqm * J->dp, J->dp);
        }
}

/* Runs task x.  Split: key tiles in order of jt (causal: the busiest
 * first), then query tiles from the last (likewise). */
static void run_task(const bwd_job *J, tile_ws *w, int64_t x)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t groups = ge->b * ge->hkv, heads = ge->b * ge->h;
    if (J->fused) {
        group_task(J, w, x / ge->hkv, x % ge->hkv);
    } else if (x < J->ntasks_a) {
        int64_t gi = x % groups;
        key_tile(J, w, gi / ge->hkv, gi % ge->hkv, x / groups);
    } else {
        x -= J->ntasks_a;
        int64_t bh = x % heads;
        query_tile(J, w, bh / ge->h, bh % ge->h, J->nqt - 1 - x / heads);
    }
}

static void bwd_part(int part, int nparts, void *ctx)
{
    bwd_job *J = ctx;
    tile_ws w;
    (void)nparts;
    bwd_layout(J, J->scratch + J->part_floats * (size_t)part, &w);
    w.keep = J->keep + (size_t)part * TM__ABWD_BK;
    for (;;) {
        int64_t x = (int64_t)atomic_fetch_add(&J->next, 1);
        if (x >= J->ntasks) break;
        run_task(J, &w, x);
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
        double s = 0.0;
        for (int64_t c = 0; c < ge->dv; c++) s += (double)g[c] * o[c];
        J->drow[r] = (float)s;
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
    J.dp = tm__abwd_up(ge->d, J.nr), J.dvp = tm__abwd_up(ge->dv, J.nr);
    J.bkp = tm__abwd_up(TM__ABWD_BK, J.nr);
    J.bqm = tm__abwd_up(TM__ABWD_BQ, J.mr);
    J.bkm = tm__abwd_up(TM__ABWD_BK, J.mr);
    J.nqt = (ge->tq + TM__ABWD_BQ - 1) / TM__ABWD_BQ;
    J.nkt = (ge->tk + TM__ABWD_BK - 1) / TM__ABWD_BK;
    int threads = tm_get_num_threads();
    if (strategy == TM__ATTN_BWD_AUTO)
        strategy = tm__attn_bwd_pick(ge, threads);
    J.fused = strategy == TM__ATTN_BWD_FUSED && J.want_dq &&
              (J.want_dk || J.want_dv);
    if (J.fused) {
        J.ntasks = groups;
    } else {
        J.ntasks_a = J.want_dk || J.want_dv ? groups * J.nkt : 0;
        J.ntasks = J.ntasks_a + (J.want_dq ? ge->b * ge->h * J.nqt : 0);
    }
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
    int64_t groups = ge->b * ge->hkv;
    /* Fused does 5 tile GEMMs to split's 7 but has only B * Hkv tasks of
     * equal size: worth it when they spread evenly over the threads. */
    if (groups >= threads && (groups % threads == 0 || groups >= 4 * threads))
        return TM__ATTN_BWD_FUSED;
    return TM__ATTN_BWD_SPLIT;
}
