"""The CPU attention forward kernel (tm__attn_fwd_f32, called through
ctypes on lib/libfoundry.so: no front end) against PyTorch's CPU
scaled_dot_product_attention, on the same F32 tensors in the same process
with the same thread count.  Blocks of 5 back-to-back runs of each
alternate 4 times, so other load on the machine hits both alike, each
library's threads are warm in its own block, and neither's pool is still
spinning from the other's runs after a block's first run.  Per shape: the
least wall time of the 20 runs of each (the figure least disturbed by
other work) and the ratio.
    .venv/bin/python bench/bench_attn_fwd_torch.py [threads]
(make first: it loads lib/libfoundry.so.)"""
import ctypes
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

MAX_DIMS = 8


class Buf(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_void_p), ("offset", ctypes.c_size_t),
                ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", ctypes.c_int64 * MAX_DIMS)]


class Rng(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("counter", ctypes.c_uint64)]


class Params(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_double), ("causal", ctypes.c_bool),
                ("offset", ctypes.c_int64), ("window", ctypes.c_int64),
                ("dropout_p", ctypes.c_double), ("rng", Rng)]


def buf(t):
    assert t.dtype == torch.float32
    b = Buf(t.data_ptr(), 0, 0, t.dim())
    for i, (n, s) in enumerate(zip(t.shape, t.stride())):
        b.shape[i], b.strides[i] = n, s
    return b


def best(fn, reps):
    return min(fn() for _ in range(reps))


def run(lib, name, b, h, hkv, tq, tk, d, causal):
    q = torch.randn(b, h, tq, d)
    k = torch.randn(b, hkv, tk, d)
    v = torch.randn(b, hkv, tk, d)
    out = torch.empty(b, h, tq, d)
    lse = torch.empty(b, h, tq)
    bq, bk, bv, bo, bl = buf(q), buf(k), buf(v), buf(out), buf(lse)
    nomask = Buf()
    p = Params(1.0 / math.sqrt(d), causal, 0, 0, 0.0, Rng(0, 0))
    kw = dict(is_causal=causal, enable_gqa=h != hkv)

    def ours():
        t0 = time.perf_counter()
        st = lib.tm__attn_fwd_f32(ctypes.byref(bo), ctypes.byref(bl),
                                  ctypes.byref(bq), ctypes.byref(bk),
                                  ctypes.byref(bv), ctypes.byref(nomask),
                                  ctypes.byref(p), 0)
        assert st == 0
        return (time.perf_counter() - t0) * 1e3

    def theirs():
        t0 = time.perf_counter()
        F.scaled_dot_product_attention(q, k, v, **kw)
        return (time.perf_counter() - t0) * 1e3

    with torch.no_grad():
        ours(), theirs()
        ref = F.scaled_dot_product_attention(q, k, v, **kw)
        err = (out - ref).abs().max().item() / ref.abs().max().item()
        a, t = float("inf"), float("inf")
        for _ in range(4):
            a = min([a] + [ours() for _ in range(5)])
            t = min([t] + [theirs() for _ in range(5)])
    print(f"{name:36s} foundry {a:9.3f} ms  torch {t:9.3f} ms  "
          f"ratio {t / a:5.2f}x  (max rel diff {err:.1e})")


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    here = os.path.dirname(os.path.abspath(__file__))
    lib = ctypes.CDLL(os.path.join(here, "..", "lib", "libfoundry.so"))
    lib.tm_set_num_threads(threads)
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, threads {threads}")
    run(lib, "B=1 H=8 T=2048 D=64 causal", 1, 8, 8, 2048, 2048, 64, True)
    run(lib, "B=8 H=8 T=256 D=64", 8, 8, 8, 256, 256, 64, False)
    run(lib, "B=1 H=32 Hkv=8 T=1024 D=128 causal", 1, 32, 8, 1024, 1024,
        128, True)
    run(lib, "decode B=1 H=8 Tq=1 Tk=4096 D=64", 1, 8, 8, 1, 4096, 64,
        False)
    run(lib, "decode GQA B=1 H=32 Hkv=8 Tk=4096 D=128", 1, 32, 8, 1, 4096,
        128, False)


if __name__ == "__main__":
    main()
