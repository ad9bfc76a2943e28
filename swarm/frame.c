/* frame.c — sending and receiving SWRM frames: the header, the caps
 * checked before anything is allocated, CRC, sequence numbers, and the
 * HMAC or AEAD tag of an authenticated session (frame.h). */
#include "frame.h"
#include "le.h"

#include "crypto.h"
#include "../tensor/runtime/runtime_impl.h"

#include <stdio.h>
#include <string.h>

void tm__swrm_conn_init(tm__swrm_conn *c, tm__swrm_io io, const char *peer)
{
    memset(c, 0, sizeof *c);
    c->io = io;
    c->mode = TM__SWRM_INSECURE;
    c->timeout_ms = 10000;
    snprintf(c->peer, sizeof c->peer, "%s", peer ? peer : "peer");
    for (int t = TM__SWRM_HELLO; t <= TM__SWRM_WELCOME; t++) c->cap[t] = 256;
    c->cap[TM__SWRM_JOIN] = c->cap[TM__SWRM_CONFIG] = 4096;
    c->cap[TM__SWRM_HEARTBEAT] = c->cap[TM__SWRM_STATE_REQ] = 64;
    c->cap[TM__SWRM_LEAVE] = c->cap[TM__SWRM_ERROR] = 1024;
}

void tm__swrm_conn_wipe(tm__swrm_conn *c)
{
    if (!c) return;
    tm__wipe(c->mac_tx, sizeof c->mac_tx);
    tm__wipe(c->mac_rx, sizeof c->mac_rx);
    tm__wipe(c->enc_tx, sizeof c->enc_tx);
    tm__wipe(c->enc_rx, sizeof c->enc_rx);
    c->secured = false;
}

void tm__swrm_set_cap(tm__swrm_conn *c, tm__swrm_type type, uint32_t bytes)
{
    if (type >= TM__SWRM_HELLO && type < TM__SWRM_TYPE_END) c->cap[type] = bytes;
}

static unsigned session_flag(const tm__swrm_conn *c)
{
    if (!c->secured) return 0;
    return c->mode == TM__SWRM_ENCRYPT ? TM__SWRM_F_AEAD : TM__SWRM_F_MAC;
}

static size_t tag_len(unsigned flags)
{
    return flags & TM__SWRM_F_AEAD ? 16 : flags & TM__SWRM_F_MAC ? 32 : 0;
}

tm_status tm__swrm_check_header(const tm__swrm_conn *c,
                                const uint8_t h[TM__SWRM_HEADER], int *type,
                                unsigned *flags, uint32_t *n)
{
    if (memcmp(h, "SWRM", 4))
        return TM_ERR(TM_EFORMAT, "%s: bad magic (not a SWRM frame)", c->peer);
    unsigned ver = (unsigned)h[4] | (unsigned)h[5] << 8;
    if (ver != TM__SWRM_VERSION)
        return TM_ERR(TM_EFORMAT, "%s: unsupported version %u (this is %d)",
                      c->peer, ver, TM__SWRM_VERSION);
    int t = h[6];
    if (t < TM__SWRM_HELLO || t >= TM__SWRM_TYPE_END)
        return TM_ERR(TM_EFORMAT, "%s: unknown message type %d", c->peer, t);
    unsigned f = h[7];
    if (f & ~TM__SWRM_F_KNOWN)
        return TM_ERR(TM_EFORMAT, "%s: unknown flags 0x%02x", c->peer, f);
    if (f != session_flag(c))
        return TM_ERR(TM_EFORMAT, c->secured
                                      ? "%s: an unprotected %s frame on an "
                                        "authenticated connection"
                                      : "%s: a %s frame claims protection "
                                        "the connection has not agreed",
                      c->peer, tm__swrm_type_name(t));
    uint32_t len = tm__get_u32(h + 8);
    if (len > c->cap[t])
        return TM_ERR(TM_EFORMAT, "%s: %s payload of %u bytes is over the cap "
                      "of %u", c->peer, tm__swrm_type_name(t), len, c->cap[t]);
    *type = t;
    *flags = f;
    *n = len;
    return TM_OK;
}

static void aead_nonce(uint8_t nonce[12], uint64_t seq)
{
    memset(nonce, 0, 4);
    tm__put_u64(nonce + 4, seq);
}

tm_status tm__swrm_send(tm__swrm_conn *c, tm__swrm_type type,
                        const void *payload, uint32_t n)
{
    unsigned f = session_flag(c);
    size_t extra = f ? 8 + tag_len(f) : 0;
    size_t total = TM__SWRM_HEADER + extra + n;
    uint8_t *b = tm__alloc(total, __func__);
    if (!b) return TM_ENOMEM;
    memcpy(b, "SWRM", 4);
    b[4] = TM__SWRM_VERSION & 0xff;
    b[5] = TM__SWRM_VERSION >> 8;
    b[6] = (uint8_t)type;
    b[7] = (uint8_t)f;
    tm__put_u32(b + 8, n);
    uint8_t *body = b + TM__SWRM_HEADER, *pl = body + (f ? 8 : 0);
    if (n) memcpy(pl, payload, n);
    if (f) {
        tm__put_u64(body, c->seq_tx);
        uint8_t aad[20];
        memcpy(aad, b, 12);
        memcpy(aad + 12, body, 8);
        if (f & TM__SWRM_F_AEAD) {
            uint8_t nonce[12];
            aead_nonce(nonce, c->seq_tx);
            tm__aead_seal(c->enc_tx, nonce, aad, 20, pl, n, pl, pl + n);
        } else {
            tm__hmac_ctx h;
            tm__hmac_init(&h, c->mac_tx, 32);
            tm__hmac_update(&h, aad, 20);
            tm__hmac_update(&h, pl, n);
            tm__hmac_final(&h, pl + n);
        }
    }
    uint32_t crc = tm__crc32(tm__crc32(0, b, 12), body, extra + n);
    tm__put_u32(b + 12, crc);
    tm_status st = c->io.write(c->io.ctx, b, total,
                               c->timeout_ms > 0 ? tm__now_ms() + c->timeout_ms : -1);
    if (!st && f) c->seq_tx++;
    tm__dealloc(b);
    return st;
}

tm_status tm__swrm_recv(tm__swrm_conn *c, int64_t deadline_ms, int *type,
                        uint8_t **payload, uint32_t *n)
{
    *payload = NULL;
    *n = 0;
    uint8_t h[TM__SWRM_HEADER];
    tm_status st = c->io.read(c->io.ctx, h, 1, deadline_ms);
    int64_t body_dl = c->timeout_ms > 0 ? tm__now_ms() + c->timeout_ms : -1;
    if (!st) st = c->io.read(c->io.ctx, h + 1, TM__SWRM_HEADER - 1, body_dl);
    int t = 0;
    unsigned f = 0;
    uint32_t len = 0;
    if (!st) st = tm__swrm_check_header(c, h, &t, &f, &len);
    if (st) return st;
    size_t extra = f ? 8 + tag_len(f) : 0;
    uint8_t *body = tm__alloc(extra + len, __func__);
    if (!body) return TM_ENOMEM;
    st = c->io.read(c->io.ctx, body, extra + len, body_dl);
    if (!st && tm__crc32(tm__crc32(0, h, 12), body, extra + len) != tm__get_u32(h + 12))
        st = TM_ERR(TM_EFORMAT, "%s: CRC mismatch in a %s frame", c->peer,
                    tm__swrm_type_name(t));
    uint8_t *pl = body + (f ? 8 : 0);
    if (!st && f) {
        uint64_t seq = tm__get_u64(body);
        uint8_t aad[20];
        memcpy(aad, h, 12);
        memcpy(aad + 12, body, 8);
        if (f & TM__SWRM_F_AEAD) {
            uint8_t nonce[12];
            aead_nonce(nonce, seq);
            if (tm__aead_open(c->enc_rx, nonce, aad, 20, pl, len, pl + len, pl))
                st = TM_ERR(TM_EFORMAT, "%s: authentication failed (a forged "
                            "or damaged %s frame)", c->peer, tm__swrm_type_name(t));
        } else {
            uint8_t mac[32];
            tm__hmac_ctx hm;
            tm__hmac_init(&hm, c->mac_rx, 32);
            tm__hmac_update(&hm, aad, 20);
            tm__hmac_update(&hm, pl, len);
            tm__hmac_final(&hm, mac);
            if (!tm__ct_equal(mac, pl + len, 32))
                st = TM_ERR(TM_EFORMAT, "%s: bad MAC on a %s frame", c->peer,
                            tm__swrm_type_name(t));
        }
        if (!st && seq < c->seq_rx)
            st = TM_ERR(TM_EFORMAT, "%s: replayed frame: seq %llu, expected %llu",
                        c->peer, (unsigned long long)seq,
                        (unsigned long long)c->seq_rx);
        if (!st && seq > c->seq_rx)
            st = TM_ERR(TM_EFORMAT, "%s: out-of-order frame: seq %llu, expected "
                        "%llu", c->peer, (unsigned long long)seq,
                        (unsigned long long)c->seq_rx);
        if (!st) c->seq_rx++;
    }
    if (st) {
        tm__dealloc(body);
        return st;
    }
    if (len == 0) {
        tm__dealloc(body);
    } else {
        if (f) memmove(body, pl, len);
        *payload = body;
    }
    *type = t;
    *n = len;
    return TM_OK;
}
