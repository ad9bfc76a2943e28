"""Pooling modules (nn.MaxPool1d ... nn.AdaptiveMaxPool3d), mirroring
PyTorch's constructors; re-exported by layers.py and foundry.nn."""
from . import functional as F
from .module import Module


class _MaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        fn = getattr(F, f"max_pool{self._n}d")
        return fn(input, self.kernel_size, self.stride, self.padding,
                  self.dilation, ceil_mode=self.ceil_mode,
                  return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    _n = 1


class MaxPool2d(_MaxPoolNd):
    _n = 2


class MaxPool3d(_MaxPoolNd):
    _n = 3


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride,
                            self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class _AvgPoolNd(AvgPool1d):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode,
                         count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input):
        fn = getattr(F, f"avg_pool{self._n}d")
        return fn(input, self.kernel_size, self.stride, self.padding,
                  self.ceil_mode, self.count_include_pad,
                  self.divisor_override)


class AvgPool2d(_AvgPoolNd):
    _n = 2


class AvgPool3d(_AvgPoolNd):
    _n = 3


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input, indices, output_size=None):
        fn = getattr(F, f"max_unpool{self._n}d")
        return fn(input, indices, self.kernel_size, self.stride,
                  self.padding, output_size)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class MaxUnpool1d(_MaxUnpoolNd):
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _n = 3


class _AdaptiveAvgPoolNd(Module):
    _n = 2

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return getattr(F, f"adaptive_avg_pool{self._n}d")(input,
                                                          self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _n = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _n = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _n = 3


class _AdaptiveMaxPoolNd(_AdaptiveAvgPoolNd):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return getattr(F, f"adaptive_max_pool{self._n}d")(
            input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _n = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _n = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _n = 3


__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
           "AvgPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]
