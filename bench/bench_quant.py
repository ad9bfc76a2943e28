"""Quantized matvec / matmul against F32, with the machine's memory
bandwidth, all in one run (bench_quant.c), plus numpy's F32 matvec (a
separate process, same shapes and thread count) for scale.

    python bench/bench_quant.py [BENCH_QUANT_BINARY] [--quick] [--threads 1,2]
    python bench/bench_quant.py --from LINES.jsonl   (a saved run's output)

Prints a table and writes bench/results/quant.json.  Times are means per
call (sustained, weights cycled through >= 512 MiB of copies).  ratio =
F32 tm_linear ms / quantized ms (same shape, rows, threads, run);
bw_frac = weight GB/s / the STREAM-like read bandwidth of the same thread
count; ratio_vs_numpy (matvec) = numpy's F32 ms / quantized ms.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NUMPY_SNIPPET = r"""
import json, sys, time
import numpy as np
n, k, reps = int(sys.argv[1]), int(sys.argv[2]), 5
rng = np.random.default_rng(0)
w = rng.standard_normal((n, k), dtype=np.float32)
x = rng.standard_normal((1, k), dtype=np.float32)
x @ w.T
total, count = 0.0, 0
t0 = time.perf_counter()
while reps > 0 or time.perf_counter() - t0 < 0.25:
    s = time.perf_counter(); x @ w.T; total += time.perf_counter() - s
    reps -= 1
    count += 1
print(json.dumps({"ms": total / count * 1e3}))
"""


def numpy_matvec(n, k, threads):
    env = dict(os.environ)
    for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(v, None)
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = str(threads)
    try:
        out = subprocess.run([sys.executable, "-c", NUMPY_SNIPPET, str(n),
                              str(k)], env=env, capture_output=True,
                             text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])["ms"]
    except (subprocess.CalledProcessError, ValueError, IndexError):
        return None


def main():
    args = sys.argv[1:]
    binary = os.path.join(HERE, "..", "build", "native-cc", "bench",
                          "bench_quant")
    if args and not args[0].startswith("--"):
        binary = args.pop(0)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if args[:1] == ["--from"]:
        with open(args[1]) as f:
            out = f.read()
    else:
        out = subprocess.run([binary] + args, capture_output=True, text=True,
                             check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    stream = {(r["op"], r["threads"]): r["gbs"] for r in rows
              if r["op"].startswith("stream")}
    f32 = {(r["m"], r["n"], r["k"], r["threads"]): r["ms"] for r in rows
           if r["op"] == "linear"}
    for r in rows:
        if r["op"] != "qmatmul" and r["op"] != "linear":
            continue
        base = f32[(r["m"], r["n"], r["k"], r["threads"])]
        r["ratio_vs_f32"] = base / r["ms"]
        read = stream.get(("stream_read", r["threads"]))
        if read and r["m"] == 1:
            r["bw_frac"] = r["weight_gbs"] / read
    numpy_rows = []
    shapes = sorted({(r["n"], r["k"], r["threads"]) for r in rows
                     if r["op"] == "linear" and r["m"] == 1})
    for n, k, t in shapes:
        ms = numpy_matvec(n, k, t)
        if ms is not None:
            numpy_rows.append({"op": "numpy_matvec", "format": "f32", "m": 1,
                               "n": n, "k": k, "threads": t, "ms": ms,
                               "weight_gbs": 4.0 * n * k / (ms / 1e3) / 1e9})
    # The same matvec's speed against numpy's F32 (OpenBLAS), the usual
    # yardstick: our own F32 matvec is not the fastest F32 there is.
    npms = {(r["n"], r["k"], r["threads"]): r["ms"] for r in numpy_rows}
    for r in rows:
        key = (r.get("n"), r.get("k"), r.get("threads"))
        if r["op"] == "qmatmul" and r["m"] == 1 and key in npms:
            r["ratio_vs_numpy"] = npms[key] / r["ms"]
    print("memory bandwidth (GB/s):")
    for (op, t), gbs in sorted(stream.items()):
        print(f"  {op:12s} threads={t}  {gbs:7.2f}")
    print(f"\n{'shape n x k':>13s} {'m':>4s} {'thr':>3s} {'format':>6s} "
          f"{'ms':>9s} {'GB/s':>7s} {'GFLOP/s':>8s} {'vs f32':>7s} "
          f"{'of read bw':>10s} {'vs numpy':>8s}")
    for r in sorted(rows + numpy_rows,
                    key=lambda r: (r.get("n", 0), r.get("k", 0),
                                   r.get("m", 0), r.get("threads", 0))):
        if "format" not in r:
            continue
        name = "numpy" if r["op"] == "numpy_matvec" else r["format"]
        gflops = 2.0 * r["m"] * r["n"] * r["k"] / (r["ms"] / 1e3) / 1e9
        ratio = f"{r['ratio_vs_f32']:6.2f}x" if "ratio_vs_f32" in r else ""
        frac = f"{100 * r['bw_frac']:9.0f}%" if "bw_frac" in r else ""
        vsnp = (f"{r['ratio_vs_numpy']:7.2f}x" if "ratio_vs_numpy" in r
                else "")
        print(f"{r['n']:>6d}x{r['k']:<6d} {r['m']:>4d} {r['threads']:>3d} "
              f"{name:>6s} {r['ms']:9.3f} {r['weight_gbs']:7.2f} "
              f"{gflops:8.1f} {ratio:>7s} {frac:>10s} {vsnp:>8s}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", "quant.json")
    with open(path, "w") as f:
        json.dump({"started": started, "args": args, "rows": rows,
                   "numpy": numpy_rows}, f, indent=1)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
