"""gen_safetensors_corpus.py — seeds for tests/fuzz/fuzz_safetensors.c.

Writes small valid safetensors files and corrupt variants of them to
tests/fuzz/corpus/safetensors/ (numpy only; the writer below follows the
format description, independently of Foundry).  Deterministic: rerunning
rewrites the same bytes.

    python3 tests/fuzz/gen_safetensors_corpus.py
"""
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "safetensors")

# The reference's Dtype order (safetensors/src/tensor.rs); its writer puts
# later dtypes first.
ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
         "F8_E8M0", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64",
         "F64", "I64", "U64"]
NP = {"BOOL": "?", "U8": "<u1", "I8": "<i1", "I16": "<i2", "U16": "<u2",
      "F16": "<f2", "I32": "<i4", "U32": "<u4", "F32": "<f4", "F64": "<f8",
      "I64": "<i8", "U64": "<u8"}


def header_bytes(obj, pad=True):
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    raw = text.encode("utf-8")
    if pad:
        raw += b" " * (-len(raw) % 8)
    return raw


def pack(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, bytes)."""
    items = sorted(tensors, key=lambda t: (-ORDER.index(t[1]),
                                           t[0].encode("utf-8")))
    hdr, off, data = {}, 0, b""
    if metadata is not None:
        hdr["__metadata__"] = metadata
    for name, dt, shape, raw in items:
        hdr[name] = {"dtype": dt, "shape": list(shape),
                     "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = header_bytes(hdr)
    return struct.pack("<Q", len(h)) + h + data


def raw_file(header_text, data=b"", length=None):
    h = header_text.encode("utf-8") if isinstance(header_text, str) \
        else header_text
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def arr(dt, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dt == "BF16":
        f = rng.standard_normal(n).astype("<f4")
        return (f.view("<u4") >> 16).astype("<u2").tobytes()
    if dt in ("F8_E4M3", "F8_E5M2", "F8_E8M0"):
        return rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    if dt == "BOOL":
        return rng.integers(0, 2, n).astype("?").tobytes()
    if dt.startswith("F"):
        return rng.standard_normal(n).astype(NP[dt]).tobytes()
    return rng.integers(-100 if dt[0] == "I" else 0, 100, n).astype(
        NP[dt]).tobytes()


def valid_files():
    out = {}
    out["valid_empty"] = pack([])
    out["valid_meta_only"] = pack([], {"format": "pt", "note": "caf\u00e9"})
    out["valid_scalar"] = pack([("s", "F32", [], arr("F32", [], 1))])
    out["valid_zero_size"] = pack([("z", "F64", [0, 3], b""),
                                   ("a", "I8", [2], arr("I8", [2], 2))])
    every = [(f"t.{dt.lower()}", dt, [2, 3], arr(dt, [2, 3], i))
             for i, dt in enumerate(NP) ] + [("t.bf16", "BF16", [3],
                                              arr("BF16", [3], 99))]
    out["valid_every_dtype"] = pack(every, {"framework": "numpy"})
    out["valid_fp8"] = pack([("e4", "F8_E4M3", [4], arr("F8_E4M3", [4], 3)),
                             ("e5", "F8_E5M2", [4], arr("F8_E5M2", [4], 4)),
                             ("f", "F32", [1], arr("F32", [1], 5))])
    out["valid_names"] = pack([("q\"b\\n\n\u0001", "U8", [1], b"\x07"),
                               ("\u20ac\U0001F600", "U8", [1], b"\x08"),
                               ("", "U8", [1], b"\x09")])
    out["valid_8d"] = pack([("d", "U8", [1, 2, 1, 2, 1, 2, 1, 2],
                             bytes(range(16)))])
    # any order, extra fields and whitespace are allowed
    out["valid_unsorted"] = raw_file(
        ' {"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2],"x":[{}]},'
        ' "a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}\n', b"\x01\x02")
    # misaligned F32 (another writer's layout): read by copying
    out["valid_misaligned"] = raw_file(
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
        '"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}',
        b"\x00" + struct.pack("<f", 1.5))
    return out


def corrupt_files(valid):
    out = {}
    base = valid["valid_every_dtype"]
    n = struct.unpack("<Q", base[:8])[0]
    out["bad_truncated_len"] = base[:5]
    out["bad_truncated_header"] = base[:8 + n // 2]
    out["bad_truncated_data"] = base[:-3]
    out["bad_trailing"] = base + b"\0\0\0\0"
    out["bad_header_too_large"] = struct.pack("<Q", 100_000_001) + base[8:]
    out["bad_header_len_max"] = b"\xff" * 8 + base[8:]
    out["bad_header_past_end"] = struct.pack("<Q", len(base)) + base[8:]
    flipped = bytearray(base)
    for k in range(9, 8 + n, 37):
        flipped[k] ^= 0x5A
    out["bad_bitflips"] = bytes(flipped)
    t = '{"w":{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}}'
    cases = {
        "bad_not_json": ('{"w":', b""),
        "bad_trailing_comma": ('{"a":1,}', b""),
        "bad_nan": ('{"a":NaN}', b""),
        "bad_not_utf8": (b'{"w\xff":1}', b""),
        "bad_unknown_dtype": (t % ("F7", "[1]", 0, 1), b"\0"),
        "bad_reversed": (t % ("F32", "[2]", 8, 0), b"\0" * 8),
        "bad_mismatch": (t % ("F32", "[3]", 0, 8), b"\0" * 8),
        "bad_out_of_range": (t % ("U8", "[2]", 1000, 1002), b"\0" * 2),
        "bad_huge_dims": (t % ("F32", "[4294967296,4294967296]", 0, 8),
                          b"\0" * 8),
        "bad_too_many_dims": (t % ("U8", "[1,1,1,1,1,1,1,1,1]", 0, 1), b"\0"),
        "bad_negative_dim": (t % ("U8", "[2,-3]", 0, 1), b"\0"),
        "bad_sub_byte": (t % ("F4", "[3]", 0, 2), b"\0\0"),
        "bad_int_overflow": (t % ("U8", "[18446744073709551616]", 0, 1),
                             b"\0"),
        "bad_meta_not_string": ('{"__metadata__":{"epoch":3}}', b""),
        "bad_nul_name": ('{"a\\u0000":{"dtype":"U8","shape":[1],'
                         '"data_offsets":[0,1]}}', b"\0"),
        "bad_lone_surrogate": ('{"\\ud800":1}', b""),
        "bad_duplicate": ('{"w":{"dtype":"U8","shape":[1],"data_offsets":'
                          '[0,1]},"w":{"dtype":"U8","shape":[1],'
                          '"data_offsets":[1,2]}}', b"\0\0"),
        "bad_overlap": ('{"a":{"dtype":"F32","shape":[2],"data_offsets":'
                        '[0,8]},"b":{"dtype":"F32","shape":[2],'
                        '"data_offsets":[4,12]}}', b"\0" * 12),
        "bad_gap": ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                    '"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}}',
                    b"\0" * 20),
        "bad_deep": ("[" * 70 + "]" * 70, b""),
        "bad_array_root": ("[]", b""),
    }
    for name, (hdr, data) in cases.items():
        out[name] = raw_file(hdr, data)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    valid = valid_files()
    files = dict(valid)
    files.update(corrupt_files(valid))
    for name, data in sorted(files.items()):
        with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {OUT}")


if __name__ == "__main__":
    main()
