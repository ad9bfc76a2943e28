#!/usr/bin/env python3
"""The swarm on the demo GPT: one process against four workers on loopback.

Trains `make demo`'s model (the same flags, on the same tokenized corpus)
three ways for the same number of samples — one process with batch B, and
four `foundry swarm worker`s with batch B/4 each through one coordinator,
in TopK mode (k = --topk) and in DiLoCo mode (H = --local-steps) — and
reports the final validation loss of each (the whole val split), its ratio
to the single process's, and the bytes on the wire against dense F32
gradients (up and down, every step, every worker).

    python3 bench/bench_swarm_gpt.py [--steps 500] [--topk 0.01] [--local-steps 50]

Writes bench/results/swarm_gpt.json.  Needs bin/foundry (make).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOUNDRY = os.path.join(ROOT, "bin", "foundry")
MODEL = ["--d-model", "128", "--layers", "4", "--heads", "4", "--context", "128"]


def run(cmd, log):
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    text = open(log).read()
    if r.returncode:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{text[-2000:]}")
    return text


def val_loss(text):
    return float(re.search(r"val loss ([0-9.]+) nats/token", text).group(1))


def params(text):
    return int(re.search(r"model: (\d+) parameters", text).group(1))


def swarm(args, work, mode, schedule):
    """Four workers and a coordinator; returns (val losses, bytes, seconds)."""
    key = os.path.join(work, "key")
    if not os.path.exists(key):
        subprocess.run([FOUNDRY, "swarm", "keygen", "--out", key], check=True,
                       stdout=subprocess.DEVNULL)
    clog = os.path.join(work, f"coordinator-{mode}.log")
    co = subprocess.Popen([FOUNDRY, "swarm", "coordinator", "--port", "0", "--key-file", key,
                           "--round-deadline-ms", "20000", "--peer-timeout-ms", "60000"],
                          stdout=open(clog, "w"), stderr=subprocess.STDOUT)
    port = None
    for _ in range(200):
        m = re.search(r"port (\d+)", open(clog).read())
        if m:
            port = m.group(1)
            break
        time.sleep(0.05)
    if not port:
        co.kill()
        sys.exit("the coordinator did not start: " + open(clog).read())
    extra = {
        # DGC on the gradients (AdamW then sees sparse gradients)
        "topk": ["--mode", "topk", "--topk", str(args.topk)],
        # TopK with error feedback on AdamW's update: DiLoCo with H = 1,
        # an outer step that applies the average as it is
        "topk-update": ["--mode", "diloco", "--diloco-topk", "--topk", str(args.topk),
                        "--local-steps", "1", "--outer-lr", str(args.update_lr),
                        "--outer-momentum", str(args.update_momentum),
                        "--lookahead", str(args.lookahead)],
        "diloco": ["--mode", "diloco", "--local-steps", str(args.local_steps)],
        "dense": ["--mode", "dense"],
    }[mode]
    if "--topk" in extra:
        extra += ["--warmup-rounds", str(args.warmup_rounds)] + (["--f16"] if args.f16 else [])
    t0 = time.time()
    procs, logs = [], []
    for w in range(args.workers):
        log = os.path.join(work, f"{mode}-w{w}.log")
        logs.append(log)
        procs.append(subprocess.Popen(
            [FOUNDRY, "swarm", "worker", "--connect", f"127.0.0.1:{port}", "--key-file", key,
             "--name", f"w{w}", "--threads", "1", "--quiet", "--out", os.path.join(work, f"{mode}-w{w}"),
             "--batch", str(args.batch // args.workers)] + schedule + extra,
            stdout=open(log, "w"), stderr=subprocess.STDOUT))
    codes = [p.wait() for p in procs]
    secs = time.time() - t0
    co.terminate()
    co.wait()
    texts = [open(l).read() for l in logs]
    if any(codes):
        sys.exit(f"{mode}: a worker failed: {codes}\n" + "\n".join(t[-1500:] for t in texts))
    sent = recv = 0.0
    for t in texts:
        m = re.search(r"sent ([0-9.]+) MB .* received ([0-9.]+) MB", t)
        sent += float(m.group(1)) * 1e6
        recv += float(m.group(2)) * 1e6
    models = [open(os.path.join(work, f"{mode}-w{w}", "model.safetensors"), "rb").read()
              for w in range(args.workers)]
    return {
        "val_loss": [val_loss(t) for t in texts],
        "identical_replicas": all(m == models[0] for m in models),
        "bytes_sent": sent, "bytes_received": recv, "seconds": secs,
        "coordinator": open(clog).read().strip().splitlines()[-1],
    }


def main():
    global FOUNDRY
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--topk", type=float, default=0.01)
    ap.add_argument("--local-steps", type=int, default=50)
    ap.add_argument("--warmup-rounds", type=int, default=0, help="TopK's sparsity warm-up")
    ap.add_argument("--f16", action="store_true", help="TopK values as F16")
    ap.add_argument("--update-lr", type=float, default=1.0,
                    help="topk-update: the outer SGD's lr applied to the averaged update")
    ap.add_argument("--update-momentum", type=float, default=0.0,
                    help="topk-update: the outer SGD's (Nesterov) momentum")
    ap.add_argument("--lookahead", type=float, default=0.0,
                    help="topk-update: local steps start at the replica plus this much of the unsent change")
    ap.add_argument("--modes", default="topk-update,topk,diloco")
    ap.add_argument("--reuse-single", action="store_true",
                    help="take the single process's result from an earlier run in --work")
    ap.add_argument("--work", default=os.path.join(ROOT, "runs", "bench-swarm"))
    ap.add_argument("--foundry", default=FOUNDRY, help="the foundry program to run")
    args = ap.parse_args()
    FOUNDRY = args.foundry
    os.makedirs(args.work, exist_ok=True)
    prep = os.path.join(args.work, "prep")
    # the demo's tokenizer and corpus, made once
    if not os.path.exists(os.path.join(prep, "data.ftok")):
        run([FOUNDRY, "train", "--vocab-size", "1024", *MODEL, "--steps", "1", "--warmup", "0",
             "--quiet", "--out", prep], os.path.join(args.work, "prep.log"))
    warm = max(1, args.steps * 40 // 500)
    schedule = ["--data", os.path.join(prep, "data.ftok"), "--tokenizer",
                os.path.join(prep, "tokenizer.json"), *MODEL, "--steps", str(args.steps),
                "--warmup", str(warm), "--lr", "3e-3", "--min-lr", "1e-4", "--eval-every", "0",
                "--seed", "1337"]
    t0 = time.time()
    slog = os.path.join(args.work, "single.log")
    if args.reuse_single and os.path.exists(slog) and "val loss" in open(slog).read():
        single = open(slog).read()
    else:
        single = run([FOUNDRY, "train", *schedule, "--batch", str(args.batch), "--quiet",
                      "--out", os.path.join(args.work, "single")], slog)
    out = {"steps": args.steps, "batch": args.batch, "workers": args.workers,
           "parameters": params(single), "single": {"val_loss": val_loss(single),
                                                    "seconds": time.time() - t0}}
    dense = 2 * 4 * out["parameters"] * args.steps * args.workers  # up and down, F32
    out["dense_bytes"] = dense
    print(f"single process: val loss {out['single']['val_loss']:.4f}  ({out['parameters']} parameters, "
          f"{args.steps} steps x batch {args.batch})")
    for mode in args.modes.split(","):
        r = swarm(args, args.work, mode, schedule)
        r["loss_ratio"] = r["val_loss"][0] / out["single"]["val_loss"]
        r["wire_fraction"] = (r["bytes_sent"] + r["bytes_received"]) / dense
        r["sent_fraction"] = r["bytes_sent"] / (dense / 2)
        out[mode] = r
        print(f"{mode:7s} x{args.workers}: val loss {r['val_loss'][0]:.4f} ({100 * (r['loss_ratio'] - 1):+.2f}% "
              f"of single), replicas identical: {r['identical_replicas']}, bytes on the wire "
              f"{(r['bytes_sent'] + r['bytes_received']) / 1e6:.1f} MB = {100 * r['wire_fraction']:.2f}% of dense "
              f"(sent {100 * r['sent_fraction']:.2f}%), {r['seconds']:.0f} s")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "swarm_gpt.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
