/* mpi.c — the swarm over MPI: every rank of MPI_COMM_WORLD is a worker
 * and there is no coordinator.  Each round the ranks exchange their
 * contributions (TopK: an allgather of the counts, then allgatherv of the
 * indices and the values; dense and DiLoCo: an allreduce) and every rank
 * computes what the coordinator would: the same validation, the sum in
 * worker-id order (rank + 1), the same F16 rounding.  So a TopK swarm over
 * MPI gives the parameters a TCP swarm of the same workers gives, bit for
 * bit.  Built with make MPI=1; without it tm_swarm_join refuses opts.mpi. */
#include "worker_impl.h"

#include "../tensor/core/tensor_impl.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef TM_HAVE_MPI

tm_swarm *tm__sw_mpi_join(const tm_swarm_opts *o, tm_params *params, tm_optim *opt)
{
    (void)o, (void)params, (void)opt;
    TM_ERR(TM_EINVAL, "this build of Foundry has no MPI transport "
           "(build it with make MPI=1)");
    return NULL;
}
tm_status tm__sw_mpi_step(tm_swarm *sw)
{
    (void)sw;
    return TM_ERR(TM_EINVAL, "no MPI transport in this build");
}
void tm__sw_mpi_leave(tm_swarm *sw) { (void)sw; }

#else

#include <mpi.h>

struct tm__swarm_mpi {
    int rank, size;
    bool finalize; /* MPI was initialized here */
    int *counts, *displs, *ok;
    int64_t *all_idx;
    float *all_val, *acc;
    uint8_t *mark;
    size_t cap; /* entries all_idx / all_val hold */
    tm__swarm_norms norms;
};

static tm_status mpi_err(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return TM_ERR(TM_EIO, "%s: %.*s", what, len, msg);
}

#define MPI_TRY(call)                                                          \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != MPI_SUCCESS) return mpi_err(rc_, #call);                    \
    } while (0)

static bool finite_all(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

/* Everyone starts from rank 0's state, as TCP joiners start from the
 * founder's; every rank checks it trains the same model the same way. */
static tm_status mpi_sync_start(tm_swarm *sw)
{
    struct tm__swarm_mpi *m = sw->mpi;
    tm__swarm_join_msg j = {(uint64_t)sw->f.numel, {0}, 0, 0, sw->s};
    memcpy(j.fingerprint, sw->f.fingerprint, 32);
    uint8_t mine[TM__SWARM_JOIN_BYTES], root[TM__SWARM_JOIN_BYTES];
    tm__swarm_join_encode(&j, mine);
    memcpy(root, mine, sizeof root);
    MPI_TRY(MPI_Bcast(root, (int)sizeof root, MPI_BYTE, 0, MPI_COMM_WORLD));
    int same = !memcmp(root, mine, 40) && !memcmp(root + 56, mine + 56, 64), all = 0;
    MPI_TRY(MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!all)
        return TM_ERR(TM_EINVAL, "the MPI ranks do not all train the same "
                      "model with the same swarm settings%s",
                      same ? "" : " (this rank differs from rank 0)");
    uint8_t *p = NULL;
    size_t n = 0;
    long long len = 0;
    if (m->rank == 0) {
        tm_status st = tm__swarm_state_encode(&sw->f, sw->opt, sw->outer, &p, &n, 0);
        len = st ? -1 : (long long)n;
    }
    MPI_TRY(MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    if (len < 0 || len > INT32_MAX) {
        tm__dealloc(p);
        return TM_ERR(TM_EIO, "rank 0 could not encode its state for the others");
    }
    if (m->rank != 0 && !(p = tm__alloc((size_t)len + 1, __func__))) return TM_ENOMEM;
    int rc = MPI_Bcast(p, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    tm_status st = rc == MPI_SUCCESS ? TM_OK : mpi_err(rc, "MPI_Bcast(state)");
    if (!st && m->rank != 0)
        st = tm__swarm_state_decode(p, (size_t)len, &sw->f, sw->opt, sw->outer,
                                        NULL);
    tm__dealloc(p);
    if (!st && sw->global) {
        tm__swarm_flat_get(&sw->f, sw->flat);
        tm__swarm_flat_set(&sw->gf, sw->flat);
    }
    return st;
}

tm_swarm *tm__sw_mpi_join(const tm_swarm_opts *o, tm_params *params, tm_optim *opt)
{
    tm_swarm *sw = tm__sw_new(o, params, opt);
    if (!sw) return NULL;
    struct tm__swarm_mpi *m = tm__calloc(sizeof *m, __func__);
    tm_status st = m ? TM_OK : TM_ENOMEM;
    sw->mpi = m;
    int inited = 0;
    if (!st) MPI_Initialized(&inited);
    if (!st && !inited) {
        int rc = MPI_Init(NULL, NULL);
        if (rc != MPI_SUCCESS) st = mpi_err(rc, "MPI_Init");
        else m->finalize = true;
    }
    if (!st) {
        MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &m->size);
        size_t r = (size_t)m->size;
        m->counts = tm__calloc(r * sizeof(int), __func__);
        m->displs = tm__calloc(r * sizeof(int), __func__);
        m->ok = tm__calloc(r * sizeof(int), __func__);
        m->acc = tm__alloc((size_t)sw->f.numel * 4, __func__);
        m->mark = tm__calloc((size_t)sw->f.numel, __func__);
        if (!m->counts || !m->displs || !m->ok || !m->acc || !m->mark) st = TM_ENOMEM;
    }
    if (!st) st = mpi_sync_start(sw);
    if (st) {
        tm__sw_abandon(sw, st);
        return NULL;
    }
    sw->id = (uint32_t)m->rank + 1;
    sw->world = m->size;
    sw->has_past = true;
    return sw;
}

static tm_status grow(struct tm__swarm_mpi *m, size_t total)
{
    if (total <= m->cap) return TM_OK;
    tm__dealloc(m->all_idx);
    tm__dealloc(m->all_val);
    m->all_idx = tm__alloc(total * 8 + 8, __func__);
    m->all_val = tm__alloc(total * 4 + 4, __func__);
    m->cap = m->all_idx && m->all_val ? total : 0;
    return m->cap ? TM_OK : TM_ENOMEM;
}

/* The coordinator's checks of one contribution, on every rank alike. */
static bool acceptable(tm_swarm *sw, const float *v, int64_t n, double *norm)
{
    struct tm__swarm_mpi *m = sw->mpi;
    if (!finite_all(v, n)) return false;
    *norm = tm__l2norm(v, n);
    double med = tm__swarm_norms_median(&m->norms);
    return !(med > 0 && *norm > sw->o.norm_bound * med);
}

static tm_status sparse_round(tm_swarm *sw, int64_t k)
{
    struct tm__swarm_mpi *m = sw->mpi;
    int64_t n = sw->f.numel;
    int mine = (int)k;
    MPI_TRY(MPI_Allgather(&mine, 1, MPI_INT, m->counts, 1, MPI_INT, MPI_COMM_WORLD));
    int64_t total = 0;
    for (int r = 0; r < m->size; r++) {
        if (total > INT32_MAX - m->counts[r])
            return TM_ERR(TM_EOVERFLOW, "the ranks' TopK entries overflow "
                          "MPI's int counts: lower the ratio");
        m->displs[r] = (int)total;
        total += m->counts[r];
    }
    tm_status st = grow(m, (size_t)total);
    if (st) return st;
    MPI_TRY(MPI_Allgatherv(sw->idx, mine, MPI_INT64_T, m->all_idx, m->counts,
                           m->displs, MPI_INT64_T, MPI_COMM_WORLD));
    MPI_TRY(MPI_Allgatherv(sw->val, mine, MPI_FLOAT, m->all_val, m->counts,
                           m->displs, MPI_FLOAT, MPI_COMM_WORLD));
    sw->sent += (uint64_t)k * 12 * (uint64_t)(m->size - 1);
    sw->received += (uint64_t)(total - k) * 12;
    memset(m->acc, 0, (size_t)n * 4);
    memset(m->mark, 0, (size_t)n);
    uint32_t count = 0;
    double fresh[TM__SWARM_NORMS];
    int n_fresh = 0;
    for (int r = 0; r < m->size; r++) {
        const int64_t *ix = m->all_idx + m->displs[r];
        const float *v = m->all_val + m->displs[r];
        double norm = 0;
        bool ok = acceptable(sw, v, m->counts[r], &norm);
        for (int i = 0; ok && i < m->counts[r]; i++)
            ok = ix[i] >= 0 && ix[i] < n && (i == 0 || ix[i] > ix[i - 1]);
        if (!ok) {
            tm_logf(TM_LOG_WARN, "swarm (MPI): update of rank %d dropped from "
                    "round %llu", r, (unsigned long long)sw->round);
            continue;
        }
        if (n_fresh < TM__SWARM_NORMS) fresh[n_fresh++] = norm;
        for (int i = 0; i < m->counts[r]; i++) {
            m->acc[ix[i]] += v[i];
            m->mark[ix[i]] = 1;
        }
        count++;
    }
    tm__swarm_norms_add(&m->norms, fresh, n_fresh);
    float divisor = (float)(count ? count : 1);
    bool f16 = sw->s.values_f16;
    for (int64_t i = 0; i < n; i++) {
        sw->avg[i] = m->mark[i] ? m->acc[i] / divisor : 0.0f;
        if (m->mark[i] && !(fabsf(sw->avg[i]) <= 65504.0f)) f16 = false;
    }
    if (f16)
        for (int64_t i = 0; i < n; i++)
            if (m->mark[i]) sw->avg[i] = tm__f16_to_f32(tm__f32_to_f16(sw->avg[i]));
    return tm__sw_apply(sw, count);
}

/* Dense and DiLoCo: an allreduce of the accepted contributions (a
 * rejected one counts as zeros), then a check that every rank got the
 * same bits (MPI does not promise it), broadcasting rank 0's if not. */
static tm_status dense_round(tm_swarm *sw)
{
    struct tm__swarm_mpi *m = sw->mpi;
    int64_t n = sw->f.numel;
    if (n > INT32_MAX) return TM_ERR(TM_EOVERFLOW, "%lld values overflow MPI's int count", (long long)n);
    double norm = 0;
    int mine = acceptable(sw, sw->flat, n, &norm);
    MPI_TRY(MPI_Allgather(&mine, 1, MPI_INT, m->ok, 1, MPI_INT, MPI_COMM_WORLD));
    double norms[1];
    double *all_norms = tm__alloc(sizeof(double) * (size_t)m->size, __func__);
    if (!all_norms) return TM_ENOMEM;
    norms[0] = norm;
    int rc = MPI_Allgather(norms, 1, MPI_DOUBLE, all_norms, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    uint32_t count = 0;
    double fresh[TM__SWARM_NORMS];
    int n_fresh = 0;
    for (int r = 0; r < m->size; r++)
        if (m->ok[r]) {
            count++;
            if (n_fresh < TM__SWARM_NORMS) fresh[n_fresh++] = all_norms[r];
        }
    tm__dealloc(all_norms);
    if (rc != MPI_SUCCESS) return mpi_err(rc, "MPI_Allgather(norms)");
    tm__swarm_norms_add(&m->norms, fresh, n_fresh);
    if (!mine) memset(sw->flat, 0, (size_t)n * 4);
    MPI_TRY(MPI_Allreduce(sw->flat, m->acc, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    float divisor = (float)(count ? count : 1);
    for (int64_t i = 0; i < n; i++) sw->avg[i] = m->acc[i] / divisor;
    uint64_t h = 1469598103934665603ull, lo, hi;
    const uint8_t *b = (const uint8_t *)sw->avg;
    for (size_t i = 0; i < (size_t)n * 4; i++) h = (h ^ b[i]) * 1099511628211ull;
    MPI_TRY(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD));
    MPI_TRY(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
    if (lo != hi)
        MPI_TRY(MPI_Bcast(sw->avg, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD));
    sw->sent += (uint64_t)n * 4;
    sw->received += (uint64_t)n * 4;
    return tm__sw_apply(sw, count);
}

tm_status tm__sw_mpi_step(tm_swarm *sw)
{
    int64_t k = 0;
    tm_status st = tm__sw_contribution(sw, &k);
    if (st) return st;
    return tm__swarm_sparse(&sw->s) ? sparse_round(sw, k) : dense_round(sw);
}

void tm__sw_mpi_leave(tm_swarm *sw)
{
    struct tm__swarm_mpi *m = sw->mpi;
    if (!m) return;
    if (m->finalize) {
        int done = 0;
        MPI_Finalized(&done);
        if (!done) MPI_Finalize();
    }
    tm__dealloc(m->counts);
    tm__dealloc(m->displs);
    tm__dealloc(m->ok);
    tm__dealloc(m->all_idx);
    tm__dealloc(m->all_val);
    tm__dealloc(m->acc);
    tm__dealloc(m->mark);
    tm__dealloc(m);
    sw->mpi = NULL;
}

#endif
