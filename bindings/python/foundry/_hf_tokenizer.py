"""Tokenizers in the shape of Hugging Face transformers' PreTrainedTokenizer
(special ids, BOS handling, chat templates), over foundry.tokenizers.Tokenizer.

    tok = foundry.tokenizers.PreTrainedTokenizer.from_gguf("model.gguf")
    ids = tok.apply_chat_template([{"role": "user", "content": "Hi"}],
                                  add_generation_prompt=True)
    text = tok.decode(ids)

Chat templates are rendered by Foundry's C interpreter of the Jinja2 subset
chat templates use (include/foundry/tokenizer.h), with the output of
Hugging Face's apply_chat_template.
"""
import json
import os

from ._c import ffi, lib, error

__all__ = ["ChatTemplate", "PreTrainedTokenizer"]


def _enc(s):
    return s.encode("utf-8", "surrogatepass")


class ChatTemplate:
    """A parsed chat template (Jinja2 text).  bos_token / eos_token are the
    strings the template's bos_token / eos_token variables hold (None:
    undefined)."""

    def __init__(self, source, bos_token=None, eos_token=None):
        if not isinstance(source, str):
            raise TypeError(f"source must be str, not {type(source).__name__}")
        self.source = source
        p = lib.tm_chat_template_new(_enc(source))
        if p == ffi.NULL:
            raise error()
        self._p = ffi.gc(p, lib.tm_chat_template_free)
        self.bos_token, self.eos_token = bos_token, eos_token
        if lib.tm_chat_template_set_tokens(
                self._p, _enc(bos_token) if bos_token is not None else ffi.NULL,
                _enc(eos_token) if eos_token is not None else ffi.NULL) < 0:
            raise error()

    def apply(self, messages, add_generation_prompt=False):
        """The prompt text of messages (dicts with str "role" and
        "content"; other keys are refused: the interpreter would not see
        them)."""
        msgs = ffi.new("tm_chat_msg[]", max(len(messages), 1))
        keep = []
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                raise TypeError(f"messages[{i}] must be a dict, not {type(m).__name__}")
            extra = set(m) - {"role", "content"}
            if extra:
                raise NotImplementedError(
                    f"messages[{i}]: keys other than role and content are not supported: {sorted(extra)}")
            for k in ("role", "content"):
                if not isinstance(m.get(k), str):
                    raise TypeError(f"messages[{i}][{k!r}] must be a str")
            r, c = ffi.new("char[]", _enc(m["role"])), ffi.new("char[]", _enc(m["content"]))
            keep += [r, c]
            msgs[i].role, msgs[i].content = r, c
        n = ffi.new("size_t *")
        p = lib.tm_chat_template_apply(self._p, msgs, len(messages), bool(add_generation_prompt), n)
        if p == ffi.NULL:
            raise error()
        try:
            return ffi.unpack(p, n[0]).decode("utf-8", "surrogatepass")
        finally:
            lib.free(p)

    def __repr__(self):
        return f"ChatTemplate({len(self.source)} chars)"


class PreTrainedTokenizer:
    """A tokenizer with special ids and a chat template, as transformers'
    tokenizers.  encode adds BOS (and EOS) only when add_bos (add_eos) is
    set, as the model file says; a tokenizer.json post-processor template
    applies with add_special_tokens as in HF."""

    def __init__(self, tokenizer, chat_template=None, bos_token_id=None, eos_token_id=None,
                 pad_token_id=None, add_bos=False, add_eos=False, unk_token_id=None):
        from .tokenizers import Tokenizer
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a foundry.tokenizers.Tokenizer, not {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        n = tokenizer.get_vocab_size()
        for name, v in (("bos_token_id", bos_token_id), ("eos_token_id", eos_token_id),
                        ("pad_token_id", pad_token_id), ("unk_token_id", unk_token_id)):
            if v is not None and not 0 <= v < n:
                raise ValueError(f"{name} {v} is out of range [0, {n})")
        self.bos_token_id, self.eos_token_id = bos_token_id, eos_token_id
        self.pad_token_id, self.unk_token_id = pad_token_id, unk_token_id
        self.add_bos, self.add_eos = bool(add_bos), bool(add_eos)
        if add_bos and bos_token_id is None:
            raise ValueError("add_bos needs bos_token_id")
        if add_eos and eos_token_id is None:
            raise ValueError("add_eos needs eos_token_id")
        if isinstance(chat_template, str):
            chat_template = ChatTemplate(chat_template, self.bos_token, self.eos_token)
        self._template = chat_template

    # ----------------------------------------------------------- creation
    @classmethod
    def from_gguf(cls, path):
        """The tokenizer, special ids, add_bos/add_eos flags and chat
        template (tokenizer.chat_template, when present) of a GGUF file."""
        g = lib.tm_gguf_open(os.fsencode(os.fspath(path)))
        if g == ffi.NULL:
            raise error()
        try:
            from .tokenizers import Tokenizer
            tok = Tokenizer(lib.tm_tokenizer_from_gguf(g))
            info = ffi.new("tm_tokenizer_gguf_info *")
            if lib.tm_tokenizer_gguf_info_of(g, info) < 0:
                raise error()
            tmpl = None
            if lib.tm_gguf_find_key(g, b"tokenizer.chat_template") >= 0:
                p = lib.tm_chat_template_from_gguf(g)
                if p == ffi.NULL:
                    raise error()
                tmpl = ChatTemplate.__new__(ChatTemplate)
                tmpl._p = ffi.gc(p, lib.tm_chat_template_free)
                v = lib.tm_gguf_get(g, b"tokenizer.chat_template")
                tmpl.source = ffi.string(lib.tm_gguf_value_str(v, ffi.NULL)).decode("utf-8", "replace")
            ids = {k: (None if getattr(info, k) < 0 else getattr(info, k))
                   for k in ("bos_id", "eos_id", "pad_id", "unk_id")}
            self = cls(tok, None, ids["bos_id"], ids["eos_id"], ids["pad_id"], info.add_bos,
                       info.add_eos, ids["unk_id"])
            if tmpl is not None:
                tmpl.bos_token, tmpl.eos_token = self.bos_token, self.eos_token
            self._template = tmpl
            return self
        finally:
            lib.tm_gguf_close(g)

    @classmethod
    def from_pretrained(cls, directory):
        """A Hugging Face tokenizer directory: tokenizer.json plus
        tokenizer_config.json (chat_template, bos/eos/pad tokens,
        add_bos_token, add_eos_token)."""
        from .tokenizers import Tokenizer
        d = os.fspath(directory)
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        cfg = {}
        cp = os.path.join(d, "tokenizer_config.json")
        if os.path.exists(cp):
            with open(cp, encoding="utf-8") as f:
                cfg = json.load(f)

        def tid(key):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            return tok.token_to_id(v) if isinstance(v, str) else None

        tmpl = cfg.get("chat_template")
        if isinstance(tmpl, list):
            tmpl = next((t.get("template") for t in tmpl if t.get("name") == "default"), None)
        return cls(tok, tmpl, tid("bos_token"), tid("eos_token"), tid("pad_token"),
                   bool(cfg.get("add_bos_token", False)) and tid("bos_token") is not None,
                   bool(cfg.get("add_eos_token", False)) and tid("eos_token") is not None,
                   tid("unk_token"))

    # ------------------------------------------------------------ special
    def _token(self, i):
        return None if i is None else self.tokenizer.id_to_token(i)

    bos_token = property(lambda self: self._token(self.bos_token_id))
    eos_token = property(lambda self: self._token(self.eos_token_id))
    pad_token = property(lambda self: self._token(self.pad_token_id))

    @property
    def vocab_size(self):
        return self.tokenizer.get_vocab_size()

    def __len__(self):
        return self.vocab_size

    @property
    def chat_template(self):
        return None if self._template is None else self._template.source

    # ----------------------------------------------------------- encoding
    def encode(self, text, add_special_tokens=True):
        ids = self.tokenizer.encode(text, add_special_tokens).ids
        if add_special_tokens:
            if self.add_bos and (not ids or ids[0] != self.bos_token_id):
                ids = [self.bos_token_id] + ids
            if self.add_eos and (not ids or ids[-1] != self.eos_token_id):
                ids = ids + [self.eos_token_id]
        return ids

    def __call__(self, text, add_special_tokens=True, padding=False):
        """{"input_ids", "attention_mask"} for a str or a list of str; with
        padding (True / "longest") the rows are right-padded with
        pad_token_id to the longest."""
        if isinstance(text, str):
            ids = self.encode(text, add_special_tokens)
            return {"input_ids": ids, "attention_mask": [1] * len(ids)}
        rows = [self.encode(t, add_special_tokens) for t in text]
        masks = [[1] * len(r) for r in rows]
        if padding:
            if self.pad_token_id is None:
                raise ValueError("padding needs pad_token_id")
            m = max((len(r) for r in rows), default=0)
            rows = [r + [self.pad_token_id] * (m - len(r)) for r in rows]
            masks = [k + [0] * (m - len(k)) for k in masks]
        return {"input_ids": rows, "attention_mask": masks}

    def decode(self, ids, skip_special_tokens=False):
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        return self.tokenizer.decode(ids, skip_special_tokens)

    def batch_decode(self, sequences, skip_special_tokens=False):
        return [self.decode(s, skip_special_tokens) for s in sequences]

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self.tokenizer.id_to_token(ids)
        return [self.tokenizer.id_to_token(i) for i in ids]

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self.tokenizer.token_to_id(tokens)
        return [self.tokenizer.token_to_id(t) for t in tokens]

    # ------------------------------------------------------ chat template
    def apply_chat_template(self, messages, tokenize=True, add_generation_prompt=False,
                            chat_template=None):
        """The prompt of messages as the template renders it: ids (tokenize,
        the template's own BOS kept, no other added) or the text."""
        tmpl = self._template
        if chat_template is not None:
            tmpl = ChatTemplate(chat_template, self.bos_token, self.eos_token)
        if tmpl is None:
            raise ValueError("this tokenizer has no chat template; pass chat_template=")
        text = tmpl.apply(messages, add_generation_prompt)
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def __repr__(self):
        return (f"PreTrainedTokenizer(vocab_size={self.vocab_size}, bos={self.bos_token_id}, "
                f"eos={self.eos_token_id}, pad={self.pad_token_id}, "
                f"chat_template={'yes' if self._template else 'no'})")
