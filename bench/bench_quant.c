/*
 * bench_quant.c — quantized matvec / matmul throughput against F32 in the
 * same run, and the machine's memory bandwidth measured in the same run.
 *
 *   bench_quant [--quick] [--matvec] [--threads 1,2]
 *
 * For W [n, k] (4096x4096, 11008x4096, 4096x11008) and m activation rows
 * (1 = matvec; 64; 512 on the square shape): F32 through tm_linear, then
 * every weight format through the CPU backend's qmatmul entry (what
 * tm_linear runs for a quantized weight: the activations quantized on
 * the fly, integer dot products), each from >= 512 MiB of weight copies
 * taken in turn so no call finds them in a cache.  Also a STREAM-like copy (a = b, 2 x 128
 * MiB) and a read-only pass over 256 MiB (AVX2 loads, or libc's memchr)
 * on as many threads.
 * One warm-up, then at least MIN_REPS calls and MIN_TOTAL seconds; the
 * minimum per call.  One JSON object per line; bench/bench_quant.py runs
 * it and prints the table.
 */
#include <foundry.h>
#include <foundry/backend.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MIN_REPS = 3 };
/* Weights are taken from copies of at least this many bytes in turn, so
 * every call reads them from memory, not from a cache (a VM's L3 may be
 * several dies' worth). */
#define ROTATE_BYTES ((size_t)512 << 20)
static double min_total = 0.25;

static void die(const char *what)
{
    fprintf(stderr, "bench_quant: %s failed: %s\n", what, tm_last_error());
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------ bandwidth */

#define BW_BYTES ((size_t)256 << 20)

typedef struct {
    char *a, *b;
    size_t bytes;
    int kind; /* 0 copy b -> a, 1 read a */
    uint64_t sum;
} bw_part;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* A read-only pass as the kernels read: 4 x 32-byte loads an iteration. */
__attribute__((target("avx2"))) static uint64_t read_avx2(const char *p,
                                                          size_t bytes)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 128 <= bytes; i += 128) {
        s0 = _mm256_add_epi64(s0, _mm256_loadu_si256((const __m256i *)(p + i)));
        s1 = _mm256_add_epi64(s1,
                              _mm256_loadu_si256((const __m256i *)(p + i + 32)));
        s2 = _mm256_add_epi64(s2,
                              _mm256_loadu_si256((const __m256i *)(p + i + 64)));
        s3 = _mm256_add_epi64(s3,
                              _mm256_loadu_si256((const __m256i *)(p + i + 96)));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1),
                                 _mm256_add_epi64(s2, s3));
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, s);
    return out[0] + out[1] + out[2] + out[3];
}
#endif

static void *bw_run(void *p)
{
    bw_part *w = p;
    if (w->kind == 0) {
        memcpy(w->a, w->b, w->bytes);
    } else {
        /* a plain C loop at -O2 reads far below the memory's speed: AVX2
         * loads where the CPU has them, else libc's SIMD memchr for a
         * byte the buffer lacks */
#if defined(__x86_64__) && defined(__GNUC__)
        if (__builtin_cpu_supports("avx2")) {
            w->sum = read_avx2(w->a, w->bytes) == 42;
            return NULL;
        }
#endif
        w->sum = memchr(w->a, 0x7f, w->bytes) != NULL;
    }
    return NULL;
}

/* GB/s of bytes moved (copy: read + written; read: read). */
static double bandwidth(int kind, int threads, char *a, char *b)
{
    size_t len = kind == 0 ? BW_BYTES / 2 : BW_BYTES;
    double best = 1e30, t0 = now();
    for (int rep = 0; rep < MIN_REPS + 1 || now() - t0 < min_total; rep++) {
        pthread_t th[16];
        bw_part parts[16];
        double s = now();
        for (int i = 0; i < threads; i++) {
            size_t per = len / (size_t)threads;
            parts[i] = (bw_part){a + per * (size_t)i, b + per * (size_t)i,
                                 per, kind, 0};
            pthread_create(&th[i], NULL, bw_run, &parts[i]);
        }
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        double e = now() - s;
        if (rep > 0 && e < best) best = e;
        if (parts[0].sum) fputc(' ', stderr); /* keeps the reads */
    }
    double moved = kind == 0 ? 2.0 * (double)len : (double)len;
    return moved / best / 1e9;
}

/* ------------------------------------------------------- matmuls */

static const tm_dtype fmts[] = {TM_Q8_0, TM_Q4_0, TM_Q4_1, TM_Q5_0,
                                TM_Q5_1, TM_Q4_K, TM_Q5_K, TM_Q6_K};
static const char *const fmt_names[] = {"q8_0", "q4_0", "q4_1", "q5_0",
                                        "q5_1", "q4_k", "q5_k", "q6_k"};
static const int64_t fmt_block[] = {32, 32, 32, 32, 32, 256, 256, 256};
static const size_t fmt_bytes[] = {34, 18, 20, 22, 24, 144, 176, 210};

static tm_buf buf2(void *p, tm_dtype dt, int64_t r, int64_t c)
{
    tm_buf b;
    memset(&b, 0, sizeof b);
    b.handle = p;
    b.dtype = dt;
    b.ndim = 2;
    b.shape[0] = r;
    b.shape[1] = c;
    b.strides[0] = c;
    b.strides[1] = 1;
    return b;
}

static void report(const char *op, const char *fmt, int64_t m, int64_t n,
                   int64_t k, int threads, double sec, double wbytes)
{
    printf("{\"op\": \"%s\", \"format\": \"%s\", \"m\": %lld, \"n\": %lld, "
           "\"k\": %lld, \"threads\": %d, \"ms\": %.4f, \"weight_bytes\": "
           "%.0f, \"weight_gbs\": %.3f, \"gflops\": %.3f}\n",
           op, fmt, (long long)m, (long long)n, (long long)k, threads,
           sec * 1e3, wbytes, wbytes / sec / 1e9,
           2.0 * (double)m * (double)n * (double)k / sec / 1e9);
    fflush(stdout);
}

static void bench_shape(int64_t n, int64_t k, const int64_t *ms, int nm,
                        const int *threads, int nt)
{
    const tm_backend *cpu = tm_backend_get(TM_DEVICE_CPU);
    if (!cpu || !cpu->qmatmul || !cpu->quantize) die("the CPU qmatmul entry");
    int64_t mmax = 0;
    for (int i = 0; i < nm; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
    tm_tensor *w = tm_randn((int64_t[]){n, k}, 2, TM_F32);
    tm_tensor *xall = tm_randn((int64_t[]){mmax, k}, 2, TM_F32);
    if (!w || !xall) die("tm_randn");
    size_t fbytes = sizeof(float) * (size_t)(n * k);
    int nw = (int)((ROTATE_BYTES + fbytes - 1) / fbytes);
    tm_tensor *wr[16] = {w};
    if (nw > 16) nw = 16;
    for (int i = 1; i < nw; i++)
        if (!(wr[i] = tm_clone(w))) die("tm_clone");
    float *yq = malloc(sizeof(float) * (size_t)(mmax * n));
    if (!yq) die("malloc");
    for (int ti = 0; ti < nt; ti++) {
        tm_set_num_threads(threads[ti]);
        for (int mi = 0; mi < nm; mi++) {
            int64_t m = ms[mi];
            tm_tensor *x = tm_narrow(xall, 0, 0, m);
            tm_tensor *y = tm_linear(x, w, NULL); /* warm-up */
            if (!x || !y) die("tm_linear");
            tm_free(y);
            double best = 1e30, t0 = now();
            for (int rep = 0; rep < MIN_REPS || now() - t0 < min_total;
                 rep++) {
                double s = now();
                y = tm_linear(x, wr[(rep + 1) % nw], NULL);
                double e = now() - s;
                if (!y) die("tm_linear");
                tm_free(y);
                if (e < best) best = e;
            }
            report("linear", "f32", m, n, k, threads[ti], best,
                   4.0 * (double)n * (double)k);
            tm_free(x);
        }
    }
    tm_tensor *wc = tm_contiguous(w), *xc = tm_contiguous(xall);
    if (!wc || !xc) die("tm_contiguous");
    const float *wp = tm_data(wc), *xp = tm_data(xc);
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        size_t wbytes = (size_t)(n * (k / fmt_block[f])) * fmt_bytes[f];
        /* copies of the weight, taken in turn (ROTATE_BYTES) */
        int copies = (int)((ROTATE_BYTES + wbytes - 1) / wbytes);
        char *wq = malloc(wbytes * (size_t)copies);
        if (!wq) die("malloc");
        tm_buf qb = buf2(wq, fmts[f], n, k), wb = buf2((void *)wp, TM_F32, n, k);
        if (cpu->quantize(NULL, &qb, &wb)) die("quantize");
        for (int c = 1; c < copies; c++)
            memcpy(wq + wbytes * (size_t)c, wq, wbytes);
        for (int ti = 0; ti < nt; ti++) {
            tm_set_num_threads(threads[ti]);
            for (int mi = 0; mi < nm; mi++) {
                int64_t m = ms[mi];
                tm_buf xb = buf2((void *)xp, TM_F32, m, k);
                tm_buf yb = buf2(yq, TM_F32, m, n);
                if (cpu->qmatmul(NULL, &yb, &xb, &qb, false)) die("qmatmul");
                double best = 1e30, t0 = now();
                for (int rep = 0; rep < MIN_REPS || now() - t0 < min_total;
                     rep++) {
                    qb.handle = wq + wbytes * (size_t)((rep + 1) % copies);
                    double s = now();
                    if (cpu->qmatmul(NULL, &yb, &xb, &qb, false))
                        die("qmatmul");
                    double e = now() - s;
                    if (e < best) best = e;
                }
                report("qmatmul", fmt_names[f], m, n, k, threads[ti], best,
                       (double)wbytes);
            }
        }
        free(wq);
    }
    tm_set_num_threads(0);
    free(yq);
    tm_free(wc);
    tm_free(xc);
    for (int i = 1; i < nw; i++) tm_free(wr[i]);
    tm_free(w);
    tm_free(xall);
}

int main(int argc, char **argv)
{
    int threads[4] = {1, 2}, nt = 2;
    bool quick = false, matvec = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--matvec")) {
            matvec = true;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            nt = 0;
            for (char *p = argv[++i]; *p && nt < 4;) {
                threads[nt++] = atoi(p);
                while (*p && *p != ',') p++;
                if (*p == ',') p++;
            }
        } else {
            fprintf(stderr, "usage: bench_quant [--quick] [--matvec] "
                    "[--threads 1,2]\n");
            return 2;
        }
    }
    if (quick) min_total = 0.02;
    char *a = malloc(BW_BYTES), *b = malloc(BW_BYTES);
    if (!a || !b) die("malloc");
    memset(a, 1, BW_BYTES);
    memset(b, 2, BW_BYTES);
    for (int ti = 0; ti < nt; ti++) {
        printf("{\"op\": \"stream_copy\", \"threads\": %d, \"gbs\": %.3f}\n",
               threads[ti], bandwidth(0, threads[ti], a, b));
        printf("{\"op\": \"stream_read\", \"threads\": %d, \"gbs\": %.3f}\n",
               threads[ti], bandwidth(1, threads[ti], a, b));
        fflush(stdout);
    }
    free(a);
    free(b);
    if (quick) {
        bench_shape(1024, 1024, (int64_t[]){1, 16}, 2, threads, nt);
        return 0;
    }
    /* --matvec: only m = 1 */
    bench_shape(4096, 4096, (int64_t[]){1, 64, 512}, matvec ? 1 : 3,
                threads, nt);
    bench_shape(11008, 4096, (int64_t[]){1, 64}, matvec ? 1 : 2, threads, nt);
    bench_shape(4096, 11008, (int64_t[]){1, 64}, matvec ? 1 : 2, threads, nt);
    return 0;
}
