"""gen_swarm_corpus.py — seeds for tests/fuzz/fuzz_swarm_{frame,handshake,messages}.c.

Writes SWRM frames and payloads built from the documented layouts
(swarm/frame.h, swarm/handshake.c, swarm/compress.h, swarm/swarm_impl.h,
swarm/checkpoint.c) with Python's standard library only — CRC32 from zlib,
HMAC-SHA256 from hmac, and ChaCha20-Poly1305 written out below from RFC
8439 (checked against its test vector) — so they are independent of
Foundry's encoders, which the fuzz targets compare against.  Valid frames
of every type in every protection mode, valid payloads of every message,
and malformed variants, to tests/fuzz/corpus/swarm_frame/, swarm_handshake/
and swarm_messages/, beside the minimised fuzzer findings committed there
(crash_*, oom_*, kept).  Deterministic: rerunning rewrites the same bytes.

    python3 tests/fuzz/gen_swarm_corpus.py
"""
import hashlib
import hmac
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

(HELLO, CHALLENGE, PROOF, WELCOME, JOIN, CONFIG, STATE, STATE_REQ, TOPK,
 DENSE, UPDATE, HEARTBEAT, LEAVE, ERROR) = range(1, 15)
INSECURE, AUTH, ENCRYPT = 0, 1, 2
F_MAC, F_AEAD = 1, 2

# The session keys fuzz_swarm_frame.c gives both sides.
MAC_KEY = bytes(i + 1 for i in range(32))
ENC_KEY = bytes((i * 7 + 3) & 0xFF for i in range(32))

# ------------------------------------------------ ChaCha20-Poly1305 (RFC 8439)

def _rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def _quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = _rotl(s[b] ^ s[c], 7)


def _chacha_block(key, counter, nonce):
    init = ([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574] +
            list(struct.unpack("<8I", key)) + [counter] +
            list(struct.unpack("<3I", nonce)))
    s = list(init)
    for _ in range(10):
        _quarter(s, 0, 4, 8, 12); _quarter(s, 1, 5, 9, 13)
        _quarter(s, 2, 6, 10, 14); _quarter(s, 3, 7, 11, 15)
        _quarter(s, 0, 5, 10, 15); _quarter(s, 1, 6, 11, 12)
        _quarter(s, 2, 7, 8, 13); _quarter(s, 3, 4, 9, 14)
    return struct.pack("<16I", *((x + y) & 0xFFFFFFFF for x, y in zip(s, init)))


def chacha20_xor(key, counter, nonce, data):
    out = bytearray()
    for i in range(0, len(data), 64):
        ks = _chacha_block(key, counter + i // 64, nonce)
        out += bytes(a ^ b for a, b in zip(data[i:i + 64], ks))
    return bytes(out)


def poly1305(key, msg):
    r = int.from_bytes(key[:16], "little") & 0x0FFFFFFC0FFFFFFC0FFFFFFC0FFFFFFF
    s = int.from_bytes(key[16:], "little")
    p, acc = (1 << 130) - 5, 0
    for i in range(0, len(msg), 16):
        n = int.from_bytes(msg[i:i + 16] + b"\x01", "little")
        acc = (acc + n) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")


def aead_seal(key, nonce, aad, pt):
    otk = _chacha_block(key, 0, nonce)[:32]
    ct = chacha20_xor(key, 1, nonce, pt)
    pad = lambda b: b"\0" * (-len(b) % 16)
    mac_data = (aad + pad(aad) + ct + pad(ct) +
                struct.pack("<QQ", len(aad), len(ct)))
    return ct, poly1305(otk, mac_data)


def _check_aead():  # RFC 8439 section 2.8.2
    key = bytes(range(0x80, 0xA0))
    nonce = bytes.fromhex("070000004041424344454647")
    aad = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
    pt = (b"Ladies and Gentlemen of the class of '99: If I could offer you "
          b"only one tip for the future, sunscreen would be it.")
    ct, tag = aead_seal(key, nonce, aad, pt)
    assert ct[:16].hex() == "d31a8d34648e60db7b86afbc53ef7ec2", ct[:16].hex()
    assert tag.hex() == "1ae10b594f09e26a7e902ecbd0600691", tag.hex()


# ------------------------------------------------------------------ frames

def frame(ftype, payload=b"", mode=INSECURE, seq=0, mac_key=MAC_KEY,
          enc_key=ENC_KEY, flags=None, version=1):
    """One SWRM frame as swarm/frame.h lays it out."""
    if flags is None:
        flags = {INSECURE: 0, AUTH: F_MAC, ENCRYPT: F_AEAD}[mode]
    head = b"SWRM" + struct.pack("<HBBI", version, ftype, flags, len(payload))
    if flags & F_AEAD:
        s = struct.pack("<Q", seq)
        ct, tag = aead_seal(enc_key, b"\0" * 4 + s, head + s, payload)
        body = s + ct + tag
    elif flags & F_MAC:
        s = struct.pack("<Q", seq)
        body = s + payload + hmac.new(mac_key, head + s + payload,
                                      hashlib.sha256).digest()
    else:
        body = payload
    crc = zlib.crc32(head + body) & 0xFFFFFFFF
    return head + struct.pack("<I", crc) + body


# ---------------------------------------------------------------- payloads

def prefix(round_, hash_, contributors, kind):
    return struct.pack("<QQIB3x", round_, hash_, contributors, kind)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sparse(n, idx, vals, f16=False):
    out = struct.pack("<QQB3x", n, len(idx), 1 if f16 else 0)
    prev = 0
    for i, x in enumerate(idx):
        out += varint(x - prev if i else x)
        prev = x
    for v in vals:
        out += struct.pack("<e" if f16 else "<f", v)
    return out


def dense(vals):
    return struct.pack("<Q", len(vals)) + b"".join(struct.pack("<f", v)
                                                   for v in vals)


def join(numel=9, round_=2**64 - 1, hash_=0, mode=0, f16=0, ratio=0.01,
         warmup=0, momentum=0.9, clip=0.0, local_steps=50, outer_lr=0.7,
         outer_momentum=0.9, fingerprint=bytes(range(32)), reserved=b"\0" * 6):
    return (struct.pack("<Q", numel) + fingerprint +
            struct.pack("<QQBB", round_, hash_, mode, f16) + reserved +
            struct.pack("<dqddqdd", ratio, warmup, momentum, clip,
                        local_steps, outer_lr, outer_momentum))


def config(worker_id=1, state_follows=1, round_=7):
    return struct.pack("<IB3xQ", worker_id, state_follows, round_)


# dtype codes of a snapshot entry
S_F32, S_I64, S_F64 = 0, 1, 2


def entry(name, code, shape, data):
    return (struct.pack("<H", len(name)) + name.encode() +
            struct.pack("<BB", code, len(shape)) +
            b"".join(struct.pack("<q", s) for s in shape) + data)


def f32s(*v):
    return b"".join(struct.pack("<f", x) for x in v)


# fuzz_swarm_messages.c's model: param.0 [2,3], param.1 [3]
PARAMS = [("param.0", [2, 3]), ("param.1", [3])]


def snapshot(extra=(), params=None):
    ents = [entry(n, S_F32, s, f32s(*[0.25 * (i + 1)] * (s[0] * (s[1] if len(s) > 1 else 1))))
            for i, (n, s) in enumerate(params or PARAMS)]
    ents += list(extra)
    return struct.pack("<I", len(ents)) + b"".join(ents)


def adam_state(pfx="optim."):
    out = []
    for i, (_, s) in enumerate(PARAMS):
        numel = s[0] * (s[1] if len(s) > 1 else 1)
        out.append(entry(f"{pfx}state.{i}.step", S_I64, [], struct.pack("<q", 3)))
        out.append(entry(f"{pfx}state.{i}.exp_avg", S_F32, s, f32s(*[0.01] * numel)))
        out.append(entry(f"{pfx}state.{i}.exp_avg_sq", S_F32, s, f32s(*[0.001] * numel)))
    return out


def momentum_state(pfx):
    out = []
    for i, (_, s) in enumerate(PARAMS):
        numel = s[0] * (s[1] if len(s) > 1 else 1)
        out.append(entry(f"{pfx}state.{i}.momentum_buffer", S_F32, s,
                         f32s(*[-0.5] * numel)))
    return out


def checkpoint(numel=9, round_=4, snap=None, crc=None, version=1, kind=2):
    if snap is None:
        snap = prefix(round_, 0x1234, 0, kind) + snapshot()
    head = (b"SWCK" + struct.pack("<I", version) +
            join(numel=numel, round_=round_, hash_=0x1234) +
            struct.pack("<I", len(snap)))
    if crc is None:
        crc = zlib.crc32(head + snap) & 0xFFFFFFFF
    return head + snap + struct.pack("<I", crc)


# ------------------------------------------------------------------ writing

def clear(d):
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith(("crash_", "oom_", "leak_", "timeout_")):
            os.remove(os.path.join(d, f))


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gen_frames():
    d = os.path.join(CORPUS, "swarm_frame")
    clear(d)
    topk = prefix(3, 0xABCDEF, 0, 0) + sparse(1000, [1, 5, 900], [0.5, -1.0, 2.0])
    topk16 = prefix(3, 0xABCDEF, 0, 0) + sparse(1000, [0, 999], [0.5, -1.0], f16=True)
    dense_pl = prefix(3, 0xABCDEF, 0, 1) + dense([0.5] * 8)
    update = prefix(3, 0xABCDEF, 2, 0) + sparse(1000, [7], [0.125])
    state = prefix(3, 0xABCDEF, 0, 2) + snapshot()
    msgs = [(HELLO, b"\x01\x02\0\0" + bytes(32) + b"w1"),
            (CHALLENGE, b"\x01\0\0\0" + bytes(range(32))),
            (PROOF, bytes(range(32))), (WELCOME, bytes(range(32, 64))),
            (JOIN, join()), (CONFIG, config()), (STATE, state),
            (STATE_REQ, b""), (TOPK, topk), (TOPK, topk16), (DENSE, dense_pl),
            (UPDATE, update), (HEARTBEAT, b"\0" * 8), (LEAVE, b""),
            (ERROR, b"authentication failed")]
    names = {INSECURE: "insecure", AUTH: "mac", ENCRYPT: "aead"}
    for mode in (INSECURE, AUTH, ENCRYPT):
        m = names[mode]
        seq = 5
        # byte 0: mode + 3 * caps profile (1: a 1000-value model's data caps)
        cfg = lambda profile, s=seq: bytes([mode + 3 * profile, s])
        stream = b"".join(frame(t, p, mode, seq + i) for i, (t, p) in enumerate(msgs))
        write(d, f"{m}_every_type", cfg(1) + stream)
        for t, p in ((HEARTBEAT, b"\0" * 8), (JOIN, join()), (TOPK, topk)):
            write(d, f"{m}_one_{t}", cfg(1) + frame(t, p, mode, seq))
        write(d, f"{m}_default_caps", cfg(0) + frame(HELLO, msgs[0][1], mode, seq) +
              frame(STATE, state, mode, seq + 1))  # STATE over the default cap 0
        write(d, f"{m}_tiny_caps", cfg(2) + frame(PROOF, bytes(32), mode, seq))
        bad = bytearray(frame(TOPK, topk, mode, seq))
        bad[-1] ^= 1
        write(d, f"{m}_damaged", cfg(1) + bytes(bad))
        write(d, f"{m}_truncated", cfg(1) + frame(TOPK, topk, mode, seq)[:-3])
        if mode != INSECURE:
            write(d, f"{m}_replayed", cfg(1) + frame(LEAVE, b"", mode, seq - 1))
            write(d, f"{m}_reordered", cfg(1) + frame(LEAVE, b"", mode, seq + 1))
            write(d, f"{m}_wrong_key", cfg(1) + frame(LEAVE, b"x", mode, seq,
                                                     mac_key=bytes(32),
                                                     enc_key=bytes(32)))
            write(d, f"{m}_unprotected", cfg(1) + frame(LEAVE, b"", INSECURE))
        else:
            write(d, "insecure_claims_mac", cfg(1) + frame(LEAVE, b"", AUTH, 0))
    write(d, "bad_version", bytes([3, 0]) + frame(LEAVE, b"", version=2))
    write(d, "bad_flags", bytes([3, 0]) + frame(LEAVE, b"", flags=0x80))
    write(d, "bad_type", bytes([3, 0]) + frame(15, b""))


def gen_handshake():
    d = os.path.join(CORPUS, "swarm_handshake")
    clear(d)
    # byte 0: bit 0 client, bits 1-2 mode, 3-4 key length, 5-6 caps, 7 no deadline
    cfg = lambda client, mode, keylen=0, caps=0: bytes(
        [client | mode << 1 | keylen << 3 | caps << 5])
    hello = lambda mode, name=b"w1": (bytes([mode, len(name), 0, 0]) +
                                      bytes(range(32)) + name)
    wrong_proof = frame(PROOF, bytes(32))
    for mode, m in ((INSECURE, "insecure"), (AUTH, "mac"), (ENCRYPT, "aead")):
        write(d, f"server_{m}", cfg(0, mode, 1) + frame(HELLO, hello(mode)) + wrong_proof)
        write(d, f"server_{m}_model_caps", cfg(0, mode, 2, 2) +
              frame(HELLO, hello(mode, b"worker-7")) + wrong_proof)
        chal = bytes([mode, 0, 0, 0]) + bytes(range(32))
        write(d, f"client_{m}", cfg(1, mode, 1) + frame(CHALLENGE, chal) +
              frame(WELCOME, bytes(32)))
    write(d, "server_mac_from_insecure", cfg(0, AUTH) + frame(HELLO, hello(INSECURE)))
    write(d, "server_aead_from_mac", cfg(0, ENCRYPT) + frame(HELLO, hello(AUTH)))
    write(d, "server_insecure_from_mac", cfg(0, INSECURE) + frame(HELLO, hello(AUTH)))
    write(d, "server_name_64", cfg(0, AUTH, 3) + frame(HELLO, hello(AUTH, b"n" * 64)))
    write(d, "server_name_unprintable", cfg(0, AUTH) + frame(HELLO, hello(AUTH, b"w\x01")))
    write(d, "server_name_length_mismatch", cfg(0, AUTH) +
          frame(HELLO, bytes([1, 5, 0, 0]) + bytes(32) + b"w1"))
    write(d, "server_reserved_set", cfg(0, AUTH) +
          frame(HELLO, bytes([1, 0, 1, 0]) + bytes(32)))
    write(d, "server_write_full", cfg(0, AUTH, 0, 3) + frame(HELLO, hello(AUTH)))
    write(d, "server_secured_hello", cfg(0, AUTH) + frame(HELLO, hello(AUTH), AUTH))
    write(d, "server_state_before_hello", cfg(0, AUTH, 0, 2) +
          frame(STATE, prefix(0, 0, 0, 2) + snapshot()))
    write(d, "client_refused", cfg(1, AUTH) + frame(ERROR, b"authentication failed"))
    write(d, "client_refused_after_proof", cfg(1, AUTH) +
          frame(CHALLENGE, b"\x01\0\0\0" + bytes(32)) + frame(ERROR, b"no\x00\xff"))
    write(d, "client_wrong_mode", cfg(1, AUTH) + frame(CHALLENGE, b"\x02\0\0\0" + bytes(32)))
    write(d, "client_short_challenge", cfg(1, ENCRYPT) + frame(CHALLENGE, b"\x02\0\0\0"))


def gen_messages():
    d = os.path.join(CORPUS, "swarm_messages")
    clear(d)
    # byte 0: decoder, byte 1: its setting
    w = lambda name, which, arg, payload: write(d, name, bytes([which, arg]) + payload)
    for which, style in ((0, "coord"), (1, "bounded")):
        arg = 0 if which == 0 else 8 << 2  # n = 10; k_max 8 when bounded
        w(f"sparse_{style}_f32", which, arg, sparse(10, [0, 3, 9], [1.0, -2.0, 0.5]))
        w(f"sparse_{style}_f16", which, arg, sparse(10, [2, 4], [1.5, -0.0], f16=True))
        w(f"sparse_{style}_empty", which, arg, sparse(10, [], []))
    w("sparse_n1000", 0, 1, sparse(1000, [0, 130, 999], [1.0, 2.0, 3.0]))
    w("sparse_big_n", 0, 2, sparse(1 << 40, [5, (1 << 40) - 1], [1.0, 2.0]))
    w("sparse_own_n", 0, 3, sparse(2**63 - 1, [2**62, 2**63 - 2], [1.0, 2.0]))
    w("sparse_duplicate", 0, 0, struct.pack("<QQB3x", 10, 2, 0) + b"\x03\x00" +
      f32s(1, 2))
    w("sparse_noncanonical", 0, 0, struct.pack("<QQB3x", 10, 1, 0) + b"\x83\x00" + f32s(1))
    w("sparse_out_of_range", 0, 0, struct.pack("<QQB3x", 10, 2, 0) + b"\x03\x09" +
      f32s(1, 2))
    w("sparse_nan", 0, 0, struct.pack("<QQB3x", 10, 1, 0) + b"\x01" +
      struct.pack("<I", 0x7FC00000))
    w("sparse_f16_inf", 0, 0, struct.pack("<QQB3x", 10, 1, 1) + b"\x01\x00\x7c")
    w("sparse_trailing", 0, 0, sparse(10, [1], [1.0]) + b"\0")
    w("sparse_long_varint", 0, 3, struct.pack("<QQB3x", 2**63 - 1, 1, 0) +
      b"\xff" * 9 + b"\x02" + f32s(1))
    w("join_topk", 2, 0, join())
    w("join_dense_f16", 2, 0, join(mode=1, f16=1, round_=12, hash_=99))
    w("join_diloco", 2, 0, join(mode=2, local_steps=20, outer_lr=0.5))
    w("join_reserved", 2, 0, join(reserved=b"\0\0\x01\0\0\0"))
    w("join_nan_ratio", 2, 0, join(ratio=float("nan")))
    w("config", 3, 0, config())
    w("config_no_state", 3, 0, config(9, 0, 2**64 - 1))
    w("config_worker_0", 3, 0, config(0))
    for kind in (0, 1, 2):
        w(f"prefix_kind{kind}", 4, 0, prefix(9, 2**64 - 1, 3, kind))
    w("prefix_bad_kind", 4, 0, prefix(9, 0, 0, 3))
    w("dense", 5, 1, dense([0.5, -1.0, 3.0, 0.0]))
    w("dense_fixed_n", 5, 4 << 1, dense([1.0, 2.0, 3.0, 4.0]))
    w("dense_inf", 5, 1, dense([0.5, float("inf")]))
    # snapshots: arg & 3 = inner optimizer (none, Adam, SGD momentum),
    # arg & 4 = DiLoCo's outer SGD
    w("state_params", 6, 0, snapshot())
    w("state_adam", 6, 1, snapshot(adam_state()))
    w("state_sgd", 6, 2, snapshot(momentum_state("optim.")))
    w("state_adam_outer", 6, 5, snapshot(adam_state() + momentum_state("outer.")))
    w("state_fresh_optim", 6, 1, snapshot())
    w("state_wrong_shape", 6, 0, snapshot(params=[("param.0", [3, 2]), ("param.1", [3])]))
    w("state_wrong_name", 6, 0, snapshot(params=[("param.1", [2, 3]), ("param.1", [3])]))
    w("state_unexpected", 6, 0, snapshot(momentum_state("outer.")))
    w("state_negative_step", 6, 1, snapshot([entry("optim.state.0.step", S_I64, [],
                                                   struct.pack("<q", -1))]))
    w("state_f64_i64", 6, 1, snapshot([entry("optim.state.0.exp_avg", S_F64, [2, 3],
                                             b"\0" * 48)]))
    w("state_trailing", 6, 0, snapshot() + b"\0")
    w("state_truncated", 6, 0, snapshot()[:-1])
    w("ckpt", 7, 0, checkpoint())
    w("ckpt_bad_crc", 7, 0, checkpoint(crc=0))
    w("ckpt_version2", 7, 0, checkpoint(version=2))
    w("ckpt_wrong_kind", 7, 0, checkpoint(kind=1))
    w("ckpt_round_mismatch", 7, 0, checkpoint(snap=prefix(3, 0, 0, 2) + snapshot()))
    w("ckpt_empty_snapshot", 7, 0, checkpoint(snap=b""))
    w("ckpt_short", 7, 0, checkpoint()[:100])
    # a record claiming more values than the snapshot holds (2^40: the
    # coordinator sized 5 TiB of round buffers by it before the fix)
    w("ckpt_numel_over_snapshot", 7, 0, checkpoint(numel=1 << 40))


if __name__ == "__main__":
    _check_aead()
    gen_frames()
    gen_handshake()
    gen_messages()
    for sub in ("swarm_frame", "swarm_handshake", "swarm_messages"):
        p = os.path.join(CORPUS, sub)
        files = os.listdir(p)
        print(f"{sub}: {len(files)} files, "
              f"{sum(os.path.getsize(os.path.join(p, f)) for f in files)} bytes")
