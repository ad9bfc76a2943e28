/*
 * train_xor.c — the smallest complete training program: a 2-8-1 tanh MLP
 * learns XOR with autograd and plain SGD.
 *
 *   out  = fc2(tanh(fc1(x)))
 *   loss = mse(out, y)
 *   tm_backward(loss)          fills tm_grad(p) for every parameter p
 *   p   -= lr * grad(p)        under no-grad, then the grads are zeroed
 *
 * Build: make examples   Run: build/native-cc/examples/train_xor
 */
#include <foundry.h>

#include <stdio.h>
#include <stdlib.h>

#define TRY(x)                                                                \
    do {                                                                      \
        if (!(x)) {                                                           \
            fprintf(stderr, "train_xor: %s failed: %s\n", #x,                 \
                    tm_last_error());                                         \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

int main(void)
{
    static const float xs[] = {0, 0, 0, 1, 1, 0, 1, 1};
    static const float ys[] = {0, 1, 1, 0};
    tm_tensor *x, *y;
    TRY(x = tm_from_buffer(xs, (int64_t[]){4, 2}, 2, TM_F32));
    TRY(y = tm_from_buffer(ys, (int64_t[]){4, 1}, 2, TM_F32));

    tm_rng rng = tm_rng_new(11);
    tm_linear_layer *fc1, *fc2;
    tm_params *ps;
    TRY(fc1 = tm_linear_layer_new(2, 8, true, TM_F32, &rng));
    TRY(fc2 = tm_linear_layer_new(8, 1, true, TM_F32, &rng));
    TRY(ps = tm_params_new());
    TRY(tm_linear_layer_params(fc1, ps, "fc1") == TM_OK);
    TRY(tm_linear_layer_params(fc2, ps, "fc2") == TM_OK);

    double loss = 0;
    for (int step = 0; step <= 500; step++) {
        tm_tensor *h, *a, *out, *l;
        TRY(h = tm_linear_layer_forward(fc1, x));
        TRY(a = tm_tanh(h));
        TRY(out = tm_linear_layer_forward(fc2, a));
        TRY(l = tm_mse_loss(out, y, TM_REDUCTION_MEAN));
        TRY(tm_item(l, &loss) == TM_OK);
        TRY(tm_backward(l) == TM_OK);
        bool prev = tm_no_grad_begin(); /* the update is not recorded */
        for (int i = 0; i < tm_params_count(ps); i++) {
            tm_tensor *p = tm_params_get(ps, i), *d;
            TRY(d = tm_mul_scalar(tm_grad(p), 0.5));
            TRY(tm_sub_(p, d) == TM_OK);
            tm_free(d);
        }
        tm_no_grad_end(prev);
        tm_params_zero_grad(ps);
        if (step % 100 == 0) printf("step %3d  mse %.6f\n", step, loss);
        if (step == 500) {
            float pred[4];
            TRY(tm_copy_to_buffer(out, pred, sizeof pred, TM_F32) == TM_OK);
            printf("xor(0,0)=%.3f xor(0,1)=%.3f xor(1,0)=%.3f "
                   "xor(1,1)=%.3f\n", pred[0], pred[1], pred[2], pred[3]);
        }
        tm_free(l); tm_free(out); tm_free(a); tm_free(h);
    }
    tm_params_free(ps);
    tm_linear_layer_free(fc2);
    tm_linear_layer_free(fc1);
    tm_free(y);
    tm_free(x);
    return loss < 0.01 ? 0 : 1;
}
