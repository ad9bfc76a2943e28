"""nn.Unfold and nn.Fold: the modules of functional.unfold / fold."""
from . import functional as F
from .module import Module


class Unfold(Module):
    """Sliding blocks as columns (F.unfold).  Mirrors torch.nn.Unfold."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding,
                        self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns summed into an image (F.fold).  Mirrors torch.nn.Fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0,
                 stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size,
                      self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, "
                f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
