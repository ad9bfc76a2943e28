/*
 * vmath.h — vectorized F32 math over contiguous arrays.
 *
 * Each function computes y[i] = f(x[i]) for i < n (y may equal x) with the
 * kernel family chosen by tm__cpu_isa() (cpu_features.h).  All families use
 * the same approximations, so results agree to the documented bound; the
 * maximum relative error of each function over its documented range is
 * stated where it is defined and checked in tests/c/test_vmath.c.
 */
#ifndef FOUNDRY_VMATH_H
#define FOUNDRY_VMATH_H

#include <stdint.h>

void tm__vexp_f32(int64_t n, const float *x, float *y);
void tm__vlog_f32(int64_t n, const float *x, float *y);
void tm__vtanh_f32(int64_t n, const float *x, float *y);
void tm__vsigmoid_f32(int64_t n, const float *x, float *y);
void tm__vrelu_f32(int64_t n, const float *x, float *y);
void tm__vgelu_f32(int64_t n, const float *x, float *y);      /* erf form */
void tm__vgelu_tanh_f32(int64_t n, const float *x, float *y);
void tm__vsilu_f32(int64_t n, const float *x, float *y);

#endif
