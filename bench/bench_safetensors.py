#!/usr/bin/env python3
"""Safetensors: Foundry against the reference `safetensors` package
(safetensors.numpy), same run, same 1 GiB of float32 tensors.

    .venv/bin/python bench/bench_safetensors.py [--mib 1024]   (or: make bench)

  save        save_file of the whole set (MB/s; ratio = Foundry / reference
              throughput, > 1: Foundry is faster), like for like: both write
              to the page cache (durable=False; the reference never fsyncs);
              Foundry's default durable=True save (fsync) is reported too
  load        load_file then touch every byte (Foundry: copy=False views
              summed; reference: numpy arrays summed)
  first elem  open the file and read one element of the last tensor
              (Foundry: mmap, no copy), as a fraction of Foundry's full read
Files live in a temporary directory next to the system's temp dir and are
deleted.  Saves alternate between the writers, each after an os.sync(),
5 rounds; the medians count (single saves vary 2-3x with the disk).  The page cache is warm (the file was just written), as it is for a
checkpoint reloaded during training.  Writes bench/results/safetensors.json.
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def best(fn, reps=3):
    out = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    args = ap.parse_args()
    import foundry as F
    from safetensors.numpy import load_file as ref_load, save_file as ref_save

    n_tensors = 16
    per = args.mib * (1 << 20) // 4 // n_tensors
    rng = np.random.default_rng(0)
    arrays = {f"layer{i:02d}.weight": rng.standard_normal(per,
                                                          dtype=np.float32)
              for i in range(n_tensors)}
    tensors = {k: F.from_numpy(v) for k, v in arrays.items()}
    nbytes = sum(a.nbytes for a in arrays.values())
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        ours, theirs = os.path.join(d, "ours.st"), os.path.join(d, "ref.st")
        # Alternate the writers, each starting with no dirty pages left by
        # the others (os.sync), so the kernel's writeback of one save does
        # not land on the next one's clock.
        variants = {"durable": lambda: F.save_file(tensors, ours),
                    "fast": lambda: F.save_file(tensors, ours, durable=False),
                    "ref": lambda: ref_save(arrays, theirs)}
        samples = {k: [] for k in variants}
        for _ in range(5):
            for k, fn in variants.items():
                os.sync()
                t0 = time.perf_counter()
                fn()
                samples[k].append(time.perf_counter() - t0)
        # the disk makes single saves vary 2-3x here: medians, not minima
        times = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
        t_ours, t_fast, t_ref = times["durable"], times["fast"], times["ref"]
        rows["save"] = {"foundry_MBps": nbytes / t_fast / 1e6,
                        "ref_MBps": nbytes / t_ref / 1e6,
                        "ratio": t_ref / t_fast,
                        "foundry_durable_MBps": nbytes / t_ours / 1e6,
                        "durable_ratio": t_ref / t_ours}

        def our_full():
            d = F.load_file(ours)
            for t in d.values():
                np.add.reduce(t.numpy(), dtype=np.float64)

        def ref_full():
            d = ref_load(theirs)
            for a in d.values():
                np.add.reduce(a, dtype=np.float64)

        t_of, t_rf = best(our_full), best(ref_full)
        rows["load"] = {"foundry_s": t_of, "ref_s": t_rf,
                        "ratio": t_rf / t_of}

        def first():
            with F.safe_open(ours) as f:
                f.get_tensor(f"layer{n_tensors - 1:02d}.weight")[0].item()
        t_first = best(first, 10)
        rows["first_element"] = {"foundry_s": t_first,
                                 "fraction_of_full_read": t_first / t_of}
    print(f"{args.mib} MiB of float32 in {n_tensors} tensors")
    s = rows["save"]
    print(f"save         Foundry {s['foundry_MBps']:8.0f} MB/s   reference "
          f"{s['ref_MBps']:8.0f} MB/s   ratio {s['ratio']:.2f}   (both "
          f"atomic rename, page cache)")
    print(f"save+fsync   Foundry {s['foundry_durable_MBps']:8.0f} MB/s   "
          f"(durable=True, the default; the reference does not fsync)   "
          f"ratio {s['durable_ratio']:.2f}")
    l = rows["load"]
    print(f"load+read    Foundry {l['foundry_s'] * 1e3:8.1f} ms     reference "
          f"{l['ref_s'] * 1e3:8.1f} ms     ratio {l['ratio']:.2f}")
    f = rows["first_element"]
    print(f"first elem   Foundry {f['foundry_s'] * 1e6:8.1f} us = "
          f"{100 * f['fraction_of_full_read']:.3f}% of the full read")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "safetensors.json"), "w") as fh:
        json.dump({"mib": args.mib, "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
