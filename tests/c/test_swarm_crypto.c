/* The swarm's crypto primitives (swarm/crypto.h) against their RFCs'
 * published test vectors: SHA-256 (FIPS 180-4 examples), HMAC-SHA256
 * (RFC 4231 cases 1, 2, 6), HKDF-SHA256 (RFC 5869 cases 1, 3), ChaCha20
 * (RFC 8439 2.4.2), Poly1305 (RFC 8439 2.5.2 and the edge cases of
 * appendix A.3, which reach the final reduction), the AEAD (RFC 8439
 * 2.8.2); incremental updates in odd pieces equal one-shot results;
 * forged tags, ciphertexts and associated data are refused. */
#include "harness.h"

#include "../../swarm/crypto.h"

#include <stdlib.h>

/* hex -> bytes into out (at most cap); the byte count. */
static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; h[0] && h[1] && n < cap; h += 2) {
        unsigned v;
        if (sscanf(h, "%2x", &v) != 1) break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

static bool eq_hex(const uint8_t *got, size_t n, const char *want)
{
    uint8_t w[512];
    size_t wn = unhex(want, w, sizeof w);
    return wn == n && memcmp(got, w, n) == 0;
}

static const char SUN[] =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one "
    "tip for the future, sunscreen would be it.";

TEST(sha256_fips_examples)
{
    uint8_t d[32];
    tm__sha256("abc", 3, d);
    CHECK(eq_hex(d, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    tm__sha256(NULL, 0, d);
    CHECK(eq_hex(d, 32, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    tm__sha256(m, strlen(m), d);
    CHECK(eq_hex(d, 32, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* a million 'a', fed in pieces of 1..97 bytes */
    char *a = malloc(1000000);
    REQUIRE(a != NULL);
    memset(a, 'a', 1000000);
    tm__sha256_ctx s;
    tm__sha256_init(&s);
    for (size_t off = 0, step = 1; off < 1000000; step = step % 97 + 1) {
        size_t take = 1000000 - off < step ? 1000000 - off : step;
        tm__sha256_update(&s, a + off, take);
        off += take;
    }
    tm__sha256_final(&s, d);
    CHECK(eq_hex(d, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    uint8_t d1[32];
    tm__sha256(a, 1000000, d1);
    CHECK(memcmp(d, d1, 32) == 0);
    free(a);
}

TEST(hmac_sha256_rfc4231)
{
    uint8_t k[131], mac[32];
    memset(k, 0x0b, 20);
    tm__hmac_sha256(k, 20, "Hi There", 8, mac);
    CHECK(eq_hex(mac, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    const char *m2 = "what do ya want for nothing?";
    tm__hmac_sha256("Jefe", 4, m2, strlen(m2), mac);
    CHECK(eq_hex(mac, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    /* a key longer than a block is hashed first */
    memset(k, 0xaa, 131);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    tm__hmac_sha256(k, 131, m6, strlen(m6), mac);
    CHECK(eq_hex(mac, 32, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    /* incremental: the same MAC over the message in three pieces */
    tm__hmac_ctx h;
    uint8_t mac2[32];
    tm__hmac_init(&h, k, 131);
    tm__hmac_update(&h, m6, 5);
    tm__hmac_update(&h, NULL, 0);
    tm__hmac_update(&h, m6 + 5, strlen(m6) - 5);
    tm__hmac_final(&h, mac2);
    CHECK(memcmp(mac, mac2, 32) == 0);
}

TEST(hkdf_sha256_rfc5869)
{
    uint8_t ikm[22], salt[13], info[10], okm[42];
    memset(ikm, 0x0b, sizeof ikm);
    for (int i = 0; i < 13; i++) salt[i] = (uint8_t)i;
    for (int i = 0; i < 10; i++) info[i] = (uint8_t)(0xf0 + i);
    CHECK_INT(tm__hkdf_sha256(salt, 13, ikm, 22, info, 10, okm, 42), TM_OK);
    CHECK(eq_hex(okm, 42, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"));
    /* case 3: no salt (32 zero bytes), no info */
    CHECK_INT(tm__hkdf_sha256(NULL, 0, ikm, 22, NULL, 0, okm, 42), TM_OK);
    CHECK(eq_hex(okm, 42, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"));
    uint8_t big[8161];
    CHECK_INT(tm__hkdf_sha256(NULL, 0, ikm, 22, NULL, 0, big, sizeof big), TM_EINVAL);
    CHECK(strstr(tm_last_error(), "8160") != NULL);
    CHECK_INT(tm__hkdf_sha256(NULL, 0, ikm, 22, NULL, 0, big, 8160), TM_OK);
}

TEST(chacha20_rfc8439)
{
    uint8_t key[32], nonce[12], ct[sizeof SUN - 1], back[sizeof SUN - 1];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)i;
    unhex("000000000000004a00000000", nonce, 12);
    tm__chacha20_xor(key, 1, nonce, SUN, ct, sizeof ct);
    CHECK(eq_hex(ct, sizeof ct,
                 "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
                 "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
                 "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
                 "5af90bbf74a35be6b40b8eedf2785e42874d"));
    /* in place, and back */
    memcpy(back, ct, sizeof ct);
    tm__chacha20_xor(key, 1, nonce, back, back, sizeof back);
    CHECK(memcmp(back, SUN, sizeof back) == 0);
}

TEST(poly1305_rfc8439_and_its_edge_cases)
{
    uint8_t key[32], tag[16];
    unhex("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b", key, 32);
    const char *m = "Cryptographic Forum Research Group";
    tm__poly1305(key, m, strlen(m), tag);
    CHECK(eq_hex(tag, 16, "a8061dc1305136c6c22b8baf0c0127a9"));
    /* pieces of 1, 15, 2 and the rest */
    tm__poly1305_ctx p;
    tm__poly1305_init(&p, key);
    tm__poly1305_update(&p, m, 1);
    tm__poly1305_update(&p, m + 1, 15);
    tm__poly1305_update(&p, m + 16, 2);
    tm__poly1305_update(&p, m + 18, strlen(m) - 18);
    uint8_t tag2[16];
    tm__poly1305_final(&p, tag2);
    CHECK(memcmp(tag, tag2, 16) == 0);
    /* appendix A.3 #5-#9: r = 1 or 2, messages near 2^130 - 5 */
    static const struct { const char *key, *msg, *tag; } a3[] = {
        {"02000000000000000000000000000000" "00000000000000000000000000000000",
         "ffffffffffffffffffffffffffffffff", "03000000000000000000000000000000"},
        {"02000000000000000000000000000000" "ffffffffffffffffffffffffffffffff",
         "02000000000000000000000000000000", "03000000000000000000000000000000"},
        {"01000000000000000000000000000000" "00000000000000000000000000000000",
         "ffffffffffffffffffffffffffffffff" "f0ffffffffffffffffffffffffffffff"
         "11000000000000000000000000000000", "05000000000000000000000000000000"},
        {"01000000000000000000000000000000" "00000000000000000000000000000000",
         "ffffffffffffffffffffffffffffffff" "fbfefefefefefefefefefefefefefefe"
         "01010101010101010101010101010101", "00000000000000000000000000000000"},
        {"02000000000000000000000000000000" "00000000000000000000000000000000",
         "fdffffffffffffffffffffffffffffff", "faffffffffffffffffffffffffffffff"},
    };
    for (size_t i = 0; i < sizeof a3 / sizeof a3[0]; i++) {
        uint8_t k[32], msg[48];
        unhex(a3[i].key, k, 32);
        size_t n = unhex(a3[i].msg, msg, sizeof msg);
        tm__poly1305(k, msg, n, tag);
        if (!eq_hex(tag, 16, a3[i].tag))
            tt_fail(__FILE__, __LINE__, "RFC 8439 A.3 #%zu: wrong tag", i + 5);
    }
}

TEST(aead_chacha20_poly1305_rfc8439)
{
    uint8_t key[32], nonce[12], aad[12], tag[16];
    uint8_t ct[sizeof SUN - 1], pt[sizeof SUN - 1];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)(0x80 + i);
    unhex("070000004041424344454647", nonce, 12);
    unhex("50515253c0c1c2c3c4c5c6c7", aad, 12);
    tm__aead_seal(key, nonce, aad, 12, SUN, sizeof ct, ct, tag);
    CHECK(eq_hex(ct, sizeof ct,
                 "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
                 "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
                 "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
                 "3ff4def08e4b7a9de576d26586cec64b6116"));
    CHECK(eq_hex(tag, 16, "1ae10b594f09e26a7e902ecbd0600691"));
    CHECK_INT(tm__aead_open(key, nonce, aad, 12, ct, sizeof ct, tag, pt), TM_OK);
    CHECK(memcmp(pt, SUN, sizeof pt) == 0);
    /* a flipped bit anywhere is refused and nothing is released */
    uint8_t bad[sizeof ct];
    memcpy(bad, ct, sizeof ct);
    bad[57] ^= 1;
    memset(pt, 0x55, sizeof pt);
    CHECK_INT(tm__aead_open(key, nonce, aad, 12, bad, sizeof bad, tag, pt), TM_EFORMAT);
    CHECK(strstr(tm_last_error(), "authentication failed") != NULL);
    bool zeroed = true;
    for (size_t i = 0; i < sizeof pt; i++) zeroed &= pt[i] == 0;
    CHECK(zeroed);
    uint8_t t2[16];
    memcpy(t2, tag, 16);
    t2[15] ^= 0x80;
    CHECK_INT(tm__aead_open(key, nonce, aad, 12, ct, sizeof ct, t2, pt), TM_EFORMAT);
    aad[0] ^= 1;
    CHECK_INT(tm__aead_open(key, nonce, aad, 12, ct, sizeof ct, tag, pt), TM_EFORMAT);
    aad[0] ^= 1;
    /* truncated ciphertext, and another nonce */
    CHECK_INT(tm__aead_open(key, nonce, aad, 12, ct, sizeof ct - 1, tag, pt), TM_EFORMAT);
    nonce[11] ^= 1;
    CHECK_INT(tm__aead_open(key, nonce, aad, 12, ct, sizeof ct, tag, pt), TM_EFORMAT);
    /* empty message and aad: a tag only */
    CHECK_INT(tm__aead_open(key, nonce, NULL, 0, NULL, 0, tag, NULL), TM_EFORMAT);
    tm__aead_seal(key, nonce, NULL, 0, NULL, 0, NULL, tag);
    CHECK_INT(tm__aead_open(key, nonce, NULL, 0, NULL, 0, tag, NULL), TM_OK);
}

TEST(ct_equal_and_wipe)
{
    uint8_t a[40], b[40];
    for (int i = 0; i < 40; i++) a[i] = b[i] = (uint8_t)(i * 7);
    CHECK(tm__ct_equal(a, b, 40));
    CHECK(tm__ct_equal(a, b, 0));
    b[39] ^= 0x10;
    CHECK(!tm__ct_equal(a, b, 40));
    CHECK(tm__ct_equal(a, b, 39));
    tm__wipe(a, sizeof a);
    for (int i = 0; i < 40; i++) CHECK(a[i] == 0);
}
