"""Foundry's raw-row quantizers (tm_quantize_rows / tm_dequantize_rows)
against the `gguf` package on fresh random data: the 32-value formats
quantize byte-identically (gguf transcribes ggml's reference quantizers),
every weight format dequantizes bit-identically (NaN matching any NaN),
and the K-quants' own scale search is no worse in RMSE than ggml's
reference quantizer (tests/gen/ggml_quant_ref.py, a numpy transcription).
"""
import ctypes
import pathlib
import sys

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as G  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gen"))
import ggml_quant_ref as R  # noqa: E402

# name: (foundry dtype value, values per block, bytes per block)
TYPES = {
    "q8_0": (32, 32, 34), "q4_0": (33, 32, 18), "q4_1": (34, 32, 20),
    "q5_0": (36, 32, 22), "q5_1": (37, 32, 24), "q4_k": (38, 256, 144),
    "q5_k": (39, 256, 176), "q6_k": (40, 256, 210),
}


class _Rows:
    """The two C functions, through foundry's extension once it declares
    them, else through the shared library the build leaves in lib/."""

    def __init__(self):
        from foundry._c import ffi, lib
        if hasattr(lib, "tm_quantize_rows"):
            self.q = lambda dt, x, q, r, n: lib.tm_quantize_rows(
                dt, ffi.from_buffer("float[]", x), ffi.from_buffer(q), r, n)
            self.d = lambda dt, q, y, r, n: lib.tm_dequantize_rows(
                dt, ffi.from_buffer(q), ffi.from_buffer("float[]", y), r, n)
            return
        so = ROOT / "lib" / "libfoundry.so"
        if not so.exists():
            pytest.skip("lib/libfoundry.so is not built (make)")
        c = ctypes.CDLL(str(so))
        for f in (c.tm_quantize_rows, c.tm_dequantize_rows):
            f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_int64]
        self.q = lambda dt, x, q, r, n: c.tm_quantize_rows(
            dt, x.ctypes.data, q.ctypes.data, r, n)
        self.d = lambda dt, q, y, r, n: c.tm_dequantize_rows(
            dt, q.ctypes.data, y.ctypes.data, r, n)

    def quantize(self, name, x):
        dt, blk, nb = TYPES[name]
        rows, n = x.shape
        q = np.zeros((rows, n // blk * nb), np.uint8)
        assert self.q(dt, np.ascontiguousarray(x, np.float32), q, rows, n) == 0
        return q

    def dequantize(self, name, q, n):
        dt = TYPES[name][0]
        y = np.zeros((q.shape[0], n), np.float32)
        assert self.d(dt, np.ascontiguousarray(q), y, q.shape[0], n) == 0
        return y


@pytest.fixture(scope="module")
def rows():
    return _Rows()


def same_bits(a, b):
    a = np.asarray(a, np.float32).ravel()
    b = np.asarray(b, np.float32).ravel()
    nan = np.isnan(a) & np.isnan(b)
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | nan))


@pytest.mark.parametrize("name", ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1"])
@pytest.mark.parametrize("scale", [1e-4, 0.02, 3.0])
def test_32_value_formats_quantize_like_gguf(rows, name, scale):
    rng = np.random.default_rng([TYPES[name][0], int(scale * 1e4)])
    x = (rng.standard_normal((7, 512)) * scale).astype(np.float32)
    x[3, 100] = -9 * scale  # a lone extreme
    want = gguf.quants.quantize(x, getattr(G, name.upper()))
    got = rows.quantize(name, x)
    assert got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", list(TYPES))
def test_every_weight_format_dequantizes_like_gguf(rows, name):
    _, blk, nb = TYPES[name]
    rng = np.random.default_rng(5 + TYPES[name][0])
    q = rng.integers(0, 256, size=(5, 8 * nb), dtype=np.uint8)
    with np.errstate(all="ignore"):
        want = gguf.quants.dequantize(q, getattr(G, name.upper()))
    got = rows.dequantize(name, q, 8 * blk)
    assert same_bits(got, want)


@pytest.mark.parametrize("name", ["q4_k", "q5_k", "q6_k"])
@pytest.mark.parametrize("dist", ["gaussian", "laplace", "student_t3"])
def test_k_quants_rmse_no_worse_than_ggml_reference(rows, name, dist):
    rng = np.random.default_rng(77)
    n = 256 * 32
    x = {"gaussian": lambda: rng.standard_normal(n),
         "laplace": lambda: rng.laplace(size=n),
         "student_t3": lambda: rng.standard_t(3, size=n)}[dist]()
    x = (x * 0.02).astype(np.float32).reshape(1, -1)
    ref_q = getattr(R, f"quantize_{name}")(x).reshape(1, -1)
    ref = gguf.quants.dequantize(ref_q, getattr(G, name.upper()))
    ours = rows.dequantize(name, rows.quantize(name, x), n)
    rmse = lambda y: float(np.sqrt(np.mean((x.astype(np.float64) - y) ** 2)))
    assert rmse(ours) <= rmse(ref)
