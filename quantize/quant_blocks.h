/*
 * quant_blocks.h — the byte layouts of the block-quantized dtypes, exactly
 * as ggml defines them (so GGUF tensor bytes are Foundry tensor bytes).
 * Halves are IEEE binary16 bit patterns, stored little-endian; every
 * struct is packed by construction (sizes are checked below).
 *
 * 32-value formats (value i of a block, 0 <= i < 32):
 *   Q8_0  x = d * qs[i]
 *   Q4_0  x = d * (q - 8),  q = i < 16 ? qs[i] & 15 : qs[i - 16] >> 4
 *   Q4_1  x = d * q + m     (q as Q4_0's, unsigned)
 *   Q5_0  x = d * (q - 16), q = Q4_0's nibble | bit i of qh (LE u32) << 4
 *   Q5_1  x = d * q + m     (q as Q5_0's)
 *   Q8_1  x = d * qs[i];  s = d * sum(qs) (for the Q4_1/Q5_1 dot product)
 * 256-value K-quants (eight sub-blocks of 32, sixteen of 16 for Q6_K):
 *   Q4_K  x = d * sc[j] * q - dmin * m[j], j = i / 32, q a nibble: for
 *         the 64-value group g = i / 64, qs[32 g .. 32 g + 31] hold the
 *         group's first 32 values in low nibbles and the next 32 in high
 *         nibbles.  sc / m are 6-bit, packed into scales[12]:
 *           j < 4: sc = scales[j] & 63,  m = scales[j + 4] & 63
 *           j >= 4: sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4
 *                   m  = (scales[j + 4] >> 4) | (scales[j]     >> 6) << 4
 *   Q5_K  as Q4_K, plus the fifth bit of value i in qh: bit (i / 32) of
 *         qh[i % 32]
 *   Q6_K  x = d * scales[i / 16] * (q - 32), q = 4 low bits from ql and
 *         2 high bits from qh (ggml's interleave: per 128-value half h,
 *         l < 32: q(l) = ql[l] & 15 | (qh[l] & 3) << 4,
 *         q(l+32) = ql[l+32] & 15 | ((qh[l] >> 2) & 3) << 4,
 *         q(l+64) = ql[l] >> 4 | ((qh[l] >> 4) & 3) << 4,
 *         q(l+96) = ql[l+32] >> 4 | ((qh[l] >> 6) & 3) << 4,
 *         with ql, qh, scales advanced by 64, 32, 8 per half)
 *   Q8_K  x = d * qs[i] (d an F32); bsums[j] = sum of qs[16 j .. 16 j+15]
 */
#ifndef FOUNDRY_QUANT_BLOCKS_H
#define FOUNDRY_QUANT_BLOCKS_H

#include <assert.h>
#include <stdint.h>

#define TM__QK 32   /* values per block of the 32-value formats */
#define TM__QK_K 256 /* values per K-quant super-block */
#define TM__K_SCALE_SIZE 12

typedef uint16_t tm__half; /* binary16 bits */

typedef struct { tm__half d; int8_t qs[TM__QK]; } tm__block_q8_0;
typedef struct { tm__half d; uint8_t qs[TM__QK / 2]; } tm__block_q4_0;
typedef struct { tm__half d, m; uint8_t qs[TM__QK / 2]; } tm__block_q4_1;
typedef struct { tm__half d, s; int8_t qs[TM__QK]; } tm__block_q8_1;
typedef struct {
    tm__half d;
    uint8_t qh[4];
    uint8_t qs[TM__QK / 2];
} tm__block_q5_0;
typedef struct {
    tm__half d, m;
    uint8_t qh[4];
    uint8_t qs[TM__QK / 2];
} tm__block_q5_1;
typedef struct {
    tm__half d, dmin;
    uint8_t scales[TM__K_SCALE_SIZE];
    uint8_t qs[TM__QK_K / 2];
} tm__block_q4_K;
typedef struct {
    tm__half d, dmin;
    uint8_t scales[TM__K_SCALE_SIZE];
    uint8_t qh[TM__QK_K / 8];
    uint8_t qs[TM__QK_K / 2];
} tm__block_q5_K;
typedef struct {
    uint8_t ql[TM__QK_K / 2];
    uint8_t qh[TM__QK_K / 4];
    int8_t scales[TM__QK_K / 16];
    tm__half d;
} tm__block_q6_K;
typedef struct {
    float d;
    int8_t qs[TM__QK_K];
    int16_t bsums[TM__QK_K / 16];
} tm__block_q8_K;

static_assert(sizeof(tm__block_q8_0) == 34, "q8_0 block");
static_assert(sizeof(tm__block_q4_0) == 18, "q4_0 block");
static_assert(sizeof(tm__block_q4_1) == 20, "q4_1 block");
static_assert(sizeof(tm__block_q8_1) == 36, "q8_1 block");
static_assert(sizeof(tm__block_q5_0) == 22, "q5_0 block");
static_assert(sizeof(tm__block_q5_1) == 24, "q5_1 block");
static_assert(sizeof(tm__block_q4_K) == 144, "q4_K block");
static_assert(sizeof(tm__block_q5_K) == 176, "q5_K block");
static_assert(sizeof(tm__block_q6_K) == 210, "q6_K block");
static_assert(sizeof(tm__block_q8_K) == 292, "q8_K block");

#endif
