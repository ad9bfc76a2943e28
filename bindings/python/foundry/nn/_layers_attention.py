"""Attention modules (re-exported by foundry.nn): MultiheadAttention, with
PyTorch's constructor, parameter names, initialisation and forward."""
import math

from .. import _c
from .._base import to_dtype
from .._create import empty, zeros
from .._ops_shape import cat
from .._tensor import Tensor
from . import functional as F
from . import init
from .layers import Linear
from .module import Module, Parameter

__all__ = ["MultiheadAttention"]


class _MhaError(ValueError, AssertionError):
    """Bad shapes given to MultiheadAttention: a ValueError (Foundry's rule
    for bad input) that is also the AssertionError PyTorch raises."""


def _float_mask(mask, name, dtype):
    """mask as PyTorch's _canonical_mask makes it: a float mask as is (in
    dtype), a bool mask as 0 where False and -inf where True (True = do
    not attend, MultiheadAttention's meaning)."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be a "
                        f"foundry.Tensor or None, not {type(mask).__name__}")
    if mask.dtype is _c.bool_:
        return zeros(*mask.shape, dtype=dtype).masked_fill(
            mask, float("-inf"))
    if not mask.is_floating_point():
        raise _MhaError(f"MultiheadAttention: only bool and floating types "
                        f"of {name} are supported, not {mask.dtype.name}")
    return mask if mask.dtype is dtype else mask.to(dtype)


class MultiheadAttention(Module):
    """Multi-head attention (Attention Is All You Need): the query, key and
    value projected by in_proj_weight (or q_proj_weight, k_proj_weight and
    v_proj_weight when kdim or vdim differ from embed_dim) and
    in_proj_bias, num_heads heads of embed_dim / num_heads attending, and
    out_proj (a Linear).  add_bias_kv appends the learnt bias_k / bias_v
    (1, 1, embed_dim) to the keys and values, add_zero_attn a zero key and
    value; dropout applies to the attention weights in training.  Inputs
    (L, N, E), or (N, L, E) with batch_first, or unbatched (L, E).

    forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False) returns
    (attn_output, attn_weights or None).  Masks follow PyTorch's module:
    a bool True means "do not attend" (the opposite of
    scaled_dot_product_attention's); float masks are added to the scores.
    need_weights=True computes the weights explicitly (matmul, softmax,
    matmul); need_weights=False runs the fused scaled_dot_product_attention
    kernel (no L x S matrix).  is_causal is a hint that attn_mask is the
    causal mask, as in PyTorch: it needs attn_mask, and without
    key_padding_mask and weights the kernel's own causal rule replaces the
    mask.  Initialisation as PyTorch: xavier_uniform_ projections, zero
    in_proj_bias and out_proj.bias, xavier_normal_ bias_k / bias_v.
    Mirrors torch.nn.MultiheadAttention (no fast path for nested
    tensors)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True,
                 add_bias_kv=False, add_zero_attn=False, kdim=None,
                 vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        dt = _c.float32 if dtype is None else to_dtype(dtype)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = (self.kdim == embed_dim
                                    and self.vdim == embed_dim)
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise _MhaError(f"MultiheadAttention: embed_dim ({embed_dim}) "
                            f"must be divisible by num_heads ({num_heads})")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim,
                                                 dtype=dt))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim,
                                                 dtype=dt))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim,
                                                 dtype=dt))
            self.in_proj_weight = None
        else:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim,
                                                  dtype=dt))
            self.q_proj_weight = self.k_proj_weight = None
            self.v_proj_weight = None
        self.in_proj_bias = Parameter(empty(3 * embed_dim, dtype=dt)) \
            if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dt)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, dtype=dt))
            self.bias_v = Parameter(empty(1, 1, embed_dim, dtype=dt))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()
        if device is not None:
            self.to(device)

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"batch_first={self.batch_first}")

    # ---------------------------------------------------------- forward
    def _check(self, query, key, value, key_padding_mask, attn_mask):
        """PyTorch's _mha_shape_check: whether the input is batched."""
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be a "
                                f"foundry.Tensor, not {type(t).__name__}")
        if query.ndim not in (2, 3):
            raise _MhaError(f"MultiheadAttention: query should be unbatched "
                            f"2D or batched 3D tensor but received "
                            f"{query.ndim}-D query tensor")
        batched = query.ndim == 3
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise _MhaError(
                f"MultiheadAttention: for {query.ndim}-D query, expected "
                f"key and value to be {query.ndim}-D but found {key.ndim}-D "
                f"and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and \
                key_padding_mask.ndim != query.ndim - 1:
            raise _MhaError(
                f"MultiheadAttention: for {query.ndim}-D query, expected "
                f"key_padding_mask to be None or {query.ndim - 1}-D but found "
                f"{key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise _MhaError(
                f"MultiheadAttention: expected attn_mask to be None, 2-D or "
                f"3-D but found {attn_mask.ndim}-D tensor instead")
        e = query.shape[-1]
        if e != self.embed_dim or key.shape[-1] != self.kdim or \
                value.shape[-1] != self.vdim:
            raise _MhaError(
                f"MultiheadAttention: expected query, key and value "
                f"embeddings of {self.embed_dim}, {self.kdim} and "
                f"{self.vdim}, got {list(query.shape)}, {list(key.shape)} "
                f"and {list(value.shape)}")
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]):
            raise _MhaError(
                f"MultiheadAttention: key's sequence and batch dims "
                f"{list(key.shape[:-1])} do not match value's "
                f"{list(value.shape[:-1])}")
        return batched

    def _project(self, query, key, value):
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = (self.q_proj_weight, self.k_proj_weight,
                          self.v_proj_weight)
        return (F.linear(query, wq, bq), F.linear(key, wk, bk),
                F.linear(value, wv, bv))

    def forward(self, query, key, value, key_padding_mask=None,
                need_weights=True, attn_mask=None, average_attn_weights=True,
                is_causal=False):
        batched = self._check(query, key, value, key_padding_mask, attn_mask)
        if self.batch_first and batched:
            query, key, value = (x.transpose(0, 1)
                                 for x in (query, key, value))
        if not batched:
            query, key, value = (x.unsqueeze(1) for x in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        tgt, bsz, e = query.shape
        src = key.shape[0]
        h, hd = self.num_heads, self.head_dim
        dt = query.dtype
        kpm = _float_mask(key_padding_mask, "key_padding_mask", dt)
        if is_causal and attn_mask is None:
            raise _c.error_class(_c.lib.TM_EINVAL)(
                "MultiheadAttention: need attn_mask if specifying the "
                "is_causal hint (nn.Transformer."
                "generate_square_subsequent_mask makes it)")
        causal = is_causal and kpm is None and not need_weights
        mask = None if causal else _float_mask(attn_mask, "attn_mask", dt)
        q, k, v = self._project(query, key, value)
        if mask is not None:
            want = (tgt, src) if mask.ndim == 2 else (bsz * h, tgt, src)
            if tuple(mask.shape) != want:
                raise _c.error_class(_c.lib.TM_ESHAPE)(
                    f"MultiheadAttention: the shape of the {mask.ndim}D "
                    f"attn_mask is {list(mask.shape)}, but should be "
                    f"{list(want)}")
            if mask.ndim == 2:
                mask = mask.unsqueeze(0)
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(1, bsz, e)], 0)
            v = cat([v, self.bias_v.expand(1, bsz, e)], 0)
            mask = None if mask is None else F.pad(mask, (0, 1))
            kpm = None if kpm is None else F.pad(kpm, (0, 1))
        q = q.reshape(tgt, bsz * h, hd).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * h, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * h, hd).transpose(0, 1)
        if self.add_zero_attn:
            z = zeros(bsz * h, 1, hd, dtype=k.dtype)
            k, v = cat([k, z], 1), cat([v, z], 1)
            mask = None if mask is None else F.pad(mask, (0, 1))
            kpm = None if kpm is None else F.pad(kpm, (0, 1))
        src = k.shape[1]
        if kpm is not None:
            if tuple(kpm.shape) != (bsz, src):
                raise _c.error_class(_c.lib.TM_ESHAPE)(
                    f"MultiheadAttention: expected key_padding_mask of shape "
                    f"{[bsz, src]}, but got {list(kpm.shape)}")
            kpm = kpm.reshape(bsz, 1, 1, src).expand(bsz, h, 1, src) \
                .reshape(bsz * h, 1, src)
            mask = kpm if mask is None else mask + kpm
        p = self.dropout if self.training else 0.0
        if need_weights:
            w = (q * math.sqrt(1.0 / hd)) @ k.transpose(1, 2)
            if mask is not None:
                w = w + mask
            w = w.softmax(-1)
            if p > 0.0:
                w = F.dropout(w, p)
            out = (w @ v).transpose(0, 1).reshape(tgt * bsz, e)
            weights = w.reshape(bsz, h, tgt, src)
            if average_attn_weights:
                weights = weights.mean(1)
        else:
            if mask is not None:
                mask = mask.unsqueeze(0) if mask.shape[0] == 1 else \
                    mask.reshape(bsz, h, mask.shape[1], src)
            out = F.scaled_dot_product_attention(
                q.reshape(bsz, h, tgt, hd), k.reshape(bsz, h, src, hd),
                v.reshape(bsz, h, src, hd), mask, p, causal)
            out = out.permute(2, 0, 1, 3).reshape(tgt * bsz, e)
            weights = None
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias)
        out = out.reshape(tgt, bsz, e)
        if not batched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
