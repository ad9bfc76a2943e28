/*
 * bench_swarm.c — times the swarm: TopK selection, and whole rounds of a
 * coordinator with workers over loopback (threads of this process, public
 * API only).  One JSON object per line on stdout.
 *
 *   bench_swarm topk N K REPS
 *       tm_swarm_topk of K out of N normal floats: one warm-up, then REPS
 *       timed calls ("ms": every one's wall time; "median_cpu_ms": the
 *       process's CPU time, all threads).  Threads: FOUNDRY_NUM_THREADS.
 *       bench/bench_swarm_topk.py runs this beside torch.topk.
 *   bench_swarm round N MODE SECURITY ROUNDS [WORKERS]
 *       WORKERS (default 4) workers train one N-float parameter on
 *       synthetic gradients through a coordinator on 127.0.0.1.  MODE:
 *       topk (1%, F32 values) or dense; SECURITY: mac (authenticated, the
 *       default), encrypt (ChaCha20-Poly1305) or insecure (no key).  The
 *       workers step until a round in which all of them took part (joins
 *       need the state, which arrives only after a round); then, before
 *       each of ROUNDS rounds, every worker waits at a barrier and times
 *       its tm_swarm_step; a round's latency is the slowest worker's step.
 *       Reports the median and every latency after the first round (which
 *       also sizes buffers), bytes each worker sent and received per round,
 *       the coordinator's wire bytes per round, and wire MB/s through the
 *       coordinator (bytes in + out over the median round).
 *
 * Absolute times on shared machines are noise; compare runs made
 * together (docs/benchmarks.md, "Swarm").
 */
#include <foundry.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint8_t KEY[] = "bench_swarm: a 32-byte key......";

static void die(const char *what)
{
    fprintf(stderr, "bench_swarm: %s failed: %s\n", what, tm_last_error());
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double *s = malloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static void print_list(const char *name, const double *v, int n)
{
    printf(", \"%s\": [", name);
    for (int i = 0; i < n; i++) printf("%s%.4f", i ? ", " : "", v[i]);
    printf("]");
}

/* ------------------------------------------------------------------ topk */

static int bench_topk(int64_t n, int64_t k, int reps)
{
    tm_manual_seed(1);
    tm_tensor *x = tm_randn((int64_t[]){n}, 1, TM_F32);
    if (!x) die("tm_randn");
    double *ms = malloc((size_t)reps * sizeof *ms);
    double *cpu = malloc((size_t)reps * sizeof *cpu);
    for (int r = -1; r < reps; r++) {
        tm_tensor *ti, *tv;
        double t0 = now(), c0 = cpu_now();
        if (tm_swarm_topk(x, k, &ti, &tv)) die("tm_swarm_topk");
        double dt = now() - t0, dc = cpu_now() - c0;
        tm_free(ti);
        tm_free(tv);
        if (r >= 0) {
            ms[r] = 1e3 * dt;
            cpu[r] = 1e3 * dc;
        }
    }
    printf("{\"bench\": \"topk\", \"n\": %lld, \"k\": %lld, \"threads\": %d, "
           "\"median_ms\": %.4f, \"median_cpu_ms\": %.4f", (long long)n,
           (long long)k, tm_get_num_threads(), median(ms, reps),
           median(cpu, reps));
    print_list("ms", ms, reps);
    printf("}\n");
    free(ms);
    free(cpu);
    tm_free(x);
    return 0;
}

/* ----------------------------------------------------------------- round */

typedef struct shared {
    int64_t n;
    int rounds, workers, port;
    tm_swarm_mode mode;
    bool encrypt, insecure;
    pthread_barrier_t start; /* before every round */
    double *step_s;          /* [rounds][workers] */
    uint64_t *sent, *recv;   /* [rounds + 1][workers], cumulative */
} shared;

typedef struct worker_arg {
    shared *sh;
    int id;
    tm_status st;
    char err[256];
} worker_arg;

static tm_swarm_opts security(const shared *sh)
{
    tm_swarm_opts o = tm_swarm_defaults();
    if (sh->insecure) o.insecure = true;
    else {
        o.key = KEY;
        o.key_len = 32;
        o.encrypt = sh->encrypt;
    }
    return o;
}

static void *worker_main(void *arg)
{
    worker_arg *wa = arg;
    shared *sh = wa->sh;
    int64_t n = sh->n;
    tm_tensor *w = tm_zeros((int64_t[]){n}, 1, TM_F32);
    tm_requires_grad_(w, true);
    tm_params *ps = tm_params_new();
    tm_params_add(ps, "w", w, false);
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_SGD);
    hp.lr = 1e-3;
    tm_optim *opt = tm_optim_new(TM_OPTIM_SGD, &hp);
    tm_optim_add_params(opt, ps, NULL);
    /* a fixed synthetic gradient per worker: normal, a little different
     * in scale from worker to worker */
    tm_rng rng = tm_rng_new(100 + (uint64_t)wa->id);
    tm_tensor *g = tm_empty((int64_t[]){n}, 1, TM_F32);
    if (g && tm_normal_(g, 0, 1 + 0.1 * wa->id, &rng)) {
        tm_free(g);
        g = NULL;
    }
    tm_swarm_opts o = security(sh);
    o.host = "127.0.0.1";
    o.port = sh->port;
    o.mode = sh->mode;
    o.topk_ratio = 0.01;
    o.reconnect_ms = 10000;
    /* a dense round of 25M floats keeps the coordinator's one thread busy
     * (and silent) for longer than the default 5 s */
    o.peer_timeout_ms = 600000;
    char name[16];
    snprintf(name, sizeof name, "w%d", wa->id);
    o.name = name;
    tm_swarm *sw = g && opt ? tm_swarm_join(&o, ps, opt) : NULL;
    wa->st = sw ? TM_OK : tm_last_status();
    if (wa->st) snprintf(wa->err, sizeof wa->err, "%s", tm_last_error());
    /* Until a round in which every worker took part: a joiner waits for
     * the state, which a synced worker sends only after a round of its
     * own, so nobody may wait at the barrier yet.  All leave this loop
     * after the same round (the one whose update says "all of us"). */
    for (int t = 0; sw && !wa->st && tm_swarm_world(sw) < sh->workers; t++) {
        tm_status st = t < 10000 ? tm_set_grad(w, g) : TM_ESTATE;
        if (!st) st = tm_swarm_step(sw);
        if (st) {
            wa->st = st;
            snprintf(wa->err, sizeof wa->err, "joining: %s",
                     t < 10000 ? tm_last_error() : "the others never came");
        }
    }
    uint64_t s0 = 0, r0 = 0;
    if (sw) tm_swarm_bytes(sw, &s0, &r0);
    sh->sent[wa->id] = s0;
    sh->recv[wa->id] = r0;
    for (int r = 0; r < sh->rounds; r++) {
        /* everyone waits here, joined or not, so nobody hangs */
        tm_status st = sw && !wa->st ? tm_set_grad(w, g) : TM_OK;
        pthread_barrier_wait(&sh->start);
        double t0 = now();
        if (sw && !wa->st && !st) st = tm_swarm_step(sw);
        sh->step_s[r * sh->workers + wa->id] = now() - t0;
        if (st && !wa->st) {
            wa->st = st;
            snprintf(wa->err, sizeof wa->err, "round %d: %s", r, tm_last_error());
        }
        uint64_t s = 0, v = 0;
        if (sw) tm_swarm_bytes(sw, &s, &v);
        sh->sent[(r + 1) * sh->workers + wa->id] = s;
        sh->recv[(r + 1) * sh->workers + wa->id] = v;
    }
    tm_swarm_leave(sw);
    tm_free(g);
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

static int bench_round(int64_t n, const char *mode, const char *sec, int rounds,
                       int workers)
{
    shared sh = {.n = n, .rounds = rounds, .workers = workers};
    if (!strcmp(mode, "topk")) sh.mode = TM_SWARM_TOPK;
    else if (!strcmp(mode, "dense")) sh.mode = TM_SWARM_DENSE;
    else {
        fprintf(stderr, "bench_swarm: mode is topk or dense, not %s\n", mode);
        return 2;
    }
    if (!strcmp(sec, "encrypt")) sh.encrypt = true;
    else if (!strcmp(sec, "insecure")) sh.insecure = true;
    else if (strcmp(sec, "mac")) {
        fprintf(stderr, "bench_swarm: security is mac, encrypt or insecure\n");
        return 2;
    }
    if (rounds < 2 || workers < 1 || workers > 64) {
        fprintf(stderr, "bench_swarm: need ROUNDS >= 2 and 1..64 workers\n");
        return 2;
    }
    tm_swarm_opts o = security(&sh);
    /* nobody should be left out of a round because the machine is slow */
    o.round_deadline_ms = 600000;
    o.peer_timeout_ms = 600000;
    tm_swarm_coordinator *co = tm_swarm_coordinator_new(&o);
    if (!co) die("tm_swarm_coordinator_new");
    sh.port = tm_swarm_coordinator_port(co);
    sh.step_s = calloc((size_t)rounds * workers, sizeof *sh.step_s);
    sh.sent = calloc((size_t)(rounds + 1) * workers, sizeof *sh.sent);
    sh.recv = calloc((size_t)(rounds + 1) * workers, sizeof *sh.recv);
    pthread_barrier_init(&sh.start, NULL, (unsigned)workers);
    pthread_t ct, wt[64];
    worker_arg wa[64];
    pthread_create(&ct, NULL, coordinator_main, co);
    for (int i = 0; i < workers; i++) {
        wa[i] = (worker_arg){.sh = &sh, .id = i};
        pthread_create(&wt[i], NULL, worker_main, &wa[i]);
    }
    for (int i = 0; i < workers; i++) pthread_join(wt[i], NULL);
    tm_swarm_stats st;
    tm_swarm_coordinator_stats(co, &st);
    tm_swarm_coordinator_stop(co);
    pthread_join(ct, NULL);
    tm_swarm_coordinator_free(co);
    int bad = 0;
    for (int i = 0; i < workers; i++)
        if (wa[i].st) {
            fprintf(stderr, "bench_swarm: worker %d: %s\n", i, wa[i].err);
            bad = 1;
        }
    /* latency of round r: the slowest worker's step; round 0 left out */
    int m = rounds - 1;
    double *lat = malloc((size_t)m * sizeof *lat);
    for (int r = 1; r < rounds; r++) {
        double worst = 0;
        for (int i = 0; i < workers; i++)
            if (sh.step_s[r * workers + i] > worst) worst = sh.step_s[r * workers + i];
        lat[r - 1] = 1e3 * worst;
    }
    /* bytes per round: rounds 1.. at worker 0, and over all workers */
    double up = (double)(sh.sent[rounds * workers] - sh.sent[workers]) / m;
    double down = (double)(sh.recv[rounds * workers] - sh.recv[workers]) / m;
    double wire = 0;
    for (int i = 0; i < workers; i++)
        wire += (double)(sh.sent[rounds * workers + i] - sh.sent[workers + i]) +
                (double)(sh.recv[rounds * workers + i] - sh.recv[workers + i]);
    wire /= m;
    double med = median(lat, m);
    printf("{\"bench\": \"round\", \"n\": %lld, \"mode\": \"%s\", \"security\": "
           "\"%s\", \"workers\": %d, \"threads\": %d, \"rounds\": %d, "
           "\"swarm_rounds\": %lld, \"dropped\": %lld, \"median_ms\": %.3f, "
           "\"worker_sent_per_round\": %.0f, \"worker_received_per_round\": %.0f, "
           "\"coordinator_bytes_per_round\": %.0f, \"dense_bytes\": %lld, "
           "\"wire_MBps\": %.1f",
           (long long)n, mode, sec, workers, tm_get_num_threads(), rounds,
           (long long)st.rounds, (long long)st.dropped_updates, med, up, down,
           wire, (long long)(4 * n), wire / 1e6 / (med / 1e3));
    print_list("ms", lat, m);
    printf("}\n");
    free(lat);
    free(sh.step_s);
    free(sh.sent);
    free(sh.recv);
    pthread_barrier_destroy(&sh.start);
    return bad;
}

int main(int argc, char **argv)
{
    if (!getenv("FOUNDRY_LOG")) tm_set_log_level(TM_LOG_ERROR);
    if (argc == 5 && !strcmp(argv[1], "topk"))
        return bench_topk(atoll(argv[2]), atoll(argv[3]), atoi(argv[4]));
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "round"))
        return bench_round(atoll(argv[2]), argv[3], argv[4], atoi(argv[5]),
                           argc == 7 ? atoi(argv[6]) : 4);
    fprintf(stderr, "usage: bench_swarm topk N K REPS\n"
                    "       bench_swarm round N topk|dense mac|encrypt|insecure "
                    "ROUNDS [WORKERS]\n");
    return 2;
}
