/* foundry swarm: data-parallel training across processes and machines.
 * `coordinator` serves the rounds, `worker` is `foundry train` with its
 * gradients exchanged through the coordinator, `keygen` writes a key. */
#include "train.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_MAX 1024

/* The connection flags coordinator and worker share. */
typedef struct conn_flags {
    const char *key_file;
    bool encrypt, insecure;
    uint8_t key[KEY_MAX];
    size_t key_len;
} conn_flags;

#define CONN_FLAGS(c)                                                                          \
    {.name = "--key-file", .kind = CLI_STR, .dst = &(c)->key_file, .meta = "FILE",             \
     .help = "the swarm's pre-shared key (at least 16 bytes; foundry swarm keygen writes one)"}, \
    {.name = "--encrypt", .kind = CLI_BOOL, .dst = &(c)->encrypt,                              \
     .help = "encrypt every frame (ChaCha20-Poly1305), not only authenticate it"},             \
    {.name = "--insecure", .kind = CLI_BOOL, .dst = &(c)->insecure,                            \
     .help = "no key, no authentication: anyone who can connect can join (trusted networks only)"}

/* Reads the key file (one trailing newline is not part of the key, so a
 * key typed into a file works) and fills the options' key fields. */
static int conn_ready(const char *sub, conn_flags *c, tm_swarm_opts *o)
{
    if (c->insecure) {
        if (c->key_file || c->encrypt)
            return cli_usage_error(sub, "--insecure excludes --key-file and --encrypt");
        fprintf(stderr, "foundry %s: warning: --insecure: the swarm is not authenticated; anyone who can "
                        "reach the port can join and send updates\n", sub);
        o->insecure = true;
        return CLI_OK;
    }
    if (!c->key_file)
        return cli_usage_error(sub, "--key-file FILE is required (or --insecure, explicitly)");
    size_t n = 0;
    char *k = cli_read_file(c->key_file, &n);
    if (!k)
        return cli_lib_error(sub);
    if (n && k[n - 1] == '\n')
        n--;
    if (n && k[n - 1] == '\r')
        n--;
    if (n < 16 || n > KEY_MAX) {
        free(k);
        return cli_usage_error(sub, "--key-file %s: the key is %zu bytes; it must be 16 to %d", c->key_file,
                               n, KEY_MAX);
    }
    memcpy(c->key, k, n);
    memset(k, 0, n);
    free(k);
    c->key_len = n;
    o->key = c->key;
    o->key_len = n;
    o->encrypt = c->encrypt;
    return CLI_OK;
}

static tm_swarm_coordinator *volatile g_coordinator;

static void on_signal(int sig)
{
    (void)sig;
    if (g_coordinator)
        tm_swarm_coordinator_stop(g_coordinator);
}

static int coordinator(int argc, char **argv)
{
    const char *sub = "swarm coordinator";
    tm_swarm_opts o = tm_swarm_defaults();
    conn_flags c = {0};
    int64_t port = 0;
    const char *ckpt = NULL;
    cli_flag flags[] = {
        {.name = "--port", .kind = CLI_INT, .dst = &port, .lo = 0, .hi = 65535, .meta = "P",
         .help = "TCP port to listen on (0: a free one, printed)"},
        CONN_FLAGS(&c),
        {.name = "--round-deadline-ms", .kind = CLI_INT, .dst = &o.round_deadline_ms, .lo = 1, .hi = 1e9,
         .meta = "MS", .help = "close a round this long after its first update, with whoever has sent"},
        {.name = "--heartbeat-ms", .kind = CLI_INT, .dst = &o.heartbeat_ms, .lo = 1, .hi = 1e9,
         .meta = "MS", .help = "heartbeat interval"},
        {.name = "--peer-timeout-ms", .kind = CLI_INT, .dst = &o.peer_timeout_ms, .lo = 2, .hi = 1e9,
         .meta = "MS", .help = "drop a worker silent this long"},
        {.name = "--norm-bound", .kind = CLI_DOUBLE, .dst = &o.norm_bound, .lo = 1, .hi = 1e30, .meta = "X",
         .help = "drop an update whose norm is over X times the recent median"},
        {.name = "--checkpoint", .kind = CLI_STR, .dst = &ckpt, .meta = "DIR",
         .help = "save the swarm's state in DIR, and resume from it when it holds one"},
        {.name = "--checkpoint-every", .kind = CLI_INT, .dst = &o.checkpoint_every, .lo = 1, .hi = 1e12,
         .meta = "N", .help = "rounds between checkpoints"},
        {.name = "--min-workers", .kind = CLI_INT, .dst = &o.min_workers, .lo = 0, .hi = 1e6, .meta = "N",
         .help = "the first round waits until N workers have joined"},
        {.name = "--max-rounds", .kind = CLI_INT, .dst = &o.max_rounds, .lo = 0, .hi = 1e15, .meta = "N",
         .help = "stop after N rounds (0: at SIGINT/SIGTERM)"},
    };
    cli_cmd cmd = {
        .name = sub,
        .usage = "swarm coordinator --port P --key-file FILE [--encrypt] [--round-deadline-ms MS] "
                 "[--checkpoint DIR]",
        .summary = "Serves a swarm's rounds: authenticates workers, validates and averages their updates,\n"
                   "sends every worker the average, gives joining workers the current state, and\n"
                   "checkpoints it.  Runs until SIGINT or SIGTERM (or --max-rounds).",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if ((rc = conn_ready(sub, &c, &o)) != CLI_OK)
        return rc;
    if (o.peer_timeout_ms <= o.heartbeat_ms)
        return cli_usage_error(sub, "--peer-timeout-ms must be above --heartbeat-ms");
    o.port = (int)port;
    o.checkpoint_dir = ckpt;
    if (ckpt && cli_mkdir(ckpt) != TM_OK)
        return cli_lib_error(sub);
    tm_swarm_coordinator *co = tm_swarm_coordinator_new(&o);
    memset(c.key, 0, sizeof c.key);
    if (!co)
        return cli_lib_error(sub);
    g_coordinator = co;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    printf("swarm coordinator: listening on port %d (%s)%s%s, round %lld\n", tm_swarm_coordinator_port(co),
           o.insecure ? "insecure" : o.encrypt ? "authenticated, encrypted" : "authenticated",
           ckpt ? ", checkpoints in " : "", ckpt ? ckpt : "", (long long)tm_swarm_coordinator_round(co));
    fflush(stdout);
    tm_status st = tm_swarm_coordinator_run(co);
    g_coordinator = NULL;
    tm_swarm_stats s;
    tm_swarm_coordinator_stats(co, &s);
    printf("swarm coordinator: %lld rounds, %lld joins, %lld refused, %lld updates dropped, %.2f MB in, "
           "%.2f MB out\n", (long long)s.rounds, (long long)s.joins, (long long)s.refused,
           (long long)s.dropped_updates, (double)s.bytes_in / 1e6, (double)s.bytes_out / 1e6);
    rc = st ? cli_lib_error(sub) : CLI_OK;
    tm_swarm_coordinator_free(co);
    return rc;
}

/* The worker's own flags beside train's. */
typedef struct worker_ctx {
    tm_swarm_opts o;
    conn_flags c;
    const char *connect, *mode, *name;
    bool f16, mpi;
    char host[256], out[4096];
} worker_ctx;

/* This process's rank in its MPI job, from the launcher's environment
 * (Open MPI, PMIx, MPICH); 0 outside one. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        int64_t r;
        if (v && cli_parse_int(v, 0, 1 << 30, &r))
            return (int)r;
    }
    return 0;
}

/* --mpi: no coordinator; "%r" in --out becomes the rank, so that ranks
 * sharing a file system write their own run directories. */
static int mpi_ready(worker_ctx *w, const char *sub, train_opts *t)
{
    if (w->connect || w->c.key_file || w->c.insecure || w->c.encrypt)
        return cli_usage_error(sub, "--mpi excludes --connect, --key-file, --insecure and --encrypt "
                               "(the MPI job's ranks are the swarm)");
    const char *p = strstr(t->out, "%r");
    if (p) {
        int n = snprintf(w->out, sizeof w->out, "%.*s%d%s", (int)(p - t->out), t->out, launcher_rank(),
                         p + 2);
        if (n < 0 || (size_t)n >= sizeof w->out)
            return cli_usage_error(sub, "--out: too long");
        t->out = w->out;
    }
    w->o.mpi = true;
    return CLI_OK;
}

static int worker_ready(void *ctx, const cli_cmd *cmd, train_opts *t)
{
    worker_ctx *w = ctx;
    const char *sub = cmd->name;
    if (w->mpi) {
        int rc = mpi_ready(w, sub, t);
        if (rc != CLI_OK)
            return rc;
    } else if (!w->connect)
        return cli_usage_error(sub, "--connect HOST:PORT is required");
    if (!w->mpi) {
        const char *colon = strrchr(w->connect, ':');
        int64_t port;
        if (!colon || colon == w->connect || (size_t)(colon - w->connect) >= sizeof w->host ||
            !cli_parse_int(colon + 1, 1, 65535, &port))
            return cli_usage_error(sub, "--connect: expected HOST:PORT, got \"%s\"", w->connect);
        memcpy(w->host, w->connect, (size_t)(colon - w->connect));
        w->host[colon - w->connect] = 0;
        w->o.host = w->host;
        w->o.port = (int)port;
    }
    if (!strcmp(w->mode, "topk"))
        w->o.mode = TM_SWARM_TOPK;
    else if (!strcmp(w->mode, "dense"))
        w->o.mode = TM_SWARM_DENSE;
    else if (!strcmp(w->mode, "diloco"))
        w->o.mode = TM_SWARM_DILOCO;
    else
        return cli_usage_error(sub, "--mode: expected topk, dense or diloco, got \"%s\"", w->mode);
    if (w->o.mode == TM_SWARM_DILOCO && t->steps % w->o.local_steps)
        return cli_usage_error(sub, "--steps %lld must be a multiple of --local-steps %lld (replicas "
                               "agree only after an outer step)", (long long)t->steps,
                               (long long)w->o.local_steps);
    if (t->resume)
        return cli_usage_error(sub, "--resume: a worker resumes from the swarm's state, not a run directory");
    if (t->stop_at)
        return cli_usage_error(sub, "--stop-at: a worker leaves the swarm at --steps");
    w->o.values_f16 = w->f16;
    w->o.name = w->name;
    int rc = w->mpi ? CLI_OK : conn_ready(sub, &w->c, &w->o);
    if (rc != CLI_OK)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    t->swarm = &w->o;
    return CLI_OK;
}

static int worker(int argc, char **argv)
{
    worker_ctx w = {.o = tm_swarm_defaults(), .mode = "topk", .name = "worker"};
    cli_flag flags[] = {
        {.name = "--connect", .kind = CLI_STR, .dst = &w.connect, .meta = "HOST:PORT",
         .help = "the coordinator (required)"},
        CONN_FLAGS(&w.c),
        {.name = "--mpi", .kind = CLI_BOOL, .dst = &w.mpi,
         .help = "the ranks of this MPI job are the swarm, no coordinator (mpirun -np N foundry swarm "
                 "worker --mpi ...; %r in --out is the rank; builds with make MPI=1)"},
        {.name = "--name", .kind = CLI_STR, .dst = &w.name, .meta = "NAME",
         .help = "this worker's name in the coordinator's log"},
        {.name = "--mode", .kind = CLI_STR, .dst = &w.mode, .meta = "M",
         .help = "topk (sparse gradients with error feedback), dense, or diloco"},
        {.name = "--topk", .kind = CLI_DOUBLE, .dst = &w.o.topk_ratio, .lo = 1e-9, .hi = 1, .meta = "R",
         .help = "fraction of the gradient's values sent each step (topk mode)"},
        {.name = "--warmup-rounds", .kind = CLI_INT, .dst = &w.o.warmup_rounds, .lo = 0, .hi = 1e9,
         .meta = "N", .help = "sparsity warm-up: the fraction sent falls exponentially from all to --topk over N rounds"},
        {.name = "--momentum-correction", .kind = CLI_DOUBLE, .dst = &w.o.momentum_correction, .lo = 0,
         .hi = 0.999, .meta = "M", .help = "DGC's momentum correction (0 with AdamW, which has its own)"},
        {.name = "--f16", .kind = CLI_BOOL, .dst = &w.f16, .help = "send TopK values as F16"},
        {.name = "--local-steps", .kind = CLI_INT, .dst = &w.o.local_steps, .lo = 1, .hi = 1e9, .meta = "H",
         .help = "DiLoCo: local optimizer steps between averages"},
        {.name = "--diloco-topk", .kind = CLI_BOOL, .dst = &w.o.diloco_topk,
         .help = "DiLoCo: send the parameter change TopK-compressed (--topk) instead of dense; with "
                 "--local-steps 1 --outer-lr 1 --outer-momentum 0, TopK of AdamW's update"},
        {.name = "--lookahead", .kind = CLI_DOUBLE, .dst = &w.o.lookahead, .lo = 0, .hi = 1, .meta = "C",
         .help = "DiLoCo with TopK: start each round's local steps from the synchronized parameters plus C "
                 "times this worker's unsent change (0: off)"},
        {.name = "--outer-lr", .kind = CLI_DOUBLE, .dst = &w.o.outer_lr, .lo = 0, .hi = 100, .meta = "LR",
         .help = "DiLoCo: the outer Nesterov SGD's learning rate"},
        {.name = "--outer-momentum", .kind = CLI_DOUBLE, .dst = &w.o.outer_momentum, .lo = 0, .hi = 0.999,
         .meta = "M", .help = "DiLoCo: the outer SGD's momentum"},
        {.name = "--reconnect-ms", .kind = CLI_INT, .dst = &w.o.reconnect_ms, .lo = 0, .hi = 1e12,
         .meta = "MS", .help = "keep trying to reach the coordinator this long"},
    };
    train_ext ext = {
        .name = "swarm worker",
        .usage = "swarm worker (--connect HOST:PORT --key-file FILE | --mpi) [--mode topk|dense|diloco] "
                 "[train flags] --out RUN_DIR",
        .summary = "Trains like foundry train (same flags), one replica of a swarm: each step's gradient goes\n"
                   "to the coordinator (TopK with error feedback, dense, or in DiLoCo mode the parameter change\n"
                   "every --local-steps) and the average comes back.  The first worker's model is the swarm's;\n"
                   "later ones receive the current parameters and optimizer state.  Every worker draws its own\n"
                   "batches; all leave at --steps with identical parameters.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]),
        .ready = worker_ready, .ctx = &w,
    };
    int rc = train_command(argc, argv, &ext);
    memset(w.c.key, 0, sizeof w.c.key);
    return rc;
}

/* 32 random bytes as 64 hex digits, in a file only its owner can read. */
static int keygen(int argc, char **argv)
{
    const char *sub = "swarm keygen", *out = NULL;
    cli_flag flags[] = {
        {.name = "--out", .kind = CLI_STR, .dst = &out, .meta = "FILE", .help = "the key file (required)"},
    };
    cli_cmd cmd = {
        .name = sub, .usage = "swarm keygen --out FILE",
        .summary = "Writes a new pre-shared key (32 random bytes as hex) to FILE, readable by its owner only.\n"
                   "Copy it to every machine of the swarm over a channel you trust.",
        .flags = flags, .n_flags = 1, .min_pos = 0, .max_pos = 0,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    free(pos);
    if (!out)
        return cli_usage_error(sub, "--out FILE is required");
    uint8_t raw[32];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(raw, 1, sizeof raw, f) : 0;
    if (f)
        fclose(f);
    if (got != sizeof raw)
        return cli_error(sub, "cannot read /dev/urandom");
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    memset(raw, 0, sizeof raw);
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return cli_error(sub, "cannot create '%s': %s", out, strerror(errno));
    hex[64] = '\n';
    ssize_t w = write(fd, hex, 65);
    memset(hex, 0, sizeof hex);
    if (w != 65 || close(fd) != 0) {
        unlink(out);
        return cli_error(sub, "cannot write '%s'", out);
    }
    printf("swarm keygen: wrote a 64-character key to %s\n", out);
    return CLI_OK;
}

int cmd_swarm(int argc, char **argv)
{
    static const char help[] =
        "usage: foundry swarm coordinator|worker|keygen [flags]   (foundry swarm SUB --help)\n\n"
        "  coordinator  serve a swarm's rounds on a TCP port\n"
        "  worker       train one replica (foundry train's flags) through a coordinator\n"
        "  keygen       write a new pre-shared key file\n";
    if (argc < 1)
        return cli_usage_error("swarm", "expected coordinator, worker or keygen (see foundry swarm --help)");
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(help, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[0], "coordinator"))
        return coordinator(argc - 1, argv + 1);
    if (!strcmp(argv[0], "worker"))
        return worker(argc - 1, argv + 1);
    if (!strcmp(argv[0], "keygen"))
        return keygen(argc - 1, argv + 1);
    return cli_usage_error("swarm", "unknown subcommand \"%s\" (expected coordinator, worker or keygen)",
                           argv[0]);
}
