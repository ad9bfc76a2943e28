"""Pooling against PyTorch: max / avg pooling over 1-3 spatial dims
(stride, padding, dilation, ceil_mode, count_include_pad,
divisor_override, return_indices), adaptive pooling, max unpooling and
their modules: values, indices and gradients in F32 and F64, batchless,
non-contiguous and empty-batch inputs, integer dtypes, and errors with
PyTorch's exception types.

Tolerances: F64 1e-12 (the same sums in another order); F32 1e-5
(single-precision sums of a few window elements)."""
import numpy as np
import pytest

import foundry as F
import foundry.nn as nn
import foundry.nn.functional as FF

TOL = {"float64": 1e-12, "float32": 1e-5}


def run(ff, tf, tch, x, *args, grad=True, transpose=False, **kw):
    """ff(x, ...) against tf(x, ...): outputs (and indices) and, for float
    x, the gradient of sum(out * g)."""
    fl = x.dtype.kind == "f"
    fx = F.tensor(x, requires_grad=grad and fl)
    tx = tch.tensor(x, requires_grad=grad and fl)
    fi, ti = fx, tx
    if transpose:  # a non-contiguous view of the same values
        fi, ti = fx.transpose(-1, -2), tx.transpose(-1, -2)
    fy, ty = ff(fi, *args, **kw), tf(ti, *args, **kw)
    if isinstance(ty, tuple):
        (fy, fix), (ty, tix) = fy, ty
        np.testing.assert_array_equal(fix.numpy(), tix.numpy())
        assert fix.dtype.name == "int64"
    tol = TOL.get(str(x.dtype), 0)
    assert fy.dtype.name == str(ty.dtype).replace("torch.", "")
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(),
                               rtol=tol, atol=tol)
    if grad and fl and ty.numel():
        g = np.random.default_rng(3).standard_normal(tuple(ty.shape))
        fy.backward(F.tensor(g.astype(x.dtype)))
        ty.backward(tch.tensor(g.astype(x.dtype)))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(),
                                   rtol=tol, atol=tol)
    return fy


MAX_CASES = [
    (1, (2, 3, 11), dict(kernel_size=3)),
    (1, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                         dilation=2)),
    (1, (3, 10), dict(kernel_size=4, stride=3, ceil_mode=True)),
    (2, (2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 7, 9), dict(kernel_size=(2, 3), stride=(1, 2),
                           ceil_mode=True, dilation=(2, 1))),
    (2, (3, 8, 8), dict(kernel_size=2)),
    (2, (1, 2, 9, 9), dict(kernel_size=3, stride=2, dilation=3, padding=1,
                           ceil_mode=True)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1,
                              ceil_mode=True)),
    (3, (2, 4, 5, 5), dict(kernel_size=(1, 2, 3), dilation=(1, 2, 1))),
]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("n,shape,kw", MAX_CASES)
@pytest.mark.parametrize("transpose", [False, True])
def test_max_pool_values_indices_and_gradients(tch, rng, dt, n, shape, kw,
                                               transpose):
    x = rng.standard_normal(shape).astype(dt)
    if transpose:
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    fn = f"max_pool{n}d"
    run(getattr(FF, fn), getattr(tch.nn.functional, fn), tch, x,
        transpose=transpose, return_indices=True, **kw)


AVG_CASES = [
    (1, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (1, (3, 10), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                      count_include_pad=False)),
    (2, (2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1,
                           ceil_mode=True)),
    (2, (2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1,
                           ceil_mode=True, count_include_pad=False)),
    (2, (3, 7, 9), dict(kernel_size=(2, 3), divisor_override=4,
                        ceil_mode=True, stride=2)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1,
                              ceil_mode=True)),
    (3, (2, 5, 6, 7), dict(kernel_size=2, divisor_override=3)),
]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("n,shape,kw", AVG_CASES)
@pytest.mark.parametrize("transpose", [False, True])
def test_avg_pool_values_and_gradients(tch, rng, dt, n, shape, kw,
                                       transpose):
    x = rng.standard_normal(shape).astype(dt)
    fn = f"avg_pool{n}d"
    run(getattr(FF, fn), getattr(tch.nn.functional, fn), tch, x,
        transpose=transpose, **kw)


@pytest.mark.parametrize("dt", ["int64", "int32", "uint8", "int16", "int8"])
def test_integer_pools_match_torch(tch, rng, dt):
    """Max pooling takes every integer dtype, as PyTorch's does; average
    pooling int64 only (truncating), others fail as PyTorch's do."""
    lo = 0 if dt == "uint8" else -100
    x = rng.integers(lo, 100, (2, 3, 7, 8)).astype(dt)
    tf = tch.nn.functional
    run(FF.max_pool2d, tf.max_pool2d, tch, x, 3, stride=2, padding=1)
    run(FF.max_pool3d, tf.max_pool3d, tch, x, 2, return_indices=True)
    run(FF.max_pool1d, tf.max_pool1d, tch, x[0], 2, return_indices=True)
    if dt == "int64":
        run(FF.avg_pool2d, tf.avg_pool2d, tch, x, 3, stride=2, padding=1)
        run(FF.avg_pool1d, tf.avg_pool1d, tch, x[0], 3, 2, 1, True)
    else:
        raises_like(tch, FF.avg_pool2d, tf.avg_pool2d, x, 2)


def test_float16_pool_keeps_its_dtype(tch):
    x = np.arange(16, dtype=np.float16).reshape(1, 1, 4, 4)
    y = FF.max_pool2d(F.tensor(x), 2)
    assert y.dtype.name == "float16"
    np.testing.assert_array_equal(y.numpy(), [[[[5, 7], [13, 15]]]])


def test_nan_wins_a_max_window(tch):
    x = np.array([[[1.0, np.nan, 3.0, 2.0]]])
    y, i = FF.max_pool1d(F.tensor(x), 2, return_indices=True)
    ty, ti = tch.nn.functional.max_pool1d(tch.tensor(x), 2,
                                          return_indices=True)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_empty_batch(tch):
    x = np.zeros((0, 2, 5, 5))
    for fn, args in (("max_pool2d", (2,)), ("avg_pool2d", (3, 2, 1)),
                     ("adaptive_avg_pool2d", ((2, 3),)),
                     ("adaptive_max_pool2d", ((2, 3),))):
        y = getattr(FF, fn)(F.tensor(x), *args)
        ty = getattr(tch.nn.functional, fn)(tch.tensor(x), *args)
        assert tuple(y.shape) == tuple(ty.shape)


def raises_like(tch, ff, tf, *args, **kw):
    """ff raises the exception type tf raises (a FoundryError whose
    builtin base is that type, or is that type itself)."""
    with pytest.raises(Exception) as want:
        tf(*[tch.tensor(a) if isinstance(a, np.ndarray) else a
             for a in args], **kw)
    with pytest.raises(want.type):
        ff(*[F.tensor(a) if isinstance(a, np.ndarray) else a for a in args],
           **kw)


def test_pool_errors_match_torch_types(tch):
    x = np.zeros((1, 1, 4, 4))
    tf = tch.nn.functional
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, x, 3, padding=2)
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, x, 5)
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, x, 2, stride=0)
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, x, (2, 2, 2))
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, np.zeros(16), 2)
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, np.zeros((1, 0, 4, 4)), 2)
    raises_like(tch, FF.max_pool2d, tf.max_pool2d, x.astype(bool), 2)
    raises_like(tch, FF.avg_pool2d, tf.avg_pool2d, x, 2,
                divisor_override=0)
    raises_like(tch, FF.avg_pool3d, tf.avg_pool3d, x, 2)
    raises_like(tch, FF.adaptive_avg_pool2d, tf.adaptive_avg_pool2d,
                x.astype(np.int64), 2)
    raises_like(tch, FF.adaptive_max_pool2d, tf.adaptive_max_pool2d,
                np.zeros((1, 1, 0, 4)), 2)


ADAPTIVE = [(1, (2, 3, 10), 4), (1, (3, 7), 7), (1, (3, 7), 9),
            (2, (2, 3, 7, 9), (3, 4)), (2, (3, 7, 9), (None, 2)),
            (2, (2, 3, 5, 5), 7), (2, (1, 2, 6, 6), (0, 2)),
            (3, (1, 2, 5, 6, 7), (2, 3, 4)), (3, (2, 4, 5, 3), (1, None, 2))]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("n,shape,size", ADAPTIVE)
@pytest.mark.parametrize("transpose", [False, True])
def test_adaptive_pools(tch, rng, dt, n, shape, size, transpose):
    x = rng.standard_normal(shape).astype(dt)
    tf = tch.nn.functional
    run(getattr(FF, f"adaptive_avg_pool{n}d"),
        getattr(tf, f"adaptive_avg_pool{n}d"), tch, x, size,
        transpose=transpose)
    run(getattr(FF, f"adaptive_max_pool{n}d"),
        getattr(tf, f"adaptive_max_pool{n}d"), tch, x, size,
        return_indices=True, transpose=transpose)


UNPOOL = [(1, (2, 3, 9), dict(kernel_size=2), None),
          (1, (3, 9), dict(kernel_size=3, stride=2, padding=1), (9,)),
          (2, (2, 3, 7, 9), dict(kernel_size=2), (7, 9)),
          (2, (3, 8, 8), dict(kernel_size=3, stride=2, padding=1), (8, 8)),
          (2, (3, 7, 7), dict(kernel_size=3, stride=2, padding=1), None),
          (2, (1, 2, 6, 6), dict(kernel_size=2, stride=2), (1, 2, 7, 7)),
          (3, (1, 2, 4, 5, 6), dict(kernel_size=2), (4, 5, 6))]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("n,shape,kw,out", UNPOOL)
def test_max_unpool_inverts_max_pool(tch, rng, dt, n, shape, kw, out):
    x = rng.standard_normal(shape).astype(dt)
    tf = tch.nn.functional
    ty, ti = getattr(tf, f"max_pool{n}d")(tch.tensor(x), return_indices=True,
                                          **kw)
    v, i = ty.numpy(), ti.numpy()
    fv = F.tensor(v, requires_grad=True)
    tv = tch.tensor(v, requires_grad=True)
    fy = getattr(FF, f"max_unpool{n}d")(fv, F.tensor(i), output_size=out,
                                        **kw)
    wy = getattr(tf, f"max_unpool{n}d")(tv, ti, output_size=out, **kw)
    np.testing.assert_array_equal(fy.detach().numpy(), wy.detach().numpy())
    g = rng.standard_normal(tuple(wy.shape)).astype(dt)
    fy.backward(F.tensor(g))
    wy.backward(tch.tensor(g))
    np.testing.assert_array_equal(fv.grad.numpy(), tv.grad.numpy())


def test_max_unpool_errors_match_torch_types(tch):
    tf = tch.nn.functional
    v = np.zeros((1, 1, 2, 2))
    raises_like(tch, FF.max_unpool2d, tf.max_unpool2d, v,
                np.array([[[[0, 1], [2, 99]]]]), 2)
    raises_like(tch, FF.max_unpool2d, tf.max_unpool2d, v,
                np.array([[[[0, 1], [2, 3]]]]), 2, output_size=(6, 6))
    raises_like(tch, FF.max_unpool2d, tf.max_unpool2d, v,
                np.array([[[[0, 1], [2, 3]]]], dtype=np.int32), 2)


MODULES = [
    ("MaxPool1d", (3, 2, 1), dict(ceil_mode=True), (2, 3, 10)),
    ("MaxPool2d", (3,), dict(stride=2, dilation=2), (2, 3, 9, 9)),
    ("MaxPool3d", (2,), {}, (1, 2, 4, 4, 4)),
    ("AvgPool1d", (3, 2, 1), dict(count_include_pad=False), (2, 3, 10)),
    ("AvgPool2d", (3, 2, 1), dict(ceil_mode=True, divisor_override=2),
     (2, 3, 9, 9)),
    ("AvgPool3d", (2,), {}, (1, 2, 4, 4, 4)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveAvgPool2d", ((3, None),), {}, (2, 3, 9, 9)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 5, 4, 4)),
    ("AdaptiveMaxPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveMaxPool2d", (3,), {}, (2, 3, 9, 9)),
    ("AdaptiveMaxPool3d", (2,), {}, (1, 2, 5, 4, 4)),
]


@pytest.mark.parametrize("name,args,kw,shape", MODULES)
def test_pool_modules_match_torch(tch, rng, name, args, kw, shape):
    x = rng.standard_normal(shape)
    fm, tm = getattr(nn, name)(*args, **kw), getattr(tch.nn, name)(*args,
                                                                   **kw)
    run(lambda t: fm(t), lambda t: tm(t), tch, x)


def test_max_pool_module_returns_indices_for_max_unpool(tch, rng):
    x = F.tensor(rng.standard_normal((1, 2, 6, 6)))
    y, i = nn.MaxPool2d(2, return_indices=True)(x)
    up = nn.MaxUnpool2d(2)(y, i)
    assert tuple(up.shape) == (1, 2, 6, 6)
    tu = tch.nn.MaxUnpool2d(2)(*tch.nn.MaxPool2d(2, return_indices=True)(
        tch.tensor(x.numpy())))
    np.testing.assert_array_equal(up.numpy(), tu.numpy())
    assert "kernel_size=2" in repr(nn.MaxPool2d(2))


def test_pools_run_on_the_test_device(test_device, rng):
    """The pool entries with depth, dilation and ceil mode on the queued
    test device give the CPU's values and gradients bit for bit (the same
    kernels run there)."""
    x = rng.standard_normal((1, 2, 5, 6, 7))
    outs = []
    for dev in ("cpu", test_device):
        t = F.tensor(x).to(dev).requires_grad_()
        y, i = FF.max_pool3d(t, 3, 2, 1, dilation=(1, 2, 1), ceil_mode=True,
                             return_indices=True)
        a = FF.avg_pool3d(t, 2, 2, 1, ceil_mode=True, divisor_override=3)
        (y.sum() + a.sum()).backward()
        outs.append([y.detach().cpu().numpy(), i.cpu().numpy(),
                     a.detach().cpu().numpy(),
                     t.grad.cpu().numpy()])
    for got, want in zip(*outs):
        np.testing.assert_array_equal(got, want)


def test_composed_spatial_ops_run_on_the_test_device(test_device, rng):
    """Adaptive pooling, unpooling, interpolate and the pad modes are
    composed of public ops; on the test device they give the CPU's
    values and gradients (1e-12: the same kernels, F64)."""
    x = rng.standard_normal((1, 2, 6, 7))
    outs = []
    for dev in ("cpu", test_device):
        t = F.tensor(x).to(dev).requires_grad_()
        m, i = FF.adaptive_max_pool2d(t, (4, 3), return_indices=True)
        p, j = FF.max_pool2d(t, 2, return_indices=True)
        ys = [FF.adaptive_avg_pool2d(t, (4, 3)), m,
              FF.max_unpool2d(p, j, 2, output_size=(6, 7)),
              FF.interpolate(t, scale_factor=1.5, mode="bicubic"),
              FF.pad(t, (2, 1, 3, 0), mode="reflect"),
              FF.pad(t, (2, -1, 3, 0), mode="circular")]
        sum(y.sum() for y in ys).backward()
        outs.append([y.detach().cpu().numpy() for y in ys] +
                    [i.cpu().numpy(), t.grad.cpu().numpy()])
    for got, want in zip(*outs):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_zero_dim_inputs_are_refused_as_torch_refuses_them(tch):
    tf = tch.nn.functional
    z = np.zeros(())
    for fn, args in (("max_pool1d", (1,)), ("avg_pool1d", (1,)),
                     ("adaptive_avg_pool1d", (1,)),
                     ("adaptive_max_pool1d", (1,))):
        raises_like(tch, getattr(FF, fn), getattr(tf, fn), z, *args)
    raises_like(tch, FF.interpolate, tf.interpolate, z, size=2)
    raises_like(tch, FF.pad, tf.pad, z, (1, 1), mode="reflect")
