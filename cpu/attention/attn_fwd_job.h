/*
 * attn_fwd_job.h — the tiled attention forward's job (internal), shared by
 * its driver (attn_fwd.c) and its packing (attn_fwd_pack.c).
 */
#ifndef FOUNDRY_CPU_ATTN_FWD_JOB_H
#define FOUNDRY_CPU_ATTN_FWD_JOB_H

#include "attn_fwd.h"
#include "attn_impl.h"

#include <stdatomic.h>

typedef struct af_job {
    const tm_buf *out, *lse, *q, *k, *v, *mask;
    const tm_attn_params *p;
    const tm__attn_fwd_kernels *kr;
    tm__attn_geom ge;
    tm__attn_dropout dr;
    bool packed, k_direct, v_direct;
    /* each task a whole key/value head, packed by the thread that runs it
     * into its own panels (else heads are packed in waves, by all) */
    bool own;
    int64_t dp, dvp, ntq, nkt, nsplit;
    int64_t hg; /* query heads per task: 1, or a group on the row path */
    /* the wave of key/value heads [kv0, kv1) packed now, and its tasks */
    int64_t kv0, kv1, ntask;
    float *kpack, *vpack;
    atomic_llong next;
    /* partials of split tasks: per (row, split) m and l, and acc; per
     * (b, head group, query tile) the splits done */
    double *pml;
    float *pacc;
    atomic_int *ndone;
    /* per part scratch */
    char *scratch;
    size_t part_bytes;
} af_job;

/* n elements of a row of F32, F16 or BF16 into dst as F32. */
void tm__af_load_f32(const void *src, tm_dtype dt, int64_t n, float *dst);

/* Key tile t of key/value head kvi (b * Hkv + hk): its panel kt (d rows
 * of AF_KT, zero past Tk) and, unless read in place, its value rows into
 * the head's F32 copy vh (dvp wide, zero padded). */
void tm__af_pack_unit(const af_job *J, int64_t kvi, int64_t t, float *kt,
                      float *vh);

/* Units [u0, u1) of the wave J->kv0..: unit u is key tile u % nkt of head
 * kv0 + u / nkt (a tm__parallel_for body). */
void tm__af_pack_range(int64_t u0, int64_t u1, void *ctx);

#endif
