"""The losses of foundry.nn.functional, with PyTorch's exact signatures
(positional order, legacy size_average / reduce, weight, pos_weight).

Without weights each loss is one fused C call (include/foundry/
nn_functional.h).  Class weights (nll_loss, cross_entropy), element
weights (binary_cross_entropy_with_logits, mse_loss, l1_loss,
huber_loss) and pos_weight are composed of library ops over the C
per-element losses, the way PyTorch's own Python composes the weighted
mse / l1 / huber losses, so they record for autograd and run on every
device.  As in PyTorch, class weights are not differentiated (the
weight enters detached).
"""
import operator
import warnings

from .._base import ptr, wrap
from .._c import ffi, lib

_REDUCTIONS = {"mean": lib.TM_REDUCTION_MEAN, "sum": lib.TM_REDUCTION_SUM,
               "none": lib.TM_REDUCTION_NONE}


def _reduction(r):
    try:
        return _REDUCTIONS[r]
    except (KeyError, TypeError):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not "
                         f"{r!r}") from None


def legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average / reduce: when either is given
    it decides (reduce False: 'none'; else size_average False: 'sum';
    else 'mean'), with PyTorch's deprecation warning."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please "
                  "use reduction='mean' / 'sum' / 'none' instead",
                  UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss, reduction, divisor=None):
    """'none' -> loss; 'sum' -> its sum; 'mean' -> sum / divisor (a 0-d
    tensor), or the plain mean when divisor is None."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if divisor is None else loss.sum() / divisor


def _class_weight(weight, input, fn):
    ptr(weight, f"{fn}: weight")
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    if weight.ndim != 1 or weight.shape[0] != c:
        raise ValueError(f"{fn}: weight must be 1-D with one entry per "
                         f"class ({c}), got shape {list(weight.shape)}")
    if not weight.is_floating_point():
        raise TypeError(f"{fn}: weight must be a float tensor, not "
                        f"{weight.dtype}")
    return weight.detach().to(input.dtype)


def _weighted_nll(logp, target, weight, ignore_index, fn):
    """(per-sample -w[t] logp[t], per-sample w[t]) with 0 where target ==
    ignore_index; logp [N, C, d...] (or [C]), target [N, d...]."""
    ptr(target, f"{fn}: target")
    if logp.ndim == 1:
        lp, tg = logp.unsqueeze(0), target.unsqueeze(0)
    else:
        lp, tg = logp, target
    if tg.is_floating_point() or tg.dtype.name == "bool":
        raise TypeError(f"{fn}: target must hold class indices (an "
                        f"integer tensor), not {target.dtype}")
    want = [lp.shape[0]] + list(lp.shape[2:])
    if list(tg.shape) != want:
        raise ValueError(f"{fn}: target shape {list(target.shape)} does not "
                         f"match input shape {list(logp.shape)} (expected "
                         f"{want if logp.ndim > 1 else []})")
    valid = tg != ignore_index
    safe = tg.masked_fill(valid.logical_not(), 0).long()
    c = lp.shape[1]
    # gather checks the upper bound; a negative target would count from
    # the end there, so it is refused here (as PyTorch refuses it)
    if safe.numel() and bool((safe < 0).any()):
        raise IndexError(f"{fn}: target {int(safe.amin())} is out of "
                         f"bounds for {c} classes")
    picked = lp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape) * \
        valid.to(weight.dtype)
    loss = -(picked * w)
    if logp.ndim == 1:
        loss, w = loss.squeeze(0), w.squeeze(0)
    return loss, w


def nll_loss(input, target, weight=None, size_average=None,
             ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of log-probabilities: -weight[t] *
    input[i, t] with t = target[i].

    input [N, C] or [N, C, d1, ...] (classes on dim 1) or [C]; target
    class indices [N, d1, ...] (ignore_index is skipped).  weight: None or
    a float tensor [C] of class weights.  reduction 'mean' divides by the
    summed weights of the non-ignored targets (their count without
    weight; all ignored gives NaN), 'sum' or 'none'.  size_average /
    reduce are PyTorch's deprecated spellings of reduction.  Mirrors
    torch.nn.functional.nll_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    r = _reduction(reduction)
    ignore_index = operator.index(ignore_index)
    if weight is None:
        return wrap(lib.tm_nll_loss(ptr(input, "input"),
                                    ptr(target, "target"), r, ignore_index))
    ptr(input, "input")
    w = _class_weight(weight, input, "nll_loss")
    loss, wt = _weighted_nll(input, target, w, ignore_index, "nll_loss")
    return _reduce(loss, reduction, wt.sum())


def cross_entropy(input, target, weight=None, size_average=None,
                  ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy loss of unnormalised logits, fused with log_softmax.

    input [N, C] or [N, C, d1, ...] (classes on dim 1) or [C]; target class
    indices [N, d1, ...] (int64 / int32; ignore_index is skipped) or class
    probabilities of input's shape.  weight: None or a float tensor [C]
    of class weights (as PyTorch: with indices, 'mean' divides by the
    summed weights of the non-ignored targets; with probabilities, by the
    number of samples).  label_smoothing in [0, 1] mixes the target with
    the uniform distribution.  reduction 'mean', 'sum' or 'none';
    size_average / reduce are PyTorch's deprecated spellings of it.
    Mirrors torch.nn.functional.cross_entropy."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    r = _reduction(reduction)
    ignore_index = operator.index(ignore_index)
    eps = float(label_smoothing)
    if weight is None:
        o = lib.tm_cross_entropy_defaults()
        o.reduction = r
        o.ignore_index = ignore_index
        o.label_smoothing = eps
        return wrap(lib.tm_cross_entropy(
            ptr(input, "input"), ptr(target, "target"),
            ffi.new("tm_cross_entropy_opts *", o)))
    ptr(input, "input")
    ptr(target, "target")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in "
                         f"[0, 1], got {eps}")
    w = _class_weight(weight, input, "cross_entropy")
    cdim = 0 if input.ndim == 1 else 1
    logp = input.log_softmax(cdim)
    c = input.shape[cdim]
    wshape = [c] + [1] * (input.ndim - cdim - 1)
    wb = w.reshape(wshape)  # broadcasts over the class dim
    if target.is_floating_point():  # class probabilities
        if target.shape != input.shape:
            raise ValueError(f"cross_entropy: probability target shape "
                             f"{list(target.shape)} must match input shape "
                             f"{list(input.shape)}")
        y = target if eps == 0 else target * (1 - eps) + eps / c
        loss = -(logp * y * wb).sum(cdim)
        return _reduce(loss, reduction)
    loss, wt = _weighted_nll(logp, target, w, ignore_index, "cross_entropy")
    if eps > 0:
        valid = (target != ignore_index).to(w.dtype)
        smooth = -(logp * wb).sum(cdim) * valid
        loss = loss * (1 - eps) + smooth * (eps / c)
    return _reduce(loss, reduction, wt.sum())


def binary_cross_entropy_with_logits(input, target, weight=None,
                                     size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """weight * [(1 - y) x + (1 + (pos_weight - 1) y) softplus(-x)],
    which is max(x, 0) - x y + log1p(exp(-|x|)) without weights: stable
    for any x.

    input and target of one shape.  weight (broadcast to it) rescales
    each element's loss; pos_weight weighs the positive term, broadcast
    over the last dim (one weight per class, as PyTorch).  reduction:
    'mean' (default, over the elements), 'sum' or 'none'; size_average /
    reduce are PyTorch's deprecated spellings of it.  Mirrors
    torch.nn.functional.binary_cross_entropy_with_logits."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    r = _reduction(reduction)
    x, y = ptr(input, "input"), ptr(target, "target")
    if weight is None and pos_weight is None:
        return wrap(lib.tm_binary_cross_entropy_with_logits(x, y, r))
    if pos_weight is None:
        loss = wrap(lib.tm_binary_cross_entropy_with_logits(
            x, y, lib.TM_REDUCTION_NONE))
    else:
        ptr(pos_weight, "binary_cross_entropy_with_logits: pos_weight")
        # softplus(-x) is the loss of x against target 1, whose kernel is
        # exact and stable (and its gradient too, also at x == 0)
        ones = input.new_ones(input.shape)  # held while C reads it
        sp = wrap(lib.tm_binary_cross_entropy_with_logits(
            x, ones._p, lib.TM_REDUCTION_NONE))
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * sp
    if weight is not None:
        ptr(weight, "binary_cross_entropy_with_logits: weight")
        loss = loss * weight
    return _reduce(loss, reduction)


def _weighted_pointwise(fn, loss, weight, input, reduction, mean_by_weight):
    if list(weight.shape) != list(input.shape):
        raise ValueError(f"{fn}: weight shape {list(weight.shape)} must "
                         f"match input shape {list(input.shape)}")
    loss = loss * weight
    return _reduce(loss, reduction, weight.sum() if mean_by_weight else None)


def mse_loss(input, target, size_average=None, reduce=None,
             reduction="mean", weight=None):
    """(input - target)^2, broadcast.  reduction: 'mean' (default), 'sum'
    or 'none' (the per-element losses); size_average / reduce are
    PyTorch's deprecated spellings of it.  weight (input's shape)
    multiplies each loss, and 'mean' then divides by its sum, as PyTorch.
    Mirrors torch.nn.functional.mse_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    r = _reduction(reduction)
    x, y = ptr(input, "input"), ptr(target, "target")
    if weight is None:
        return wrap(lib.tm_mse_loss(x, y, r))
    ptr(weight, "mse_loss: weight")
    return _weighted_pointwise("mse_loss", wrap(lib.tm_mse_loss(
        x, y, lib.TM_REDUCTION_NONE)), weight, input, reduction, True)


def l1_loss(input, target, size_average=None, reduce=None,
            reduction="mean", weight=None):
    """|input - target|, broadcast.  reduction: 'mean' (default), 'sum' or
    'none' (the per-element losses); size_average / reduce are PyTorch's
    deprecated spellings of it.  weight (input's shape) multiplies each
    loss, and 'mean' then divides by its sum, as PyTorch.  Mirrors
    torch.nn.functional.l1_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    r = _reduction(reduction)
    x, y = ptr(input, "input"), ptr(target, "target")
    if weight is None:
        return wrap(lib.tm_l1_loss(x, y, r))
    ptr(weight, "l1_loss: weight")
    return _weighted_pointwise("l1_loss", wrap(lib.tm_l1_loss(
        x, y, lib.TM_REDUCTION_NONE)), weight, input, reduction, True)


def smooth_l1_loss(input, target, size_average=None, reduce=None,
                   reduction="mean", beta=1.0):
    """0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta
    (beta 0: l1).  reduction: 'mean' (default), 'sum' or 'none' (the
    per-element losses); size_average / reduce are PyTorch's deprecated
    spellings of it.  Mirrors torch.nn.functional.smooth_l1_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return wrap(lib.tm_smooth_l1_loss(ptr(input, "input"),
                                      ptr(target, "target"),
                                      _reduction(reduction), float(beta)))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where d = |input - target| < delta, else delta (d - 0.5
    delta).  reduction: 'mean' (default), 'sum' or 'none' (the
    per-element losses).  weight (input's shape) multiplies each loss
    ('mean' is then the plain mean of the products, as PyTorch).  Mirrors
    torch.nn.functional.huber_loss."""
    r = _reduction(reduction)
    x, y = ptr(input, "input"), ptr(target, "target")
    if weight is None:
        return wrap(lib.tm_huber_loss(x, y, r, float(delta)))
    ptr(weight, "huber_loss: weight")
    return _weighted_pointwise("huber_loss", wrap(lib.tm_huber_loss(
        x, y, lib.TM_REDUCTION_NONE, float(delta))), weight, input,
        reduction, False)
