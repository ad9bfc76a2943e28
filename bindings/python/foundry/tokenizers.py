"""Byte-level BPE, WordPiece and char-level tokenizers with the Hugging Face
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
    """The result of Tokenizer.encode: `.ids` (list of int), `.tokens`
    (their tokenizer.json strings), `.attention_mask` (1 for real tokens, 0
    for padding) and `.type_ids`, as HF's Encoding."""

    __slots__ = ("ids", "_tok", "_mask", "_types")

    def __init__(self, ids, tok, attention_mask=None, type_ids=None):
        self.ids = ids
        self._tok = tok
        self._mask = attention_mask   # None: all 1 (built when asked for)
        self._types = type_ids        # None: all 0

    @property
    def attention_mask(self):
        if self._mask is None:
            self._mask = [1] * len(self.ids)
        return self._mask

    @property
    def type_ids(self):
        if self._types is None:
            self._types = [0] * len(self.ids)
        return self._types

    def _pad(self, length, pad_id, pad_type_id, left):
        n = length - len(self.ids)
        if n <= 0:
            return
        if left:
            self._mask = [0] * n + self.attention_mask
            self._types = [pad_type_id] * n + self.type_ids
            self.ids = [pad_id] * n + self.ids
        else:
            self._mask = self.attention_mask + [0] * n
            self._types = self.type_ids + [pad_type_id] * n
            self.ids = self.ids + [pad_id] * n

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
        # the tokenizer.json's truncation and padding, applied as HF does on load
        d = ffi.new("tm_tokenizer_json_defaults *")
        if lib.tm_tokenizer_json_defaults_of(self._p, d) < 0:
            raise error()
        self._trunc = None
        self._padding = None
        if d.trunc_max_length > 0:
            self._trunc = {"max_length": d.trunc_max_length, "stride": d.trunc_stride,
                           "strategy": "longest_first", "direction": "left" if d.trunc_left else "right"}
        if d.pad:
            self._padding = {"length": d.pad_length or None,
                             "pad_to_multiple_of": d.pad_multiple or None, "pad_id": d.pad_id,
                             "pad_token": self.id_to_token(d.pad_id), "pad_type_id": d.pad_type_id,
                             "direction": "left" if d.pad_left else "right"}

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
        opts = ffi.new("tm_encode_opts *")
        opts.add_special_tokens = bool(add_special_tokens)
        if self._trunc is not None:
            if self._trunc["direction"] != "right":
                raise NotImplementedError("truncation direction 'left' is not supported")
            opts.max_length = self._trunc["max_length"]
        try:
            if lib.tm_tokenizer_encode_opts(self._p, b, len(b), opts, buf) < 0:
                raise error()
            return list(ffi.unpack(buf.ids, buf.n)) if buf.n else []
        finally:
            lib.tm_token_buf_free(buf)

    def _pad_all(self, encs):
        p = self._padding
        if p is None or not encs:
            return encs
        length = p["length"] if p["length"] is not None else max(len(e.ids) for e in encs)
        m = p["pad_to_multiple_of"]
        if m:
            length = (length + m - 1) // m * m
        for e in encs:
            e._pad(length, p["pad_id"], p["pad_type_id"], p["direction"] == "left")
        return encs

    def encode(self, sequence, add_special_tokens=True):
        """Encoding of sequence (str or bytes).  add_special_tokens applies
        the post-processor's template (e.g. [CLS] ... [SEP]), as HF does by
        default; truncation and padding as enabled (by default as the
        tokenizer.json says)."""
        return self._pad_all([Encoding(self._encode_ids(sequence, add_special_tokens), self)])[0]

    def encode_batch(self, inputs, add_special_tokens=True):
        """Encodings of inputs, padded together (to the longest, or to the
        padding length) when padding is enabled."""
        return self._pad_all([Encoding(self._encode_ids(s, add_special_tokens), self) for s in inputs])

    # ------------------------------------------------ truncation, padding
    def enable_truncation(self, max_length, stride=0, strategy="longest_first", direction="right"):
        """Cut encodings to max_length ids, counting the special tokens the
        template adds (HF's semantics for one sequence)."""
        if int(max_length) <= 0:
            raise ValueError(f"enable_truncation: max_length must be positive, not {max_length}")
        if direction != "right":
            raise NotImplementedError("truncation direction 'left' is not supported")
        if strategy not in ("longest_first", "only_first", "only_second"):
            raise ValueError(f"enable_truncation: unknown strategy {strategy!r}")
        self._trunc = {"max_length": int(max_length), "stride": int(stride), "strategy": strategy,
                       "direction": direction}

    def no_truncation(self):
        self._trunc = None

    @property
    def truncation(self):
        return None if self._trunc is None else dict(self._trunc)

    def enable_padding(self, direction="right", pad_id=0, pad_type_id=0, pad_token="[PAD]", length=None,
                       pad_to_multiple_of=None):
        """Pad encode_batch's encodings to the longest of the batch (or to
        length), with attention_mask 0 on the padding."""
        if direction not in ("left", "right"):
            raise ValueError(f"enable_padding: direction must be 'left' or 'right', not {direction!r}")
        if not 0 <= int(pad_id) < self.get_vocab_size():
            raise ValueError(f"enable_padding: pad_id {pad_id} is out of range")
        self._padding = {"length": None if length is None else int(length),
                         "pad_to_multiple_of": pad_to_multiple_of, "pad_id": int(pad_id),
                         "pad_token": pad_token, "pad_type_id": int(pad_type_id), "direction": direction}

    def no_padding(self):
        self._padding = None

    @property
    def padding(self):
        return None if self._padding is None else dict(self._padding)

    @property
    def pad_id(self):
        """tm_tokenizer_pad_id: padding.pad_id, or the id of [PAD] / <pad>."""
        i = lib.tm_tokenizer_pad_id(self._p)
        return None if i < 0 else i

    def num_special_tokens_to_add(self, is_pair=False):
        if is_pair:
            raise NotImplementedError("pair templates are not supported")
        return lib.tm_tokenizer_num_special_to_add(self._p)

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
