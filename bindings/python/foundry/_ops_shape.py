"""Shapes and views, splitting and joining: the _Shape methods of Tensor,
and foundry.cat / stack.

Views (reshape when the strides allow it, view, expand, permute,
transpose, squeeze/unsqueeze, narrow, select, as_strided, split, chunk)
share self's memory and record for autograd; the rest copy.  A size of -1
in a shape is inferred.
"""
import operator

from ._base import error, int64_array, named, ptr, shape_args, wrap
from ._c import check, ffi, lib
from ._exports import export


def _reshape_like(name, c_fn, summary, torch_fn=True):
    def method(self, *shape):
        s, n = shape_args(shape)
        return wrap(c_fn(self._p, s, n))
    mirrors = f"torch.{name} and torch.Tensor.{name}" if torch_fn else \
        f"torch.Tensor.{name}"
    return named(method, name, f"{summary}\n\nThe shape is given as ints or "
                 f"one sequence: t.{name}(2, 3) or t.{name}((2, 3)).  "
                 f"Mirrors {mirrors}.")


def _pieces(c_call, most):
    """Runs a C splitter that writes at most `most` new references."""
    out = ffi.new("tm_tensor *[]", max(most, 1))
    n = c_call(out, max(most, 1))
    if n < 0:
        raise error()
    return tuple(wrap(out[i]) for i in range(n))


def _seq(tensors, what):
    ts = list(tensors)
    for t in ts:
        ptr(t, what)
    return ffi.new("tm_tensor *[]", [t._p for t in ts]), len(ts)


class _Shape:
    """Shapes, views, splitting and triangles."""

    __slots__ = ()

    reshape = export(_reshape_like(
        "reshape", lib.tm_reshape, "The elements in a new shape: a view "
        "when the strides allow it, else a copy."))
    def view(self, *shape):
        """A view with a new shape (ValueError when the strides do not
        allow one; use reshape), given as ints or one sequence; or, given
        a dtype, self's bytes reinterpreted as that dtype.  Mirrors
        torch.Tensor.view."""
        from ._ops_reorder import is_dtype, view_dtype
        if len(shape) == 1 and is_dtype(shape[0]):
            return view_dtype(self, shape[0])
        s, n = shape_args(shape)
        return wrap(lib.tm_view(self._p, s, n))
    expand = _reshape_like(
        "expand", lib.tm_expand, "A view with size-1 dims stretched to the "
        "shape (stride 0), and new leading dims; -1 keeps a size.", False)
    broadcast_to = export(_reshape_like(
        "broadcast_to", lib.tm_broadcast_to, "A view broadcast to the shape "
        "by numpy's rules."))
    repeat = _reshape_like(
        "repeat", lib.tm_repeat, "A copy tiled repeats[i] times along each "
        "dim (extra leading entries add dims).", False)

    def view_as(self, other):
        """self.view(other.shape).  Mirrors torch.Tensor.view_as."""
        return self.view(other.shape)

    def reshape_as(self, other):
        """self.reshape(other.shape).  Mirrors torch.Tensor.reshape_as."""
        return self.reshape(other.shape)

    def expand_as(self, other):
        """self.expand(other.shape).  Mirrors torch.Tensor.expand_as."""
        return self.expand(other.shape)

    @export
    def permute(self, *dims):
        """A view with the dims reordered: out.shape[i] = self.shape[dims[i]].

        dims are ints or one sequence, a permutation of range(ndim).
        Mirrors torch.permute and torch.Tensor.permute."""
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = dims[0]
        d = [operator.index(x) for x in dims]
        return wrap(lib.tm_permute(self._p, ffi.new("int[]", d) if d else
                                   ffi.NULL, len(d)))

    @export("transpose", "swapaxes")
    def transpose(self, dim0, dim1):
        """A view with dims dim0 and dim1 swapped.  Mirrors torch.transpose
        and torch.Tensor.transpose (also as swapaxes)."""
        return wrap(lib.tm_transpose(self._p, operator.index(dim0),
                                     operator.index(dim1)))

    swapaxes = transpose

    @export
    def t(self):
        """The transpose of a tensor with at most 2 dims (a view; 0-d and
        1-d are returned as they are).  Mirrors torch.t and
        torch.Tensor.t."""
        n = self.ndim
        if n > 2:
            raise ValueError(f"t() expects a tensor with <= 2 dims, not {n}")
        return self.permute(list(range(n))[::-1])

    @property
    def T(self):
        """Every dim reversed (a view).  Mirrors torch.Tensor.T."""
        return self.permute(list(range(self.ndim))[::-1])

    @property
    def mT(self):
        """The last two dims swapped (a view of a batch of matrices).
        Mirrors torch.Tensor.mT."""
        return self.transpose(-2, -1)

    @export
    def flatten(self, start_dim=0, end_dim=-1):
        """Dims start_dim..end_dim merged into one (a view when the strides
        allow it); a 0-d tensor gives shape [1].  Mirrors torch.flatten
        and torch.Tensor.flatten."""
        return wrap(lib.tm_flatten(self._p, operator.index(start_dim),
                                   operator.index(end_dim)))

    @export
    def unflatten(self, dim, sizes):
        """Dim `dim` split into `sizes` (one may be -1), by reshape.
        Mirrors torch.unflatten and torch.Tensor.unflatten."""
        shape = list(self.shape)
        d = operator.index(dim) % max(len(shape), 1)
        return self.reshape(shape[:d] + list(sizes) + shape[d + 1:])

    @export
    def unsqueeze(self, dim):
        """A view with a size-1 dim inserted at dim (in [-ndim-1, ndim]).
        Mirrors torch.unsqueeze and torch.Tensor.unsqueeze."""
        return wrap(lib.tm_unsqueeze(self._p, operator.index(dim)))

    @export
    def squeeze(self, dim=None):
        """A view without size-1 dims: all of them, or only dim (left as
        is when its size is not 1).  Mirrors torch.squeeze and
        torch.Tensor.squeeze."""
        if dim is None:
            return wrap(lib.tm_squeeze_all(self._p))
        return wrap(lib.tm_squeeze(self._p, operator.index(dim)))

    def contiguous(self):
        """self when its elements are already in row-major order, else a
        contiguous copy.  Mirrors torch.Tensor.contiguous."""
        return wrap(lib.tm_contiguous(self._p))

    @export
    def clone(self):
        """A contiguous copy with the same dtype, recorded for autograd.
        Mirrors torch.clone and torch.Tensor.clone."""
        return wrap(lib.tm_clone(self._p))

    @export
    def narrow(self, dim, start, length):
        """A view of `length` elements of dim from `start`.  Mirrors
        torch.narrow and torch.Tensor.narrow."""
        return wrap(lib.tm_narrow(self._p, operator.index(dim),
                                  operator.index(start),
                                  operator.index(length)))

    @export
    def select(self, dim, index):
        """A view of index `index` of dim, which is removed (negative
        indices count from the end).  Mirrors torch.select and
        torch.Tensor.select."""
        return wrap(lib.tm_select(self._p, operator.index(dim),
                                  operator.index(index)))

    @export
    def as_strided(self, size, stride, storage_offset=None):
        """A view of self's memory with any shape and strides (in
        elements), from storage_offset (absolute; default: self's).  Every
        reachable element must lie inside the memory; negative strides are
        refused.  Mirrors torch.as_strided and torch.Tensor.as_strided."""
        s, n = shape_args((size,))
        st, m = int64_array(stride, "stride")
        if m != n:
            raise ValueError(f"size has {n} dims but stride has {m}")
        off = self.storage_offset() if storage_offset is None else \
            storage_offset
        return wrap(lib.tm_as_strided(self._p, s, st, n,
                                      operator.index(off)))

    @export
    def split(self, split_size_or_sections, dim=0):
        """Views of consecutive pieces along dim: of split_size each (the
        last may be shorter), or of the listed sizes (which must add up to
        the dim's size).  Mirrors torch.split and torch.Tensor.split."""
        dim = operator.index(dim)
        if isinstance(split_size_or_sections, (list, tuple)):
            sizes, n = int64_array(split_size_or_sections, "split sizes")
            return _pieces(lambda out, cap: lib.tm_split_sizes(
                self._p, sizes, n, dim, out, cap), n)
        size = operator.index(split_size_or_sections)
        length = self.size(dim)
        most = -(-length // size) if size > 0 else 1  # C reports size < 1
        return _pieces(lambda out, cap: lib.tm_split(self._p, size, dim, out,
                                                     cap), most)

    @export
    def chunk(self, chunks, dim=0):
        """`chunks` views along dim of ceil(size / chunks) elements each
        (fewer pieces when the dim is short).  Mirrors torch.chunk and
        torch.Tensor.chunk."""
        c, d = operator.index(chunks), operator.index(dim)
        length = self.size(d)
        most = c if length == 0 else min(c, length)  # never more than that
        return _pieces(lambda out, cap: lib.tm_chunk(self._p, c, d, out,
                                                     cap), most)

    @export
    def unbind(self, dim=0):
        """A tuple of the views select(dim, i) for every i.  Mirrors
        torch.unbind and torch.Tensor.unbind."""
        return tuple(self.select(dim, i) for i in range(self.size(dim)))

    @export
    def tril(self, diagonal=0):
        """A copy with the elements above diagonal `diagonal` of the last
        two dims set to 0 (0: the main diagonal, > 0 above it).  Mirrors
        torch.tril and torch.Tensor.tril."""
        return wrap(lib.tm_tril(self._p, operator.index(diagonal)))

    @export
    def triu(self, diagonal=0):
        """A copy with the elements below diagonal `diagonal` of the last
        two dims set to 0.  Mirrors torch.triu and torch.Tensor.triu."""
        return wrap(lib.tm_triu(self._p, operator.index(diagonal)))

    def tril_(self, diagonal=0):
        """In-place tril: writes into self and returns self.  Mirrors
        torch.Tensor.tril_."""
        check(lib.tm_tril_(self._p, operator.index(diagonal)))
        return self

    def triu_(self, diagonal=0):
        """In-place triu: writes into self and returns self.  Mirrors
        torch.Tensor.triu_."""
        check(lib.tm_triu_(self._p, operator.index(diagonal)))
        return self


@export("cat", "concat", "concatenate")
def cat(tensors, dim=0):
    """The tensors joined along an existing dim (other dims must match;
    dtypes promote; 1-D empty tensors are skipped).  Mirrors torch.cat
    (also as concat and concatenate)."""
    arr, n = _seq(tensors, "cat: every element")
    return wrap(lib.tm_cat(arr, n, operator.index(dim)))


@export
def stack(tensors, dim=0):
    """Same-shaped tensors joined along a new dim (dtypes promote).
    Mirrors torch.stack."""
    arr, n = _seq(tensors, "stack: every element")
    return wrap(lib.tm_stack(arr, n, operator.index(dim)))
