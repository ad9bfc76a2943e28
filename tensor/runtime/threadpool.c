/* threadpool.c — a small persistent pool: the caller plus N-1 workers run
 * the parts of one job at a time.
 *
 * Training loops issue many small jobs back to back, so waking a sleeping
 * worker (a futex and a context switch each time) used to cost more than
 * some jobs themselves.  Workers therefore spin briefly (TM__SPIN pauses,
 * tens of microseconds) on the job counter before sleeping on the condition
 * variable, and the caller spins likewise before sleeping while it waits
 * for the last part.  The decisions are still made under the lock; the
 * spins only read atomics, to skip the sleep. */
#include "runtime_impl.h"

#include <stdatomic.h>

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct tm__job {
    tm__part_fn fn;
    void *ctx;
    int nparts;
    atomic_int next;  /* next part to claim */
    atomic_int done;  /* parts finished */
} tm__job;

static pthread_mutex_t tm__pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tm__pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t tm__pool_idle = PTHREAD_COND_INITIALIZER;
/* Held by the thread running a job, so concurrent callers run inline. */
static pthread_mutex_t tm__pool_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_t *tm__workers;
static int tm__nworkers;
/* bumped per job and on shutdown; written under tm__pool_lock */
static _Atomic uint64_t tm__generation;
static tm__job *tm__current;
static atomic_int tm__active; /* workers holding a pointer to tm__current */
static atomic_bool tm__stopping;

#define TM__SPIN 4000
static inline void tm__relax(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
static _Atomic int tm__want_threads; /* 0: default not yet decided */
static _Thread_local bool tm__in_pool;

static int tm__default_threads(void)
{
    const char *e = getenv("FOUNDRY_NUM_THREADS");
    if (e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (end != e && *end == '\0' && v > 0 && v <= 1024) return (int)v;
        tm_logf(TM_LOG_WARN, "FOUNDRY_NUM_THREADS='%s' is not a thread count "
               "in [1, 1024]; using the CPU count", e);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n > 1024 ? 1024 : (int)n) : 1;
}

int tm_get_num_threads(void)
{
    int n = atomic_load(&tm__want_threads);
    if (n <= 0) {
        int d = tm__default_threads(), expected = 0;
        atomic_compare_exchange_strong(&tm__want_threads, &expected, d);
        n = atomic_load(&tm__want_threads);
    }
    return n;
}

static void tm__run_parts(tm__job *job)
{
    int i;
    while ((i = atomic_fetch_add(&job->next, 1)) < job->nparts) {
        job->fn(i, job->nparts, job->ctx);
        atomic_fetch_add(&job->done, 1);
    }
}

static void *tm__worker_main(void *arg)
{
    (void)arg;
    tm__in_pool = true;
    uint64_t seen = 0;
    pthread_mutex_lock(&tm__pool_lock);
    for (;;) {
        if (!atomic_load(&tm__stopping) &&
            atomic_load(&tm__generation) == seen) {
            pthread_mutex_unlock(&tm__pool_lock); /* spin, then sleep */
            for (int i = 0; i < TM__SPIN && !atomic_load(&tm__stopping) &&
                            atomic_load(&tm__generation) == seen; i++)
                tm__relax();
            pthread_mutex_lock(&tm__pool_lock);
            while (!atomic_load(&tm__stopping) &&
                   atomic_load(&tm__generation) == seen)
                pthread_cond_wait(&tm__pool_wake, &tm__pool_lock);
        }
        if (atomic_load(&tm__stopping)) break;
        seen = atomic_load(&tm__generation);
        tm__job *job = tm__current;
        if (!job) continue;
        tm__active++;
        pthread_mutex_unlock(&tm__pool_lock);
        tm__run_parts(job);
        pthread_mutex_lock(&tm__pool_lock);
        tm__active--;
        pthread_cond_broadcast(&tm__pool_idle);
    }
    pthread_mutex_unlock(&tm__pool_lock);
    return NULL;
}

/* Stops and joins all workers.  Called with tm__pool_busy held. */
static void tm__pool_stop(void)
{
    pthread_mutex_lock(&tm__pool_lock);
    atomic_store(&tm__stopping, true);
    pthread_cond_broadcast(&tm__pool_wake);
    pthread_mutex_unlock(&tm__pool_lock);
    for (int i = 0; i < tm__nworkers; i++) pthread_join(tm__workers[i], NULL);
    free(tm__workers); /* plain malloc: the pool is not tensor memory */
    tm__workers = NULL;
    tm__nworkers = 0;
    atomic_store(&tm__stopping, false);
}

/* Starts workers so that workers + caller == want.  A failure to start a
 * thread just leaves fewer workers.  Called with tm__pool_busy held. */
static void tm__pool_start(int want)
{
    if (want - 1 == tm__nworkers) return;
    if (tm__nworkers) tm__pool_stop();
    if (want <= 1) return;
    tm__workers = malloc(sizeof(pthread_t) * (size_t)(want - 1));
    if (!tm__workers) return;
    for (int i = 0; i < want - 1; i++) {
        if (pthread_create(&tm__workers[i], NULL, tm__worker_main, NULL) != 0)
            break;
        tm__nworkers++;
    }
}

void tm_set_num_threads(int n)
{
    if (n > 1024) n = 1024;
    atomic_store(&tm__want_threads, n > 0 ? n : tm__default_threads());
}

static void tm__pool_exit(void)
{
    pthread_mutex_lock(&tm__pool_busy);
    tm__pool_stop();
    pthread_mutex_unlock(&tm__pool_busy);
}

void tm__parallel_parts(int nparts, tm__part_fn fn, void *ctx)
{
    if (nparts <= 0) return;
    int want = tm_get_num_threads();
    if (nparts == 1 || want <= 1 || tm__in_pool ||
        pthread_mutex_trylock(&tm__pool_busy) != 0) {
        for (int i = 0; i < nparts; i++) fn(i, nparts, ctx);
        return;
    }
    static bool registered;
    if (!registered) {
        registered = true;
        atexit(tm__pool_exit);
    }
    tm__pool_start(want);
    tm__job job = {.fn = fn, .ctx = ctx, .nparts = nparts};
    atomic_init(&job.next, 0);
    atomic_init(&job.done, 0);
    pthread_mutex_lock(&tm__pool_lock);
    tm__current = &job;
    atomic_fetch_add(&tm__generation, 1);
    pthread_cond_broadcast(&tm__pool_wake);
    pthread_mutex_unlock(&tm__pool_lock);

    tm__in_pool = true;
    tm__run_parts(&job);
    tm__in_pool = false;

    for (int i = 0; i < TM__SPIN && (atomic_load(&job.done) < nparts ||
                                     atomic_load(&tm__active) > 0); i++)
        tm__relax();
    pthread_mutex_lock(&tm__pool_lock);
    /* the job lives on this stack: wait until no worker can touch it */
    while (atomic_load(&job.done) < nparts || tm__active > 0)
        pthread_cond_wait(&tm__pool_idle, &tm__pool_lock);
    tm__current = NULL;
    pthread_mutex_unlock(&tm__pool_lock);
    pthread_mutex_unlock(&tm__pool_busy);
}

typedef struct {
    int64_t n;
    tm__range_fn fn;
    void *ctx;
} tm__for_ctx;

static void tm__for_part(int part, int nparts, void *p)
{
    tm__for_ctx *c = p;
    int64_t b = c->n * part / nparts, e = c->n * (part + 1) / nparts;
    if (b < e) c->fn(b, e, c->ctx);
}

void tm__parallel_for(int64_t n, int64_t grain, tm__range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t parts = n / grain;
    int nt = tm_get_num_threads();
    if (parts > nt) parts = nt;
    if (parts <= 1) {
        fn(0, n, ctx);
        return;
    }
    /* n * part must not overflow: fine for n < 2^53 and parts <= 1024 */
    tm__for_ctx c = {n, fn, ctx};
    tm__parallel_parts((int)parts, tm__for_part, &c);
}
