/* chacha20_poly1305.c — ChaCha20, Poly1305 and their AEAD as RFC 8439
 * specifies them (crypto.h).  Poly1305 works in five 26-bit limbs with
 * 64-bit products (portable C, no 128-bit integers). */
#include "crypto.h"

#include "../tensor/runtime/runtime_impl.h"

#include <string.h>

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* ---------------------------------------------------------------- ChaCha20 */

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

#define QR(a, b, c, d)                                                        \
    a += b, d ^= a, d = rol(d, 16), c += d, b ^= c, b = rol(b, 12),           \
    a += b, d ^= a, d = rol(d, 8), c += d, b ^= c, b = rol(b, 7)

/* One 64-byte key-stream block (RFC 8439 section 2.3). */
static void chacha_block(const uint8_t key[32], uint32_t counter,
                         const uint8_t nonce[12], uint8_t out[64])
{
    uint32_t s[16], x[16];
    s[0] = 0x61707865, s[1] = 0x3320646e, s[2] = 0x79622d32, s[3] = 0x6b206574;
    for (int i = 0; i < 8; i++) s[4 + i] = le32(key + 4 * i);
    s[12] = counter;
    for (int i = 0; i < 3; i++) s[13 + i] = le32(nonce + 4 * i);
    memcpy(x, s, sizeof s);
    for (int r = 0; r < 10; r++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) put_le32(out + 4 * i, x[i] + s[i]);
    tm__wipe(s, sizeof s);
    tm__wipe(x, sizeof x);
}

void tm__chacha20_xor(const uint8_t key[32], uint32_t counter,
                      const uint8_t nonce[12], const void *in, void *out,
                      size_t n)
{
    const uint8_t *src = in;
    uint8_t *dst = out, ks[64];
    while (n) {
        chacha_block(key, counter++, nonce, ks);
        size_t take = n < 64 ? n : 64;
        for (size_t i = 0; i < take; i++) dst[i] = src[i] ^ ks[i];
        src += take, dst += take, n -= take;
    }
    tm__wipe(ks, sizeof ks);
}

/* ---------------------------------------------------------------- Poly1305 */

#define M26 0x3ffffffu

void tm__poly1305_init(tm__poly1305_ctx *p, const uint8_t key[32])
{
    /* r clamped as the RFC says, split into 26-bit limbs */
    p->r[0] = le32(key + 0) & 0x3ffffff;
    p->r[1] = (le32(key + 3) >> 2) & 0x3ffff03;
    p->r[2] = (le32(key + 6) >> 4) & 0x3ffc0ff;
    p->r[3] = (le32(key + 9) >> 6) & 0x3f03fff;
    p->r[4] = (le32(key + 12) >> 8) & 0x00fffff;
    for (int i = 0; i < 5; i++) p->h[i] = 0;
    for (int i = 0; i < 4; i++) p->pad[i] = le32(key + 16 + 4 * i);
    p->n = 0;
}

/* h = (h + m) * r mod 2^130 - 5 for one 16-byte block; hibit is 2^128 for
 * a full block, 0 for the padded last one (its 1 byte is in m). */
static void poly_block(tm__poly1305_ctx *p, const uint8_t m[16], uint32_t hibit)
{
    const uint32_t r0 = p->r[0], r1 = p->r[1], r2 = p->r[2], r3 = p->r[3],
                   r4 = p->r[4];
    const uint32_t s1 = r1 * 5, s2 = r2 * 5, s3 = r3 * 5, s4 = r4 * 5;
    uint32_t h0 = p->h[0] + (le32(m + 0) & M26);
    uint32_t h1 = p->h[1] + ((le32(m + 3) >> 2) & M26);
    uint32_t h2 = p->h[2] + ((le32(m + 6) >> 4) & M26);
    uint32_t h3 = p->h[3] + ((le32(m + 9) >> 6) & M26);
    uint32_t h4 = p->h[4] + ((le32(m + 12) >> 8) | hibit);
    uint64_t d0 = (uint64_t)h0 * r0 + (uint64_t)h1 * s4 + (uint64_t)h2 * s3 +
                  (uint64_t)h3 * s2 + (uint64_t)h4 * s1;
    uint64_t d1 = (uint64_t)h0 * r1 + (uint64_t)h1 * r0 + (uint64_t)h2 * s4 +
                  (uint64_t)h3 * s3 + (uint64_t)h4 * s2;
    uint64_t d2 = (uint64_t)h0 * r2 + (uint64_t)h1 * r1 + (uint64_t)h2 * r0 +
                  (uint64_t)h3 * s4 + (uint64_t)h4 * s3;
    uint64_t d3 = (uint64_t)h0 * r3 + (uint64_t)h1 * r2 + (uint64_t)h2 * r1 +
                  (uint64_t)h3 * r0 + (uint64_t)h4 * s4;
    uint64_t d4 = (uint64_t)h0 * r4 + (uint64_t)h1 * r3 + (uint64_t)h2 * r2 +
                  (uint64_t)h3 * r1 + (uint64_t)h4 * r0;
    uint32_t c = (uint32_t)(d0 >> 26);
    h0 = (uint32_t)d0 & M26;
    d1 += c, c = (uint32_t)(d1 >> 26), h1 = (uint32_t)d1 & M26;
    d2 += c, c = (uint32_t)(d2 >> 26), h2 = (uint32_t)d2 & M26;
    d3 += c, c = (uint32_t)(d3 >> 26), h3 = (uint32_t)d3 & M26;
    d4 += c, c = (uint32_t)(d4 >> 26), h4 = (uint32_t)d4 & M26;
    h0 += c * 5, c = h0 >> 26, h0 &= M26, h1 += c;
    p->h[0] = h0, p->h[1] = h1, p->h[2] = h2, p->h[3] = h3, p->h[4] = h4;
}

void tm__poly1305_update(tm__poly1305_ctx *p, const void *vm, size_t n)
{
    const uint8_t *m = vm;
    if (!n) return;
    if (p->n) {
        size_t take = 16 - p->n < n ? 16 - p->n : n;
        memcpy(p->buf + p->n, m, take);
        p->n += take, m += take, n -= take;
        if (p->n < 16) return;
        poly_block(p, p->buf, 1u << 24);
        p->n = 0;
    }
    for (; n >= 16; m += 16, n -= 16) poly_block(p, m, 1u << 24);
    if (n) memcpy(p->buf, m, n);
    p->n = n;
}

void tm__poly1305_final(tm__poly1305_ctx *p, uint8_t tag[16])
{
    if (p->n) {
        uint8_t last[16] = {0};
        memcpy(last, p->buf, p->n);
        last[p->n] = 1;
        poly_block(p, last, 0);
    }
    uint32_t h0 = p->h[0], h1 = p->h[1], h2 = p->h[2], h3 = p->h[3],
             h4 = p->h[4], c;
    c = h1 >> 26, h1 &= M26, h2 += c;
    c = h2 >> 26, h2 &= M26, h3 += c;
    c = h3 >> 26, h3 &= M26, h4 += c;
    c = h4 >> 26, h4 &= M26, h0 += c * 5;
    c = h0 >> 26, h0 &= M26, h1 += c;
    /* g = h - (2^130 - 5); keep h when that is negative, without a branch */
    uint32_t g0 = h0 + 5;
    c = g0 >> 26, g0 &= M26;
    uint32_t g1 = h1 + c;
    c = g1 >> 26, g1 &= M26;
    uint32_t g2 = h2 + c;
    c = g2 >> 26, g2 &= M26;
    uint32_t g3 = h3 + c;
    c = g3 >> 26, g3 &= M26;
    uint32_t g4 = h4 + c - (1u << 26);
    uint32_t keep_g = (g4 >> 31) - 1; /* all ones when g >= 0 */
    h0 = (h0 & ~keep_g) | (g0 & keep_g);
    h1 = (h1 & ~keep_g) | (g1 & keep_g);
    h2 = (h2 & ~keep_g) | (g2 & keep_g);
    h3 = (h3 & ~keep_g) | (g3 & keep_g);
    h4 = (h4 & ~keep_g) | (g4 & keep_g);
    /* h mod 2^128 as four words, plus the pad (s) */
    uint32_t w0 = h0 | h1 << 26, w1 = h1 >> 6 | h2 << 20,
             w2 = h2 >> 12 | h3 << 14, w3 = h3 >> 18 | h4 << 8;
    uint64_t f = (uint64_t)w0 + p->pad[0];
    put_le32(tag + 0, (uint32_t)f);
    f = (uint64_t)w1 + p->pad[1] + (f >> 32);
    put_le32(tag + 4, (uint32_t)f);
    f = (uint64_t)w2 + p->pad[2] + (f >> 32);
    put_le32(tag + 8, (uint32_t)f);
    f = (uint64_t)w3 + p->pad[3] + (f >> 32);
    put_le32(tag + 12, (uint32_t)f);
    tm__wipe(p, sizeof *p);
}

void tm__poly1305(const uint8_t key[32], const void *m, size_t n,
                  uint8_t tag[16])
{
    tm__poly1305_ctx p;
    tm__poly1305_init(&p, key);
    tm__poly1305_update(&p, m, n);
    tm__poly1305_final(&p, tag);
}

/* -------------------------------------------------------------------- AEAD */

/* The tag over aad and ct (RFC 8439 section 2.8): the one-time key is the
 * first half of key-stream block 0. */
static void aead_tag(const uint8_t key[32], const uint8_t nonce[12],
                     const void *aad, size_t an, const void *ct, size_t n,
                     uint8_t tag[16])
{
    static const uint8_t zeros[16] = {0};
    uint8_t blk[64], lens[16];
    chacha_block(key, 0, nonce, blk);
    tm__poly1305_ctx p;
    tm__poly1305_init(&p, blk);
    tm__poly1305_update(&p, aad, an);
    tm__poly1305_update(&p, zeros, (16 - an % 16) % 16);
    tm__poly1305_update(&p, ct, n);
    tm__poly1305_update(&p, zeros, (16 - n % 16) % 16);
    for (int i = 0; i < 8; i++) {
        lens[i] = (uint8_t)((uint64_t)an >> (8 * i));
        lens[8 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    tm__poly1305_update(&p, lens, sizeof lens);
    tm__poly1305_final(&p, tag);
    tm__wipe(blk, sizeof blk);
}

void tm__aead_seal(const uint8_t key[32], const uint8_t nonce[12],
                   const void *aad, size_t an, const void *pt, size_t n,
                   void *ct, uint8_t tag[16])
{
    tm__chacha20_xor(key, 1, nonce, pt, ct, n);
    aead_tag(key, nonce, aad, an, ct, n, tag);
}

tm_status tm__aead_open(const uint8_t key[32], const uint8_t nonce[12],
                        const void *aad, size_t an, const void *ct, size_t n,
                        const uint8_t tag[16], void *pt)
{
    uint8_t want[16];
    aead_tag(key, nonce, aad, an, ct, n, want);
    bool ok = tm__ct_equal(want, tag, sizeof want);
    tm__wipe(want, sizeof want);
    if (!ok) {
        if (n) memset(pt, 0, n);
        return TM_ERR(TM_EFORMAT, "authentication failed: the tag does not "
                      "match the ciphertext and associated data");
    }
    tm__chacha20_xor(key, 1, nonce, ct, pt, n);
    return TM_OK;
}
