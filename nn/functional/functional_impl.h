/* functional_impl.h — checks shared by the composed functional ops of
 * nn/functional (activations, distances, losses). */
#ifndef TM_NN_FUNCTIONAL_IMPL_H
#define TM_NN_FUNCTIONAL_IMPL_H

#include "foundry/nn_functional.h"

/* x is a tensor (TM_EINVAL naming `what` otherwise) of a float dtype
 * (TM_EDTYPE otherwise); false with the error set, for function fn. */
bool tm__nn_check_float(const char *fn, const tm_tensor *x,
                        const char *what);

#endif
