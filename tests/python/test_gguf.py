"""GGUF interop with the reference `gguf` package: files Foundry writes
read back identically with gguf.GGUFReader (metadata values and types,
tensor names, shapes, types, bytes), and files gguf.GGUFWriter writes (every
value type, nested arrays, F32 / F16 / Q8_0 / Q4_K tensors) read
identically in Foundry.  Bit-exact throughout: a file format moves bytes,
it computes nothing."""
import gc
import os

import numpy as np
import pytest

import foundry as F

gguf = pytest.importorskip(
    "gguf", reason="the gguf package is not installed (pip install gguf); "
                   "CI installs it")
from gguf import GGMLQuantizationType as Q, GGUFValueType as V  # noqa: E402


def reader_fields(path):
    """key -> (value, [types]) as the gguf package reads them (its own
    GGUF.* header pseudo-fields left out)."""
    r = gguf.GGUFReader(path)
    out = {}
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        out[f.name] = (f.contents(), list(f.types))
    return r, out


def write_with_gguf(path, build, alignment=None):
    w = gguf.GGUFWriter(path, arch="test")
    if alignment:
        w.data_alignment = alignment
        w.add_uint32("general.alignment", alignment)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def q4k_blocks(rng, nblocks):
    """Q4_K blocks with finite half scales (d, dmin) and random nibbles /
    6-bit scales: any such bytes are a valid block."""
    b = rng.integers(0, 256, (nblocks, 144), dtype=np.uint8)
    d = (rng.random((nblocks, 2)) * 0.01 + 0.001).astype(np.float16)
    b[:, 0:4] = d.view(np.uint8)
    return b


# ------------------------------------------------- Foundry -> gguf package


def test_foundry_file_reads_identically_in_gguf(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    h = rng.standard_normal((7,)).astype(np.float16)
    i = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    meta = {
        "general.architecture": "gpt2",
        "k.int": 7, "k.neg": -3, "k.big": 2**40, "k.huge": 2**64 - 1,
        "k.float": 0.5, "k.bool": False, "k.str": "héllo",
        "k.u8": F.gguf.Value(200, "uint8"),
        "k.i16": F.gguf.Value(-300, "int16"),
        "k.f64": F.gguf.Value(0.1, "float64"),
        "k.ints": [1, 2, 3], "k.strs": ["a", "", "ccc"],
        "k.f32s": np.array([1.5, -2], np.float32),
        "k.u64s": np.array([1, 2**63], np.uint64),
        "k.nested": [[1, 2], [3]],
        "k.nested_str": [["x"], ["y", "z"]],
    }
    p = str(tmp_path / "f.gguf")
    F.gguf.save(p, {"a": F.tensor(a), "h": F.tensor(h), "i": F.tensor(i)},
                meta)
    r, fields = reader_fields(p)
    want_types = {
        "general.architecture": [V.STRING], "k.int": [V.INT32],
        "k.neg": [V.INT32], "k.big": [V.INT64], "k.huge": [V.UINT64],
        "k.float": [V.FLOAT32], "k.bool": [V.BOOL], "k.str": [V.STRING],
        "k.u8": [V.UINT8], "k.i16": [V.INT16], "k.f64": [V.FLOAT64],
        "k.ints": [V.ARRAY, V.INT32], "k.strs": [V.ARRAY, V.STRING],
        "k.f32s": [V.ARRAY, V.FLOAT32], "k.u64s": [V.ARRAY, V.UINT64],
        "k.nested": [V.ARRAY, V.ARRAY, V.INT32],
        "k.nested_str": [V.ARRAY, V.ARRAY, V.STRING],
    }
    assert list(fields) == list(meta)  # in the order given
    for k, t in want_types.items():
        assert fields[k][1] == t, k
    assert fields["k.int"][0] == 7 and fields["k.neg"][0] == -3
    assert fields["k.big"][0] == 2**40 and fields["k.huge"][0] == 2**64 - 1
    assert fields["k.float"][0] == 0.5 and fields["k.bool"][0] is False
    assert fields["k.str"][0] == "héllo" and fields["k.u8"][0] == 200
    assert fields["k.i16"][0] == -300 and fields["k.f64"][0] == 0.1
    assert fields["k.ints"][0] == [1, 2, 3]
    assert fields["k.strs"][0] == ["a", "", "ccc"]
    assert fields["k.f32s"][0] == [1.5, -2.0]
    assert fields["k.u64s"][0] == [1, 2**63]
    # the package flattens nested arrays when reading contents
    assert fields["k.nested"][0] == [1, 2, 3]
    ts = {t.name: t for t in r.tensors}
    assert list(ts) == ["a", "h", "i"]
    assert ts["a"].tensor_type == Q.F32 and list(ts["a"].shape) == [5, 3]
    assert ts["h"].tensor_type == Q.F16 and ts["i"].tensor_type == Q.I32
    assert list(ts["i"].shape) == [4, 3, 2]  # GGUF dims: innermost first
    assert ts["a"].data.tobytes() == a.tobytes()
    assert ts["h"].data.tobytes() == h.tobytes()
    assert ts["i"].data.tobytes() == i.tobytes()
    for t in r.tensors:
        assert t.data_offset % 32 == 0


def test_alignment_written_and_honoured(tmp_path):
    p = str(tmp_path / "a.gguf")
    x = np.arange(5, dtype=np.float32)
    F.gguf.save(p, {"x": F.tensor(x), "y": F.tensor(x * 2)}, {"k": 1},
                alignment=128)
    r, fields = reader_fields(p)
    assert fields["general.alignment"] == (128, [V.UINT32])
    assert r.alignment == 128
    for t in r.tensors:
        assert t.data_offset % 128 == 0
    g = F.gguf.load(p)
    assert g.alignment == 128 and g.data_offset % 128 == 0
    np.testing.assert_array_equal(g.tensors["y"].numpy(), x * 2)


# ------------------------------------------------- gguf package -> Foundry


def build_everything(w, rng, store):
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -3)
    w.add_uint16("v.u16", 65000)
    w.add_int16("v.i16", -300)
    w.add_uint32("v.u32", 4000000000)
    w.add_int32("v.i32", -7)
    w.add_float32("v.f32", 1.25)
    w.add_bool("v.bool", True)
    w.add_string("v.str", "héllo wörld")
    w.add_uint64("v.u64", 2**64 - 1)
    w.add_int64("v.i64", -2**63)
    w.add_float64("v.f64", -0.1)
    w.add_array("v.arr_i32", [1, -2, 3])
    w.add_array("v.arr_str", ["a", "bc", "d"])
    w.add_array("v.arr_f32", [0.5, 1.5])
    w.add_array("v.arr_bool", [True, False])
    w.add_array("v.nested", [[1, 2], [3]])
    w.add_array("v.nested_str", [["x"], ["y", "z"]])
    w.add_key_value("v.arr_u16", [1, 65535], V.ARRAY, sub_type=V.UINT16)
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    f16 = rng.standard_normal((2, 8)).astype(np.float16)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    q8 = gguf.quants.quantize(x, Q.Q8_0)
    q4k = q4k_blocks(rng, 2)  # the package has no Q4_K quantizer
    w.add_tensor("f32", f32)
    w.add_tensor("f16", f16)
    w.add_tensor("q8", q8, raw_shape=q8.shape, raw_dtype=Q.Q8_0)
    w.add_tensor("q4k", q4k, raw_shape=(1, 288), raw_dtype=Q.Q4_K)
    w.add_tensor("q2k", np.zeros((1, 84), np.uint8), raw_shape=(1, 84),
                 raw_dtype=Q.Q2_K)
    store.update(f32=f32, f16=f16, q8=q8, q4k=q4k)


def test_gguf_package_file_reads_identically(tmp_path):
    rng = np.random.default_rng(1)
    p = str(tmp_path / "g.gguf")
    store = {}
    write_with_gguf(p, lambda w: build_everything(w, rng, store))
    r, fields = reader_fields(p)
    g = F.gguf.load(p)
    assert g.version == 3
    assert list(g.metadata) == list(fields)
    names = {8: "string", 9: "array"}
    for k, (v, types) in fields.items():
        t = types[0]
        want = names.get(t, F.gguf.TYPES[t])
        if t == V.ARRAY:
            want = f"array[{F.gguf.TYPES[types[1]]}]"
        assert g.types[k] == want, k
        got = g.metadata[k]
        if t == V.ARRAY and types[1] == V.ARRAY:
            flat = [x for inner in got for x in
                    (inner.tolist() if isinstance(inner, np.ndarray)
                     else inner)]
            assert flat == v, k
        elif t == V.ARRAY:
            assert list(got.tolist() if isinstance(got, np.ndarray)
                        else got) == v, k
        else:
            assert got == v, k
    assert g.metadata["v.u64"] == 2**64 - 1
    assert g.metadata["v.i64"] == -2**63
    assert g.metadata["v.f64"] == -0.1
    assert g.metadata["v.arr_u16"].dtype == np.uint16
    assert g.metadata["v.nested_str"] == [["x"], ["y", "z"]]
    # tensors: names, shapes (outermost first), types, bytes
    rt = {t.name: t for t in r.tensors}
    assert g.tensor_types == {"f32": "F32", "f16": "F16", "q8": "Q8_0",
                              "q4k": "Q4_K", "q2k": "Q2_K"}
    assert "q2k" not in g.tensors  # listed, but Foundry has no Q2_K
    np.testing.assert_array_equal(g.tensors["f32"].numpy(), store["f32"])
    np.testing.assert_array_equal(g.tensors["f16"].numpy(), store["f16"])
    assert g.tensors["f16"].dtype == F.float16
    assert list(g.tensors["q8"].shape) == [2, 64]
    assert list(g.tensors["q4k"].shape) == [1, 288 // 144 * 256]
    for name in ("f32", "f16"):
        assert list(g.tensors[name].shape) == list(rt[name].shape[::-1])
    if hasattr(F, "q8_0"):  # quantized Python tensors (part T)
        assert g.tensors["q8"].dtype == F.q8_0
        assert g.tensors["q8"].numpy().tobytes() == store["q8"].tobytes()
        assert g.tensors["q4k"].numpy().tobytes() == store["q4k"].tobytes()


@pytest.mark.skipif(not hasattr(F, "dequantize"),
                    reason="foundry.dequantize (part T) not in this build")
def test_gguf_quantized_tensors_dequantize_as_the_package_does(tmp_path):
    rng = np.random.default_rng(2)
    p = str(tmp_path / "q.gguf")
    store = {}
    write_with_gguf(p, lambda w: build_everything(w, rng, store))
    g = F.gguf.load(p)
    for name, qt in (("q8", Q.Q8_0), ("q4k", Q.Q4_K)):
        want = gguf.quants.dequantize(store[name], qt).reshape(-1)
        got = F.dequantize(g.tensors[name]).numpy().reshape(-1)
        assert got.tobytes() == want.astype(np.float32).tobytes(), name


def test_version_2_reads(tmp_path):
    p = str(tmp_path / "v2.gguf")
    write_with_gguf(p, lambda w: w.add_tensor(
        "x", np.arange(4, dtype=np.float32)))
    b = bytearray(open(p, "rb").read())
    b[4:8] = (2).to_bytes(4, "little")
    open(p, "wb").write(bytes(b))
    g = F.gguf.load(p)
    assert g.version == 2
    np.testing.assert_array_equal(g.tensors["x"].numpy(), np.arange(4.0))


# ------------------------------------------------------ Foundry's rules


def test_zero_copy_read_only_and_outlives_the_file(tmp_path):
    p = str(tmp_path / "z.gguf")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    F.gguf.save(p, {"x": F.tensor(x)})
    g = F.gguf.load(p)
    t = g.tensors["x"]
    with pytest.raises(F.FoundryError, match="read-only"):
        t.add_(1)
    c = t.clone()
    c.add_(1)
    del g
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal(c.numpy(), x + 1)


def test_typed_values_round_trip(tmp_path):
    """g.value(key) carries each key's type, so re-saving keeps them."""
    rng = np.random.default_rng(3)
    p, p2 = str(tmp_path / "a.gguf"), str(tmp_path / "b.gguf")
    write_with_gguf(p, lambda w: build_everything(w, rng, {}))
    g = F.gguf.load(p)
    F.gguf.save(p2, {}, {k: g.value(k) for k in g.metadata})
    _, f1 = reader_fields(p)
    _, f2 = reader_fields(p2)
    assert f1 == f2


def test_save_rules_and_errors(tmp_path):
    p = str(tmp_path / "e.gguf")
    with pytest.raises(TypeError, match="mixed types"):
        F.gguf.save(p, {}, {"k": [1, "a"]})
    with pytest.raises(OverflowError, match="fits no GGUF integer type"):
        F.gguf.save(p, {}, {"k": 2**64})
    with pytest.raises(OverflowError, match="does not fit in uint8"):
        F.gguf.save(p, {}, {"k": F.gguf.Value(256, "uint8")})
    with pytest.raises(ValueError, match="unknown GGUF value type"):
        F.gguf.Value(1, "uint128")
    with pytest.raises(TypeError, match="has no GGUF type"):
        F.gguf.save(p, {}, {"k": object()})
    with pytest.raises(ValueError, match="not a power of two"):
        F.gguf.save(p, {}, {}, alignment=48)
    with pytest.raises(TypeError, match="dtype bool has no GGUF type"):
        F.gguf.save(p, {"b": F.tensor([True])})
    assert not os.path.exists(p)
    # ints: smallest of int32 / int64 / uint64 for every element
    F.gguf.save(p, {}, {"a": [1, 2**40], "b": [1, 2**63], "c": []})
    g = F.gguf.load(p)
    assert g.types == {"a": "array[int64]", "b": "array[uint64]",
                       "c": "array[int32]"}


def test_malformed_files_raise_clear_errors(tmp_path):
    p = tmp_path / "bad.gguf"
    p.write_bytes(b"GGUF" + (1).to_bytes(4, "little") + bytes(16))
    with pytest.raises(ValueError, match="version 1 is not supported"):
        F.gguf.load(str(p))
    p.write_bytes(b"GGUX" + bytes(20))
    with pytest.raises(F.FoundryError, match="bad magic"):
        F.gguf.load(str(p))
    with pytest.raises(OSError, match="cannot open"):
        F.gguf.load(str(tmp_path / "missing.gguf"))


def test_foundry_quantized_tensors_read_in_gguf(tmp_path):
    rng = np.random.default_rng(4)
    x = F.tensor(rng.standard_normal((4, 256)).astype(np.float32))
    qs = {name: F.quantize(x, name) for name in
          ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k")}
    p = str(tmp_path / "q.gguf")
    F.gguf.save(p, qs)
    r = gguf.GGUFReader(p)
    for t in r.tensors:
        q = qs[t.name]
        assert t.tensor_type == Q[t.name.upper()]
        assert t.data.tobytes() == q.numpy().tobytes(), t.name
        want = gguf.quants.dequantize(t.data, t.tensor_type).reshape(4, 256)
        got = F.dequantize(q).numpy()
        assert got.tobytes() == want.astype(np.float32).tobytes(), t.name
    g = F.gguf.load(p)
    for name, q in qs.items():
        assert g.tensors[name].dtype == q.dtype
        assert list(g.tensors[name].shape) == [4, 256]
        assert g.tensors[name].numpy().tobytes() == q.numpy().tobytes()


def test_every_dense_dtype_round_trips_through_gguf(tmp_path):
    rng = np.random.default_rng(5)
    src = {"f64": rng.standard_normal(6),
           "i8": np.arange(-3, 3, dtype=np.int8),
           "i16": np.arange(6, dtype=np.int16) * -300,
           "i64": np.arange(6, dtype=np.int64) * 2**40}
    ts = {k: F.tensor(v) for k, v in src.items()}
    ts["bf16"] = F.tensor(rng.standard_normal(6).astype(np.float32)).to(
        F.bfloat16)
    p = str(tmp_path / "d.gguf")
    F.gguf.save(p, ts)
    r = gguf.GGUFReader(p)
    want = {"f64": Q.F64, "i8": Q.I8, "i16": Q.I16, "i64": Q.I64,
            "bf16": Q.BF16}
    g = F.gguf.load(p)
    for t in r.tensors:
        assert t.tensor_type == want[t.name]
        raw = ts[t.name].view(F.int16) if t.name == "bf16" else ts[t.name]
        assert t.data.tobytes() == raw.numpy().tobytes(), t.name
        assert g.tensors[t.name].dtype == ts[t.name].dtype
        assert (g.tensors[t.name].float().numpy().tobytes() ==
                ts[t.name].float().numpy().tobytes())
