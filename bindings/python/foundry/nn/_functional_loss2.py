"""foundry.nn.functional: normalize, binary_cross_entropy, kl_div,
cosine_similarity, pairwise_distance, triplet_margin_loss (PyTorch's names,
argument order and keywords).

The legacy size_average / reduce arguments are mapped to a reduction as
PyTorch maps them (either given: reduce False is 'none', else
size_average False is 'sum', else 'mean'; None counts as True), with
PyTorch's deprecation warning.
"""
import operator
import warnings

from .._base import ptr, wrap
from .._c import ffi, lib
from .._exports import export

_REDUCTIONS = {"mean": lib.TM_REDUCTION_MEAN, "sum": lib.TM_REDUCTION_SUM,
               "none": lib.TM_REDUCTION_NONE}


def _legacy(size_average, reduce, reduction, stacklevel=4):
    if size_average is None and reduce is None:
        return reduction
    sa = True if size_average is None else bool(size_average)
    rd = True if reduce is None else bool(reduce)
    r = "none" if not rd else ("mean" if sa else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please "
                  f"use reduction='{r}' instead.", UserWarning,
                  stacklevel=stacklevel)
    return r


def _red(reduction, batchmean=False):
    if batchmean and reduction == "batchmean":
        return lib.TM_REDUCTION_BATCHMEAN
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        allowed = "'mean', 'batchmean', 'sum' or 'none'" if batchmean \
            else "'mean', 'sum' or 'none'"
        raise ValueError(f"reduction must be {allowed}, not "
                         f"{reduction!r}") from None


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p over dim, eps).  Mirrors
    torch.nn.functional.normalize (without out=, as every Foundry op)."""
    return wrap(lib.tm_normalize(ptr(input, "input"), float(p),
                                 operator.index(dim), float(eps)))


def binary_cross_entropy(input, target, weight=None, size_average=None,
                         reduce=None, reduction="mean"):
    """-w (t log(x) + (1 - t) log(1 - x)) of probabilities x in [0, 1]
    (each log clamped at -100); target of input's shape; weight broadcast
    to it.  Mirrors torch.nn.functional.binary_cross_entropy."""
    reduction = _legacy(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that "
                         f"is different to the input size "
                         f"({list(input.shape)}) is deprecated. Please "
                         f"ensure they have the same size.")
    w = ffi.NULL if weight is None else ptr(weight, "weight")
    return wrap(lib.tm_binary_cross_entropy(
        ptr(input, "input"), ptr(target, "target"), w, _red(reduction)))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    """target * (log(target) - input) (input log-probabilities; with
    log_target, exp(target) * (target - input)), broadcast.  reduction:
    'mean' (over elements, with PyTorch's warning), 'batchmean' (sum /
    batch size), 'sum' or 'none'.  Mirrors torch.nn.functional.kl_div."""
    reduction = _legacy(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the "
                      "batch size and the support size.'batchmean' divides "
                      "only by the batch size, and aligns with the KL div "
                      "math definition.'mean' will be changed to behave the "
                      "same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    return wrap(lib.tm_kl_div(ptr(input, "input"), ptr(target, "target"),
                              _red(reduction, True), bool(log_target)))


@export
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over dim, x1
    and x2 broadcast.  Mirrors torch.nn.functional.cosine_similarity."""
    return wrap(lib.tm_cosine_similarity(ptr(x1, "x1"), ptr(x2, "x2"),
                                         operator.index(dim), float(eps)))


@export
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (broadcast).  Mirrors
    torch.nn.functional.pairwise_distance."""
    return wrap(lib.tm_pairwise_distance(ptr(x1, "x1"), ptr(x2, "x2"),
                                         float(p), float(eps),
                                         bool(keepdim)))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2,
                        eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0) with d
    the pairwise distance; swap also tries d(positive, negative).  Mirrors
    torch.nn.functional.triplet_margin_loss."""
    reduction = _legacy(size_average, reduce, reduction)
    if not margin > 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return wrap(lib.tm_triplet_margin_loss(
        ptr(anchor, "anchor"), ptr(positive, "positive"),
        ptr(negative, "negative"), float(margin), float(p), float(eps),
        bool(swap), _red(reduction)))


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), broadcast (the three
    of one ndim).  Mirrors torch.nn.functional.margin_ranking_loss."""
    reduction = _legacy(size_average, reduce, reduction)
    return wrap(lib.tm_margin_ranking_loss(
        ptr(input1, "input1"), ptr(input2, "input2"), ptr(target, "target"),
        float(margin), _red(reduction)))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None,
                         reduce=None, reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1.
    Mirrors torch.nn.functional.hinge_embedding_loss."""
    reduction = _legacy(size_average, reduce, reduction)
    return wrap(lib.tm_hinge_embedding_loss(
        ptr(input, "input"), ptr(target, "target"), float(margin),
        _red(reduction)))


def soft_margin_loss(input, target, size_average=None, reduce=None,
                     reduction="mean"):
    """log(1 + exp(-target * input)), finite for any input (PyTorch's
    overflows to inf past exp's range).  Mirrors
    torch.nn.functional.soft_margin_loss."""
    reduction = _legacy(size_average, reduce, reduction)
    return wrap(lib.tm_soft_margin_loss(ptr(input, "input"),
                                        ptr(target, "target"),
                                        _red(reduction)))


def cosine_embedding_loss(input1, input2, target, margin=0,
                          size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin)
    where target == -1; inputs [N, D] with target [N], or [D] with a 0-d
    target.  Mirrors torch.nn.functional.cosine_embedding_loss."""
    reduction = _legacy(size_average, reduce, reduction)
    return wrap(lib.tm_cosine_embedding_loss(
        ptr(input1, "input1"), ptr(input2, "input2"), ptr(target, "target"),
        float(margin), _red(reduction)))


def poisson_nll_loss(input, target, log_input=True, full=False,
                     size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target *
    log(input + eps); full adds Stirling's term where target > 1.  Mirrors
    torch.nn.functional.poisson_nll_loss."""
    reduction = _legacy(size_average, reduce, reduction)
    return wrap(lib.tm_poisson_nll_loss(
        ptr(input, "input"), ptr(target, "target"), bool(log_input),
        bool(full), float(eps), _red(reduction)))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6,
                      reduction="mean"):
    """(log(v) + (input - target)^2 / v) / 2 with v = max(var, eps) (the
    clamp left out of the gradient); var a tensor (input's shape, or
    input's without the last dim, or with one dim of size 1) or a number.
    full adds log(2 pi) / 2.  Mirrors torch.nn.functional.gaussian_nll_loss."""
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(tuple(input.shape), float(var))
    return wrap(lib.tm_gaussian_nll_loss(
        ptr(input, "input"), ptr(target, "target"), ptr(var, "var"),
        bool(full), float(eps), _red(reduction)))


__all__ = ["normalize", "binary_cross_entropy", "kl_div",
           "cosine_similarity", "pairwise_distance", "triplet_margin_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss"]
