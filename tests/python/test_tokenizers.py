"""foundry.tokenizers against Hugging Face `tokenizers`: vocabularies
trained by HF load from their tokenizer.json and encode held-out text
token for token the same; decoding matches; files saved by Foundry load in
HF and encode the same.  The corpus is the Python standard library's own
sources (always present offline)."""
import glob
import json
import os
import random
import sysconfig

import pytest

import foundry
from foundry.tokenizers import Tokenizer

hf = pytest.importorskip("tokenizers")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

MULTI = ("Hello wörld! Ünïcödé — 日本語のテキスト, 한국어, Русский текст, "
         "العربية 😀🎉 👩‍👩‍👧 naïve café 123456 ½ ² \u00a0nbsp\u2003em \t\ttabs"
         "\r\n\r\nCRLF  'S 'll 'RE ſ 'ſ x'Ss  \n\n  \n\u2028end ")


def _files():
    std = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(std, "*.py")))
    train, size = [], 0
    for f in files:
        if size > 1_000_000:
            break
        train.append(f)
        size += os.path.getsize(f)
    return train, files[len(train):len(train) + 30]


TRAIN, HELD = _files()


def _held_texts():
    texts = []
    for f in HELD:
        with open(f, "rb") as fh:
            b = fh.read()
        try:
            texts.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    rnd = random.Random(0)
    for _ in range(100):
        texts.append("".join(chr(rnd.choice([
            rnd.randrange(32, 127), rnd.randrange(0xA0, 0x3000),
            rnd.randrange(0x1F300, 0x1F700), 10, 13, 32, 9, 0xA0, 0x2028]))
            for _ in range(rnd.randrange(1, 200))))
    texts += [MULTI, MULTI * 2 + "<|endoftext|>x<|pad|><|endoftext|> <|endoftext|>"]
    return texts


TEXTS = _held_texts()


def _train(kind, tmp):
    pre = hf.pre_tokenizers
    tok = hf.Tokenizer(hf.models.BPE())
    if kind == "gpt2":
        tok.pre_tokenizer = pre.ByteLevel(add_prefix_space=False)
    elif kind == "gpt2_prefix_space":
        tok.pre_tokenizer = pre.ByteLevel(add_prefix_space=True)
    elif kind == "llama3":
        tok.pre_tokenizer = pre.Sequence([
            pre.Split(hf.Regex(LLAMA3), behavior="isolated"),
            pre.ByteLevel(add_prefix_space=False, use_regex=False)])
    elif kind == "digits":   # SmolLM2's shape
        tok.pre_tokenizer = pre.Sequence([
            pre.Digits(individual_digits=True),
            pre.ByteLevel(add_prefix_space=False)])
    tok.decoder = hf.decoders.ByteLevel()
    trainer = hf.trainers.BpeTrainer(
        vocab_size=3000, special_tokens=["<|endoftext|>", "<|pad|>"],
        initial_alphabet=pre.ByteLevel.alphabet(), show_progress=False)
    tok.train(TRAIN, trainer)
    path = str(tmp / f"{kind}.json")
    tok.save(path)
    return tok, path


KINDS = ["gpt2", "gpt2_prefix_space", "llama3", "digits"]


@pytest.fixture(scope="module", params=KINDS)
def trained(request, tmp_path_factory):
    return _train(request.param, tmp_path_factory.mktemp("tok"))


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _decoded(path, b):
    """What decoding the encoding of b gives: the text itself, or with the
    space that add_prefix_space put in front."""
    if "prefix_space" in path and b and not b.startswith(b" "):
        return b" " + b
    return b


def _check_same(ref, tok, texts):
    for t in texts:
        want, got = ref.encode(t).ids, tok.encode(t).ids
        if want != got:
            i = _first_diff(want, got)
            pytest.fail(f"ids differ at {i} for {t[:60]!r}: HF "
                        f"{[ref.id_to_token(x) for x in want[i:i + 4]]} vs "
                        f"{[tok.id_to_token(x) for x in got[i:i + 4]]}")


def test_hf_trained_vocab_encodes_held_out_text_identically(trained):
    ref, path = trained
    tok = Tokenizer.from_file(path)
    assert tok.get_vocab_size() == ref.get_vocab_size()
    assert tok.get_vocab() == ref.get_vocab()
    _check_same(ref, tok, TEXTS)


def test_decode_matches_hf(trained):
    ref, path = trained
    tok = Tokenizer.from_file(path)
    for t in TEXTS[-20:]:
        ids = ref.encode(t).ids
        assert tok.decode(ids) == ref.decode(ids)
        assert tok.decode(ids, skip_special_tokens=False) == \
            ref.decode(ids, skip_special_tokens=False)
        if "prefix_space" not in path:   # else a space was added in front
            assert tok.decode(ids, skip_special_tokens=False) == t
    # a multi-byte character cut between tokens: U+FFFD, as HF
    ids = [tok.token_to_id(tok.id_to_token(i)) for i in tok.encode("日").ids]
    assert tok.decode(ids[:1]) == ref.decode(ids[:1])


def test_saved_by_foundry_loads_in_hf_and_encodes_identically(trained, tmp_path):
    ref, path = trained
    tok = Tokenizer.from_file(path)
    out = tmp_path / "saved.json"
    tok.save(out)
    back = hf.Tokenizer.from_file(str(out))
    _check_same(back, tok, TEXTS[-40:])
    again = Tokenizer.from_str(out.read_text())
    assert again.hash() == tok.hash()
    assert again.to_str() == tok.to_str()


def test_random_bytes_round_trip(trained):
    tok = Tokenizer.from_file(trained[1])
    rnd = random.Random(1)
    for _ in range(200):
        b = bytes(rnd.randrange(256) for _ in range(rnd.randrange(300)))
        assert tok.decode_bytes(tok.encode(b).ids, skip_special_tokens=False) == \
            _decoded(trained[1], b)


def test_ignore_merges_matches_hf(tmp_path):
    ref, path = _train("llama3", tmp_path)
    spec = json.loads(open(path).read())
    spec["model"]["ignore_merges"] = True
    s = json.dumps(spec)
    _check_same(hf.Tokenizer.from_str(s), Tokenizer.from_str(s), TEXTS[-60:])


def test_template_adds_bos_like_hf(tmp_path):
    ref, path = _train("gpt2", tmp_path)
    bos = ref.token_to_id("<|pad|>")
    ref.post_processor = hf.processors.TemplateProcessing(
        single="<|pad|> $A <|endoftext|>", pair="<|pad|> $A $B",
        special_tokens=[("<|pad|>", bos), ("<|endoftext|>", 0)])
    p = str(tmp_path / "t.json")
    ref.save(p)
    tok = Tokenizer.from_file(p)
    for t in ["hello", MULTI]:
        assert tok.encode(t).ids == ref.encode(t).ids
        assert tok.encode(t, add_special_tokens=False).ids == \
            ref.encode(t, add_special_tokens=False).ids
    tok.save(tmp_path / "back.json")
    assert hf.Tokenizer.from_file(str(tmp_path / "back.json")).encode("hi").ids == \
        ref.encode("hi").ids


def test_char_level_round_trips_and_loads_in_hf(tmp_path):
    text = open(TRAIN[0], encoding="utf-8").read()
    tok = Tokenizer.char_level(text)
    chars = sorted(set(text))
    assert [tok.id_to_token(i) for i in range(len(chars))] == chars
    assert tok.get_vocab_size() == len(chars) + 256
    for t in [text[:2000], MULTI]:
        assert tok.decode(tok.encode(t).ids) == t
    tok.save(tmp_path / "c.json")
    ref = hf.Tokenizer.from_file(str(tmp_path / "c.json"))
    for t in [text[:2000], MULTI]:
        assert ref.encode(t).ids == tok.encode(t).ids
        assert ref.decode(tok.encode(t).ids) == t


def test_long_runs_encode_like_hf_and_a_million_bytes_encode(trained):
    ref, path = trained
    tok = Tokenizer.from_file(path)
    for s in ["a" * 5000, " " * 3000, "ab" * 2000, "\n" * 3000, "1" * 3000]:
        assert tok.encode(s).ids == ref.encode(s).ids
    big = "a" * 1_000_000
    assert tok.decode_bytes(tok.encode(big).ids) == _decoded(path, big.encode())


def test_encode_batch_and_tokens(trained):
    ref, path = trained
    tok = Tokenizer.from_file(path)
    got = tok.encode_batch(["x = 1", "def f(): pass"])
    want = ref.encode_batch(["x = 1", "def f(): pass"])
    assert [e.ids for e in got] == [e.ids for e in want]
    assert [e.tokens for e in got] == [e.tokens for e in want]
    assert tok.decode_batch([e.ids for e in got]) == ref.decode_batch([e.ids for e in got])
    assert tok.token_to_id("<|endoftext|>") == 0
    assert tok.token_to_id("no such token") is None
    assert tok.id_to_token(10**6) is None
    assert tok.eos_id == 0


def test_loader_errors_are_python_exceptions(tmp_path):
    with pytest.raises(OSError, match="nope.json"):
        Tokenizer.from_file(tmp_path / "nope.json")
    with pytest.raises(ValueError, match="tm_tokenizer_from_json"):
        Tokenizer.from_str("{")
    with pytest.raises(NotImplementedError, match="Unigram"):
        Tokenizer.from_str('{"model": {"type": "Unigram", "vocab": {}, "merges": []}}')
    ref, path = _train("gpt2", tmp_path)
    spec = json.loads(open(path).read())
    spec["normalizer"] = {"type": "NFC"}
    with pytest.raises(NotImplementedError, match="normalizer"):
        Tokenizer.from_str(json.dumps(spec))


def test_added_tokens_match_hf(tmp_path):
    ref, path = _train("gpt2", tmp_path)
    ref.add_tokens(["<custom>", "spaced tok", "def"])
    ref.add_special_tokens(["<|im_start|>", "<|im_end|>"])
    p = str(tmp_path / "added.json")
    ref.save(p)
    tok = Tokenizer.from_file(p)
    assert tok.get_vocab_size() == ref.get_vocab_size()
    assert tok.get_vocab_size(with_added_tokens=False) == \
        ref.get_vocab_size(with_added_tokens=False)
    assert tok.get_vocab(with_added_tokens=False) == ref.get_vocab(with_added_tokens=False)
    assert tok.get_vocab() == ref.get_vocab()
    texts = ["<|im_start|>user\ndef f(): <custom>spaced tok<|im_end|>",
             "x<custom><custom> spaced tokens def<|im_start|><|im_end|>"] + TEXTS[-10:]
    _check_same(ref, tok, texts)
    for t in texts[:2]:
        ids = ref.encode(t).ids
        assert tok.decode(ids) == ref.decode(ids)
        assert tok.decode(ids, skip_special_tokens=False) == t
    assert tok.eos_id == tok.token_to_id("<|endoftext|>")


def test_gpt2_era_file_layout_loads(tmp_path):
    """GPT-2's published tokenizer.json: merges as "a b" strings, no model
    type, empty subword affixes, ByteLevel without use_regex."""
    ref, path = _train("gpt2", tmp_path)
    spec = json.loads(open(path).read())
    m = spec["model"]
    del m["type"], m["ignore_merges"], m["byte_fallback"]
    m["continuing_subword_prefix"] = m["end_of_word_suffix"] = ""
    m["merges"] = [" ".join(x) for x in m["merges"]]
    del spec["pre_tokenizer"]["use_regex"]
    spec["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False}
    s = json.dumps(spec)
    _check_same(hf.Tokenizer.from_str(s), Tokenizer.from_str(s), TEXTS[-30:])


def test_decode_takes_any_int_sequence_and_refuses_bad_ids():
    np = pytest.importorskip("numpy")
    tok = Tokenizer.char_level("hello")
    ids = tok.encode("hello").ids
    assert tok.decode(np.array(ids)) == "hello"
    assert tok.decode(tuple(ids)) == "hello"
    with pytest.raises(IndexError, match="id 260 at position 1"):
        tok.decode([0, 260])
    with pytest.raises(IndexError, match="out of range"):
        tok.decode([2**40])
