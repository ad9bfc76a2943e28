"""Rotary position embeddings for foundry.nn.functional: apply_rotary_emb,
which rotates a tensor by cos/sin tables in Hugging Face's layout (as
foundry.nn.RotaryEmbedding returns them); re-exported by functional.py.
"""
import operator

from .. import _c
from .._base import ptr, wrap
from .._c import lib

_EINVAL = _c.error_class(lib.TM_EINVAL)
_ESHAPE = _c.error_class(lib.TM_ESHAPE)

__all__ = ["apply_rotary_emb"]


def _half_table(t, interleaved, what):
    """One value per pair from an HF-layout table (..., rotary_dim), whose
    values repeat over each pair's two dims."""
    r = t.shape[-1] if t.dim() > 0 else 0
    if r < 2 or r % 2:
        raise _ESHAPE(f"apply_rotary_emb: {what} must have an even last "
                      f"dim (rotary_dim), got shape {tuple(t.shape)}")
    return t[..., ::2] if interleaved else t[..., : r // 2]


def apply_rotary_emb(x, cos, sin, interleaved=False, unsqueeze_dim=None):
    """x (..., T, D) rotated by the angles whose cosine and sine are given:
    for each pair (x1, x2) of the first rotary_dim dims, x1 cos - x2 sin
    and x2 cos + x1 sin; the other D - rotary_dim dims pass through.

    cos and sin are in Hugging Face's layout, as
    foundry.nn.RotaryEmbedding(x, position_ids) and HF's
    LlamaRotaryEmbedding return them: last dim rotary_dim, each value
    repeated over its pair's two dims (the halves layout pairs dim t with
    t + rotary_dim/2, as HF's rotate_half; interleaved=True pairs 2t with
    2t + 1, as GPT-J).  They broadcast against x's (..., T, rotary_dim);
    unsqueeze_dim inserts a dim first, as HF's apply_rotary_pos_emb does
    (1 for x [B, H, T, D] and tables [B, T, rotary_dim]).  Differentiable
    in x (cos and sin get no gradient).  F32, F64, F16 or BF16 x."""
    if unsqueeze_dim is not None:
        d = operator.index(unsqueeze_dim)
        cos, sin = cos.unsqueeze(d), sin.unsqueeze(d)
    px = ptr(x, "x")
    c = _half_table(cos, interleaved, "cos")
    s = _half_table(sin, interleaved, "sin")
    return wrap(lib.tm_rope_rotate(px, ptr(c, "cos"), ptr(s, "sin"),
                                   bool(interleaved)))
