/*
 * bench_attn_bwd.c — times the CPU attention backward kernel (cpu/
 * attention/attn_bwd.c) with each strategy and the reference forward's out
 * and lse, on F32 tensors, calling the kernel directly:
 *     bench_attn_bwd B H Hkv T D causal [threads] [reps] [strategy]
 * prints the minimum over reps in ms for AUTO, SPLIT and FUSED, and the
 * minimum CPU time of the process (steadier on a loaded machine), and the
 * kernel's scratch peak (tm_memory_stats).  Built by
 * `make build/native-cc/bench/bench_attn_bwd`; not part of `make bench`.
 */
#include "../cpu/attention/attn_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static tm_tensor *rnd(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t sh[4] = {a, b, c, d};
    tm_tensor *t = tm_empty(sh, 4, TM_F32);
    if (!t) exit(1);
    float *x = tm_data(t);
    uint64_t s = (uint64_t)(a * 131 + b * 17 + c * 7 + d);
    for (int64_t i = 0; i < a * b * c * d; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(s >> 40) / 16777216.0 * 2 - 1);
    }
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: bench_attn_bwd B H Hkv T D causal "
                        "[threads] [reps]\n");
        return 2;
    }
    int64_t B = atoll(argv[1]), H = atoll(argv[2]), Hkv = atoll(argv[3]),
            T = atoll(argv[4]), D = atoll(argv[5]);
    bool causal = atoi(argv[6]) != 0;
    int threads = argc > 7 ? atoi(argv[7]) : 2, reps = argc > 8 ? atoi(argv[8])
                                                                : 5;
    tm_set_num_threads(threads);
    tm_tensor *q = rnd(B, H, T, D), *k = rnd(B, Hkv, T, D),
              *v = rnd(B, Hkv, T, D), *g = rnd(B, H, T, D);
    tm_tensor *out = rnd(B, H, T, D), *lse = rnd(B, H, T, 1);
    tm_tensor *dq = rnd(B, H, T, D), *dk = rnd(B, Hkv, T, D),
              *dv = rnd(B, Hkv, T, D);
    tm_attn_params p = {.scale = 1.0 / sqrt((double)D), .causal = causal};
    tm_buf bq = tm__buf(q), bk = tm__buf(k), bv = tm__buf(v),
           bg = tm__buf(g), bo = tm__buf(out), bl = tm__buf(lse),
           bdq = tm__buf(dq), bdk = tm__buf(dk), bdv = tm__buf(dv), none;
    memset(&none, 0, sizeof none);
    bl.ndim = 3;
    double t0 = now();
    if (tm__cpu_attention(NULL, &bo, &bl, &bq, &bk, &bv, &none, &p)) return 1;
    double tf = now() - t0;
    const char *names[] = {"auto", "split", "fused"};
    printf("B=%lld H=%lld Hkv=%lld T=%lld D=%lld causal=%d threads=%d "
           "(forward used: %.1f ms)\n",
           (long long)B, (long long)H, (long long)Hkv, (long long)T,
           (long long)D, causal, threads, tf * 1e3);
    int only = argc > 9 ? atoi(argv[9]) : -1; /* 0 auto, 1 split, 2 fused */
    for (int s = 0; s < 3; s++) {
        if (only >= 0 && s != only) continue;
        double best = 1e30, cbest = 1e30;
        tm_mem_stats m0, m1;
        tm_memory_stats(&m0);
        tm_memory_reset_peak();
        for (int r = 0; r < reps; r++) {
            double c0 = cpu_now();
            t0 = now();
            if (tm__attn_bwd_f32(&bdq, &bdk, &bdv, &bg, &bq, &bk, &bv, &bo,
                                 &bl, &none, &p, (tm__attn_bwd_strategy)s))
                return 1;
            double t = now() - t0, c = cpu_now() - c0;
            if (t < best) best = t;
            if (c < cbest) cbest = c;
        }
        tm_memory_stats(&m1);
        printf("  backward %-5s %8.2f ms (cpu time of all threads %8.2f "
               "ms), scratch peak %.2f MB\n",
               names[s], best * 1e3, cbest * 1e3,
               (double)(m1.peak_bytes - m0.current_bytes) / 1e6);
    }
    tm_free(q), tm_free(k), tm_free(v), tm_free(g), tm_free(out);
    tm_free(lse), tm_free(dq), tm_free(dk), tm_free(dv);
    return 0;
}
