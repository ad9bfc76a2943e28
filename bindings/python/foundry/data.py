"""Datasets: IDX files (MNIST, Fashion-MNIST) and mini-batches."""
import os

from . import _c
from ._c import ffi, lib
from ._base import wrap
from ._tensor import Tensor

__all__ = ["load_idx", "batches"]


def load_idx(path):
    """The tensor in an IDX file (raw or gzip-compressed; the C library
    validates the header and sizes and inflates .gz itself)."""
    return wrap(lib.tm_idx_load(os.fsencode(os.fspath(path))))


def load_idx_bytes(data):
    buf = ffi.from_buffer(data)
    return wrap(lib.tm_idx_load_buffer(buf, len(buf)))


def batches(*tensors, batch_size, shuffle=False, drop_last=False):
    """Yields tuples of mini-batches (rows of each tensor, the same rows for
    all), in order or in a fresh random order (foundry's generator)."""
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("batches() takes tensors")
    n = len(tensors[0])
    if any(len(t) != n for t in tensors):
        raise ValueError("batches(): tensors of different lengths")
    from ._create import rand, arange
    order = rand(n).argsort() if shuffle else arange(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        idx = order[i:i + batch_size]
        yield tuple(t.index_select(0, idx) for t in tensors)
