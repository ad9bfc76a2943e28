"""The loss modules, with PyTorch's constructor arguments and order
(weight, size_average, ignore_index, reduce, reduction, ...).  weight
and pos_weight are buffers, as in PyTorch (they move with Module.to and
appear in state_dict)."""
from . import _functional_losses as L
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        reduction = L.legacy_reduction(size_average, reduce, reduction)
        L._reduction(reduction)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """F.cross_entropy as a module.  Mirrors torch.nn.CrossEntropyLoss."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100,
                 reduce=None, reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, \
            label_smoothing

    def forward(self, input, target):
        return L.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index,
                               reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """F.nll_loss as a module.  Mirrors torch.nn.NLLLoss."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100,
                 reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return L.nll_loss(input, target, weight=self.weight,
                          ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    """F.mse_loss as a module.  Mirrors torch.nn.MSELoss."""

    def forward(self, input, target):
        return L.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """F.l1_loss as a module.  Mirrors torch.nn.L1Loss."""

    def forward(self, input, target):
        return L.l1_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits as a module.  Mirrors
    torch.nn.BCEWithLogitsLoss."""

    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return L.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction,
            pos_weight=self.pos_weight)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss as a module.  Mirrors torch.nn.SmoothL1Loss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean",
                 beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return L.smooth_l1_loss(input, target, reduction=self.reduction,
                                beta=self.beta)


class HuberLoss(_Loss):
    """F.huber_loss as a module.  Mirrors torch.nn.HuberLoss."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return L.huber_loss(input, target, reduction=self.reduction,
                            delta=self.delta)
