"""gen_gguf_corpus.py — seeds for tests/fuzz/fuzz_gguf.c.

Writes small valid GGUF files (made with the `gguf` package's GGUFWriter,
independently of Foundry: every value type, nested arrays, F32 / F16 / Q8_0
/ Q4_K / Q2_K tensors, alignments, version 2) and malformed variants
(truncations, bad magic / version / counts / lengths / types / dims /
offsets, duplicates) to tests/fuzz/corpus/gguf/, beside the minimised
fuzzer findings committed there (crash_*, kept).  Deterministic: rerunning
rewrites the same bytes.

    .venv/bin/python tests/fuzz/gen_gguf_corpus.py
"""
import os
import struct
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as V

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "gguf")


def write(path, build, alignment=None):
    w = gguf.GGUFWriter(path, arch="fuzz")
    if alignment:
        w.data_alignment = alignment
        w.add_uint32("general.alignment", alignment)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build_values(w):
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -3)
    w.add_uint16("v.u16", 65000)
    w.add_int16("v.i16", -300)
    w.add_uint32("v.u32", 4000000000)
    w.add_int32("v.i32", -7)
    w.add_float32("v.f32", 1.5)
    w.add_bool("v.bool", True)
    w.add_string("v.str", "héllo")
    w.add_uint64("v.u64", 2**64 - 1)
    w.add_int64("v.i64", -2**63)
    w.add_float64("v.f64", -0.25)
    w.add_array("v.arr_i32", [1, 2, 3])
    w.add_array("v.arr_str", ["a", "bc", ""])
    w.add_array("v.arr_nested", [[1, 2], [3]])
    w.add_array("v.arr_nested_str", [["x"], ["y", "z"]])
    w.add_key_value("v.arr_f64", [0.5, 1.5], V.ARRAY, sub_type=V.FLOAT64)


def build_tensors(w):
    rng = np.random.default_rng(1)
    w.add_tensor("f32", rng.standard_normal((2, 3)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal((4,)).astype(np.float16))
    x = rng.standard_normal((2, 64)).astype(np.float32)
    q = gguf.quants.quantize(x, Q.Q8_0)
    w.add_tensor("q8", q, raw_shape=q.shape, raw_dtype=Q.Q8_0)
    # the package has no Q4_K quantizer: any bytes are a valid block
    q = rng.integers(0, 256, (1, 144), dtype=np.uint8)
    w.add_tensor("q4k", q, raw_shape=q.shape, raw_dtype=Q.Q4_K)
    w.add_tensor("q2k", np.full((1, 84), 7, np.uint8), raw_shape=(1, 84),
                 raw_dtype=Q.Q2_K)
    w.add_tensor("i32", np.arange(5, dtype=np.int32))


def gguf_bytes(build, alignment=None):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "x.gguf")
        write(p, build, alignment)
        with open(p, "rb") as f:
            return f.read()


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def s(b):
    return u64(len(b)) + b


def hdr(nt, nkv, ver=3):
    return b"GGUF" + u32(ver) + u64(nt) + u64(nkv)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):  # fuzzer findings (crash_*) are kept
        if f.startswith(("ok_", "bad_")):
            os.unlink(os.path.join(OUT, f))
    files = {}
    vals = gguf_bytes(build_values)
    tens = gguf_bytes(build_tensors)
    both = gguf_bytes(lambda w: (build_values(w), build_tensors(w)))
    files["ok_values.gguf"] = vals
    files["ok_tensors.gguf"] = tens
    files["ok_align64.gguf"] = gguf_bytes(build_tensors, 64)
    files["ok_align1.gguf"] = gguf_bytes(build_tensors, 1)
    files["ok_v2.gguf"] = tens[:4] + u32(2) + tens[8:]
    files["ok_empty.gguf"] = hdr(0, 0)
    files["ok_scalar.gguf"] = (hdr(1, 0) + s(b"s") + u32(0) + u32(0) +
                               u64(0) + bytes(32 - (24 + 9 + 16) % 32) +
                               struct.pack("<f", 2.0))
    # malformed
    files["bad_magic.gguf"] = b"GGUX" + both[4:]
    files["bad_version1.gguf"] = both[:4] + u32(1) + both[8:]
    files["bad_version_be.gguf"] = both[:4] + u32(3 << 24) + both[8:]
    files["bad_nkv_huge.gguf"] = both[:16] + u64(2**62) + both[24:]
    files["bad_nt_huge.gguf"] = both[:8] + u64(2**63) + both[16:]
    for cut in (3, 23, 40, len(vals) // 2, len(both) - 1):
        files[f"bad_trunc_{cut}.gguf"] = both[:cut]
    files["bad_key_len.gguf"] = hdr(0, 1) + u64(2**63) + b"k"
    files["bad_str_len.gguf"] = hdr(0, 1) + s(b"k") + u32(8) + u64(2**40)
    files["bad_arr_len.gguf"] = (hdr(0, 1) + s(b"k") + u32(9) + u32(4) +
                                 u64(2**61) + bytes(16))
    files["bad_arr_type.gguf"] = (hdr(0, 1) + s(b"k") + u32(9) + u32(13) +
                                  u64(1) + bytes(8))
    files["bad_val_type.gguf"] = hdr(0, 1) + s(b"k") + u32(77) + bytes(8)
    deep = hdr(0, 1) + s(b"d") + u32(9)
    for _ in range(10):
        deep += u32(9) + u64(1)
    files["bad_deep.gguf"] = deep + u32(0) + u64(0)
    files["bad_align_type.gguf"] = (hdr(0, 1) + s(b"general.alignment") +
                                    u32(10) + u64(32))
    files["bad_align_zero.gguf"] = (hdr(0, 1) + s(b"general.alignment") +
                                    u32(4) + u32(0))
    files["bad_align_npot.gguf"] = (hdr(0, 1) + s(b"general.alignment") +
                                    u32(4) + u32(24))
    files["bad_dup_key.gguf"] = (hdr(0, 2) + s(b"a") + u32(0) + b"\1" +
                                 s(b"a") + u32(0) + b"\2")
    files["bad_utf8_key.gguf"] = hdr(0, 1) + s(b"\xff") + u32(0) + b"\1"
    files["bad_bool.gguf"] = hdr(0, 1) + s(b"b") + u32(7) + b"\x05"

    def ti(name, ne, typ, off):
        return s(name) + u32(len(ne)) + b"".join(map(u64, ne)) + u32(typ) + \
            u64(off)

    def tfile(*infos, data=64, align=32):
        b = hdr(len(infos), 0) + b"".join(infos)
        b += bytes(-len(b) % align)
        return b + bytes(range(256))[:data] if data <= 256 else bytes(data)
    files["bad_dims5.gguf"] = tfile(ti(b"w", [1, 1, 1, 1, 1], 0, 0))
    files["bad_dim_neg.gguf"] = tfile(ti(b"w", [4, 2**63], 0, 0))
    files["bad_dim_ovf.gguf"] = tfile(ti(b"w", [2**32, 2**32], 0, 0))
    files["bad_block.gguf"] = tfile(ti(b"w", [33], 2, 0))
    files["bad_type.gguf"] = tfile(ti(b"w", [4], 31, 0))
    files["bad_misaligned.gguf"] = tfile(ti(b"w", [4], 0, 8))
    files["bad_out_of_file.gguf"] = tfile(ti(b"w", [32], 0, 0))
    files["bad_offset_wrap.gguf"] = tfile(ti(b"w", [4], 0, 2**64 - 32))
    files["bad_overlap.gguf"] = tfile(ti(b"a", [8], 0, 0),
                                      ti(b"b", [4], 0, 0))
    files["bad_dup_name.gguf"] = tfile(ti(b"a", [4], 0, 0),
                                       ti(b"a", [4], 0, 32))
    for name, data in sorted(files.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(files)} files in {OUT}")


if __name__ == "__main__":
    main()
