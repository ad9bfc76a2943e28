#!/usr/bin/env python3
"""Tokenizers: Foundry against Hugging Face `tokenizers` and `tiktoken`, same
run, one thread, the same byte-level BPE vocabulary in all three.

    .venv/bin/python bench/bench_tokenizer.py [--quick]   (or: make bench)

  vocabulary  trained by Foundry's trainer (vocab 8192, GPT-2 pattern, min
              frequency 2, <|endoftext|>) on the first 5 MB of the Python
              standard library's source files (plus the multilingual
              sample); HF's BpeTrainer is timed on the same documents and
              its merges compared; HF loads Foundry's tokenizer.json;
              tiktoken gets the same vocabulary as mergeable_ranks
              (rank = id) and the same pattern (no download).
  corpora     "code": 4 MB of other standard-library files, "multilingual":
              sentences in 13 languages and scripts (embedded below)
              shuffled by word into 2 MB.
  encode      one big string (Foundry tok.encode(text).ids, the C call
              alone through cffi, HF tok.encode(text).ids, tiktoken
              encode_ordinary) and the lines of it (Foundry encode_batch,
              HF encode_batch, tiktoken encode_ordinary_batch with
              num_threads=1).  MB/s of UTF-8 input; ratio = Foundry / HF.
              The implementations alternate, 5 rounds after a warm-up; the
              best round counts (all three keep warm caches of pieces).
  "a"*10^6    one piece of a million letters: Foundry and HF encode it;
              tiktoken (quadratic on it) runs in a subprocess with a 60 s
              limit, and at 10^5 for scale.
Single thread: TOKENIZERS_PARALLELISM=false and RAYON_NUM_THREADS=1 are set
before tokenizers is imported; Foundry's encoder and trainer are
single-threaded.  Writes bench/results/tokenizer.json.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

HERE = os.path.dirname(os.path.abspath(__file__))

GPT2 = (r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"""
        r"""|\s+(?!\S)|\s+""")

SENTENCES = [
    "All human beings are born free and equal in dignity and rights. They are "
    "endowed with reason and conscience and should act towards one another in "
    "a spirit of brotherhood.",
    "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind "
    "mit Vernunft und Gewissen begabt und sollen einander im Geist der "
    "Brüderlichkeit begegnen.",
    "Tous les êtres humains naissent libres et égaux en dignité et en droits. "
    "Ils sont doués de raison et de conscience et doivent agir les uns envers "
    "les autres dans un esprit de fraternité.",
    "Todos los seres humanos nacen libres e iguales en dignidad y derechos y, "
    "dotados como están de razón y conciencia, deben comportarse "
    "fraternalmente los unos con los otros.",
    "Все люди рождаются свободными и равными в своем достоинстве и правах. Они "
    "наделены разумом и совестью и должны поступать в отношении друг друга в "
    "духе братства.",
    "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。",
    "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"
    "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。",
    "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. 인간은 천부적으로 "
    "이성과 양심을 부여받았으며 서로 형제애의 정신으로 행동하여야 한다.",
    "جميع الناس يولدون أحرارًا متساوين في الكرامة والحقوق. وقد وهبوا عقلاً "
    "وضميرًا وعليهم أن يعامل بعضهم بعضًا بروح الإخاء.",
    "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता और समानता "
    "प्राप्त है। उन्हें बुद्धि और अन्तरात्मा की देन प्राप्त है।",
    "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα "
    "δικαιώματα. Είναι προικισμένοι με λογική και συνείδηση.",
    "Tüm insanlar hür, haysiyet ve haklar bakımından eşit doğarlar. Akıl ve "
    "vicdana sahiptirler ve birbirlerine karşı kardeşlik zihniyeti ile "
    "hareket etmelidirler. 🙂👍🏽",
    "Mọi người sinh ra đều được tự do và bình đẳng về nhân phẩm và quyền. Mọi "
    "con người đều được tạo hóa ban cho lý trí và lương tâm. 2024-12-01",
]


def _stdlib_corpus():
    """tests/python/stdlib_corpus.py (the tokenizer tests' corpus),
    imported by path."""
    import importlib.util
    path = os.path.join(HERE, "..", "tests", "python", "stdlib_corpus.py")
    spec = importlib.util.spec_from_file_location("stdlib_corpus", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


stdlib_docs = _stdlib_corpus().stdlib_docs


def multilingual(nbytes, seed=0):
    rng = random.Random(seed)
    words = [s.split(" ") for s in SENTENCES]
    lines, total = [], 0
    while total < nbytes:
        ws = rng.choice(words)
        k = rng.randrange(4, 16)
        i = rng.randrange(max(1, len(ws) - k))
        line = " ".join(ws[i:i + k]) + "\n"
        lines.append(line)
        total += len(line.encode())
    return "".join(lines)


def byte_decoder():
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def tiktoken_a(n, limit):
    """Seconds tiktoken takes on "a" * n, in a subprocess (None past limit)."""
    code = ("import json,sys,time,tiktoken\n"
            "d=json.load(open(sys.argv[1]))\n"
            "r={bytes.fromhex(k):v for k,v in d['ranks'].items()}\n"
            "e=tiktoken.Encoding('b',pat_str=d['pat'],mergeable_ranks=r,"
            "special_tokens={})\n"
            "s='a'*int(sys.argv[2]);t=time.perf_counter();e.encode_ordinary(s)"
            "\nprint(time.perf_counter()-t)\n")
    try:
        out = subprocess.run([sys.executable, "-c", code, RANKS_PATH, str(n)],
                             capture_output=True, text=True, timeout=limit,
                             check=True)
        return float(out.stdout.strip())
    except subprocess.TimeoutExpired:
        return None


RANKS_PATH = None


def main():
    global RANKS_PATH
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true",
                    help="smaller corpora, 2 rounds")
    ap.add_argument("--vocab", type=int, default=8192)
    args = ap.parse_args()
    scale = 0.25 if args.quick else 1.0
    rounds = 2 if args.quick else 5

    import foundry
    from foundry._c import ffi, lib
    from foundry.tokenizers import Tokenizer
    import tokenizers as hf
    try:
        import tiktoken
    except ImportError:
        tiktoken = None

    ml = multilingual(int(2_000_000 * scale))
    train_docs = stdlib_docs(0, int(5_000_000 * scale)) + [multilingual(
        200_000, seed=1)]
    code = "".join(stdlib_docs(int(6_000_000 * scale), int(4_000_000 * scale)))
    train_bytes = sum(len(d.encode()) for d in train_docs)
    specials = ["<|endoftext|>"]

    # ---- training: Foundry vs HF's BpeTrainer, alternating.
    t_ours, t_hf = [], []
    for _ in range(2 if args.quick else 3):
        t, ours = timed(lambda: Tokenizer.train_from_iterator(
            train_docs, vocab_size=args.vocab, min_frequency=2,
            special_tokens=specials))
        t_ours.append(t)
        ref = hf.Tokenizer(hf.models.BPE())
        ref.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                        use_regex=True)
        trainer = hf.trainers.BpeTrainer(
            vocab_size=args.vocab, min_frequency=2, special_tokens=specials,
            show_progress=False,
            initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
        t, _ = timed(lambda: ref.train_from_iterator(train_docs, trainer))
        t_hf.append(t)
    m_ours = json.loads(ours.to_str())["model"]["merges"]
    m_hf = json.loads(ref.to_str())["model"]["merges"]
    norm = [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
            for m in m_hf]
    same_prefix = 0
    for a, b in zip([tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                     for m in m_ours], norm):
        if a != b:
            break
        same_prefix += 1

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "tokenizer.json")
    ours.save(path)
    theirs = hf.Tokenizer.from_file(path)
    dec = byte_decoder()
    ranks = {bytes(dec[c] for c in s): i for s, i in
             ours.get_vocab().items() if s not in specials}
    RANKS_PATH = os.path.join(tmp, "ranks.json")
    with open(RANKS_PATH, "w") as f:
        json.dump({"pat": GPT2, "ranks": {k.hex(): v for k, v in
                                          ranks.items()}}, f)
    tk = None
    if tiktoken is not None:
        tk = tiktoken.Encoding("foundry-bench", pat_str=GPT2,
                               mergeable_ranks=ranks,
                               special_tokens={"<|endoftext|>": 0})

    def c_encode(text):
        b = text.encode()
        buf = ffi.new("tm_token_buf *")
        try:
            if lib.tm_tokenizer_encode(ours._p, b, len(b), buf) < 0:
                raise RuntimeError("encode failed")
            return buf.n
        finally:
            lib.tm_token_buf_free(buf)

    impls = {
        "foundry": lambda s: ours.encode(s).ids,
        "foundry_c": c_encode,
        "hf": lambda s: theirs.encode(s).ids,
    }
    batch_impls = {
        "foundry": lambda ls: [e.ids for e in ours.encode_batch(ls)],
        "hf": lambda ls: [e.ids for e in theirs.encode_batch(ls)],
    }
    if tk is not None:
        impls["tiktoken"] = tk.encode_ordinary
        batch_impls["tiktoken"] = lambda ls: tk.encode_ordinary_batch(
            ls, num_threads=1)

    results = {"vocab_size": ours.get_vocab_size(), "threads": 1,
               "train": {"bytes": train_bytes,
                         "foundry_s": min(t_ours), "hf_s": min(t_hf),
                         "ratio": min(t_hf) / min(t_ours),
                         "merges": len(m_ours), "hf_merges": len(m_hf),
                         "identical_merge_prefix": same_prefix},
               "encode": {}}
    for name, text in (("code", code), ("multilingual", ml)):
        nbytes = len(text.encode())
        lines = text.splitlines(keepends=True)
        ids_f, ids_h = impls["foundry"](text), impls["hf"](text)
        row = {"bytes": nbytes, "tokens": len(ids_f),
               "foundry_equals_hf": ids_f == ids_h}
        if tk is not None:
            ids_t = impls["tiktoken"](text)
            row["tiktoken_equals_hf"] = ids_t == ids_h
        for group, fns, arg in (("text", impls, text),
                                ("lines", batch_impls, lines)):
            best = {k: float("inf") for k in fns}
            for k, fn in fns.items():  # warm-up
                fn(arg)
            for _ in range(rounds):
                for k, fn in fns.items():
                    best[k] = min(best[k], timed(lambda: fn(arg))[0])
            row[group] = {k: {"s": v, "MB_s": nbytes / v / 1e6}
                          for k, v in best.items()}
            row[group]["ratio_vs_hf"] = best["hf"] / best["foundry"]
            if "tiktoken" in best:
                row[group]["ratio_vs_tiktoken"] = (best["tiktoken"] /
                                                   best["foundry"])
        results["encode"][name] = row

    a = "a" * 1_000_000
    ra = {"foundry_s": timed(lambda: ours.encode(a).ids)[0],
          "hf_s": timed(lambda: theirs.encode(a).ids)[0]}
    if tk is not None:
        ra["tiktoken_1e5_s"] = tiktoken_a(100_000, 60)
        ra["tiktoken_1e6_s"] = tiktoken_a(1_000_000, 60)
        ra["tiktoken_limit_s"] = 60
    results["a_million"] = ra
    results["versions"] = {"foundry": foundry.__version__,
                           "tokenizers": hf.__version__,
                           "tiktoken": getattr(tiktoken, "__version__", None)}

    print(f"train {train_bytes / 1e6:.1f} MB, vocab {args.vocab}: "
          f"Foundry {min(t_ours):.2f} s, HF {min(t_hf):.2f} s "
          f"({results['train']['ratio']:.1f}x); merges identical for "
          f"{same_prefix}/{len(m_hf)}")
    for name, row in results["encode"].items():
        for group in ("text", "lines"):
            g = row[group]
            cells = "  ".join(f"{k} {v['MB_s']:.1f} MB/s" for k, v in
                              g.items() if isinstance(v, dict))
            print(f"{name:12s} {group:5s} {cells}  vs HF "
                  f"{g['ratio_vs_hf']:.2f}x")
        print(f"{name:12s} ids identical to HF: {row['foundry_equals_hf']}"
              + (f", tiktoken: {row['tiktoken_equals_hf']}"
                 if "tiktoken_equals_hf" in row else ""))
    print("'a' * 10^6:", {k: (round(v, 3) if isinstance(v, float) else v)
                          for k, v in ra.items()})
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", "tokenizer.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    print("wrote", out)


if __name__ == "__main__":
    main()
