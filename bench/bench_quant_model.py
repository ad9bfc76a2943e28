#!/usr/bin/env python3
"""The demo GPT quantized to every format: validation perplexity and its
increase over F32, file size, generation tokens/s.

    .venv/bin/python bench/bench_quant_model.py [--run RUN_DIR] [--run256 RUN_DIR]
        [--threads 1 2] [--gen-tokens 128] [--quick]

Models: the `make demo` model (d_model 128; trained here with the demo's
flags unless --run names one) and the same recipe at d_model 256
(--run256, else trained here with the demo's tokenizer and dataset).  The
demo model's rows are 128 long: whole 32-value blocks, but not 256-value
K-quant super-blocks, so there every K-quant tensor falls back (Q4_K ->
Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, as llama.cpp does) and its "K-quant"
rows measure the fallbacks.  The d_model 256 model is where the K-quants
are compared with the 32-value formats.

Per format: `foundry quantize RUN OUT.gguf --type FMT` (the total RMSE it
prints, the tensors that fell back), the GGUF's size, `foundry eval --split
val` (the training run's split: val fraction 0.1; --eval-batches N: its
first N batches of 8 x 128 tokens, the same tokens for every format)
perplexity, and `foundry
generate --stats` tokens/s (prompt "def ", greedy, --gen-tokens new
tokens, best of --repeats, each thread count).  F32 is the run directory
itself (model.safetensors).  Writes bench/results/quant_model.json
(quant_model_quick.json with --quick) and prints a markdown table.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("FOUNDRY_BIN", ROOT / "bin" / "foundry"))
FORMATS = ["q8_0", "q6_k", "q5_k_m", "q5_k", "q5_1", "q5_0", "q4_k_m", "q4_k", "q4_1", "q4_0"]
DEMO = ["--vocab-size", "1024", "--layers", "4", "--heads", "4", "--context", "128",
        "--batch", "16", "--steps", "500", "--warmup", "40", "--lr", "3e-3", "--min-lr", "1e-4",
        "--eval-every", "50", "--eval-batches", "8", "--seed", "1337"]


def sh(*args):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"foundry {' '.join(map(str, args))}: {r.stderr.strip()}")
    return r


def train(out, d_model, threads, base=None, quick=False):
    extra = ["--steps", "30", "--eval-every", "10"] if quick else []
    tok = ["--tokenizer", base / "tokenizer.json", "--data", base / "data.ftok"] if base else []
    demo = DEMO[2:] if base else DEMO  # the vocabulary comes with the tokenizer
    sh("train", *demo, *extra, "--d-model", d_model, "--threads", threads, "--quiet", *tok,
       "--out", out)
    return out


def perplexity(model, data, threads, batches):
    lim = ["--max-batches", batches] if batches else []
    out = sh("eval", "--model", model, "--data", data, "--split", "val", "--quiet",
             "--threads", threads, *lim).stdout
    return float(re.search(r"perplexity\s+(\S+)", out)[1])


def gen_tps(model, threads, n, repeats):
    best = 0.0
    for _ in range(repeats):
        err = sh("generate", "--model", model, "--prompt", "def ", "--temperature", "0",
                 "--max-new-tokens", n, "--threads", threads, "--stats").stderr
        m = re.search(r"generated (\d+) tokens in (\S+) s", err)
        best = max(best, int(m[1]) / float(m[2]))
    return best


def bench_model(run, label, args, tmp):
    data = run / "data.ftok"
    rows = []
    f32_ppl = perplexity(run, data, args.threads[-1], args.eval_batches)
    f32_size = (run / "model.safetensors").stat().st_size
    rows.append({"model": label, "format": "f32", "file_bytes": f32_size, "ppl": f32_ppl,
                 "ppl_increase_pct": 0.0, "rmse": 0.0, "rel_rmse_pct": 0.0, "fell_back": 0,
                 "tok_s": {str(t): gen_tps(run, t, args.gen_tokens, args.repeats)
                           for t in args.threads}})
    for fmt in args.formats:
        out = tmp / f"{label}_{fmt}.gguf"
        text = sh("quantize", run, out, "--type", fmt, "--quiet").stdout
        m = re.search(r"(\d+) fell back\).*total rmse (\S+) \((\S+)% of rms\)", text)
        ppl = perplexity(out, data, args.threads[-1], args.eval_batches)
        rows.append({"model": label, "format": fmt, "file_bytes": out.stat().st_size, "ppl": ppl,
                     "ppl_increase_pct": 100 * (ppl / f32_ppl - 1), "rmse": float(m[2]),
                     "rel_rmse_pct": float(m[3]), "fell_back": int(m[1]),
                     "tok_s": {str(t): gen_tps(out, t, args.gen_tokens, args.repeats)
                               for t in args.threads}})
        print(f"  {label} {fmt}: ppl {ppl:.3f} (+{rows[-1]['ppl_increase_pct']:.2f}%)",
              file=sys.stderr)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=pathlib.Path, help="the demo run directory (trained if absent)")
    ap.add_argument("--run256", type=pathlib.Path, help="the d_model 256 run (trained if absent)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eval-batches", type=int, default=0,
                    help="evaluate the first N batches of 8 x 128 tokens of the val split (0: all)")
    ap.add_argument("--formats", nargs="+", default=FORMATS, choices=FORMATS)
    ap.add_argument("--quick", action="store_true", help="a 30-step smoke run")
    args = ap.parse_args()
    if args.quick:
        args.gen_tokens, args.repeats = 16, 1
    with tempfile.TemporaryDirectory(prefix="bench_quant_") as td:
        tmp = pathlib.Path(td)
        t0 = time.time()
        run = args.run or train(tmp / "demo128", 128, args.threads[-1], quick=args.quick)
        run256 = args.run256 or train(tmp / "demo256", 256, args.threads[-1], base=run,
                                      quick=args.quick)
        rows = bench_model(run, "d128", args, tmp) + bench_model(run256, "d256", args, tmp)
    res = {"bench": "quant_model", "threads": args.threads, "gen_tokens": args.gen_tokens,
           "eval_batches": args.eval_batches, "repeats": args.repeats,
           "prompt": "def ", "demo_flags": DEMO, "quick": args.quick,
           "seconds": round(time.time() - t0, 1), "rows": rows}
    outdir = ROOT / "bench" / "results"
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / ("quant_model_quick.json" if args.quick else "quant_model.json")
    path.write_text(json.dumps(res, indent=1) + "\n")
    ts = " | ".join(f"tok/s {t} thr" for t in args.threads)
    print(f"| model | format | file | val ppl | vs F32 | rel. RMSE | fell back | {ts} |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(args.threads))
    for r in rows:
        tps = " | ".join(f"{r['tok_s'][str(t)]:.0f}" for t in args.threads)
        print(f"| {r['model']} | {r['format']} | {r['file_bytes'] / 1024:.0f} KiB | {r['ppl']:.3f} | "
              f"{r['ppl_increase_pct']:+.2f}% | {r['rel_rmse_pct']:.2f}% | {r['fell_back']} | {tps} |")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
