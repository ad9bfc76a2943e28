"""pad (constant, reflect, replicate, circular) and the padding modules
against PyTorch: values and gradients in F32 and F64 (exact: padding
copies elements and its gradient adds them up, a few terms at most, in
the same order up to rounding of sums of equal size), integer dtypes,
batchless and non-contiguous inputs, negative amounts, and errors with
PyTorch's exception types."""
import numpy as np
import pytest

import foundry as F
import foundry.nn as nn
import foundry.nn.functional as FF

# gradient sums of up to three terms may round differently in F32
TOL = {"float64": 1e-13, "float32": 1e-6}


def run(tch, x, pad=None, transpose=False, fm=None, tm=None, **kw):
    fl = x.dtype.kind == "f"
    fx = F.tensor(x, requires_grad=fl)
    tx = tch.tensor(x, requires_grad=fl)
    fi, ti = fx, tx
    if transpose:
        fi, ti = fx.transpose(-1, -2), tx.transpose(-1, -2)
    fy = fm(fi) if fm else FF.pad(fi, pad, **kw)
    ty = tm(ti) if tm else tch.nn.functional.pad(ti, pad, **kw)
    tol = TOL.get(str(x.dtype), 0)
    assert tuple(fy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(),
                               rtol=tol, atol=tol)
    if fl and ty.numel():
        g = np.random.default_rng(4).standard_normal(tuple(ty.shape))
        fy.backward(F.tensor(g.astype(x.dtype)))
        ty.backward(tch.tensor(g.astype(x.dtype)))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(),
                                   rtol=tol, atol=tol)


CASES = [
    ((3, 7), (2, 3)),
    ((2, 3, 7), (6, 0)),
    ((2, 3, 7), (-2, 3)),
    ((2, 3, 7), (3, -4)),
    ((3, 5, 6), (1, 2, 3, 4)),
    ((2, 3, 5, 6), (0, 5, 4, 0)),
    ((2, 3, 5, 6), (-1, 2, 2, -3)),
    ((2, 4, 5, 6), (1, 2, 3, 1, 2, 0)),
    ((1, 2, 4, 5, 6), (3, 1, 0, 2, 2, 3)),
    ((1, 2, 4, 5, 6), (-1, 1, 2, -2, 1, 1)),
]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", CASES)
def test_pad_modes_match_torch(tch, rng, dt, mode, shape, pad):
    x = rng.standard_normal(shape).astype(dt)
    run(tch, x, pad, mode=mode)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate",
                                  "circular"])
def test_pad_non_contiguous_and_integer_inputs(tch, rng, mode):
    x = rng.standard_normal((2, 3, 5, 6))
    run(tch, x, (1, 2, 2, 1), transpose=True, mode=mode)
    run(tch, rng.integers(-9, 9, (2, 3, 5)), (2, 1), mode=mode)


def test_constant_pad_value_and_cropping(tch, rng):
    x = rng.standard_normal((2, 3, 4))
    run(tch, x, (1, -2, 0, 3), value=2.5)
    run(tch, x, (1, 1, 1, 1, 1, 1), mode="constant")


def test_circular_pad_of_an_empty_batch(tch):
    run(tch, np.zeros((0, 5)), (1, 1), mode="circular")


def raises_like(tch, x, pad, **kw):
    with pytest.raises(Exception) as want:
        tch.nn.functional.pad(tch.tensor(x), pad, **kw)
    with pytest.raises(want.type):
        FF.pad(F.tensor(x), pad, **kw)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_errors_match_torch_types(tch, mode):
    raises_like(tch, np.zeros(5), (1, 1), mode=mode)
    raises_like(tch, np.zeros((2, 2, 2, 5)), (1, 1), mode=mode)
    raises_like(tch, np.zeros((2, 5)), (1, 1, 1, 1), mode=mode)
    raises_like(tch, np.zeros((2, 5)), (1, 1, 1), mode=mode)
    raises_like(tch, np.zeros((2, 5)), (1, 1), mode=mode, value=1.0)
    raises_like(tch, np.zeros((2, 0)), (1, 1), mode=mode)
    if mode != "replicate":
        raises_like(tch, np.zeros((2, 5)), (6, 1), mode=mode)
    if mode == "reflect":
        raises_like(tch, np.zeros((2, 5)), (5, 1), mode=mode)
    raises_like(tch, np.zeros((2, 5)), (1, 1), mode="foo")


MODULES = [
    ("ReflectionPad1d", (2,), (2, 3, 6)),
    ("ReflectionPad2d", ((1, 2, 0, 3),), (2, 3, 5, 6)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 4, 5)),
    ("ReplicationPad1d", ((3, 1),), (3, 6)),
    ("ReplicationPad2d", (2,), (2, 3, 5, 6)),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 3),), (1, 2, 3, 4, 5)),
    ("CircularPad1d", (2,), (2, 3, 6)),
    ("CircularPad2d", ((1, 2, 0, 3),), (2, 3, 5, 6)),
    ("CircularPad3d", (1,), (1, 2, 3, 4, 5)),
    ("ZeroPad1d", ((1, 2),), (2, 3, 6)),
    ("ZeroPad2d", (2,), (2, 3, 5, 6)),
    ("ZeroPad3d", (1,), (1, 2, 3, 4, 5)),
    ("ConstantPad1d", (2, 3.5), (2, 3, 6)),
    ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 5, 6)),
    ("ConstantPad3d", (1, 0.5), (1, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("name,args,shape", MODULES)
def test_padding_modules_match_torch(tch, rng, name, args, shape):
    run(tch, rng.standard_normal(shape), fm=getattr(nn, name)(*args),
        tm=getattr(tch.nn, name)(*args))
