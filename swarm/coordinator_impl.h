/*
 * coordinator_impl.h — the coordinator's state, shared by its connection
 * handling (coordinator.c) and its rounds (coordinator_round.c).
 *
 * Threads: run() accepts connections, closes rounds, sends heartbeats
 * and reaps finished peers; each peer has a reader thread that does the
 * handshake and then hands every frame to the coordinator under `mu`.
 * Every send to a peer holds that peer's `tx`.
 */
#ifndef FOUNDRY_SWARM_COORDINATOR_IMPL_H
#define FOUNDRY_SWARM_COORDINATOR_IMPL_H

#include "swarm_impl.h"

#include <pthread.h>
#include <stdatomic.h>

enum { P_HANDSHAKE, P_WAIT, P_SYNCED }; /* WAIT: needs a snapshot */

/* Connections the coordinator holds at once.  One before its JOIN costs a
 * thread for up to 10 s, so those are capped in all and per source
 * address (a flood from one host leaves room for the others' workers);
 * a connection over a cap is closed as soon as it is accepted.  A worker
 * refused so retries within its reconnect window. */
#define TM__CO_PENDING_MAX 64
#define TM__CO_PENDING_PER_HOST 16
#define TM__CO_PEERS_MAX 1024

/* Wrong keys: a source address may fail the handshake's proof
 * TM__CO_GUESS_BURST times in a row, then once a second (a token
 * bucket); while it has no token left its connections are refused on
 * accept.  So guessing a weak key online runs at about one guess a
 * second per address.  Addresses are tracked in a table of
 * TM__CO_GUESS_HOSTS; when it is full the most forgiven one is reused. */
#define TM__CO_GUESS_BURST 8
#define TM__CO_GUESS_HOSTS 256

typedef struct tm__co_guesses {
    char host[64];
    double tokens; /* wrong keys it may still try, as of at_ms */
    int64_t at_ms;
} tm__co_guesses;

typedef struct peer {
    struct tm_swarm_coordinator *co;
    struct peer *next; /* in id order */
    int fd;
    tm__swrm_conn c;
    pthread_t th;
    pthread_mutex_t tx;
    int64_t last_tx_ms;
    atomic_bool done; /* the reader thread has finished */
    uint32_t id;
    int state;
    char name[TM__SWRM_NAME_MAX + 1];
    char host[64]; /* source address, without the port */
    /* this round's contribution, decoded (owned) */
    bool has;
    bool refused; /* its update this round failed validation: it has sent,
                     and nothing of it counts */
    uint64_t hash;
    uint8_t kind;
    int64_t k;      /* entries (dense: numel) */
    int64_t *idx;   /* sparse only */
    float *val;
    size_t cap;     /* entries idx/val can hold */
} peer;

struct tm_swarm_coordinator {
    tm_swarm_opts o;
    uint8_t *key;
    char ckpt[512];
    int lfd, port, wake[2];
    atomic_bool stop;
    pthread_mutex_t mu;
    peer *peers;
    uint32_t next_id;
    /* the model, fixed by the first worker (or the checkpoint) */
    bool have_model;
    /* Until the first round closes: whether the founder started fresh,
     * and its parameters' hash (a fresh joiner with the same hash, same
     * seed, needs no state), and whether min_workers has held yet. */
    bool start_known, started;
    uint64_t start_hash;
    uint64_t numel;
    uint8_t fingerprint[32];
    tm__swarm_settings s;
    /* rounds */
    uint64_t round;
    int64_t first_ms; /* first contribution of the open round, or -1 */
    float *acc;
    uint8_t *mark;
    tm__swarm_norms norms; /* recent accepted update norms */
    /* the latest snapshot (a STATE payload) */
    uint8_t *snap;
    uint32_t snap_n;
    uint64_t snap_round, snap_hash;
    uint32_t snap_from; /* peer asked for one, or 0 */
    tm_swarm_stats stats;
    int64_t cap_log_ms; /* last "over a cap" warning: one a second at most */
    uint64_t cap_quiet; /* refusals over a cap since then, not logged */
    tm__co_guesses guess[TM__CO_GUESS_HOSTS];
    int n_guess;
};

/* With mu held (the bytes are counted in the coordinator's stats): sends
 * under the peer's tx lock. */
tm_status tm__co_send(peer *p, tm__swrm_type type, const void *b, uint32_t n);
/* Sends an ERROR frame with the message (best effort). */
void tm__co_send_error(peer *p, const char *msg);

/* With mu held: a peer's JOIN (refusals close it); a contribution; a
 * snapshot from a worker. */
tm_status tm__co_join(tm_swarm_coordinator *co, peer *p,
                      const tm__swarm_join_msg *j);
void tm__co_contribution(tm_swarm_coordinator *co, peer *p, int type,
                         uint8_t *payload, uint32_t n);
void tm__co_snapshot(tm_swarm_coordinator *co, peer *p, uint8_t *payload,
                     uint32_t n);
/* With mu held, from run(): closes the round when it is due; serves
 * peers waiting for a snapshot. */
void tm__co_tick(tm_swarm_coordinator *co);
/* Checkpoint files in co->ckpt: write the snapshot, or read one back. */
tm_status tm__co_save(tm_swarm_coordinator *co);
tm_status tm__co_load(tm_swarm_coordinator *co);
int tm__co_live(const tm_swarm_coordinator *co, int state);

#endif
