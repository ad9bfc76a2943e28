/* worker.c — one replica of the swarm: joins, sends its gradient (or,
 * in DiLoCo mode, its parameter change) each round, applies the average,
 * answers snapshot requests, sends heartbeats, reconnects when the
 * coordinator goes away. */
#include "worker_impl.h"

#include "compress.h"
#include "crypto.h"
#include "../tensor/runtime/runtime_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

tm_swarm_opts tm_swarm_defaults(void)
{
    tm_swarm_opts o;
    memset(&o, 0, sizeof o);
    o.mode = TM_SWARM_TOPK;
    o.topk_ratio = 0.01;
    o.local_steps = 50;
    o.outer_lr = 0.7;
    o.outer_momentum = 0.9;
    o.round_deadline_ms = 2000;
    o.heartbeat_ms = 500;
    o.peer_timeout_ms = 5000;
    o.norm_bound = 100;
    o.checkpoint_every = 50;
    o.reconnect_ms = 30000;
    return o;
}

static tm_status wsend(tm_swarm *sw, tm__swrm_type type, const void *p,
                       uint32_t n)
{
    pthread_mutex_lock(&sw->tx);
    tm_status st = atomic_load(&sw->connected)
                       ? tm__swrm_send(&sw->c, type, p, n)
                       : TM_ERR(TM_EIO, "not connected");
    if (!st) {
        sw->sent += tm__swarm_wire_bytes(&sw->c, n);
        atomic_store(&sw->last_tx_ms, tm__now_ms());
    }
    pthread_mutex_unlock(&sw->tx);
    return st;
}

static void *heartbeat_main(void *arg)
{
    tm_swarm *sw = arg;
    while (!atomic_load(&sw->stop)) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (atomic_load(&sw->joined) &&
            tm__now_ms() - atomic_load(&sw->last_tx_ms) >= sw->o.heartbeat_ms) {
            wsend(sw, TM__SWRM_HEARTBEAT, NULL, 0); /* failures show in step */
        }
    }
    return NULL;
}

static void disconnect(tm_swarm *sw)
{
    pthread_mutex_lock(&sw->tx);
    atomic_store(&sw->joined, false);
    if (atomic_load(&sw->connected)) {
        atomic_store(&sw->connected, false);
        tm__swrm_conn_wipe(&sw->c);
        close(sw->fd);
        sw->fd = -1;
    }
    pthread_mutex_unlock(&sw->tx);
}

/* Receives the next frame other than a heartbeat; a STATE_REQ is noted
 * and skipped, an ERROR becomes TM_EINVAL carrying its text. */
static tm_status wrecv(tm_swarm *sw, int *type, uint8_t **p, uint32_t *n)
{
    for (;;) {
        *p = NULL;
        tm_status st = tm__swrm_recv(&sw->c, tm__now_ms() + sw->o.peer_timeout_ms,
                                     type, p, n);
        if (st) return st;
        sw->received += tm__swarm_wire_bytes(&sw->c, *n);
        if (*type == TM__SWRM_HEARTBEAT) {
            tm__dealloc(*p);
            continue;
        }
        if (*type == TM__SWRM_STATE_REQ) {
            sw->state_req = true;
            tm__dealloc(*p);
            continue;
        }
        if (*type == TM__SWRM_ERROR) {
            char msg[256];
            uint32_t m = *n < sizeof msg - 1 ? *n : (uint32_t)sizeof msg - 1;
            for (uint32_t i = 0; i < m; i++)
                msg[i] = ((*p)[i] >= 0x20 && (*p)[i] < 0x7f) ? (char)(*p)[i] : '?';
            msg[m] = 0;
            tm__dealloc(*p);
            *p = NULL;
            disconnect(sw); /* the coordinator closes after an ERROR */
            return TM_ERR(TM_EINVAL, "the coordinator refused: %s", msg);
        }
        return TM_OK;
    }
}

uint64_t tm__sw_replica_hash(const tm_swarm *sw)
{
    return tm__swarm_params_hash(sw->global ? &sw->gf : &sw->f);
}

static tm_status load_state(tm_swarm *sw, const uint8_t *p, uint32_t n)
{
    tm__swarm_prefix pre;
    tm_status st = tm__swarm_prefix_decode(p, n, &pre);
    if (!st && pre.kind != TM__SWARM_STATE_KIND)
        st = TM_ERR(TM_EFORMAT, "STATE frame of kind %u", pre.kind);
    if (!st)
        st = tm__swarm_state_decode(p + TM__SWARM_PREFIX, n - TM__SWARM_PREFIX,
                                    &sw->f, sw->opt, sw->outer, &pre.hash);
    if (st) return st;
    if (sw->global) {
        tm__swarm_flat_get(&sw->f, sw->flat);
        tm__swarm_flat_set(&sw->gf, sw->flat);
    }
    sw->round = pre.round;
    sw->resynced = true;
    sw->local = 0;
    if (sw->dgc) tm__dgc_reset(sw->dgc);
    return TM_OK;
}

static tm_status send_state(tm_swarm *sw)
{
    uint8_t *p = NULL;
    size_t n = 0;
    /* the replica's parameters, not the local start lookahead moved */
    bool moved = sw->global && sw->o.lookahead > 0;
    if (moved) {
        tm__swarm_flat_get(&sw->f, sw->avg);
        tm__swarm_flat_get(&sw->gf, sw->flat);
        tm__swarm_flat_set(&sw->f, sw->flat);
    }
    tm_status st = tm__swarm_state_encode(&sw->f, sw->opt, sw->outer, &p, &n,
                                          TM__SWARM_PREFIX);
    if (moved) tm__swarm_flat_set(&sw->f, sw->avg);
    if (st) return st;
    tm__swarm_prefix pre = {sw->round, tm__sw_replica_hash(sw), 0, TM__SWARM_STATE_KIND};
    tm__swarm_prefix_encode(&pre, p);
    st = n > UINT32_MAX ? TM_ERR(TM_EOVERFLOW, "snapshot of %zu bytes", n)
                        : wsend(sw, TM__SWRM_STATE, p, (uint32_t)n);
    tm__dealloc(p);
    return st;
}

/* Connect, handshake, JOIN, CONFIG (and STATE when it follows). */
static tm_status connect_once(tm_swarm *sw, int64_t deadline)
{
    int fd = -1;
    tm_status st = tm__tcp_connect(sw->host, sw->o.port, deadline, &fd);
    if (st) return st;
    pthread_mutex_lock(&sw->tx);
    sw->fd = fd;
    char peer[64];
    tm__tcp_peer_name(fd, peer, sizeof peer);
    tm__swrm_conn_init(&sw->c, tm__swrm_fd_io(fd), peer);
    sw->c.timeout_ms = sw->o.peer_timeout_ms;
    tm__swarm_set_caps(&sw->c, (uint64_t)sw->f.numel);
    tm__swrm_auth a = {sw->key, sw->o.key_len,
                       sw->o.insecure  ? TM__SWRM_INSECURE
                       : sw->o.encrypt ? TM__SWRM_ENCRYPT
                                       : TM__SWRM_AUTH};
    st = tm__swrm_handshake_client(&sw->c, &a, sw->name, deadline);
    if (!st) {
        atomic_store(&sw->connected, true);
        atomic_store(&sw->last_tx_ms, tm__now_ms());
    }
    pthread_mutex_unlock(&sw->tx);
    if (st) {
        tm__swrm_conn_wipe(&sw->c);
        close(fd);
        return st;
    }
    tm__swarm_join_msg j;
    j.numel = (uint64_t)sw->f.numel;
    memcpy(j.fingerprint, sw->f.fingerprint, 32);
    j.round = sw->has_past ? sw->round : TM__SWARM_FRESH;
    j.hash = tm__sw_replica_hash(sw);
    j.s = sw->s;
    uint8_t jb[TM__SWARM_JOIN_BYTES];
    tm__swarm_join_encode(&j, jb);
    st = wsend(sw, TM__SWRM_JOIN, jb, sizeof jb);
    /* from here heartbeats keep the coordinator from dropping us while a
     * large state is on its way */
    if (!st) atomic_store(&sw->joined, true);
    int type;
    uint8_t *p = NULL;
    uint32_t n = 0;
    if (!st) st = wrecv(sw, &type, &p, &n);
    tm__swarm_config_msg cfg;
    if (!st && type != TM__SWRM_CONFIG)
        st = TM_ERR(TM_EFORMAT, "expected CONFIG, got %s", tm__swrm_type_name(type));
    if (!st) st = tm__swarm_config_decode(p, n, &cfg);
    tm__dealloc(p);
    p = NULL;
    if (!st) {
        sw->id = cfg.worker_id;
        sw->round = cfg.round;
        sw->state_req = false;
    }
    if (!st && cfg.state_follows) {
        st = wrecv(sw, &type, &p, &n);
        if (!st && type != TM__SWRM_STATE)
            st = TM_ERR(TM_EFORMAT, "expected STATE, got %s",
                        tm__swrm_type_name(type));
        if (!st) st = load_state(sw, p, n);
        tm__dealloc(p);
    }
    if (st) disconnect(sw);
    return st;
}

/* Tries until the reconnect window closes; refusals (TM_EINVAL: wrong
 * key, another model) end it at once. */
static tm_status connect_retry(tm_swarm *sw)
{
    int64_t end = tm__now_ms() + (sw->o.reconnect_ms > 0 ? sw->o.reconnect_ms : 0);
    for (;;) {
        int64_t now = tm__now_ms();
        int64_t dl = now + 5000 < end ? now + 5000 : end;
        if (dl < now + 1000) dl = now + 1000;
        tm_status st = connect_once(sw, dl);
        if (!st || st == TM_EINVAL || st == TM_ENOMEM || tm__now_ms() >= end)
            return st;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void tm_swarm_leave(tm_swarm *sw)
{
    if (!sw) return;
    if (sw->mpi) tm__sw_mpi_leave(sw);
    atomic_store(&sw->stop, true);
    if (sw->hb_started) pthread_join(sw->hb, NULL);
    if (atomic_load(&sw->connected)) wsend(sw, TM__SWRM_LEAVE, NULL, 0);
    tm__sw_free(sw);
}

void tm__sw_abandon(tm_swarm *sw, tm_status st)
{
    tm_status keep = tm_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tm_last_error());
    tm_swarm_leave(sw);
    tm_set_error(keep ? keep : st, "%s", msg);
}

void tm__sw_free(tm_swarm *sw)
{
    if (!sw) return;
    disconnect(sw);
    pthread_mutex_destroy(&sw->tx);
    tm__dgc_free(sw->dgc);
    tm__dealloc(sw->flat);
    tm__dealloc(sw->avg);
    tm__dealloc(sw->idx);
    tm__dealloc(sw->val);
    tm__dealloc(sw->buf);
    tm_optim_free(sw->outer);
    tm__swarm_flat_free(&sw->gf);
    tm_params_free(sw->global);
    tm__swarm_flat_free(&sw->f);
    if (sw->key) tm__wipe(sw->key, sw->o.key_len);
    tm__dealloc(sw->key);
    tm__dealloc(sw);
}

static tm_status check_opts(const tm_swarm_opts *o)
{
    if (!o->host || !*o->host || strlen(o->host) >= 256 || o->port <= 0 ||
        o->port > 65535)
        return TM_ERR(TM_EINVAL, "the coordinator's host and port are needed");
    if (o->insecure ? (o->key != NULL) : (!o->key || o->key_len < 16))
        return TM_ERR(TM_EINVAL, o->insecure
                                     ? "insecure and a key exclude each other"
                                     : "a key of at least 16 bytes is needed "
                                       "(or insecure, explicitly)");
    if (o->heartbeat_ms <= 0 || o->peer_timeout_ms <= o->heartbeat_ms)
        return TM_ERR(TM_EINVAL, "heartbeat %lld ms must be positive and under "
                      "the peer timeout %lld ms", (long long)o->heartbeat_ms,
                      (long long)o->peer_timeout_ms);
    return TM_OK;
}

/* DiLoCo's second copy of the parameters and its Nesterov SGD. */
static tm_status diloco_init(tm_swarm *sw, const tm_params *params)
{
    sw->global = tm_params_new();
    if (!sw->global) return TM_ENOMEM;
    for (int i = 0; i < sw->f.count; i++) {
        tm_tensor *g = tm_from_buffer(tm_data(sw->f.t[i]), tm_shape(sw->f.t[i]),
                                      tm_ndim(sw->f.t[i]), TM_F32);
        tm_status st = g ? tm_requires_grad_(g, true) : tm_last_status();
        char nm[32];
        snprintf(nm, sizeof nm, "p%d", i);
        if (!st) st = tm_params_add(sw->global, nm, g, false);
        tm_free(g);
        if (st) return st;
    }
    (void)params;
    tm_status st = tm__swarm_flat_init(&sw->gf, sw->global);
    if (st) return st;
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_SGD);
    hp.lr = sw->s.outer_lr;
    hp.momentum = sw->s.outer_momentum;
    hp.nesterov = sw->s.outer_momentum > 0;
    sw->outer = tm_optim_new(TM_OPTIM_SGD, &hp);
    if (!sw->outer) return tm_last_status();
    return tm_optim_add_params(sw->outer, sw->global, NULL) < 0 ? tm_last_status()
                                                                : TM_OK;
}

tm_swarm *tm__sw_new(const tm_swarm_opts *o, tm_params *params, tm_optim *opt)
{
    tm_swarm *sw = tm__calloc(sizeof *sw, __func__);
    if (!sw) return NULL;
    sw->o = *o;
    sw->fd = -1;
    pthread_mutex_init(&sw->tx, NULL);
    snprintf(sw->host, sizeof sw->host, "%s", o->host ? o->host : "");
    snprintf(sw->name, sizeof sw->name, "%s", o->name ? o->name : "worker");
    sw->o.host = sw->host;
    sw->o.name = sw->name;
    sw->opt = opt;
    sw->s = (tm__swarm_settings){(uint8_t)o->mode, (uint8_t)(o->values_f16 != 0),
                                 (uint8_t)(o->diloco_topk && o->mode == TM_SWARM_DILOCO),
                                 o->topk_ratio, o->warmup_rounds,
                                 o->momentum_correction, o->clip_norm,
                                 o->local_steps, o->outer_lr, o->outer_momentum};
    tm_status st = tm__swarm_settings_check(&sw->s);
    if (st) st = TM_ERR(TM_EINVAL, "%s", tm_last_error());
    if (!st && (!(o->lookahead >= 0 && o->lookahead <= 1) ||
                (o->lookahead > 0 && !sw->s.diloco_topk)))
        st = TM_ERR(TM_EINVAL, "lookahead %g must be in [0, 1], and applies to "
                    "DiLoCo with TopK only", o->lookahead);
    if (!st && o->key) {
        sw->key = tm__alloc(o->key_len, __func__);
        if (!sw->key) st = TM_ENOMEM;
        else memcpy(sw->key, o->key, o->key_len);
    }
    if (!st) st = tm__swarm_flat_init(&sw->f, params);
    if (!st && (uint64_t)sw->f.numel > TM__SWARM_MAX_NUMEL)
        st = TM_ERR(TM_EOVERFLOW, "a model of %lld values is over the swarm's "
                    "limit of %llu (frame lengths are 32-bit)",
                    (long long)sw->f.numel,
                    (unsigned long long)TM__SWARM_MAX_NUMEL);
    size_t nb = st ? 0 : (size_t)sw->f.numel;
    if (!st) {
        sw->flat = tm__alloc(nb * 4, __func__);
        sw->avg = tm__alloc(nb * 4, __func__);
        if (!sw->flat || !sw->avg) st = TM_ENOMEM;
    }
    if (!st && tm__swarm_sparse(&sw->s)) {
        tm__dgc_opts d = {o->topk_ratio, o->warmup_rounds,
                          o->momentum_correction, o->clip_norm,
                          sw->s.values_f16 != 0};
        sw->dgc = tm__dgc_new(sw->f.numel, &d);
        if (!sw->dgc) st = tm_last_status();
    }
    if (!st && o->mode != TM_SWARM_DENSE) {
        sw->idx = tm__alloc(nb * 8, __func__);
        sw->val = tm__alloc(nb * 4, __func__);
        if (!sw->idx || !sw->val) st = TM_ENOMEM;
    }
    if (!st && o->mode == TM_SWARM_DILOCO) st = diloco_init(sw, params);
    if (st) {
        tm__sw_free(sw);
        return NULL;
    }
    return sw;
}

tm_swarm *tm_swarm_join(const tm_swarm_opts *o, tm_params *params,
                        tm_optim *opt)
{
    if (!o || !params || !opt) {
        TM_ERR(TM_EINVAL, "opts, params and optimizer are needed");
        return NULL;
    }
    if (o->mpi) {
        tm_swarm *sw = tm__sw_mpi_join(o, params, opt);
        if (!sw) tm__relabel_error("tm_swarm_join", tm_last_status());
        return sw;
    }
    if (check_opts(o)) return NULL;
    tm_swarm *sw = tm__sw_new(o, params, opt);
    if (!sw) {
        tm__relabel_error("tm_swarm_join", tm_last_status());
        return NULL;
    }
    tm_status st = TM_OK;
    if (pthread_create(&sw->hb, NULL, heartbeat_main, sw) == 0)
        sw->hb_started = true;
    else
        st = TM_ERR(TM_ENOMEM, "cannot start the heartbeat thread");
    if (!st) st = connect_retry(sw);
    if (!st) {
        sw->has_past = true;
        sw->resynced = false;
    }
    if (st) {
        tm__sw_abandon(sw, st);
        tm__relabel_error("tm_swarm_join", tm_last_status());
        return NULL;
    }
    return sw;
}

static tm_status ensure_buf(tm_swarm *sw, size_t n)
{
    if (n <= sw->buf_cap) return TM_OK;
    uint8_t *b = tm__alloc(n, __func__);
    if (!b) return TM_ENOMEM;
    tm__dealloc(sw->buf);
    sw->buf = b;
    sw->buf_cap = n;
    return TM_OK;
}

/* DiLoCo: where this round's local steps started, into out: the
 * synchronized parameters, less `lookahead` times the unsent change (the
 * residual holds the change as old minus new).  Deterministic, so the
 * contribution (start minus end) recomputes exactly the start it used;
 * the residual only changes when the contribution is compressed. */
static void local_start(const tm_swarm *sw, float *out)
{
    tm__swarm_flat_get(&sw->gf, out);
    if (!sw->dgc || !(sw->o.lookahead > 0) || sw->flushing) return;
    const float *r = tm__dgc_residual(sw->dgc);
    float c = (float)sw->o.lookahead;
    for (int64_t i = 0; i < sw->gf.numel; i++) out[i] -= c * r[i];
}

tm_status tm__sw_contribution(tm_swarm *sw, int64_t *k)
{
    int64_t n = sw->f.numel;
    if (sw->s.mode == TM_SWARM_DILOCO) {
        tm__swarm_flat_get(&sw->f, sw->avg);
        local_start(sw, sw->flat);
        for (int64_t i = 0; i < n; i++) sw->flat[i] -= sw->avg[i];
    } else
        tm__swarm_grads_get(&sw->f, sw->flat);
    *k = n;
    if (!tm__swarm_sparse(&sw->s)) return TM_OK;
    bool all = sw->send_all;
    sw->send_all = false;
    sw->flushing = all;
    return tm__dgc_compress(sw->dgc, sw->flat, all ? -1 : (int64_t)sw->round, k,
                            sw->idx, sw->val);
}

void tm_swarm_send_all_next(tm_swarm *sw)
{
    if (sw) sw->send_all = true;
}

/* Sends this round's contribution as TOPK or DENSE. */
static tm_status send_contribution(tm_swarm *sw, uint64_t hash)
{
    int64_t n = sw->f.numel, k = 0;
    tm__swarm_prefix pre = {sw->round, hash, 0, TM__SWARM_DENSE_KIND};
    tm__swrm_type type = TM__SWRM_DENSE;
    size_t len;
    tm_status st = tm__sw_contribution(sw, &k);
    if (!st && tm__swarm_sparse(&sw->s)) {
        int dt = sw->s.values_f16 ? TM__SPARSE_F16 : TM__SPARSE_F32;
        size_t cap = TM__SWARM_PREFIX + tm__sparse_max_bytes(k, dt);
        st = ensure_buf(sw, cap);
        if (!st)
            st = tm__sparse_encode(n, k, sw->idx, sw->val, dt,
                                   sw->buf + TM__SWARM_PREFIX,
                                   cap - TM__SWARM_PREFIX, &len);
        pre.kind = TM__SWARM_SPARSE;
        type = TM__SWRM_TOPK;
    } else if (!st) {
        len = 8 + 4 * (size_t)n;
        st = ensure_buf(sw, TM__SWARM_PREFIX + len);
        if (!st) {
            tm__put_u64(sw->buf + TM__SWARM_PREFIX, (uint64_t)n);
            memcpy(sw->buf + TM__SWARM_PREFIX + 8, sw->flat, 4 * (size_t)n);
        }
    }
    if (st) return st;
    tm__swarm_prefix_encode(&pre, sw->buf);
    return wsend(sw, type, sw->buf, (uint32_t)(TM__SWARM_PREFIX + len));
}

tm_status tm__sw_apply(tm_swarm *sw, uint32_t contributors)
{
    sw->world = (int)contributors;
    sw->round++;
    if (contributors == 0) { /* nobody's update was usable */
        /* with TopK the local change is in the residual now: the local
         * steps start again where local_start says */
        if (sw->s.mode == TM_SWARM_DILOCO && sw->dgc) {
            local_start(sw, sw->flat);
            tm__swarm_flat_set(&sw->f, sw->flat);
        }
        return TM_OK;
    }
    tm_status st;
    if (sw->s.mode == TM_SWARM_DILOCO) {
        st = tm__swarm_grads_set(&sw->gf, sw->avg);
        if (!st) st = tm_optim_step(sw->outer);
        if (!st) {
            /* after a flush the local steps start exactly at the replica */
            local_start(sw, sw->flat);
            tm__swarm_flat_set(&sw->f, sw->flat);
        }
        return st;
    }
    st = tm__swarm_grads_set(&sw->f, sw->avg);
    return st ? st : tm_optim_step(sw->opt);
}

/* Decodes an UPDATE whose prefix matched into sw->avg and applies it. */
static tm_status apply_update(tm_swarm *sw, const tm__swarm_prefix *pre,
                              const uint8_t *body, size_t len)
{
    int64_t n = sw->f.numel;
    tm_status st;
    if (pre->kind == TM__SWARM_SPARSE) {
        int64_t k = 0;
        if (!sw->idx) {
            sw->idx = tm__alloc((size_t)n * 8, __func__);
            sw->val = tm__alloc((size_t)n * 4, __func__);
            if (!sw->idx || !sw->val) return TM_ENOMEM;
        }
        st = tm__sparse_decode(body, len, n, n, &k, sw->idx, sw->val);
        if (st) return st;
        memset(sw->avg, 0, (size_t)n * 4);
        for (int64_t i = 0; i < k; i++) sw->avg[sw->idx[i]] = sw->val[i];
    } else {
        const uint8_t *v;
        st = tm__swarm_dense_decode(body, len, n, &v);
        if (st) return st;
        memcpy(sw->avg, v, (size_t)n * 4);
    }
    return tm__sw_apply(sw, pre->contributors);
}

/* After the connection failed mid-round: reconnect and rejoin; the round
 * is lost (the coordinator decides whether our state stands). */
static tm_status rejoin(tm_swarm *sw, tm_status why)
{
    char msg[300];
    snprintf(msg, sizeof msg, "%s", tm_last_error());
    tm_logf(TM_LOG_WARN, "swarm worker %s: %s; reconnecting", sw->name, msg);
    disconnect(sw);
    tm_status st = connect_retry(sw);
    if (st) return st == TM_EIO ? why : st;
    sw->resynced = true;
    return TM_OK;
}

tm_status tm_swarm_step(tm_swarm *sw)
{
    if (!sw) return TM_ERR(TM_EINVAL, "swarm is NULL");
    sw->resynced = false;
    if (sw->s.mode == TM_SWARM_DILOCO) {
        tm_status st = tm_optim_step(sw->opt);
        if (st) return st;
        if (++sw->local < sw->s.local_steps) return TM_OK;
        sw->local = 0;
    }
    if (sw->mpi) return tm__sw_mpi_step(sw);
    if (!atomic_load(&sw->connected)) {
        tm_status st = rejoin(sw, TM_EIO);
        if (st) return st;
        return TM_OK;
    }
    uint64_t hash = tm__sw_replica_hash(sw);
    tm_status st = send_contribution(sw, hash);
    bool want_state = false;
    while (!st) {
        int type;
        uint8_t *p = NULL;
        uint32_t n = 0;
        st = wrecv(sw, &type, &p, &n);
        if (st) break;
        tm__swarm_prefix pre;
        if (type == TM__SWRM_STATE) {
            st = load_state(sw, p, n);
            tm__dealloc(p);
            return st;
        }
        if (type != TM__SWRM_UPDATE || want_state) {
            tm__dealloc(p);
            continue;
        }
        st = tm__swarm_prefix_decode(p, n, &pre);
        if (!st && pre.round < sw->round) { /* a round we already left */
            tm__dealloc(p);
            continue;
        }
        if (!st && (pre.round != sw->round || pre.hash != hash)) {
            /* diverged: ask for the swarm's state and wait for it */
            tm_logf(TM_LOG_WARN, "swarm worker %s: round %llu update does not "
                    "match this replica; asking for the state", sw->name,
                    (unsigned long long)pre.round);
            tm__dealloc(p);
            want_state = true;
            st = wsend(sw, TM__SWRM_STATE_REQ, NULL, 0);
            continue;
        }
        if (!st) st = apply_update(sw, &pre, p + TM__SWARM_PREFIX,
                                   n - TM__SWARM_PREFIX);
        tm__dealloc(p);
        if (!st && sw->state_req) {
            sw->state_req = false;
            st = send_state(sw);
        }
        if (!st) return TM_OK;
        if (st != TM_EIO && st != TM_EFORMAT) return st;
    }
    /* a broken or closed connection, or the coordinator's ERROR: the round
     * is lost; rejoining says whether this replica may go on */
    if (st == TM_EIO || st == TM_EFORMAT || !atomic_load(&sw->connected))
        return rejoin(sw, st);
    return st;
}

bool tm_swarm_resynced(const tm_swarm *sw) { return sw && sw->resynced; }
int tm_swarm_rank(const tm_swarm *sw) { return sw ? (int)sw->id : -1; }
int tm_swarm_world(const tm_swarm *sw) { return sw ? sw->world : 0; }
int64_t tm_swarm_round(const tm_swarm *sw) { return sw ? (int64_t)sw->round : -1; }

void tm_swarm_bytes(const tm_swarm *sw, uint64_t *sent, uint64_t *received)
{
    if (sent) *sent = 0;
    if (received) *received = sw ? sw->received : 0;
    if (sw && sent) {
        pthread_mutex_lock((pthread_mutex_t *)&sw->tx);
        *sent = sw->sent;
        pthread_mutex_unlock((pthread_mutex_t *)&sw->tx);
    }
}
