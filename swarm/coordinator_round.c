/* coordinator_round.c — what the coordinator does with the frames: joins,
 * contributions (validated per peer), closing a round with an average,
 * snapshots for joining workers, and the checkpoint. */
#include "coordinator_impl.h"

#include "compress.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static tm_status send_config(peer *p, uint64_t round, bool state_follows)
{
    tm__swarm_config_msg m = {p->id, state_follows, round};
    uint8_t b[TM__SWARM_CONFIG_BYTES];
    tm__swarm_config_encode(&m, b);
    return tm__co_send(p, TM__SWRM_CONFIG, b, sizeof b);
}

/* The snapshot to a peer waiting for one; it is in the round from now. */
static void serve_snapshot(tm_swarm_coordinator *co, peer *p)
{
    if (!tm__co_send(p, TM__SWRM_STATE, co->snap, co->snap_n)) {
        p->state = P_SYNCED;
        p->has = false;
    }
}

static tm_status refuse(peer *p, tm_status st)
{
    tm_logf(TM_LOG_WARN, "swarm coordinator: refused %s (%s): %s", p->name,
            p->c.peer, tm_last_error());
    tm__co_send_error(p, tm_last_error());
    p->co->stats.refused++;
    return st;
}

tm_status tm__co_join(tm_swarm_coordinator *co, peer *p,
                      const tm__swarm_join_msg *j)
{
    if (!co->have_model) {
        co->acc = tm__calloc((size_t)j->numel * 4, __func__);
        co->mark = tm__calloc((size_t)j->numel, __func__);
        if (!co->acc || !co->mark) {
            tm__dealloc(co->acc);
            tm__dealloc(co->mark);
            co->acc = NULL;
            co->mark = NULL;
            return refuse(p, TM_ENOMEM);
        }
        co->have_model = true;
        co->numel = j->numel;
        memcpy(co->fingerprint, j->fingerprint, 32);
        co->s = j->s;
        co->round = j->round == TM__SWARM_FRESH ? 0 : j->round;
    } else if (j->numel != co->numel ||
               memcmp(j->fingerprint, co->fingerprint, 32)) {
        return refuse(p, TM_ERR(TM_EINVAL, "the worker's model (%llu values) "
                                "is not the swarm's (%llu values, or other "
                                "names and shapes)",
                                (unsigned long long)j->numel,
                                (unsigned long long)co->numel));
    } else {
        tm_status st = tm__swarm_settings_match(&co->s, &j->s);
        if (st) return refuse(p, st);
    }
    tm__swarm_set_caps(&p->c, co->numel);
    co->stats.joins++;
    tm_logf(TM_LOG_INFO, "swarm coordinator: worker %u (%s, %s) joined at "
            "round %llu", p->id, p->name, p->c.peer,
            (unsigned long long)co->round);
    bool synced_live = tm__co_live(co, P_SYNCED) > 0;
    bool snap_now = co->snap && co->snap_round == co->round;
    if (!synced_live && co->snap && !snap_now) {
        /* nobody holds newer state: go back to the snapshot */
        co->round = co->snap_round;
        snap_now = true;
    }
    if (!synced_live && !co->snap) {
        /* the first (or the only) replica: its state is the swarm's */
        if (j->round != TM__SWARM_FRESH) co->round = j->round;
        co->start_known = j->round == TM__SWARM_FRESH;
        co->start_hash = j->hash;
        p->state = P_SYNCED;
        return send_config(p, co->round, false);
    }
    if (co->start_known && j->round == TM__SWARM_FRESH && j->hash == co->start_hash) {
        /* initialized like the founder, and nothing has happened since */
        p->state = P_SYNCED;
        return send_config(p, co->round, false);
    }
    if (snap_now && j->round == co->round && j->hash == co->snap_hash) {
        p->state = P_SYNCED;
        return send_config(p, co->round, false);
    }
    p->state = P_WAIT;
    tm_status st = send_config(p, co->round, true);
    if (!st && snap_now) serve_snapshot(co, p);
    return st;
}

static tm_status grow(peer *p, int64_t k, bool sparse)
{
    if ((size_t)k <= p->cap && (!sparse || p->idx)) return TM_OK;
    tm__dealloc(p->idx);
    tm__dealloc(p->val);
    p->idx = sparse ? tm__alloc((size_t)k * 8 + 8, __func__) : NULL;
    p->val = tm__alloc((size_t)k * 4 + 4, __func__);
    p->cap = (sparse && !p->idx) || !p->val ? 0 : (size_t)k;
    return p->cap == (size_t)k ? TM_OK : TM_ENOMEM;
}

void tm__co_contribution(tm_swarm_coordinator *co, peer *p, int type,
                         uint8_t *b, uint32_t n)
{
    tm__swarm_prefix pre;
    if (p->state != P_SYNCED) return; /* waiting for the state: stale */
    tm_status st = tm__swarm_prefix_decode(b, n, &pre);
    bool sparse = type == TM__SWRM_TOPK;
    if (!st && (pre.round != co->round || p->has)) {
        tm_logf(TM_LOG_DEBUG, "swarm coordinator: worker %u's update for "
                "round %llu is late", p->id, (unsigned long long)pre.round);
        return;
    }
    if (!st && (sparse != tm__swarm_sparse(&co->s) ||
                pre.kind != (sparse ? TM__SWARM_SPARSE : TM__SWARM_DENSE_KIND)))
        st = TM_ERR(TM_EFORMAT, "a %s update in a %s swarm",
                    tm__swrm_type_name(type),
                    tm__swarm_sparse(&co->s) ? "TopK" : "dense");
    const uint8_t *body = b + TM__SWARM_PREFIX;
    size_t len = st ? 0 : n - TM__SWARM_PREFIX;
    if (!st && sparse) {
        /* every entry takes at least 3 bytes: bounds the buffers by the
         * frame, not by what the header claims */
        int64_t kmax = (int64_t)(len / 3) < (int64_t)co->numel
                           ? (int64_t)(len / 3) : (int64_t)co->numel;
        st = grow(p, kmax, true);
        if (!st)
            st = tm__sparse_decode(body, len, (int64_t)co->numel, kmax, &p->k,
                                   p->idx, p->val);
    } else if (!st) {
        const uint8_t *v;
        st = tm__swarm_dense_decode(body, len, (int64_t)co->numel, &v);
        if (!st) st = grow(p, (int64_t)co->numel, false);
        if (!st) {
            memcpy(p->val, v, co->numel * 4);
            p->k = (int64_t)co->numel;
        }
    }
    if (st) {
        co->stats.dropped_updates++;
        tm_logf(TM_LOG_WARN, "swarm coordinator: update of worker %u (%s) "
                "dropped from round %llu: %s", p->id, p->name,
                (unsigned long long)co->round, tm_last_error());
        /* it has sent: the round need not wait for it */
        if (!tm__swarm_prefix_decode(b, n, &pre) && pre.round == co->round) {
            p->has = true;
            p->refused = true;
            if (co->first_ms < 0) co->first_ms = tm__now_ms();
        }
        return;
    }
    p->has = true;
    p->hash = pre.hash;
    p->kind = pre.kind;
    if (co->first_ms < 0) co->first_ms = tm__now_ms();
}

void tm__co_snapshot(tm_swarm_coordinator *co, peer *p, uint8_t *b, uint32_t n)
{
    tm__swarm_prefix pre;
    if (co->snap_from != p->id || tm__swarm_prefix_decode(b, n, &pre) ||
        pre.kind != TM__SWARM_STATE_KIND) {
        tm_logf(TM_LOG_WARN, "swarm coordinator: unrequested or malformed "
                "snapshot from worker %u ignored", p->id);
        tm__dealloc(b);
        return;
    }
    /* the snapshot goes to every joiner and into the checkpoint: its
     * parameters must be the ones its hash names */
    uint64_t h = 0;
    tm_status st = tm__swarm_state_hash(b + TM__SWARM_PREFIX, n - TM__SWARM_PREFIX,
                                        co->numel, &h);
    if (!st && h != pre.hash)
        st = TM_ERR(TM_EFORMAT, "its parameters do not match its hash");
    if (st) {
        tm_logf(TM_LOG_WARN, "swarm coordinator: snapshot from worker %u (%s) "
                "refused: %s", p->id, p->name, tm_last_error());
        co->snap_from = 0; /* another worker may be asked */
        tm__dealloc(b);
        return;
    }
    tm__dealloc(co->snap);
    co->snap = b;
    co->snap_n = n;
    co->snap_round = pre.round;
    co->snap_hash = pre.hash;
    co->snap_from = 0;
    if (co->ckpt[0] && tm__co_save(co))
        tm_logf(TM_LOG_ERROR, "swarm coordinator: checkpoint failed: %s",
                tm_last_error());
}

static bool counts(const peer *p)
{
    return p->has && !p->refused && p->state == P_SYNCED && !atomic_load(&p->done);
}

/* The hash most contributors share (ties: the lowest worker id's; the
 * list is in id order).  Quadratic in the workers, who are few. */
static uint64_t majority_hash(const tm_swarm_coordinator *co)
{
    uint64_t best = 0;
    int best_n = 0;
    for (const peer *p = co->peers; p; p = p->next) {
        if (!counts(p)) continue;
        int c = 0;
        for (const peer *q = co->peers; q; q = q->next) c += counts(q) && q->hash == p->hash;
        if (c > best_n) {
            best_n = c;
            best = p->hash;
        }
    }
    return best;
}

/* Validates the contributions against each other, averages the usable
 * ones in worker-id order and sends the result to every synced worker. */
static void close_round(tm_swarm_coordinator *co)
{
    uint64_t hash = majority_hash(co);
    double med = tm__swarm_norms_median(&co->norms);
    bool sparse = tm__swarm_sparse(&co->s);
    int64_t n = (int64_t)co->numel;
    uint32_t count = 0;
    double fresh[TM__SWARM_NORMS];
    int n_fresh = 0;
    for (peer *p = co->peers; p; p = p->next) {
        if (!counts(p)) continue;
        if (p->hash != hash) {
            tm_logf(TM_LOG_WARN, "swarm coordinator: worker %u (%s) diverged "
                    "from the swarm; it gets the state", p->id, p->name);
            p->state = P_WAIT;
            co->stats.dropped_updates++;
            continue;
        }
        double norm = tm__l2norm(p->val, p->k);
        if (med > 0 && norm > co->o.norm_bound * med) {
            tm_logf(TM_LOG_WARN, "swarm coordinator: update of worker %u (%s) "
                    "dropped from round %llu: norm %.4g is over %g times the "
                    "recent median %.4g", p->id, p->name,
                    (unsigned long long)co->round, norm, co->o.norm_bound, med);
            co->stats.dropped_updates++;
            continue;
        }
        if (n_fresh < TM__SWARM_NORMS) fresh[n_fresh++] = norm;
        if (sparse)
            for (int64_t i = 0; i < p->k; i++) {
                co->acc[p->idx[i]] += p->val[i];
                co->mark[p->idx[i]] = 1;
            }
        else
            for (int64_t i = 0; i < n; i++) co->acc[i] += p->val[i];
        count++;
    }
    tm__swarm_norms_add(&co->norms, fresh, n_fresh);
    float divisor = (float)(count ? count : 1);
    int64_t touched = n;
    if (sparse) {
        touched = 0;
        for (int64_t i = 0; i < n; i++) touched += co->mark[i];
    }
    size_t cap = TM__SWARM_PREFIX +
                 (sparse ? tm__sparse_max_bytes(touched, TM__SPARSE_F32)
                         : 8 + 4 * (size_t)n);
    uint8_t *buf = tm__alloc(cap, __func__);
    int64_t *idx = sparse ? tm__alloc((size_t)touched * 8 + 8, __func__) : NULL;
    float *val = sparse ? tm__alloc((size_t)touched * 4 + 4, __func__) : NULL;
    size_t len = 0;
    tm_status st = (!buf || (sparse && (!idx || !val))) ? TM_ENOMEM : TM_OK;
    if (!st && sparse) {
        int64_t t = 0;
        /* F16 when the workers send F16 and every average fits in it */
        int dt = co->s.values_f16 ? TM__SPARSE_F16 : TM__SPARSE_F32;
        for (int64_t i = 0; i < n; i++)
            if (co->mark[i]) {
                idx[t] = i;
                val[t] = co->acc[i] / divisor;
                if (!(fabsf(val[t++]) <= 65504.0f)) dt = TM__SPARSE_F32;
            }
        st = tm__sparse_encode(n, touched, idx, val, dt,
                               buf + TM__SWARM_PREFIX, cap - TM__SWARM_PREFIX,
                               &len);
    } else if (!st) {
        tm__put_u64(buf + TM__SWARM_PREFIX, (uint64_t)n);
        float *v = (float *)(buf + TM__SWARM_PREFIX + 8);
        for (int64_t i = 0; i < n; i++) v[i] = co->acc[i] / divisor;
        len = 8 + 4 * (size_t)n;
    }
    memset(co->acc, 0, (size_t)n * 4);
    if (sparse) memset(co->mark, 0, (size_t)n);
    tm__dealloc(idx);
    tm__dealloc(val);
    if (st) {
        /* out of memory: the round is lost for everyone alike, so replicas
         * stay equal; the workers time out and rejoin */
        tm_logf(TM_LOG_ERROR, "swarm coordinator: round %llu lost: %s",
                (unsigned long long)co->round, tm_last_error());
        tm__dealloc(buf);
        return;
    }
    tm__swarm_prefix pre = {co->round, hash, count,
                            sparse ? TM__SWARM_SPARSE : TM__SWARM_DENSE_KIND};
    tm__swarm_prefix_encode(&pre, buf);
    bool due = co->ckpt[0] && (co->round + 1) % (uint64_t)co->o.checkpoint_every == 0;
    bool want = !co->snap_from && (due || tm__co_live(co, P_WAIT) > 0);
    for (peer *p = co->peers; p; p = p->next) {
        if (p->state != P_SYNCED || atomic_load(&p->done)) continue;
        if (want && p->has && p->hash == hash &&
            !tm__co_send(p, TM__SWRM_STATE_REQ, NULL, 0)) {
            co->snap_from = p->id;
            want = false;
        }
        tm__co_send(p, TM__SWRM_UPDATE, buf, (uint32_t)(TM__SWARM_PREFIX + len));
        /* a large update takes a while to send, one worker after another:
         * a heartbeat tells those still waiting that the coordinator lives */
        if (len > ((size_t)1 << 20))
            for (peer *q = p->next; q; q = q->next)
                if (q->state == P_SYNCED && !atomic_load(&q->done))
                    tm__co_send(q, TM__SWRM_HEARTBEAT, NULL, 0);
    }
    tm__dealloc(buf);
    for (peer *p = co->peers; p; p = p->next) p->has = p->refused = false;
    co->round++;
    co->first_ms = -1;
    co->stats.rounds++;
    co->start_known = false;
    co->started = true;
}

void tm__co_tick(tm_swarm_coordinator *co)
{
    if (!co->have_model) return;
    int synced = tm__co_live(co, P_SYNCED), waiting = tm__co_live(co, P_WAIT);
    if (waiting && !synced && co->snap && co->snap_round != co->round &&
        !co->snap_from)
        co->round = co->snap_round; /* nobody holds newer state */
    for (peer *p = co->peers; p && waiting; p = p->next) {
        if (p->state != P_WAIT || atomic_load(&p->done)) continue;
        if (co->snap && co->snap_round == co->round)
            serve_snapshot(co, p);
        else if (!synced && !co->snap_from) {
            tm__co_send_error(p, "the swarm has no state to give: rejoin");
            shutdown(p->fd, SHUT_RDWR);
        }
    }
    int sent = 0;
    for (peer *p = co->peers; p; p = p->next)
        if (p->has && p->state == P_SYNCED && !atomic_load(&p->done)) sent++;
    synced = tm__co_live(co, P_SYNCED);
    if (sent == 0) return;
    /* the first round waits for min_workers (unless one waits for the
     * state, which comes with a closing round) */
    if (!co->started && synced < co->o.min_workers && !waiting) return;
    if (sent >= synced ||
        tm__now_ms() - co->first_ms >= co->o.round_deadline_ms)
        close_round(co);
}
