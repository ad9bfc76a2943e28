"""Loss and distance modules over foundry.nn.functional (PyTorch's names,
arguments and defaults; size_average / reduce map as in PyTorch)."""
from . import functional as F
from ._functional_loss2 import _legacy, _red
from .module import Module


class _LegacyLoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean",
                 batchmean=False):
        super().__init__()
        reduction = _legacy(size_average, reduce, reduction)
        _red(reduction, batchmean)
        self.reduction = reduction


class BCELoss(_LegacyLoss):
    """Mirrors torch.nn.BCELoss (weight is kept as a plain attribute, not a
    buffer)."""

    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.weight = weight

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight,
                                      reduction=self.reduction)


class KLDivLoss(_LegacyLoss):
    """Mirrors torch.nn.KLDivLoss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean",
                 log_target=False):
        super().__init__(size_average, reduce, reduction, batchmean=True)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction,
                        log_target=self.log_target)


class TripletMarginLoss(_LegacyLoss):
    """Mirrors torch.nn.TripletMarginLoss."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False,
                 size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if not margin > 0:
            raise ValueError(f"margin must be greater than 0, got {margin}")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative,
                                     margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap,
                                     reduction=self.reduction)


class CosineSimilarity(Module):
    """Mirrors torch.nn.CosineSimilarity."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """Mirrors torch.nn.PairwiseDistance."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class _MarginLoss(_LegacyLoss):
    def __init__(self, margin, size_average, reduce, reduction):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    """Mirrors torch.nn.MarginRankingLoss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """Mirrors torch.nn.HingeEmbeddingLoss."""

    def __init__(self, margin=1.0, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin,
                                      reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """Mirrors torch.nn.CosineEmbeddingLoss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin,
                                       reduction=self.reduction)


class SoftMarginLoss(_LegacyLoss):
    """Mirrors torch.nn.SoftMarginLoss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_LegacyLoss):
    """Mirrors torch.nn.PoissonNLLLoss."""

    def __init__(self, log_input=True, full=False, size_average=None,
                 eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input,
                                  self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(Module):
    """Mirrors torch.nn.GaussianNLLLoss."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__()
        _red(reduction)
        self.full, self.eps, self.reduction = full, eps, reduction

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full,
                                   eps=self.eps, reduction=self.reduction)


__all__ = ["BCELoss", "KLDivLoss", "TripletMarginLoss", "CosineSimilarity",
           "PairwiseDistance", "MarginRankingLoss", "HingeEmbeddingLoss",
           "CosineEmbeddingLoss", "SoftMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss"]
