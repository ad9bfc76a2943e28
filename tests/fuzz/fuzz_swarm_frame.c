/*
 * fuzz_swarm_frame.c — fuzz target for the SWRM frame parser (swarm/frame.c).
 *
 * With libFuzzer (make fuzz-swarm-frame) LLVMFuzzerTestOneInput is the
 * entry point; built with -DTM_FUZZ_STANDALONE it replays files (make
 * fuzz-corpus, which CI runs under ASan + UBSan).
 *
 * Input: byte 0 picks the session (byte0 % 3: insecure, HMAC-secured or
 * AEAD-secured, with the fixed keys below; (byte0 / 3) % 4: the caps —
 * the defaults, the data caps of a 1000-value model, 16 bytes for every
 * type, or 0), byte 1 is the sequence number both sides start at, and the
 * rest is the peer's byte stream.
 *
 * 1. Every 16-byte window of the stream goes through tm__swrm_check_header.
 * 2. The stream goes through tm__swrm_recv until it refuses a frame (at
 *    most 16 frames).  Each accepted frame must respect its type's cap and
 *    be exactly the bytes tm__swrm_send makes of its type and payload at
 *    that sequence number: no second encoding of a frame is accepted.
 * 3. Round trip: the stream, cut to the cap of the type its first byte
 *    names, sent by tm__swrm_send and received back, comes back intact.
 * Every refusal must be a nonzero status with a message; the library's
 * allocation counter must end where it started (no leak).
 */
#include "foundry.h"

#include "../../swarm/frame.h"
#include "../../swarm/swarm_impl.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_swarm_frame: invariant failed: %s (%s:%d)\n",\
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* The session keys a handshake would have derived (the same bytes as
 * tests/fuzz/gen_swarm_corpus.py uses). */
static void set_keys(tm__swrm_conn *c, tm__swrm_mode mode, uint64_t seq,
                     bool receiver)
{
    if (mode == TM__SWRM_INSECURE) return;
    for (int i = 0; i < 32; i++) {
        uint8_t mk = (uint8_t)(i + 1), ek = (uint8_t)(i * 7 + 3);
        if (receiver) c->mac_rx[i] = mk, c->enc_rx[i] = ek;
        else c->mac_tx[i] = mk, c->enc_tx[i] = ek;
    }
    c->secured = true;
    c->mode = mode;
    c->seq_tx = c->seq_rx = seq;
}

static void set_caps(tm__swrm_conn *c, int profile)
{
    if (profile == 1) tm__swarm_set_caps(c, 1000);
    if (profile >= 2)
        for (int t = TM__SWRM_HELLO; t < TM__SWRM_TYPE_END; t++)
            tm__swrm_set_cap(c, (tm__swrm_type)t, profile == 2 ? 16 : 0);
}

static void conn(tm__swrm_conn *c, tm__swrm_mem *m, tm__swrm_mode mode,
                 int profile, uint64_t seq, bool receiver)
{
    tm__swrm_conn_init(c, tm__swrm_mem_io(m), receiver ? "rx" : "tx");
    set_caps(c, profile);
    set_keys(c, mode, seq, receiver);
}

static void refused(tm_status st)
{
    FUZZ_ASSERT(st != TM_OK);
    FUZZ_ASSERT(st == TM_EFORMAT || st == TM_EIO);
    FUZZ_ASSERT(tm_last_error()[0] != 0);
}

/* The bytes tm__swrm_send makes of one frame at sequence number seq. */
static void encode(tm__swrm_mode mode, int profile, uint64_t seq, int type,
                   const uint8_t *p, uint32_t n, tm__swrm_mem *out)
{
    memset(out, 0, sizeof *out);
    out->out_cap_limit = (size_t)1 << 24;
    tm__swrm_conn tx;
    conn(&tx, out, mode, profile, seq, false);
    FUZZ_ASSERT(tm__swrm_send(&tx, (tm__swrm_type)type, p, n) == TM_OK);
    FUZZ_ASSERT(tx.seq_tx == (mode == TM__SWRM_INSECURE ? 0 : seq + 1));
    tm__swrm_conn_wipe(&tx);
}

static void check_headers(const uint8_t *s, size_t n, tm__swrm_mode mode,
                          int profile)
{
    tm__swrm_mem m = {0};
    tm__swrm_conn c;
    conn(&c, &m, mode, profile, 0, true);
    for (size_t i = 0; i + TM__SWRM_HEADER <= n && i < 64; i++) {
        int type = -1;
        unsigned flags = 99;
        uint32_t len = 0;
        tm_status st = tm__swrm_check_header(&c, s + i, &type, &flags, &len);
        if (st) {
            FUZZ_ASSERT(st == TM_EFORMAT && tm_last_error()[0]);
            FUZZ_ASSERT(type == -1 && flags == 99); /* outputs untouched */
            continue;
        }
        FUZZ_ASSERT(type >= TM__SWRM_HELLO && type < TM__SWRM_TYPE_END);
        FUZZ_ASSERT(len <= c.cap[type]);
        FUZZ_ASSERT(flags == (mode == TM__SWRM_INSECURE ? 0u
                              : mode == TM__SWRM_AUTH   ? TM__SWRM_F_MAC
                                                        : TM__SWRM_F_AEAD));
        FUZZ_ASSERT(!memcmp(s + i, "SWRM\x01\x00", 6));
    }
}

static void receive_all(const uint8_t *s, size_t n, tm__swrm_mode mode,
                        int profile, uint64_t seq)
{
    tm__swrm_mem m = {.in = s, .in_n = n};
    tm__swrm_conn c;
    conn(&c, &m, mode, profile, seq, true);
    for (int frames = 0; frames < 16; frames++) {
        size_t start = m.in_pos;
        uint64_t want_seq = c.seq_rx;
        int type = -1;
        uint8_t *p = (uint8_t *)&type;
        uint32_t len = 77;
        tm_status st = tm__swrm_recv(&c, -1, &type, &p, &len);
        if (st) {
            refused(st);
            FUZZ_ASSERT(p == NULL && len == 0);
            FUZZ_ASSERT(c.seq_rx == want_seq);
            break;
        }
        FUZZ_ASSERT(type >= TM__SWRM_HELLO && type < TM__SWRM_TYPE_END);
        FUZZ_ASSERT(len <= c.cap[type]);
        FUZZ_ASSERT((len == 0) == (p == NULL));
        FUZZ_ASSERT(c.seq_rx == want_seq + (mode != TM__SWRM_INSECURE));
        tm__swrm_mem w;
        encode(mode, profile, want_seq, type, p, len, &w);
        FUZZ_ASSERT(w.out_n == m.in_pos - start);
        FUZZ_ASSERT(!memcmp(w.out, s + start, w.out_n));
        tm__swrm_mem_free(&w);
        tm__dealloc(p);
    }
    tm__swrm_conn_wipe(&c);
}

static void round_trip(const uint8_t *s, size_t n, tm__swrm_mode mode,
                       int profile, uint64_t seq)
{
    if (n == 0) return;
    int type = TM__SWRM_HELLO + s[0] % (TM__SWRM_TYPE_END - TM__SWRM_HELLO);
    tm__swrm_mem m = {0};
    tm__swrm_conn rx;
    conn(&rx, &m, mode, profile, seq, true);
    uint32_t len = (uint32_t)(n - 1);
    if (len > rx.cap[type]) len = rx.cap[type];
    encode(mode, profile, seq, type, s + 1, len, &m);
    if (mode == TM__SWRM_ENCRYPT && len >= 8) /* not in clear */
        FUZZ_ASSERT(memcmp(m.out + TM__SWRM_HEADER + 8, s + 1, len));
    m.in = m.out;
    m.in_n = m.out_n;
    int t = 0;
    uint8_t *p = NULL;
    uint32_t got = 0;
    FUZZ_ASSERT(tm__swrm_recv(&rx, -1, &t, &p, &got) == TM_OK);
    FUZZ_ASSERT(t == type && got == len && m.in_pos == m.in_n);
    FUZZ_ASSERT(len == 0 ? p == NULL : !memcmp(p, s + 1, len));
    tm__dealloc(p);
    /* the same bytes again are a replay on a secured session */
    m.in_pos = 0;
    tm_status st = tm__swrm_recv(&rx, -1, &t, &p, &got);
    if (mode == TM__SWRM_INSECURE) {
        FUZZ_ASSERT(st == TM_OK);
        tm__dealloc(p);
    } else {
        refused(st);
        FUZZ_ASSERT(strstr(tm_last_error(), "replayed"));
    }
    tm__swrm_mem_free(&m);
    tm__swrm_conn_wipe(&rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    tm__swrm_mode mode = (tm__swrm_mode)(data[0] % 3);
    int profile = (data[0] / 3) % 4;
    uint64_t seq = data[1];
    const uint8_t *s = data + 2;
    size_t n = size - 2;
    tm_mem_stats before, after;
    tm_memory_stats(&before);
    check_headers(s, n, mode, profile);
    receive_all(s, n, mode, profile, seq);
    round_trip(s, n, mode, profile, seq);
    tm_memory_stats(&after);
    FUZZ_ASSERT(after.current_bytes == before.current_bytes);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_swarm_frame"
#include "standalone.h"
