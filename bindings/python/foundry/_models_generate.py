"""Sampling from logits and text generation with the KV cache: the Python
side of the "generation" section of include/foundry/models.h.

`Sampler` applies Hugging Face generate()'s logits processors (repetition
penalty, temperature, top_k, top_p, min_p) to one row of logits and draws
from a seeded generator; `GenerationMixin.generate` runs a model's
generation loop in C (tm_gpt_generate / tm_gpt_stream)."""
import numpy as np

from ._c import ffi, lib, check, error

__all__ = ["Sampler", "GenerationMixin"]


def _sample_opts(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                 repetition_penalty=1.0, seed=None, do_sample=None):
    """A tm_sample_opts; do_sample=False (HF's flag) means greedy."""
    o = ffi.new("tm_sample_opts *", lib.tm_sample_defaults())
    greedy = do_sample is False or temperature == 0
    o.temperature = 0.0 if greedy else float(temperature)
    o.top_k = int(top_k)
    o.top_p = float(top_p)
    o.min_p = float(min_p)
    o.repetition_penalty = float(repetition_penalty)
    if seed is not None:
        if not 0 <= int(seed) < 2 ** 64:
            raise ValueError(f"seed {seed} must be in [0, 2**64)")
        o.seed = int(seed)
    return o


def _ids(ids, name):
    """A contiguous int64 array of token ids (any int sequence or array)."""
    a = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
    if np.asarray(ids).dtype.kind not in "iu" and np.asarray(ids).size:
        raise TypeError(f"{name} must hold integer token ids")
    return a


class Sampler:
    """Draws token ids from rows of logits:

        s = foundry.models.Sampler(temperature=0.8, top_k=50, seed=1)
        token = s.sample(logits, history=ids_so_far)

    The processors run in Hugging Face's order (repetition penalty over the
    distinct ids of `history`, temperature, top_k, top_p, min_p; at least one
    token is always kept); temperature=0 or do_sample=False is greedy (the
    argmax, lowest id on ties).  Computed in float64."""

    def __init__(self, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                 repetition_penalty=1.0, seed=None, do_sample=None):
        o = _sample_opts(temperature, top_k, top_p, min_p,
                         repetition_penalty, seed, do_sample)
        p = lib.tm_sampler_new(o)
        if p == ffi.NULL:
            raise error()
        self._p = ffi.gc(p, lib.tm_sampler_free)

    @staticmethod
    def _row(logits):
        a = np.ascontiguousarray(np.asarray(logits, dtype=np.float32))
        if a.ndim != 1:
            raise ValueError(f"logits must be one row (1-d), got shape {a.shape}")
        return a

    def sample(self, logits, history=()):
        """One id drawn from `logits` (a 1-d array of the vocab's size)."""
        a, h = self._row(logits), _ids(history, "history")
        r = lib.tm_sampler_sample(self._p, ffi.from_buffer("float[]", a), a.size,
                                  ffi.from_buffer("int64_t[]", h), h.size)
        return int(check(r))

    def probs(self, logits, history=()):
        """The distribution sample() draws from, after every processor
        (one-hot when greedy), as a float64 array."""
        a, h = self._row(logits), _ids(history, "history")
        out = np.empty(a.size, dtype=np.float64)
        check(lib.tm_sampler_probs(self._p, ffi.from_buffer("float[]", a), a.size,
                                   ffi.from_buffer("int64_t[]", h), h.size,
                                   ffi.from_buffer("double[]", out)))
        return out
