/*
 * cpu_rows_impl.h — the F32 row primitives shared by cpu_rows.c (portable
 * loops and the dispatcher) and cpu_rows_avx512.c (AVX-512 loops).
 */
#ifndef FOUNDRY_CPU_ROWS_IMPL_H
#define FOUNDRY_CPU_ROWS_IMPL_H

#include <stdint.h>

/* ------------------------------------------------------- F32 primitives
 * One set of loops per kernel family (portable here, AVX-512 in
 * cpu_rows_avx512.c), all computing the same formulas. */

typedef struct {
    /* max of x ignoring NaN (-inf when none) */
    float (*max)(const float *x, int64_t n);
    /* sum of x in double */
    double (*sum)(const float *x, int64_t n);
    /* y = x - m;  y *= s;  y = (x - m) - l */
    void (*sub)(const float *x, float *y, int64_t n, float m);
    void (*scale)(float *y, int64_t n, float s);
    void (*logsub)(const float *x, float *y, int64_t n, float m, float l);
    /* s1 = sum(x - x0), s2 = sum((x - x0)^2) in double */
    void (*stats)(const float *x, int64_t n, double x0, double *s1,
                  double *s2);
    /* y = (((x - fm) - fd) * r) * w + b (w, b may be NULL) */
    void (*norm)(const float *x, float *y, int64_t n, float fm, float fd,
                 float r, const float *w, const float *b);
} tm__rows_f32_ops;

#if defined(__x86_64__)
/* The AVX-512 family (cpu_rows_avx512.c). */
extern const tm__rows_f32_ops tm__rows_avx512;
#endif

#endif
