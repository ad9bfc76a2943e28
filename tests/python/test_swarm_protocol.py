"""docs/swarm-protocol.md is precise enough to interoperate: an independent
implementation of the SWRM frame layer and the HMAC handshake, written from
that page alone (hashlib, hmac, struct and zlib's CRC32; no Foundry code),
talks to a real Foundry coordinator over loopback.  Foundry is used only to
start that coordinator (through the C API)."""
import hashlib
import hmac
import socket
import struct
import threading
import zlib

import numpy as np
import pytest

from foundry._c import ffi, lib

KEY = bytes(range(1, 33))
HEADER = 16
TYPES = {name: i + 1 for i, name in enumerate(
    "HELLO CHALLENGE PROOF WELCOME JOIN CONFIG STATE STATE_REQ TOPK DENSE "
    "UPDATE HEARTBEAT LEAVE ERROR".split())}
F_MAC = 0x01
FRESH = 0xFFFFFFFFFFFFFFFF
M64 = (1 << 64) - 1
P1, P2 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F


# ------------------------------------------------------------ frame layer

class Conn:
    """One side of a SWRM connection: flags 0 until `secure` installs the
    session's MAC keys, then seq + HMAC-SHA256 tag on every frame."""

    def __init__(self, sock):
        self.sock = sock
        self.mac_tx = self.mac_rx = None
        self.seq_tx = self.seq_rx = 0

    def secure(self, mac_tx, mac_rx):
        self.mac_tx, self.mac_rx = mac_tx, mac_rx
        self.seq_tx = self.seq_rx = 0

    def send(self, type_name, payload=b""):
        flags = F_MAC if self.mac_tx else 0
        head = b"SWRM" + struct.pack("<HBBI", 1, TYPES[type_name], flags,
                                     len(payload))
        body = payload
        if flags:
            seq = struct.pack("<Q", self.seq_tx)
            tag = hmac.new(self.mac_tx, head + seq + payload,
                           hashlib.sha256).digest()
            body = seq + payload + tag
            self.seq_tx += 1
        crc = zlib.crc32(body, zlib.crc32(head))
        self.sock.sendall(head + struct.pack("<I", crc) + body)

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError("peer closed the connection")
            out += chunk
        return out

    def recv(self):
        """(type name, flags, payload); checks CRC, MAC and seq."""
        h = self._read(HEADER)
        assert h[:4] == b"SWRM"
        version, t, flags, n = struct.unpack("<HBBI", h[4:12])
        assert version == 1 and 1 <= t <= 14
        assert flags == (F_MAC if self.mac_rx else 0), flags
        extra = 8 + 32 if flags else 0
        body = self._read(extra + n)
        assert zlib.crc32(body, zlib.crc32(h[:12])) == \
            struct.unpack("<I", h[12:])[0], "CRC"
        payload = body
        if flags:
            seq, payload, tag = body[:8], body[8:8 + n], body[8 + n:]
            want = hmac.new(self.mac_rx, h[:12] + seq + payload,
                            hashlib.sha256).digest()
            assert hmac.compare_digest(want, tag), "MAC"
            assert struct.unpack("<Q", seq)[0] == self.seq_rx, "seq"
            self.seq_rx += 1
        name = [k for k, v in TYPES.items() if v == t][0]
        return name, flags, payload

    def recv_skipping_heartbeats(self):
        while True:
            frame = self.recv()
            if frame[0] != "HEARTBEAT":
                return frame


# -------------------------------------------------------------- handshake

def hkdf_sha256(salt, ikm, info, length):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def handshake(conn, key, name=b"pytest", nonce=None):
    """The worker's side in mode 1.  Returns None when secured, else the
    (type, flags, payload) the coordinator answered instead."""
    nonce_c = nonce or bytes(range(100, 132))
    hello = bytes([1, len(name), 0, 0]) + nonce_c + name
    conn.send("HELLO", hello)
    t, flags, chal = conn.recv()
    assert (t, flags, len(chal)) == ("CHALLENGE", 0, 36)
    assert chal[:4] == bytes([1, 0, 0, 0])
    proof = hmac.new(key, b"SWRM-v1 client" + hello + chal,
                     hashlib.sha256).digest()
    conn.send("PROOF", proof)
    t, flags, welcome = conn.recv()
    if t != "WELCOME":
        return t, flags, welcome
    want = hmac.new(key, b"SWRM-v1 server" + hello + chal + proof,
                    hashlib.sha256).digest()
    assert hmac.compare_digest(welcome, want), "the coordinator's proof"
    k = hkdf_sha256(nonce_c + chal[4:], key, b"SWRM-v1 session keys", 128)
    conn.secure(mac_tx=k[0:32], mac_rx=k[32:64])
    return None


# -------------------------------------------------- model identity, JOIN

def fingerprint(params):
    h = hashlib.sha256()
    for name, shape in params:
        h.update(name.encode() + b"\0" + bytes([len(shape)]))
        for d in shape:
            h.update(struct.pack("<Q", d))
    return h.digest()


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def hash_words(w, seed):
    n = len(w)
    lanes = [(seed + P1) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
    i = 0
    while i + 8 <= n:
        for j in range(4):
            v = w[i + 2 * j] | w[i + 2 * j + 1] << 32
            lanes[j] = rotl((lanes[j] + v * P2) & M64, 31) * P1 & M64
        i += 8
    h = (rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) +
         rotl(lanes[3], 18)) & M64
    for x in w[i:]:
        h = rotl(h ^ (x * P1 & M64), 23) * P2 & M64
    h ^= n
    h ^= h >> 33
    h = h * P2 & M64
    h ^= h >> 29
    return h


def params_hash(tensors):
    chunk_hashes = []
    for t in tensors:
        words = np.ascontiguousarray(t, np.float32).view(np.uint32).ravel()
        for off in range(0, len(words), 65536):
            chunk_hashes.append(hash_words(
                [int(x) for x in words[off:off + 65536]],
                len(chunk_hashes)))
    words = []
    for h in chunk_hashes:
        words += [h & 0xFFFFFFFF, h >> 32]
    return hash_words(words, P1)


def join_payload(numel, fp, round_, hash_, mode=1):
    head = struct.pack("<Q32sQQBB6x", numel, fp, round_, hash_, mode, 0)
    settings = struct.pack("<dqddqdd", 0.01, 0, 0.0, 0.0, 50, 0.7, 0.9)
    payload = head + settings
    assert len(payload) == 120
    return payload


def prefix(round_, hash_, contributors, kind):
    return struct.pack("<QQIB3x", round_, hash_, contributors, kind)


# ------------------------------------------------------------ coordinator

@pytest.fixture
def coordinator():
    """A real Foundry coordinator on a free loopback port, served from a
    thread (cffi releases the GIL around the C call)."""
    key = ffi.new("uint8_t[]", KEY)
    o = ffi.new("tm_swarm_opts *", lib.tm_swarm_defaults())
    o.key, o.key_len, o.port = key, len(KEY), 0
    co = lib.tm_swarm_coordinator_new(o)
    assert co != ffi.NULL, ffi.string(lib.tm_last_error())
    th = threading.Thread(target=lib.tm_swarm_coordinator_run, args=(co,))
    th.start()
    socks = []

    def connect():
        s = socket.create_connection(
            ("127.0.0.1", lib.tm_swarm_coordinator_port(co)), timeout=10)
        socks.append(s)
        return Conn(s)

    def stats():
        st = ffi.new("tm_swarm_stats *")
        lib.tm_swarm_coordinator_stats(co, st)
        return st

    yield connect, stats
    for s in socks:
        s.close()
    lib.tm_swarm_coordinator_stop(co)
    th.join()
    lib.tm_swarm_coordinator_free(co)


MODEL = [("w", (2, 3)), ("b", (3,))]


def model_values():
    return [np.arange(6, dtype=np.float32).reshape(2, 3) / 8,
            np.array([-1.5, 0.0, 2.25], np.float32)]


def test_handshake_then_join_gets_config_and_a_dense_round(coordinator):
    connect, stats = coordinator
    c = connect()
    assert handshake(c, KEY) is None
    values = model_values()
    numel = sum(v.size for v in values)
    h = params_hash(values)
    c.send("JOIN", join_payload(numel, fingerprint(MODEL), FRESH, h))
    # recv() has checked the CRC, the MAC and the sequence number
    t, flags, cfg = c.recv_skipping_heartbeats()
    assert (t, flags, len(cfg)) == ("CONFIG", F_MAC, 16)
    worker_id, state_follows, round_ = struct.unpack("<IB3xQ", cfg)
    # the first replica: its own state is the swarm's, from round 0
    assert worker_id >= 1 and state_follows == 0 and round_ == 0

    # one dense round: the only contributor's gradient comes back as the
    # average, with the prefix the document gives
    grad = np.array([0.5, -0.25, 1, 2, 3, -4, 0.125, 8, -16], np.float32)
    c.send("DENSE", prefix(0, h, 0, 1) + struct.pack("<Q", numel) +
           grad.tobytes())
    t, flags, upd = c.recv_skipping_heartbeats()
    assert (t, flags) == ("UPDATE", F_MAC)
    assert struct.unpack("<QQIB3x", upd[:24]) == (0, h, 1, 1)
    assert struct.unpack("<Q", upd[24:32])[0] == numel
    np.testing.assert_array_equal(np.frombuffer(upd[32:], np.float32), grad)
    c.send("LEAVE")
    s = stats()
    assert (s.joins, s.rounds, s.refused) == (1, 1, 0)


def test_a_wrong_key_is_refused_with_an_error_frame(coordinator):
    connect, stats = coordinator
    c = connect()
    answer = handshake(c, b"not the swarm's key, 32 bytes..!")
    assert answer == ("ERROR", 0, b"authentication failed")
    with pytest.raises(EOFError):
        c.recv()
    assert stats().refused == 1 and stats().joins == 0


def test_a_second_model_is_refused_with_an_authenticated_error(coordinator):
    connect, stats = coordinator
    first = connect()
    assert handshake(first, KEY) is None
    first.send("JOIN", join_payload(9, fingerprint(MODEL), FRESH, 1))
    assert first.recv_skipping_heartbeats()[0] == "CONFIG"
    other = connect()
    assert handshake(other, KEY, name=b"other",
                     nonce=bytes(range(32))) is None
    other.send("JOIN", join_payload(10, fingerprint([("w", (10,))]),
                                    FRESH, 2))
    t, flags, msg = other.recv_skipping_heartbeats()
    assert (t, flags) == ("ERROR", F_MAC)
    assert b"is not the swarm's" in msg
    with pytest.raises(EOFError):
        other.recv_skipping_heartbeats()
    assert stats().refused == 1 and stats().joins == 1


def test_a_real_worker_joins_an_independent_coordinator():
    """The other way round: the Python side plays the coordinator's part
    of the handshake, and a real Foundry worker's JOIN carries exactly the
    fingerprint and parameter hash the document defines (two chunks in the
    first parameter, so chunk seeds and the 8-word loop both count)."""
    rng = np.random.default_rng(7)
    model = [("layer.weight", (350, 200)), ("layer.bias", (5,))]
    values = [rng.standard_normal(s).astype(np.float32) for _, s in model]
    params = lib.tm_params_new()
    for (name, shape), v in zip(model, values):
        t = lib.tm_from_buffer(ffi.from_buffer(v), shape, len(shape),
                               lib.TM_F32)
        assert lib.tm_params_add(params, name.encode(), t, False) == 0
        lib.tm_free(t)
    hp = ffi.new("tm_optim_hparams *", lib.tm_optim_defaults(lib.TM_OPTIM_SGD))
    opt = lib.tm_optim_new(lib.TM_OPTIM_SGD, hp)
    assert lib.tm_optim_add_params(opt, params, ffi.NULL) >= 0

    listener = socket.create_server(("127.0.0.1", 0))
    key = ffi.new("uint8_t[]", KEY)
    host, wname = ffi.new("char[]", b"127.0.0.1"), ffi.new("char[]", b"py-w")
    o = ffi.new("tm_swarm_opts *", lib.tm_swarm_defaults())
    o.key, o.key_len, o.host, o.name = key, len(KEY), host, wname
    o.port, o.mode, o.reconnect_ms = listener.getsockname()[1], 1, 1
    joined = {}
    th = threading.Thread(target=lambda: joined.setdefault(
        "sw", lib.tm_swarm_join(o, params, opt)))
    th.start()
    try:
        s, _ = listener.accept()
        s.settimeout(10)
        c = Conn(s)
        t, flags, hello = c.recv()
        assert (t, flags, len(hello)) == ("HELLO", 0, 36 + 4)
        assert hello[:4] == bytes([1, 4, 0, 0]) and hello[36:] == b"py-w"
        chal = bytes([1, 0, 0, 0]) + bytes(range(50, 82))
        c.send("CHALLENGE", chal)
        t, flags, proof = c.recv()
        assert (t, len(proof)) == ("PROOF", 32)
        assert proof == hmac.new(KEY, b"SWRM-v1 client" + hello + chal,
                                 hashlib.sha256).digest()
        c.send("WELCOME", hmac.new(KEY, b"SWRM-v1 server" + hello + chal +
                                   proof, hashlib.sha256).digest())
        k = hkdf_sha256(hello[4:36] + chal[4:], KEY, b"SWRM-v1 session keys",
                        128)
        c.secure(mac_tx=k[32:64], mac_rx=k[0:32])
        t, flags, join = c.recv()
        assert (t, flags, len(join)) == ("JOIN", F_MAC, 120)
        numel, fp, round_, h, mode, f16 = struct.unpack("<Q32sQQBB6x",
                                                        join[:64])
        assert numel == sum(v.size for v in values)
        assert fp == fingerprint(model)
        assert round_ == FRESH and mode == 1 and f16 == 0
        assert h == params_hash(values)
        assert struct.unpack("<dqddqdd", join[64:]) == (
            0.01, 0, 0.0, 0.0, 50, 0.7, 0.9)
        c.send("CONFIG", struct.pack("<IB3xQ", 7, 0, 3))
        th.join(10)
        sw = joined["sw"]
        assert sw != ffi.NULL, ffi.string(lib.tm_last_error())
        assert (lib.tm_swarm_rank(sw), lib.tm_swarm_round(sw)) == (7, 3)
        lib.tm_swarm_leave(sw)
        assert c.recv_skipping_heartbeats()[:2] == ("LEAVE", F_MAC)
        s.close()
    finally:
        th.join(10)
        listener.close()
        lib.tm_optim_free(opt)
        lib.tm_params_free(params)
