"""Resizing modules: nn.Upsample (and its nearest / bilinear 2-D forms)
and the padding modules (nn.ReflectionPad1d ... nn.ConstantPad3d),
mirroring PyTorch's constructors; re-exported by layers.py and
foundry.nn."""
from . import functional as F
from .module import Module


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest",
                 align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.size, self.mode = size, mode
        self.scale_factor = (tuple(float(f) for f in scale_factor)
                             if isinstance(scale_factor, (tuple, list))
                             else float(scale_factor) if scale_factor
                             is not None else None)
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners,
                             recompute_scale_factor=self
                             .recompute_scale_factor)

    def extra_repr(self):
        what = (f"scale_factor={self.scale_factor!r}"
                if self.scale_factor is not None else f"size={self.size!r}")
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear",
                         align_corners=True)


class _PadNd(Module):
    _n, _mode = 1, "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        if isinstance(padding, (tuple, list)):
            if len(padding) != 2 * self._n:
                raise ValueError(f"{type(self).__name__}: padding must be "
                                 f"an int or {2 * self._n} ints, not "
                                 f"{tuple(padding)!r}")
            self.padding = tuple(int(p) for p in padding)
        else:
            self.padding = (int(padding),) * (2 * self._n)
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(name, n, mode, constant=False):
    if constant:
        def init(self, padding, value):
            _PadNd.__init__(self, padding, float(value))
    elif mode == "constant":
        def init(self, padding):
            _PadNd.__init__(self, padding, 0.0)
    else:
        def init(self, padding):
            _PadNd.__init__(self, padding)
    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "__init__": init,
                                  "__module__": __name__})


ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect")
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect")
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate")
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular")
CircularPad3d = _pad_class("CircularPad3d", 3, "circular")
ZeroPad1d = _pad_class("ZeroPad1d", 1, "constant")
ZeroPad2d = _pad_class("ZeroPad2d", 2, "constant")
ZeroPad3d = _pad_class("ZeroPad3d", 3, "constant")
ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant", constant=True)
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant", constant=True)
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant", constant=True)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "CircularPad1d", "CircularPad2d", "CircularPad3d", "ZeroPad1d",
           "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d"]
