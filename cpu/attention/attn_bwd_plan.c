/*
 * attn_bwd_plan.c — what the tiled F32 attention backward (attn_bwd.c)
 * prefetches while its tile GEMMs run (tm__abwd_pf, attn_bwd.h): the next
 * query or key tile's rows within a task, and near a task's end its
 * output rows and the first rows of the part's next task.
 */
#include "attn_bwd_job.h"

/* Queues rows [r0, r0 + n) of head (b, h) of t, cols floats each. */
static void rows_rw(tm__abwd_pf *pf, const tm_buf *t, int64_t b, int64_t h,
                    int64_t r0, int64_t n, int64_t cols, bool write)
{
    if (n > 0 && t)
        tm__abwd_pf_add(pf, row_f(t, b, h, r0), n,
                        t->strides[2] * (int64_t)sizeof(float),
                        cols * (int64_t)sizeof(float), write);
}

void tm__abwd_pf_rows(tm__abwd_pf *pf, const tm_buf *t, int64_t b,
                      int64_t h, int64_t r0, int64_t n, int64_t cols)
{
    rows_rw(pf, t, b, h, r0, n, cols, false);
}

void tm__abwd_pf_reset(tm__abwd_pf *pf)
{
    pf->n = pf->r = 0;
    pf->row = pf->off = 0;
}

/* The query tile after (*hh, *it) in key_block's order that sees some of
 * keys [bj0, bj1) (from *it = -1: the first); false when none. */
bool tm__abwd_next_qtile(const bwd_job *J, int64_t bj0, int64_t bj1,
                         int64_t *hh, int64_t *it)
{
    for (;;) {
        if (++*it == J->nqt) {
            *it = 0;
            if (++*hh == J->ge.group) return false;
        }
        int64_t i0 = *it * TM__ABWD_BQ, lo, hi;
        tm__attn_block_range(J->p, J->ge.tk, i0,
                             i0 + tile_len(*it, TM__ABWD_BQ, J->ge.tq), &lo,
                             &hi);
        if (lo < hi && hi > bj0 && lo < bj1) return true;
    }
}

/* Queues the rows of query tile it of head h that load_rows reads. */
void tm__abwd_pf_qtile(const bwd_job *J, tm__abwd_pf *pf, int64_t b,
                       int64_t h, int64_t it, bool g)
{
    int64_t i0 = it * TM__ABWD_BQ, m = tile_len(it, TM__ABWD_BQ, J->ge.tq);
    tm__abwd_pf_rows(pf, J->q, b, h, i0, m, J->ge.d);
    if (g) tm__abwd_pf_rows(pf, J->g, b, h, i0, m, J->ge.dv);
}

/* Queues the output rows task x stores at its end (the last key block's
 * dK and dV rows, or its dQ rows). */
void tm__abwd_pf_task_out(const bwd_job *J, tile_ws *w, int64_t x)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t groups = ge->b * ge->hkv, heads = ge->b * ge->h;
    int64_t nqb = (J->nqt + J->nb - 1) / J->nb;
    if (J->fused || x < J->ntasks_a) {
        int64_t gi = J->fused ? x : x % groups;
        int64_t kb = J->fused ? (J->nkt - 1) / J->nb : x / groups;
        int64_t b = gi / ge->hkv, hk = gi % ge->hkv;
        int64_t j0 = kb * J->nb * TM__ABWD_BK, n = J->nb * TM__ABWD_BK;
        if (n > ge->tk - j0) n = ge->tk - j0;
        if (J->want_dk) rows_rw(&w->pfnx, J->dk, b, hk, j0, n, ge->d, true);
        if (J->want_dv) rows_rw(&w->pfnx, J->dv, b, hk, j0, n, ge->dv, true);
        for (int64_t hh = 0; J->fused && hh < ge->group; hh++)
            rows_rw(&w->pfnx, J->dq, b, hk * ge->group + hh, 0, ge->tq,
                    ge->d, true);
        return;
    }
    x -= J->ntasks_a;
    int64_t bh = x % heads;
    int64_t i0 = (nqb - 1 - x / heads) * J->nb * TM__ABWD_BQ;
    int64_t m = J->nb * TM__ABWD_BQ;
    if (m > ge->tq - i0) m = ge->tq - i0;
    rows_rw(&w->pfnx, J->dq, bh / ge->h, bh % ge->h, i0, m, ge->d, true);
}

/* Queues the rows task x reads first (its first key block's keys and
 * first query tile, or its query tiles and first key tile). */
void tm__abwd_pf_task(const bwd_job *J, tile_ws *w, int64_t x)
{
    const tm__attn_geom *ge = &J->ge;
    int64_t groups = ge->b * ge->hkv, heads = ge->b * ge->h;
    int64_t nqb = (J->nqt + J->nb - 1) / J->nb;
    if (x >= J->ntasks) return;
    if (J->fused || x < J->ntasks_a) {
        int64_t gi = J->fused ? x : x % groups, kb = J->fused ? 0 : x / groups;
        int64_t b = gi / ge->hkv, hk = gi % ge->hkv;
        int64_t j0 = kb * J->nb * TM__ABWD_BK, n = J->nb * TM__ABWD_BK;
        if (n > ge->tk - j0) n = ge->tk - j0;
        tm__abwd_pf_rows(&w->pfnx, J->k, b, hk, j0, n, ge->d);
        if (J->want_dk || J->fused)
            tm__abwd_pf_rows(&w->pfnx, J->v, b, hk, j0, n, ge->dv);
        int64_t hh = 0, it = -1;
        if (tm__abwd_next_qtile(J, j0, j0 + n, &hh, &it))
            tm__abwd_pf_qtile(J, &w->pfnx, b, hk * ge->group + hh, it, true);
        return;
    }
    x -= J->ntasks_a;
    int64_t bh = x % heads, b = bh / ge->h, h = bh % ge->h, lo, hi;
    int64_t i0 = (nqb - 1 - x / heads) * J->nb * TM__ABWD_BQ;
    int64_t m = J->nb * TM__ABWD_BQ;
    if (m > ge->tq - i0) m = ge->tq - i0;
    tm__abwd_pf_rows(&w->pfnx, J->q, b, h, i0, m, ge->d);
    tm__abwd_pf_rows(&w->pfnx, J->g, b, h, i0, m, ge->dv);
    tm__attn_block_range(J->p, ge->tk, i0, i0 + m, &lo, &hi);
    if (lo < hi) {
        int64_t j0 = lo / TM__ABWD_BK * TM__ABWD_BK;
        int64_t n = tile_len(j0 / TM__ABWD_BK, TM__ABWD_BK, ge->tk);
        tm__abwd_pf_rows(&w->pfnx, J->k, b, h / ge->group, j0, n, ge->d);
        tm__abwd_pf_rows(&w->pfnx, J->v, b, h / ge->group, j0, n, ge->dv);
    }
}
