/* SWRM frames and the handshake: exact bytes, every refusal, sessions in
 * each protection mode over memory and over a socketpair. */
#include "harness.h"

#include "../../swarm/frame.h"
#include "../../tensor/runtime/runtime_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* One direction of a session: a sender and a receiver sharing keys. */
typedef struct pair {
    tm__swrm_mem wire;
    tm__swrm_conn tx, rx;
} pair;

static void pair_init(pair *p, tm__swrm_mode mode)
{
    memset(p, 0, sizeof *p);
    p->wire.out_cap_limit = 1 << 20;
    tm__swrm_conn_init(&p->tx, tm__swrm_mem_io(&p->wire), "tx");
    tm__swrm_conn_init(&p->rx, tm__swrm_mem_io(&p->wire), "rx");
    tm__swrm_set_cap(&p->rx, TM__SWRM_TOPK, 1000);
    if (mode == TM__SWRM_INSECURE) return;
    for (int i = 0; i < 32; i++) {
        p->tx.mac_tx[i] = p->rx.mac_rx[i] = (uint8_t)(i + 1);
        p->tx.enc_tx[i] = p->rx.enc_rx[i] = (uint8_t)(i * 7 + 3);
    }
    p->tx.secured = p->rx.secured = true;
    p->tx.mode = p->rx.mode = mode;
}

/* Receives what tx wrote (the bytes may have been changed in between). */
static tm_status pair_recv(pair *p, int *type, uint8_t **pl, uint32_t *n)
{
    p->wire.in = p->wire.out;
    p->wire.in_n = p->wire.out_n;
    return tm__swrm_recv(&p->rx, -1, type, pl, n);
}

TEST(swrm_frame_bytes_are_the_documented_ones)
{
    pair p;
    pair_init(&p, TM__SWRM_INSECURE);
    REQUIRE(tm__swrm_send(&p.tx, TM__SWRM_HEARTBEAT, "abc", 3) == TM_OK);
    /* CRC computed independently: python3 -c "import zlib;
     * print(hex(zlib.crc32(b'SWRM\x01\x00\x0c\x00\x03\x00\x00\x00abc')))" */
    static const uint8_t want[] = {'S', 'W', 'R', 'M', 1, 0, 12, 0, 3, 0, 0, 0,
                                   0x4c, 0x76, 0xdc, 0x11, 'a', 'b', 'c'};
    CHECK_INT(p.wire.out_n, sizeof want);
    CHECK(memcmp(p.wire.out, want, sizeof want) == 0);
    tm__swrm_mem_free(&p.wire);
}

TEST(swrm_frames_round_trip_in_every_mode)
{
    tm__swrm_mode modes[] = {TM__SWRM_INSECURE, TM__SWRM_AUTH, TM__SWRM_ENCRYPT};
    for (int m = 0; m < 3; m++) {
        pair p;
        pair_init(&p, modes[m]);
        REQUIRE(tm__swrm_send(&p.tx, TM__SWRM_TOPK, "gradient", 8) == TM_OK);
        REQUIRE(tm__swrm_send(&p.tx, TM__SWRM_LEAVE, NULL, 0) == TM_OK);
        if (modes[m] == TM__SWRM_ENCRYPT) /* the payload is not in clear */
            for (size_t i = 0; i + 8 <= p.wire.out_n; i++)
                CHECK(memcmp(p.wire.out + i, "gradient", 8) != 0);
        int t;
        uint8_t *pl;
        uint32_t n;
        REQUIRE(pair_recv(&p, &t, &pl, &n) == TM_OK);
        CHECK_INT(t, TM__SWRM_TOPK);
        CHECK_INT(n, 8);
        CHECK(pl && memcmp(pl, "gradient", 8) == 0);
        tm__dealloc(pl);
        REQUIRE(tm__swrm_recv(&p.rx, -1, &t, &pl, &n) == TM_OK);
        CHECK_INT(t, TM__SWRM_LEAVE);
        CHECK_INT(n, 0);
        CHECK_STATUS(tm__swrm_recv(&p.rx, -1, &t, &pl, &n), TM_EIO, "closed");
        tm__swrm_mem_free(&p.wire);
    }
}

/* Sends one TOPK frame in `mode`, applies `mutate` to the bytes, and
 * checks the receiver refuses it with `status` and `msg`. */
static void refused(tm__swrm_mode mode, void (*mutate)(pair *), tm_status status,
                    const char *msg)
{
    pair p;
    pair_init(&p, mode);
    REQUIRE(tm__swrm_send(&p.tx, TM__SWRM_TOPK, "0123456789", 10) == TM_OK);
    if (mutate) mutate(&p);
    int t;
    uint8_t *pl = NULL;
    uint32_t n;
    tm_mem_stats before, after;
    tm_memory_stats(&before);
    CHECK_STATUS(pair_recv(&p, &t, &pl, &n), status, msg);
    tm_memory_stats(&after);
    CHECK(pl == NULL);
    CHECK(after.current_bytes <= before.current_bytes);
    tm__swrm_mem_free(&p.wire);
}

static void bad_magic(pair *p) { p->wire.out[0] = 'X'; }
static void bad_version(pair *p) { p->wire.out[4] = 2; }
static void bad_type(pair *p) { p->wire.out[6] = 99; }
static void bad_flags(pair *p) { p->wire.out[7] |= 0x80; }
static void flip_payload(pair *p) { p->wire.out[p->wire.out_n - 1] ^= 1; }
static void truncate_body(pair *p) { p->wire.out_n -= 3; }
static void huge_length(pair *p) /* 2 GiB claimed: refused before allocating */
{
    p->wire.out[8] = 0, p->wire.out[9] = 0, p->wire.out[10] = 0, p->wire.out[11] = 0x80;
}
static void strip_protection(pair *p) { p->wire.out[7] = 0; }
static void fake_mac_flag(pair *p) { p->wire.out[7] = TM__SWRM_F_MAC; }
/* Changes a payload byte and fixes the CRC, as an attacker would. */
static void forge(pair *p)
{
    uint8_t *b = p->wire.out;
    b[TM__SWRM_HEADER + 8] ^= 1;
    uint32_t c = tm__crc32(tm__crc32(0, b, 12), b + 16, p->wire.out_n - 16);
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(c >> (8 * i));
}

TEST(swrm_refuses_malformed_frames_cleanly)
{
    refused(TM__SWRM_INSECURE, bad_magic, TM_EFORMAT, "bad magic");
    refused(TM__SWRM_INSECURE, bad_version, TM_EFORMAT, "unsupported version 2");
    refused(TM__SWRM_INSECURE, bad_type, TM_EFORMAT, "unknown message type 99");
    refused(TM__SWRM_INSECURE, bad_flags, TM_EFORMAT, "unknown flags");
    refused(TM__SWRM_INSECURE, flip_payload, TM_EFORMAT, "CRC mismatch");
    refused(TM__SWRM_INSECURE, truncate_body, TM_EIO, "closed");
    refused(TM__SWRM_INSECURE, huge_length, TM_EFORMAT, "over the cap of 1000");
    refused(TM__SWRM_INSECURE, fake_mac_flag, TM_EFORMAT, "not agreed");
    refused(TM__SWRM_AUTH, strip_protection, TM_EFORMAT, "unprotected");
    refused(TM__SWRM_AUTH, forge, TM_EFORMAT, "bad MAC");
    refused(TM__SWRM_ENCRYPT, forge, TM_EFORMAT, "authentication failed");
    refused(TM__SWRM_AUTH, truncate_body, TM_EIO, "closed");
}

TEST(swrm_random_bytes_are_refused)
{
    uint8_t junk[256];
    uint32_t s = 12345;
    for (int i = 0; i < 256; i++) junk[i] = (uint8_t)((s = s * 1103515245 + 12345) >> 16);
    tm__swrm_mem m = {junk, sizeof junk, 0, NULL, 0, 0, 0};
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_mem_io(&m), "junk");
    int t;
    uint8_t *pl;
    uint32_t n;
    CHECK_STATUS(tm__swrm_recv(&c, -1, &t, &pl, &n), TM_EFORMAT, "bad magic");
}

TEST(swrm_replayed_and_reordered_frames_are_refused)
{
    pair p;
    pair_init(&p, TM__SWRM_AUTH);
    REQUIRE(tm__swrm_send(&p.tx, TM__SWRM_TOPK, "one", 3) == TM_OK);
    size_t one = p.wire.out_n;
    REQUIRE(tm__swrm_send(&p.tx, TM__SWRM_TOPK, "two", 3) == TM_OK);
    size_t two = p.wire.out_n - one;
    uint8_t *copy = malloc(p.wire.out_n + one);
    REQUIRE(copy);
    /* replay: one, one */
    memcpy(copy, p.wire.out, one);
    memcpy(copy + one, p.wire.out, one);
    tm__swrm_mem m = {copy, 2 * one, 0, NULL, 0, 0, 0};
    p.rx.io = tm__swrm_mem_io(&m);
    int t;
    uint8_t *pl;
    uint32_t n;
    REQUIRE(tm__swrm_recv(&p.rx, -1, &t, &pl, &n) == TM_OK);
    tm__dealloc(pl);
    CHECK_STATUS(tm__swrm_recv(&p.rx, -1, &t, &pl, &n), TM_EFORMAT,
                 "replayed frame: seq 0, expected 1");
    /* reordered: two before one, on a fresh receiver */
    memcpy(copy, p.wire.out + one, two);
    memcpy(copy + two, p.wire.out, one);
    m = (tm__swrm_mem){copy, one + two, 0, NULL, 0, 0, 0};
    p.rx.seq_rx = 0;
    CHECK_STATUS(tm__swrm_recv(&p.rx, -1, &t, &pl, &n), TM_EFORMAT,
                 "out-of-order frame: seq 1, expected 0");
    free(copy);
    tm__swrm_mem_free(&p.wire);
}

/* ------------------------------------------------------------ handshake */

typedef struct side {
    int fd;
    tm__swrm_auth a;
    tm_status st;
    char err[256], name[TM__SWRM_NAME_MAX + 1];
    tm__swrm_conn c;
} side;

static void *server_main(void *arg)
{
    side *s = arg;
    tm__swrm_conn_init(&s->c, tm__swrm_fd_io(s->fd), "client");
    s->st = tm__swrm_handshake_server(&s->c, &s->a, s->name, tm__now_ms() + 5000);
    snprintf(s->err, sizeof s->err, "%s", tm_last_error());
    if (!s->st) { /* echo one frame back */
        int t;
        uint8_t *p;
        uint32_t n;
        s->st = tm__swrm_recv(&s->c, tm__now_ms() + 5000, &t, &p, &n);
        if (!s->st) s->st = tm__swrm_send(&s->c, TM__SWRM_HEARTBEAT, p, n);
        tm__dealloc(p);
    }
    return NULL;
}

static const uint8_t KEY[] = "sixteen byte key and more";
static const uint8_t OTHER[] = "another key of enough bytes";

/* Runs a handshake; returns the client's status (server's in *server). */
static tm_status handshake(const uint8_t *ck, tm__swrm_mode cm, const uint8_t *sk,
                           tm__swrm_mode sm, side *srv, char *cerr)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return TM_EIO;
    memset(srv, 0, sizeof *srv);
    srv->fd = sv[1];
    srv->a = (tm__swrm_auth){sk, sk ? 20 : 0, sm};
    pthread_t th;
    pthread_create(&th, NULL, server_main, srv);
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_fd_io(sv[0]), "server");
    tm__swrm_auth a = {ck, ck ? 20 : 0, cm};
    tm_status st = tm__swrm_handshake_client(&c, &a, "w1", tm__now_ms() + 5000);
    snprintf(cerr, 256, "%s", tm_last_error());
    if (!st) {
        int t;
        uint8_t *p;
        uint32_t n;
        st = tm__swrm_send(&c, TM__SWRM_HEARTBEAT, "ping", 4);
        if (!st) st = tm__swrm_recv(&c, tm__now_ms() + 5000, &t, &p, &n);
        if (!st && (n != 4 || memcmp(p, "ping", 4))) st = TM_EFORMAT;
        if (!st) tm__dealloc(p);
    }
    shutdown(sv[0], SHUT_RDWR);
    pthread_join(th, NULL);
    tm__swrm_conn_wipe(&c);
    tm__swrm_conn_wipe(&srv->c);
    close(sv[0]);
    close(sv[1]);
    return st;
}

TEST(swrm_handshake_authenticates_and_encrypts)
{
    side s;
    char e[256];
    CHECK_INT(handshake(KEY, TM__SWRM_AUTH, KEY, TM__SWRM_AUTH, &s, e), TM_OK);
    CHECK_INT(s.st, TM_OK);
    CHECK(strcmp(s.name, "w1") == 0);
    CHECK_INT(handshake(KEY, TM__SWRM_ENCRYPT, KEY, TM__SWRM_AUTH, &s, e), TM_OK);
    CHECK_INT(s.c.mode, TM__SWRM_ENCRYPT);
    CHECK_INT(handshake(NULL, TM__SWRM_INSECURE, NULL, TM__SWRM_INSECURE, &s, e), TM_OK);
}

TEST(swrm_handshake_refuses_wrong_or_missing_keys)
{
    side s;
    char e[256];
    CHECK_INT(handshake(OTHER, TM__SWRM_AUTH, KEY, TM__SWRM_AUTH, &s, e), TM_EINVAL);
    CHECK(strstr(e, "authentication failed") != NULL);
    CHECK_INT(s.st, TM_EINVAL);
    CHECK(strstr(s.err, "wrong key") != NULL);
    CHECK_INT(handshake(NULL, TM__SWRM_INSECURE, KEY, TM__SWRM_AUTH, &s, e), TM_EINVAL);
    CHECK(strstr(e, "requires a key") != NULL);
    CHECK_INT(handshake(KEY, TM__SWRM_AUTH, NULL, TM__SWRM_INSECURE, &s, e), TM_EINVAL);
    CHECK(strstr(e, "without a key") != NULL);
    CHECK_INT(handshake(KEY, TM__SWRM_AUTH, KEY, TM__SWRM_ENCRYPT, &s, e), TM_EINVAL);
    CHECK(strstr(e, "requires encryption") != NULL);
}

/* A server that does not know the key cannot pass itself off: the client
 * checks WELCOME.  Simulated by a server whose proof is made with another
 * key (it accepts any PROOF). */
static void *fake_server(void *arg)
{
    side *s = arg;
    tm__swrm_conn_init(&s->c, tm__swrm_fd_io(s->fd), "client");
    int t;
    uint8_t *p;
    uint32_t n;
    if (tm__swrm_recv(&s->c, tm__now_ms() + 5000, &t, &p, &n)) return NULL;
    tm__dealloc(p);
    uint8_t chal[36] = {1};
    tm__swrm_send(&s->c, TM__SWRM_CHALLENGE, chal, 36);
    if (tm__swrm_recv(&s->c, tm__now_ms() + 5000, &t, &p, &n)) return NULL;
    tm__dealloc(p);
    uint8_t wel[32] = {0};
    tm__swrm_send(&s->c, TM__SWRM_WELCOME, wel, 32);
    return NULL;
}

TEST(swrm_client_refuses_a_server_without_the_key)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    side s;
    memset(&s, 0, sizeof s);
    s.fd = sv[1];
    pthread_t th;
    pthread_create(&th, NULL, fake_server, &s);
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_fd_io(sv[0]), "server");
    tm__swrm_auth a = {KEY, 20, TM__SWRM_AUTH};
    CHECK_STATUS(tm__swrm_handshake_client(&c, &a, "w", tm__now_ms() + 5000),
                 TM_EINVAL, "failed to prove it knows the key");
    CHECK(!c.secured);
    pthread_join(th, NULL);
    close(sv[0]);
    close(sv[1]);
}

/* A coordinator that already has a model sets the data caps before the
 * handshake; a peer that has proved nothing must still not get a frame
 * bigger than a handshake frame past the header check (nothing of the
 * claimed size is allocated), and the caps are back afterwards. */
TEST(swrm_handshake_refuses_a_data_sized_frame_before_allocating)
{
    uint8_t h[TM__SWRM_HEADER] = {'S', 'W', 'R', 'M', 1, 0, TM__SWRM_STATE, 0,
                                  0x00, 0x00, 0x00, 0xf0};
    tm__swrm_mem m = {.in = h, .in_n = sizeof h};
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_mem_io(&m), "early");
    tm__swrm_set_cap(&c, TM__SWRM_STATE, UINT32_MAX);
    tm__swrm_auth a = {KEY, 20, TM__SWRM_AUTH};
    char name[TM__SWRM_NAME_MAX + 1];
    CHECK_STATUS(tm__swrm_handshake_server(&c, &a, name, tm__now_ms() + 5000),
                 TM_EFORMAT, "STATE payload of 4026531840 bytes is over the cap");
    CHECK(c.cap[TM__SWRM_STATE] == UINT32_MAX);
    CHECK(!c.secured);
    tm__swrm_mem_free(&m);
}

TEST(swrm_a_silent_peer_hits_the_deadline)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    tm__swrm_conn c;
    tm__swrm_conn_init(&c, tm__swrm_fd_io(sv[0]), "silent");
    int t;
    uint8_t *p;
    uint32_t n;
    CHECK_STATUS(tm__swrm_recv(&c, tm__now_ms() + 50, &t, &p, &n), TM_EIO,
                 "timed out");
    tm__swrm_auth a = {KEY, 20, TM__SWRM_AUTH};
    char name[TM__SWRM_NAME_MAX + 1];
    CHECK_STATUS(tm__swrm_handshake_server(&c, &a, name, tm__now_ms() + 50), TM_EIO,
                 "timed out");
    close(sv[0]);
    close(sv[1]);
}

/* CRC32 (slicing by 8) against zlib: the standard check value, a longer
 * buffer (Python: hex(zlib.crc32(bytes((i*7+3)&255 for i in range(1000))))),
 * and every split of it folding in as one piece (the 8-byte and the
 * byte-at-a-time paths meet at every offset). */
TEST(crc32_matches_zlib_at_every_length_and_split)
{
    CHECK(tm__crc32(0, "123456789", 9) == 0xCBF43926u);
    uint8_t b[1000];
    for (int i = 0; i < 1000; i++) b[i] = (uint8_t)(i * 7 + 3);
    uint32_t whole = tm__crc32(0, b, sizeof b);
    CHECK(whole == 0x17bc2a46u);
    int bad = 0;
    for (size_t s = 0; s <= sizeof b; s++)
        bad += tm__crc32(tm__crc32(0, b, s), b + s, sizeof b - s) != whole;
    CHECK_INT(bad, 0);
}
