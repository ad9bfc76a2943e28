/* coordinator.c — the coordinator's connections: listening, one reader
 * thread per peer (handshake, JOIN, then every frame), heartbeats, and
 * the end of peers that close, go silent or break the protocol. */
#include "coordinator_impl.h"

#include "crypto.h"
#include "../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

tm_status tm__co_send(peer *p, tm__swrm_type type, const void *b, uint32_t n)
{
    pthread_mutex_lock(&p->tx);
    tm_status st = tm__swrm_send(&p->c, type, b, n);
    if (!st) {
        p->last_tx_ms = tm__now_ms();
        p->co->stats.bytes_out += tm__swarm_wire_bytes(&p->c, n);
    }
    pthread_mutex_unlock(&p->tx);
    if (st) shutdown(p->fd, SHUT_RDWR); /* its reader thread then ends */
    return st;
}

void tm__co_send_error(peer *p, const char *msg)
{
    size_t n = strlen(msg);
    tm__co_send(p, TM__SWRM_ERROR, msg, (uint32_t)(n > 1000 ? 1000 : n));
}

int tm__co_live(const tm_swarm_coordinator *co, int state)
{
    int n = 0;
    for (const peer *p = co->peers; p; p = p->next)
        if (!atomic_load(&p->done) && p->state == state) n++;
    return n;
}

static void wake(tm_swarm_coordinator *co)
{
    char b = 1;
    ssize_t r = write(co->wake[1], &b, 1);
    (void)r; /* a full pipe already wakes run() */
}

/* A bucket's tokens at `now`: one more each second, up to the burst. */
static double tokens_at(const tm__co_guesses *g, int64_t now)
{
    double t = g->tokens + (double)(now - g->at_ms) / 1000.0;
    return t < TM__CO_GUESS_BURST ? t : TM__CO_GUESS_BURST;
}

/* With mu held: the host's wrong-key bucket, or NULL when it has none. */
static tm__co_guesses *guesses_of(tm_swarm_coordinator *co, const char *host)
{
    for (int i = 0; i < co->n_guess; i++)
        if (strcmp(co->guess[i].host, host) == 0) return &co->guess[i];
    return NULL;
}

/* With mu held: takes a token from the host's bucket (making one, or
 * reusing the fullest when the table is full). */
static void charge_wrong_key(tm_swarm_coordinator *co, const char *host, int64_t now)
{
    tm__co_guesses *g = guesses_of(co, host);
    if (!g && co->n_guess < TM__CO_GUESS_HOSTS) g = &co->guess[co->n_guess++];
    if (!g) {
        g = &co->guess[0];
        for (int i = 1; i < co->n_guess; i++)
            if (tokens_at(&co->guess[i], now) > tokens_at(g, now)) g = &co->guess[i];
    }
    double t = strcmp(g->host, host) == 0 ? tokens_at(g, now) : TM__CO_GUESS_BURST;
    snprintf(g->host, sizeof g->host, "%s", host);
    g->tokens = t - 1;
    g->at_ms = now;
}

static void *reader_main(void *arg)
{
    peer *p = arg;
    tm_swarm_coordinator *co = p->co;
    int64_t start = tm__now_ms();
    tm__swrm_auth a = {co->key, co->o.key_len,
                       co->o.insecure  ? TM__SWRM_INSECURE
                       : co->o.encrypt ? TM__SWRM_ENCRYPT
                                       : TM__SWRM_AUTH};
    tm_status st = tm__swrm_handshake_server(&p->c, &a, p->name, start + 5000);
    int type = 0;
    uint8_t *b = NULL;
    uint32_t n = 0;
    if (!st) st = tm__swrm_recv(&p->c, start + 10000, &type, &b, &n);
    tm__swarm_join_msg j;
    if (!st && type != TM__SWRM_JOIN)
        st = TM_ERR(TM_EFORMAT, "expected JOIN, got %s", tm__swrm_type_name(type));
    if (!st) st = tm__swarm_join_decode(b, n, &j);
    tm__dealloc(b);
    b = NULL;
    if (!st) {
        pthread_mutex_lock(&co->mu);
        co->stats.bytes_in += tm__swarm_wire_bytes(&p->c, n);
        st = tm__co_join(co, p, &j);
        pthread_mutex_unlock(&co->mu);
    } else {
        tm_logf(TM_LOG_WARN, "swarm coordinator: refused %s: %s", p->c.peer,
                tm_last_error());
        /* under mu: a send counts its bytes in the coordinator's stats,
         * which the round's sends (holding mu) count too */
        pthread_mutex_lock(&co->mu);
        if (st == TM_EFORMAT && p->c.secured) tm__co_send_error(p, tm_last_error());
        co->stats.refused++;
        if (p->c.wrong_key) charge_wrong_key(co, p->host, tm__now_ms());
        pthread_mutex_unlock(&co->mu);
    }
    while (!st && !atomic_load(&co->stop)) {
        st = tm__swrm_recv(&p->c, tm__now_ms() + co->o.peer_timeout_ms, &type,
                           &b, &n);
        if (st) break;
        pthread_mutex_lock(&co->mu);
        co->stats.bytes_in += tm__swarm_wire_bytes(&p->c, n);
        switch (type) {
        case TM__SWRM_HEARTBEAT: break;
        case TM__SWRM_TOPK:
        case TM__SWRM_DENSE: tm__co_contribution(co, p, type, b, n); break;
        case TM__SWRM_STATE:
            tm__co_snapshot(co, p, b, n);
            b = NULL; /* kept or freed there */
            break;
        case TM__SWRM_STATE_REQ: p->state = P_WAIT; break;
        case TM__SWRM_LEAVE:
            st = TM_ERR(TM_EIO, "left");
            break;
        default:
            st = TM_ERR(TM_EFORMAT, "%s is not a worker's message",
                        tm__swrm_type_name(type));
            tm__co_send_error(p, tm_last_error());
        }
        pthread_mutex_unlock(&co->mu);
        tm__dealloc(b);
        b = NULL;
        wake(co);
    }
    if (p->state != P_HANDSHAKE)
        tm_logf(st == TM_EIO ? TM_LOG_INFO : TM_LOG_WARN,
                "swarm coordinator: worker %u (%s, %s) closed: %s", p->id,
                p->name, p->c.peer, tm_last_error());
    shutdown(p->fd, SHUT_RDWR);
    atomic_store(&p->done, true);
    wake(co);
    return NULL;
}

static void peer_free(peer *p)
{
    tm__swrm_conn_wipe(&p->c);
    close(p->fd);
    pthread_mutex_destroy(&p->tx);
    tm__dealloc(p->idx);
    tm__dealloc(p->val);
    tm__dealloc(p);
}

/* With mu held: why a new connection from `host` is over a cap, or NULL. */
static const char *over_cap(tm_swarm_coordinator *co, const char *host, int64_t now)
{
    const tm__co_guesses *g = guesses_of(co, host);
    if (g && tokens_at(g, now) < 1) return "wrong keys from one address";
    int all = 0, pending = 0, from_host = 0;
    for (const peer *p = co->peers; p; p = p->next) {
        if (atomic_load(&p->done)) continue;
        all++;
        if (p->state != P_HANDSHAKE) continue;
        pending++;
        from_host += strcmp(p->host, host) == 0;
    }
    if (all >= TM__CO_PEERS_MAX) return "connections";
    if (pending >= TM__CO_PENDING_MAX) return "connections before JOIN";
    if (from_host >= TM__CO_PENDING_PER_HOST) return "connections before JOIN from one address";
    return NULL;
}

static void accept_one(tm_swarm_coordinator *co)
{
    int fd = accept(co->lfd, NULL, NULL);
    if (fd < 0) return;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    char addr[64], host[64];
    tm__tcp_peer_name(fd, addr, sizeof addr);
    snprintf(host, sizeof host, "%s", addr);
    char *colon = strrchr(host, ':');
    if (colon) *colon = '\0';
    pthread_mutex_lock(&co->mu);
    int64_t now = tm__now_ms();
    const char *cap = over_cap(co, host, now);
    if (cap) {
        co->stats.refused++;
        if (now - co->cap_log_ms >= 1000) {
            tm_logf(TM_LOG_WARN, "swarm coordinator: refused %s: too many %s "
                    "(%llu more refused over a cap since the last warning)",
                    addr, cap, (unsigned long long)co->cap_quiet);
            co->cap_log_ms = now;
            co->cap_quiet = 0;
        } else
            co->cap_quiet++;
        pthread_mutex_unlock(&co->mu);
        close(fd);
        return;
    }
    pthread_mutex_unlock(&co->mu);
    peer *p = tm__calloc(sizeof *p, __func__);
    if (!p) {
        close(fd);
        return;
    }
    p->co = co;
    p->fd = fd;
    memcpy(p->host, host, sizeof host);
    pthread_mutex_init(&p->tx, NULL);
    tm__swrm_conn_init(&p->c, tm__swrm_fd_io(fd), addr);
    p->c.timeout_ms = co->o.peer_timeout_ms;
    pthread_mutex_lock(&co->mu);
    p->id = ++co->next_id;
    peer **tail = &co->peers;
    while (*tail) tail = &(*tail)->next;
    *tail = p;
    if (co->have_model) tm__swarm_set_caps(&p->c, co->numel);
    if (pthread_create(&p->th, NULL, reader_main, p) != 0) {
        *tail = NULL;
        pthread_mutex_unlock(&co->mu);
        peer_free(p);
        return;
    }
    pthread_mutex_unlock(&co->mu);
}

/* With mu held: joins and frees the peers whose reader has finished. */
static void reap(tm_swarm_coordinator *co)
{
    for (peer **pp = &co->peers; *pp;) {
        peer *p = *pp;
        if (!atomic_load(&p->done)) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        pthread_join(p->th, NULL);
        if (p->state != P_HANDSHAKE) co->stats.closed_peers++;
        if (co->snap_from == p->id) co->snap_from = 0;
        peer_free(p);
    }
}

static void heartbeats(tm_swarm_coordinator *co)
{
    int64_t now = tm__now_ms();
    for (peer *p = co->peers; p; p = p->next)
        if (p->state != P_HANDSHAKE && !atomic_load(&p->done) &&
            now - p->last_tx_ms >= co->o.heartbeat_ms)
            tm__co_send(p, TM__SWRM_HEARTBEAT, NULL, 0);
}

tm_status tm_swarm_coordinator_run(tm_swarm_coordinator *co)
{
    if (!co) return TM_ERR(TM_EINVAL, "coordinator is NULL");
    while (!atomic_load(&co->stop)) {
        struct pollfd f[2] = {{.fd = co->lfd, .events = POLLIN},
                              {.fd = co->wake[0], .events = POLLIN}};
        int r = poll(f, 2, 20);
        if (r < 0 && errno != EINTR)
            return TM_ERR(TM_EIO, "poll: %s", strerror(errno));
        if (r > 0 && (f[1].revents & POLLIN)) {
            char buf[64];
            while (read(co->wake[0], buf, sizeof buf) > 0) {}
        }
        if (r > 0 && (f[0].revents & POLLIN)) accept_one(co);
        pthread_mutex_lock(&co->mu);
        reap(co);
        tm__co_tick(co);
        heartbeats(co);
        pthread_mutex_unlock(&co->mu);
        if (co->o.max_rounds > 0 &&
            co->stats.rounds >= co->o.max_rounds)
            break;
    }
    return TM_OK;
}

void tm_swarm_coordinator_stop(tm_swarm_coordinator *co)
{
    if (!co) return;
    atomic_store(&co->stop, true);
    wake(co);
}

tm_swarm_coordinator *tm_swarm_coordinator_new(const tm_swarm_opts *o)
{
    if (!o) {
        TM_ERR(TM_EINVAL, "opts is NULL");
        return NULL;
    }
    if (o->insecure ? o->key != NULL : (!o->key || o->key_len < 16)) {
        TM_ERR(TM_EINVAL, o->insecure ? "insecure and a key exclude each other"
                                      : "a key of at least 16 bytes is needed "
                                        "(or insecure, explicitly)");
        return NULL;
    }
    if (o->heartbeat_ms <= 0 || o->peer_timeout_ms <= o->heartbeat_ms ||
        o->round_deadline_ms <= 0 || !(o->norm_bound > 1) ||
        o->checkpoint_every <= 0 ||
        (o->checkpoint_dir && strlen(o->checkpoint_dir) > 400)) {
        TM_ERR(TM_EINVAL, "heartbeat, peer timeout, round deadline, norm bound "
               "or checkpoint settings out of range");
        return NULL;
    }
    tm_swarm_coordinator *co = tm__calloc(sizeof *co, __func__);
    if (!co) return NULL;
    co->o = *o;
    co->lfd = co->wake[0] = co->wake[1] = -1;
    co->first_ms = -1;
    pthread_mutex_init(&co->mu, NULL);
    tm_status st = TM_OK;
    if (o->key) {
        co->key = tm__alloc(o->key_len, __func__);
        if (!co->key) st = TM_ENOMEM;
        else memcpy(co->key, o->key, o->key_len);
    }
    if (o->insecure)
        tm_logf(TM_LOG_WARN, "swarm coordinator: running WITHOUT "
                "authentication (--insecure): anyone who can reach the port "
                "can join and send updates");
    if (!st && o->checkpoint_dir) {
        snprintf(co->ckpt, sizeof co->ckpt, "%s", o->checkpoint_dir);
        co->o.checkpoint_dir = co->ckpt;
        st = tm__co_load(co);
    }
    if (!st && pipe(co->wake) != 0) st = TM_ERR(TM_EIO, "pipe: %s", strerror(errno));
    if (!st) {
        for (int i = 0; i < 2; i++) {
            fcntl(co->wake[i], F_SETFL, fcntl(co->wake[i], F_GETFL) | O_NONBLOCK);
            fcntl(co->wake[i], F_SETFD, FD_CLOEXEC);
        }
        st = tm__tcp_listen(o->port, &co->lfd, &co->port);
    }
    if (st) {
        tm_status keep = tm_last_status() ? tm_last_status() : st;
        char msg[600];
        snprintf(msg, sizeof msg, "%s", tm_last_error());
        tm_swarm_coordinator_free(co);
        tm_set_error(keep, "%s", msg);
        tm__relabel_error("tm_swarm_coordinator_new", keep);
        return NULL;
    }
    return co;
}

int tm_swarm_coordinator_port(const tm_swarm_coordinator *co)
{
    return co ? co->port : -1;
}

int64_t tm_swarm_coordinator_round(const tm_swarm_coordinator *co)
{
    if (!co) return -1;
    pthread_mutex_lock((pthread_mutex_t *)&co->mu);
    int64_t r = (int64_t)co->round;
    pthread_mutex_unlock((pthread_mutex_t *)&co->mu);
    return r;
}

void tm_swarm_coordinator_stats(const tm_swarm_coordinator *co,
                                tm_swarm_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!co) return;
    pthread_mutex_lock((pthread_mutex_t *)&co->mu);
    *out = co->stats;
    out->workers_live = tm__co_live(co, P_SYNCED) + tm__co_live(co, P_WAIT);
    pthread_mutex_unlock((pthread_mutex_t *)&co->mu);
}

void tm_swarm_coordinator_free(tm_swarm_coordinator *co)
{
    if (!co) return;
    atomic_store(&co->stop, true);
    pthread_mutex_lock(&co->mu);
    for (peer *p = co->peers; p; p = p->next) shutdown(p->fd, SHUT_RDWR);
    pthread_mutex_unlock(&co->mu);
    for (peer *p = co->peers, *nx; p; p = nx) {
        nx = p->next;
        pthread_join(p->th, NULL);
        peer_free(p);
    }
    if (co->lfd >= 0) close(co->lfd);
    for (int i = 0; i < 2; i++)
        if (co->wake[i] >= 0) close(co->wake[i]);
    pthread_mutex_destroy(&co->mu);
    if (co->key) tm__wipe(co->key, co->o.key_len);
    tm__dealloc(co->key);
    tm__dealloc(co->acc);
    tm__dealloc(co->mark);
    tm__dealloc(co->snap);
    tm__dealloc(co);
}
