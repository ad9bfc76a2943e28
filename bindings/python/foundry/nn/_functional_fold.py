"""unfold and fold (im2col and its adjoint) for foundry.nn.functional.

Each is a gather / scatter-add through one index computed from the
geometry, so each is the other's gradient (tm_im2col / tm_col2im in
include/foundry/nn_functional.h).
"""
import operator

from .._base import ptr, wrap
from .._c import ffi, lib


def _pair(v, what):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{what} must be an int or a pair, not {v!r}")
        return [operator.index(v[0]), operator.index(v[1])]
    v = operator.index(v)
    return [v, v]


def _opts(kernel_size, dilation, padding, stride):
    o = ffi.new("tm_fold_opts *", lib.tm_fold_defaults())
    o.kernel = _pair(kernel_size, "kernel_size")
    o.dilation = _pair(dilation, "dilation")
    o.padding = _pair(padding, "padding")
    o.stride = _pair(stride, "stride")
    return o


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks as columns: [N, C, H, W] (or [C, H, W]) ->
    [N, C*kH*kW, L] (or [C*kH*kW, L]), L the number of blocks.  Its
    gradient is fold.  Mirrors torch.nn.functional.unfold."""
    return wrap(lib.tm_im2col(ptr(input, "input"),
                              _opts(kernel_size, dilation, padding, stride)))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns summed back into an image of output_size (overlaps add up):
    [N, C*kH*kW, L] (or [C*kH*kW, L]) -> [N, C, H, W] (or [C, H, W]).  Its
    gradient is unfold.  Mirrors torch.nn.functional.fold."""
    size = ffi.new("int64_t[2]", _pair(output_size, "output_size"))
    return wrap(lib.tm_col2im(ptr(input, "input"), size,
                              _opts(kernel_size, dilation, padding, stride)))
