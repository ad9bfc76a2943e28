/*
 * bench_core.c — times Foundry's core CPU tensor ops.  Each op is warmed up
 * once, then repeated (at least MIN_REPS times and MIN_TOTAL seconds); the
 * minimum time per call is reported, one JSON object per line.  The thread
 * count comes from FOUNDRY_NUM_THREADS (read by Foundry itself).
 *
 * Absolute times are noise on shared machines: run it through
 * bench/run_core.py, which times numpy in the same run and reports ratios.
 */
#include <foundry.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { MIN_REPS = 5 };
#define MIN_TOTAL 0.2

static void die(const char *what)
{
    fprintf(stderr, "bench_core: %s failed: %s\n", what, tm_last_error());
    exit(1);
}

static tm_tensor *check(tm_tensor *t, const char *what)
{
    if (!t)
        die(what);
    return t;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef enum {
    ADD, EXP, SUM_ALL, SUM_DIM0, SUM_DIM1, MATMUL, SORT, TO_F16, CONTIGUOUS
} op_kind;

/* One call of the op under test; returns its result (a new reference). */
static tm_tensor *call(op_kind k, const tm_tensor *a, const tm_tensor *b)
{
    tm_tensor *v = NULL;
    switch (k) {
    case ADD: return tm_add(a, b);
    case EXP: return tm_exp(a);
    case SUM_ALL: return tm_sum(a, NULL, 0, false);
    case SUM_DIM0: return tm_sum(a, (int[]){0}, 1, false);
    case SUM_DIM1: return tm_sum(a, (int[]){1}, 1, false);
    case MATMUL: return tm_matmul(a, b);
    case SORT: return tm_sort(a, -1, false, &v, NULL) == TM_OK ? v : NULL;
    case TO_F16: return tm_to_dtype(a, TM_F16);
    case CONTIGUOUS: return tm_contiguous(a);
    }
    return NULL;
}

static void bench(const char *op, const char *shape, op_kind k,
                  const tm_tensor *a, const tm_tensor *b)
{
    tm_free(check(call(k, a, b), op)); /* warm-up */
    double best = 1e30, total = 0.0;
    for (int reps = 0; reps < MIN_REPS || total < MIN_TOTAL; reps++) {
        double t0 = now();
        tm_tensor *r = call(k, a, b);
        double dt = now() - t0;
        tm_free(check(r, op));
        total += dt;
        if (dt < best)
            best = dt;
    }
    printf("{\"op\": \"%s\", \"shape\": \"%s\", \"seconds\": %.9f}\n", op,
           shape, best);
    fflush(stdout);
}

static tm_tensor *randn(int64_t r, int64_t c)
{
    return check(c ? tm_randn((int64_t[]){r, c}, 2, TM_F32)
                   : tm_randn((int64_t[]){r}, 1, TM_F32),
                 "tm_randn");
}

int main(void)
{
    tm_manual_seed(0);
    printf("{\"threads\": %d}\n", tm_get_num_threads());

    tm_tensor *a = randn(2048, 2048), *b = randn(2048, 2048);
    tm_tensor *row = randn(2048, 0);
    tm_tensor *at = check(tm_transpose(a, 0, 1), "tm_transpose");
    tm_tensor *m256a = randn(256, 256), *m256b = randn(256, 256);
    tm_tensor *m512a = randn(512, 512), *m512b = randn(512, 512);
    tm_tensor *s = randn(512, 1024);

    bench("add", "2048x2048", ADD, a, b);
    bench("add_transposed", "2048x2048", ADD, at, b);
    bench("add_broadcast_row", "2048x2048+2048", ADD, a, row);
    bench("exp", "2048x2048", EXP, a, NULL);
    bench("sum_all", "2048x2048", SUM_ALL, a, NULL);
    bench("sum_dim0", "2048x2048", SUM_DIM0, a, NULL);
    bench("sum_dim1", "2048x2048", SUM_DIM1, a, NULL);
    bench("matmul", "256x256x256", MATMUL, m256a, m256b);
    bench("matmul", "512x512x512", MATMUL, m512a, m512b);
    bench("sort", "512x1024", SORT, s, NULL);
    bench("to_f16", "2048x2048", TO_F16, a, NULL);
    bench("contiguous_transposed", "2048x2048", CONTIGUOUS, at, NULL);

    tm_free(s);
    tm_free(m512b); tm_free(m512a); tm_free(m256b); tm_free(m256a);
    tm_free(at); tm_free(row); tm_free(b); tm_free(a);
    return 0;
}
