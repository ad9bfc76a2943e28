"""Byte-compatibility vectors of the quantized formats (tests/data/quant/,
read by tests/c/test_quant_formats.c), from implementations independent
of Foundry: the `gguf` package (its quantizers of Q8_0, Q4_0, Q4_1, Q5_0,
Q5_1 transcribe ggml's reference code; its dequantizers cover every
weight format) and tests/gen/ggml_quant_ref.py (numpy transcriptions of
ggml's Q8_1 / Q8_K code and of its K-quant reference quantizers).

    .venv/bin/python tests/gen/gen_quant_vectors.py [--real RUN/model.safetensors]
    .venv/bin/python tests/gen/gen_quant_vectors.py --measure [--real ...]

Real trained weights come from tests/data/quant/real_weights.f32 (32
runs of 256 values spread over a small GPT's matrices, raw little-endian
F32), which --real re-extracts from a checkpoint; so `make refdata`
regenerates the same files without one.

One file per dtype, <name>.qvec, little-endian:
    "FQVEC1\\0\\0", u32 record count, then records of
    u32 kind, u32 label length, label bytes, u64 n (values), payload:
      kind 1 (quantize):   f32[n] input, u8[row bytes] expected blocks
      kind 2 (dequantize): u8[row bytes] blocks, f32[n] expected values
      kind 3 (rmse):       f32[n] input, f64 RMSE of ggml's reference
                           quantizer on it (Foundry must do no worse; the
                           32-value formats equal it)
--measure prints, for the docs, ggml's reference RMSE against Foundry's
(through lib/libfoundry.so's tm_quantize_rows / tm_dequantize_rows) on
larger samples of every distribution.
"""
import argparse
import ctypes
import json
import os
import struct
import sys

import numpy as np

np.seterr(all="ignore")  # NaN / Inf halves in the dequantize vectors are on purpose

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ggml_quant_ref as R  # noqa: E402

DATA = os.path.join(HERE, "..", "data", "quant")
F = np.float32

# name: (foundry dtype value, block, block bytes)
TYPES = {
    "q8_0": (32, 32, 34), "q4_0": (33, 32, 18), "q4_1": (34, 32, 20),
    "q8_1": (35, 32, 36), "q5_0": (36, 32, 22), "q5_1": (37, 32, 24),
    "q4_k": (38, 256, 144), "q5_k": (39, 256, 176), "q6_k": (40, 256, 210),
    "q8_k": (41, 256, 292),
}
# where each format keeps its halves (byte offsets in a block)
HALVES = {"q8_0": [0], "q4_0": [0], "q4_1": [0, 2], "q8_1": [0, 2],
          "q5_0": [0], "q5_1": [0, 2], "q4_k": [0, 2], "q5_k": [0, 2],
          "q6_k": [208], "q8_k": []}


def gguf_type(name):
    from gguf import GGMLQuantizationType as G
    return getattr(G, name.upper(), None)


def quantize(name, x):
    x = np.asarray(x, F)
    blk = TYPES[name][1]
    if name == "q8_1":
        return R.quantize_q8_1(x.reshape(-1, 32)).reshape(-1)
    if name == "q8_k":
        return R.quantize_q8_k(x.reshape(-1, 256)).reshape(-1)
    if name == "q4_k":
        return R.quantize_q4_k(x).reshape(-1)
    if name == "q5_k":
        return R.quantize_q5_k(x).reshape(-1)
    if name == "q6_k":
        return R.quantize_q6_k(x).reshape(-1)
    import gguf
    return gguf.quants.quantize(x.reshape(-1, blk), gguf_type(name)).reshape(-1)


def dequantize(name, raw):
    blk, nbytes = TYPES[name][1:]
    raw = np.asarray(raw, np.uint8).reshape(-1, nbytes)
    if name == "q8_1":
        return R.dequantize_q8_1(raw).reshape(-1)
    if name == "q8_k":
        return R.dequantize_q8_k(raw).reshape(-1)
    import gguf
    return gguf.quants.dequantize(raw, gguf_type(name)).astype(F).reshape(-1)


# ------------------------------------------------------------ inputs


def edge_blocks32(rng):
    """32-value blocks exercising each rounding rule's corners."""
    g = lambda s=1.0: (rng.standard_normal(32) * s).astype(F)
    out = {}
    out["zeros"] = np.zeros(32, F)
    b = g(0.1)
    b[5] = 1e4
    out["one_huge"] = b
    b = np.clip(g(1.0), -3, 3)
    b[7] = -5
    out["negative_max"] = b
    out["tiny"] = g(1e-6)  # d is a subnormal half
    b = np.clip(g(1.0), -2.5, 2.5)
    b[3], b[20] = 3.0, -3.0
    out["tie_pos_first"] = b
    b = b.copy()
    b[3], b[20] = -3.0, 3.0
    out["tie_neg_first"] = b
    # scale exactly 1 and values on the .5 boundaries of each rule:
    # Q4_0/Q5_0 (max -8/-16 -> d = 1), Q8_0 (amax 127 -> d = 1)
    out["halves_q4"] = np.concatenate([[-8.0], np.arange(31) * 0.5 - 7.25]).astype(F)
    out["halves_q5"] = np.concatenate([[-16.0], np.arange(31) - 15.5]).astype(F)
    out["halves_q8"] = np.concatenate([[127.0], np.arange(31) * 4.0 - 61.5]).astype(F)
    out["halves_q4_1"] = np.concatenate([[0.0, 15.0], np.arange(30) * 0.5 + 0.25]).astype(F)
    out["halves_q5_1"] = np.concatenate([[0.0, 31.0], np.arange(30) + 0.5]).astype(F)
    out["constant"] = np.full(32, 0.75, F)
    out["constant_negative"] = np.full(32, -2.5, F)
    out["large"] = g(1e6)
    out["all_positive"] = (np.abs(g(1.0)) + 1).astype(F)
    out["all_negative"] = (-np.abs(g(1.0)) - 1).astype(F)
    for k in range(8):
        out[f"gauss{k}"] = g(0.02 * (k + 1))
    return out


def edge_rows256(rng):
    b32 = edge_blocks32(rng)
    keys = list(b32)
    out = {}
    for i in range(0, len(keys), 8):
        chunk = keys[i:i + 8]
        while len(chunk) < 8:
            chunk.append("gauss0")
        out["+".join(chunk)] = np.concatenate([b32[k] for k in chunk])
    out["zeros256"] = np.zeros(256, F)
    b = (rng.standard_normal(256) * 0.01).astype(F)
    b[100] = -7.0
    out["one_huge256"] = b
    for k in range(4):
        out[f"gauss256_{k}"] = (rng.standard_normal(256) * (0.5 * k + 0.1)).astype(F)
    return out


def random_blocks(rng, name, nblocks, special):
    """Random bytes, halves forced finite unless `special` (then some NaN /
    Inf / subnormal halves).  Q8_K's F32 d is kept finite and modest."""
    blk, nbytes = TYPES[name][1:]
    raw = rng.integers(0, 256, size=(nblocks, nbytes), dtype=np.uint8)
    for off in HALVES[name]:
        raw[:, off + 1] &= 0x7B  # exponent below all-ones: finite
        if special:
            pats = [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x8001, 0x03FF]
            for i, p in enumerate(pats[:nblocks]):
                raw[i, off] = p & 0xFF
                raw[i, off + 1] = p >> 8
    if name == "q8_k":
        d = (rng.standard_normal(nblocks) * 0.01).astype(F)
        if special:
            d[:4] = [np.inf, -np.inf, np.nan, 1e-40]
        raw[:, 0:4] = d.reshape(-1, 1).view(np.uint8)
    return raw.reshape(-1)


def distributions(rng, n, real):
    d = {
        "gaussian": rng.standard_normal(n),
        "laplace": rng.laplace(size=n),
        "student_t3": rng.standard_t(3, size=n),
        "uniform": rng.uniform(-1, 1, size=n),
    }
    if real is not None:
        # whole 256-value runs spread evenly over every matrix
        blocks = real[:real.size // 256 * 256].reshape(-1, 256)
        pick = np.linspace(0, len(blocks) - 1, n // 256).astype(int)
        d["real"] = blocks[pick].reshape(-1)
    return {k: (v * 0.02).astype(F) if k != "real" else v.astype(F)
            for k, v in d.items()}


def load_real(path):
    """The 2-D weights of a safetensors checkpoint whose rows are whole
    256s, concatenated (F32 or BF16 tensors).  The committed vectors use
    a GPT the repo's trainer made: bin/foundry train --vocab-size 512
    --d-model 256 --layers 2 --heads 4 --steps 300 --warmup 30
    --max-data-mb 1 --threads 1 --eval-every 0 (the default corpus)."""
    with open(path, "rb") as f:
        hlen = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(hlen))
        base = 8 + hlen
        parts = []
        for name, info in sorted(head.items()):
            if name == "__metadata__" or len(info["shape"]) != 2:
                continue
            if info["shape"][1] % 256:
                continue
            s, e = info["data_offsets"]
            f.seek(base + s)
            buf = f.read(e - s)
            if info["dtype"] == "F32":
                a = np.frombuffer(buf, "<f4")
            elif info["dtype"] == "BF16":
                a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(F)
            else:
                continue
            parts.append(a)
    return np.concatenate(parts).astype(F)


def rmse(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.sqrt(np.mean((a - b) ** 2)))


# ------------------------------------------------------------ writing


def record(kind, label, n, payload):
    lb = label.encode()
    return struct.pack("<II", kind, len(lb)) + lb + struct.pack("<Q", n) + payload


def write_file(name, records):
    path = os.path.join(DATA, f"{name}.qvec")
    with open(path, "wb") as f:
        f.write(b"FQVEC1\0\0" + struct.pack("<I", len(records)))
        for r in records:
            f.write(r)
    return path


def generate(real):
    os.makedirs(DATA, exist_ok=True)
    for name, (_, blk, _) in TYPES.items():
        rng = np.random.default_rng(1000 + TYPES[name][0])
        recs = []
        # quantize byte-identically: all but the K-quant weight formats
        if name not in ("q4_k", "q5_k", "q6_k"):
            inputs = edge_blocks32(rng) if blk == 32 else edge_rows256(rng)
            for label, x in inputs.items():
                q = quantize(name, x)
                recs.append(record(1, label, x.size, x.astype("<f4").tobytes() + q.tobytes()))
        # dequantize bit-identically: random blocks (and special halves)
        for special in (False, True):
            nb = 16 if blk == 32 else 8
            raw = random_blocks(rng, name, nb, special)
            y = dequantize(name, raw)
            recs.append(record(2, "special_halves" if special else "random_bytes",
                               nb * blk, raw.tobytes() + y.astype("<f4").tobytes()))
        # also the decode of what the independent quantizer produced
        if name in ("q4_k", "q5_k", "q6_k"):
            x = (rng.standard_normal(1024) * 0.05).astype(F)
            raw = quantize(name, x)
            recs.append(record(2, "ggml_ref_quantized", 1024,
                               raw.tobytes() + dequantize(name, raw).astype("<f4").tobytes()))
        # round-trip data (the error bounds; K-quants: ggml's RMSE to beat)
        if name not in ("q8_1", "q8_k"):
            size = 2048 if blk == 256 else 1024
            for label, x in distributions(rng, size, real).items():
                e = rmse(x, dequantize(name, quantize(name, x)))
                recs.append(record(3, label, x.size, x.astype("<f4").tobytes() + struct.pack("<d", e)))
        p = write_file(name, recs)
        print(f"{p}: {len(recs)} records, {os.path.getsize(p)} bytes")


def measure(real, n):
    lib = ctypes.CDLL(os.path.join(HERE, "..", "..", "lib", "libfoundry.so"))
    rng = np.random.default_rng(7)
    print("| format | bits/value | distribution | RMSE ggml ref | RMSE Foundry | ratio |")
    print("|---|---|---|---|---|---|")
    for name in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"):
        dt, blk, nbytes = TYPES[name]
        for label, x in distributions(rng, n, real).items():
            ref = rmse(x, dequantize(name, quantize(name, x)))
            q = np.zeros(n // blk * nbytes, np.uint8)
            y = np.zeros(n, F)
            st = lib.tm_quantize_rows(dt, x.ctypes.data_as(ctypes.c_void_p),
                                      q.ctypes.data_as(ctypes.c_void_p),
                                      ctypes.c_int64(1), ctypes.c_int64(n))
            st |= lib.tm_dequantize_rows(dt, q.ctypes.data_as(ctypes.c_void_p),
                                         y.ctypes.data_as(ctypes.c_void_p),
                                         ctypes.c_int64(1), ctypes.c_int64(n))
            assert st == 0, name
            ours = rmse(x, y)
            print(f"| {name} | {8 * nbytes / blk:g} | {label} | {ref:.4e} | {ours:.4e} | {ours / ref:.3f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", help="a safetensors checkpoint: re-extract "
                    "real_weights.f32 from it (with --measure: use all of it)")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("-n", type=int, default=1 << 18)
    a = ap.parse_args()
    try:
        import gguf  # noqa: F401
    except ImportError:
        print("gen_quant_vectors.py: skipped, it needs the gguf package "
              "(pip install gguf)", file=sys.stderr)
        return
    sample = os.path.join(DATA, "real_weights.f32")
    real = load_real(a.real) if a.real else None
    if real is not None and not a.measure:
        blocks = real[:real.size // 256 * 256].reshape(-1, 256)
        pick = np.linspace(0, len(blocks) - 1, 32).astype(int)
        os.makedirs(DATA, exist_ok=True)
        blocks[pick].astype("<f4").tofile(sample)
    if real is None or not a.measure:
        real = np.fromfile(sample, "<f4") if os.path.exists(sample) else None
    if a.measure:
        measure(real, a.n)
    else:
        generate(real)


if __name__ == "__main__":
    main()
