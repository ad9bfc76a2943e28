/*
 * bench_fused.c — fused layer_norm, rms_norm and softmax-cross-entropy
 * against the same formulas composed from elementary ops, forward +
 * backward: time (minimum of repeats) and peak
 * tensor memory (tm_memory_stats) of each, and their ratios.  Both sides run
 * in the same process; ratio = composed / fused (> 1: fused is better).
 */
#include <foundry.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_fused: %s failed: %s\n", what, tm_last_error());
    exit(1);
}

typedef enum { LN, RMS, CE } kind;

static tm_tensor *x, *w, *b, *target;

static tm_tensor *composed_norm(bool rms)
{
    int last[1] = {-1};
    tm_tensor *mu = rms ? NULL : tm_mean(x, last, 1, true);
    tm_tensor *xc = rms ? tm_retain(x) : tm_sub(x, mu);
    tm_tensor *sq = tm_mul(xc, xc), *var = tm_mean(sq, last, 1, true);
    tm_tensor *ve = tm_add_scalar(var, 1e-5), *rs = tm_rsqrt(ve);
    tm_tensor *n = tm_mul(xc, rs), *nw = tm_mul(n, w);
    tm_tensor *y = rms ? tm_retain(nw) : tm_add(nw, b);
    tm_free(mu); tm_free(xc); tm_free(sq); tm_free(var); tm_free(ve);
    tm_free(rs); tm_free(n); tm_free(nw);
    return y;
}

static tm_tensor *composed_ce(void)
{
    tm_tensor *lsm = tm_log_softmax(x, 1), *tc = tm_unsqueeze(target, 1);
    tm_tensor *p = tm_gather(lsm, 1, tc), *m = tm_mean(p, NULL, 0, false);
    tm_tensor *l = tm_neg(m);
    tm_free(lsm); tm_free(tc); tm_free(p); tm_free(m);
    return l;
}

/* One forward + backward; returns its time. */
static double step(kind k, bool fused)
{
    double t0 = now();
    tm_tensor *y;
    if (k == CE) {
        tm_cross_entropy_opts o = tm_cross_entropy_defaults();
        y = fused ? tm_cross_entropy(x, target, &o) : composed_ce();
    } else if (fused) {
        y = k == RMS ? tm_rms_norm(x, w, 1e-5) : tm_layer_norm(x, w, b, 1e-5);
    } else {
        y = composed_norm(k == RMS);
    }
    if (!y) die("forward");
    tm_tensor *l = k == CE ? tm_retain(y) : tm_sum(y, NULL, 0, false);
    tm_free(y);
    if (!l || tm_backward(l)) die("backward");
    tm_free(l);
    double dt = now() - t0;
    tm_zero_grad(x); tm_zero_grad(w); tm_zero_grad(b);
    return dt;
}

static void bench(const char *name, kind k)
{
    double best[2] = {1e30, 1e30};
    size_t peak[2];
    for (int f = 0; f < 2; f++) {
        tm_mem_stats s0, s1;
        tm_memory_stats(&s0);
        tm_memory_reset_peak();
        step(k, f);
        tm_memory_stats(&s1);
        peak[f] = s1.peak_bytes - s0.current_bytes;
        for (int r = 0; r < 5; r++) {
            double dt = step(k, f);
            if (dt < best[f]) best[f] = dt;
        }
    }
    printf("%-12s composed %8.3f ms %8.1f MiB | fused %8.3f ms %8.1f MiB"
           " | time x%.2f, memory x%.2f\n", name, best[0] * 1e3,
           peak[0] / 1048576.0, best[1] * 1e3, peak[1] / 1048576.0,
           best[0] / best[1], (double)peak[0] / (double)peak[1]);
}

int main(void)
{
    tm_manual_seed(0);
    x = tm_randn((int64_t[]){4096, 1024}, 2, TM_F32);
    w = tm_randn((int64_t[]){1024}, 1, TM_F32);
    b = tm_randn((int64_t[]){1024}, 1, TM_F32);
    if (!x || !w || !b || tm_requires_grad_(x, true) ||
        tm_requires_grad_(w, true) || tm_requires_grad_(b, true))
        die("setup");
    printf("forward + backward, F32, %d threads\n", tm_get_num_threads());
    bench("layer_norm", LN);
    bench("rms_norm", RMS);
    tm_free(x);
    x = tm_randn((int64_t[]){1024, 32000}, 2, TM_F32);
    target = tm_randint(0, 32000, (int64_t[]){1024}, 1, TM_I64);
    if (!x || !target || tm_requires_grad_(x, true)) die("setup");
    bench("cross_entropy", CE);
    tm_free(x); tm_free(w); tm_free(b); tm_free(target);
    return 0;
}
