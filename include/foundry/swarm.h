/*
 * foundry/swarm.h — data-parallel training across processes and machines.
 *
 * A coordinator averages the workers' gradients each round and keeps the
 * swarm's latest state; workers train replicas of one model and stay
 * bit-identical.  The wire protocol (SWRM, docs/swarm-protocol.md) is
 * authenticated with a pre-shared key by default and optionally encrypted.
 *
 *   // coordinator (its own process, or a thread)
 *   tm_swarm_opts o = tm_swarm_defaults();
 *   o.key = key; o.key_len = 32; o.port = 5000;
 *   tm_swarm_coordinator *c = tm_swarm_coordinator_new(&o);
 *   tm_swarm_coordinator_run(c);          // until stopped
 *
 *   // each worker
 *   tm_swarm_opts o = tm_swarm_defaults();
 *   o.key = key; o.key_len = 32; o.host = "10.0.0.1"; o.port = 5000;
 *   tm_swarm *sw = tm_swarm_join(&o, params, opt);  // receives the state
 *   for (...) {
 *       tm_optim_zero_grad(opt); ... forward, tm_backward(loss) ...
 *       tm_swarm_step(sw);    // exchange, then the optimizer step
 *   }
 *   tm_swarm_leave(sw);
 *
 * Rounds.  Each tm_swarm_step is one round: the worker sends its gradient
 * (TopK with error feedback, or dense), the coordinator closes the round
 * when every live worker has sent or at the round deadline, validates and
 * averages what came, and sends the average to every worker, which writes
 * it into the gradients and runs its optimizer.  In DiLoCo mode the
 * worker instead takes `local_steps` optimizer steps on its own and then
 * averages the parameter change, applied by an outer Nesterov SGD.
 */
#ifndef FOUNDRY_SWARM_H
#define FOUNDRY_SWARM_H

#include "foundry/base.h"
#include "foundry/tensor.h"
#include "foundry/nn.h"
#include "foundry/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The k entries of x (F32, any shape, read flat in row-major order)
 * largest in magnitude: *indices a new I64 [k] tensor of flat positions in
 * ascending order, *values a new F32 [k] tensor of x at them.  Ties go to
 * the lower position, so the result is the same for any thread count.
 * 0 <= k <= numel (TM_EINVAL otherwise); TM_EDTYPE for a non-F32 x. */
tm_status tm_swarm_topk(const tm_tensor *x, int64_t k, tm_tensor **indices,
                        tm_tensor **values);

typedef enum tm_swarm_mode {
    TM_SWARM_TOPK = 0,   /* sparse gradients, error feedback (DGC) */
    TM_SWARM_DENSE = 1,  /* dense gradients */
    TM_SWARM_DILOCO = 2, /* local steps, then averaged parameter deltas */
} tm_swarm_mode;

typedef struct tm_swarm_opts {
    /* connection */
    const char *host;      /* worker: the coordinator's address */
    int port;              /* coordinator: 0 picks a free port */
    const uint8_t *key;    /* pre-shared key (>= 16 bytes) */
    size_t key_len;
    bool encrypt;          /* ChaCha20-Poly1305 on every frame */
    bool insecure;         /* no key: must be asked for explicitly */
    const char *name;      /* worker's name in logs (printable ASCII) */
    /* training (the workers' settings; the coordinator sends its own) */
    tm_swarm_mode mode;
    double topk_ratio;     /* k / n, default 0.01 */
    int64_t warmup_rounds; /* sparsity warm-up rounds, default 0 */
    double momentum_correction; /* DGC's; 0 for Adam-like optimizers */
    double clip_norm;      /* DGC's local clip; 0: none */
    int values_f16;        /* send TopK values as F16 */
    int64_t local_steps;   /* DiLoCo H, default 50 */
    bool diloco_topk;      /* DiLoCo: send the parameter change TopK-
                              compressed (topk_ratio, error feedback)
                              instead of dense.  With local_steps 1,
                              outer_lr 1 and outer_momentum 0 this
                              compresses the optimizer's update rather
                              than the gradient: the mode for Adam, whose
                              per-value scaling shrinks sparse gradients */
    double lookahead;      /* DiLoCo with TopK: each round starts the
                              local steps from the synchronized parameters
                              plus this fraction (0..1) of the worker's own
                              unsent change, so its gradients see the move
                              it has pending; the replica (the synchronized
                              parameters) stays identical.  0: off */
    double outer_lr;       /* DiLoCo outer Nesterov SGD, default 0.7 */
    double outer_momentum; /* default 0.9 */
    /* coordinator */
    int64_t round_deadline_ms; /* after the first gradient; default 2000 */
    int64_t heartbeat_ms;      /* default 500 */
    int64_t peer_timeout_ms;   /* silence that drops a peer; default 5000 */
    double norm_bound;         /* refuse norms over this times the recent
                                  median; default 100 */
    const char *checkpoint_dir; /* coordinator: save here, resume from */
    int64_t checkpoint_every;   /* rounds; default 50 */
    int64_t max_rounds;         /* coordinator stops after; 0: never */
    int64_t min_workers;        /* coordinator: the first round waits until
                                   this many workers have joined; 0: none */
    int64_t reconnect_ms;       /* worker: retry this long; default 30000 */
    bool mpi;                   /* worker: the ranks of this MPI job are the
                                   swarm (MPI_COMM_WORLD; MPI_Init here when
                                   the caller has not), no coordinator;
                                   only in builds with make MPI=1 */
} tm_swarm_opts;

/* The defaults above (everything else zero / NULL). */
tm_swarm_opts tm_swarm_defaults(void);

/* ---------------------------------------------------------- coordinator */

typedef struct tm_swarm_coordinator tm_swarm_coordinator;

/* Binds and listens (TM_EIO naming the port when it cannot); resumes from
 * opts.checkpoint_dir when it holds a checkpoint.  NULL on failure. */
tm_swarm_coordinator *tm_swarm_coordinator_new(const tm_swarm_opts *o);
/* The port it listens on (useful with port 0). */
int tm_swarm_coordinator_port(const tm_swarm_coordinator *c);
/* Serves until tm_swarm_coordinator_stop or opts.max_rounds. */
tm_status tm_swarm_coordinator_run(tm_swarm_coordinator *c);
/* Asks run to return (from any thread, or a signal handler). */
void tm_swarm_coordinator_stop(tm_swarm_coordinator *c);
/* Rounds closed so far (the round counter). */
int64_t tm_swarm_coordinator_round(const tm_swarm_coordinator *c);
/* Counters, for logs and tests. */
typedef struct tm_swarm_stats {
    int64_t rounds, workers_live, joins, refused, dropped_updates,
        closed_peers;
    uint64_t bytes_in, bytes_out;  /* frame bytes on the wire */
} tm_swarm_stats;
void tm_swarm_coordinator_stats(const tm_swarm_coordinator *c,
                                tm_swarm_stats *out);
/* Closes every connection and frees (NULL is a no-op). */
void tm_swarm_coordinator_free(tm_swarm_coordinator *c);

/* --------------------------------------------------------------- worker */

typedef struct tm_swarm tm_swarm;

/* Connects, authenticates, joins: the swarm's current parameters and
 * optimizer state replace the local ones (the first worker's own become
 * the swarm's).  params: what the optimizer trains (F32, contiguous, on
 * the CPU), in a fixed order that every worker shares.  Both are borrowed
 * and must outlive the handle.  NULL on failure. */
tm_swarm *tm_swarm_join(const tm_swarm_opts *o, tm_params *params,
                        tm_optim *opt);
/* One round (see the top of this file).  TM_OK also when the round was
 * lost (the coordinator restarted, or this worker was resynced): then the
 * parameters are the swarm's again and tm_swarm_resynced says so. */
tm_status tm_swarm_step(tm_swarm *sw);
/* Makes the next round send every value the error feedback has held back
 * (TopK modes; no effect otherwise): call it before the last step, so the
 * replicas end with all of every worker's progress applied.  That round
 * costs about as much as a dense one. */
void tm_swarm_send_all_next(tm_swarm *sw);
/* True when the last tm_swarm_step replaced the state instead of
 * applying an update. */
bool tm_swarm_resynced(const tm_swarm *sw);
/* This worker's id (from 1), the live workers in the last round, and the
 * round counter. */
int tm_swarm_rank(const tm_swarm *sw);
int tm_swarm_world(const tm_swarm *sw);
int64_t tm_swarm_round(const tm_swarm *sw);
/* Bytes this worker sent and received in frames. */
void tm_swarm_bytes(const tm_swarm *sw, uint64_t *sent, uint64_t *received);
/* Says goodbye and frees (NULL is a no-op). */
void tm_swarm_leave(tm_swarm *sw);

#ifdef __cplusplus
}
#endif

#endif
