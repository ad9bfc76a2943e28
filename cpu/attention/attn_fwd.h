/*
 * attn_fwd.h — the tiled F32 attention forward (internal): the per-family
 * micro-kernels (attn_fwd_tmpl.h, instantiated in attn_fwd_portable.c,
 * attn_fwd_avx2.c, attn_fwd_avx512.c, attn_fwd_neon.c) and the tile sizes
 * the driver (attn_fwd.c) and the kernels agree on.
 */
#ifndef FOUNDRY_CPU_ATTN_FWD_H
#define FOUNDRY_CPU_ATTN_FWD_H

#include <stdint.h>

/* Query rows per tile and keys per tile.  A packed key tile is its keys'
 * transpose, AF_KT floats a row; score rows are AF_KT wide (keys past the
 * end of the call hold -inf).  64 x 128 measured 2-4% faster than 64 x 64
 * (fewer per-row softmax steps) and no slower than 32 or 128 rows. */
#define AF_BQ 64
#define AF_KT 128

/* One kernel family.  w: floats per vector; the padded widths dp and dvp
 * the driver uses are multiples of it.  Every float array is row-major
 * with the leading dimension given (in floats). */
typedef struct tm__attn_fwd_kernels {
    const char *name;
    int w;
    /* s[r][j] = scale * q[r] . kt[., j] for r < nr, j < AF_KT, from a
     * packed key tile kt (d rows of AF_KT). */
    void (*s_packed)(int64_t nr, int64_t d, const float *q, int64_t ldq,
                     const float *kt, float *s, float scale);
    /* s[r][j] = scale * q[r] . k[j] for r < nr, j < nk, from key rows
     * (dp, a multiple of w, floats each). */
    void (*s_rows)(int64_t nr, int64_t nk, int64_t dp, const float *q,
                   int64_t ldq, const float *k, int64_t ldk, float *s,
                   int64_t lds, float scale);
    /* o[r] += sum_{j < nk} p[r][j] v[j] for r < nr over dvp (a multiple
     * of w) columns. */
    void (*pv)(int64_t nr, int64_t nk, int64_t dvp, const float *p,
               int64_t ldp, const float *v, int64_t ldv, float *o,
               int64_t ldo);
    /* max of s[0..AF_KT) (-inf when every element is -inf). */
    float (*row_max)(const float *s);
    /* s[j] = exp(s[j] - m) for j < AF_KT (m finite); returns their sum. */
    float (*row_exp)(float *s, float m);
    /* x[c] *= a for c < n (n a multiple of w). */
    void (*scale)(int64_t n, float *x, float a);
} tm__attn_fwd_kernels;

extern const tm__attn_fwd_kernels tm__attn_fwd_portable;
#if defined(__x86_64__)
extern const tm__attn_fwd_kernels tm__attn_fwd_avx2, tm__attn_fwd_avx512;
#endif
#if defined(__aarch64__)
extern const tm__attn_fwd_kernels tm__attn_fwd_neon;
#endif

/* The family tm__cpu_isa() selects (attn_fwd.c). */
const tm__attn_fwd_kernels *tm__attn_fwd_kernels_now(void);

#endif
