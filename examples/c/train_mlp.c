/*
 * train_mlp.c — the end-to-end demo: a two-layer MLP learns to classify a
 * three-armed spiral with Foundry's autograd, nn layers and plain SGD:
 *
 *   logits = fc2(relu(fc1(X)))     X (N,2)  fc1: 2 -> H  fc2: H -> C
 *   loss   = cross_entropy(logits, y)
 *   tm_backward(loss)              fills tm_grad(p) for every parameter p
 *   p -= lr * grad(p)              under no-grad, then the grads are zeroed
 *
 * Build and run: make demo
 */
#include <foundry.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { PER_CLASS = 200, CLASSES = 3, HIDDEN = 64, STEPS = 1500 };
#define N (PER_CLASS * CLASSES)

#define TRY(x)                                                                \
    do {                                                                      \
        if (!(x)) {                                                           \
            fprintf(stderr, "train_mlp: %s failed: %s\n", #x,                 \
                    tm_last_error());                                         \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* A spiral with CLASSES arms: point i of class c sits at radius r along
 * angle 4c + 4r (+ noise). */
static void make_spiral(tm_tensor **x, tm_tensor **y)
{
    static float pts[N][2];
    static int64_t labels[N];
    tm_rng rng = tm_rng_new(7);
    tm_tensor *noise = tm_zeros((int64_t[]){N}, 1, TM_F32);
    TRY(noise);
    TRY(tm_normal_(noise, 0.0, 0.2, &rng) == TM_OK);
    const float *nz = tm_data(noise);
    for (int c = 0; c < CLASSES; c++) {
        for (int i = 0; i < PER_CLASS; i++) {
            int k = c * PER_CLASS + i;
            float r = (float)i / PER_CLASS;
            float t = 4.0f * (float)c + 4.0f * r + nz[k];
            pts[k][0] = r * sinf(t);
            pts[k][1] = r * cosf(t);
            labels[k] = c;
        }
    }
    tm_free(noise);
    TRY(*x = tm_from_buffer(pts, (int64_t[]){N, 2}, 2, TM_F32));
    TRY(*y = tm_from_buffer(labels, (int64_t[]){N}, 1, TM_I64));
}

/* One plain SGD step over every parameter of the set: p -= lr * grad(p).
 * Parameters require grad, so in-place updates run under no-grad. */
static void sgd_step(tm_params *ps, double lr)
{
    bool prev = tm_no_grad_begin();
    for (int i = 0; i < tm_params_count(ps); i++) {
        tm_tensor *p = tm_params_get(ps, i), *step;
        TRY(step = tm_mul_scalar(tm_grad(p), lr));
        TRY(tm_sub_(p, step) == TM_OK);
        tm_free(step);
    }
    tm_no_grad_end(prev);
    tm_params_zero_grad(ps);
}

int main(void)
{
    tm_tensor *x, *y;
    make_spiral(&x, &y);
    /* PyTorch's default Linear init: U(+-1/sqrt(fan_in)) */
    tm_rng rng = tm_rng_new(42);
    tm_linear_layer *fc1, *fc2;
    TRY(fc1 = tm_linear_layer_new(2, HIDDEN, true, TM_F32, &rng));
    TRY(fc2 = tm_linear_layer_new(HIDDEN, CLASSES, true, TM_F32, &rng));
    tm_params *ps;
    TRY(ps = tm_params_new());
    TRY(tm_linear_layer_params(fc1, ps, "fc1") == TM_OK);
    TRY(tm_linear_layer_params(fc2, ps, "fc2") == TM_OK);

    printf("training a %d-%d-%d MLP on a %d-point spiral (%d threads)\n", 2,
           HIDDEN, CLASSES, N, tm_get_num_threads());
    const double lr = 1.0;
    double loss = 0, acc = 0;
    for (int step = 0; step <= STEPS; step++) {
        tm_tensor *z, *a, *logits, *l;
        TRY(z = tm_linear_layer_forward(fc1, x));
        TRY(a = tm_relu(z));
        TRY(logits = tm_linear_layer_forward(fc2, a));
        TRY(l = tm_cross_entropy(logits, y, NULL));
        TRY(tm_item(l, &loss) == TM_OK);

        if (step % 250 == 0 || step == STEPS) {
            tm_tensor *pred, *hit, *hits;
            TRY(pred = tm_argmax(logits, 1, false));
            TRY(hit = tm_eq(pred, y));
            TRY(hits = tm_mean(hit, NULL, 0, false));
            TRY(tm_item(hits, &acc) == TM_OK);
            printf("step %4d  loss %.4f  accuracy %5.1f%%\n", step, loss,
                   100 * acc);
            tm_free(pred); tm_free(hit); tm_free(hits);
        }
        if (step < STEPS) {
            TRY(tm_backward(l) == TM_OK);
            sgd_step(ps, lr);
        }
        /* without a backward the graph goes when its last tensor does */
        tm_free(z); tm_free(a); tm_free(logits); tm_free(l);
    }
    tm_params_free(ps);
    tm_linear_layer_free(fc1); tm_linear_layer_free(fc2);
    tm_free(x); tm_free(y);

    tm_mem_stats ms;
    tm_memory_stats(&ms);
    printf("final: loss %.4f, accuracy %.1f%%; peak tensor memory %.1f KiB, "
           "%zu bytes still allocated\n", loss, 100 * acc,
           ms.peak_bytes / 1024.0, ms.current_bytes);
    if (acc < 0.9) {
        fprintf(stderr, "train_mlp: accuracy %.3f is below 0.9\n", acc);
        return 1;
    }
    return 0;
}
