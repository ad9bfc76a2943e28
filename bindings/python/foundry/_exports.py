"""The registry of foundry.<name> functions.

A function becomes foundry.<name> only by being recorded here, with
`@export` where it is defined:

    class _Elementwise:
        @export                      # foundry.exp is Tensor.exp
        def exp(self): ...

    @export("cat", "concat", "concatenate")
    def cat(tensors, dim=0): ...

`export` returns the function itself (no wrapper), so a Tensor method that
is also foundry.<name>(tensor, ...) is the same function object, called
with the tensor as its first argument.  foundry/__init__.py copies
FUNCTIONS into the package namespace after importing every module that
records names.  A name recorded twice is an error at import time.
"""

FUNCTIONS = {}


def _record(fn, names):
    for name in names:
        if name in FUNCTIONS and FUNCTIONS[name] is not fn:
            raise RuntimeError(f"foundry.{name} is exported twice")
        FUNCTIONS[name] = fn
    return fn


def export(*names):
    """Records a function as foundry.<name>: `@export` uses the function's
    own name, `@export("a", "b")` records it under each name given."""
    if len(names) == 1 and callable(names[0]):
        return _record(names[0], (names[0].__name__,))

    def record(fn):
        return _record(fn, names or (fn.__name__,))
    return record
