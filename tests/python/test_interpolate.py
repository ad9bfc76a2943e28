"""interpolate and nn.Upsample* against PyTorch: every mode, size or
scale_factor (used in the coordinate transform unless
recompute_scale_factor), align_corners, F32 and F64 values and
gradients, non-contiguous and empty-batch inputs, and errors with
PyTorch's exception types.

Tolerances: F64 1e-12 (the same weights, sums in another order); F32
2e-5 (bicubic sums 16 products of weights up to ~1.1; PyTorch's 2-D
kernels multiply the two dims' weights first, this computes dim by
dim)."""
import numpy as np
import pytest

import foundry as F
import foundry.nn as nn
import foundry.nn.functional as FF

TOL = {"float64": 1e-12, "float32": 2e-5}


def run(tch, x, transpose=False, fm=None, tm=None, **kw):
    fx = F.tensor(x, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    fi, ti = fx, tx
    if transpose:
        fi, ti = fx.transpose(-1, -2), tx.transpose(-1, -2)
    fy = fm(fi) if fm else FF.interpolate(fi, **kw)
    ty = tm(ti) if tm else tch.nn.functional.interpolate(ti, **kw)
    tol = TOL[str(x.dtype)]
    assert tuple(fy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(),
                               rtol=tol, atol=tol)
    if ty.numel():
        g = np.random.default_rng(4).standard_normal(tuple(ty.shape))
        fy.backward(F.tensor(g.astype(x.dtype)))
        ty.backward(tch.tensor(g.astype(x.dtype)))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(),
                                   rtol=tol, atol=tol)


CASES = [
    ((2, 3, 7), dict(size=12, mode="nearest")),
    ((2, 3, 7), dict(scale_factor=1.7, mode="nearest")),
    ((2, 3, 7), dict(scale_factor=0.6, mode="nearest-exact")),
    ((2, 3, 7), dict(size=4, mode="linear")),
    ((2, 3, 7), dict(scale_factor=2.3, mode="linear", align_corners=True)),
    ((2, 3, 7), dict(size=7, mode="linear")),
    ((2, 3, 7), dict(size=1, mode="linear", align_corners=True)),
    ((1, 2, 5, 6), dict(size=(9, 4), mode="nearest")),
    ((1, 2, 5, 6), dict(scale_factor=2, mode="nearest")),
    ((1, 2, 5, 6), dict(scale_factor=(1.5, 0.7), mode="nearest-exact")),
    ((1, 2, 5, 6), dict(size=(9, 4), mode="bilinear")),
    ((1, 2, 5, 6), dict(size=(9, 4), mode="bilinear", align_corners=True)),
    ((1, 2, 5, 6), dict(scale_factor=1.3, mode="bilinear")),
    ((1, 2, 5, 6), dict(scale_factor=1.3, mode="bilinear",
                        recompute_scale_factor=True)),
    ((1, 2, 5, 6), dict(size=(11, 3), mode="bicubic")),
    ((1, 2, 5, 6), dict(size=(11, 3), mode="bicubic", align_corners=True)),
    ((1, 2, 5, 6), dict(scale_factor=(0.6, 2.5), mode="bicubic")),
    ((1, 2, 5, 6), dict(size=(3, 4), mode="area")),
    ((1, 2, 4, 5, 3), dict(scale_factor=1.5, mode="trilinear")),
    ((1, 2, 4, 5, 3), dict(size=(2, 7, 3), mode="trilinear",
                           align_corners=True)),
    ((1, 2, 4, 5, 3), dict(size=(2, 7, 6), mode="nearest")),
    ((0, 2, 5, 6), dict(size=(3, 8), mode="bilinear")),
]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("shape,kw", CASES)
def test_interpolate_matches_torch(tch, rng, dt, shape, kw):
    run(tch, rng.standard_normal(shape).astype(dt), **kw)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate_non_contiguous_input(tch, rng, mode):
    run(tch, rng.standard_normal((2, 2, 6, 5)), transpose=True,
        size=(7, 9), mode=mode)


def raises_like(tch, x, **kw):
    with pytest.raises(Exception) as want:
        tch.nn.functional.interpolate(tch.tensor(x), **kw)
    with pytest.raises(want.type):
        FF.interpolate(F.tensor(x), **kw)


def test_interpolate_errors_match_torch_types(tch):
    x = np.zeros((1, 1, 4))
    raises_like(tch, x, size=3, scale_factor=2.0)
    raises_like(tch, x)
    raises_like(tch, x, size=3, mode="bilinear")
    raises_like(tch, x, size=3, mode="nearest", align_corners=True)
    raises_like(tch, x, size=3, mode="foo")
    raises_like(tch, x, size=0)
    raises_like(tch, np.zeros(4), size=3)
    raises_like(tch, x.astype(np.int64), size=3)
    raises_like(tch, x.astype(np.int64), size=3, mode="linear")
    raises_like(tch, np.zeros((1, 1, 4, 4)), size=(3,))
    raises_like(tch, np.zeros((1, 1, 4, 4)), scale_factor=-1.0)
    raises_like(tch, x, size=3, recompute_scale_factor=True)
    raises_like(tch, x, size=3, mode="linear", antialias=True)


AA_CASES = [dict(size=(4, 5)), dict(size=(20, 6)), dict(scale_factor=0.37),
            dict(scale_factor=(2.5, 0.5)),
            dict(size=(4, 5), align_corners=True), dict(size=(3, 30))]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kw", AA_CASES)
def test_antialias_matches_torch(tch, rng, dt, mode, kw):
    run(tch, rng.standard_normal((2, 2, 9, 13)).astype(dt), mode=mode,
        antialias=True, **kw)


MODULES = [
    ("Upsample", dict(scale_factor=2)),
    ("Upsample", dict(size=(5, 9), mode="bilinear")),
    ("Upsample", dict(scale_factor=1.5, mode="bicubic", align_corners=True)),
    ("UpsamplingNearest2d", dict(scale_factor=2)),
    ("UpsamplingBilinear2d", dict(size=(7, 3))),
]


@pytest.mark.parametrize("name,kw", MODULES)
def test_upsample_modules_match_torch(tch, rng, name, kw):
    run(tch, rng.standard_normal((2, 3, 4, 5)), fm=getattr(nn, name)(**kw),
        tm=getattr(tch.nn, name)(**kw))
    assert "mode=" in repr(getattr(nn, name)(**kw))
