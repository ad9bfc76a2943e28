"""Reordering, diagonals and data-dependent selections: the _Reorder
methods of Tensor (flip, roll, diag, diagonal, unfold, repeat_interleave,
nonzero, masked_select, take_along_dim, view(dtype)) and foundry.einsum.

diagonal, unfold and view(dtype) are views of self's memory (writes go
through); the rest copy.  nonzero, masked_select and repeat_interleave
with tensor repeats read a count back to the host first.
"""
import operator

from . import _c
from ._base import SCALAR, ptr, wrap
from ._c import ffi, lib
from ._exports import export


def _int_list(x, what):
    if isinstance(x, SCALAR):
        return [operator.index(x)]
    vals = list(x)
    if len(vals) > lib.TM_MAX_DIMS:
        raise ValueError(f"{what} has {len(vals)} entries; at most "
                         f"{lib.TM_MAX_DIMS}")
    return [operator.index(v) for v in vals]


def _dim_ptr(dim):
    return ffi.NULL if dim is None else ffi.new("int *", operator.index(dim))


class _Reorder:
    """Flips, rolls, diagonals, windows and selections."""

    __slots__ = ()

    @export
    def flip(self, *dims):
        """A copy with the elements of each dim in dims reversed (dims
        given as ints or one sequence).  Mirrors torch.flip and
        torch.Tensor.flip."""
        if len(dims) == 1 and not isinstance(dims[0], SCALAR):
            dims = dims[0]
        d = _int_list(dims, "dims")
        return wrap(lib.tm_flip(self._p, ffi.new("int[]", d) if d else
                                ffi.NULL, len(d)))

    @export
    def fliplr(self):
        """A copy with dim 1 reversed (needs >= 2 dims).  Mirrors
        torch.fliplr and torch.Tensor.fliplr."""
        return wrap(lib.tm_fliplr(self._p))

    @export
    def flipud(self):
        """A copy with dim 0 reversed (needs >= 1 dim).  Mirrors
        torch.flipud and torch.Tensor.flipud."""
        return wrap(lib.tm_flipud(self._p))

    @export
    def roll(self, shifts, dims=None):
        """A copy with the elements shifted by shifts along dims, wrapping
        around (ints or matching tuples); dims None rolls the flattened
        tensor and keeps the shape.  Mirrors torch.roll and
        torch.Tensor.roll."""
        s = _int_list(shifts, "shifts")
        d = [] if dims is None else _int_list(dims, "dims")
        return wrap(lib.tm_roll(self._p, ffi.new("int64_t[]", s), len(s),
                                ffi.new("int[]", d) if d else ffi.NULL,
                                len(d)))

    @export
    def diag(self, diagonal=0):
        """1-D: the square matrix with self on diagonal `diagonal` (> 0
        above the main one).  2-D: a copy of that diagonal.  Mirrors
        torch.diag and torch.Tensor.diag."""
        return wrap(lib.tm_diag(self._p, operator.index(diagonal)))

    @export
    def diagonal(self, offset=0, dim1=0, dim2=1):
        """A view of diagonal `offset` of dims dim1 and dim2, which are
        removed; the diagonal is the last dim.  Writes go through to self.
        Mirrors torch.diagonal and torch.Tensor.diagonal."""
        return wrap(lib.tm_diagonal(self._p, operator.index(offset),
                                    operator.index(dim1),
                                    operator.index(dim2)))

    def unfold(self, dimension, size, step):
        """A view of every window of `size` elements along `dimension`,
        `step` apart: that dim counts the windows and a last dim of `size`
        is added.  Mirrors torch.Tensor.unfold."""
        return wrap(lib.tm_unfold(self._p, operator.index(dimension),
                                  operator.index(size),
                                  operator.index(step)))

    def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
        """Each slice along dim (None: of the flattened tensor) repeated
        in place, repeats times (an int, or an integer tensor with one
        count per slice).  foundry.repeat_interleave(repeats) alone gives
        each index i repeated repeats[i] times.  Mirrors
        torch.repeat_interleave and torch.Tensor.repeat_interleave."""
        if repeats is None:  # repeat_interleave(repeats_tensor)
            from ._create import arange
            n = self.numel() if self.ndim else 1
            return arange(n, dtype=self.dtype,
                          device=self.device).repeat_interleave(
                self, output_size=output_size)
        size = -1 if output_size is None else operator.index(output_size)
        if size < -1:
            raise ValueError(f"output_size must be >= 0, got {size}")
        if isinstance(repeats, SCALAR):
            return wrap(lib.tm_repeat_interleave_int(
                self._p, operator.index(repeats), _dim_ptr(dim), size))
        return wrap(lib.tm_repeat_interleave(
            self._p, ptr(repeats, "repeats"), _dim_ptr(dim), size))

    def nonzero(self, *, as_tuple=False):
        """The indices of the non-zero elements: an int64 [count, ndim]
        tensor in row-major order, or with as_tuple one 1-D tensor per dim
        (a 0-d tensor counts as 1-D there).  Mirrors torch.nonzero and
        torch.Tensor.nonzero."""
        if as_tuple:
            t = self.reshape(1) if self.ndim == 0 else self
            idx = t.nonzero()
            return tuple(idx[:, d] for d in range(t.ndim))
        return wrap(lib.tm_nonzero(self._p))

    @export
    def argwhere(self):
        """self.nonzero(): the [count, ndim] indices of the non-zero
        elements.  Mirrors torch.argwhere and torch.Tensor.argwhere."""
        return wrap(lib.tm_nonzero(self._p))

    @export
    def masked_select(self, mask):
        """The elements where the bool mask is true (self and mask
        broadcast together), as a 1-D tensor.  Mirrors torch.masked_select
        and torch.Tensor.masked_select."""
        return wrap(lib.tm_masked_select(self._p, ptr(mask, "mask")))

    @export
    def take_along_dim(self, indices, dim=None):
        """Gathers along dim with self and indices broadcast in every other
        dim; dim None indexes the flattened tensor.  Mirrors
        torch.take_along_dim and torch.Tensor.take_along_dim."""
        return wrap(lib.tm_take_along_dim(self._p, ptr(indices, "indices"),
                                          _dim_ptr(dim)))


export("repeat_interleave")(_Reorder.repeat_interleave)
export("nonzero")(_Reorder.nonzero)


def view_dtype(t, dtype):
    """t's bytes as `dtype` (a view): Tensor.view(dtype)."""
    return wrap(lib.tm_view_dtype(t._p, dtype.c))


def is_dtype(x):
    return isinstance(x, _c.dtype)


def _sublist(sub):
    """A sublist of ints in [0, 52) and Ellipsis as an equation term."""
    out = []
    for n in sub:
        if n is Ellipsis:
            out.append("...")
            continue
        n = operator.index(n)
        if not 0 <= n < 52:
            raise ValueError(f"einsum: subscript {n} is not in [0, 52)")
        out.append(chr(ord("A") + n) if n < 26 else chr(ord("a") + n - 26))
    return "".join(out)


def _from_sublists(args):
    """(op, sub, op, sub, ..., [out]) -> (equation, operands)."""
    ops, terms = list(args[0::2]), [_sublist(s) for s in args[1::2]]
    out = None
    if len(ops) > len(terms):  # an odd count: the last item is the output
        out = _sublist(ops.pop())
    eq = ",".join(terms) + ("" if out is None else "->" + out)
    return eq, ops


@export
def einsum(equation, *operands):
    """Einstein summation: einsum("ij,jk->ik", a, b), einsum(eq, [a, b]) or
    the sublist form einsum(a, [0, 1], b, [1, 2], [0, 2]).  Implicit output
    (no "->"): the labels seen once, sorted (A-Z before a-z); "..."
    broadcasts; a label repeated in one operand takes a diagonal; labels
    not in the output are summed.  Contractions run as batched matmuls and
    record autograd.  Mirrors torch.einsum."""
    if not isinstance(equation, str) and hasattr(equation, "_p"):
        equation, operands = _from_sublists((equation,) + operands)
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a str, not "
                        f"{type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    ps = [ptr(t, "einsum: every operand") for t in operands]
    if not ps:
        raise ValueError("einsum: needs at least one operand")
    return wrap(lib.tm_einsum(equation.encode(), ffi.new("tm_tensor *[]", ps),
                              len(ps)))
