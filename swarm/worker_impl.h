/*
 * worker_impl.h — a worker's state and the pieces its transports share
 * (internal).  worker.c speaks SWRM to a coordinator over TCP; mpi.c
 * exchanges the same contributions among the ranks of an MPI job and
 * computes the coordinator's average on every rank.
 */
#ifndef FOUNDRY_SWARM_WORKER_IMPL_H
#define FOUNDRY_SWARM_WORKER_IMPL_H

#include "swarm_impl.h"

#include "compress.h"

#include <pthread.h>
#include <stdatomic.h>

struct tm_swarm {
    tm_swarm_opts o;
    char host[256], name[TM__SWRM_NAME_MAX + 1];
    uint8_t *key;
    tm__swarm_settings s;
    tm_optim *opt;
    tm__swarm_flat f;
    /* connection; tx guards sending and swapping it */
    pthread_mutex_t tx;
    int fd;
    tm__swrm_conn c;
    atomic_bool connected;
    atomic_bool joined; /* JOIN sent: heartbeats may flow */
    atomic_llong last_tx_ms;
    pthread_t hb;
    bool hb_started;
    atomic_bool stop;
    /* round state */
    uint32_t id;
    int world;
    uint64_t round;
    bool resynced, state_req, has_past;
    uint64_t sent, received;
    /* buffers of numel values */
    float *flat, *avg;
    int64_t *idx;
    float *val;
    uint8_t *buf;
    size_t buf_cap;
    tm__dgc *dgc;
    /* DiLoCo: the last synchronized parameters and the outer optimizer */
    tm_params *global;
    tm__swarm_flat gf;
    tm_optim *outer;
    int64_t local;
    struct tm__swarm_mpi *mpi; /* the MPI transport (NULL over TCP) */
    bool send_all; /* the next contribution holds the whole residual */
    bool flushing; /* this round's contribution held it */
};


/* A worker's buffers, compressor and DiLoCo copy for params/opt, without
 * a connection (o is checked by the caller).  NULL with the error set. */
tm_swarm *tm__sw_new(const tm_swarm_opts *o, tm_params *params, tm_optim *opt);
/* Frees what tm__sw_new made (and a connection when there is one). */
void tm__sw_free(tm_swarm *sw);
/* A join that failed with st: leaves, keeping the error that said why. */
void tm__sw_abandon(tm_swarm *sw, tm_status st);
/* This round's contribution: DiLoCo's parameter change or the gradients
 * in sw->flat, then, when the swarm is sparse, its TopK (error feedback)
 * in sw->idx / sw->val (*k entries; *k = numel when dense). */
tm_status tm__sw_contribution(tm_swarm *sw, int64_t *k);
/* Applies the average in sw->avg (numel values, zero where a sparse
 * update has none) as the coordinator's UPDATE would: counts the round,
 * then the optimizer (DiLoCo: the outer one) steps on it, unless no
 * contribution made it (contributors 0). */
tm_status tm__sw_apply(tm_swarm *sw, uint32_t contributors);
/* The parameter hash replicas compare (DiLoCo: of the synchronized copy). */
uint64_t tm__sw_replica_hash(const tm_swarm *sw);

/* mpi.c: joining the ranks of MPI_COMM_WORLD (opts.mpi), one round over
 * MPI (tm_swarm_step's), and the goodbye. */
tm_swarm *tm__sw_mpi_join(const tm_swarm_opts *o, tm_params *params, tm_optim *opt);
tm_status tm__sw_mpi_step(tm_swarm *sw);
void tm__sw_mpi_leave(tm_swarm *sw);

#endif
