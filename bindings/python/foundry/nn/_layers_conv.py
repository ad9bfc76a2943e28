"""Convolution modules (re-exported by foundry.nn): Conv1d, Conv2d,
Conv3d and ConvTranspose1d / 2d / 3d, with PyTorch's arguments,
attributes, initialisation (kaiming_uniform a=sqrt(5) weights, bias
U(-1/sqrt(fan_in), 1/sqrt(fan_in))) and repr."""
import math
import operator

from .. import _c
from .._base import to_dtype
from .._create import empty
from . import functional as F
from . import init
from .module import Module, Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, nd, what):
    if isinstance(v, (tuple, list)):
        if len(v) != nd:
            raise ValueError(f"{what} must be an int or a tuple of {nd} "
                             f"ints, not {v!r}")
        return tuple(operator.index(e) for e in v)
    return (operator.index(v),) * nd


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride,
                 padding, dilation, output_padding, groups, bias,
                 padding_mode, device, dtype):
        super().__init__()
        nd = self._nd
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of "
                             f"{set(_PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size")
        self.stride = _ntuple(stride, nd, "stride")
        self.dilation = _ntuple(dilation, nd, "dilation")
        self.output_padding = _ntuple(output_padding, nd, "output_padding")
        self.groups, self.padding_mode = groups, padding_mode
        self.transposed = self._transposed
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, "
                                 f"should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for "
                                 "strided convolutions")
            self.padding = padding
            # (before, after) per dim, last dim first, as F.pad wants
            rev = [0] * (2 * nd)
            if padding == "same":
                for i, (d, k) in enumerate(zip(self.dilation,
                                               self.kernel_size)):
                    total = d * (k - 1)
                    j = 2 * (nd - 1 - i)
                    rev[j], rev[j + 1] = total // 2, total - total // 2
            self._reversed_padding_repeated_twice = rev
        else:
            self.padding = _ntuple(padding, nd, "padding")
            self._reversed_padding_repeated_twice = [
                p for p in reversed(self.padding) for _ in range(2)]
        dt = _c.float32 if dtype is None else to_dtype(dtype)
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(*shape, dtype=dt))
        self.bias = Parameter(empty(out_channels, dtype=dt)) if bias \
            else None
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            b = init._default_bound(fan_in)
            init.uniform_(self.bias, -b, b)

    def extra_repr(self):
        nd = self._nd
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size="
             f"{self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride,
                         padding, dilation, 0, groups, bias, padding_mode,
                         device, dtype)

    def forward(self, input):
        conv = getattr(F, f"conv{self._nd}d")
        if self.padding_mode != "zeros":
            # the pad mode pads first, then an unpadded convolution (as
            # torch); F.pad raises NotImplementedError for a mode it lacks
            return conv(F.pad(input, self._reversed_padding_repeated_twice,
                              mode=self.padding_mode),
                        self.weight, self.bias, self.stride, 0,
                        self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride,
                    self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over [N, C, L] (or [C, L]).  Mirrors
    torch.nn.Conv1d."""
    _nd = 1


class Conv2d(_Conv):
    """2-D convolution over [N, C, H, W] (or [C, H, W]).  Mirrors
    torch.nn.Conv2d."""
    _nd = 2


class Conv3d(_Conv):
    """3-D convolution over [N, C, D, H, W] (or unbatched).  Mirrors
    torch.nn.Conv3d."""
    _nd = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        # a string padding is accepted here and refused by forward
        # (TypeError), as torch
        super().__init__(in_channels, out_channels, kernel_size, stride,
                         padding, dilation, output_padding, groups, bias,
                         padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """output_padding for the requested output_size (torch's rule:
        output_size may include the batch and channel dims)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        non_spatial = 2 if input.dim() == nd + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, "
                             f"output_size must have {nd} or "
                             f"{non_spatial + nd} elements (got "
                             f"{len(output_size)})")
        lo = [(input.shape[d + non_spatial] - 1) * self.stride[d] -
              2 * self.padding[d] +
              self.dilation[d] * (self.kernel_size[d] - 1) + 1
              for d in range(nd)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(nd)]
        for d in range(nd):
            if not lo[d] <= output_size[d] <= hi[d]:
                raise ValueError(f"requested an output size of "
                                 f"{output_size}, but valid sizes range "
                                 f"from {lo} to {hi} (for an input of "
                                 f"{tuple(input.shape[non_spatial:])})")
        return tuple(output_size[d] - lo[d] for d in range(nd))

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return getattr(F, f"conv_transpose{self._nd}d")(
            input, self.weight, self.bias, self.stride, self.padding, op,
            self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution (weight [C_in, C_out / groups, k]).
    Mirrors torch.nn.ConvTranspose1d."""
    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution.  Mirrors torch.nn.ConvTranspose2d."""
    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution.  Mirrors torch.nn.ConvTranspose3d."""
    _nd = 3
