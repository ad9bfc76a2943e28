"""Training byte-level BPE tokenizers (the C trainer of foundry/tokenizer.h).

    tok = foundry.tokenizers.Tokenizer.train(["a.txt", "b.txt"], vocab_size=4096,
                                            special_tokens=["<|endoftext|>"])
    tok = foundry.tokenizers.Tokenizer.train_from_iterator(texts, vocab_size=4096)

The merges are those of Hugging Face tokenizers' BpeTrainer with a
ByteLevel pre-tokenizer and ByteLevel.alphabet() as initial alphabet, on
the same documents and settings.  Each file (or each item of the iterator)
is one document: pre-token pieces never cross documents.  (HF's
`train(files)` reads files line by line instead, so whitespace runs across
lines are pieces here and not there; feed HF whole files with
train_from_iterator to compare.)
"""
import os

from ._c import ffi, lib, check, error

__all__ = ["train", "train_from_iterator", "attach"]

_PATTERNS = {"gpt2": lib.TM_PRETOK_GPT2, "llama3": lib.TM_PRETOK_LLAMA3}


def _as_bytes(doc):
    if isinstance(doc, str):
        return doc.encode("utf-8", "surrogatepass")
    if isinstance(doc, (bytes, bytearray, memoryview)):
        return bytes(doc)
    raise TypeError(f"train_from_iterator: a document must be str or bytes, "
                    f"not {type(doc).__name__}")


def _documents(iterator):
    """The documents of iterator: str/bytes items, or lists/tuples of them
    (HF's batched iterators)."""
    for item in iterator:
        if isinstance(item, (list, tuple)):
            for doc in item:
                yield _as_bytes(doc)
        else:
            yield _as_bytes(item)


def _train_handle(docs, vocab_size, min_frequency, special_tokens, pattern,
                  split_digits, show_progress):
    """A new tm_tokenizer* trained on docs (the caller owns it)."""
    if pattern not in _PATTERNS:
        raise ValueError(f"train: pattern {pattern!r} is not one of "
                         f"{sorted(_PATTERNS)}")
    for name, v in (("vocab_size", vocab_size),
                    ("min_frequency", min_frequency)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"train: {name} must be an int, not "
                            f"{type(v).__name__}")
    specials = list(special_tokens or [])
    for i, s in enumerate(specials):
        if not isinstance(s, str):
            content = getattr(s, "content", None)  # an AddedToken-like object
            if not isinstance(content, str):
                raise TypeError(f"train: special_tokens[{i}] must be a str")
            specials[i] = content
    keep = [ffi.new("char[]", s.encode("utf-8")) for s in specials]
    arr = ffi.new("const char *[]", keep) if keep else ffi.NULL
    o = lib.tm_bpe_train_defaults(vocab_size)
    o.min_frequency = min_frequency
    o.special_tokens = arr
    o.n_special = len(keep)
    o.pretok = _PATTERNS[pattern]
    o.split_digits = bool(split_digits)
    bar = ffi.NULL
    if show_progress:
        bar = lib.tm_progress_new(b"Training BPE merges", 0, b"merge",
                                  lib.TM_PROGRESS_AUTO, ffi.NULL)
        if bar == ffi.NULL:
            raise error()
    o.progress = bar
    tr = ffi.NULL
    try:
        tr = lib.tm_bpe_trainer_new(ffi.addressof(o))
        if tr == ffi.NULL:
            raise error()
        for doc in docs:
            check(lib.tm_bpe_trainer_feed(tr, doc, len(doc)))
        t = lib.tm_bpe_trainer_finish(tr)
        if t == ffi.NULL:
            raise error()
        return t
    finally:
        if tr != ffi.NULL:
            lib.tm_bpe_trainer_free(tr)
        if bar != ffi.NULL:
            lib.tm_progress_free(bar)


def _read_files(files):
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    for path in files:
        with open(path, "rb") as f:
            yield f.read()


def train(cls, files, vocab_size=30000, min_frequency=2, special_tokens=(),
          pattern="gpt2", split_digits=False, show_progress=False):
    """A byte-level BPE tokenizer trained on the files (one path or a list;
    each file is one document, read as bytes).  pattern: "gpt2" (GPT-2's
    regex) or "llama3" (Llama-3's); split_digits: each digit its own piece
    first (HF's Digits(individual_digits=True)); show_progress: a progress
    bar on stderr over the merges."""
    h = _train_handle(_read_files(files), vocab_size, min_frequency,
                      special_tokens, pattern, split_digits, show_progress)
    return cls(h)


def train_from_iterator(cls, iterator, vocab_size=30000, min_frequency=2,
                        special_tokens=(), pattern="gpt2", split_digits=False,
                        show_progress=False, length=None):
    """Same as train, from an iterator of documents (str or bytes, or lists
    of them).  `length` is accepted for HF's signature and unused."""
    del length
    h = _train_handle(_documents(iterator), vocab_size, min_frequency,
                      special_tokens, pattern, split_digits, show_progress)
    return cls(h)


def attach(cls):
    """Adds train and train_from_iterator as classmethods of cls."""
    cls.train = classmethod(train)
    cls.train_from_iterator = classmethod(train_from_iterator)
    return cls


from .tokenizers import Tokenizer as _Tokenizer  # noqa: E402

attach(_Tokenizer)
