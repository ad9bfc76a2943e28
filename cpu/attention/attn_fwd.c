/*
 * attn_fwd.c — the tiled F32 attention forward (flash-attention style):
 * a tile of AF_BQ query rows against tiles of AF_KT keys, scores in an
 * AF_BQ x AF_KT scratch tile, an online softmax per row (running max m
 * and sum l, the output accumulator rescaled when m grows), and at the end
 * out = acc / l, lse = m + log l.  Scratch is per thread and per tile;
 * nothing of size Tq x Tk exists.
 *
 * Two ways to form a score tile.  Packed: each key/value head's keys are
 * transposed once into AF_KT-key panels (converted to F32;
 * attn_fwd_pack.c), so a tile of scores is a register-blocked product
 * whose loads are shared by four query rows; used from AF_ROWS_MAX query
 * rows up, where the packing is repaid.  Rows: dot products against the
 * key rows in place (a few query rows: decoding), converting narrow keys
 * one tile at a time.
 *
 * On the row path the query heads of one key/value head share a tile
 * (GQA: its keys and values are read once per group).
 *
 * Threads: tasks are (b, head or head group, query tile, key split),
 * claimed one at a time from a shared counter, head by head and within a
 * head longest first (the last tiles of a causal attention see the most
 * keys).  When the (b, h, query tile) tasks are too few for the threads,
 * each one's keys are split into chunks (flash decoding): every chunk
 * leaves a partial (m, l, acc), and the task that completes a tile's
 * chunks combines them in chunk order, rescaling each by exp(m_chunk - m).
 *
 * Sums: scores and the accumulator in F32 (a few ulp per tile step), l in
 * double per row.
 */
#include "attn_fwd_job.h"
#include "../cpu_features.h"

/* Fewer query rows than this use the row path (no packing). */
#define AF_ROWS_MAX 16
/* Packed keys and values of at most this many bytes per thread at once
 * (at least one key/value head): larger calls pack a wave of heads at a
 * time, whose packing is still in cache when its tiles read it (1 MiB
 * measured ~8% faster than 32 MiB on B=8, H=8, T=256). */
#define AF_PACK_BYTES ((size_t)1 << 20)
/* A key split spans at least this many keys. */
#define AF_SPLIT_MIN_KEYS 256


static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* ---------------------------------------------------------------- tiles */

/* Per part scratch. */
typedef struct af_scratch {
    float *qt;    /* AF_BQ x dp: the query tile, F32, zero padded */
    float *s;     /* AF_BQ x AF_KT: scores, then weights */
    float *o;     /* AF_BQ x dvp: the accumulator */
    float *kc, *vc; /* AF_KT x dp, AF_KT x dvp: converted rows (row path) */
    float *m;     /* AF_BQ */
    double *l;    /* AF_BQ */
    uint8_t *keep; /* AF_KT */
    /* the packed panels and value rows read, of the key/value heads from
     * kv0 on */
    float *kp, *vp;
    int64_t kv0;
} af_scratch;

static af_scratch scratch_of(const af_job *J, int part)
{
    af_scratch S;
    char *c = J->scratch + J->part_bytes * (size_t)part;
    size_t bq = AF_BQ, kt = AF_KT;
    S.l = (double *)c, c += sizeof(double) * bq;
    S.qt = (float *)c, c += sizeof(float) * bq * (size_t)J->dp;
    S.s = (float *)c, c += sizeof(float) * bq * kt;
    S.o = (float *)c, c += sizeof(float) * bq * (size_t)J->dvp;
    S.kc = (float *)c, c += sizeof(float) * kt * (size_t)J->dp;
    S.vc = (float *)c, c += sizeof(float) * kt * (size_t)J->dvp;
    S.m = (float *)c, c += sizeof(float) * bq;
    S.keep = (uint8_t *)c;
    S.kp = J->kpack, S.vp = J->vpack, S.kv0 = J->kv0;
    if (J->own && J->kpack) {
        S.kp += (size_t)part * (size_t)(J->nkt * J->ge.d * AF_KT);
        if (S.vp) S.vp += (size_t)part * (size_t)(J->ge.tk * J->dvp);
    }
    return S;
}

static size_t scratch_bytes(const af_job *J)
{
    size_t bq = AF_BQ, kt = AF_KT;
    size_t f = bq * (size_t)J->dp + bq * kt + bq * (size_t)J->dvp +
               kt * (size_t)(J->dp + J->dvp) + bq;
    return (size_t)round_up((int64_t)(sizeof(double) * bq +
                                      sizeof(float) * f + kt),
                            64);
}

/* The rows of a tile: nr = heads * ni rows, row r the query i0 + r % ni
 * of head h0 + r / ni (several heads: the query heads of one key/value
 * head, stacked on the row path so that its keys are read once). */
typedef struct af_rows {
    int64_t b, h0, i0, ni, nr;
} af_rows;

/* The masks of one score tile: rows T of batch T->b, keys
 * [j0, j0 + nk).  Scores outside a row's range (and keys past nk) become
 * -inf, a float mask is added, a false bool hides. */
static void mask_tile(const af_job *J, float *s, const af_rows *T,
                      int64_t j0, int64_t nk, bool full)
{
    const tm_buf *mk = J->mask;
    for (int64_t r = 0; r < T->nr; r++) {
        float *sr = s + r * AF_KT;
        int64_t lo = 0, hi = nk, h = T->h0 + r / T->ni,
                i = T->i0 + r % T->ni;
        if (!full) {
            tm__attn_row_range(J->p, J->ge.tk, i, &lo, &hi);
            lo = lo - j0 < 0 ? 0 : lo - j0 > nk ? nk : lo - j0;
            hi = hi - j0 > nk ? nk : hi - j0;
            if (hi < lo) hi = lo;
        }
        for (int64_t j = 0; j < lo; j++) sr[j] = -INFINITY;
        for (int64_t j = hi; j < AF_KT; j++) sr[j] = -INFINITY;
        if (!mk || !mk->handle) continue;
        const char *base = (const char *)mk->handle + mk->offset;
        int64_t off = T->b * mk->strides[0] + h * mk->strides[1] +
                      i * mk->strides[2] + j0 * mk->strides[3];
        int64_t sj = mk->strides[3];
        if (mk->dtype == TM_BOOL) {
            const bool *mr = (const bool *)base + off;
            for (int64_t j = lo; j < hi; j++)
                if (!mr[j * sj]) sr[j] = -INFINITY;
        } else {
            const float *mr = (const float *)base + off;
            for (int64_t j = lo; j < hi; j++) sr[j] += mr[j * sj];
        }
    }
}

/* Whether a bool mask hides every key of the tile from every row. */
static bool mask_tile_empty(const af_job *J, const af_rows *T, int64_t j0,
                            int64_t nk)
{
    const tm_buf *mk = J->mask;
    if (!mk || !mk->handle || mk->dtype != TM_BOOL) return false;
    const bool *base =
        (const bool *)((const char *)mk->handle + mk->offset);
    for (int64_t r = 0; r < T->nr; r++) {
        int64_t h = T->h0 + r / T->ni, i = T->i0 + r % T->ni;
        const bool *mr = base + T->b * mk->strides[0] + h * mk->strides[1] +
                         i * mk->strides[2] + j0 * mk->strides[3];
        for (int64_t j = 0; j < nk; j++)
            if (mr[j * mk->strides[3]]) return false;
    }
    return true;
}

/* The online softmax over one score tile: updates m, l and the
 * accumulator's scale per row and leaves the (dropped-out) weights in s;
 * returns whether any row saw a key. */
static bool softmax_tile(const af_job *J, af_scratch *S, const af_rows *T,
                         int64_t j0, int64_t nk)
{
    const tm__attn_fwd_kernels *kr = J->kr;
    const tm__attn_geom *ge = &J->ge;
    bool any = false;
    for (int64_t r = 0; r < T->nr; r++) {
        float *sr = S->s + r * AF_KT;
        float mt = kr->row_max(sr);
        if (mt == -INFINITY) {
            memset(sr, 0, sizeof(float) * AF_KT);
            continue;
        }
        any = true;
        float mold = S->m[r], mnew = mt > mold ? mt : mold;
        if (mnew > mold && mold > -INFINITY) {
            float a = expf(mold - mnew);
            S->l[r] *= a;
            kr->scale(J->dvp, S->o + r * J->dvp, a);
        }
        S->m[r] = mnew;
        S->l[r] += kr->row_exp(sr, mnew);
        if (J->p->dropout_p > 0.0) {
            int64_t h = T->h0 + r / T->ni, i = T->i0 + r % T->ni;
            uint64_t e0 =
                (uint64_t)(((T->b * ge->h + h) * ge->tq + i) * ge->tk);
            tm__attn_dropout_row(&J->dr, e0, j0, j0 + nk, S->keep);
            for (int64_t j = 0; j < nk; j++)
                if (!S->keep[j]) sr[j] = 0.0f;
        }
    }
    return any;
}

/* One task: the rows T over the key tiles [t0, t1); leaves m, l and the
 * accumulator in S. */
static void run_tile(const af_job *J, af_scratch *S, const af_rows *T,
                     int64_t t0, int64_t t1)
{
    const tm__attn_geom *ge = &J->ge;
    const tm__attn_fwd_kernels *kr = J->kr;
    int64_t b = T->b, hk = T->h0 / ge->group, nr = T->nr, i0 = T->i0;
    int64_t kvw = b * ge->hkv + hk - S->kv0;
    float scale = (float)J->p->scale;
    int64_t lo, hi;
    tm__attn_block_range(J->p, ge->tk, i0, i0 + T->ni, &lo, &hi);
    /* the packed product reads the query rows of one head in place (it
     * needs no padding); the row path a padded copy */
    bool q_direct = J->packed && nr == T->ni;
    const float *qp = q_direct ? (const float *)tm__attn_row_ptr(J->q, b,
                                                                 T->h0, i0)
                               : S->qt;
    int64_t ldq = q_direct ? J->q->strides[2] : J->dp;
    for (int64_t r = 0; r < nr; r++) {
        if (!q_direct) {
            float *qr = S->qt + r * J->dp;
            tm__af_load_f32(tm__attn_row_ptr(J->q, b, T->h0 + r / T->ni,
                                             i0 + r % T->ni),
                            TM_F32, ge->d, qr);
            for (int64_t c = ge->d; c < J->dp; c++) qr[c] = 0;
        }
        S->m[r] = -INFINITY;
        S->l[r] = 0.0;
    }
    memset(S->o, 0, sizeof(float) * (size_t)(nr * J->dvp));
    for (int64_t t = t0; t < t1; t++) {
        int64_t j0 = t * AF_KT, nk = ge->tk - j0 < AF_KT ? ge->tk - j0
                                                         : AF_KT;
        if (mask_tile_empty(J, T, j0, nk)) continue;
        if (J->packed) {
            kr->s_packed(nr, ge->d, qp, ldq,
                         S->kp + (size_t)((kvw * J->nkt + t) * ge->d *
                                          AF_KT),
                         S->s, scale);
        } else {
            const float *kp = S->kc;
            int64_t ldk = J->dp;
            if (J->k_direct) {
                kp = tm__attn_row_ptr(J->k, b, hk, j0);
                ldk = J->k->strides[2];
            } else {
                for (int64_t jj = 0; jj < nk; jj++) {
                    float *dst = S->kc + jj * J->dp;
                    tm__af_load_f32(tm__attn_row_ptr(J->k, b, hk, j0 + jj),
                                    J->k->dtype, ge->d, dst);
                    for (int64_t c = ge->d; c < J->dp; c++) dst[c] = 0;
                }
            }
            kr->s_rows(nr, nk, J->dp, S->qt, J->dp, kp, ldk, S->s, AF_KT,
                       scale);
        }
        bool full = nk == AF_KT &&
                    tm__attn_tile_full(J->p, ge->tk, i0, i0 + T->ni, j0,
                                       j0 + nk);
        mask_tile(J, S->s, T, j0, nk, full);
        if (!softmax_tile(J, S, T, j0, nk)) continue;
        /* only the keys some row sees: a diagonal tile's weights past
         * them are 0, and their value rows are not read */
        int64_t ja = lo - j0 > 0 ? lo - j0 : 0;
        int64_t jb = hi - j0 < nk ? hi - j0 : nk;
        const float *vp;
        int64_t ldv;
        if (J->v_direct) {
            vp = tm__attn_row_ptr(J->v, b, hk, j0);
            ldv = J->v->strides[2];
        } else if (J->packed) {
            vp = S->vp + (size_t)((kvw * ge->tk + j0) * J->dvp);
            ldv = J->dvp;
        } else {
            for (int64_t jj = 0; jj < nk; jj++) {
                float *dst = S->vc + jj * J->dvp;
                tm__af_load_f32(tm__attn_row_ptr(J->v, b, hk, j0 + jj),
                                J->v->dtype, ge->dv, dst);
                for (int64_t c = ge->dv; c < J->dvp; c++) dst[c] = 0;
            }
            vp = S->vc;
            ldv = J->dvp;
        }
        kr->pv(nr, jb - ja, J->dvp, S->s + ja, AF_KT, vp + ja * ldv, ldv,
               S->o, J->dvp);
    }
}

/* Stores out and lse of the rows T from m, l and acc rows. */
static void finish_rows(const af_job *J, const af_rows *T, const float *m,
                        const double *l, float *o, int64_t ldo)
{
    const tm__attn_geom *ge = &J->ge;
    float *out = (float *)((char *)J->out->handle + J->out->offset);
    float *lse = J->lse && J->lse->handle
                     ? (float *)((char *)J->lse->handle + J->lse->offset)
                     : NULL;
    for (int64_t r = 0; r < T->nr; r++) {
        int64_t row = (T->b * ge->h + T->h0 + r / T->ni) * ge->tq + T->i0 +
                      r % T->ni;
        float *dst = out + row * ge->dv;
        float *src = o + r * ldo;
        if (!(m[r] > -INFINITY && l[r] > 0.0)) {
            memset(dst, 0, sizeof(float) * (size_t)ge->dv);
            if (lse) lse[row] = -INFINITY;
            continue;
        }
        float f = (float)((J->p->dropout_p > 0.0 ? J->dr.keep_scale : 1.0) /
                          l[r]);
        /* scaled in place (whole vectors), then copied: the scalar loop
         * was not vectorised */
        J->kr->scale(J->dvp, src, f);
        memcpy(dst, src, sizeof(float) * (size_t)ge->dv);
        if (lse) lse[row] = m[r] + logf((float)l[r]);
    }
}

/* Task x of the wave -> (first head, query tile, split), heads taken
 * J->hg at a time: head by head, so that a head's packed keys stay in
 * cache while its tiles run, and within a head the longest (causal: last)
 * tiles first. */
static void task_of(const af_job *J, int64_t x, int64_t *bh, int64_t *tile,
                    int64_t *split)
{
    *split = x % J->nsplit;
    x /= J->nsplit;
    *tile = J->ntq - 1 - x % J->ntq;
    *bh = J->kv0 * J->ge.group + x / J->ntq * J->hg;
}

/* Combines the splits of rows [r0, r1) of the B*H*Tq rows. */
static void combine_range(const af_job *J, int64_t r0, int64_t r1)
{
    int64_t ns = J->nsplit;
    for (int64_t row = r0; row < r1; row++) {
        const double *ml = J->pml + 2 * row * ns;
        const float *acc = J->pacc + row * ns * J->dvp;
        double mx = -INFINITY, l = 0.0;
        for (int64_t s = 0; s < ns; s++)
            if (ml[2 * s] > mx) mx = ml[2 * s];
        float *o = J->pacc + row * ns * J->dvp; /* split 0's row, reused */
        float w0 = ml[0] > -INFINITY ? (float)exp(ml[0] - mx) : 0.0f;
        l = w0 * ml[1];
        for (int64_t c = 0; c < J->dvp; c++) o[c] = acc[c] * w0;
        for (int64_t s = 1; s < ns; s++) {
            if (!(ml[2 * s] > -INFINITY)) continue;
            float w = (float)exp(ml[2 * s] - mx);
            l += w * ml[2 * s + 1];
            const float *a = acc + s * J->dvp;
            for (int64_t c = 0; c < J->dvp; c++) o[c] += a[c] * w;
        }
        float m = (float)mx;
        int64_t bh = row / J->ge.tq;
        af_rows T = {bh / J->ge.h, bh % J->ge.h, row % J->ge.tq, 1, 1};
        finish_rows(J, &T, &m, &l, o, J->dvp);
    }
}

/* Query tile `tile` of heads [bh, bh + hg), key split sp. */
static void run_task(const af_job *J, af_scratch *S, int64_t bh,
                     int64_t tile, int64_t sp)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t i0 = tile * AF_BQ, lo, hi;
    int64_t ni = ge->tq - i0 < AF_BQ ? ge->tq - i0 : AF_BQ;
    af_rows T = {bh / ge->h, bh % ge->h, i0, ni, ni * J->hg};
    tm__attn_block_range(J->p, ge->tk, i0, i0 + ni, &lo, &hi);
    int64_t ta = lo / AF_KT, tb = hi > lo ? (hi + AF_KT - 1) / AF_KT
                                          : ta;
    int64_t t0 = ta + (tb - ta) * sp / J->nsplit,
            t1 = ta + (tb - ta) * (sp + 1) / J->nsplit;
    run_tile(J, S, &T, t0, t1);
    if (J->nsplit == 1) {
        finish_rows(J, &T, S->m, S->l, S->o, J->dvp);
        return;
    }
    for (int64_t r = 0; r < T.nr; r++) {
        int64_t pr = ((bh + r / ni) * ge->tq + i0 + r % ni) * J->nsplit +
                     sp;
        J->pml[2 * pr] = S->m[r];
        J->pml[2 * pr + 1] = S->l[r];
        memcpy(J->pacc + pr * J->dvp, S->o + r * J->dvp,
               sizeof(float) * (size_t)J->dvp);
    }
    /* the task finishing a tile's last split combines its rows, in
     * split order whichever thread that is: no second parallel pass
     * (decode B=1, H=8, Tk=4096, 2 threads: one wake-up less a call) */
    int64_t unit = bh / J->hg * J->ntq + tile;
    if (atomic_fetch_add_explicit(&J->ndone[unit], 1,
                                  memory_order_acq_rel) !=
        J->nsplit - 1)
        return;
    for (int64_t r = 0; r < T.nr; r++) {
        int64_t row = (bh + r / ni) * ge->tq + i0 + r % ni;
        combine_range(J, row, row + 1);
    }
}

static void work_part(int part, int nparts, void *ctx)
{
    (void)nparts;
    af_job *J = ctx;
    const tm__attn_geom *ge = &J->ge;
    af_scratch S = scratch_of(J, part);
    for (;;) {
        int64_t x = (int64_t)atomic_fetch_add(&J->next, 1), bh, tile, sp;
        if (x >= J->ntask) break;
        if (!J->own) {
            task_of(J, x, &bh, &tile, &sp);
            run_task(J, &S, bh, tile, sp);
            continue;
        }
        /* key/value head x: its panels, then every tile of its query
         * heads, all on this thread (its L2) */
        for (int64_t t = 0; t < J->nkt; t++)
            tm__af_pack_unit(J, x, t, S.kp + (size_t)(t * ge->d * AF_KT),
                             S.vp);
        S.kv0 = x;
        for (int64_t hq = 0; hq < ge->group; hq++)
            for (int64_t tile = J->ntq - 1; tile >= 0; tile--)
                run_task(J, &S, x * ge->group + hq, tile, 0);
    }
}

const tm__attn_fwd_kernels *tm__attn_fwd_kernels_now(void)
{
    switch (tm__cpu_isa()) {
#if defined(__x86_64__)
    case TM__ISA_AVX512: return &tm__attn_fwd_avx512;
    case TM__ISA_AVX2: return &tm__attn_fwd_avx2;
#endif
#if defined(__aarch64__)
    case TM__ISA_NEON: return &tm__attn_fwd_neon;
#endif
    default: return &tm__attn_fwd_portable;
    }
}

/* Key chunks per (b, h, query tile): 1 when those tasks number 16 a
 * thread or more, else enough for about that many, each chunk at least
 * AF_SPLIT_MIN_KEYS keys.  Many small tasks balance threads that other
 * work delays: on a loaded 2-core machine decode B=1, H=8, Tk=4096 went
 * from 0.24 ms unsplit to 0.14 ms with 4 chunks (best of 60); on a quiet
 * one the two were alike. */
static int64_t auto_splits(const tm__attn_geom *ge, int64_t units)
{
    int64_t nth = tm_get_num_threads();
    if (units >= 16 * nth) return 1;
    int64_t want = (16 * nth + units - 1) / units;
    int64_t most = ge->tk / AF_SPLIT_MIN_KEYS;
    if (want > most) want = most;
    if (want > 64) want = 64;
    return want < 1 ? 1 : want;
}

tm_status tm__attn_fwd_f32(const tm_buf *out, const tm_buf *lse,
                           const tm_buf *q, const tm_buf *k, const tm_buf *v,
                           const tm_buf *mask, const tm_attn_params *p,
                           int splits)
{
    tm_status st = TM_OK;
    af_job J = {.out = out, .lse = lse, .q = q, .k = k, .v = v,
                .mask = mask, .p = p, .kr = tm__attn_fwd_kernels_now(),
                .ge = tm__attn_geom_of(q, k, v)};
    const tm__attn_geom *ge = &J.ge;
    int64_t rows = ge->b * ge->h * ge->tq;
    if (rows == 0) return TM_OK;
    if (p->dropout_p > 0.0) J.dr = tm__attn_dropout_of(p);
    int64_t w = J.kr->w;
    J.dp = round_up(ge->d, w);
    J.dvp = round_up(ge->dv, w);
    J.packed = ge->tq >= AF_ROWS_MAX;
    J.k_direct = k->dtype == TM_F32 && J.dp == ge->d;
    J.v_direct = v->dtype == TM_F32 && J.dvp == ge->dv;
    J.ntq = (ge->tq + AF_BQ - 1) / AF_BQ;
    J.nkt = (ge->tk + AF_KT - 1) / AF_KT;
    J.hg = !J.packed && ge->group * ge->tq <= AF_BQ ? ge->group : 1;
    J.nsplit = splits > 0 ? splits
                          : auto_splits(ge, ge->b * ge->h / J.hg * J.ntq);
    int64_t nkv = ge->b * ge->hkv, wave = nkv;
    int nth = tm_get_num_threads();
    /* many heads: a thread packs the heads it runs, so that no thread
     * reads panels from another's cache, in one parallel region (waves
     * take two each); few heads: waves, whose tasks are single tiles */
    J.own = J.packed && J.nsplit == 1 && nkv >= 8 * (int64_t)nth;
    size_t head_bytes = 0;
    if (J.own) {
        wave = nth;
    } else if (J.packed) {
        head_bytes = sizeof(float) *
                     (size_t)(J.nkt * ge->d * AF_KT +
                              (J.v_direct ? 0 : ge->tk * J.dvp));
        size_t budget = AF_PACK_BYTES * (size_t)tm_get_num_threads();
        /* enough heads for four tasks a thread, for balance */
        int64_t tasks_per_kv = ge->group / J.hg * J.ntq * J.nsplit;
        int64_t least = (4 * tm_get_num_threads() + tasks_per_kv - 1) /
                        tasks_per_kv;
        if (head_bytes > 0 && budget / head_bytes < (size_t)wave)
            wave = (int64_t)(budget / head_bytes);
        if (wave < least) wave = least;
        if (wave > nkv) wave = nkv;
        if (wave < 1) wave = 1;
    }
    int64_t max_tasks = J.own ? nkv
                              : wave * ge->group / J.hg * J.ntq * J.nsplit;
    int nparts = max_tasks < nth ? (int)max_tasks : nth;
    J.part_bytes = scratch_bytes(&J);
    J.scratch = tm__alloc(J.part_bytes * (size_t)nparts, __func__);
    if (!J.scratch) goto nomem;
    if (J.packed) {
        size_t kb = sizeof(float) * (size_t)(wave * J.nkt * ge->d * AF_KT);
        size_t vb = J.v_direct ? 0
                               : sizeof(float) *
                                     (size_t)(wave * ge->tk * J.dvp);
        J.kpack = tm__alloc(kb, __func__);
        J.vpack = tm__alloc(vb, __func__);
        if (!J.kpack || !J.vpack) goto nomem;
    }
    if (J.nsplit > 1) {
        J.pml = tm__alloc(sizeof(double) * (size_t)(2 * rows * J.nsplit),
                          __func__);
        J.pacc = tm__alloc(sizeof(float) * (size_t)(rows * J.nsplit *
                                                    J.dvp),
                           __func__);
        int64_t units = ge->b * ge->h / J.hg * J.ntq;
        J.ndone = tm__alloc(sizeof(atomic_int) * (size_t)units, __func__);
        if (!J.pml || !J.pacc || !J.ndone) goto nomem;
        for (int64_t u = 0; u < units; u++) atomic_init(&J.ndone[u], 0);
    }
    if (J.own) {
        J.ntask = nkv;
        atomic_store(&J.next, 0);
        tm__parallel_parts(nparts, work_part, &J);
    }
    for (J.kv0 = 0; J.kv0 < nkv && !J.own; J.kv0 = J.kv1) {
        J.kv1 = J.kv0 + wave < nkv ? J.kv0 + wave : nkv;
        if (J.packed)
            tm__parallel_for((J.kv1 - J.kv0) * J.nkt, 1, tm__af_pack_range,
                             &J);
        J.ntask = (J.kv1 - J.kv0) * ge->group / J.hg * J.ntq * J.nsplit;
        atomic_store(&J.next, 0);
        int parts = J.ntask < nparts ? (int)J.ntask : nparts;
        tm__parallel_parts(parts, work_part, &J);
    }
    goto done;
nomem:
    st = TM_ENOMEM;
done:
    tm__dealloc(J.pacc);
    tm__dealloc(J.ndone);
    tm__dealloc(J.pml);
    tm__dealloc(J.vpack);
    tm__dealloc(J.kpack);
    tm__dealloc(J.scratch);
    return st;
}
