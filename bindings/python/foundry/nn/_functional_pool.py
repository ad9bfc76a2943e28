"""Pooling for foundry.nn.functional: max / average pooling over 1 to 3
spatial dims, adaptive pooling and max unpooling, with PyTorch's names,
argument order, output sizes and errors (re-exported by functional.py).
"""
import operator

from .. import _c
from .._base import int64_array, ptr, wrap
from .._c import ffi, lib

_EINVAL = _c.error_class(lib.TM_EINVAL)
_UNSUPPORTED = _c.error_class(lib.TM_EUNSUPPORTED)


def _ntuple(v, n, what, fn):
    """v (an int or a sequence of n ints) as a list of n ints."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            v = v[0]
        elif len(v) != n:
            raise _EINVAL(f"{fn}: {what} must either be a single int, or a "
                          f"tuple of {n} ints, not {tuple(v)!r}")
        else:
            return [operator.index(e) for e in v]
    return [operator.index(v)] * n


def _tensor_arg(input, fn, floats_only=False):
    p = ptr(input, "input")
    if input.dtype.name == "bool" or (floats_only and
                                      not input.dtype.is_floating_point):
        raise _UNSUPPORTED(f"\"{fn}\" not implemented for "
                           f"'{input.dtype.name}'")
    return p


def _opts(fn, n, kernel_size, stride, padding, dilation=1, ceil_mode=False,
          count_include_pad=True, divisor_override=None):
    o = lib.tm_pool_defaults()
    k = _ntuple(kernel_size, n, "kernel_size", fn)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and
                                len(stride) == 0) else \
        _ntuple(stride, n, "stride", fn)
    if any(e == 0 for e in s):
        raise _EINVAL(f"{fn}: stride should not be zero, got {tuple(s)}")
    if divisor_override is not None:
        divisor_override = operator.index(divisor_override)
        if divisor_override == 0:
            raise _EINVAL(f"{fn}: divisor must be not zero")
    o.kernel[0:n] = k
    o.stride[0:n] = s
    o.padding[0:n] = _ntuple(padding, n, "padding", fn)
    o.dilation[0:n] = _ntuple(dilation, n, "dilation", fn)
    o.ceil_mode = bool(ceil_mode)
    o.count_include_pad = bool(count_include_pad)
    o.divisor_override = divisor_override or 0
    return ffi.new("tm_pool_opts *", o)


def _max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    fn = f"max_pool{n}d"
    p = _tensor_arg(input, fn)
    o = _opts(fn, n, kernel_size, stride, padding, dilation, ceil_mode)
    if not return_indices:
        return wrap(lib.tm_max_pool_nd(p, n, o, ffi.NULL))
    ix = ffi.new("tm_tensor **")
    y = wrap(lib.tm_max_pool_nd(p, n, o, ix))
    return y, wrap(ix[0])


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum over windows of input [N, C, L] or [C, L] (any
    integer dtype too, also without return_indices, where PyTorch's CPU
    refuses integers).  Mirrors torch.nn.functional.max_pool1d;
    return_indices adds the flat index of each maximum within its
    plane."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum over windows of input [N, C, H, W] or [C, H, W].
    Mirrors torch.nn.functional.max_pool2d; return_indices adds the flat
    index y*W + x of each maximum within its plane."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum over windows of input [N, C, D, H, W] or [C, D, H, W].
    Mirrors torch.nn.functional.max_pool3d; return_indices adds the flat
    index (z*H + y)*W + x of each maximum within its plane."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override):
    fn = f"avg_pool{n}d"
    p = _tensor_arg(input, fn)
    if not input.dtype.is_floating_point and input.dtype.name != "int64":
        # PyTorch averages int64 (truncating) but no other integer dtype
        raise _UNSUPPORTED(f"\"{fn}\" not implemented for "
                           f"'{input.dtype.name}'")
    o = _opts(fn, n, kernel_size, stride, padding, 1, ceil_mode,
              count_include_pad, divisor_override)
    return wrap(lib.tm_avg_pool_nd(p, n, o))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """The mean over windows of input [N, C, L] or [C, L] (int64:
    truncated).  Mirrors torch.nn.functional.avg_pool1d."""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean over windows of input [N, C, H, W] or [C, H, W]
    (int64: truncated).  Mirrors torch.nn.functional.avg_pool2d."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean over windows of input [N, C, D, H, W] or [C, D, H, W]
    (int64: truncated).  Mirrors torch.nn.functional.avg_pool3d."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ---------------------------------------------------------------- adaptive

def _out_sizes(output_size, n, fn):
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != n:
            raise _EINVAL(f"{fn}: output_size must have {n} entries, not "
                          f"{tuple(output_size)!r}")
        vals = output_size
    else:
        vals = [output_size] * n
    return ffi.new("int64_t[]", [-1 if v is None else operator.index(v)
                                 for v in vals])


def _adaptive_avg(n, input, output_size):
    fn = f"adaptive_avg_pool{n}d"
    p = _tensor_arg(input, fn, floats_only=True)
    return wrap(lib.tm_adaptive_avg_pool_nd(p, n,
                                            _out_sizes(output_size, n, fn)))


def adaptive_avg_pool1d(input, output_size):
    """The mean over PyTorch's adaptive windows of input [N, C, L] or
    [C, L].  Mirrors torch.nn.functional.adaptive_avg_pool1d."""
    return _adaptive_avg(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Mirrors torch.nn.functional.adaptive_avg_pool2d (None entries of
    output_size keep that size)."""
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Mirrors torch.nn.functional.adaptive_avg_pool3d (None entries of
    output_size keep that size)."""
    return _adaptive_avg(3, input, output_size)


def _adaptive_max(n, input, output_size, return_indices):
    fn = f"adaptive_max_pool{n}d"
    p = _tensor_arg(input, fn, floats_only=True)
    sizes = _out_sizes(output_size, n, fn)
    if not return_indices:
        return wrap(lib.tm_adaptive_max_pool_nd(p, n, sizes, ffi.NULL))
    ix = ffi.new("tm_tensor **")
    y = wrap(lib.tm_adaptive_max_pool_nd(p, n, sizes, ix))
    return y, wrap(ix[0])


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over PyTorch's adaptive windows of input [N, C, L] or
    [C, L].  Mirrors torch.nn.functional.adaptive_max_pool1d."""
    return _adaptive_max(1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Mirrors torch.nn.functional.adaptive_max_pool2d (None entries of
    output_size keep that size)."""
    return _adaptive_max(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Mirrors torch.nn.functional.adaptive_max_pool3d (None entries of
    output_size keep that size)."""
    return _adaptive_max(3, input, output_size, return_indices)


# ----------------------------------------------------------------- unpool

def _unpool_size(input, n, k, s, p, output_size, fn):
    spatial = list(input.shape[-n:])
    default = [(spatial[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n)]
    if output_size is None:
        return default
    out = [operator.index(v) for v in output_size]
    if len(out) == n + 2:
        out = out[2:]
    if len(out) != n:
        raise ValueError(f"{fn}: output_size should be a sequence "
                         f"containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(out)}'")
    for d in range(n):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < out[d] < hi:
            raise ValueError(f"{fn}: invalid output_size {tuple(out)!r} "
                             f"(dim {d} must be between {lo} and {hi})")
    return out


def _max_unpool(n, input, indices, kernel_size, stride, padding,
                output_size):
    fn = f"max_unpool{n}d"
    p = ptr(input, "input")
    ip = ptr(indices, "indices")
    k = _ntuple(kernel_size, n, "kernel_size", fn)
    s = k if stride is None else _ntuple(stride, n, "stride", fn)
    pd = _ntuple(padding, n, "padding", fn)
    if input.ndim not in (n + 1, n + 2):
        raise _EINVAL(f"{fn}: input must be {n + 1}D or {n + 2}D, got shape "
                      f"{tuple(input.shape)}")
    out = _unpool_size(input, n, k, s, pd, output_size, fn)
    arr, _ = int64_array(out, "output_size")
    return wrap(lib.tm_max_unpool_nd(p, ip, n, arr))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None):
    """Zeros with input's values at the indices max_pool1d returned.
    Mirrors torch.nn.functional.max_unpool1d."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None):
    """Zeros with input's values at the indices max_pool2d returned.
    Mirrors torch.nn.functional.max_unpool2d."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None):
    """Zeros with input's values at the indices max_pool3d returned.
    Mirrors torch.nn.functional.max_unpool3d."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding,
                       output_size)


__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
           "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]
