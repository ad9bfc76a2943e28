"""Resizing for foundry.nn.functional: interpolate and pad (every mode),
with PyTorch's names, argument order, rules and errors (re-exported by
functional.py)."""
import math
import numbers
import operator

from .. import _c
from .._base import int64_array, ptr, wrap
from .._c import ffi, lib

_EINVAL = _c.error_class(lib.TM_EINVAL)
_UNSUPPORTED = _c.error_class(lib.TM_EUNSUPPORTED)

_MODES = {"nearest": lib.TM_INTERP_NEAREST,
          "nearest-exact": lib.TM_INTERP_NEAREST_EXACT,
          "linear": lib.TM_INTERP_LINEAR, "bilinear": lib.TM_INTERP_LINEAR,
          "trilinear": lib.TM_INTERP_LINEAR, "bicubic": lib.TM_INTERP_CUBIC}
# the input rank each interpolating mode needs
_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}


def interpolate(input, size=None, scale_factor=None, mode="nearest",
                align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resamples input [N, C, *S] (1 to 3 spatial dims) to size, or to
    floor(S * scale_factor) (exactly one of them); mode is 'nearest',
    'nearest-exact', 'linear' (3-D), 'bilinear' (4-D), 'bicubic' (4-D),
    'trilinear' (5-D) or 'area' (adaptive average pooling).  A given
    scale_factor is used in the coordinate transform unless
    recompute_scale_factor.  antialias=True (bilinear and bicubic)
    filters over the whole footprint when downsampling.  Mirrors
    torch.nn.functional.interpolate."""
    p = ptr(input, "input")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    scales = None
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be "
                         "defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial "
                    f"dimensions, but got input with spatial dimensions of "
                    f"{list(input.shape[2:])} and output size of {size}.")
            out = [operator.index(v) for v in size]
        else:
            out = [operator.index(size)] * max(dim, 0)
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    f"Input and scale_factor must have the same number of "
                    f"spatial dimensions, but got input with spatial "
                    f"dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}.")
            scales = [float(v) for v in scale_factor]
        else:
            scales = [float(scale_factor)] * max(dim, 0)
        out = [math.floor(float(input.shape[2 + i]) * scales[i])
               for i in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an "
                         "explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = None
    if antialias and not (mode in ("bilinear", "bicubic") and
                          input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear and "
                         "bicubic modes and requires a 4-D tensor as input")
    if not 1 <= dim <= 3 or (mode not in _MODES and mode != "area"):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
            f"{input.ndim}D) for the modes: nearest | linear | bilinear | "
            f"bicubic | trilinear | area | nearest-exact (got {mode})")
    if mode in _RANK and input.ndim != _RANK[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode "
                                  f"needs {_RANK[mode]}D input")
    if not input.dtype.is_floating_point:
        raise _UNSUPPORTED(f"interpolate ({mode}) not implemented for "
                           f"'{input.dtype.name}'")
    if mode == "area":
        from ._functional_pool import _adaptive_avg
        if any(v < 1 for v in out):
            raise _c.error_class(lib.TM_ESHAPE)(
                f"interpolate: output sizes must be > 0, got {out}")
        return _adaptive_avg(dim, input, out)
    arr, _ = int64_array(out, "size")
    sc = ffi.NULL if scales is None else ffi.new("double[]", scales)
    f = lib.tm_interpolate_aa if antialias else lib.tm_interpolate
    return wrap(f(p, dim, arr, sc, _MODES[mode], bool(align_corners)))


_PAD_MODES = {"constant": lib.TM_PAD_CONSTANT, "reflect": lib.TM_PAD_REFLECT,
              "replicate": lib.TM_PAD_REPLICATE,
              "circular": lib.TM_PAD_CIRCULAR}


def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 dims: pad[0], pad[1] are the (before,
    after) amounts of the last dim, pad[2], pad[3] of the one before, ...;
    negative amounts crop.  mode 'constant' (value, default 0) pads any
    rank; 'reflect', 'replicate' and 'circular' pad the last 1 to 3 dims
    of a 2-4-D, 3-5-D, 4-5-D... input (k dims: (k+1)-D or (k+2)-D).
    Mirrors torch.nn.functional.pad."""
    p = ptr(input, "input")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    arr, n = int64_array(pad, "pad")
    if n % 2:
        raise _EINVAL("Padding length must be divisible by 2")
    if n // 2 > input.ndim:
        raise _EINVAL("Padding length should be less than or equal to two "
                      "times the input dimension but got padding length "
                      f"{n} and input of dimension {input.ndim}")
    if mode != "constant":
        if value is not None and value != 0:
            raise _EINVAL(f"Padding mode \"{mode}\" doesn't take in value "
                          f"argument")
        k = n // 2
        if not 1 <= k <= 3 or input.ndim not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {n} is not supported for {input.ndim}D input "
                f"tensor.  Supported combinations for non-constant padding: "
                f"2D or 3D input with padding size 2, 3D or 4D input with "
                f"padding size 4, 4D or 5D input with padding size 6")
        value = 0.0
    elif value is None:
        value = 0.0
    elif not isinstance(value, numbers.Number):
        raise TypeError(f"pad: value must be a number, not "
                        f"{type(value).__name__}")
    return wrap(lib.tm_pad_mode(p, arr, n, _PAD_MODES[mode], float(value)))


__all__ = ["interpolate", "pad"]
