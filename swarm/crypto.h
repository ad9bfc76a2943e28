/*
 * crypto.h — the primitives the swarm protocol authenticates and encrypts
 * with, written here so Foundry needs no crypto library: SHA-256 (FIPS
 * 180-4), HMAC-SHA256 (RFC 2104), HKDF-SHA256 (RFC 5869), ChaCha20,
 * Poly1305 and the ChaCha20-Poly1305 AEAD (RFC 8439), and a constant-time
 * comparison.  Internal to the library; tests/c/test_swarm_crypto.c checks
 * each against its RFC's published test vectors.
 *
 * Byte strings are (pointer, length); a NULL pointer is allowed with
 * length 0.  Nothing here allocates.  The code is portable C with no
 * table lookups indexed by secret data and no branches on secret data,
 * so its timing does not depend on keys or plaintexts.
 */
#ifndef FOUNDRY_SWARM_CRYPTO_H
#define FOUNDRY_SWARM_CRYPTO_H

#include "foundry/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM__SHA256_LEN 32
#define TM__SHA256_BLOCK 64

typedef struct tm__sha256_ctx {
    uint32_t h[8];
    uint64_t len;                  /* bytes hashed so far */
    uint8_t buf[TM__SHA256_BLOCK]; /* a partial block */
    size_t n;                      /* bytes in buf */
} tm__sha256_ctx;

void tm__sha256_init(tm__sha256_ctx *s);
void tm__sha256_update(tm__sha256_ctx *s, const void *p, size_t n);
/* Writes the digest and wipes the state. */
void tm__sha256_final(tm__sha256_ctx *s, uint8_t out[TM__SHA256_LEN]);
void tm__sha256(const void *p, size_t n, uint8_t out[TM__SHA256_LEN]);

/* HMAC-SHA256, incremental (a frame's MAC covers header, sequence number
 * and payload without copying them together) or at once.  Keys longer
 * than a block are hashed first, as RFC 2104 says. */
typedef struct tm__hmac_ctx {
    tm__sha256_ctx inner, outer;
} tm__hmac_ctx;
void tm__hmac_init(tm__hmac_ctx *h, const void *key, size_t kn);
void tm__hmac_update(tm__hmac_ctx *h, const void *p, size_t n);
/* Writes the MAC and wipes the state. */
void tm__hmac_final(tm__hmac_ctx *h, uint8_t out[TM__SHA256_LEN]);
void tm__hmac_sha256(const void *key, size_t kn, const void *msg, size_t mn,
                     uint8_t out[TM__SHA256_LEN]);

/* HKDF-SHA256: extract (salt may be empty: 32 zero bytes, as RFC 5869
 * says) then expand to out[0..len).  TM_EINVAL when len > 255 * 32. */
tm_status tm__hkdf_sha256(const void *salt, size_t sn, const void *ikm,
                          size_t in, const void *info, size_t infon,
                          uint8_t *out, size_t len);

/* True when a[0..n) equals b[0..n); the time depends on n only. */
bool tm__ct_equal(const void *a, const void *b, size_t n);
/* Zeroes p[0..n) in a way the compiler does not drop. */
void tm__wipe(void *p, size_t n);

/* ChaCha20 (RFC 8439 section 2.4): out = in XOR the key stream from block
 * `counter` on; in and out may be the same buffer.  The 32-bit block
 * counter must not wrap: n <= (2^32 - counter) * 64 bytes. */
void tm__chacha20_xor(const uint8_t key[32], uint32_t counter,
                      const uint8_t nonce[12], const void *in, void *out,
                      size_t n);

/* Poly1305 (RFC 8439 section 2.5), incremental or at once; the one-time
 * key must never be used for two messages. */
typedef struct tm__poly1305_ctx {
    uint32_t r[5], h[5], pad[4];
    uint8_t buf[16];
    size_t n;
} tm__poly1305_ctx;
void tm__poly1305_init(tm__poly1305_ctx *p, const uint8_t key[32]);
void tm__poly1305_update(tm__poly1305_ctx *p, const void *m, size_t n);
/* Writes the tag and wipes the state. */
void tm__poly1305_final(tm__poly1305_ctx *p, uint8_t tag[16]);
void tm__poly1305(const uint8_t key[32], const void *m, size_t n,
                  uint8_t tag[16]);

/* The ChaCha20-Poly1305 AEAD (RFC 8439 section 2.8).  seal: ct[0..n) and
 * tag from pt[0..n) and aad.  open: pt[0..n) from ct when the tag is
 * right, else TM_EFORMAT ("authentication failed") with pt zeroed.
 * ct and pt may be the same buffer. */
void tm__aead_seal(const uint8_t key[32], const uint8_t nonce[12],
                   const void *aad, size_t an, const void *pt, size_t n,
                   void *ct, uint8_t tag[16]);
tm_status tm__aead_open(const uint8_t key[32], const uint8_t nonce[12],
                        const void *aad, size_t an, const void *ct, size_t n,
                        const uint8_t tag[16], void *pt);

#endif
