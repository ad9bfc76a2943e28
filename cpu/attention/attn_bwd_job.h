/*
 * attn_bwd_job.h — the tiled F32 attention backward's job and per-part
 * buffers (attn_bwd.c), shared with its prefetch planning
 * (attn_bwd_plan.c).  Internal to cpu/attention/attn_bwd*.c.
 */
#ifndef FOUNDRY_CPU_ATTN_BWD_JOB_H
#define FOUNDRY_CPU_ATTN_BWD_JOB_H

#include "attn_bwd.h"

#include <stdatomic.h>

/* Tiles per block: a task packs up to NB query (or key) tiles once and
 * runs them against each key (or query) tile it visits, so packing costs
 * O(rows) per visit instead of O(rows) per tile pair. */
#define NB 4

/* The packed operands of one query tile: q and g as A panels (scores,
 * dP) and transposed A panels (dK^T, dV^T), and its dQ accumulator. */
typedef struct qtile {
    float *qa, *ga, *qta, *gta, *dq;
} qtile;

/* One key tile: k^T, v^T (B of scores and dP), k rows (B of dQ), and the
 * dK^T, dV^T accumulators (D x BK: the tiles' weights are their B). */
typedef struct ktile {
    float *kt, *vt, *kr, *dkt, *dvt;
    const float *kb; /* the B of dQ: kr, or k's own rows when D needs no */
    int64_t kbs;     /* padding to NR; its row stride */
} ktile;

/* One part's buffers (attn_bwd.h's layouts; sizes in bwd_layout). */
typedef struct tile_ws {
    qtile qt[NB];
    ktile kt[NB];
    float *s, *dp, *z, *dsa, *gdq;
    uint8_t *keep;
    tm__abwd_pf pfin; /* the task's next query (or key) tile */
    tm__abwd_pf pfnx; /* the task's outputs, then the next task's rows */
    bool nx_ok;       /* near the task's end: pfnx may run */
} tile_ws;

typedef struct bwd_job {
    const tm_buf *dq, *dk, *dv, *g, *q, *k, *v, *out, *mask;
    const tm_attn_params *p;
    tm__attn_geom ge;
    tm__attn_dropout dr;
    const tm__gemm_kernel *kr;
    int64_t mr, nr, dp, dvp, dm, dvm, bkp, bqm, nqt, nkt;
    int64_t nb;        /* tiles per block (<= NB) */
    bool want_dq, want_dk, want_dv, fused;
    bool avx512;       /* the tile GEMMs of attn_bwd_avx512.c */
    const float *lse;
    float *drow;       /* D_i of every row, (B, H, Tq) */
    float *scratch;    /* per part: part_floats */
    size_t part_floats;
    uint8_t *keep;     /* per part: BK */
    int64_t ntasks_a;  /* split: key blocks first, then query blocks */
    int64_t ntasks;
    atomic_llong next;
} bwd_job;

static inline const float *row_f(const tm_buf *t, int64_t a, int64_t b,
                                 int64_t c)
{
    return tm__attn_row_ptr(t, a, b, c);
}

static inline float *out_f(const tm_buf *t, int64_t a, int64_t b, int64_t c)
{
    return (float *)tm__attn_row_ptr(t, a, b, c);
}


static inline int64_t tile_len(int64_t t, int64_t tile, int64_t total)
{
    int64_t n = total - t * tile;
    return n < tile ? n : tile;
}

/* Prefetch planning (attn_bwd_plan.c). */
void tm__abwd_pf_reset(tm__abwd_pf *pf);
/* The query tile after (*hh, *it) in key_block's order that sees some of
 * keys [bj0, bj1) (from *it = -1: the first); false when none. */
bool tm__abwd_next_qtile(const bwd_job *J, int64_t bj0, int64_t bj1,
                         int64_t *hh, int64_t *it);
/* Queues rows [r0, r0 + n) of head (b, h) of t, cols floats each. */
void tm__abwd_pf_rows(tm__abwd_pf *pf, const tm_buf *t, int64_t b,
                      int64_t h, int64_t r0, int64_t n, int64_t cols);
/* Queues the rows of query tile it of head h that load_rows reads. */
void tm__abwd_pf_qtile(const bwd_job *J, tm__abwd_pf *pf, int64_t b,
                       int64_t h, int64_t it, bool g);
/* Queues into w->pfnx the output rows task x stores at its end, and the
 * rows task x reads first. */
void tm__abwd_pf_task_out(const bwd_job *J, tile_ws *w, int64_t x);
void tm__abwd_pf_task(const bwd_job *J, tile_ws *w, int64_t x);

#endif
