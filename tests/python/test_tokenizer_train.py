"""Foundry's BPE trainer against Hugging Face tokenizers' BpeTrainer: the same
merges on the same corpus and settings (so the same compression), tokenizers
that HF loads and that encode as Foundry does, exact round trips."""
import random

import pytest

from foundry.tokenizers import Tokenizer
from stdlib_corpus import stdlib_docs

hf = pytest.importorskip("tokenizers")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

MULTILINGUAL = (
    "All human beings are born free and equal in dignity and rights. "
    "Alle Menschen sind frei und gleich an Würde und Rechten geboren. "
    "Tous les êtres humains naissent libres et égaux en dignité et en droits. "
    "Все люди рождаются свободными и равными в своем достоинстве и правах. "
    "人人生而自由，在尊严和权利上一律平等。 "
    "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。 "
    "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. "
    "جميع الناس يولدون أحرارًا متساوين في الكرامة والحقوق. "
    "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता प्राप्त है। "
    "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια. "
    "Tüm insanlar hür, haysiyet ve haklar bakımından eşit doğarlar. 🙂👍🏽 "
    "Mọi người sinh ra đều được tự do và bình đẳng về nhân phẩm và quyền. 12345 ")




@pytest.fixture(scope="module")
def corpus():
    train = stdlib_docs(0, 1_500_000) + [MULTILINGUAL * 20]
    held = stdlib_docs(3_000_000, 300_000) + [MULTILINGUAL]
    return train, held


def _hf_tokenizer(pattern, split_digits):
    tok = hf.Tokenizer(hf.models.BPE())
    pre = []
    if split_digits:
        pre.append(hf.pre_tokenizers.Digits(individual_digits=True))
    if pattern == "llama3":
        pre.append(hf.pre_tokenizers.Split(hf.Regex(LLAMA3), "isolated"))
        pre.append(hf.pre_tokenizers.ByteLevel(add_prefix_space=False,
                                               use_regex=False))
    else:
        pre.append(hf.pre_tokenizers.ByteLevel(add_prefix_space=False,
                                               use_regex=True))
    tok.pre_tokenizer = pre[0] if len(pre) == 1 else \
        hf.pre_tokenizers.Sequence(pre)
    tok.decoder = hf.decoders.ByteLevel()
    return tok


def _hf_train(docs, vocab_size, pattern="gpt2", split_digits=False,
              min_frequency=2, specials=("<|endoftext|>",)):
    tok = _hf_tokenizer(pattern, split_digits)
    trainer = hf.trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency,
        special_tokens=list(specials), show_progress=False,
        initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(docs, trainer)
    return tok


def _ours(docs, vocab_size, pattern="gpt2", split_digits=False,
          min_frequency=2, specials=("<|endoftext|>",)):
    return Tokenizer.train_from_iterator(
        docs, vocab_size=vocab_size, min_frequency=min_frequency,
        special_tokens=list(specials), pattern=pattern,
        split_digits=split_digits)


def _bytes_per_token(encode, docs):
    nbytes = sum(len(d.encode()) for d in docs)
    ntok = sum(len(encode(d)) for d in docs)
    return nbytes / ntok


@pytest.mark.parametrize("vocab_size,pattern,split_digits", [
    (4096, "gpt2", False), (1024, "gpt2", False), (16384, "gpt2", False),
    (4096, "llama3", False), (4096, "gpt2", True)])
def test_compression_matches_hf_trainer(corpus, vocab_size, pattern,
                                        split_digits):
    # The acceptance bound: bytes per token on held-out text within 1% of
    # HF's trainer on the same corpus and settings.  Each tokenizer encodes
    # with its own library.
    train, held = corpus
    ours = _ours(train, vocab_size, pattern, split_digits)
    theirs = _hf_train(train, vocab_size, pattern, split_digits)
    assert ours.get_vocab_size() == theirs.get_vocab_size()
    bpt_ours = _bytes_per_token(lambda d: ours.encode(d).ids, held)
    bpt_hf = _bytes_per_token(lambda d: theirs.encode(d).ids, held)
    assert abs(bpt_ours / bpt_hf - 1) < 0.01, (bpt_ours, bpt_hf)


@pytest.mark.parametrize("vocab_size,pattern,split_digits,min_frequency", [
    (4096, "gpt2", False, 2), (2000, "llama3", True, 5), (700, "gpt2", False,
                                                           0)])
def test_merges_and_ids_are_hf_trainers(corpus, vocab_size, pattern,
                                        split_digits, min_frequency):
    # Stronger than the compression bound: the same algorithm (HF's heap
    # order: count, then the smaller pair of ids) gives the same vocabulary,
    # ids and merge list.
    train, _ = corpus
    ours = _ours(train, vocab_size, pattern, split_digits, min_frequency,
                 specials=("<|endoftext|>", "<pad>"))
    theirs = _hf_train(train, vocab_size, pattern, split_digits,
                       min_frequency, specials=("<|endoftext|>", "<pad>"))
    assert ours.get_vocab() == theirs.get_vocab()
    import json
    m_ours = json.loads(ours.to_str())["model"]["merges"]
    m_hf = json.loads(theirs.to_str())["model"]["merges"]
    norm = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
            for m in m_hf]
    assert [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
            for m in m_ours] == norm


def test_trained_tokenizer_json_loads_in_hf_and_encodes_the_same(corpus,
                                                                 tmp_path):
    train, held = corpus
    ours = _ours(train, 4096, specials=("<|endoftext|>", "<pad>"))
    path = tmp_path / "tokenizer.json"
    ours.save(str(path))
    theirs = hf.Tokenizer.from_file(str(path))
    assert theirs.get_vocab_size() == ours.get_vocab_size()
    for doc in held + ["x<|endoftext|>y <pad>", ""]:
        assert theirs.encode(doc).ids == ours.encode(doc).ids
    ids = ours.encode(MULTILINGUAL).ids
    assert theirs.decode(ids) == ours.decode(ids) == MULTILINGUAL
    again = Tokenizer.from_file(str(path))
    assert again.hash() == ours.hash()


def test_trained_tokenizer_round_trips_any_bytes(corpus):
    train, _ = corpus
    for pattern in ("gpt2", "llama3"):
        tok = _ours(train[:40] + [MULTILINGUAL], 2048, pattern)
        rng = random.Random(7)
        for n in (0, 1, 7, 100, 1000, 5000):
            data = bytes(rng.randrange(256) for _ in range(n))
            assert tok.decode_bytes(tok.encode(data).ids) == data
        for text in (MULTILINGUAL, MULTILINGUAL[::-1], train[3]):
            assert tok.decode(tok.encode(text).ids) == text


def test_train_reads_files_as_one_document_each(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"hello hello hello\n")
    b.write_bytes(b"\xffhello\n")
    from_files = Tokenizer.train([str(a), b], vocab_size=300,
                                 min_frequency=1)
    from_iter = Tokenizer.train_from_iterator(
        [a.read_bytes(), [b.read_bytes()]], vocab_size=300, min_frequency=1)
    assert from_files.to_str() == from_iter.to_str()
    assert from_files.token_to_id("Ġhello") is not None
    single = Tokenizer.train(str(a), vocab_size=300, min_frequency=1)
    assert single.token_to_id("Ġhello") is not None


def test_train_rejects_bad_settings_with_clear_errors():
    with pytest.raises(ValueError, match=r"vocab_size 257 .*2 special"):
        Tokenizer.train_from_iterator(["x"], vocab_size=257,
                                      special_tokens=["<a>", "<b>"])
    with pytest.raises(ValueError, match="pattern 'gpt4'"):
        Tokenizer.train_from_iterator(["x"], vocab_size=300, pattern="gpt4")
    with pytest.raises(ValueError, match="min_frequency -1"):
        Tokenizer.train_from_iterator(["x"], vocab_size=300, min_frequency=-1)
    with pytest.raises(ValueError, match=r"special_tokens\[1\].*repeats"):
        Tokenizer.train_from_iterator(["x"], vocab_size=300,
                                      special_tokens=["<s>", "<s>"])
    with pytest.raises(TypeError, match="must be str or bytes, not int"):
        Tokenizer.train_from_iterator(["x", 3], vocab_size=300)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        Tokenizer.train_from_iterator(["x"], vocab_size=300.0)
    with pytest.raises(FileNotFoundError):
        Tokenizer.train(["/nonexistent/corpus.txt"], vocab_size=300)


def test_empty_corpus_gives_specials_and_bytes():
    tok = Tokenizer.train_from_iterator([], vocab_size=1000,
                                        special_tokens=["<|endoftext|>"])
    assert tok.get_vocab_size() == 257
    assert tok.token_to_id("<|endoftext|>") == 0
    assert tok.decode(tok.encode("anything at all").ids) == "anything at all"


def test_show_progress_draws_to_stderr(capfd):
    Tokenizer.train_from_iterator(["ab ab ab cd cd"], vocab_size=260,
                                  min_frequency=1, show_progress=True)
    err = capfd.readouterr().err
    assert "Training BPE merges" in err


def test_merge_with_a_special_tokens_bytes_reuses_its_id_as_hf():
    # "ab" is a special token whose byte-level string a merge also makes:
    # HF's trainer records the merge (a, b) -> the special's id and grows
    # the vocabulary by nothing for it.
    docs = ["ab ab ab xab xab", "cd cd"]
    specials = ["ab", "<x y>"]
    ours = _ours(docs, 300, min_frequency=1, specials=specials)
    theirs = _hf_train(docs, 300, min_frequency=1, specials=specials)
    assert ours.get_vocab() == theirs.get_vocab()
    import json
    merges = json.loads(ours.to_str())["model"]["merges"]
    assert merges == json.loads(theirs.to_str())["model"]["merges"]
    assert merges[0] in (["a", "b"], "a b")
    assert ours.get_vocab_size() == 2 + 256 + len(merges) - 1
    for d in docs:
        assert ours.encode(d).ids == theirs.encode(d).ids
