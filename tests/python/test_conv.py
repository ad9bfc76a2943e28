"""conv1d/2d/3d and conv_transpose1d/2d/3d (functional and modules)
against PyTorch: values and the gradients of input, weight and bias for
many geometries, F32 and F64, non-contiguous input, empty batches, and
the exception types of bad input.

Tolerances: F64 1e-10 (rtol and atol: the same sums of at most a few
hundred N(0,1) products, taken in another order than PyTorch's, round
differently only near 1e-14); F32 1e-4 (F32 sums of that length, each
side rounding on its own)."""
import math

import numpy as np
import pytest

import foundry
import foundry.nn as nn
import foundry.nn.functional as F

TOL = {"float64": 1e-10, "float32": 1e-4}

# torch warns that its 'same' padding copies the input for even kernels
pytestmark = pytest.mark.filterwarnings(
    "ignore:Using padding='same':UserWarning")


def _pair_of(tch, rng, shape, dtype, noncontig=False):
    a = rng.standard_normal(shape)
    if noncontig:
        # the same values, stored transposed: a non-contiguous view
        t = foundry.tensor(np.ascontiguousarray(a.swapaxes(1, 2)),
                           dtype=getattr(foundry, dtype)).transpose(1, 2)
        assert not t.is_contiguous()
    else:
        t = foundry.tensor(a, dtype=getattr(foundry, dtype))
    r = tch.tensor(a, dtype=getattr(tch, dtype))
    t.requires_grad_(True)
    r.requires_grad_(True)
    return t, r


def _close(a, b, dtype):
    tol = TOL[dtype]
    np.testing.assert_allclose(a.detach().numpy() if hasattr(a, "detach")
                               else a, b.detach().numpy(), rtol=tol,
                               atol=tol)


def _check(tch, rng, f, tf, xs, ws, bias, dtype, noncontig=False,
           **kw):
    """f(x, w, b, **kw) against tf and the three gradients."""
    x, rx = _pair_of(tch, rng, xs, dtype, noncontig)
    w, rw = _pair_of(tch, rng, ws, dtype)
    b = rb = None
    if bias is not None:
        b, rb = _pair_of(tch, rng, (bias,), dtype)
    y = f(x, w, b, **kw)
    ry = tf(rx, rw, rb, **kw)
    assert tuple(y.shape) == tuple(ry.shape)
    assert y.dtype == getattr(foundry, dtype)
    _close(y, ry, dtype)
    up = rng.standard_normal(tuple(ry.shape))
    (y * foundry.tensor(up, dtype=y.dtype)).sum().backward()
    (ry * tch.tensor(up, dtype=ry.dtype)).sum().backward()
    _close(x.grad, rx.grad, dtype)
    _close(w.grad, rw.grad, dtype)
    if b is not None:
        _close(b.grad, rb.grad, dtype)


# (input shape, weight shape, bias, kwargs)
CONV = {
    1: [((2, 3, 9), (4, 3, 3), 4, {}),
        ((1, 4, 10), (6, 2, 3), 6, dict(stride=2, padding=1, groups=2)),
        ((2, 2, 11), (3, 2, 4), None, dict(dilation=2, padding=3)),
        ((2, 3, 8), (3, 1, 3), 3, dict(groups=3, padding="same")),
        ((2, 3, 8), (5, 3, 4), 5, dict(padding="same", dilation=3)),
        ((2, 3, 8), (5, 3, 4), 5, dict(padding="valid")),
        ((3, 8), (5, 3, 2), 5, dict(stride=3)),           # unbatched
        ((0, 3, 8), (5, 3, 2), 5, {}),                     # empty batch
        ((2, 3, 7), (4, 3, 7), 4, dict(padding=(0,)))],    # 1-wide output
    2: [((2, 3, 7, 6), (4, 3, 3, 3), 4, {}),
        ((2, 4, 9, 8), (6, 2, 3, 2), 6,
         dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
        ((1, 4, 6, 6), (4, 1, 3, 3), None, dict(groups=4, padding=1)),
        ((2, 2, 6, 7), (3, 2, 4, 2), 3, dict(padding="same",
                                             dilation=(1, 3))),
        ((2, 2, 6, 7), (3, 2, 2, 3), 3, dict(padding="same")),
        ((3, 5, 5), (2, 3, 3, 3), 2, dict(stride=2)),      # unbatched
        ((0, 3, 5, 5), (2, 3, 3, 3), 2, dict(padding=1))],
    3: [((2, 3, 5, 6, 4), (4, 3, 3, 2, 3), 4, {}),
        ((1, 4, 7, 6, 5), (6, 2, 3, 3, 2), 6,
         dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1),
              groups=2)),
        ((2, 2, 4, 5, 6), (2, 1, 2, 3, 2), None,
         dict(groups=2, padding="same", dilation=(2, 1, 1))),
        ((3, 4, 4, 4), (2, 3, 2, 2, 2), 2, dict(stride=2)),  # unbatched
        ((0, 3, 4, 4, 4), (2, 3, 2, 2, 2), 2, {})],
}

# (input shape, weight shape [C_in, C_out/groups, k...], bias, kwargs)
TRANSPOSE = {
    1: [((2, 3, 6), (3, 4, 3), 4, {}),
        ((1, 4, 5), (4, 3, 3), 6, dict(stride=2, padding=1,
                                       output_padding=1, groups=2)),
        ((2, 2, 5), (2, 3, 2), None, dict(stride=3, dilation=2,
                                          output_padding=2)),
        ((2, 3, 4), (3, 2, 3), 2, dict(dilation=3, output_padding=2)),
        ((3, 6), (3, 1, 4), 1, dict(stride=2)),              # unbatched
        ((0, 3, 6), (3, 2, 3), 2, {})],
    2: [((2, 3, 4, 5), (3, 4, 3, 3), 4, {}),
        ((2, 4, 4, 3), (4, 2, 3, 2), 4,
         dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
              groups=2)),
        ((1, 4, 3, 3), (4, 1, 3, 3), 4, dict(groups=4, stride=2,
                                             padding=1)),     # depthwise
        ((2, 2, 3, 4), (2, 3, 2, 3), None, dict(dilation=(2, 1),
                                                padding=(1, 1))),
        ((3, 4, 4), (3, 2, 3, 3), 2, dict(stride=2, output_padding=1)),
        ((0, 3, 4, 4), (3, 2, 3, 3), 2, {})],
    3: [((2, 3, 3, 4, 3), (3, 2, 2, 3, 2), 2, {}),
        ((1, 4, 3, 3, 4), (4, 3, 3, 2, 3), 6,
         dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0),
              dilation=(1, 2, 1), groups=2)),
        ((3, 3, 3, 3), (3, 2, 2, 2, 2), 2, dict(stride=2)),  # unbatched
        ((0, 3, 3, 3, 3), (3, 2, 2, 2, 2), None, {})],
}


def _cases(table):
    return [(nd, i) for nd in table for i in range(len(table[nd]))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("nd,i", _cases(CONV))
def test_conv_matches_torch(tch, rng, nd, i, dtype):
    xs, ws, b, kw = CONV[nd][i]
    _check(tch, rng, getattr(F, f"conv{nd}d"),
           getattr(tch.nn.functional, f"conv{nd}d"), xs, ws, b, dtype, **kw)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("nd,i", _cases(TRANSPOSE))
def test_conv_transpose_matches_torch(tch, rng, nd, i, dtype):
    xs, ws, b, kw = TRANSPOSE[nd][i]
    _check(tch, rng, getattr(F, f"conv_transpose{nd}d"),
           getattr(tch.nn.functional, f"conv_transpose{nd}d"), xs, ws, b,
           dtype, **kw)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_noncontiguous_input(tch, rng, nd):
    xs, ws, b, kw = CONV[nd][1]
    _check(tch, rng, getattr(F, f"conv{nd}d"),
           getattr(tch.nn.functional, f"conv{nd}d"), xs, ws, b, "float64",
           noncontig=True, **kw)
    xs, ws, b, kw = TRANSPOSE[nd][1]
    _check(tch, rng, getattr(F, f"conv_transpose{nd}d"),
           getattr(tch.nn.functional, f"conv_transpose{nd}d"), xs, ws, b,
           "float64", noncontig=True, **kw)


def test_positional_order_and_top_level(tch, rng):
    # conv_transpose's positional order: stride, padding, output_padding,
    # groups, dilation (conv's is stride, padding, dilation, groups)
    x = rng.standard_normal((1, 4, 3, 3))
    w = rng.standard_normal((4, 1, 3, 3))
    got = foundry.conv_transpose2d(foundry.tensor(x), foundry.tensor(w),
                                   None, 2, 1, 1, 2, 1)
    want = tch.conv_transpose2d(tch.tensor(x), tch.tensor(w), None, 2, 1, 1,
                                2, 1)
    _close(got, want, "float64")
    w2 = rng.standard_normal((4, 2, 2, 2))
    got = foundry.conv2d(foundry.tensor(x), foundry.tensor(w2), None, 1, 1,
                         2, 2)
    want = tch.conv2d(tch.tensor(x), tch.tensor(w2), None, 1, 1, 2, 2)
    _close(got, want, "float64")
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d",
                 "conv_transpose2d", "conv_transpose3d"):
        assert getattr(foundry, name) is getattr(F, name)


def test_empty_input_channels():
    # C_in = 0: the sums are empty, the result is the bias.  (PyTorch
    # 2.13 returns an empty [N, 0, L'] here instead, dropping the output
    # channels; Foundry keeps the definition.)
    x = foundry.zeros(2, 0, 5, requires_grad=True)
    w = foundry.zeros(3, 0, 2, requires_grad=True)
    b = foundry.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = F.conv1d(x, w, b)
    assert y.tolist() == [[[1.0] * 4, [-2.0] * 4, [3.0] * 4]] * 2
    y.sum().backward()
    assert tuple(x.grad.shape) == (2, 0, 5)
    assert b.grad.tolist() == [8.0, 8.0, 8.0]
    xt = foundry.zeros(1, 0, 3, requires_grad=True)
    yt = F.conv_transpose1d(xt, foundry.zeros(0, 2, 2), b[:2])
    assert yt.tolist() == [[[1.0] * 4, [-2.0] * 4]]


def test_half_precision_computes_in_f32(tch, rng):
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((3, 2, 3, 3))
    y = F.conv2d(foundry.tensor(x, dtype=foundry.float16),
                 foundry.tensor(w, dtype=foundry.float16), padding="same")
    assert y.dtype == foundry.float16
    want = tch.nn.functional.conv2d(tch.tensor(x), tch.tensor(w),
                                    padding="same")
    # F16 inputs and result: 1e-2 covers the F16 rounding of 18-term sums
    np.testing.assert_allclose(y.float().numpy(), want.numpy(), rtol=1e-2,
                               atol=1e-2)


# ------------------------------------------------------------ bad input

def _both_raise(tch, f, tf, exc=RuntimeError):
    with pytest.raises(exc):
        tf()
    with pytest.raises(exc) as e:
        f()
    assert isinstance(e.value, foundry.FoundryError)
    return str(e.value)


BAD_CONV = [
    ((), (3, 2, 3, 3), {}),                           # 0-d input
    ((5, 5), (3, 2, 3, 3), {}),                       # wrong input rank
    ((1, 1, 2, 5, 5), (3, 2, 3, 3), {}),
    ((1, 2, 5, 5), (3, 2, 3), {}),                    # wrong weight rank
    ((1, 2, 5, 5), (3, 1, 3, 3), dict(groups=2)),     # groups not dividing
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(groups=0)),
    ((1, 2, 5, 5), (3, 3, 3, 3), {}),                 # channel mismatch
    ((1, 2, 5, 5), (3, 2, 7, 7), {}),                 # output size <= 0
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(dilation=3)),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(padding="same", stride=2)),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(padding="full")),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(padding=-1)),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(stride=0)),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(dilation=0)),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(stride=(1, 1, 1))),
    ((1, 2, 5, 5), (0, 2, 3, 3), {}),                 # no output channels
    ((1, 2, 5, 5), (3, 2, 0, 3), {}),                 # empty kernel
]


@pytest.mark.parametrize("i", range(len(BAD_CONV)))
def test_conv2d_bad_input(tch, rng, i):
    xs, ws, kw = BAD_CONV[i]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    _both_raise(tch, lambda: F.conv2d(foundry.tensor(x), foundry.tensor(w),
                                      **kw),
                lambda: tch.nn.functional.conv2d(tch.tensor(x),
                                                 tch.tensor(w), **kw))


BAD_TRANSPOSE = [
    ((5, 5), (2, 3, 3, 3), {}),
    ((1, 2, 5, 5), (2, 3, 3), {}),
    ((1, 2, 5, 5), (3, 3, 3, 3), {}),                 # channel mismatch
    ((1, 3, 5, 5), (3, 3, 3, 3), dict(groups=2)),     # groups not dividing
    ((1, 2, 1, 1), (2, 3, 3, 3), dict(padding=2)),    # output size <= 0
    ((1, 2, 5, 5), (2, 3, 3, 3), dict(stride=2, output_padding=2)),
    ((1, 2, 5, 5), (2, 3, 3, 3), dict(output_padding=-1)),
    ((1, 2, 5, 5), (2, 3, 3, 3), dict(stride=0)),
    ((1, 2, 5, 5), (2, 3, 3, 3), dict(padding=(1, 1, 1))),
    ((1, 2, 5, 5), (2, 0, 3, 3), {}),                 # no output channels
]


@pytest.mark.parametrize("i", range(len(BAD_TRANSPOSE)))
def test_conv_transpose2d_bad_input(tch, rng, i):
    xs, ws, kw = BAD_TRANSPOSE[i]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    _both_raise(tch, lambda: F.conv_transpose2d(foundry.tensor(x),
                                                foundry.tensor(w), **kw),
                lambda: tch.nn.functional.conv_transpose2d(
                    tch.tensor(x), tch.tensor(w), **kw))


def test_bad_bias_and_dtypes(tch):
    x, w = foundry.randn(1, 2, 5), foundry.randn(3, 2, 3)
    msg = _both_raise(
        tch, lambda: F.conv1d(x, w, foundry.randn(4)),
        lambda: tch.nn.functional.conv1d(tch.randn(1, 2, 5),
                                         tch.randn(3, 2, 3), tch.randn(4)))
    assert "tm_conv1d" in msg and "[4]" in msg
    _both_raise(
        tch, lambda: F.conv_transpose1d(x, foundry.randn(2, 3, 3),
                                        foundry.randn(4)),
        lambda: tch.nn.functional.conv_transpose1d(
            tch.randn(1, 2, 5), tch.randn(2, 3, 3), tch.randn(4)))
    with pytest.raises(TypeError):
        F.conv1d(x.double(), w)
    with pytest.raises(TypeError):
        F.conv3d(foundry.zeros(1, 1, 2, 2, 2, dtype=foundry.int64),
                 foundry.zeros(1, 1, 1, 1, 1, dtype=foundry.int64))
    with pytest.raises(TypeError):
        F.conv_transpose2d(foundry.randn(1, 2, 3, 3), foundry.randn(2, 1, 2,
                                                                    2),
                           padding="same")


def test_error_names_values():
    with pytest.raises(ValueError) as e:
        F.conv_transpose3d(foundry.randn(1, 2, 3, 3, 3),
                           foundry.randn(2, 1, 2, 2, 2), stride=(1, 2, 2),
                           output_padding=(0, 1, 2))
    assert "tm_conv_transpose3d" in str(e.value)
    assert "{0,1,2}" in str(e.value) and "{1,2,2}" in str(e.value)
    with pytest.raises(ValueError) as e:
        F.conv3d(foundry.randn(1, 2, 3, 3, 3), foundry.randn(2, 2, 2, 4, 2))
    assert "tm_conv3d" in str(e.value) and "2x4x2" in str(e.value)


# -------------------------------------------------------------- modules

def _copy_params(fm, tm, tch):
    with tch.no_grad():
        for (fname, fp), (tname, tp) in zip(fm.named_parameters(),
                                            tm.named_parameters()):
            assert fname == tname and tuple(fp.shape) == tuple(tp.shape)
            tp.copy_(tch.from_numpy(fp.detach().numpy().copy()))


def _check_module(tch, rng, fm, tm, xs, **kw):
    fm.double()
    tm.double()
    _copy_params(fm, tm, tch)
    assert repr(fm) == repr(tm)
    x = rng.standard_normal(xs)
    fx = foundry.tensor(x, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    fy, ty = fm(fx, **kw), tm(tx, **kw)
    _close(fy, ty, "float64")
    g = rng.standard_normal(tuple(ty.shape))
    fy.backward(foundry.tensor(g))
    ty.backward(tch.tensor(g))
    _close(fx.grad, tx.grad, "float64")
    for (n, fp), (_, tp) in zip(fm.named_parameters(),
                                tm.named_parameters()):
        _close(fp.grad, tp.grad, "float64")


MODULES = [
    ("Conv1d", (3, 4, 3), dict(stride=2, padding=1), (2, 3, 9)),
    ("Conv1d", (4, 6, 4), dict(padding="same", groups=2, bias=False),
     (4, 8)),
    ("Conv2d", (4, 6, (3, 2)), dict(dilation=2, groups=2), (2, 4, 8, 7)),
    ("Conv2d", (2, 3, 3), dict(padding="valid"), (1, 2, 5, 5)),
    ("Conv3d", (2, 4, (2, 3, 2)), dict(stride=(1, 2, 1), padding=1),
     (2, 2, 4, 5, 4)),
    ("ConvTranspose1d", (3, 4, 3), dict(stride=2, output_padding=1),
     (2, 3, 5)),
    ("ConvTranspose2d", (4, 6, (3, 2)), dict(stride=2, padding=1, groups=2,
                                             dilation=(1, 2)),
     (2, 4, 3, 4)),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2, bias=False),
     (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("i", range(len(MODULES)))
def test_modules_match_torch(tch, rng, i):
    name, args, kw, xs = MODULES[i]
    _check_module(tch, rng, getattr(nn, name)(*args, **kw),
                  getattr(tch.nn, name)(*args, **kw), xs)


def test_conv_transpose_output_size(tch, rng):
    fm, tm = nn.ConvTranspose2d(2, 3, 3, stride=2), \
        tch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    for size in ([12, 12], [11, 12], (1, 3, 12, 11)):
        _check_module(tch, rng, fm, tm, (1, 2, 5, 5), output_size=size)
    fm1, tm1 = nn.ConvTranspose1d(2, 3, 3, stride=3), \
        tch.nn.ConvTranspose1d(2, 3, 3, stride=3)
    _check_module(tch, rng, fm1, tm1, (2, 4), output_size=[13])  # unbatched
    x = foundry.randn(1, 2, 5, 5, dtype=foundry.float64)
    tx = tch.randn(1, 2, 5, 5, dtype=tch.float64)
    for bad in ([13, 13], [10, 11], [12]):
        with pytest.raises(ValueError):
            tm(tx, output_size=bad)
        with pytest.raises(ValueError):
            fm(x, output_size=bad)


def test_module_init_like_torch():
    # kaiming_uniform(a=sqrt(5)) and the bias both draw from
    # U(-1/sqrt(fan_in), 1/sqrt(fan_in)); fan_in = C_in/groups * prod(k)
    for m, fan_in in ((nn.Conv3d(8, 16, 3, groups=2), 4 * 27),
                      (nn.Conv1d(6, 64, 5), 30),
                      (nn.ConvTranspose2d(16, 8, 3), 8 * 9)):
        bound = 1 / math.sqrt(fan_in)
        for p in (m.weight, m.bias):
            v = np.abs(p.detach().numpy())
            assert v.max() <= bound
            # thousands of uniform draws (64 for the smallest bias): the
            # largest is within 20% of the bound unless the init is wrong
            # (probability below 1e-6 for 64 draws)
            assert v.max() > 0.8 * bound
    assert tuple(nn.ConvTranspose2d(16, 8, 3, groups=4).weight.shape) == \
        (16, 2, 3, 3)


def test_module_bad_arguments(tch):
    bad = [("Conv2d", (2, 3, 3), dict(groups=2)),
           ("Conv2d", (2, 3, 3), dict(groups=0)),
           ("Conv1d", (3, 2, 3), dict(groups=2)),
           ("Conv2d", (2, 3, 3), dict(padding_mode="foo")),
           ("Conv2d", (2, 3, 3), dict(padding="same", stride=2)),
           ("Conv3d", (2, 3, 3), dict(padding="full")),
           ("ConvTranspose2d", (2, 3, 3), dict(padding_mode="reflect")),
           ("ConvTranspose1d", (2, 4, 3), dict(groups=3))]
    for name, args, kw in bad:
        with pytest.raises(ValueError):
            getattr(tch.nn, name)(*args, **kw)
        with pytest.raises(ValueError):
            getattr(nn, name)(*args, **kw)


def test_conv_transpose_module_refuses_string_padding_in_forward(tch):
    fm = nn.ConvTranspose2d(2, 3, 3, padding="same")
    tm = tch.nn.ConvTranspose2d(2, 3, 3, padding="same")
    with pytest.raises(TypeError):
        tm(tch.randn(1, 2, 4, 4))
    with pytest.raises(TypeError):
        fm(foundry.randn(1, 2, 4, 4))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes(tch, rng, mode):
    # Conv*d pads with F.pad(mode) and then convolves unpadded, as torch;
    # where this build's F.pad lacks the mode, forward says so
    fm = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode)
    tm = tch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode)
    try:
        F.pad(foundry.zeros(1, 1, 3, 3), [1, 1, 1, 1], mode=mode)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fm(foundry.zeros(1, 2, 5, 5))
        return
    _check_module(tch, rng, fm, tm, (2, 2, 5, 6))


def test_conv_nd_on_the_test_device_matches_the_cpu(test_device, rng):
    # the test device runs the CPU's entries on a worker thread, so the
    # results must be bit-equal to the CPU's
    for f, xs, ws, kw in (
            (F.conv3d, (2, 2, 4, 3, 4), (4, 1, 2, 2, 3),
             dict(stride=(1, 2, 1), padding="valid", groups=2)),
            (F.conv1d, (2, 3, 7), (2, 3, 4), dict(padding="same")),
            (F.conv_transpose3d, (1, 2, 2, 3, 2), (2, 3, 2, 2, 2),
             dict(stride=2, output_padding=1)),
            (F.conv_transpose1d, (2, 4, 5), (4, 1, 3),
             dict(groups=2, dilation=2))):
        cpu = [foundry.tensor(rng.standard_normal(s), requires_grad=True)
               for s in (xs, ws)]
        dev = [t.detach().to(test_device).requires_grad_(True) for t in cpu]
        yc, yd = f(*cpu, **kw), f(*dev, **kw)
        assert yd.device == test_device
        assert yd.tolist() == yc.tolist()
        yc.sum().backward()
        yd.sum().backward()
        for a, b in zip(cpu, dev):
            assert b.grad.tolist() == a.grad.tolist()
