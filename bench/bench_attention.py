#!/usr/bin/env python3
"""Scaled-dot-product attention, forward and forward + backward: Foundry
(the default dispatch, the fused kernel forced, the composed path forced)
against PyTorch's CPU scaled_dot_product_attention, F32, same thread
count, same run.

    .venv/bin/python bench/bench_attention.py [--threads N] [--seconds 1]
        [--rounds 5] [--quick] [--cases decode,gqa]
    (or: make bench)

Shapes (B, H, Hkv, Tq, Tk, D): causal 1x8x2048x64; non-causal 8x8x256x64;
causal grouped-query 1x32 (8 key/value heads) x1024x128, torch with
enable_gqa=True; decode, one query over 4096 keys, 1x8x64 (forward only,
no mask: the query is the newest token and sees the whole cache); and two
with fewer heads than threads: decode of one head over 32768 keys and a
causal 1x1x4096x64.  "fwd" is one attention call; "fwd+bwd" adds
y.backward(g) for a fixed g, q, k and v requiring grad.  After one warm-up
call each, the four callables are timed in alternating windows (--rounds
windows each, --seconds in all per callable and pass, at least one call a
window), with a pause before each window so that the previous one's
spinning thread pool (PyTorch's OpenMP team or Foundry's) has gone to
sleep; each one's median window counts (the machine is shared:
alternating keeps a slow spell from landing on one side only).
ratio = PyTorch ms / Foundry ms (> 1: Foundry is faster);
fused_vs_composed = composed ms / fused ms (>= 1: the fused kernel is not
slower).  --quick divides every sequence length by 8 and runs one short
round (a smoke run: the figures are not the benchmark's).  Writes
bench/results/attention.json (attention_quick.json with --quick).
"""
import argparse
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name, B, H, Hkv, Tq, Tk, D, causal, whether fwd+bwd is timed
CASES = [
    ("causal 1x8x2048x64", 1, 8, 8, 2048, 2048, 64, True, True),
    ("8x8x256x64", 8, 8, 8, 256, 256, 64, False, True),
    ("gqa causal 1x32/8x1024x128", 1, 32, 8, 1024, 1024, 128, True, True),
    ("decode 1x8 1/4096 x64", 1, 8, 8, 1, 4096, 64, False, False),
    # fewer heads than threads: where splitting keys (decode) and key /
    # query tiles (backward) matter, beyond the issue's four shapes
    ("decode 1x1 1/32768 x64", 1, 1, 1, 1, 32768, 64, False, False),
    ("causal 1x1x4096x64", 1, 1, 1, 4096, 4096, 64, True, True),
]
# Foundry's three ways and PyTorch's, in the order they are timed
IMPLS = ("foundry", "fused", "composed", "torch")
TARGETS = {"fwd": 1.2, "fwd+bwd": 1.5, "decode": 2.0}
GAP_S = 0.2


def _inputs(lib, case, grad):
    _, b, h, hkv, tq, tk, d, _, _ = case
    lib.manual_seed(0)
    xs = [lib.randn(b, h, tq, d), lib.randn(b, hkv, tk, d),
          lib.randn(b, hkv, tk, d)]
    if grad:
        for x in xs:
            x.requires_grad_(True)
    return xs


def make_call(impl, case, backward):
    """One attention call (forward, or forward + backward) of `case`."""
    if impl == "torch":
        import torch as lib

        def attn(q, k, v):
            return lib.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=case[7], enable_gqa=case[2] != case[3])
    else:
        import foundry as lib
        sdpa = lib.nn.functional.scaled_dot_product_attention
        how = "auto" if impl == "foundry" else impl

        def attn(q, k, v):
            return sdpa(q, k, v, is_causal=case[7],
                        enable_gqa=case[2] != case[3], _impl=how)
    q, k, v = _inputs(lib, case, backward)
    y = attn(q, k, v)
    if not backward:
        return lambda: attn(q, k, v)
    g = lib.randn(*tuple(y.shape))

    def fwd_bwd():
        attn(q, k, v).backward(g)
        q.grad = k.grad = v.grad = None
    return fwd_bwd


def window(call, seconds):
    n, t0 = 0, time.perf_counter()
    while True:
        call()
        n += 1
        t = time.perf_counter() - t0
        if t >= seconds:
            return t / n


def median_times(calls, seconds, rounds):
    """Median seconds per call of each call (None stays None), measured
    in alternation after one warm-up call each."""
    live = [c for c in calls if c is not None]
    for call in live:
        call()
    times = {id(c): [] for c in live}
    for _ in range(rounds):
        for call in live:
            # a pause before each window: the previous window's thread
            # pool (PyTorch's OpenMP team, Foundry's) may still be spinning
            # and would slow this one (measured: Foundry's window right
            # after PyTorch's ran 4% slower without it)
            time.sleep(GAP_S)
            times[id(call)].append(window(call, seconds / rounds))
    return [None if c is None else statistics.median(times[id(c)])
            for c in calls]


def torch_gqa_copies(case):
    """Whether PyTorch's enable_gqa=True path copies key/value heads
    (repeat_interleave or a clone of shape (B, H, Tk, D)), read from its
    profiler on one forward; also the aten kernel it ran."""
    import torch
    from torch.profiler import profile
    q, k, v = _inputs(torch, case, False)
    with profile(record_shapes=True) as prof:
        torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=case[7], enable_gqa=True)
    _, b, h, _, _, tk, d, _, _ = case
    full = [b, h, tk, d]
    copies, kernels = False, set()
    for e in prof.events():
        if "attention" in e.name and e.name != \
                "aten::scaled_dot_product_attention":
            kernels.add(e.name)
        if e.name == "aten::repeat_interleave" or (
                e.name in ("aten::clone", "aten::copy_")
                and e.input_shapes and list(e.input_shapes[0]) == full):
            copies = True
    return copies, sorted(kernels)


def _scaled(case, quick):
    if not quick:
        return case
    name, b, h, hkv, tq, tk, d, causal, bwd = case
    return (name + " /8", b, h, hkv, max(1, tq // 8), tk // 8, d, causal,
            bwd)


def _fmt(x, spec):
    return format(x, spec) if x is not None else "n/a".rjust(
        int(spec.split(".")[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", default="",
                    help="run only the cases whose name contains one of "
                         "these comma-separated words (e.g. decode,gqa)")
    args = ap.parse_args()
    words = [w for w in args.cases.split(",") if w]
    if args.quick:
        args.seconds, args.rounds = min(args.seconds, 0.2), 1
    import foundry
    foundry.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    impls = IMPLS if torch else IMPLS[:3]
    rows, notes = [], {}
    print(f"{args.threads} threads; ms per call; ratio = torch / foundry, "
          f"f/c = composed / fused")
    print(f"{'case':30} {'pass':8} {'foundry':>9} {'fused':>9} "
          f"{'composed':>9} {'torch':>9} {'ratio':>6} {'f/c':>6}")
    for case in (_scaled(c, args.quick) for c in CASES
                 if not words or any(w in c[0] for w in words)):
        if torch and case[2] != case[3]:
            copies, kernels = torch_gqa_copies(case)
            notes[case[0]] = {"torch_gqa_copies_kv": copies,
                              "torch_kernels": kernels}
        for backward in ((False, True) if case[8] else (False,)):
            calls = [make_call(i, case, backward) for i in impls]
            t = median_times(calls, args.seconds, args.rounds)
            ms = dict(zip(impls, (None if x is None else x * 1e3
                                  for x in t)))
            kind = "fwd+bwd" if backward else "fwd"
            f, tt = ms["foundry"], ms.get("torch")
            ratio = tt / f if tt and f else None
            fc = ms["composed"] / ms["fused"] if ms["composed"] and \
                ms["fused"] else None
            target = TARGETS["decode" if case[4] == 1 else kind]
            rows.append({"case": case[0], "pass": kind,
                         "shape": dict(zip(("B", "H", "Hkv", "Tq", "Tk", "D"),
                                           case[1:7])),
                         "causal": case[7],
                         "foundry_ms": f, "fused_ms": ms["fused"],
                         "composed_ms": ms["composed"],
                         "torch_ms": tt, "ratio": ratio,
                         "fused_vs_composed": fc,
                         "target_ratio": target})
            print(f"{case[0]:30} {kind:8} {_fmt(f, '9.3f')} "
                  f"{_fmt(ms['fused'], '9.3f')} "
                  f"{_fmt(ms['composed'], '9.3f')} {_fmt(tt, '9.3f')} "
                  f"{_fmt(ratio, '6.2f')} {_fmt(fc, '6.2f')}", flush=True)
    for name, n in notes.items():
        print(f"{name}: torch ran {', '.join(n['torch_kernels'])}; copies "
              f"k/v per query head: {n['torch_gqa_copies_kv']}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = "attention_quick.json" if args.quick else "attention.json"
    with open(os.path.join(HERE, "results", out), "w") as fh:
        json.dump({"threads": args.threads, "quick": args.quick,
                   "torch": torch.__version__ if torch else None,
                   "notes": notes, "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
