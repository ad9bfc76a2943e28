"""Grad mode: foundry.no_grad(), enable_grad(), set_grad_enabled()."""
import functools

from ._c import lib
from ._exports import export


class _GradMode:
    """Sets the calling thread's grad mode inside a `with` block or a
    decorated function, and restores the previous mode afterwards (also
    when an exception leaves the block).  Re-entrant and nestable."""

    mode = False

    def __init__(self):
        self._prev = []

    def __enter__(self):
        self._prev.append(lib.tm_grad_enabled())
        lib.tm_set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        lib.tm_set_grad_enabled(self._prev.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside record nothing for autograd (parameter updates,
    evaluation).  `with foundry.no_grad(): ...` or `@foundry.no_grad()`."""

    mode = False


class enable_grad(_GradMode):
    """Turns recording back on inside a no_grad region."""

    mode = True


class set_grad_enabled(_GradMode):
    """set_grad_enabled(False) as a context manager, a decorator or a plain
    call (which sets the mode until changed).  Mirrors
    torch.set_grad_enabled."""

    def __init__(self, mode):
        super().__init__()
        self.mode = bool(mode)
        self._prev.append(lib.tm_grad_enabled())
        lib.tm_set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        mode = self.mode
        self.__exit__()

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


@export
def is_grad_enabled():
    """Whether the calling thread records ops for autograd.  Mirrors
    torch.is_grad_enabled."""
    return bool(lib.tm_grad_enabled())
