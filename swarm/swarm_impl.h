/*
 * swarm_impl.h — what the coordinator and the worker share (internal):
 * sockets, the payloads of the SWRM messages after the handshake, the
 * state snapshot and the parameter hash.  docs/swarm-protocol.md gives
 * the bytes of each payload.
 */
#ifndef FOUNDRY_SWARM_IMPL_H
#define FOUNDRY_SWARM_IMPL_H

#include "foundry/swarm.h"
#include "frame.h"
#include "le.h"

/* Values travel as the host's bytes: the swarm runs on little-endian
 * machines only (x86-64, aarch64, armv7 all are). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the swarm's wire format needs a little-endian host"
#endif

/* ---------------------------------------------------------------- TCP */

/* Listens on every IPv4 address at `port` (0: any free one); *fd and the
 * port bound.  TM_EIO naming the port and the system's reason. */
tm_status tm__tcp_listen(int port, int *fd, int *bound);
/* Connects to host:port before the deadline (tm__now_ms clock); *fd has
 * TCP_NODELAY set.  TM_EIO naming the address. */
tm_status tm__tcp_connect(const char *host, int port, int64_t deadline_ms,
                          int *fd);
/* "a.b.c.d:port" of the peer of fd into buf. */
void tm__tcp_peer_name(int fd, char *buf, size_t size);

/* ------------------------------------------------------------ messages */

/* The training settings every worker of a swarm must share; the first
 * worker's become the swarm's (JOIN carries them). */
typedef struct tm__swarm_settings {
    uint8_t mode, values_f16;
    uint8_t diloco_topk; /* DiLoCo: the parameter change goes TopK */
    double topk_ratio;
    int64_t warmup_rounds;
    double momentum_correction, clip_norm;
    int64_t local_steps;
    double outer_lr, outer_momentum;
} tm__swarm_settings;

/* The norms of the last accepted contributions, which the norm bound is
 * measured against (the coordinator's, and every MPI rank's copy). */
#define TM__SWARM_NORMS 32
typedef struct tm__swarm_norms {
    double v[TM__SWARM_NORMS];
    int n, pos; /* recorded (up to 32); next slot, oldest overwritten */
} tm__swarm_norms;
/* Their median (even count: the mean of the middle two); 0 while fewer
 * than 3 are recorded, when no bound applies. */
double tm__swarm_norms_median(const tm__swarm_norms *h);
/* Records fresh[0..n) in order, at most TM__SWARM_NORMS of them. */
void tm__swarm_norms_add(tm__swarm_norms *h, const double *fresh, int n);

/* Whether contributions and updates are sparse (TOPK frames). */
static inline bool tm__swarm_sparse(const tm__swarm_settings *s)
{
    return s->mode == TM_SWARM_TOPK || (s->mode == TM_SWARM_DILOCO && s->diloco_topk);
}

#define TM__SWARM_FRESH UINT64_MAX /* JOIN round of a worker with no past */
/* The largest model a swarm takes: every frame's payload length is a u32,
 * and a sparse frame of all n entries takes up to 14 bytes a value (a
 * 10-byte varint and an F32), an Adam snapshot 12. */
#define TM__SWARM_MAX_NUMEL ((uint64_t)300000000)

typedef struct tm__swarm_join_msg {
    uint64_t numel;          /* parameter values */
    uint8_t fingerprint[32]; /* SHA-256 of the names and shapes */
    uint64_t round;          /* rounds this replica has applied, or FRESH */
    uint64_t hash;           /* tm__params_hash of the replica */
    tm__swarm_settings s;
} tm__swarm_join_msg;
#define TM__SWARM_JOIN_BYTES 120
void tm__swarm_join_encode(const tm__swarm_join_msg *m,
                           uint8_t out[TM__SWARM_JOIN_BYTES]);
tm_status tm__swarm_join_decode(const uint8_t *p, uint32_t n,
                                tm__swarm_join_msg *m);
/* Differences between two workers' settings as a message, or TM_OK. */
tm_status tm__swarm_settings_match(const tm__swarm_settings *swarm,
                                   const tm__swarm_settings *worker);
tm_status tm__swarm_settings_check(const tm__swarm_settings *s);

typedef struct tm__swarm_config_msg {
    uint32_t worker_id;
    uint8_t state_follows; /* a STATE frame comes next */
    uint64_t round;
} tm__swarm_config_msg;
#define TM__SWARM_CONFIG_BYTES 16
void tm__swarm_config_encode(const tm__swarm_config_msg *m,
                             uint8_t out[TM__SWARM_CONFIG_BYTES]);
tm_status tm__swarm_config_decode(const uint8_t *p, uint32_t n,
                                  tm__swarm_config_msg *m);

/* TOPK / DENSE / UPDATE / STATE frames start with this 24-byte prefix:
 * u64 round, u64 params hash, u32 contributors (UPDATE; else 0), u8 kind
 * (0 sparse, 1 dense; STATE: 2), u8[3] zero.  Then a sparse payload
 * (compress.h), a dense one (u64 n, then n F32), or a snapshot. */
#define TM__SWARM_PREFIX 24
#define TM__SWARM_SPARSE 0
#define TM__SWARM_DENSE_KIND 1
#define TM__SWARM_STATE_KIND 2
typedef struct tm__swarm_prefix {
    uint64_t round, hash;
    uint32_t contributors;
    uint8_t kind;
} tm__swarm_prefix;
void tm__swarm_prefix_encode(const tm__swarm_prefix *m,
                             uint8_t out[TM__SWARM_PREFIX]);
tm_status tm__swarm_prefix_decode(const uint8_t *p, uint32_t n,
                                  tm__swarm_prefix *m);
/* Dense body after the prefix: checks n and that every value is finite;
 * *values points into p. */
tm_status tm__swarm_dense_decode(const uint8_t *p, size_t len, int64_t n,
                                 const uint8_t **values);

/* The payload caps of the data frames for a model of numel values, and
 * the bytes a frame of n payload bytes takes on the wire. */
void tm__swarm_set_caps(tm__swrm_conn *c, uint64_t numel);
uint64_t tm__swarm_wire_bytes(const tm__swrm_conn *c, uint32_t n);

/* ------------------------------------------------- parameters and state */

/* A worker's view of its trainable parameters, flattened in order. */
typedef struct tm__swarm_flat {
    tm_tensor **t; /* borrowed, F32 contiguous CPU */
    int count;
    int64_t numel;
    uint8_t fingerprint[32];
} tm__swarm_flat;
/* The non-buffer tensors of params, in order; TM_EDTYPE / TM_EINVAL for
 * a tensor that is not F32, contiguous and on the CPU. */
tm_status tm__swarm_flat_init(tm__swarm_flat *f, const tm_params *params);
void tm__swarm_flat_free(tm__swarm_flat *f);
/* A 64-bit hash of every parameter's bytes in order (threaded; not
 * cryptographic: it checks that replicas agree, the MACs guard the wire). */
uint64_t tm__swarm_params_hash(const tm__swarm_flat *f);
/* The same hash of `count` runs of F32 values (data[i]: numel[i] values,
 * little-endian, any alignment); 0 when out of memory. */
uint64_t tm__swarm_values_hash(const uint8_t *const *data, const int64_t *numel,
                               int count);
/* Copies the parameters (or their gradients, zeros where there is none)
 * into / out of out[0..numel). */
void tm__swarm_flat_get(const tm__swarm_flat *f, float *out);
void tm__swarm_flat_set(const tm__swarm_flat *f, const float *in);
void tm__swarm_grads_get(const tm__swarm_flat *f, float *out);
/* Sets every gradient from in[0..numel) (allocating missing ones). */
tm_status tm__swarm_grads_set(const tm__swarm_flat *f, const float *in);

/* Snapshot body (after the prefix): u32 count, then per tensor u16 name
 * length, the name, u8 dtype code (0 F32, 1 I64, 2 F64), u8 ndim (<= 8),
 * i64 shape[ndim], the raw little-endian values.  `extra` (may be NULL)
 * is appended as "outer.<name>" entries (DiLoCo's outer optimizer). */
tm_status tm__swarm_state_encode(const tm__swarm_flat *f, const tm_optim *opt,
                                 const tm_optim *outer, uint8_t **out,
                                 size_t *len, size_t reserve);
/* Loads a snapshot body into the parameters and optimizers, validating
 * every name, shape and size first, and, when `hash` is not NULL, that
 * the parameters in it have that hash (nothing changes on failure). */
tm_status tm__swarm_state_decode(const uint8_t *p, size_t len,
                                 const tm__swarm_flat *f, tm_optim *opt,
                                 tm_optim *outer, const uint64_t *hash);
/* The parameter hash of a snapshot body (its leading param.N entries,
 * which must hold `numel` F32 values), for a holder without the model. */
tm_status tm__swarm_state_hash(const uint8_t *p, size_t len, uint64_t numel,
                               uint64_t *hash);

#endif
