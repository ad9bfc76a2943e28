"""Byte-level BPE and char-level tokenizers with the Hugging Face
`tokenizers` shape, on Foundry's C tokenizer (include/foundry/tokenizer.h).

    tok = foundry.tokenizers.Tokenizer.from_file("tokenizer.json")
    ids = tok.encode("Hello world").ids
    text = tok.decode(ids)

tokenizer.json files written by HF load here and encode to the same ids;
files saved here load in HF.  Text is str (encoded as UTF-8) or bytes (any
bytes, which round-trip exactly through decode_bytes).
"""
import os

from ._c import ffi, lib, error

__all__ = ["Tokenizer", "Encoding", "PreTrainedTokenizer", "ChatTemplate"]


def _cfree(p):
    """Releases a heap string the C library returned (its declaration says
    "release with free()"): the extension declares the C library's free."""
    lib.free(p)


def _bytes(text):
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"text must be str or bytes, not {type(text).__name__}")


class Encoding:
    """The result of Tokenizer.encode: `.ids` (list of int) and `.tokens`
    (their tokenizer.json strings), as HF's Encoding."""

    __slots__ = ("ids", "_tok")

    def __init__(self, ids, tok):
        self.ids = ids
        self._tok = tok

    @property
    def tokens(self):
        return [self._tok.id_to_token(i) for i in self.ids]

    def __len__(self):
        return len(self.ids)

    def __repr__(self):
        return f"Encoding(num_tokens={len(self.ids)})"


class Tokenizer:
    """A tokenizer; construct with from_file, from_str, char_level (or the
    trainer).  Mirrors tokenizers.Tokenizer."""

    def __init__(self, ptr):
        if ptr == ffi.NULL:
            raise error()
        self._p = ffi.gc(ptr, lib.tm_tokenizer_free)

    # ---------------------------------------------------------- creation
    @classmethod
    def from_file(cls, path):
        return cls(lib.tm_tokenizer_load(os.fsencode(os.fspath(path))))

    @classmethod
    def from_gguf(cls, path):
        """The tokenizer a GGUF file's tokenizer.ggml.* metadata describes
        (byte-level BPE, "gpt2" model).  For its special ids and chat
        template use PreTrainedTokenizer.from_gguf."""
        g = lib.tm_gguf_open(os.fsencode(os.fspath(path)))
        if g == ffi.NULL:
            raise error()
        try:
            return cls(lib.tm_tokenizer_from_gguf(g))
        finally:
            lib.tm_gguf_close(g)

    @classmethod
    def from_str(cls, json):
        b = _bytes(json)
        return cls(lib.tm_tokenizer_from_json(b, len(b)))

    @classmethod
    def from_buffer(cls, data):
        return cls.from_str(bytes(data))

    @classmethod
    def char_level(cls, text):
        """One token per distinct character of text, plus 256 byte-fallback
        tokens so any text encodes."""
        b = _bytes(text)
        return cls(lib.tm_tokenizer_char_new(b, len(b)))

    # ---------------------------------------------------------- encoding
    def _encode_ids(self, text, add_special_tokens):
        b = _bytes(text)
        buf = ffi.new("tm_token_buf *")
        try:
            if lib.tm_tokenizer_encode_ex(self._p, b, len(b), bool(add_special_tokens), buf) < 0:
                raise error()
            return list(ffi.unpack(buf.ids, buf.n)) if buf.n else []
        finally:
            lib.tm_token_buf_free(buf)

    def encode(self, sequence, add_special_tokens=True):
        """Encoding of sequence (str or bytes).  add_special_tokens applies
        the post-processor's template (e.g. BOS), as HF does by default."""
        return Encoding(self._encode_ids(sequence, add_special_tokens), self)

    def encode_batch(self, inputs, add_special_tokens=True):
        return [self.encode(s, add_special_tokens) for s in inputs]

    def decode_bytes(self, ids, skip_special_tokens=True):
        """The exact bytes of ids."""
        ids = [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]
        bad = next((i for i in ids if not -2**31 <= i < 2**31), None)
        if bad is not None:
            raise IndexError(f"decode: id {bad} is out of range")
        arr = ffi.new("int32_t[]", ids) if ids else ffi.NULL
        n = ffi.new("size_t *")
        p = lib.tm_tokenizer_decode(self._p, arr, len(ids), bool(skip_special_tokens), n)
        if p == ffi.NULL:
            raise error()
        try:
            return ffi.unpack(p, n[0])
        finally:
            _cfree(p)

    def decode(self, ids, skip_special_tokens=True):
        """The text of ids; bytes that are not valid UTF-8 (a character cut
        between tokens) become U+FFFD, as in HF."""
        return self.decode_bytes(ids, skip_special_tokens).decode("utf-8", "replace")

    def decode_batch(self, sequences, skip_special_tokens=True):
        return [self.decode(s, skip_special_tokens) for s in sequences]

    # ------------------------------------------------------------- vocab
    def get_vocab_size(self, with_added_tokens=True):
        if with_added_tokens:
            return lib.tm_tokenizer_vocab_size(self._p)
        return lib.tm_tokenizer_model_vocab_size(self._p)

    def get_vocab(self, with_added_tokens=True):
        return {self.id_to_token(i): i for i in range(lib.tm_tokenizer_vocab_size(self._p))
                if with_added_tokens or lib.tm_tokenizer_in_model(self._p, i)}

    def token_to_id(self, token):
        i = lib.tm_tokenizer_token_to_id(self._p, token.encode("utf-8"))
        return None if i < 0 else i

    def id_to_token(self, id):
        p = lib.tm_tokenizer_id_to_token(self._p, id)
        return None if p == ffi.NULL else ffi.string(p).decode("utf-8")

    @property
    def eos_id(self):
        i = lib.tm_tokenizer_eos_id(self._p)
        return None if i < 0 else i

    @property
    def bos_id(self):
        i = lib.tm_tokenizer_bos_id(self._p)
        return None if i < 0 else i

    def hash(self):
        """The 64-bit hash token datasets record (tm_tokenizer_hash)."""
        return lib.tm_tokenizer_hash(self._p)

    # ------------------------------------------------------------ saving
    def to_str(self, pretty=True):
        n = ffi.new("size_t *")
        p = lib.tm_tokenizer_to_json(self._p, n)
        if p == ffi.NULL:
            raise error()
        try:
            return ffi.unpack(p, n[0]).decode("utf-8")
        finally:
            _cfree(p)

    def save(self, path, pretty=True):
        if lib.tm_tokenizer_save(self._p, os.fsencode(os.fspath(path))) < 0:
            raise error()

    def __repr__(self):
        return f"Tokenizer(vocab_size={self.get_vocab_size()})"


from ._hf_tokenizer import ChatTemplate, PreTrainedTokenizer  # noqa: E402
