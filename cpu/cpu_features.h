/*
 * cpu_features.h — which SIMD kernel family the CPU backend runs.
 *
 * One binary carries every kernel family its architecture can use (x86-64:
 * AVX-512, AVX2+FMA, portable C; aarch64: NEON, portable C) and picks one at
 * run time from the CPU's features.  FOUNDRY_KERNEL=avx512|avx2|neon|portable
 * forces a family (if the CPU supports it; otherwise a warning is logged and
 * the best supported one is used).  Tests force each family in turn with
 * tm__set_isa.
 */
#ifndef FOUNDRY_CPU_FEATURES_H
#define FOUNDRY_CPU_FEATURES_H

#include <stdbool.h>

typedef enum tm__isa {
    TM__ISA_PORTABLE = 0,
    TM__ISA_AVX2 = 1,   /* AVX2 + FMA (x86-64) */
    TM__ISA_AVX512 = 2, /* AVX-512F (x86-64) */
    TM__ISA_NEON = 3,   /* Advanced SIMD (aarch64) */
    TM__ISA_COUNT
} tm__isa;

/* The family in use (decided at first call). */
tm__isa tm__cpu_isa(void);
/* True when this build contains the family and the CPU runs it. */
bool tm__isa_supported(tm__isa isa);
/* Selects a family (for tests and benchmarks); false (and no change) when
 * it is not supported. */
bool tm__set_isa(tm__isa isa);
const char *tm__isa_name(tm__isa isa);

/* Finer features the quantized kernels (cpu/quant/) use within a family:
 * AVX-512 VNNI with AVX512BW/VL (vpdpbusd) under TM__ISA_AVX512, and the
 * aarch64 dot-product extension (sdot) under TM__ISA_NEON.  True when the
 * CPU has it and it is not switched off. */
bool tm__cpu_has_vnni(void);
bool tm__cpu_has_dotprod(void);
/* Switches both off (false) or back to what the CPU has (true), so tests
 * and benchmarks reach the kernels without them. */
void tm__cpu_set_dot_ext(bool enabled);

#endif
