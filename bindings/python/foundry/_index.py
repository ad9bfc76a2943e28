"""t[key] and t[key] = value with numpy's rules, and the indexing ops
(gather, scatter, index_select, masked_fill): the _Indexing methods of
Tensor.

Basic indices (ints, slices with positive steps, None, Ellipsis) give views.
Advanced indices (integer tensors / lists / arrays, bool masks) give copies;
several of them broadcast together, and their result dims go where numpy
puts them (in place when the advanced indices are adjacent, else first).
Everything is built from differentiable library ops (select, slice,
permute, index_select, scatter), so indexing records for autograd.
Index tensors and values made from Python data, and index tensors on
another device, are put on the indexed tensor's device (as torch accepts
CPU indices for a tensor on an accelerator).
"""
import numbers
import operator

import numpy as np

from . import _c, _tensor
from ._base import SCALAR, ptr, wrap
from ._c import check, lib
from ._exports import export

_END = 2 ** 63 - 1


def _as_index_tensor(x, dev):
    """Lists / arrays / tensors used as advanced indices -> Tensor (a new
    one on device dev)."""
    from ._create import tensor
    if isinstance(x, _tensor.Tensor):
        return x
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "biu":
        if arr.size == 0:
            arr = arr.astype(np.int64)
        else:
            raise IndexError(f"only integers, slices, None, Ellipsis, "
                             f"bool masks and integer tensors are valid "
                             f"indices (got {type(x).__name__} of "
                             f"{arr.dtype})")
    return tensor(arr if arr.dtype.kind == "b" else arr.astype(np.int64),
                  device=dev)


def _sequence_as_tuple(key):
    """Whether a key that is not a tuple stands for one, by PyTorch's (and
    old numpy's) rule: a list (not a tensor or an array) shorter than 32
    holding a tensor, a sequence, a slice, None or Ellipsis.  So x[[0, 1]]
    picks rows 0 and 1, while x[[[0, 1]]] is x[[0, 1]] and x[[0, 1], [1,
    2]] (a list of two lists) is x[[0, 1], [1, 2]]."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    return any(k is None or k is Ellipsis or
               isinstance(k, (slice, list, tuple, np.ndarray,
                              _tensor.Tensor)) for k in key)


def _plain(x):
    """Nested lists / tuples with the tensors in them made Python data, so
    numpy reads them as numbers."""
    if isinstance(x, _tensor.Tensor):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [_plain(e) for e in x]
    return x


def _normalise(key, t):
    """key -> a list of items with the Ellipsis expanded, for tensor t.
    A sequence inside the key (a list or a tuple, nested to any depth) is
    an advanced index, as in PyTorch: x[(0,), 1] is x[[0], 1]."""
    ndim = t.ndim
    Tensor = _tensor.Tensor
    if not isinstance(key, tuple):
        key = tuple(key) if _sequence_as_tuple(key) else (key,)
    items = []
    for k in key:
        if isinstance(k, (list, tuple)):
            items.append(_as_index_tensor(_plain(k), t.device))
        elif isinstance(k, np.ndarray) or (
                isinstance(k, Tensor) and k.ndim > 0) or (
                isinstance(k, Tensor) and k.dtype is _c.bool_):
            items.append(_as_index_tensor(k, t.device))
        elif isinstance(k, Tensor):  # 0-d integer tensor: an int
            if k.is_floating_point():
                raise IndexError("tensors used as indices must be integer "
                                 "or bool, not " + k.dtype.name)
            items.append(int(k.item()))
        else:
            items.append(k)
    consumed = 0
    for k in items:
        if isinstance(k, Tensor):
            consumed += k.ndim if k.dtype is _c.bool_ else 1
        elif k is None or k is Ellipsis:
            pass
        else:
            consumed += 1
    ell = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(ell) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for a tensor of {ndim} dims: "
                         f"{consumed} were given")
    fill = [slice(None)] * (ndim - consumed)
    if ell:
        items[ell[0]:ell[0] + 1] = fill
    else:
        items += fill
    return items


def _basic(t, items):
    """Applies basic items; returns (view, [(dim in view, index tensor)])."""
    v, d, adv = t, 0, []
    for k in items:
        if isinstance(k, bool):
            raise IndexError("bool scalars are not supported as indices")
        if isinstance(k, numbers.Integral) or (
                isinstance(k, np.generic) and np.issubdtype(type(k),
                                                            np.integer)):
            v = wrap(lib.tm_select(v._p, d, operator.index(k)))
        elif isinstance(k, slice):
            step = 1 if k.step is None else operator.index(k.step)
            if step <= 0:
                raise ValueError("slice steps must be positive (negative "
                                 "steps are not supported, as in PyTorch)")
            start = 0 if k.start is None else operator.index(k.start)
            stop = _END if k.stop is None else operator.index(k.stop)
            v = wrap(lib.tm_slice(v._p, d, start, stop, step))
            d += 1
        elif k is None:
            v = wrap(lib.tm_unsqueeze(v._p, d))
            d += 1
        elif isinstance(k, _tensor.Tensor):
            if k.dtype is _c.bool_:
                shape = v.shape[d:d + k.ndim]
                if tuple(k.shape) != tuple(shape):
                    raise IndexError(
                        f"mask of shape {list(k.shape)} does not match the "
                        f"indexed dims {list(shape)}")
                for j, nz in enumerate(
                        k.detach().cpu().numpy().nonzero()):
                    from ._create import from_numpy
                    adv.append((d + j, from_numpy(nz.astype(np.int64))
                                .to(v.device)))
                d += k.ndim
            elif k.is_floating_point():
                raise IndexError("tensors used as indices must be integer "
                                 "or bool, not " + k.dtype.name)
            else:
                adv.append((d, k.to(v.device)))
                d += 1
        else:
            raise IndexError(f"only integers, slices, None, Ellipsis, bool "
                             f"masks and integer tensors are valid indices, "
                             f"not {type(k).__name__}")
    return v, adv


def _broadcast(indices):
    shape = np.broadcast_shapes(*[tuple(i.shape) for i in indices])
    return [i.to(_c.int64).broadcast_to(shape) for i in indices], shape


def _plan(v, adv):
    """Where the advanced dims go: (permutation of v putting advanced dims
    first, broadcast indices, their shape, the result's final order)."""
    dims = [d for d, _ in adv]
    rest = [d for d in range(v.ndim) if d not in dims]
    idx, bshape = _broadcast([i for _, i in adv])
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    # final order: B at dims[0] if adjacent (numpy), else first
    nb = len(bshape)
    if nb + len(rest) > lib.TM_MAX_DIMS:
        raise ValueError(f"indexing: the result would have "
                         f"{nb + len(rest)} dims (index dims "
                         f"{list(bshape)} and {len(rest)} more); tensors "
                         f"have at most {lib.TM_MAX_DIMS} dims")
    before = len([d for d in rest if d < dims[0]]) if adjacent else 0
    final = (list(range(nb, nb + before)) + list(range(nb)) +
             list(range(nb + before, nb + len(rest))))
    return dims + rest, idx, bshape, final


def _linear_index(v, dims, idx):
    """One index into the advanced dims merged (row-major), range-checked."""
    lin = None
    for d, i in zip(dims, idx):
        size = v.shape[d]
        bad = (i < -size) | (i >= size)
        if bool(bad.any()):
            first = int(i[bad].flatten()[0].item()) if i.ndim else \
                int(i.item())
            raise IndexError(f"index {first} is out of bounds for dim {d} "
                             f"with size {size}")
        i = i + (i < 0).long() * size
        lin = i if lin is None else lin * size + i
    return lin


def _getitem(t, key):
    """t[key]: numpy's basic (views) and advanced (copies) indexing.

    Ints, slices with positive steps, None and ... give views; integer
    tensors, lists or arrays and bool masks give copies, broadcast together,
    with numpy's placement of the advanced dims.  Recorded for autograd.
    Mirrors torch.Tensor.__getitem__."""
    items = _normalise(key, t)
    v, adv = _basic(t, items)
    if not adv:
        return v
    if len(adv) == 1 and adv[0][1].ndim == 1:  # the common x[idx] case
        d, i = adv[0]
        return wrap(lib.tm_index_select(v._p, d, i._p))
    order, idx, bshape, final = _plan(v, adv)
    k = len(adv)
    p = v.permute(order)
    rest_shape = list(p.shape[k:])
    merged = p.reshape([-1] + rest_shape)
    lin = _linear_index(v, order[:k], idx).reshape(-1)
    out = wrap(lib.tm_index_select(merged._p, 0, lin._p))
    out = out.reshape(list(bshape) + rest_shape)
    return out.permute(final) if final != list(range(out.ndim)) else out


def _value_tensor(value, like):
    """The value of an assignment as a tensor on like's device."""
    from ._create import tensor
    if isinstance(value, _tensor.Tensor):
        return value.to(like.device)
    return tensor(value, dtype=like.dtype, device=like.device)


def _setitem(t, key, value):
    """t[key] = value (a number, tensor or array, broadcast to the indexed
    shape); writes into t.  Duplicate advanced indices: the last write
    wins.  Mirrors torch.Tensor.__setitem__."""
    items = _normalise(key, t)
    v, adv = _basic(t, items)
    if not adv:
        if isinstance(value, SCALAR):
            v.fill_(value)
        else:
            v.copy_(_value_tensor(value, v))
        return
    order, idx, bshape, final = _plan(v, adv)
    k = len(adv)
    p = v.permute(order)
    rest_shape = list(p.shape[k:])
    lin = _linear_index(v, order[:k], idx).reshape(-1)
    m = lin.numel()
    # the value, broadcast to the result's shape, in [B..., rest...] order
    full_shape = [(list(bshape) + rest_shape)[j] for j in final]
    val = _value_tensor(value, v).to(v.dtype).broadcast_to(full_shape)
    inv = [final.index(j) for j in range(len(final))]
    src = val.permute(inv).reshape([m] + rest_shape)
    index = lin.reshape([m] + [1] * len(rest_shape)).expand(
        [m] + rest_shape)
    try:
        target = p.view([-1] + rest_shape)  # a view: writes land in t
    except ValueError:  # the advanced dims cannot merge as a view
        target = None
    if target is not None:
        target.scatter_(0, index, src)
        return
    tmp = p.reshape([-1] + rest_shape).clone()
    tmp.scatter_(0, index, src)
    p.copy_(tmp.reshape(p.shape))


def _index(index):
    return ptr(index, "index")


_REDUCE_KINDS = {"sum": lib.TM_SCATTER_SUM, "prod": lib.TM_SCATTER_PROD,
                 "mean": lib.TM_SCATTER_MEAN, "amax": lib.TM_SCATTER_AMAX,
                 "amin": lib.TM_SCATTER_AMIN,
                 # undocumented aliases that torch accepts too
                 "max": lib.TM_SCATTER_AMAX, "min": lib.TM_SCATTER_AMIN}


def _reduce_kind(reduce):
    try:
        return _REDUCE_KINDS[reduce]
    except (KeyError, TypeError):
        raise _c.error_class(lib.TM_EINVAL)(
            f"scatter_reduce: reduce must be one of 'sum', 'prod', 'mean', "
            f"'amax', 'amin', not {reduce!r}") from None


def _legacy_kind(reduce):
    """scatter's legacy reduce ('add' / 'multiply') as scatter_reduce's."""
    kinds = {"add": "sum", "multiply": "prod"}
    if reduce not in kinds:
        raise _c.error_class(lib.TM_EINVAL)(
            f"scatter: reduce must be 'add' or 'multiply', not {reduce!r}")
    return kinds[reduce]


def _legacy_src(self, index, src, value):
    if src is not None:
        return src
    ptr(index, "index")
    return self.new_full(index.shape, value)


class _Indexing:
    """Indexing with [] and the gather / scatter family."""

    __slots__ = ()

    # The module functions themselves (no extra call on t[i]).
    __getitem__ = _getitem
    __setitem__ = _setitem

    @export
    def gather(self, dim, index):
        """out[i][j] = self[index[i][j]][j] for dim 0 (and so on): index
        (int64 or int32) has self's ndim and out has index's shape.
        Mirrors torch.gather and torch.Tensor.gather."""
        return wrap(lib.tm_gather(self._p, operator.index(dim),
                                  _index(index)))

    @export
    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        """A copy of self with out[index[i][j]][j] = src[i][j] (dim 0), or
        = value.  src is a tensor of self's dtype or a number; where
        indices collide the last write wins.  reduce='add' or 'multiply'
        (PyTorch's legacy argument) combines instead of writing: it is
        scatter_reduce with 'sum' or 'prod' and include_self=True (and,
        unlike PyTorch's, records a gradient).  Mirrors torch.scatter and
        torch.Tensor.scatter."""
        if src is None and value is None:
            raise TypeError("scatter: give src or value")
        if src is not None and not isinstance(src, _tensor.Tensor):
            value, src = src, None
        if reduce is not None:
            return self.scatter_reduce(dim, index, _legacy_src(
                self, index, src, value), _legacy_kind(reduce))
        if src is None:
            return wrap(lib.tm_scatter_value(self._p, operator.index(dim),
                                             _index(index), float(value)))
        return wrap(lib.tm_scatter(self._p, operator.index(dim),
                                   _index(index), src._p))

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        """In-place scatter (src a tensor or a number; reduce as for
        scatter); every index is checked before anything is written.
        Mirrors torch.Tensor.scatter_."""
        if src is None and value is None:
            raise TypeError("scatter_: give src or value")
        if src is not None and not isinstance(src, _tensor.Tensor):
            value, src = src, None
        if reduce is not None:
            return self.scatter_reduce_(dim, index, _legacy_src(
                self, index, src, value), _legacy_kind(reduce))
        if src is None:
            src = self.new_full(index.shape, value)
        check(lib.tm_scatter_(self._p, operator.index(dim), _index(index),
                              src._p))
        return self

    @export
    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """A copy of self where each place index points at (along dim, as
        scatter) holds the reduction of the src values sent there, and of
        its own value when include_self.

        reduce is 'sum', 'prod', 'mean', 'amax' or 'amin'; places no index
        points at keep self's value.  'mean' divides by the number of
        values reduced (self's counting when included), rounding toward
        -inf for integers; 'amax' / 'amin' propagate NaN.  src has self's
        dtype.  Gradients as PyTorch: sum passes through, mean divides by
        the count, prod gives each factor the product of the others (exact
        with zeros), amax / amin split evenly among the values equal to
        the result; without include_self, self gets none at the places
        written.  Mirrors torch.scatter_reduce and
        torch.Tensor.scatter_reduce."""
        return wrap(lib.tm_scatter_reduce(
            self._p, operator.index(dim), _index(index), ptr(src, "src"),
            _reduce_kind(reduce), bool(include_self)))

    def scatter_reduce_(self, dim, index, src, reduce, *,
                        include_self=True):
        """In-place scatter_reduce: self is unchanged when anything fails.
        Mirrors torch.Tensor.scatter_reduce_."""
        check(lib.tm_scatter_reduce_(
            self._p, operator.index(dim), _index(index), ptr(src, "src"),
            _reduce_kind(reduce), bool(include_self)))
        return self

    @export
    def scatter_add(self, dim, index, src):
        """A copy of self with src added at the indexed places (colliding
        indices accumulate).  Mirrors torch.scatter_add and
        torch.Tensor.scatter_add."""
        return wrap(lib.tm_scatter_add(self._p, operator.index(dim),
                                       _index(index), ptr(src, "src")))

    def scatter_add_(self, dim, index, src):
        """In-place scatter_add.  Mirrors torch.Tensor.scatter_add_."""
        check(lib.tm_scatter_add_(self._p, operator.index(dim),
                                  _index(index), ptr(src, "src")))
        return self

    @export
    def index_select(self, dim, index):
        """The entries of a 1-D integer index along dim (a copy).  Mirrors
        torch.index_select and torch.Tensor.index_select."""
        return wrap(lib.tm_index_select(self._p, operator.index(dim),
                                        _index(index)))

    @export
    def masked_fill(self, mask, value):
        """A copy of self with value where the bool mask (broadcast to
        self's shape) is true.  Mirrors torch.masked_fill and
        torch.Tensor.masked_fill."""
        return wrap(lib.tm_masked_fill(self._p, ptr(mask, "mask"),
                                       float(value)))

    def masked_fill_(self, mask, value):
        """In-place masked_fill.  Mirrors torch.Tensor.masked_fill_."""
        check(lib.tm_masked_fill_(self._p, ptr(mask, "mask"), float(value)))
        return self
