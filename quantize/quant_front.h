/*
 * quant_front.h — the quantized paths of the tensor front ends (internal):
 * tm_linear and tm_matmul hand over to these when an operand is quantized
 * (quant_linear.c), so tensor/ops/ names the quantize module only here.
 */
#ifndef FOUNDRY_QUANT_FRONT_H
#define FOUNDRY_QUANT_FRONT_H

#include "../tensor/autograd/autograd_impl.h"

/* y = x · wᵀ + bias with w quantized [out, in]; errors name fn. */
tm_tensor *tm__q_linear(const char *fn, const tm_tensor *x,
                        const tm_tensor *w, const tm_tensor *bias);
/* tm_matmul(a, b) with exactly one of a, b quantized (b = Wᵀ, or a = W). */
tm_tensor *tm__q_matmul(const char *fn, const tm_tensor *a,
                        const tm_tensor *b);

#endif
