#!/usr/bin/env python3
"""Times bench_kernels (Foundry) against numpy and PyTorch in the same run.

    python3 bench/run_kernels.py path/to/bench_kernels [--threads 1,2] [--quick]
    (or: make bench)

For each thread count, Foundry runs with FOUNDRY_NUM_THREADS=t and the
references run in a child process with OPENBLAS/OMP/MKL_NUM_THREADS=t (and
torch.set_num_threads(t)), same shapes, float32, same method (warm-up, then
>= 3 calls and 0.3 s, minimum).  PyTorch is optional: without it its column
is empty.  Prints a table and writes bench/results/kernels.json.
ratio = reference time / Foundry time, so > 1 means Foundry is faster.
"""
import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_REPS, MIN_TOTAL = 3, 0.3


def best_time(fn):
    fn()
    best, total, reps = float("inf"), 0.0, 0
    while reps < MIN_REPS or total < MIN_TOTAL:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, reps = min(best, dt), total + dt, reps + 1
    return best


def cases(quick):
    """(op, shape, builder) where builder(lib) -> (numpy_fn, torch_fn)."""
    sq = [64, 128, 256, 512] + ([] if quick else [1024, 2048])
    T = 512 if quick else 4096
    n = (1 << 20) if quick else (1 << 24)
    out = [("sgemm", f"{s}x{s}x{s}", ("gemm", "nn", s, s, s)) for s in sq]
    out += [("sgemm_gpt_nn", f"{T}x3072x768", ("gemm", "nn", T, 3072, 768)),
            ("sgemm_gpt_nt", f"{T}x3072x768", ("gemm", "nt", T, 3072, 768)),
            ("sgemm_gpt_tn", f"768x3072x{T}", ("gemm", "tn", 768, 3072, T))]
    out += [(op, str(n), (op, n)) for op in ("add", "mul", "exp", "gelu")]
    out += [("softmax", "4096x1024", ("softmax",)),
            ("layer_norm", "4096x1024", ("layer_norm",))]
    return out


def reference(threads, quick):
    """Child process: time numpy and torch, print JSON lines."""
    import numpy as np
    try:
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    r = lambda *s: rng.standard_normal(s, dtype=np.float32)  # noqa: E731
    for op, shape, spec in cases(quick):
        kind = spec[0]
        fns = {}
        if kind == "gemm":
            form, m, nn, k = spec[1:]
            a = r(k, m) if form == "tn" else r(m, k)
            b = r(nn, k) if form == "nt" else r(k, nn)
            A = a.T if form == "tn" else a
            B = b.T if form == "nt" else b
            c = np.empty((m, nn), np.float32)
            fns["numpy"] = lambda A=A, B=B, c=c: np.matmul(A, B, out=c)
            if torch:
                tA, tB = torch.from_numpy(a), torch.from_numpy(b)
                tA = tA.t() if form == "tn" else tA
                tB = tB.t() if form == "nt" else tB
                tc = torch.empty(m, nn)
                fns["torch"] = lambda tA=tA, tB=tB, tc=tc: torch.mm(tA, tB, out=tc)
        elif kind in ("add", "mul", "exp", "gelu"):
            x, y = r(spec[1]), r(spec[1])
            s2 = np.float32(0.7978845608028654)
            fns["numpy"] = {
                "add": lambda: x + y, "mul": lambda: x * y,
                "exp": lambda: np.exp(x),
                # what a numpy user writes (no erf in numpy): tanh form
                "gelu": lambda: 0.5 * x * (1 + np.tanh(s2 * (x + np.float32(0.044715) * x * x * x))),
            }[kind]
            if torch:
                tx, ty = torch.from_numpy(x), torch.from_numpy(y)
                fns["torch"] = {"add": lambda: tx + ty, "mul": lambda: tx * ty,
                                "exp": lambda: torch.exp(tx),
                                "gelu": lambda: F.gelu(tx)}[kind]
        else:
            x, w, b = r(4096, 1024), r(1024), r(1024)
            if kind == "softmax":
                def np_softmax():
                    e = np.exp(x - x.max(axis=-1, keepdims=True))
                    return e / e.sum(axis=-1, keepdims=True)
                fns["numpy"] = np_softmax
                if torch:
                    tx = torch.from_numpy(x)
                    fns["torch"] = lambda: F.softmax(tx, dim=-1)
            else:
                def np_ln():
                    mu = x.mean(axis=-1, keepdims=True)
                    var = x.var(axis=-1, keepdims=True)
                    return (x - mu) / np.sqrt(var + np.float32(1e-5)) * w + b
                fns["numpy"] = np_ln
                if torch:
                    tx, tw, tb = (torch.from_numpy(v) for v in (x, w, b))
                    fns["torch"] = lambda: F.layer_norm(tx, (1024,), tw, tb, 1e-5)
        with torch.inference_mode() if torch else contextlib.nullcontext():
            row = {"op": op, "shape": shape}
            for name, fn in fns.items():
                row[name] = best_time(fn)
        print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?",
                    default=os.path.join("build", "native-cc", "bench",
                                         "bench_kernels"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reference", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.reference:
        return reference(a.reference, a.quick)
    results = []
    for t in [int(v) for v in a.threads.split(",")]:
        env = dict(os.environ, FOUNDRY_NUM_THREADS=str(t),
                   OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t),
                   MKL_NUM_THREADS=str(t))
        args = [a.binary] + (["--quick"] if a.quick else [])
        ours = [json.loads(line) for line in subprocess.run(
            args, env=env, check=True, capture_output=True,
            text=True).stdout.splitlines()]
        ours = {(o["op"], o["shape"]): o for o in ours if "op" in o}
        refs = subprocess.run(
            [sys.executable, __file__, "--reference", str(t)] +
            (["--quick"] if a.quick else []), env=env, check=True,
            capture_output=True, text=True).stdout.splitlines()
        for line in refs:
            ref = json.loads(line)
            o = ours[(ref["op"], ref["shape"])]
            row = {"op": ref["op"], "shape": ref["shape"], "threads": t,
                   "foundry_s": o["seconds"], "numpy_s": ref.get("numpy"),
                   "torch_s": ref.get("torch")}
            if o.get("flops"):
                row["foundry_gflops"] = o["flops"] / o["seconds"] / 1e9
            for k in ("numpy", "torch"):
                if ref.get(k):
                    row[f"ratio_{k}"] = ref[k] / o["seconds"]
            results.append(row)
    print(f"{'op':14} {'shape':16} {'thr':>3} {'foundry ms':>10} "
          f"{'GFLOPS':>7} {'numpy ms':>9} {'torch ms':>9} {'vs np':>6} "
          f"{'vs torch':>8}")
    fmt = lambda v, f: format(v, f) if v is not None else "-"  # noqa: E731
    for r in results:
        print(f"{r['op']:14} {r['shape']:16} {r['threads']:>3} "
              f"{r['foundry_s'] * 1e3:>10.3f} "
              f"{fmt(r.get('foundry_gflops'), '7.1f'):>7} "
              f"{fmt(r['numpy_s'] and r['numpy_s'] * 1e3, '9.3f'):>9} "
              f"{fmt(r['torch_s'] and r['torch_s'] * 1e3, '9.3f'):>9} "
              f"{fmt(r.get('ratio_numpy'), '6.2f'):>6} "
              f"{fmt(r.get('ratio_torch'), '8.2f'):>8}")
    print("ratio = reference time / Foundry time: > 1 means Foundry is faster")
    import numpy
    meta = {"platform": platform.platform(), "cpus": os.cpu_count(),
            "numpy": numpy.__version__}
    try:
        import torch
        meta["torch"] = torch.__version__
    except ImportError:
        meta["torch"] = None
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "kernels.json"), "w") as f:
        json.dump({"machine": meta, "results": results}, f, indent=1)
    print("wrote bench/results/kernels.json")


if __name__ == "__main__":
    sys.exit(main())
