"""foundry.nn.KVCache: the key/value cache of autoregressive decoding
(re-exported by foundry.nn), a thin wrapper of the C tm_kv_cache."""
import operator

from .. import _c
from .._base import ptr, to_dtype, wrap, device_arg, device_of_c, CPU
from .._c import ffi, lib, check

__all__ = ["KVCache"]


def _windows(window, num_layers):
    if window is None:
        return [0] * num_layers
    if isinstance(window, (list, tuple)):
        if len(window) != num_layers:
            raise ValueError(f"KVCache: window has {len(window)} entries "
                             f"for {num_layers} layers")
        return [0 if w is None else operator.index(w) for w in window]
    return [operator.index(window)] * num_layers


class KVCache:
    """Keys and values of the tokens decoded so far, per layer.

    KVCache(num_layers, batch, kv_heads, max_len, head_dim,
            dtype=foundry.float32, window=None, v_head_dim=None,
            device=None)

    Layer `l` stores keys (batch, kv_heads, max_len, head_dim) and values
    (batch, kv_heads, max_len, v_head_dim) in `dtype` (float32, float64,
    float16 or bfloat16; attention computes in float32), allocated here.
    `window` (an int for every layer, or one entry per layer; None or 0:
    no window) makes a layer keep only its last W positions, in a ring of
    W slots: a query sees itself and the W - 1 positions before it.

    update(layer, key, value) appends key (batch, kv_heads, n, head_dim)
    and value, and returns (keys, values) to attend over in position order
    (as Hugging Face's DynamicCache.update; the layer comes first here):
    the n new ones last, so new query i sits at keys.shape[2] - n + i.
    attend(layer, query, key, value) appends and returns the attention of
    query (batch, heads, n, head_dim) over the layer, causal and aligned
    bottom-right, within the layer's window.

    len(cache) and get_seq_length(layer=0) are the positions appended
    (HF's len() counts layers instead); truncate(n) keeps positions < n in
    every layer (a windowed layer whose ring wrapped goes back one
    position at most: FoundryStateError beyond); crop(max_length) is HF's
    form (negative counts back from the end; no-op when already shorter);
    reset() empties it; nbytes is the storage it holds.  Cached keys carry
    no gradient history."""

    def __init__(self, num_layers, batch, kv_heads, max_len, head_dim,
                 dtype=None, window=None, v_head_dim=None, device=None):
        num_layers = operator.index(num_layers)
        if num_layers <= 0:
            raise ValueError(f"KVCache: num_layers must be positive, got "
                             f"{num_layers}")
        dt = _c.float32 if dtype is None else to_dtype(dtype)
        dev = device_arg(device, "KVCache") or CPU
        wins = _windows(window, num_layers)
        o = ffi.new("tm_kv_cache_opts *")
        o.dtype = dt.c
        o.device = dev.c
        o.v_head_dim = 0 if v_head_dim is None else operator.index(v_head_dim)
        arr = ffi.new("int64_t[]", wins)
        o.windows = arr
        p = lib.tm_kv_cache_new(num_layers, operator.index(batch),
                                operator.index(kv_heads),
                                operator.index(max_len),
                                operator.index(head_dim), o)
        if p == ffi.NULL:
            raise _c.error()
        self._p = ffi.gc(p, lib.tm_kv_cache_free)

    # ------------------------------------------------------------- facts

    @property
    def num_layers(self):
        return lib.tm_kv_cache_layers(self._p)

    @property
    def max_len(self):
        return lib.tm_kv_cache_max_len(self._p)

    @property
    def dtype(self):
        return _c.BY_C[lib.tm_kv_cache_dtype(self._p)]

    @property
    def device(self):
        return device_of_c(lib.tm_kv_cache_device(self._p))

    @property
    def windows(self):
        """Each layer's window (0: none)."""
        return tuple(lib.tm_kv_cache_window(self._p, i)
                     for i in range(self.num_layers))

    @property
    def nbytes(self):
        """Bytes of key and value storage (a windowed layer holds W
        slots, not max_len)."""
        return lib.tm_kv_cache_nbytes(self._p)

    def _layer(self, layer):
        layer = operator.index(layer)
        if not 0 <= layer < self.num_layers:
            raise IndexError(f"KVCache: layer {layer} out of range for a "
                             f"cache of {self.num_layers} layers")
        return layer

    def get_seq_length(self, layer=0):
        """Positions appended to `layer` (a windowed one counts them all)."""
        return lib.tm_kv_cache_length(self._p, self._layer(layer))

    def __len__(self):
        return self.get_seq_length(0)

    def get_max_cache_shape(self):
        return self.max_len

    def __repr__(self):
        return (f"KVCache(num_layers={self.num_layers}, "
                f"max_len={self.max_len}, dtype={self.dtype}, "
                f"length={len(self)}, windows={self.windows})")

    # ------------------------------------------------------------ writes

    def append(self, layer, key, value):
        """Appends n tokens to `layer` without attending."""
        check(lib.tm_kv_cache_append(self._p, self._layer(layer),
                                     ptr(key, "key"), ptr(value, "value")))

    def update(self, layer, key, value):
        """Appends, then returns (keys, values) in position order, the new
        ones last: a view of the storage (valid until the cache is next
        written), or a copy for a windowed layer whose ring wrapped."""
        kp = ffi.new("tm_tensor **")
        vp = ffi.new("tm_tensor **")
        check(lib.tm_kv_cache_update(self._p, self._layer(layer),
                                     ptr(key, "key"), ptr(value, "value"),
                                     kp, vp, ffi.NULL))
        return wrap(kp[0]), wrap(vp[0])

    def attend(self, layer, query, key, value, scale=None, dropout_p=0.0):
        """Appends key and value, then scaled_dot_product_attention of
        query (batch, heads, n, head_dim) over the layer (heads a multiple
        of kv_heads): causal, aligned bottom-right, within the layer's
        window; scale None is 1/sqrt(head_dim).  Differentiable in query
        only."""
        o = ffi.new("tm_sdpa_opts *")
        o.scale = 0.0 if scale is None else float(scale)
        if scale is not None and o.scale == 0.0:
            raise ValueError("KVCache.attend: scale must not be 0")
        o.dropout_p = float(dropout_p)
        return wrap(lib.tm_kv_cache_attend(
            self._p, self._layer(layer), ptr(query, "query"),
            ptr(key, "key"), ptr(value, "value"), o))

    def truncate(self, n):
        """Keeps positions < n in every layer (undoes a rejected draft; no
        copy).  IndexError when n is negative or beyond a layer's length;
        FoundryStateError when a windowed layer already overwrote
        positions the next query would need."""
        check(lib.tm_kv_cache_truncate(self._p, operator.index(n)))

    def crop(self, max_length):
        """Hugging Face's form of truncate: a negative max_length drops
        that many positions; a cache already no longer is left alone."""
        n = operator.index(max_length)
        length = len(self)
        if n < 0:
            n = length + n
        if length <= n:
            return
        self.truncate(n)

    def reset(self):
        """Empties every layer; the storage stays allocated."""
        check(lib.tm_kv_cache_reset(self._p))
