/*
 * train_mlp.c — the end-to-end demo: a two-layer MLP learns to classify a
 * three-armed spiral, using only Foundry tensor ops.  Gradients are written
 * out by hand (the autograd engine arrives in a later issue), so every step
 * of backpropagation is visible:
 *
 *   Z = X W1 + b1        X (N,2)  W1 (2,H)  b1 (H)
 *   A = relu(Z)          A (N,H)
 *   L = A W2 + b2        W2 (H,C) b2 (C)    logits (N,C)
 *   loss = mean(logsumexp(L) - L[y])         cross-entropy
 *
 *   dL  = (softmax(L) - onehot(y)) / N
 *   dW2 = A^T dL,  db2 = sum_rows(dL),  dA = dL W2^T
 *   dZ  = dA * (Z > 0)
 *   dW1 = X^T dZ,  db1 = sum_rows(dZ)
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

/* Drops the reference `t` and returns `r` (chains without leaking). */
static tm_tensor *swap(tm_tensor *t, tm_tensor *r)
{
    tm_free(t);
    return r;
}

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

/* w -= lr * g, in place. */
static void sgd(tm_tensor *w, const tm_tensor *g, double lr)
{
    tm_tensor *step = tm_mul_scalar(g, lr);
    TRY(step);
    TRY(tm_sub_(w, step) == TM_OK);
    tm_free(step);
}

int main(void)
{
    tm_tensor *x, *y;
    make_spiral(&x, &y);
    tm_manual_seed(42);
    /* He-style init: randn * sqrt(2 / fan_in) */
    tm_tensor *w1, *b1, *w2, *b2;
    TRY(w1 = swap(NULL, tm_randn((int64_t[]){2, HIDDEN}, 2, TM_F32)));
    TRY(w1 = swap(w1, tm_mul_scalar(w1, sqrt(2.0 / 2))));
    TRY(w2 = tm_randn((int64_t[]){HIDDEN, CLASSES}, 2, TM_F32));
    TRY(w2 = swap(w2, tm_mul_scalar(w2, sqrt(2.0 / HIDDEN))));
    TRY(b1 = tm_zeros((int64_t[]){HIDDEN}, 1, TM_F32));
    TRY(b2 = tm_zeros((int64_t[]){CLASSES}, 1, TM_F32));
    tm_tensor *onehot, *labels_col;
    TRY(onehot = tm_one_hot(y, CLASSES));
    TRY(onehot = swap(onehot, tm_to_dtype(onehot, TM_F32)));
    TRY(labels_col = tm_unsqueeze(y, 1));

    printf("training a %d-%d-%d MLP on a %d-point spiral (%d threads)\n", 2,
           HIDDEN, CLASSES, N, tm_get_num_threads());
    const double lr = 1.0;
    double loss = 0, acc = 0;
    for (int step = 0; step <= STEPS; step++) {
        /* forward */
        tm_tensor *z, *a, *logits, *lse, *picked, *per;
        TRY(z = tm_matmul(x, w1));
        TRY(z = swap(z, tm_add(z, b1))); /* b1 broadcasts over rows */
        TRY(a = tm_relu(z));
        TRY(logits = tm_matmul(a, w2));
        TRY(logits = swap(logits, tm_add(logits, b2)));
        TRY(lse = tm_logsumexp(logits, (int[]){1}, 1, true)); /* (N,1) */
        TRY(picked = tm_gather(logits, 1, labels_col));       /* (N,1) */
        TRY(per = tm_sub(lse, picked));
        tm_tensor *mean;
        TRY(mean = tm_mean(per, NULL, 0, false));
        TRY(tm_item(mean, &loss) == TM_OK);
        tm_free(mean);

        /* backward */
        tm_tensor *p, *dl, *at, *dw2, *db2, *w2t, *da, *mask, *dz, *xt, *dw1,
            *db1;
        TRY(p = tm_sub(logits, lse));
        TRY(p = swap(p, tm_exp(p))); /* softmax */
        TRY(dl = tm_sub(p, onehot));
        TRY(dl = swap(dl, tm_div_scalar(dl, N)));
        TRY(at = tm_transpose(a, 0, 1)); /* a view: no copy */
        TRY(dw2 = tm_matmul(at, dl));
        TRY(db2 = tm_sum(dl, (int[]){0}, 1, false));
        TRY(w2t = tm_transpose(w2, 0, 1));
        TRY(da = tm_matmul(dl, w2t));
        TRY(mask = tm_binary_scalar(TM_OP_GT, z, 0.0));
        TRY(dz = tm_mul(da, mask));
        TRY(xt = tm_transpose(x, 0, 1));
        TRY(dw1 = tm_matmul(xt, dz));
        TRY(db1 = tm_sum(dz, (int[]){0}, 1, false));

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
            sgd(w1, dw1, lr); sgd(b1, db1, lr);
            sgd(w2, dw2, lr); sgd(b2, db2, lr);
        }
        tm_tensor *all[] = {z, a, logits, lse, picked, per, p, dl, at, dw2,
                            db2, w2t, da, mask, dz, xt, dw1, db1};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) tm_free(all[i]);
    }
    tm_free(w1); tm_free(b1); tm_free(w2); tm_free(b2);
    tm_free(onehot); tm_free(labels_col); tm_free(x); tm_free(y);

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
