"""How far llama.cpp moves from itself on SmolLM2-135M-Instruct.Q4_1.gguf:
its greedy tokens and first-token logits with an F32 KV cache (no flash
attention) against its default (F16 cache) as recorded in
tests/data/smollm2/ref.json; with --default, its default settings on this
machine's CPU against that recording (made on another CPU: llama.cpp's
kernels, and so its rounding, follow the CPU's features).  The numbers
behind NEAR and the logit tolerances of tests/python/test_smollm2.py;
prints, writes nothing.

    python3 tests/gen/smollm2_llamacpp_self.py [--default]   # needs llama_cpp
"""
import json
import pathlib
import sys

import numpy as np

from gen_smollm2_ref import model_path

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "smollm2"


def main():
    import llama_cpp
    ref = json.loads((DATA / "ref.json").read_text())
    rows = np.load(DATA / "ref_logits.npy").astype(np.float64)
    f32 = {} if "--default" in sys.argv[1:] else {"type_k": 0, "type_v": 0}  # GGML_TYPE_F32
    llm = llama_cpp.Llama(model_path=model_path(), n_ctx=512, n_batch=512, n_threads=2,
                          n_threads_batch=2, logits_all=True, seed=0, verbose=False,
                          flash_attn=False, **f32)
    for k, (name, r) in enumerate(ref["prompts"].items()):
        llm.reset()
        llm.eval(r["ids"])
        new, first = [], None
        for _ in range(len(r["new"])):
            row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
            first = row if first is None else first
            new.append(int(np.argmax(row)))
            llm.eval([new[-1]])
        n = next((i for i, (a, b) in enumerate(zip(new, r["new"])) if a != b), len(new))
        d = first - rows[k]
        top = np.argsort(-rows[k])[:10]
        print(f"{name}: greedy equal for {n} tokens"
              + (f" (default's top-2 gap there {r['top2_gap'][n]:.3g})" if n < len(new) else "")
              + f"; first-token logits max |d| {np.abs(d).max():.3f} "
              f"({np.abs(d).max() / np.ptp(rows[k]):.2e} of the range), rms "
              f"{np.sqrt((d * d).mean()):.3f}, top-10 max |d| {np.abs(d[top]).max():.3f}")


if __name__ == "__main__":
    main()
