/* handshake.c — mutual proof of the pre-shared key over fresh nonces,
 * then per-direction session keys by HKDF (frame.h).
 *   HELLO     u8 mode, u8 name length, u8[2] zero, nonce_c[32], name
 *   CHALLENGE u8 session mode, u8[3] zero, nonce_s[32]
 *   PROOF     HMAC(key, "SWRM-v1 client" | HELLO | CHALLENGE)
 *   WELCOME   HMAC(key, "SWRM-v1 server" | HELLO | CHALLENGE | PROOF)
 * keys = HKDF(salt nonce_c | nonce_s, ikm key, info "SWRM-v1 session
 * keys", 128 bytes) = mac c->s | mac s->c | enc c->s | enc s->c. */
#include "frame.h"

#include "crypto.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <string.h>

#define HELLO_FIXED (4 + TM__SWRM_NONCE)
#define CHALLENGE_LEN (4 + TM__SWRM_NONCE)

static void proof(const tm__swrm_auth *a, const char *label, const uint8_t *hello,
                  size_t hn, const uint8_t *chal, const uint8_t *extra,
                  uint8_t out[32])
{
    tm__hmac_ctx h;
    tm__hmac_init(&h, a->key, a->key_n);
    tm__hmac_update(&h, label, strlen(label));
    tm__hmac_update(&h, hello, hn);
    tm__hmac_update(&h, chal, CHALLENGE_LEN);
    if (extra) tm__hmac_update(&h, extra, 32);
    tm__hmac_final(&h, out);
}

static tm_status derive(tm__swrm_conn *c, const tm__swrm_auth *a,
                        const uint8_t *nc, const uint8_t *ns, bool client)
{
    uint8_t salt[2 * TM__SWRM_NONCE], k[128];
    memcpy(salt, nc, TM__SWRM_NONCE);
    memcpy(salt + TM__SWRM_NONCE, ns, TM__SWRM_NONCE);
    static const char info[] = "SWRM-v1 session keys";
    tm_status st = tm__hkdf_sha256(salt, sizeof salt, a->key, a->key_n, info,
                                   sizeof info - 1, k, sizeof k);
    if (st) return st;
    memcpy(c->mac_tx, k + (client ? 0 : 32), 32);
    memcpy(c->mac_rx, k + (client ? 32 : 0), 32);
    memcpy(c->enc_tx, k + (client ? 64 : 96), 32);
    memcpy(c->enc_rx, k + (client ? 96 : 64), 32);
    tm__wipe(k, sizeof k);
    c->seq_tx = c->seq_rx = 0;
    c->secured = true;
    return TM_OK;
}

static tm_status check_auth(const tm__swrm_auth *a)
{
    if (!a || a->mode > TM__SWRM_ENCRYPT)
        return TM_ERR(TM_EINVAL, "invalid protection mode");
    if (a->mode == TM__SWRM_INSECURE ? a->key != NULL : (!a->key || a->key_n < 16))
        return TM_ERR(TM_EINVAL, a->mode == TM__SWRM_INSECURE
                                     ? "insecure mode takes no key"
                                     : "the key must have at least 16 bytes");
    return TM_OK;
}

/* While the handshake runs no frame may be bigger than a handshake frame
 * (or an ERROR message): a coordinator that already has a model sets the
 * data caps (up to 4 GiB for STATE) before the handshake, and a peer that
 * has proved nothing must not make it allocate that much for a header. */
#define HANDSHAKE_CAP 256u
#define HANDSHAKE_ERROR_CAP 1024u

/* Receives a frame of one type and exact length into buf. */
static tm_status expect(tm__swrm_conn *c, int want, uint8_t *buf, size_t min,
                        size_t max, uint32_t *got, int64_t deadline, bool client)
{
    int t;
    uint8_t *p;
    uint32_t n, caps[TM__SWRM_TYPE_END];
    memcpy(caps, c->cap, sizeof caps);
    for (int i = TM__SWRM_HELLO; i < TM__SWRM_TYPE_END; i++) {
        uint32_t lim = i == TM__SWRM_ERROR ? HANDSHAKE_ERROR_CAP : HANDSHAKE_CAP;
        if (c->cap[i] > lim) c->cap[i] = lim;
    }
    tm_status st = tm__swrm_recv(c, deadline, &t, &p, &n);
    memcpy(c->cap, caps, sizeof caps);
    if (st) return st;
    if (t == TM__SWRM_ERROR && client) {
        char msg[200];
        uint32_t m = n < sizeof msg - 1 ? n : (uint32_t)sizeof msg - 1;
        for (uint32_t i = 0; i < m; i++)
            msg[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
        msg[m] = 0;
        tm__dealloc(p);
        return TM_ERR(TM_EINVAL, "coordinator refused: %s", msg);
    }
    if (t != want || n < min || n > max) {
        tm__dealloc(p);
        return TM_ERR(TM_EFORMAT, "%s: expected %s, got %s of %u bytes", c->peer,
                      tm__swrm_type_name(want), tm__swrm_type_name(t), n);
    }
    memcpy(buf, p, n);
    tm__dealloc(p);
    *got = n;
    return TM_OK;
}

tm_status tm__swrm_handshake_client(tm__swrm_conn *c, const tm__swrm_auth *a,
                                    const char *name, int64_t deadline_ms)
{
    tm_status st = check_auth(a);
    if (st) return st;
    size_t nl = name ? strlen(name) : 0;
    if (nl > TM__SWRM_NAME_MAX) return TM_ERR(TM_EINVAL, "name over 64 bytes");
    for (size_t i = 0; i < nl; i++)
        if (name[i] < 0x20 || name[i] > 0x7e)
            return TM_ERR(TM_EINVAL, "name must be printable ASCII");
    uint8_t hello[HELLO_FIXED + TM__SWRM_NAME_MAX], chal[CHALLENGE_LEN], pr[32],
        wel[32], want[32];
    memset(hello, 0, HELLO_FIXED);
    hello[0] = (uint8_t)a->mode;
    hello[1] = (uint8_t)nl;
    st = tm__random_bytes(hello + 4, TM__SWRM_NONCE);
    memcpy(hello + HELLO_FIXED, name, nl);
    size_t hn = HELLO_FIXED + nl;
    uint32_t got;
    if (!st) st = tm__swrm_send(c, TM__SWRM_HELLO, hello, (uint32_t)hn);
    if (!st)
        st = expect(c, TM__SWRM_CHALLENGE, chal, CHALLENGE_LEN, CHALLENGE_LEN,
                    &got, deadline_ms, true);
    if (!st && (chal[0] != a->mode || chal[1] || chal[2] || chal[3]))
        st = TM_ERR(TM_EFORMAT, "%s: malformed CHALLENGE", c->peer);
    if (st || a->mode == TM__SWRM_INSECURE) return st;
    proof(a, "SWRM-v1 client", hello, hn, chal, NULL, pr);
    st = tm__swrm_send(c, TM__SWRM_PROOF, pr, 32);
    if (!st) st = expect(c, TM__SWRM_WELCOME, wel, 32, 32, &got, deadline_ms, true);
    if (!st) {
        proof(a, "SWRM-v1 server", hello, hn, chal, pr, want);
        if (!tm__ct_equal(want, wel, 32))
            st = TM_ERR(TM_EINVAL, "%s: the coordinator failed to prove it "
                        "knows the key", c->peer);
    }
    if (!st) st = derive(c, a, hello + 4, chal + 4, true);
    c->mode = a->mode;
    tm__wipe(want, sizeof want);
    return st;
}

tm_status tm__swrm_handshake_server(tm__swrm_conn *c, const tm__swrm_auth *a,
                                    char name_out[TM__SWRM_NAME_MAX + 1],
                                    int64_t deadline_ms)
{
    tm_status st = check_auth(a);
    if (st) return st;
    name_out[0] = 0;
    uint8_t hello[HELLO_FIXED + TM__SWRM_NAME_MAX], chal[CHALLENGE_LEN], pr[32],
        want[32];
    uint32_t hn = 0, got;
    st = expect(c, TM__SWRM_HELLO, hello, HELLO_FIXED, sizeof hello, &hn,
                deadline_ms, false);
    if (st) return st;
    if (hello[2] || hello[3] || hello[0] > TM__SWRM_ENCRYPT ||
        hn != HELLO_FIXED + (uint32_t)hello[1])
        return TM_ERR(TM_EFORMAT, "%s: malformed HELLO", c->peer);
    for (uint32_t i = HELLO_FIXED; i < hn; i++)
        if (hello[i] < 0x20 || hello[i] > 0x7e)
            return TM_ERR(TM_EFORMAT, "%s: HELLO name is not printable ASCII",
                          c->peer);
    memcpy(name_out, hello + HELLO_FIXED, hn - HELLO_FIXED);
    name_out[hn - HELLO_FIXED] = 0;
    int mode = hello[0];
    const char *why = NULL;
    if (a->mode != TM__SWRM_INSECURE && mode == TM__SWRM_INSECURE)
        why = "this coordinator requires a key (the worker has none)";
    else if (a->mode == TM__SWRM_INSECURE && mode != TM__SWRM_INSECURE)
        why = "this coordinator runs without a key (--insecure)";
    else if (mode < (int)a->mode)
        why = "this coordinator requires encryption (--encrypt)";
    if (why) {
        tm__swrm_send(c, TM__SWRM_ERROR, why, (uint32_t)strlen(why));
        return TM_ERR(TM_EINVAL, "%s: %s", c->peer, why);
    }
    memset(chal, 0, 4);
    chal[0] = (uint8_t)mode;
    st = tm__random_bytes(chal + 4, TM__SWRM_NONCE);
    if (!st) st = tm__swrm_send(c, TM__SWRM_CHALLENGE, chal, CHALLENGE_LEN);
    if (st || mode == TM__SWRM_INSECURE) {
        c->mode = TM__SWRM_INSECURE;
        return st;
    }
    st = expect(c, TM__SWRM_PROOF, pr, 32, 32, &got, deadline_ms, false);
    if (st) return st;
    proof(a, "SWRM-v1 client", hello, hn, chal, NULL, want);
    if (!tm__ct_equal(want, pr, 32)) {
        static const char bad[] = "authentication failed";
        tm__swrm_send(c, TM__SWRM_ERROR, bad, sizeof bad - 1);
        tm__wipe(want, sizeof want);
        c->wrong_key = true;
        return TM_ERR(TM_EINVAL, "%s: authentication failed (wrong key)", c->peer);
    }
    proof(a, "SWRM-v1 server", hello, hn, chal, pr, want);
    st = tm__swrm_send(c, TM__SWRM_WELCOME, want, 32);
    tm__wipe(want, sizeof want);
    if (!st) st = derive(c, a, hello + 4, chal + 4, false);
    c->mode = (tm__swrm_mode)mode;
    return st;
}
