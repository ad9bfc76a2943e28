/* bench_attn_fwd.c — times the CPU attention forward kernel
 * (tm__attn_fwd_f32, the tiled path of the backend's `attention` entry) on
 * the shapes, called directly on buffers: no front end, no
 * autograd.  Prints the min and median of 11 runs after a warm-up, in ms (the
 * min is the figure least disturbed by other work on the machine), and
 * the least process CPU time of a run (all threads, their spinning too).
 *   make build/native-cc/bench/bench_attn_fwd
 *   build/native-cc/bench/bench_attn_fwd [threads] [splits] [shape]
 * (shape 1..5: one of them alone).
 * bench/bench_attn_fwd_torch.py runs PyTorch's SDPA on the same shapes. */
#include "../cpu/attention/attn_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static tm_buf make(int64_t a, int64_t b, int64_t c, int64_t d, int nd)
{
    tm_buf x;
    memset(&x, 0, sizeof x);
    size_t n = (size_t)(a * b * c * d);
    float *m = tm__alloc(sizeof(float) * n, "bench");
    for (size_t i = 0; i < n; i++)
        m[i] = (float)((double)((i * 2654435761u) % 1000) / 500.0 - 1.0);
    x.handle = m;
    x.dtype = TM_F32;
    x.ndim = nd;
    x.shape[0] = a, x.shape[1] = b, x.shape[2] = c, x.shape[3] = d;
    x.strides[3] = 1, x.strides[2] = d, x.strides[1] = c * d;
    x.strides[0] = b * c * d;
    return x;
}

static double now_ms(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(const char *name, int64_t b, int64_t h, int64_t hkv,
                int64_t tq, int64_t tk, int64_t d, bool causal, int splits)
{
    tm_buf q = make(b, h, tq, d, 4), k = make(b, hkv, tk, d, 4);
    tm_buf v = make(b, hkv, tk, d, 4), o = make(b, h, tq, d, 4);
    tm_buf l = make(b, h, tq, 1, 3);
    tm_buf m;
    memset(&m, 0, sizeof m);
    tm_attn_params p = {1.0 / sqrt((double)d), causal, tk - tq, 0, 0.0,
                        tm_rng_new(0)};
    double t[11], c[11];
    tm__attn_fwd_f32(&o, &l, &q, &k, &v, &m, &p, splits);
    for (int r = 0; r < 11; r++) {
        double t0 = now_ms(CLOCK_MONOTONIC);
        double c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        tm__attn_fwd_f32(&o, &l, &q, &k, &v, &m, &p, splits);
        c[r] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        t[r] = now_ms(CLOCK_MONOTONIC) - t0;
    }
    qsort(t, 11, sizeof t[0], cmp);
    qsort(c, 11, sizeof c[0], cmp);
    printf("%-40s min %9.3f  median %9.3f ms  (cpu min %9.3f ms)\n", name,
           t[0], t[5], c[0]);
    tm__dealloc(q.handle), tm__dealloc(k.handle), tm__dealloc(v.handle);
    tm__dealloc(o.handle), tm__dealloc(l.handle);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int splits = argc > 2 ? atoi(argv[2]) : 0;
    int only = argc > 3 ? atoi(argv[3]) : 0; /* 1..4: that shape alone */
    tm_set_num_threads(threads);
    printf("threads %d\n", threads);
    if (!only || only == 1)
        run("B=1 H=8 T=2048 D=64 causal", 1, 8, 8, 2048, 2048, 64, true, 0);
    if (!only || only == 2)
        run("B=8 H=8 T=256 D=64", 8, 8, 8, 256, 256, 64, false, 0);
    if (!only || only == 3)
        run("B=1 H=32 Hkv=8 T=1024 D=128 causal", 1, 32, 8, 1024, 1024, 128,
        true, 0);
    if (!only || only == 4)
        run("decode B=1 H=8 Tq=1 Tk=4096 D=64", 1, 8, 8, 1, 4096, 64, false,
        splits);
    if (!only || only == 5)
        run("decode GQA B=1 H=32 Hkv=8 Tq=1 Tk=4096 D=128", 1, 32, 8, 1,
            4096, 128, false, splits);
    return 0;
}
