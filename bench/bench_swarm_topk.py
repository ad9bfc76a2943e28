"""TopK selection by magnitude: Foundry's tm_swarm_topk against
torch.topk(x.abs(), k) on the same size, same thread count, same run.

Foundry runs in its own process (bench_swarm topk, built by `make
bench-swarm`), so neither library's spinning thread pool slows the other;
the two alternate, window by window (which goes first alternates too), and
each window times every call after one warm-up.  Figures are the medians
over all windows; ratio = torch ms / Foundry ms (above 1: Foundry is
faster).  The inputs are N(0, 1) floats from each library's own generator
(same distribution, different values: the time depends on the
distribution, not on the values).

    python bench/bench_swarm_topk.py [--n 25000000] [--threads 2]
        [--ratios 0.001,0.01] [--windows 4] [--reps 5]

Writes bench/results/swarm_topk.json; figures: docs/benchmarks.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def foundry_window(binary, n, k, reps, threads):
    env = dict(os.environ, FOUNDRY_NUM_THREADS=str(threads))
    out = subprocess.run([binary, "topk", str(n), str(k), str(reps)],
                         env=env, check=True, capture_output=True, text=True)
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert rec["threads"] == threads, rec
    return rec["ms"]


def torch_window(torch, x, k, reps):
    torch.topk(x.abs(), k)  # warm-up
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.topk(x.abs(), k)
        ms.append(1e3 * (time.perf_counter() - t0))
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=25_000_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--ratios", default="0.001,0.01")
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(
        HERE, "..", "build", "native-cc", "bench", "bench_swarm"))
    ap.add_argument("--out", default=os.path.join(HERE, "results",
                                                  "swarm_topk.json"))
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(a.n, generator=gen)
    rows = []
    for ratio in [float(r) for r in a.ratios.split(",")]:
        k = max(1, int(round(a.n * ratio)))
        f_ms, t_ms = [], []
        for w in range(a.windows):
            order = ("foundry", "torch") if w % 2 == 0 else ("torch", "foundry")
            for who in order:
                if who == "foundry":
                    f_ms += foundry_window(a.bin, a.n, k, a.reps, a.threads)
                else:
                    t_ms += torch_window(torch, x, k, a.reps)
        f, t = statistics.median(f_ms), statistics.median(t_ms)
        row = {"bench": "swarm_topk", "n": a.n, "k": k, "ratio_k": ratio,
               "threads": a.threads, "foundry_ms": round(f, 3),
               "torch_ms": round(t, 3), "ratio": round(t / f, 2),
               "foundry_all_ms": [round(v, 3) for v in f_ms],
               "torch_all_ms": [round(v, 3) for v in t_ms],
               "torch": torch.__version__}
        rows.append(row)
        print(json.dumps({key: row[key] for key in
                          ("n", "k", "threads", "foundry_ms", "torch_ms",
                           "ratio")}), flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(rows, fh, indent=1)
    print(f"{'k':>10} {'foundry ms':>11} {'torch ms':>9} {'torch/foundry':>14}")
    for r in rows:
        print(f"{r['k']:>10} {r['foundry_ms']:>11.2f} {r['torch_ms']:>9.2f} "
              f"{r['ratio']:>14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
