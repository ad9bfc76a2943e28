"""The Python surface: every C op is reachable from Python, foundry.<name>
comes from one registry, and help() says what each function does and
which PyTorch function it mirrors.

The op lists are the C enums themselves (tm_unary_op, tm_binary_op,
tm_reduce_op, read through cffi), so an op added in C without its Python
method fails here.  Results are compared bit for bit with the C generic
entry points (tm_unary / tm_binary / tm_reduce): the method must be that
op, not merely exist."""
import inspect
import math
import pydoc

import numpy as np
import pytest

import foundry as F
from foundry._c import ffi, lib, op_names

NAN = math.nan

# C op -> (Tensor method, arguments) where reaching the op is not "the
# method of the same name, called without arguments".
CALLS = {
    # one Python method, two C ops: torch's gelu(x, approximate="tanh")
    "gelu_tanh": ("gelu", {"approximate": "tanh"}),
    # tm_unary's clamp has no bounds (NaN means none); clamp needs one
    "clamp": ("clamp", {"min": NAN, "max": NAN}),
}
# Ops PyTorch has in torch.nn.functional, not as torch.<name>: they are
# foundry.nn.functional.<name> (and, as before, foundry.<name>).
NN_FUNCTIONAL = {"leaky_relu", "gelu", "gelu_tanh", "silu", "softplus"}
# Ops without an in-place method: their parameters (slope, beta, the tanh
# form) have no place in tm_unary_, and PyTorch has no Tensor method.
NO_INPLACE = {"leaky_relu", "gelu", "gelu_tanh", "softplus"}
# Python operators mapped onto binary C ops (maximum and minimum have
# none).  & | ^ << >> are the bitwise ops, as in PyTorch.
OPERATORS = {"add": "__add__", "sub": "__sub__", "mul": "__mul__",
             "div": "__truediv__", "pow": "__pow__",
             "floor_divide": "__floordiv__", "remainder": "__mod__",
             "eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__",
             "gt": "__gt__", "ge": "__ge__", "bitwise_and": "__and__",
             "bitwise_or": "__or__", "bitwise_xor": "__xor__",
             "bitwise_left_shift": "__lshift__",
             "bitwise_right_shift": "__rshift__"}
# Bitwise ops take integer operands only (sampled as int64).
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
           "bitwise_right_shift"}
# tm_reduce's parameter p for the methods' defaults (var/std: correction 1;
# norm: p = 2).
REDUCE_P = {"var": 1.0, "std": 1.0, "norm": 2.0}


def doc_of(obj):
    if isinstance(obj, property):
        obj = obj.fget
    return inspect.getdoc(obj) or ""


def same(got, c_result):
    want = F._base.wrap(c_result)
    assert got.dtype is want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def sample():
    return F.tensor([[-1.5, -0.25, 0.0], [0.5, 2.0, 3.25]])


def check_method(name, method):
    fn = getattr(F.Tensor, method, None)
    assert callable(fn), f"C op {name}: no Tensor.{method}"
    assert doc_of(fn), f"Tensor.{method} has no docstring"
    if name not in NN_FUNCTIONAL:
        assert getattr(F, method, None) is fn, \
            f"C op {name}: foundry.{method} is not Tensor.{method}"
    else:
        assert callable(getattr(F.nn.functional, method, None)), \
            f"C op {name}: no foundry.nn.functional.{method}"


@pytest.mark.parametrize("value,name",
                         sorted(op_names("tm_unary_op").items()))
def test_every_unary_c_op_has_a_method(value, name):
    method, kwargs = CALLS.get(name, (name, {}))
    check_method(name, method)
    x = sample()
    same(getattr(x, method)(**kwargs), lib.tm_unary(value, x._p))
    if name not in NO_INPLACE:
        inplace = getattr(F.Tensor, method + "_")
        assert doc_of(inplace)
        if name in ("isnan", "isinf", "isfinite", "logical_not"):
            x = x.bool()  # the result is bool, so only bool fits
        y = x.clone()
        assert getattr(y, method + "_")(**kwargs) is y
        z = x.clone()
        assert lib.tm_unary_(value, z._p) == 0
        np.testing.assert_array_equal(y.numpy(), z.numpy())


@pytest.mark.parametrize("value,name",
                         sorted(op_names("tm_binary_op").items()))
def test_every_binary_c_op_has_a_method_and_an_operator(value, name):
    check_method(name, name)
    a, b = sample(), F.tensor([2.0, -1.0, 0.5])
    if name in BITWISE:
        a, b = F.tensor([[-7, 0, 5], [12, 3, -1]]), F.tensor([2, 1, 3])
    same(getattr(a, name)(b), lib.tm_binary(value, a._p, b._p))
    if name in OPERATORS:
        same(getattr(a, OPERATORS[name])(b),
             lib.tm_binary(value, a._p, b._p))
    assert doc_of(getattr(F.Tensor, name + "_"))
    c = a.clone()
    if name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                "logical_or", "logical_xor"):
        c = c.bool()  # bool results fit only a bool tensor
    d = c.clone()
    assert getattr(c, name + "_")(b.to(c.dtype)) is c
    assert lib.tm_binary_(value, d._p, b.to(c.dtype)._p) == 0
    np.testing.assert_array_equal(c.numpy(), d.numpy())


@pytest.mark.parametrize("value,name",
                         sorted(op_names("tm_reduce_op").items()))
def test_every_reduce_c_op_has_a_method(value, name):
    check_method(name, name)
    x = sample()
    same(getattr(x, name)(), lib.tm_reduce(value, x._p, ffi.NULL, 0,
                                           REDUCE_P.get(name, 0.0), False))
    dims = ffi.new("int[]", [1])
    same(getattr(x, name)(dim=1, keepdim=True) if name not in ("max", "min")
         else getattr(x, "a" + name)(dim=1, keepdim=True),
         lib.tm_reduce(value, x._p, dims, 1, REDUCE_P.get(name, 0.0), True))


def test_op_names_read_the_c_enums():
    unary = op_names("tm_unary_op")
    assert unary[lib.TM_OP_GELU_TANH] == "gelu_tanh"
    assert op_names("tm_binary_op")[lib.TM_OP_LOGICAL_AND] == "logical_and"
    assert op_names("tm_reduce_op")[lib.TM_RED_SUM] == "sum"
    assert len(unary) == lib.TM_UNARY_OP_COUNT  # the sentinel is left out


def test_torch_has_the_functions_foundry_says_it_mirrors(tch):
    for enum in ("tm_unary_op", "tm_binary_op", "tm_reduce_op"):
        for name in op_names(enum).values():
            method = CALLS.get(name, (name, {}))[0]
            if name in NN_FUNCTIONAL:
                assert hasattr(tch.nn.functional, method), name
            else:
                assert hasattr(tch, method) and hasattr(tch.Tensor, method)


# ------------------------------------------------------------- registry

def public_functions(module):
    return {n: v for n, v in vars(module).items()
            if not n.startswith("_") and callable(v) and
            not isinstance(v, type)}


def test_every_foundry_function_comes_from_the_registry():
    assert public_functions(F) == F._exports.FUNCTIONS


def test_foundry_functions_that_are_methods_are_the_same_object():
    # foundry.where(cond, a, b) is the function; Tensor.where(cond, other)
    # its documented thin wrapper (PyTorch's argument order differs).
    wrappers = {"where"}
    for name, fn in F._exports.FUNCTIONS.items():
        if name in wrappers or not hasattr(F.Tensor, name):
            continue
        assert getattr(F.Tensor, name) is fn, name
    for name in wrappers:
        assert "foundry.where" in doc_of(F.Tensor.where)


def test_a_name_exported_twice_is_refused():
    with pytest.raises(RuntimeError, match="exported twice"):
        F._exports.export("exp")(lambda x: x)


# ----------------------------------------------------------------- help

def test_every_public_name_has_a_docstring():
    missing = [f"Tensor.{n}" for n in dir(F.Tensor) if not n.startswith("_")
               and not doc_of(inspect.getattr_static(F.Tensor, n))]
    missing += [f"foundry.{n}" for n, f in public_functions(F).items()
                if not doc_of(f)]
    missing += [f"foundry.nn.functional.{n}" for n in F.nn.functional.__all__
                if not doc_of(getattr(F.nn.functional, n))]
    missing += [f"foundry.nn.init.{n}" for n, f in
                public_functions(F.nn.init).items()
                if f.__module__ == F.nn.init.__name__ and not doc_of(f)]
    missing += [f"foundry.Generator.{n}" for n in dir(F.Generator)
                if not n.startswith("_") and
                not doc_of(inspect.getattr_static(F.Generator, n))]
    assert not missing


def test_help_shows_the_summary_and_the_pytorch_name():
    text = pydoc.render_doc(F.Tensor.exp, renderer=pydoc.plaintext)
    assert "e ** self, elementwise." in text
    assert "torch.Tensor.exp" in text
    text = pydoc.render_doc(F.nn.functional.cross_entropy,
                            renderer=pydoc.plaintext)
    assert "Cross-entropy loss" in text
    assert "torch.nn.functional.cross_entropy" in text
    text = pydoc.render_doc(F.Tensor, renderer=pydoc.plaintext)
    for family in ("torch.matmul", "torch.Tensor.exp", "torch.Tensor.sum",
                   "torch.Tensor.reshape", "torch.Tensor.gather",
                   "torch.Tensor.to", "torch.Tensor.uniform_"):
        assert family in text  # help(Tensor) lists every family's methods
