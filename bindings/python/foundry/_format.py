"""PyTorch-style repr: tensor([[1., 2.], [3., 4.]], dtype=...)."""
import numpy as np

from . import _c

_DEFAULT = {_c.float32, _c.int64, _c.bool_}
_EDGE = 3          # elements shown at each end of a summarised dim
_THRESHOLD = 1000  # summarise above this many elements


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda x: _special(x) or ""
    amax = np.abs(finite).max()
    amin = np.abs(finite[finite != 0]).min() if (finite != 0).any() else 0.0
    integral = np.all(finite == np.round(finite))
    if integral and amax < 1e8:
        fmt = lambda x: f"{x:.0f}."
    elif amax >= 1e8 or (amin and amin < 1e-4) or (amin and amax / amin >
                                                     1e3 and amax > 1e3):
        fmt = lambda x: f"{x:.4e}"
    else:
        fmt = lambda x: f"{x:.4f}"
    return lambda x: _special(x) or fmt(x)


def _special(x):
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return None


def _formatter(arr):
    if arr.dtype == np.bool_:
        return lambda x: "True" if x else "False"
    if arr.dtype.kind in "iu":
        return lambda x: str(int(x))
    return _float_formatter(arr.astype(np.float64).ravel())


def _summary_view(arr, summarise):
    """The elements shown (with summarised dims cut to their edges)."""
    if not summarise:
        return arr
    for d in range(arr.ndim):
        if arr.shape[d] > 2 * _EDGE:
            idx = list(range(_EDGE)) + list(range(arr.shape[d] - _EDGE,
                                                  arr.shape[d]))
            arr = np.take(arr, idx, axis=d)
    return arr


def _render(arr, fmt, width, indent, summarise):
    if arr.ndim == 0:
        return fmt(arr.item()).rjust(width)
    n = arr.shape[0]
    cut = summarise and n > 2 * _EDGE
    rows = list(range(_EDGE)) + [None] + list(range(n - _EDGE, n)) if cut \
        else list(range(n))
    if arr.ndim == 1:
        parts = ["..." if i is None else fmt(arr[i].item()).rjust(width)
                 for i in rows]
        return "[" + ", ".join(parts) + "]"
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    parts = ["..." if i is None else
             _render(arr[i], fmt, width, indent + 1, summarise)
             for i in rows]
    return "[" + sep.join(parts) + "]"


def tensor_repr(t):
    dt = t.dtype
    if dt.is_quantized:  # blocks, not values: the shape and the size
        extra = "" if t.is_cpu else f", device='{t.device}'"
        dims = ", ".join(str(d) for d in t.shape)
        return f"tensor({dt.name}[{dims}], {t.nbytes} bytes{extra})"
    src = t.detach().cpu()
    if dt.np is None:
        src = src.float()
    arr = np.asarray(src)
    summarise = arr.size > _THRESHOLD
    # widths and number style come from the displayed elements only
    shown = _summary_view(arr, summarise)
    fmt = _formatter(shown)
    width = max((len(fmt(x)) for x in shown.ravel()), default=0)
    # torch's order: device, size, dtype, then autograd
    extras = [] if t.is_cpu else [f"device='{t.device}'"]
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            extras.append(f"size={tuple(arr.shape)}")
    else:
        body = _render(arr, fmt, width, 7, summarise)
    if dt not in _DEFAULT or (arr.size == 0 and dt is not _c.float32):
        extras.append(f"dtype={dt!r}")
    fn = t.grad_fn
    if fn is not None:
        extras.append(f"grad_fn=<{fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"
