/*
 * bench_kernels.c — times the fast CPU kernels: sgemm (square,
 * GPT-like NN/NT/TN), elementwise ops on 16M floats, softmax and
 * layer_norm rows.  Same method as bench_core.c: one warm-up, then at
 * least MIN_REPS calls and MIN_TOTAL seconds, minimum per call, one JSON
 * object per line.  Threads come from FOUNDRY_NUM_THREADS.  Run it through
 * bench/run_kernels.py, which times numpy and PyTorch in the same run.
 */
#include <foundry.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MIN_REPS = 3 };
#define MIN_TOTAL 0.3

static void die(const char *what)
{
    fprintf(stderr, "bench_kernels: %s failed: %s\n", what, tm_last_error());
    exit(1);
}

static tm_tensor *check(tm_tensor *t, const char *what)
{
    if (!t) die(what);
    return t;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef enum { GEMM_NN, GEMM_NT, GEMM_TN, ADD, MUL, EXP, GELU, SOFTMAX,
               LAYER_NORM } op_kind;

typedef struct {
    op_kind k;
    tm_tensor *a, *b, *c, *w, *bias;
} job;

/* One call; returns a new reference to drop (NULL is fine for gemm). */
static void run(const job *j)
{
    tm_tensor *r = NULL;
    switch (j->k) {
    case GEMM_NN:
    case GEMM_NT:
    case GEMM_TN:
        if (tm_gemm(j->k == GEMM_TN, j->k == GEMM_NT, 1.0, j->a, j->b, 0.0,
                    j->c))
            die("tm_gemm");
        return;
    case ADD: r = tm_add(j->a, j->b); break;
    case MUL: r = tm_mul(j->a, j->b); break;
    case EXP: r = tm_exp(j->a); break;
    case GELU: r = tm_gelu(j->a); break;
    case SOFTMAX: r = tm_softmax(j->a, -1); break;
    case LAYER_NORM: r = tm_layer_norm(j->a, j->w, j->bias, 1e-5); break;
    }
    tm_free(check(r, "op"));
}

static void bench(const char *op, const char *shape, const job *j,
                  double flops)
{
    run(j); /* warm-up */
    double best = 1e30, total = 0.0;
    for (int reps = 0; reps < MIN_REPS || total < MIN_TOTAL; reps++) {
        double t0 = now();
        run(j);
        double dt = now() - t0;
        total += dt;
        if (dt < best) best = dt;
    }
    printf("{\"op\": \"%s\", \"shape\": \"%s\", \"seconds\": %.9f, "
           "\"flops\": %.0f}\n", op, shape, best, flops);
    fflush(stdout);
}

static tm_tensor *randn2(int64_t r, int64_t c)
{
    return check(tm_randn((int64_t[]){r, c}, 2, TM_F32), "tm_randn");
}

/* C = A B with A stored [m,k] (or [k,m] for TN) and B stored [k,n] (or
 * [n,k] for NT). */
static void gemm_case(const char *op, op_kind k, int64_t m, int64_t n,
                      int64_t kk)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)m,
             (long long)n, (long long)kk);
    job j = {.k = k};
    j.a = k == GEMM_TN ? randn2(kk, m) : randn2(m, kk);
    j.b = k == GEMM_NT ? randn2(n, kk) : randn2(kk, n);
    j.c = check(tm_zeros((int64_t[]){m, n}, 2, TM_F32), "tm_zeros");
    bench(op, shape, &j, 2.0 * (double)m * (double)n * (double)kk);
    tm_free(j.a); tm_free(j.b); tm_free(j.c);
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    tm_manual_seed(0);
    printf("{\"threads\": %d}\n", tm_get_num_threads());
    static const int64_t sq[] = {64, 128, 256, 512, 1024, 2048};
    for (size_t i = 0; i < sizeof sq / sizeof *sq; i++) {
        if (quick && sq[i] > 512) break;
        gemm_case("sgemm", GEMM_NN, sq[i], sq[i], sq[i]);
    }
    int64_t T = quick ? 512 : 4096;
    gemm_case("sgemm_gpt_nn", GEMM_NN, T, 3072, 768);
    gemm_case("sgemm_gpt_nt", GEMM_NT, T, 3072, 768); /* x W^T */
    gemm_case("sgemm_gpt_tn", GEMM_TN, 768, 3072, T); /* X^T G */

    int64_t n = quick ? (1 << 20) : (1 << 24);
    job e = {.a = check(tm_randn(&n, 1, TM_F32), "tm_randn"),
             .b = check(tm_randn(&n, 1, TM_F32), "tm_randn")};
    char shape[32];
    snprintf(shape, sizeof shape, "%lld", (long long)n);
    e.k = ADD; bench("add", shape, &e, 0);
    e.k = MUL; bench("mul", shape, &e, 0);
    e.k = EXP; bench("exp", shape, &e, 0);
    e.k = GELU; bench("gelu", shape, &e, 0);
    tm_free(e.a); tm_free(e.b);

    job r = {.a = randn2(4096, 1024)};
    r.w = check(tm_randn((int64_t[]){1024}, 1, TM_F32), "tm_randn");
    r.bias = check(tm_randn((int64_t[]){1024}, 1, TM_F32), "tm_randn");
    r.k = SOFTMAX; bench("softmax", "4096x1024", &r, 0);
    r.k = LAYER_NORM; bench("layer_norm", "4096x1024", &r, 0);
    tm_free(r.a); tm_free(r.w); tm_free(r.bias);
    return 0;
}
