"""Convolutions of foundry.nn.functional (re-exported there):
conv1d / conv2d / conv3d and conv_transpose1d / 2d / 3d, with PyTorch's
signatures, over tm_conv and tm_conv_transpose.  Also foundry.conv1d, ...
as torch exports them."""
import operator

from .. import _c
from .._base import ptr, wrap
from .._c import ffi, lib
from .._exports import export

# Bad settings raise what PyTorch raises (RuntimeError), as a FoundryError
# that is also a ValueError like the library's own TM_EINVAL errors.
_SettingError = _c.error_class(lib.TM_EINVAL)


def _opt(t, what):
    return ffi.NULL if t is None else ptr(t, what)


def _ntuple(v, nd, what, fn):
    """v (an int or a sequence of nd ints) as a list of 3 (the last
    3 - nd unused)."""
    if isinstance(v, (tuple, list)):
        if len(v) != nd:
            raise _SettingError(
                f"{fn}: expected {what} to be a single integer value or a "
                f"list of {nd} values to match the convolution dimensions, "
                f"but got {what}={list(v)}")
        vals = [operator.index(e) for e in v]
    else:
        vals = [operator.index(v)] * nd
    return vals + [0] * (3 - nd)


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):
    fn = f"conv{nd}d"
    o = lib.tm_conv_defaults()
    o.stride = _ntuple(stride, nd, "stride", fn)
    o.dilation = _ntuple(dilation, nd, "dilation", fn)
    if isinstance(padding, str):
        modes = {"valid": lib.TM_CONV_PAD_VALID,
                 "same": lib.TM_CONV_PAD_SAME}
        if padding not in modes:
            raise _SettingError(f"{fn}: Invalid padding string: "
                                f"{padding!r} (use 'valid' or 'same')")
        o.pad_mode = modes[padding]
    else:
        o.padding = _ntuple(padding, nd, "padding", fn)
    o.groups = operator.index(groups)
    opts = ffi.new("tm_conv_opts *", o)
    return wrap(lib.tm_conv(ptr(input, "input"), ptr(weight, "weight"),
                            _opt(bias, "bias"), nd, opts))


def _conv_transpose(nd, input, weight, bias, stride, padding,
                    output_padding, groups, dilation):
    fn = f"conv_transpose{nd}d"
    if isinstance(padding, str):
        raise TypeError(f"{fn}: padding must be an int or a tuple of ints, "
                        f"not the string {padding!r}")
    o = lib.tm_conv_transpose_defaults()
    o.stride = _ntuple(stride, nd, "stride", fn)
    o.padding = _ntuple(padding, nd, "padding", fn)
    o.output_padding = _ntuple(output_padding, nd, "output_padding", fn)
    o.dilation = _ntuple(dilation, nd, "dilation", fn)
    o.groups = operator.index(groups)
    opts = ffi.new("tm_conv_transpose_opts *", o)
    return wrap(lib.tm_conv_transpose(ptr(input, "input"),
                                      ptr(weight, "weight"),
                                      _opt(bias, "bias"), nd, opts))


@export
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1,
           groups=1):
    """1-D cross-correlation: input [N, C, L] (or [C, L]), weight [O,
    C / groups, k], bias [O] or None.  padding is an int, a 1-tuple,
    'valid' or 'same'.  Mirrors torch.nn.functional.conv1d."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


@export
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1,
           groups=1):
    """2-D cross-correlation: input [N, C, H, W] (or [C, H, W]), weight
    [O, C / groups, kH, kW], bias [O] or None -> [N, O, H', W'].  stride,
    padding and dilation are ints or pairs; padding may also be 'valid'
    or 'same'.  Mirrors torch.nn.functional.conv2d."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


@export
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1,
           groups=1):
    """3-D cross-correlation: input [N, C, D, H, W] (or unbatched), weight
    [O, C / groups, kD, kH, kW], bias [O] or None.  Mirrors
    torch.nn.functional.conv3d."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


@export
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution: input [N, C_in, L] (or unbatched),
    weight [C_in, C_out / groups, k], bias [C_out] or None; output length
    (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding
    + 1.  Mirrors torch.nn.functional.conv_transpose1d."""
    return _conv_transpose(1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@export
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution (weight [C_in, C_out / groups, kH,
    kW]).  Mirrors torch.nn.functional.conv_transpose2d."""
    return _conv_transpose(2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@export
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution (weight [C_in, C_out / groups, kD, kH,
    kW]).  Mirrors torch.nn.functional.conv_transpose3d."""
    return _conv_transpose(3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
