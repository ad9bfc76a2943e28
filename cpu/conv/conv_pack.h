/* conv_pack.h — packing loops of the implicit-GEMM convolution (internal
 * to cpu/conv/). */
#ifndef FOUNDRY_CONV_PACK_H
#define FOUNDRY_CONV_PACK_H

#include <stdint.h>

/* One B panel straight from the padded input: dst[p*nr + j] =
 * base[koff[p] + j] for j < cols, 0 for cols <= j < nr (p < kc). */
void tm__cvp_pack_rows(float *restrict dst, const float *base,
                       const int64_t *koff, int64_t kc, int64_t cols, int nr);

/* A transposing pack: dst[p*w + r] = rows[r][p] for r < nrows, 0 for
 * nrows <= r < w (p < kc).  An A panel of the weight-gradient product
 * (rows of gp) or a B panel of it (rows of xp at the patch offsets). */
void tm__cvp_pack_t(float *restrict dst, const float *const *rows,
                    int nrows, int64_t kc, int w);

#endif
