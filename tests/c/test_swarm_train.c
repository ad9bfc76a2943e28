/* The swarm end to end on loopback: a coordinator and worker threads
 * training one parameter vector toward the mean of the workers' targets,
 * with hostile peers and broken updates thrown in.  Every wait is bounded
 * (the coordinator's round deadline and peer timeout are short). */
#include "harness.h"

#include "../../swarm/compress.h"
#include "../../swarm/frame.h"
#include "../../swarm/swarm_impl.h"
#include "../../swarm/worker_impl.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#define N 512
#define ROUNDS 40
static const uint8_t KEY[] = "a pre-shared key of 32 bytes....";

typedef struct job {
    int id, port, rounds;
    tm_swarm_mode mode;
    double ratio, lr;
    bool evil; /* sends a NaN and a 1000x gradient once each */
    bool encrypt;
    bool update_topk; /* TopK of the optimizer's update (DiLoCo, H = 1) */
    double lookahead;
    /* after each step: values where the local start is not the replica
     * less lookahead times the residual; steps with a nonzero residual;
     * values where the final parameters are not the replica */
    int64_t la_bad, la_pending, la_final_bad;
    int nan_sent, big_sent;
    tm_status st;
    char err[256];
    float final[N];
    uint64_t sent;
    int world;
} job;

/* The workers' targets differ a little, as shards of one data set do:
 * TopK then carries a noise floor of about lr * (rounds between sends)
 * * (spread of the targets), the price of error feedback's delay. */
static float target(int worker, int j) { return sinf(0.1f * (float)j) + 0.1f * (float)worker; }

static void *worker_main(void *arg)
{
    job *jb = arg;
    tm_tensor *w = tm_full((int64_t[]){N}, 1, (double)(10 * jb->id), TM_F32);
    tm_requires_grad_(w, true);
    tm_params *ps = tm_params_new();
    tm_params_add(ps, "w", w, false);
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_SGD);
    hp.lr = jb->lr;
    tm_optim *opt = tm_optim_new(TM_OPTIM_SGD, &hp);
    tm_optim_add_params(opt, ps, NULL);
    tm_swarm_opts o = tm_swarm_defaults();
    o.host = "127.0.0.1";
    o.port = jb->port;
    o.key = KEY;
    o.key_len = 32;
    o.encrypt = jb->encrypt;
    o.mode = jb->mode;
    o.topk_ratio = jb->ratio;
    o.reconnect_ms = 5000;
    if (jb->update_topk) {
        o.diloco_topk = true;
        o.local_steps = 1;
        o.outer_lr = 1;
        o.outer_momentum = 0;
        o.lookahead = jb->lookahead;
    }
    char name[16];
    snprintf(name, sizeof name, "w%d", jb->id);
    o.name = name;
    tm_swarm *sw = tm_swarm_join(&o, ps, opt);
    jb->st = sw ? TM_OK : tm_last_status();
    /* every worker stops at the same swarm round, wherever it joined */
    for (int64_t r; sw && !jb->st && (r = tm_swarm_round(sw)) < jb->rounds;) {
        float g[N];
        const float *p = tm_data(w);
        for (int j = 0; j < N; j++) g[j] = p[j] - target(jb->id, j); /* of (p - t)^2 / 2 */
        if (jb->evil && r >= 20 && !jb->nan_sent++) g[3] = NAN;
        if (jb->evil && r >= 25 && !jb->big_sent++)
            for (int j = 0; j < N; j++) g[j] *= 1000;
        tm_tensor *gt = tm_from_buffer(g, (int64_t[]){N}, 1, TM_F32);
        tm_set_grad(w, gt);
        tm_free(gt);
        if (jb->update_topk && r == jb->rounds - 1) tm_swarm_send_all_next(sw);
        jb->st = tm_swarm_step(sw);
        if (jb->update_topk && !jb->st) {
            static _Thread_local float rep[N];
            tm__swarm_flat_get(&sw->gf, rep);
            const float *res = tm__dgc_residual(sw->dgc), *live = tm_data(w);
            bool last = tm_swarm_round(sw) >= jb->rounds, pending = false;
            for (int j = 0; j < N; j++) {
                pending |= res[j] != 0;
                if (last) jb->la_final_bad += live[j] != rep[j];
                else jb->la_bad += live[j] != rep[j] - (float)jb->lookahead * res[j];
            }
            jb->la_pending += pending && !last;
        }
    }
    if (jb->st) snprintf(jb->err, sizeof jb->err, "%s", tm_last_error());
    memcpy(jb->final, tm_data(w), sizeof jb->final);
    jb->world = tm_swarm_world(sw);
    tm_swarm_bytes(sw, &jb->sent, NULL);
    tm_swarm_leave(sw);
    tm_optim_free(opt);
    tm_params_free(ps);
    tm_free(w);
    return NULL;
}

static void *coordinator_main(void *arg)
{
    tm_swarm_coordinator_run(arg);
    return NULL;
}

static tm_swarm_coordinator *start(pthread_t *th, bool encrypt)
{
    tm_swarm_opts o = tm_swarm_defaults();
    o.key = KEY;
    o.key_len = 32;
    o.encrypt = encrypt;
    o.round_deadline_ms = 20000; /* rounds close when all have sent; this is for a loaded machine */
    o.peer_timeout_ms = 10000; /* a worker descheduled for seconds on a loaded machine is not dead */
    o.heartbeat_ms = 200;
    /* all three workers are in from the first round: a loaded machine can
     * otherwise let the first run rounds alone, and a late evil worker
     * would join past the rounds it misbehaves in */
    o.min_workers = 3;
    tm_swarm_coordinator *co = tm_swarm_coordinator_new(&o);
    if (co) pthread_create(th, NULL, coordinator_main, co);
    return co;
}

/* Runs `nw` workers to the end; checks they agree bit for bit. */
static void train(tm_swarm_coordinator *co, job *jobs, int nw)
{
    pthread_t th[8];
    for (int i = 0; i < nw; i++) {
        jobs[i].port = tm_swarm_coordinator_port(co);
        pthread_create(&th[i], NULL, worker_main, &jobs[i]);
    }
    for (int i = 0; i < nw; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < nw; i++) {
        if (jobs[i].st) tt_fail(__FILE__, __LINE__, "worker %d: %s", i, jobs[i].err);
        CHECK(memcmp(jobs[i].final, jobs[0].final, sizeof jobs[0].final) == 0);
    }
}

/* Distance of the replica from the optimum (the mean target). */
static double error_of(const float *w, int nw, int first)
{
    double e = 0;
    for (int j = 0; j < N; j++) {
        double mean = 0;
        for (int i = 0; i < nw; i++) mean += target(first + i, j);
        mean /= nw;
        e = fmax(e, fabs(w[j] - mean));
    }
    return e;
}

TEST(swarm_workers_train_to_identical_replicas_dense_and_topk)
{
    pthread_t ct;
    tm_swarm_coordinator *co = start(&ct, false);
    REQUIRE(co);
    job jobs[3];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 3; i++)
        jobs[i] = (job){.id = i + 1, .rounds = ROUNDS, .mode = TM_SWARM_DENSE, .ratio = 0.01, .lr = 0.5};
    train(co, jobs, 3);
    /* the optimum is the mean target; from 10 away the dense run gets close */
    CHECK(error_of(jobs[0].final, 3, 1) < 1e-3);
    CHECK_INT(jobs[0].world, 3);
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);

    co = start(&ct, true);
    REQUIRE(co);
    for (int i = 0; i < 3; i++)
        jobs[i] = (job){.id = i + 1, .rounds = 4 * ROUNDS, .mode = TM_SWARM_TOPK,
                        .ratio = 0.05, .lr = 0.1, .encrypt = true};
    train(co, jobs, 3);
    /* from about 10 away, down to TopK's floor: lr 0.1 * ~20 rounds between
     * sends of a value * 0.1 spread = 0.2 at worst, 0.06 measured */
    CHECK(error_of(jobs[0].final, 3, 1) < 0.15);
    /* 5% of the values as varint index + F32 value, against 4 bytes each */
    CHECK(jobs[1].sent < (uint64_t)(4 * ROUNDS) * N * 4 / 5);
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);
}

/* Lookahead: after each round a worker's local step starts from the
 * replica less lookahead times its unsent change (the residual holds
 * old minus new), exactly; the replicas stay identical; after the last
 * round, which flushes the residual, the parameters are the replica. */
TEST(swarm_update_topk_lookahead_starts_at_the_pending_change)
{
    pthread_t ct;
    tm_swarm_coordinator *co = start(&ct, false);
    REQUIRE(co);
    job jobs[3];
    for (int i = 0; i < 3; i++)
        jobs[i] = (job){.id = i + 1, .rounds = ROUNDS, .mode = TM_SWARM_DILOCO,
                        .ratio = 0.05, .lr = 0.05, .update_topk = true,
                        .lookahead = 1.0 / 3};
    train(co, jobs, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(jobs[i].la_bad, 0);
        CHECK_INT(jobs[i].la_final_bad, 0);
        CHECK(jobs[i].la_pending >= ROUNDS - 2); /* not vacuous */
    }
    CHECK(error_of(jobs[0].final, 3, 1) < 2.0); /* it trains: 10 away at the start */
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);
}

/* Lookahead is for DiLoCo with TopK, within [0, 1]. */
TEST(swarm_lookahead_outside_diloco_topk_is_refused)
{
    tm_tensor *w = tm_full((int64_t[]){4}, 1, 0.0, TM_F32);
    tm_params *ps = tm_params_new();
    tm_params_add(ps, "w", w, false);
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_SGD);
    tm_optim *opt = tm_optim_new(TM_OPTIM_SGD, &hp);
    tm_optim_add_params(opt, ps, NULL);
    tm_swarm_opts o = tm_swarm_defaults();
    o.host = "127.0.0.1";
    o.port = 1;
    o.key = KEY;
    o.key_len = 32;
    o.reconnect_ms = 0;
    o.lookahead = 0.5; /* TopK of the gradient */
    CHECK(tm_swarm_join(&o, ps, opt) == NULL);
    CHECK(strstr(tm_last_error(), "lookahead 0.5") != NULL);
    o.mode = TM_SWARM_DILOCO;
    o.diloco_topk = true;
    o.lookahead = 1.5;
    CHECK(tm_swarm_join(&o, ps, opt) == NULL);
    CHECK(strstr(tm_last_error(), "lookahead 1.5") != NULL);
    tm_optim_free(opt);
    tm_params_free(ps);
    tm_free(w);
}

/* Raw hostile connections while the swarm trains. */
static atomic_bool hostile_done;
static int hostile_port;

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)hostile_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *hostile_main(void *arg)
{
    (void)arg;
    static const uint8_t other[] = "the wrong key, also 32 bytes....";
    for (int kind = 0; kind < 6; kind++) {
        int fd = dial();
        if (fd < 0) continue;
        tm__swrm_conn c;
        tm__swrm_conn_init(&c, tm__swrm_fd_io(fd), "coordinator");
        uint8_t junk[64];
        for (int i = 0; i < 64; i++) junk[i] = (uint8_t)(i * 37 + kind);
        if (kind == 0) { /* random bytes */
            ssize_t r = write(fd, junk, sizeof junk);
            (void)r;
        } else if (kind == 1) { /* a header claiming 2 GiB */
            uint8_t h[16] = {'S', 'W', 'R', 'M', 1, 0, 1, 0, 0, 0, 0, 0x80};
            ssize_t r = write(fd, h, 16);
            (void)r;
        } else if (kind == 2 || kind == 3) { /* wrong key, no key */
            tm__swrm_auth a = {kind == 2 ? other : NULL, kind == 2 ? 32 : 0,
                               kind == 2 ? TM__SWRM_AUTH : TM__SWRM_INSECURE};
            tm__swrm_handshake_client(&c, &a, "evil", tm__now_ms() + 3000);
        } else if (kind == 4) { /* right key, then a non-worker message */
            tm__swrm_auth a = {KEY, 32, TM__SWRM_AUTH};
            if (!tm__swrm_handshake_client(&c, &a, "evil", tm__now_ms() + 3000))
                tm__swrm_send(&c, TM__SWRM_UPDATE, junk, 64);
        } else { /* right key, a JOIN for another model */
            tm__swrm_auth a = {KEY, 32, TM__SWRM_AUTH};
            uint8_t j[120] = {0};
            j[0] = 7;
            if (!tm__swrm_handshake_client(&c, &a, "evil", tm__now_ms() + 3000))
                tm__swrm_send(&c, TM__SWRM_JOIN, j, sizeof j);
        }
        /* wait for the coordinator to close it */
        char b[256];
        while (read(fd, b, sizeof b) > 0) {}
        tm__swrm_conn_wipe(&c);
        close(fd);
    }
    atomic_store(&hostile_done, true);
    return NULL;
}

TEST(swarm_hostile_peers_and_broken_updates_leave_the_others_unharmed)
{
    pthread_t ct, ht;
    tm_swarm_coordinator *co = start(&ct, false);
    REQUIRE(co);
    hostile_port = tm_swarm_coordinator_port(co);
    atomic_store(&hostile_done, false);
    pthread_create(&ht, NULL, hostile_main, NULL);
    job jobs[3];
    for (int i = 0; i < 3; i++)
        jobs[i] = (job){.id = i + 1, .rounds = ROUNDS, .mode = TM_SWARM_TOPK,
                        .ratio = 0.25, .lr = 0.2, .evil = i == 2};
    train(co, jobs, 3);
    pthread_join(ht, NULL);
    tm_swarm_stats s;
    tm_swarm_coordinator_stats(co, &s);
    CHECK(s.refused >= 5);         /* every hostile connection but the junk-after-auth one */
    CHECK(s.dropped_updates >= 2); /* the NaN and the 1000x gradient */
    for (int j = 0; j < N; j++) CHECK(isfinite(jobs[0].final[j]));
    CHECK(error_of(jobs[0].final, 3, 1) < 0.1); /* floor 0.2 * 4 * 0.1 */
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);
}

/* Connections that never finish a handshake hold a thread each until
 * their deadline: the coordinator keeps at most 16 of them per source
 * address and closes the next as soon as it accepts it, and once they
 * go the swarm takes workers from that address again. */
TEST(swarm_coordinator_caps_connections_that_never_join)
{
    pthread_t ct;
    tm_swarm_coordinator *co = start(&ct, false);
    REQUIRE(co);
    hostile_port = tm_swarm_coordinator_port(co);
    int silent[16];
    for (int i = 0; i < 16; i++) REQUIRE((silent[i] = dial()) >= 0);
    int over = dial();
    REQUIRE(over >= 0);
    char b[64];
    /* closed at once, not at the 5 s handshake deadline: the 16 accepted
     * before it, whose deadlines come first, are all still open */
    CHECK(read(over, b, sizeof b) == 0);
    for (int i = 0; i < 16; i++) {
        errno = 0;
        CHECK(recv(silent[i], b, sizeof b, MSG_DONTWAIT) < 0 && errno == EAGAIN);
    }
    tm_swarm_stats s;
    tm_swarm_coordinator_stats(co, &s);
    CHECK(s.refused >= 1);
    close(over);
    for (int i = 0; i < 16; i++) close(silent[i]);
    job jobs[3];
    for (int i = 0; i < 3; i++)
        jobs[i] = (job){.id = i + 1, .rounds = ROUNDS / 4, .mode = TM_SWARM_DENSE,
                        .ratio = 0.01, .lr = 0.5};
    train(co, jobs, 3);
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);
}

/* One handshake with `key` (NULL: the swarm's); 1 when the coordinator
 * answered it (welcome or "authentication failed"), 0 when it closed the
 * connection without a word. */
static int try_key(const uint8_t *key)
{
    int fd = dial();
    if (fd < 0) return -1;
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_fd_io(fd), "coordinator");
    tm__swrm_auth a = {key ? key : KEY, 32, TM__SWRM_AUTH};
    tm_status st = tm__swrm_handshake_client(&c, &a, "guess", tm__now_ms() + 5000);
    int answered = !st || strstr(tm_last_error(), "authentication failed") != NULL;
    tm__swrm_conn_wipe(&c);
    close(fd);
    return answered;
}

/* Guessing a key online: an address gets 8 wrong keys in a row, then one
 * a second, and in between its connections are closed on accept (before
 * any key is seen); the swarm's workers from that address train once a
 * token is back. */
TEST(swarm_coordinator_slows_down_key_guessing)
{
    static const uint8_t wrong[] = "a guess at the key, 32 bytes....";
    pthread_t ct;
    tm_swarm_coordinator *co = start(&ct, false);
    REQUIRE(co);
    hostile_port = tm_swarm_coordinator_port(co);
    int64_t t0 = tm__now_ms();
    int answered = 0, r = 1;
    while (answered < 40 && (r = try_key(wrong)) == 1) answered++;
    double secs = (double)(tm__now_ms() - t0) / 1000.0;
    CHECK_INT(r, 0); /* refused on accept */
    /* 8 at once, and at most one more per second the guesses took */
    CHECK(answered >= 8);
    CHECK(answered <= 8 + (int)secs + 1);
    nanosleep(&(struct timespec){1, 100 * 1000 * 1000}, NULL); /* a token back */
    job jobs[3];
    for (int i = 0; i < 3; i++)
        jobs[i] = (job){.id = i + 1, .rounds = ROUNDS / 4, .mode = TM_SWARM_DENSE,
                        .ratio = 0.01, .lr = 0.5};
    train(co, jobs, 3);
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);
}

/* A snapshot's prefix names the hash of its parameters; a holder without
 * the model (the coordinator) hashes them as a replica would, and a
 * worker refuses a snapshot whose parameters are not the ones named,
 * changing nothing.  70000 values cross the hash's 65536-value chunks. */
TEST(swarm_snapshot_whose_parameters_do_not_match_its_hash_is_refused)
{
    tm_tensor *a = tm_full((int64_t[]){70000}, 1, 0.25, TM_F32);
    tm_tensor *b = tm_full((int64_t[]){5}, 1, -2.0, TM_F32);
    tm_params *ps = tm_params_new();
    tm_params_add(ps, "a", a, false);
    tm_params_add(ps, "b", b, false);
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_SGD);
    tm_optim *opt = tm_optim_new(TM_OPTIM_SGD, &hp);
    tm_optim_add_params(opt, ps, NULL);
    tm__swarm_flat f;
    REQUIRE(tm__swarm_flat_init(&f, ps) == TM_OK);
    uint8_t *good = NULL, *bad = NULL;
    size_t ng = 0, nb = 0;
    REQUIRE(tm__swarm_state_encode(&f, opt, NULL, &good, &ng, 0) == TM_OK);
    uint64_t h = tm__swarm_params_hash(&f), hg = 0, hb = 0;
    CHECK(tm__swarm_state_hash(good, ng, 70005, &hg) == TM_OK);
    CHECK(hg == h);
    CHECK(tm__swarm_state_hash(good, ng, 70004, &hg) == TM_EFORMAT);
    ((float *)tm_data(a))[69999] = 0.5f; /* in the second chunk */
    REQUIRE(tm__swarm_state_encode(&f, opt, NULL, &bad, &nb, 0) == TM_OK);
    CHECK(tm__swarm_state_hash(bad, nb, 70005, &hb) == TM_OK);
    CHECK(hb != h);
    /* back to the good values; the bad snapshot claiming their hash is
     * refused and leaves them */
    REQUIRE(tm__swarm_state_decode(good, ng, &f, opt, NULL, &h) == TM_OK);
    CHECK(tm__swarm_state_decode(bad, nb, &f, opt, NULL, &h) == TM_EFORMAT);
    CHECK(strstr(tm_last_error(), "do not match its hash") != NULL);
    CHECK(((float *)tm_data(a))[69999] == 0.25f);
    CHECK(tm__swarm_params_hash(&f) == h);
    CHECK(tm__swarm_state_decode(bad, nb, &f, opt, NULL, &hb) == TM_OK);
    CHECK(((float *)tm_data(a))[69999] == 0.5f);
    tm__dealloc(good);
    tm__dealloc(bad);
    tm__swarm_flat_free(&f);
    tm_optim_free(opt);
    tm_params_free(ps);
    tm_free(a);
    tm_free(b);
}

/* Writes dir/swarm.ckpt, version 1, its CRC right: the record j, then a
 * snapshot of that round and hash holding body[0..nbody). */
static void write_ckpt_file(const char *dir, const tm__swarm_join_msg *j,
                            const uint8_t *body, size_t nbody)
{
    size_t head = 8 + TM__SWARM_JOIN_BYTES + 4, snap_n = TM__SWARM_PREFIX + nbody;
    size_t total = head + snap_n + 4;
    uint8_t *b = calloc(1, total);
    REQUIRE(b);
    memcpy(b, "SWCK", 4);
    tm__put_u32(b + 4, 1);
    tm__swarm_join_encode(j, b + 8);
    tm__put_u32(b + head - 4, (uint32_t)snap_n);
    tm__swarm_prefix pre = {.round = j->round, .hash = j->hash,
                            .kind = TM__SWARM_STATE_KIND};
    tm__swarm_prefix_encode(&pre, b + head);
    memcpy(b + head + TM__SWARM_PREFIX, body, nbody);
    tm__put_u32(b + head + snap_n, tm__crc32(0, b, head + snap_n));
    char path[64];
    snprintf(path, sizeof path, "%s/swarm.ckpt", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f && fwrite(b, 1, total, f) == total && fclose(f) == 0);
    free(b);
}

/* Writes a version-1 checkpoint of one tensor "a" (3 values) at round 4
 * into dir, its CRC right.  The record and the snapshot's prefix claim
 * the parameters' hash (right_hash) or one off; `poke` is written over
 * a[1] after hashing (NAN: nothing), and the body ends with a's values
 * (plain SGD keeps no state). */
static void write_checkpoint(const char *dir, bool right_hash, float poke)
{
    tm_tensor *a = tm_full((int64_t[]){3}, 1, 0.75, TM_F32);
    tm_params *ps = tm_params_new();
    tm_params_add(ps, "a", a, false);
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_SGD);
    tm_optim *opt = tm_optim_new(TM_OPTIM_SGD, &hp);
    tm_optim_add_params(opt, ps, NULL);
    tm__swarm_flat fl;
    REQUIRE(tm__swarm_flat_init(&fl, ps) == TM_OK);
    uint8_t *body = NULL;
    size_t nbody = 0;
    REQUIRE(tm__swarm_state_encode(&fl, opt, NULL, &body, &nbody, 0) == TM_OK);
    uint64_t h = tm__swarm_params_hash(&fl) ^ (right_hash ? 0 : 1);
    if (!isnan(poke)) {
        uint8_t *v = body + nbody - 8; /* a[1] of the last tensor */
        memcpy(v, &poke, 4);
    }
    tm__swarm_join_msg j = {.numel = 3, .round = 4, .hash = h};
    j.s = (tm__swarm_settings){.mode = TM_SWARM_DENSE, .topk_ratio = 0.01,
                               .local_steps = 50, .outer_lr = 0.7,
                               .outer_momentum = 0.9};
    write_ckpt_file(dir, &j, body, nbody);
    tm__dealloc(body);
    tm__swarm_flat_free(&fl);
    tm_optim_free(opt);
    tm_params_free(ps);
    tm_free(a);
}

/* A checkpoint's CRC only catches damage: one whose snapshot holds other
 * parameters than the hash it claims (a CRC recomputed over a changed
 * value, or a wrong hash) is refused on load, as a worker's snapshot is,
 * since every joiner would get those parameters. */
TEST(swarm_checkpoint_whose_parameters_do_not_match_its_hash_is_refused)
{
    char dir[] = "/tmp/foundry_swck_XXXXXX", path[64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/swarm.ckpt", dir);
    tm_swarm_opts o = tm_swarm_defaults();
    o.insecure = true;
    o.checkpoint_dir = dir;
    write_checkpoint(dir, true, NAN); /* the control: it loads */
    tm_swarm_coordinator *co = tm_swarm_coordinator_new(&o);
    CHECK(co != NULL);
    tm_swarm_coordinator_free(co);
    write_checkpoint(dir, true, 0.5f);
    co = tm_swarm_coordinator_new(&o);
    CHECK(co == NULL);
    CHECK_INT(tm_last_status(), TM_EFORMAT);
    CHECK(strstr(tm_last_error(), "parameters do not match its hash") != NULL);
    write_checkpoint(dir, false, NAN);
    co = tm_swarm_coordinator_new(&o);
    CHECK(co == NULL);
    CHECK(strstr(tm_last_error(), "parameters do not match its hash") != NULL);
    unlink(path);
    rmdir(dir);
}

/* A checkpoint whose record claims more parameter values than its
 * snapshot can hold is refused before the coordinator sizes its round
 * buffers by that claim (2^28 values, under the swarm's model limit:
 * 1.3 GB). */
TEST(swarm_checkpoint_claiming_more_values_than_its_snapshot_is_refused)
{
    char dir[] = "/tmp/foundry_swck_XXXXXX", path[64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/swarm.ckpt", dir);
    tm__swarm_join_msg j = {.numel = (uint64_t)1 << 28, .round = 4};
    j.s = (tm__swarm_settings){.mode = TM_SWARM_TOPK, .topk_ratio = 0.01,
                               .momentum_correction = 0.9, .local_steps = 50,
                               .outer_lr = 0.7, .outer_momentum = 0.9};
    static const uint8_t no_entries[4] = {0};
    write_ckpt_file(dir, &j, no_entries, sizeof no_entries);
    tm_swarm_opts o = tm_swarm_defaults();
    o.insecure = true;
    o.checkpoint_dir = dir;
    tm_swarm_coordinator *co = tm_swarm_coordinator_new(&o);
    CHECK(co == NULL);
    CHECK_INT(tm_last_status(), TM_EFORMAT);
    CHECK(strstr(tm_last_error(), "a snapshot of 28 bytes cannot hold "
                                  "268435456 parameter values") != NULL);
    tm_swarm_coordinator_free(co);
    unlink(path);
    rmdir(dir);
}
