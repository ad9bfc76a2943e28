"""The random in-place fills uniform_ / normal_: the _RandomFills methods of
Tensor, and foundry.manual_seed.

They draw from the process-wide default generator (foundry.manual_seed
reseeds it); the generator= arguments are accepted for PyTorch's
signatures and not used yet.
"""
import operator

from ._c import check, ffi, lib
from ._exports import export

_MASK = 0xFFFFFFFFFFFFFFFF


class _RandomFills:
    """In-place random fills."""

    __slots__ = ()

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """Fills self with uniform numbers in [a, b) from the default
        generator; returns self.

        Float dtypes; a <= b, both finite.  Mirrors torch.Tensor.uniform_
        (from, to)."""
        check(lib.tm_uniform_(self._p, a, b, ffi.NULL))
        return self

    def normal_(self, mean=0.0, std=1.0, generator=None):
        """Fills self with normal numbers of mean and std (>= 0) from the
        default generator; returns self.

        Float dtypes.  Mirrors torch.Tensor.normal_."""
        check(lib.tm_normal_(self._p, mean, std, ffi.NULL))
        return self


@export
def manual_seed(seed):
    """Reseeds the default generator (rand, randn, dropout, init, ...) with
    seed modulo 2^64.  Mirrors torch.manual_seed (which also returns the
    default generator; Foundry returns None)."""
    seed = operator.index(seed)
    lib.tm_manual_seed(seed & _MASK)
