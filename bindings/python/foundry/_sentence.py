"""Sentence embeddings from sentence-transformers model directories (BERT
encoders: all-MiniLM-L6-v2 and its kin), over include/foundry/bert.h.

    enc = foundry.models.SentenceEncoder("…/all-MiniLM-L6-v2")
    emb = enc.encode(["A cat sits.", "Un chat est assis."])   # [2, 384]

The C library tokenizes (tokenizer.json's WordPiece), batches, runs the
encoder on the real tokens only and pools, so encode() is one C call.
"""
import os

import numpy as np

from ._c import ffi, lib, error
from ._base import wrap

__all__ = ["SentenceEncoder", "BertModel"]

_POOL = {"mean": 0, "cls": 1, "max": 2}


def _path(p):
    return os.fsencode(os.fspath(p))


def _ints(x, what):
    """x as a C-contiguous int64 numpy array of 2 dims."""
    a = np.ascontiguousarray(np.asarray(x), dtype=np.int64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"{what} must have 2 dims [B, T], not {a.ndim}")
    return a


def _c_tensor(a):
    shape = ffi.new("int64_t[]", list(a.shape))
    return wrap(lib.tm_from_buffer(ffi.from_buffer(a), shape, a.ndim,
                                   lib.TM_I64))


class BertModel:
    """A BERT encoder (BertModel) from a directory with config.json and
    model.safetensors.  Inference only; numpy in and out."""

    def __init__(self, directory, _ptr=None, _owner=None):
        if _ptr is None:
            p = lib.tm_bert_load(_path(directory))
            if p == ffi.NULL:
                raise error()
            self._p = ffi.gc(p, lib.tm_bert_free)
        else:  # borrowed from a SentenceEncoder, which stays alive
            self._p, self._owner = _ptr, _owner
        c = lib.tm_bert_config_of(self._p)
        self.config = {k: getattr(c, k) for k in (
            "vocab_size", "hidden_size", "num_hidden_layers",
            "num_attention_heads", "intermediate_size",
            "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
            "pad_token_id")}

    def __call__(self, input_ids, attention_mask=None, token_type_ids=None):
        """The last hidden state [B, T, H] (float32 numpy); rows at padding
        positions are zeros."""
        ids = _c_tensor(_ints(input_ids, "input_ids"))
        mask = None if attention_mask is None else \
            _c_tensor(_ints(attention_mask, "attention_mask"))
        tt = None if token_type_ids is None else \
            _c_tensor(_ints(token_type_ids, "token_type_ids"))
        out = wrap(lib.tm_bert_forward(
            self._p, ids._p, mask._p if mask is not None else ffi.NULL,
            tt._p if tt is not None else ffi.NULL))
        return out.numpy().copy()

    def embed(self, input_ids, attention_mask=None, pooling="mean",
              normalize=True):
        """Pooled [B, H] embeddings ("mean", "cls" or "max"), L2-normalised
        when `normalize`."""
        if pooling not in _POOL:
            raise ValueError(f"pooling must be one of {sorted(_POOL)}, not "
                             f"{pooling!r}")
        ids = _c_tensor(_ints(input_ids, "input_ids"))
        mask = None if attention_mask is None else \
            _c_tensor(_ints(attention_mask, "attention_mask"))
        out = wrap(lib.tm_bert_pool_embed(
            self._p, ids._p, mask._p if mask is not None else ffi.NULL, _POOL[pooling],
            bool(normalize)))
        return out.numpy().copy()


class _EncoderTokenizer:
    """The encoder's tokenizer as the model sees it: encode(text) gives the
    ids with [CLS] ... [SEP], truncated to max_seq_length."""

    def __init__(self, enc):
        self._enc = enc

    def encode(self, text):
        b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        buf = ffi.new("tm_token_buf *")
        try:
            if lib.tm_sentence_encoder_tokenize(self._enc._p, b, len(b),
                                                buf) < 0:
                raise error()
            return list(ffi.unpack(buf.ids, buf.n)) if buf.n else []
        finally:
            lib.tm_token_buf_free(buf)

    def __call__(self, texts):
        """{"input_ids", "attention_mask"} padded to the longest (with 0s),
        as sentence-transformers' tokenize does."""
        rows = [self.encode(t) for t in texts]
        T = max((len(r) for r in rows), default=0)
        ids = np.zeros((len(rows), T), dtype=np.int64)
        mask = np.zeros((len(rows), T), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask}


class SentenceEncoder:
    """A sentence-transformers model directory (modules.json, the pooling
    config, sentence_bert_config.json, tokenizer.json, config.json,
    model.safetensors), as sentence_transformers.SentenceTransformer."""

    def __init__(self, directory):
        p = lib.tm_sentence_encoder_load(_path(directory))
        if p == ffi.NULL:
            raise error()
        self._p = ffi.gc(p, lib.tm_sentence_encoder_free)
        self.max_seq_length = int(lib.tm_sentence_encoder_max_seq_length(p))
        self.normalizes = bool(lib.tm_sentence_encoder_normalizes(p))
        self.tokenizer = _EncoderTokenizer(self)
        self.model = BertModel(None, lib.tm_sentence_encoder_model(p), self)

    def get_sentence_embedding_dimension(self):
        return int(lib.tm_sentence_encoder_dim(self._p))

    def encode(self, sentences, batch_size=32, normalize_embeddings=None,
               convert_to_numpy=True):
        """Embeddings [N, dim] (float32 numpy) of a list of str (a single
        str gives [dim]); normalize_embeddings None: as modules.json says."""
        single = isinstance(sentences, (str, bytes))
        items = [sentences] if single else list(sentences)
        data = []
        for s in items:
            if isinstance(s, str):
                s = s.encode("utf-8")
            elif not isinstance(s, bytes):
                raise TypeError(f"sentences must be str, not "
                                f"{type(s).__name__}")
            if b"\0" in s:
                raise ValueError("a sentence contains a NUL character")
            data.append(ffi.new("char[]", s))
        dim = self.get_sentence_embedding_dimension()
        out = np.empty((len(items), dim), dtype=np.float32)
        norm = self.normalizes if normalize_embeddings is None \
            else bool(normalize_embeddings)
        if items:
            texts = ffi.new("const char *[]", data)
            if lib.tm_sentence_encoder_encode_ex(
                    self._p, texts, len(items), int(batch_size), norm,
                    ffi.cast("float *", ffi.from_buffer(out))) < 0:
                raise error()
        if not convert_to_numpy:
            from ._create import tensor
            out = tensor(out)
        return out[0] if single else out
