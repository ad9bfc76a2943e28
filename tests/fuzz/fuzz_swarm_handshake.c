/*
 * fuzz_swarm_handshake.c — fuzz target for the SWRM handshake
 * (swarm/handshake.c), either side, against the input as the peer's bytes.
 *
 * With libFuzzer (make fuzz-swarm-handshake) LLVMFuzzerTestOneInput is the
 * entry point; built with -DTM_FUZZ_STANDALONE it replays files (make
 * fuzz-corpus).
 *
 * Input: byte 0 picks the side (bit 0: server or client), the protection
 * it runs with (bits 1-2: insecure, HMAC or encryption, 3 as 0), the key
 * length (bits 3-4: 16, 20, 32 or 100 bytes, the last hashed first as
 * HMAC does with keys over a block), the caps (bits 5-6: the defaults,
 * a 1000-value model's, a 2^28-value model's — what a coordinator that
 * already has a model sets before the handshake — or the defaults with
 * the write side full) and whether frames have a body deadline (bit 7).
 * The rest is what the peer sends; the in-memory stream ends there, so
 * nothing waits on a deadline.
 *
 * The nonces are fresh random bytes, so no input can carry a valid proof
 * of the key: with a key the handshake must fail, cleanly (a nonzero
 * status with a message, the connection not secured).  Without a key it
 * may succeed, with the mode agreed.  Whatever the side under test wrote
 * must be well-formed frames; the server's name_out must be a NUL-ended
 * printable name.  No leak: the allocation counter ends where it started.
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
            fprintf(stderr,                                                   \
                    "fuzz_swarm_handshake: invariant failed: %s (%s:%d)\n",   \
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* What the side under test wrote: unprotected frames (the handshake's
 * own, and ERROR), each well-formed. */
static void check_written(const tm__swrm_mem *w, bool server)
{
    tm__swrm_mem m = {.in = w->out, .in_n = w->out_n};
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_mem_io(&m), "written");
    int frames = 0;
    while (m.in_pos < m.in_n) {
        int t;
        uint8_t *p;
        uint32_t n;
        FUZZ_ASSERT(tm__swrm_recv(&c, -1, &t, &p, &n) == TM_OK);
        frames++;
        if (server)
            FUZZ_ASSERT(t == TM__SWRM_CHALLENGE || t == TM__SWRM_WELCOME ||
                        t == TM__SWRM_ERROR);
        else
            FUZZ_ASSERT(t == TM__SWRM_HELLO || t == TM__SWRM_PROOF);
        if (t == TM__SWRM_ERROR) FUZZ_ASSERT(n > 0);
        if (t == TM__SWRM_CHALLENGE || t == TM__SWRM_WELCOME) FUZZ_ASSERT(n >= 32);
        tm__dealloc(p);
    }
    FUZZ_ASSERT(frames <= 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    bool server = !(data[0] & 1);
    tm__swrm_mode mode = (tm__swrm_mode)(((data[0] >> 1) & 3) % 3);
    static const size_t key_lens[4] = {16, 20, 32, 100};
    size_t key_n = key_lens[(data[0] >> 3) & 3];
    int caps = (data[0] >> 5) & 3;
    uint8_t key[100];
    for (size_t i = 0; i < sizeof key; i++) key[i] = (uint8_t)(0xa5 ^ i);
    tm__swrm_auth a = {mode == TM__SWRM_INSECURE ? NULL : key,
                       mode == TM__SWRM_INSECURE ? 0 : key_n, mode};

    tm_mem_stats before, after;
    tm_memory_stats(&before);
    tm__swrm_mem m = {.in = data + 1, .in_n = size - 1,
                      .out_cap_limit = caps == 3 ? 40 : 1 << 16};
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_mem_io(&m), "peer");
    if (caps == 1) tm__swarm_set_caps(&c, 1000);
    if (caps == 2) tm__swarm_set_caps(&c, (uint64_t)1 << 28);
    if (data[0] & 0x80) c.timeout_ms = 0;
    char name[TM__SWRM_NAME_MAX + 1];
    memset(name, 'x', sizeof name);
    int64_t t0 = tm__now_ms();
    tm_status st = server
        ? tm__swrm_handshake_server(&c, &a, name, t0 + 5000)
        : tm__swrm_handshake_client(&c, &a, "fuzz-worker", t0 + 5000);
    FUZZ_ASSERT(tm__now_ms() - t0 < 2000); /* nothing waited */
    if (st) {
        FUZZ_ASSERT(st == TM_EFORMAT || st == TM_EIO || st == TM_EINVAL);
        FUZZ_ASSERT(tm_last_error()[0] != 0);
        FUZZ_ASSERT(!c.secured);
    } else {
        /* only an insecure handshake can pass without the peer's proof */
        FUZZ_ASSERT(mode == TM__SWRM_INSECURE);
        FUZZ_ASSERT(!c.secured && c.mode == TM__SWRM_INSECURE);
    }
    if (server) {
        size_t len = strnlen(name, sizeof name);
        FUZZ_ASSERT(len <= TM__SWRM_NAME_MAX);
        for (size_t i = 0; i < len; i++)
            FUZZ_ASSERT(name[i] >= 0x20 && name[i] <= 0x7e);
    }
    check_written(&m, server);
    tm__swrm_mem_free(&m);
    tm__swrm_conn_wipe(&c);
    tm_memory_stats(&after);
    FUZZ_ASSERT(after.current_bytes == before.current_bytes);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_swarm_handshake"
#include "standalone.h"
