/*
 * frame.h — the SWRM wire format and its handshake (internal).
 * docs/swarm-protocol.md is the specification; this is its C shape.
 *
 * A frame is a 16-byte header, then a body:
 *
 *   offset size  field
 *   0      4     magic "SWRM"
 *   4      2     version (TM__SWRM_VERSION)
 *   6      1     message type (tm__swrm_type)
 *   7      1     flags (TM__SWRM_F_*; unknown bits are refused)
 *   8      4     payload length in bytes (the payload only, not seq/tag)
 *   12     4     CRC32 (IEEE, as zlib) over header bytes 0..11 then the
 *                whole body as sent
 *   16     ...   body: [seq u64 when F_MAC or F_AEAD] payload [tag]
 *
 * Little-endian throughout.  Before the handshake ends frames carry no
 * sequence number and no tag (flags 0).  After it, every frame on an
 * authenticated connection carries the sender's sequence number (0, 1, 2,
 * ... per direction) and either an HMAC-SHA256 tag (32 bytes, F_MAC) over
 * header bytes 0..11, seq and payload, or, with encryption, a ChaCha20-
 * Poly1305 tag (16 bytes, F_AEAD) with header bytes 0..11 and seq as the
 * associated data and the payload encrypted.  A receiver refuses a frame
 * whose tag is wrong, whose seq is not the next one expected (older:
 * replayed; newer: reordered or dropped), or that lacks the protection the
 * session uses.
 *
 * The receiver checks the header (magic, version, type, flags, length
 * against the cap for the type) before it allocates, then reads the body
 * before a deadline, then checks CRC, tag and seq in that order.  Every
 * refusal is a TM_EFORMAT (or TM_EIO for a closed or silent peer) with a
 * message naming what was wrong; the caller then closes the connection.
 */
#ifndef FOUNDRY_SWARM_FRAME_H
#define FOUNDRY_SWARM_FRAME_H

#include "foundry/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM__SWRM_VERSION 1
#define TM__SWRM_HEADER 16
#define TM__SWRM_NONCE 32   /* handshake nonce bytes, each side */
#define TM__SWRM_NAME_MAX 64 /* a peer's name in HELLO */

typedef enum tm__swrm_type {
    TM__SWRM_HELLO = 1,     /* client -> server: mode, nonce, name */
    TM__SWRM_CHALLENGE = 2, /* server -> client: mode, nonce */
    TM__SWRM_PROOF = 3,     /* client -> server: HMAC proof of the key */
    TM__SWRM_WELCOME = 4,   /* server -> client: HMAC proof of the key */
    TM__SWRM_JOIN = 5,      /* worker -> coordinator */
    TM__SWRM_CONFIG = 6,    /* coordinator -> worker: join accepted */
    TM__SWRM_STATE = 7,     /* parameter sync: a state snapshot, either way */
    TM__SWRM_STATE_REQ = 8, /* coordinator -> worker: send a snapshot */
    TM__SWRM_TOPK = 9,      /* worker -> coordinator: sparse gradient */
    TM__SWRM_DENSE = 10,    /* worker -> coordinator: dense gradient */
    TM__SWRM_UPDATE = 11,   /* coordinator -> worker: the averaged update */
    TM__SWRM_HEARTBEAT = 12,
    TM__SWRM_LEAVE = 13,
    TM__SWRM_ERROR = 14,    /* a UTF-8 message; the sender then closes */
    TM__SWRM_TYPE_END
} tm__swrm_type;

/* "HELLO", ...; "unknown" outside the range.  Static string. */
const char *tm__swrm_type_name(int type);

#define TM__SWRM_F_MAC 0x01u  /* seq + HMAC-SHA256 tag */
#define TM__SWRM_F_AEAD 0x02u /* seq + encrypted payload + Poly1305 tag */
#define TM__SWRM_F_KNOWN (TM__SWRM_F_MAC | TM__SWRM_F_AEAD)

/* The session's protection, chosen in the handshake. */
typedef enum tm__swrm_mode {
    TM__SWRM_INSECURE = 0, /* no key: CRC only (needs an explicit opt-in) */
    TM__SWRM_AUTH = 1,     /* HMAC per frame (the default) */
    TM__SWRM_ENCRYPT = 2,  /* ChaCha20-Poly1305 per frame */
} tm__swrm_mode;

/* CRC32 (IEEE 802.3, reflected, as zlib's crc32): start with crc = 0.
 * The one io/inflate.c defines for gzip. */
uint32_t tm__crc32(uint32_t crc, const void *p, size_t n);

/* Monotonic clock in milliseconds. */
int64_t tm__now_ms(void);

/* Fills p[0..n) from the system's random source (getrandom or
 * /dev/urandom); TM_EIO when it cannot. */
tm_status tm__random_bytes(void *p, size_t n);

/* ------------------------------------------------------------------ I/O */

/* A byte stream: read exactly n bytes or write all n bytes before the
 * absolute deadline (tm__now_ms() clock; < 0: no deadline).  TM_EIO with a
 * message on end of stream ("peer closed the connection"), timeout ("no
 * data for N ms") or a system error. */
typedef struct tm__swrm_io {
    tm_status (*read)(void *ctx, void *buf, size_t n, int64_t deadline_ms);
    tm_status (*write)(void *ctx, const void *buf, size_t n,
                       int64_t deadline_ms);
    void *ctx;
} tm__swrm_io;

/* A socket (or pipe) file descriptor as a byte stream; poll() enforces
 * the deadlines, so a blocking or non-blocking fd both work.  ctx is the
 * fd cast through intptr_t. */
tm__swrm_io tm__swrm_fd_io(int fd);

/* An in-memory stream for tests and fuzzing: reads come from in[0..in_n)
 * (end of stream after), writes go to out (grown with tm__alloc, up to
 * out_cap_limit bytes, then TM_EIO). */
typedef struct tm__swrm_mem {
    const uint8_t *in;
    size_t in_n, in_pos;
    uint8_t *out;
    size_t out_n, out_cap, out_cap_limit;
} tm__swrm_mem;
tm__swrm_io tm__swrm_mem_io(tm__swrm_mem *m);
void tm__swrm_mem_free(tm__swrm_mem *m); /* frees out */

/* ----------------------------------------------------------- connection */

typedef struct tm__swrm_conn {
    tm__swrm_io io;
    tm__swrm_mode mode;      /* after the handshake */
    bool secured;            /* handshake done: seq and tags in force */
    uint8_t mac_tx[32], mac_rx[32]; /* HMAC keys, per direction */
    uint8_t enc_tx[32], enc_rx[32]; /* AEAD keys, per direction */
    uint64_t seq_tx, seq_rx; /* next seq to send / expected */
    uint32_t cap[TM__SWRM_TYPE_END]; /* payload byte cap per type */
    int64_t timeout_ms;      /* per-frame read deadline once a header
                                starts arriving; <= 0: none */
    char peer[80];           /* for messages: "127.0.0.1:5000 (w3)" */
    bool wrong_key;          /* server side: the peer's proof failed */
} tm__swrm_conn;

/* A connection over io with the default caps: handshake and control
 * frames small (HELLO..WELCOME 256 bytes, JOIN/CONFIG 4 KiB, HEARTBEAT
 * 64, LEAVE/ERROR 1 KiB, STATE_REQ 64), data frames (STATE, TOPK, DENSE,
 * UPDATE) 0 until the caller sets them from the model's size. */
void tm__swrm_conn_init(tm__swrm_conn *c, tm__swrm_io io, const char *peer);
/* Wipes the keys (the io is the caller's to close). */
void tm__swrm_conn_wipe(tm__swrm_conn *c);
void tm__swrm_set_cap(tm__swrm_conn *c, tm__swrm_type type, uint32_t bytes);

/* Sends one frame (payload may be NULL with n = 0).  With a secured
 * session it adds seq and tag (and encrypts a copy; the caller's payload
 * is not changed).  Not thread-safe per direction: one sender at a time. */
tm_status tm__swrm_send(tm__swrm_conn *c, tm__swrm_type type,
                        const void *payload, uint32_t n);

/* Receives one frame: *type, and *payload (tm__alloc'd, the caller frees
 * with tm__dealloc; NULL when n = 0) of *n bytes.  deadline_ms bounds the
 * wait for the header (< 0: wait forever); once a header has arrived the
 * body must follow within c->timeout_ms.  An ERROR frame from the peer is
 * returned as a frame (the caller decides), not as a failure. */
tm_status tm__swrm_recv(tm__swrm_conn *c, int64_t deadline_ms, int *type,
                        uint8_t **payload, uint32_t *n);

/* Checks a header (magic, version, type, flags, length against c's caps
 * and the session's protection) without reading anything; fills *type,
 * *flags and *n.  Exposed for the fuzz target and the tests. */
tm_status tm__swrm_check_header(const tm__swrm_conn *c,
                                const uint8_t h[TM__SWRM_HEADER], int *type,
                                unsigned *flags, uint32_t *n);

/* ------------------------------------------------------------ handshake */

/* While either side's handshake runs, every cap of c is held to at most
 * 256 bytes (ERROR: 1 KiB), so data caps set beforehand do not let a peer
 * that has proved nothing make the receiver allocate for a big frame; c's
 * caps are as they were afterwards. */

/* What one side knows: the pre-shared key (NULL with insecure), and the
 * protection it asks for (client) or requires at least (server). */
typedef struct tm__swrm_auth {
    const uint8_t *key;
    size_t key_n;         /* >= 16 bytes when key is set */
    tm__swrm_mode mode;   /* TM__SWRM_INSECURE only with key == NULL */
} tm__swrm_auth;

/* Client side: HELLO, CHALLENGE, PROOF, WELCOME; then c is secured (or
 * insecure by agreement).  The server's proof is checked too, so a client
 * never talks to a coordinator that does not know the key.  A refusal by
 * the server (an ERROR frame) is returned as TM_EINVAL with the server's
 * message. */
tm_status tm__swrm_handshake_client(tm__swrm_conn *c, const tm__swrm_auth *a,
                                    const char *name, int64_t deadline_ms);
/* Server side.  A client with no key, the wrong key or weaker protection
 * than a->mode is sent an ERROR frame saying why and refused (TM_EINVAL);
 * its name (NUL-terminated, at most TM__SWRM_NAME_MAX bytes, printable
 * ASCII only) lands in name_out. */
tm_status tm__swrm_handshake_server(tm__swrm_conn *c, const tm__swrm_auth *a,
                                    char name_out[TM__SWRM_NAME_MAX + 1],
                                    int64_t deadline_ms);

#endif
