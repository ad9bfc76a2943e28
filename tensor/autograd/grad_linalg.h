/*
 * grad_linalg.h — recording (and, in grad_linalg.c, backward functions)
 * of tm_matmul, tm_linear, softmax / log_softmax, layer_norm and rms_norm
 * (internal).  Each recorder is called by the op's front end after the
 * result exists; it records only when tm__ag_needed() says so.  On
 * failure the error is set and the caller frees its result.
 *
 * tm_gemm writes into C in place and records nothing: use tm_matmul or
 * tm_linear for gradients.
 */
#ifndef FOUNDRY_GRAD_LINALG_H
#define FOUNDRY_GRAD_LINALG_H

#include "autograd_impl.h"

tm_status tm__grad_matmul_record(const tm_tensor *a, const tm_tensor *b,
                                 tm_tensor *out);
/* bias may be NULL. */
tm_status tm__grad_linear_record(const tm_tensor *x, const tm_tensor *w,
                                 const tm_tensor *bias, tm_tensor *out);
/* out = (log_)softmax of t along dim d (wrapped). */
tm_status tm__grad_softmax_record(const tm_tensor *t, int d, bool log,
                                  tm_tensor *out);
/* out = layer_norm / rms_norm of x over its last dim; weight, bias may
 * be NULL. */
tm_status tm__grad_norm_record(const tm_tensor *x, const tm_tensor *weight,
                               const tm_tensor *bias, double eps, bool rms,
                               tm_tensor *out);

#endif
