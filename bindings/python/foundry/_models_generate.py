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


def _prompt(prompt_ids):
    """A contiguous int64 array of one prompt (a list, array, or Tensor of
    shape [T] or [1, T])."""
    if hasattr(prompt_ids, "numpy") and hasattr(prompt_ids, "_p"):
        prompt_ids = prompt_ids.numpy()
    a = np.asarray(prompt_ids)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1:
        raise ValueError(f"generate: prompt_ids must be one sequence ([T] or [1, T]), "
                         f"got shape {list(a.shape)}")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"generate: prompt_ids must hold integer token ids, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


def _default_seed():
    """A seed from Foundry's process-wide generator, so foundry.manual_seed
    makes seed=None reproducible (as torch.manual_seed does for HF)."""
    w = ffi.new("uint32_t[2]")
    lib.tm_rng_u32(ffi.NULL, w, 2)
    return int(w[0]) | int(w[1]) << 32


class _Stream:
    """The generator GPT.generate(stream=True) returns: yields each new id
    as the model produces it (tm_gpt_stream)."""

    def __init__(self, model, p, keep):
        self._model, self._keep = model, keep   # both outlive the stream
        self._s = ffi.gc(p, lib.tm_gpt_stream_free)

    def __iter__(self):
        return self

    def __next__(self):
        if self._s is None:
            raise StopIteration
        t = lib.tm_gpt_stream_next(self._s)
        if t == -1:
            self.close()
            raise StopIteration
        if t < -1:
            self.close()
            raise error()
        return int(t)

    def close(self):
        """Ends generation early and releases the stream's cache."""
        self._s = None   # its ffi.gc destructor frees it now


class GenerationMixin:
    """generate() for a model holding a C tm_gpt as `self._m`."""

    def generate(self, prompt_ids=None, max_new_tokens=64, temperature=1.0, top_k=0,
                 top_p=1.0, min_p=0.0, repetition_penalty=1.0, seed=None,
                 stop_tokens=None, do_sample=None, stream=False, cache_dtype=None,
                 eos_token_id=None, input_ids=None):
        """New token ids continuing prompt_ids (batch 1), with the KV cache.

        Sampling follows Hugging Face's generate(): repetition_penalty,
        temperature, top_k, top_p, min_p, then a draw seeded by `seed`
        (None: a seed from foundry's global generator, see
        foundry.manual_seed).  do_sample=False or temperature=0 is greedy.
        Generation ends after a token of stop_tokens (which is returned),
        after max_new_tokens, or when prompt + new ids fill the model's
        context.  Dropout and autograd are off while generating.  Returns
        the list of new ids, or with stream=True an iterator that yields
        each id as it is produced (its close() stops early).

        Hugging Face's names work too: input_ids for prompt_ids, and
        eos_token_id (an id or a list), added to stop_tokens.  A model
        loaded from a GGUF file (foundry.models.load("x.gguf")) is greedy
        unless do_sample=True, as HF's generate(), and stops at its eos
        token when neither stop_tokens nor eos_token_id is given."""
        if input_ids is not None:
            if prompt_ids is not None:
                raise TypeError("generate: give prompt_ids or input_ids, not both")
            prompt_ids = input_ids
        if prompt_ids is None:
            raise TypeError("generate: prompt_ids (input_ids) is required")
        if do_sample is None:
            do_sample = getattr(self, "_do_sample_default", None)
        p = _prompt(prompt_ids)
        stops = list(_ids(stop_tokens, "stop_tokens")) if stop_tokens is not None else []
        if eos_token_id is not None:
            stops += list(_ids(eos_token_id, "eos_token_id"))
        elif stop_tokens is None:
            stops = list(getattr(self, "_default_stop", None) or [])
        stop = _ids(stops, "stop_tokens")
        o = ffi.new("tm_generate_opts *", lib.tm_generate_defaults())
        o.max_new_tokens = int(max_new_tokens)
        o.sample = _sample_opts(temperature, top_k, top_p, min_p, repetition_penalty,
                                _default_seed() if seed is None else seed, do_sample)[0]
        cstop = ffi.from_buffer("int64_t[]", stop)
        o.stop_tokens, o.n_stop = (cstop if stop.size else ffi.NULL), stop.size
        if cache_dtype is not None:
            o.cache_dtype = getattr(cache_dtype, "c", cache_dtype)
        cp = ffi.from_buffer("int64_t[]", p)
        if stream:
            s = lib.tm_gpt_stream_new(self._m, cp, p.size, o)
            if s == ffi.NULL:
                raise error()
            return _Stream(self, s, (stop, cstop))
        out = np.empty(max(int(max_new_tokens), 1), dtype=np.int64)
        n = ffi.new("int64_t *")
        check(lib.tm_gpt_generate(self._m, cp, p.size, o,
                                  ffi.from_buffer("int64_t[]", out), n))
        return out[:n[0]].tolist()
