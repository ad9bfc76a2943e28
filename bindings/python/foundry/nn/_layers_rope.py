"""foundry.nn.RotaryEmbedding: rotary position embeddings configured like
Hugging Face's (head dim, max positions, base, a rope_scaling dict),
computed by the C library's tm_rope (foundry/attention.h); re-exported by
foundry.nn."""
import operator

from .. import _c
from .._base import ptr, wrap
from .._c import ffi, lib
from .._ops_shape import cat, stack
from .module import Module

_EINVAL = _c.error_class(lib.TM_EINVAL)

__all__ = ["RotaryEmbedding"]

_KINDS = {"default": lib.TM_ROPE_SCALING_NONE,
          "linear": lib.TM_ROPE_SCALING_LINEAR,
          "dynamic": lib.TM_ROPE_SCALING_DYNAMIC,
          "yarn": lib.TM_ROPE_SCALING_YARN,
          "llama3": lib.TM_ROPE_SCALING_LLAMA3}
_KEYS = {"rope_type", "type", "factor", "original_max_position_embeddings",
         "attention_factor", "beta_fast", "beta_slow", "mscale",
         "mscale_all_dim", "truncate", "low_freq_factor", "high_freq_factor",
         "rope_theta", "partial_rotary_factor"}


def _config(dim, max_position_embeddings, base, rope_scaling, rotary_dim,
            partial_rotary_factor, interleaved):
    sc = dict(rope_scaling or {})
    unknown = sorted(set(sc) - _KEYS)
    if unknown:
        raise _EINVAL(f"RotaryEmbedding: unknown rope_scaling keys "
                      f"{unknown}; known: {sorted(_KEYS)}")
    kind = sc.get("rope_type", sc.get("type", "default"))
    if kind not in _KINDS:
        raise _EINVAL(f"RotaryEmbedding: unknown rope_type {kind!r}; "
                      f"known: {sorted(_KINDS)}")
    dim = operator.index(dim)
    if "partial_rotary_factor" in sc and partial_rotary_factor is None:
        partial_rotary_factor = sc["partial_rotary_factor"]
    if rotary_dim is None:
        rotary_dim = (dim if partial_rotary_factor is None
                      else int(dim * partial_rotary_factor))
    c = ffi.new("tm_rope_config *", lib.tm_rope_defaults(dim))
    c.rotary_dim = operator.index(rotary_dim)
    c.theta = float(sc.get("rope_theta", base))
    c.interleaved = bool(interleaved)
    c.scaling = _KINDS[kind]
    orig = sc.get("original_max_position_embeddings",
                  max_position_embeddings)
    c.original_max_positions = operator.index(orig)
    factor = sc.get("factor")
    if factor is None and kind == "yarn":
        # DeepSeek-V3's configs give the ratio of the two lengths instead
        factor = max_position_embeddings / orig
    if factor is None and kind != "default":
        raise _EINVAL(f"RotaryEmbedding: rope_type {kind!r} needs a factor")
    c.factor = 1.0 if factor is None else float(factor)
    for key in ("attention_factor", "mscale", "mscale_all_dim",
                "beta_fast", "beta_slow", "low_freq_factor",
                "high_freq_factor"):
        if sc.get(key) is not None:
            setattr(c, key, float(sc[key]))
    c.yarn_truncate = bool(sc.get("truncate", True))
    return c


class RotaryEmbedding(Module):
    """Rotary position embeddings (RoPE) with Hugging Face's configuration:
    dim (the head dim), max_position_embeddings, base (rope_theta), and
    rope_scaling, a dict as in HF configs: rope_type (or type) "default",
    "linear", "dynamic", "yarn" or "llama3", with factor,
    original_max_position_embeddings (default max_position_embeddings),
    attention_factor, beta_fast, beta_slow, mscale, mscale_all_dim,
    truncate (yarn), low_freq_factor, high_freq_factor (llama3).  Only the
    first rotary_dim dims rotate (rotary_dim, or dim * partial_rotary_factor,
    default dim); interleaved=True pairs dims (2t, 2t + 1) (GPT-J) instead
    of (t, t + rotary_dim/2) (Llama, NeoX).

    forward(x, position_ids) returns (cos, sin) like HF's
    LlamaRotaryEmbedding: shape position_ids.shape + (rotary_dim,), each
    value repeated over its pair, attention factor included, in x's dtype
    on x's device; foundry.nn.functional.apply_rotary_emb applies them.
    rotate(x, position_ids=None, offset=0) and apply_rotary(q, k, ...)
    rotate directly (through cached tables, differentiable in x).
    Frequencies are computed in double; the tables are cached per dtype
    and device and grow with the positions asked for."""

    def __init__(self, dim, max_position_embeddings=2048, base=10000.0,
                 rope_scaling=None, rotary_dim=None,
                 partial_rotary_factor=None, interleaved=False):
        super().__init__()
        cfg = _config(dim, max_position_embeddings, base, rope_scaling,
                      rotary_dim, partial_rotary_factor, interleaved)
        p = lib.tm_rope_new(cfg)
        if p == ffi.NULL:
            raise _c.error()
        self._rope = ffi.gc(p, lib.tm_rope_free)
        self.dim, self.rotary_dim = dim, cfg.rotary_dim
        self.max_position_embeddings = max_position_embeddings
        self.base, self.interleaved = base, bool(interleaved)
        self.rope_scaling = dict(rope_scaling) if rope_scaling else None

    def _tables(self, x, position_ids, offset):
        px = ptr(x, "x")
        dt = lib.TM_F64 if x.dtype.name == "float64" else lib.TM_F32
        cos, sin = ffi.new("tm_tensor **"), ffi.new("tm_tensor **")
        pos = ffi.NULL if position_ids is None else ptr(position_ids,
                                                        "position_ids")
        n = 0 if position_ids is not None else x.shape[-2]
        _c.check(lib.tm_rope_tables(self._rope, operator.index(offset), pos,
                                    n, dt, lib.tm_device_of(px), cos, sin))
        return wrap(cos[0]), wrap(sin[0])

    def forward(self, x, position_ids):
        """(cos, sin) for position_ids ([B, T] or [T] integers), in HF's
        layout (see the class)."""
        c, s = self._tables(x, position_ids, 0)
        if self.interleaved:
            shp = tuple(c.shape[:-1]) + (self.rotary_dim,)
            c = stack([c, c], -1).reshape(shp)
            s = stack([s, s], -1).reshape(shp)
        else:
            c, s = cat([c, c], -1), cat([s, s], -1)
        if c.dtype is not x.dtype:
            c, s = c.to(x.dtype), s.to(x.dtype)
        return c, s

    def rotate(self, x, position_ids=None, offset=0):
        """x (..., T, dim) rotated at positions offset + t, or offset +
        position_ids ([T], or [B, T] for x [B, ..., T, dim])."""
        pos = ffi.NULL if position_ids is None else ptr(position_ids,
                                                        "position_ids")
        return wrap(lib.tm_rope_apply(self._rope, ptr(x, "x"),
                                      operator.index(offset), pos))

    def apply_rotary(self, q, k, position_ids=None, offset=0):
        """(rotate(q, ...), rotate(k, ...)): the queries and keys of one
        attention layer (q [B, H, T, dim], k [B, Hkv, T, dim])."""
        return (self.rotate(q, position_ids, offset),
                self.rotate(k, position_ids, offset))

    def extra_repr(self):
        return (f"dim={self.dim}, rotary_dim={self.rotary_dim}, "
                f"base={self.base}, interleaved={self.interleaved}, "
                f"rope_scaling={self.rope_scaling}")
