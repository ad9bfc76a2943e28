/*
 * bench_attn_fwd_tile.c — the tiled attention forward's micro-kernels
 * (cpu/attention/attn_fwd.h) alone, on one hot AF_BQ x AF_KT tile, D = 64:
 * the score product, the value product, and the whole step (scores, row
 * max, exp, P.V) as the driver runs it.  Shows how close a full call
 * (build/native-cc/bench/bench_attn_fwd) is to what the kernels can
 * do with every operand in cache.
 *   make build/native-cc/bench/bench_attn_fwd_tile
 *   build/native-cc/bench/bench_attn_fwd_tile
 * Single thread, process CPU time, best of 5 blocks.
 */
#include "../cpu/attention/attn_fwd.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    enum { NR = AF_BQ, D = 64, REPS = 20000 };
    const tm__attn_fwd_kernels *k = tm__attn_fwd_kernels_now();
    float *q = malloc(sizeof(float) * NR * D);
    float *kt = malloc(sizeof(float) * D * AF_KT);
    float *s = malloc(sizeof(float) * NR * AF_KT);
    float *v = malloc(sizeof(float) * AF_KT * D);
    float *o = malloc(sizeof(float) * NR * D);
    if (!q || !kt || !s || !v || !o) return 1;
    for (int i = 0; i < NR * D; i++) q[i] = 0.01f * (float)(i % 7);
    for (int i = 0; i < D * AF_KT; i++) kt[i] = 0.01f * (float)(i % 5);
    for (int i = 0; i < NR * AF_KT; i++) s[i] = 0.001f * (float)(i % 3);
    for (int i = 0; i < AF_KT * D; i++) v[i] = 0.01f * (float)(i % 11);
    for (int i = 0; i < NR * D; i++) o[i] = 0.0f;
    double ts = 1e9, tp = 1e9, tall = 1e9;
    for (int b = 0; b < 5; b++) {
        double t0 = now_s();
        for (int r = 0; r < REPS; r++)
            k->s_packed(NR, D, q, D, kt, s, 0.125f);
        double t1 = now_s();
        for (int r = 0; r < REPS; r++)
            k->pv(NR, AF_KT, D, s, AF_KT, v, D, o, D);
        double t2 = now_s();
        for (int r = 0; r < REPS; r++) {
            k->s_packed(NR, D, q, D, kt, s, 0.125f);
            for (int i = 0; i < NR; i++)
                k->row_exp(s + i * AF_KT, k->row_max(s + i * AF_KT));
            k->pv(NR, AF_KT, D, s, AF_KT, v, D, o, D);
        }
        double t3 = now_s();
        if (t1 - t0 < ts) ts = t1 - t0;
        if (t2 - t1 < tp) tp = t2 - t1;
        if (t3 - t2 < tall) tall = t3 - t2;
    }
    double fl = 2.0 * NR * D * AF_KT * REPS;
    printf("%s, %d x %d tile, D=%d\n", k->name, NR, AF_KT, D);
    printf("scores   %7.1f GFLOP/s\n", fl / ts * 1e-9);
    printf("P.V      %7.1f GFLOP/s\n", fl / tp * 1e-9);
    printf("step     %7.1f GFLOP/s (both products), %.2f us a tile\n",
           2 * fl / tall * 1e-9, tall / REPS * 1e6);
    free(q), free(kt), free(s), free(v), free(o);
    return 0;
}
