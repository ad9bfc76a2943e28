/* sha256.c — SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104), HKDF-SHA256
 * (RFC 5869) and constant-time helpers (crypto.h). */
#include "crypto.h"

#include "../tensor/runtime/runtime_impl.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Compresses n consecutive blocks; the schedule is wiped once, after
 * the last (wiping it per block cost a sixth of a frame's MAC). */
static void compress(uint32_t h[8], const uint8_t *blk, size_t n)
{
    uint32_t w[64];
    for (; n; n--, blk += TM__SHA256_BLOCK) {
    for (int i = 0; i < 16; i++) w[i] = be32(blk + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5],
             g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
                      ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
                      ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d;
    h[4] += e, h[5] += f, h[6] += g, h[7] += k;
    }
    tm__wipe(w, sizeof w);
}

void tm__sha256_init(tm__sha256_ctx *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->len = 0;
    s->n = 0;
}

void tm__sha256_update(tm__sha256_ctx *s, const void *vp, size_t n)
{
    const uint8_t *p = vp;
    if (!n) return;
    s->len += n;
    if (s->n) {
        size_t take = TM__SHA256_BLOCK - s->n < n ? TM__SHA256_BLOCK - s->n : n;
        memcpy(s->buf + s->n, p, take);
        s->n += take, p += take, n -= take;
        if (s->n < TM__SHA256_BLOCK) return;
        compress(s->h, s->buf, 1);
        s->n = 0;
    }
    size_t blocks = n / TM__SHA256_BLOCK;
    if (blocks) compress(s->h, p, blocks);
    p += blocks * TM__SHA256_BLOCK;
    n -= blocks * TM__SHA256_BLOCK;
    if (n) memcpy(s->buf, p, n);
    s->n = n;
}

void tm__sha256_final(tm__sha256_ctx *s, uint8_t out[TM__SHA256_LEN])
{
    uint64_t bits = s->len * 8;
    uint8_t pad[TM__SHA256_BLOCK + 8] = {0x80};
    size_t pn = (s->n < 56 ? 56 : 120) - s->n;
    for (int i = 0; i < 8; i++) pad[pn + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    tm__sha256_update(s, pad, pn + 8);
    for (int i = 0; i < 8; i++) put_be32(out + 4 * i, s->h[i]);
    tm__wipe(s, sizeof *s);
}

void tm__sha256(const void *p, size_t n, uint8_t out[TM__SHA256_LEN])
{
    tm__sha256_ctx s;
    tm__sha256_init(&s);
    tm__sha256_update(&s, p, n);
    tm__sha256_final(&s, out);
}

void tm__hmac_init(tm__hmac_ctx *h, const void *key, size_t kn)
{
    uint8_t k[TM__SHA256_BLOCK] = {0}, pad[TM__SHA256_BLOCK];
    if (kn > TM__SHA256_BLOCK) tm__sha256(key, kn, k);
    else if (kn) memcpy(k, key, kn);
    for (int i = 0; i < TM__SHA256_BLOCK; i++) pad[i] = k[i] ^ 0x36;
    tm__sha256_init(&h->inner);
    tm__sha256_update(&h->inner, pad, sizeof pad);
    for (int i = 0; i < TM__SHA256_BLOCK; i++) pad[i] = k[i] ^ 0x5c;
    tm__sha256_init(&h->outer);
    tm__sha256_update(&h->outer, pad, sizeof pad);
    tm__wipe(k, sizeof k);
    tm__wipe(pad, sizeof pad);
}

void tm__hmac_update(tm__hmac_ctx *h, const void *p, size_t n)
{
    tm__sha256_update(&h->inner, p, n);
}

void tm__hmac_final(tm__hmac_ctx *h, uint8_t out[TM__SHA256_LEN])
{
    uint8_t in[TM__SHA256_LEN];
    tm__sha256_final(&h->inner, in);
    tm__sha256_update(&h->outer, in, sizeof in);
    tm__sha256_final(&h->outer, out);
    tm__wipe(in, sizeof in);
}

void tm__hmac_sha256(const void *key, size_t kn, const void *msg, size_t mn,
                     uint8_t out[TM__SHA256_LEN])
{
    tm__hmac_ctx h;
    tm__hmac_init(&h, key, kn);
    tm__hmac_update(&h, msg, mn);
    tm__hmac_final(&h, out);
}

tm_status tm__hkdf_sha256(const void *salt, size_t sn, const void *ikm,
                          size_t in, const void *info, size_t infon,
                          uint8_t *out, size_t len)
{
    if (len > 255 * TM__SHA256_LEN)
        return TM_ERR(TM_EINVAL, "HKDF-SHA256 gives at most %d bytes, not %zu",
                      255 * TM__SHA256_LEN, len);
    uint8_t zero[TM__SHA256_LEN] = {0}, prk[TM__SHA256_LEN], t[TM__SHA256_LEN];
    tm__hmac_sha256(sn ? salt : zero, sn ? sn : sizeof zero, ikm, in, prk);
    size_t tn = 0;
    for (uint8_t i = 1; len; i++) {
        tm__hmac_ctx h;
        tm__hmac_init(&h, prk, sizeof prk);
        tm__hmac_update(&h, t, tn);
        tm__hmac_update(&h, info, infon);
        tm__hmac_update(&h, &i, 1);
        tm__hmac_final(&h, t);
        tn = sizeof t;
        size_t take = len < tn ? len : tn;
        memcpy(out, t, take);
        out += take, len -= take;
    }
    tm__wipe(prk, sizeof prk);
    tm__wipe(t, sizeof t);
    return TM_OK;
}

bool tm__ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++) d |= (uint8_t)(x[i] ^ y[i]);
    return d == 0;
}

/* memset through a volatile pointer: the compiler cannot prove the call
 * dead, so the zeroing stays, at memset's speed. */
static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

void tm__wipe(void *p, size_t n)
{
    if (n) wipe_memset(p, 0, n);
}
