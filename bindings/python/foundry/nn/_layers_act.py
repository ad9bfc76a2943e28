"""Activation modules over foundry.nn.functional's activations (PyTorch's
names, arguments and defaults)."""
from .. import _c
from .._base import to_dtype
from .._create import full
from . import functional as F
from .layers import _Activation
from .module import Module, Parameter


class ELU(Module):
    """Mirrors torch.nn.ELU."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, bool(inplace)

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace
                                        else "")


class CELU(ELU):
    """Mirrors torch.nn.CELU."""

    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)


class SELU(_Activation):
    """Mirrors torch.nn.SELU."""

    def forward(self, x):
        return F.selu(x, self.inplace)


class Hardtanh(Module):
    """Mirrors torch.nn.Hardtanh (min_value / max_value are its deprecated
    spellings of min_val / max_val)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False,
                 min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        if min_val > max_val:
            raise ValueError(f"min_val ({min_val}) cannot be greater than "
                             f"max_val ({max_val})")
        self.min_val, self.max_val = min_val, max_val
        self.inplace = bool(inplace)

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class ReLU6(_Activation):
    """Mirrors torch.nn.ReLU6."""

    def forward(self, x):
        return F.relu6(x, self.inplace)


class Hardsigmoid(_Activation):
    """Mirrors torch.nn.Hardsigmoid."""

    def forward(self, x):
        return F.hardsigmoid(x, self.inplace)


class Hardswish(_Activation):
    """Mirrors torch.nn.Hardswish."""

    def forward(self, x):
        return F.hardswish(x, self.inplace)


class Mish(_Activation):
    """Mirrors torch.nn.Mish."""

    def forward(self, x):
        return F.mish(x, self.inplace)


class Softsign(Module):
    """Mirrors torch.nn.Softsign."""

    def forward(self, x):
        return F.softsign(x)


class LogSigmoid(Module):
    """Mirrors torch.nn.LogSigmoid."""

    def forward(self, x):
        return F.logsigmoid(x)


class Tanhshrink(Module):
    """Mirrors torch.nn.Tanhshrink."""

    def forward(self, x):
        return F.tanhshrink(x)


class Softmin(Module):
    """Mirrors torch.nn.Softmin."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmin(x, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class GLU(Module):
    """Mirrors torch.nn.GLU."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """A learnable slope per channel (num_parameters 1 or C), each starting
    at init.  Mirrors torch.nn.PReLU."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        dt = _c.float32 if dtype is None else to_dtype(dtype)
        kw = {} if device is None else {"device": device}
        self.weight = Parameter(full((num_parameters,), float(init),
                                     dtype=dt, **kw))

    def reset_parameters(self):
        from . import init as _init
        _init.constant_(self.weight, self.init)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Random slopes in [lower, upper) while training, their mean in eval
    mode.  Mirrors torch.nn.RReLU."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, bool(inplace)

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training,
                       self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else "")


class Threshold(Module):
    """Mirrors torch.nn.Threshold."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value = threshold, value
        self.inplace = bool(inplace)

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class Softshrink(Module):
    """Mirrors torch.nn.Softshrink."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return F.softshrink(x, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """Mirrors torch.nn.Hardshrink."""

    def forward(self, x):
        return F.hardshrink(x, self.lambd)


__all__ = ["ELU", "CELU", "SELU", "Hardtanh", "ReLU6", "Hardsigmoid",
           "Hardswish", "Mish", "Softsign", "LogSigmoid", "Tanhshrink",
           "Softmin", "GLU", "PReLU", "RReLU", "Threshold", "Softshrink",
           "Hardshrink"]
