"""Scaled-dot-product attention of foundry.nn.functional (re-exported
there): scaled_dot_product_attention with PyTorch's signature and
semantics, over the C library's tm_sdpa (one fused kernel: no Tq x Tk
matrix is stored, in the forward or the backward)."""
import math
import operator

from .. import _c
from .._base import ptr, wrap
from .._c import ffi, lib
from .._random import with_rng
from .._tensor import Tensor

# PyTorch raises RuntimeError for bad shapes and settings; these are
# FoundryErrors (RuntimeErrors) that are also the ValueError / TypeError
# the library's own statuses give.
_ShapeError = _c.error_class(lib.TM_ESHAPE)
_SettingError = _c.error_class(lib.TM_EINVAL)
_DtypeError = _c.error_class(lib.TM_EDTYPE)

__all__ = ["scaled_dot_product_attention"]

_FN = "scaled_dot_product_attention"
_IMPLS = {"auto": lib.TM_SDPA_AUTO, "fused": lib.TM_SDPA_FUSED,
          "composed": lib.TM_SDPA_COMPOSED}


def _broadcast(shapes, what):
    """numpy's broadcast of the shapes (tuples), or _ShapeError naming
    what they are."""
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        sizes = {s[len(s) - n + i] for s in shapes if len(s) - n + i >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise _ShapeError(
                f"{_FN}: the {what} {[list(s) for s in shapes]} do not "
                f"broadcast (dim {i - n} has sizes {sorted(sizes)})")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _expand(t, shape):
    """t broadcast to shape as a view (stride 0 over the new dims; the C
    kernels take any strides, so nothing is copied)."""
    if tuple(t.shape) == tuple(shape):
        return t
    while t.ndim < len(shape):
        t = t.unsqueeze(0)
    return t.expand(*shape)


def _heads_to(t, hkv):
    """t (..., h, T, E) with each of its h heads repeated hkv / h times in
    a row (head j of the result is head j // (hkv / h) of t): only when k
    and v have different numbers of heads under enable_gqa (one copy)."""
    h = t.shape[-3]
    if h == hkv:
        return t
    return t.repeat_interleave(hkv // h, dim=t.ndim - 3)


def _dims(t):
    """t's shape as a plain tuple, read with one pair of C calls (the
    checks below look at it many times; .shape re-reads it each time)."""
    p = t._p
    return tuple(ffi.unpack(lib.tm_shape(p), lib.tm_ndim(p)))


def _check_inputs(query, key, value, enable_gqa):
    """The checks PyTorch makes; returns the three shapes (tuples)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_FN}: {name} must be a foundry.Tensor, not "
                            f"{type(t).__name__}")
    qs, ks, vs = _dims(query), _dims(key), _dims(value)
    if len(qs) < 2 or len(ks) < 2 or len(vs) < 2:
        raise _ShapeError(
            f"{_FN}: expected query, key, and value to all be at least 2 "
            f"dimensional, but got query.dim: {len(qs)} key.dim: "
            f"{len(ks)} and value.dim: {len(vs)} instead")
    if not (query.dtype is key.dtype is value.dtype):
        raise _DtypeError(
            f"{_FN}: expected query, key, and value to have the same dtype, "
            f"but got query.dtype: {query.dtype.name} key.dtype: "
            f"{key.dtype.name} and value.dtype: {value.dtype.name} instead")
    if qs[-1] != ks[-1]:
        raise _ShapeError(
            f"{_FN}: query and key must have the same embedding size E, but "
            f"got query {list(qs)} and key {list(ks)}")
    if ks[-2] != vs[-2]:
        raise _ShapeError(
            f"{_FN}: key and value must have the same sequence length S, "
            f"but got key {list(ks)} and value {list(vs)}")
    if enable_gqa and min(len(qs), len(ks), len(vs)) < 3:
        raise IndexError(
            f"{_FN}: enable_gqa=True needs a heads dim (-3): query, key and "
            f"value have {len(qs)}, {len(ks)} and {len(vs)} dims")
    return qs, ks, vs


def _shapes(query, key, value, enable_gqa, dims):
    """(q, k, v) broadcast to common leading dims, heads included unless
    enable_gqa (then key and value keep Hkv heads, a divisor of H); dims:
    their shapes."""
    qs, ks, vs = dims
    if not enable_gqa:
        if qs[:-2] == ks[:-2] == vs[:-2]:  # nothing to broadcast
            return query, key, value
        lead = _broadcast([tuple(t.shape[:-2]) for t in (query, key, value)],
                          "batch and head dims of query, key and value")
        return tuple(_expand(t, lead + tuple(t.shape[-2:]))
                     for t in (query, key, value))
    hq, hk, hv = qs[-3], ks[-3], vs[-3]
    if hq % hk or hq % hv:
        raise _ShapeError(
            f"{_FN}: with enable_gqa=True the number of heads in key "
            f"({hk}) and value ({hv}) must divide the number of heads in "
            f"query ({hq})")
    if hk == hv and qs[:-3] == ks[:-3] == vs[:-3]:  # nothing to copy
        return query, key, value
    lead = _broadcast([qs[:-3], ks[:-3], vs[:-3]],
                      "batch dims of query, key and value")
    hkv = hk * hv // math.gcd(hk, hv)
    k, v = _heads_to(key, hkv), _heads_to(value, hkv)
    return tuple(_expand(t, lead + tuple(t.shape[-3:]))
                 for t in (query, k, v))


def _mask(attn_mask, q, out_shape):
    """attn_mask checked and broadcast to out_shape (B..., L, S): BOOL, or a
    float mask in q's dtype (float32 masks are converted, as PyTorch
    does)."""
    if not isinstance(attn_mask, Tensor):
        raise TypeError(f"{_FN}: attn_mask must be a foundry.Tensor or "
                        f"None, not {type(attn_mask).__name__}")
    dt = attn_mask.dtype
    if dt is not _c.bool_ and dt is not q.dtype and dt is not _c.float32:
        raise _DtypeError(
            f"{_FN}: expected attn_mask dtype to be bool or float or to "
            f"match query dtype, but got attn_mask.dtype: {dt.name} and "
            f"query.dtype: {q.dtype.name} instead")
    if dt is not _c.bool_ and dt is not q.dtype:
        attn_mask = attn_mask.to(q.dtype)
    shape = tuple(attn_mask.shape)
    if len(shape) < 2:  # PyTorch: dim -2 is out of range
        raise IndexError(f"{_FN}: attn_mask must have at least 2 dims (L, "
                         f"S), got shape {list(shape)}")
    if len(shape) > len(out_shape) or \
            _broadcast([shape, out_shape], "attn_mask and the scores' "
                       "shape (batch..., L, S)") != tuple(out_shape):
        raise _ShapeError(
            f"{_FN}: attn_mask {list(shape)} does not broadcast to the "
            f"attention scores' shape {list(out_shape)}")
    return _expand(attn_mask, out_shape)


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, window=0,
                                 causal_offset=0, generator=None,
                                 _impl="auto"):
    """softmax(query @ key^T * scale + mask) @ value, computed by one fused
    kernel (tiles with an online softmax: memory O(L + S), never L x S).

    query (N, ..., L, E), key (N, ..., S, E), value (N, ..., S, Ev) -> (N,
    ..., L, Ev); the leading dims broadcast.  attn_mask: a bool mask (True
    = the key takes part) or a float mask added to the scores,
    broadcastable to (N, ..., L, S); not with is_causal.  is_causal: query
    i sees keys j <= i (top-left aligned when L != S, as PyTorch).  scale
    None is 1 / sqrt(E).  dropout_p > 0 drops attention weights (always:
    the functional form has no training flag), from foundry's default
    generator.  enable_gqa: key and value may have fewer heads (dim -3)
    than query, a divisor of its number (grouped-query / multi-query
    attention, k and v not copied).  A query that sees no key gets zeros.
    Mirrors torch.nn.functional.scaled_dot_product_attention.

    Foundry extensions (keyword-only): window > 0, a sliding window (query
    i sees only keys j > i + causal_offset - window; with is_causal the
    last `window` keys up to its diagonal); causal_offset shifts the
    diagonal of is_causal and window (query i sees keys j <= i +
    causal_offset: S - L aligns it bottom-right, new queries after a
    cache); generator, a foundry.Generator for dropout (None: the default
    one).  `_impl` ("auto", "fused", "composed") is private, for tests and
    benchmarks: "composed" runs matmul, softmax, matmul through ordinary
    ops."""
    qs, ks, vs = _check_inputs(query, key, value, enable_gqa)
    if attn_mask is not None and is_causal:
        raise _SettingError(f"{_FN}: explicit attn_mask should not be set "
                            f"when is_causal=True")
    if _impl not in _IMPLS:
        raise ValueError(f"{_FN}: _impl must be one of {sorted(_IMPLS)}, "
                         f"not {_impl!r}")
    dropout_p = float(dropout_p)
    if not dropout_p <= 1.0:  # NaN too; PyTorch takes p < 0 as no dropout
        raise _SettingError(f"{_FN}: dropout probability has to be between "
                            f"0 and 1, but got {dropout_p}")
    window, causal_offset = operator.index(window), operator.index(
        causal_offset)
    if window < 0:
        raise _SettingError(f"{_FN}: window must be >= 0 (0: none), not "
                            f"{window}")
    squeeze = len(qs) == 2 and len(ks) == 2 and len(vs) == 2
    if squeeze:  # tm_sdpa wants a heads dim
        query, key, value = (t.unsqueeze(0) for t in (query, key, value))
        qs, ks, vs = (1,) + qs, (1,) + ks, (1,) + vs
    q, k, v = _shapes(query, key, value, enable_gqa, (qs, ks, vs))
    if attn_mask is None:
        mask = None
    else:
        out_shape = _dims(q)[:-1] + (_dims(k)[-2],)
        mask = _mask(attn_mask, q, out_shape)
    o = ffi.new("tm_sdpa_opts *")
    o.mask = ffi.NULL if mask is None else ptr(mask, "attn_mask")
    o.causal = bool(is_causal)
    o.causal_offset = causal_offset
    o.window = window
    o.impl = _IMPLS[_impl]
    if scale is None:
        # tm_sdpa's default, 1 / sqrt(E); with E = 0 every score is 0 and
        # any finite scale gives PyTorch's uniform weights
        o.scale = 0.0 if qs[-1] else 1.0
    elif float(scale) == 0.0:
        # tm_sdpa reads 0 as the default: scores of q * 0 are the zeros
        # PyTorch's scale=0 gives (and q's gradient is 0, as there)
        q, o.scale = q * 0.0, 1.0
    else:
        o.scale = float(scale)
    drop_all = dropout_p >= 1.0
    o.dropout_p = dropout_p if 0.0 < dropout_p < 1.0 else 0.0

    def call(rng):
        o.rng = rng
        return lib.tm_sdpa(q._p, k._p, v._p, o)

    out = wrap(with_rng(generator, call) if o.dropout_p > 0 else call(
        ffi.NULL))
    if drop_all:  # every weight dropped: zeros, no gradient, as PyTorch
        out = out * 0.0
    return out.squeeze(0) if squeeze else out
