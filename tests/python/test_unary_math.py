"""Trigonometric, hyperbolic and log10 ops against PyTorch: values in F32
and F64, non-contiguous and broadcast (expanded) inputs, 0-d and empty
tensors, integer promotion, the numpy-style aliases, in-place forms and
gradients.

Tolerances: F64 1e-12 relative (libm against libm, both within a couple
of ulps of the exact value, so far tighter in practice); F32 4e-6 (a few
f32 ulps: Foundry and PyTorch use different single-precision
implementations); gradients in F64 1e-10 (different but exact-in-double
formulas)."""
import numpy as np
import pytest

import foundry as F

# name -> (torch name, input transform onto the op's domain)
OPS = {
    "tan": ("tan", lambda a: 1.2 * np.tanh(a)),
    "asin": ("asin", np.tanh), "arcsin": ("arcsin", np.tanh),
    "acos": ("acos", np.tanh), "arccos": ("arccos", np.tanh),
    "atan": ("atan", lambda a: 3 * a), "arctan": ("arctan", lambda a: a),
    "sinh": ("sinh", lambda a: 3 * a), "cosh": ("cosh", lambda a: 3 * a),
    "asinh": ("asinh", lambda a: 5 * a), "arcsinh": ("arcsinh", lambda a: a),
    "acosh": ("acosh", lambda a: np.abs(a) + 1.05),
    "arccosh": ("arccosh", lambda a: np.abs(a) + 1.05),
    "atanh": ("atanh", lambda a: 0.95 * np.tanh(a)),
    "arctanh": ("arctanh", lambda a: 0.95 * np.tanh(a)),
    "log10": ("log10", lambda a: np.abs(a) * 10 + 1e-3),
}
TOL = {"float32": 4e-6, "float64": 1e-12}


def check(got, want, dtype):
    w = want.detach().numpy()
    assert got.dtype.name == str(want.dtype).split(".")[1]
    assert tuple(got.shape) == tuple(w.shape)
    np.testing.assert_allclose(got.numpy(), w, rtol=TOL[dtype],
                               atol=TOL[dtype] * 1e-3, equal_nan=True)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_torch_in_every_layout(name, dtype, tch, rng):
    tname, dom = OPS[name]
    a = dom(rng.standard_normal((4, 6))).astype(dtype)
    f, t = F.tensor(a), tch.tensor(a)
    layouts = [(f, t), (f.T, t.T), (f[:, ::2], t[:, ::2]),
               (f[1], t[1]),  # 1-D
               (f[0, 0], t[0, 0]),  # 0-d
               (f[:0], t[:0]),  # empty
               (f[:1].expand(3, 6), t[:1].expand(3, 6))]  # stride 0
    for fv, tv in layouts:
        check(getattr(fv, name)(), getattr(tch, tname)(tv), dtype)
        check(getattr(F, name)(fv), getattr(tv, tname)(), dtype)


@pytest.mark.parametrize("name", sorted(OPS))
def test_in_place_forms_write_into_self(name, tch, rng):
    tname, dom = OPS[name]
    a = dom(rng.standard_normal((3, 4)))
    f, t = F.tensor(a), tch.tensor(a)
    fv, tv = f[:, 1:], t[:, 1:]
    assert getattr(fv, name + "_")() is fv
    getattr(tv, tname + "_")()
    check(f, t, "float64")  # only the view's elements changed


@pytest.mark.parametrize("name", ["tan", "asin", "acos", "atan", "sinh",
                                  "cosh", "asinh", "acosh", "atanh",
                                  "log10"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "uint8"])
def test_integer_and_bool_inputs_promote_to_float32(name, dtype, tch):
    a = np.array([0, 1, 2, 1, 0, 3]).astype(dtype)
    check(getattr(F.tensor(a), name)(), getattr(tch, name)(tch.tensor(a)),
          "float32")


@pytest.mark.parametrize("name", ["asin", "acos", "acosh", "atanh",
                                  "log10"])
def test_outside_the_domain_gives_nan_and_edges_give_inf(name, tch):
    a = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, np.inf, -np.inf, np.nan])
    check(getattr(F.tensor(a), name)(), getattr(tch, name)(tch.tensor(a)),
          "float64")


@pytest.mark.parametrize("name", ["tan", "sinh", "cosh", "atan", "asinh"])
def test_extremes_and_specials_match_torch(name, tch):
    a = np.array([0.0, -0.0, 1e-30, 88.0, -89.5, 700.0, -711.0, 1e300,
                  np.inf, -np.inf, np.nan], np.float64)
    for dt in ("float64", "float32"):
        with np.errstate(over="ignore"):  # 1e300 becomes inf in float32
            x = a.astype(dt)
        check(getattr(F.tensor(x), name)(),
              getattr(tch, name)(tch.tensor(x)), dt)


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradients_match_torch(name, tch, rng):
    tname, dom = OPS[name]
    a = dom(rng.standard_normal((3, 5)))
    g = rng.standard_normal((5, 3))
    f = F.tensor(a, dtype=F.float64, requires_grad=True)
    t = tch.tensor(a, dtype=tch.float64, requires_grad=True)
    # through a transposed view, so the gradient must come back transposed
    getattr(f.T, name)().backward(F.tensor(g))
    getattr(t.T, tname)().backward(tch.tensor(g))
    np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-10,
                               atol=1e-12)


def test_float32_gradient_keeps_float32(tch):
    f = F.tensor([0.1, 0.5], requires_grad=True)
    f.asin().sum().backward()
    assert f.grad.dtype is F.float32
    np.testing.assert_allclose(f.grad.numpy(), 1 / np.sqrt(1 - np.array(
        [0.1, 0.5]) ** 2), rtol=1e-6)


def test_in_place_on_an_integer_tensor_is_a_type_error(tch):
    with pytest.raises(TypeError):
        F.tensor([1, 2]).sinh_()
    with pytest.raises(RuntimeError):
        tch.tensor([1, 2]).sinh_()


def test_exp2_log2_and_predicates_have_every_form(tch):
    # the forms torch has: method, function and in-place for exp2/log2;
    # method and function for the predicates
    for name in ("exp2", "log2"):
        a = np.array([0.5, 1.0, 3.0])
        f = F.tensor(a)
        check(getattr(F, name)(f), getattr(tch, name)(tch.tensor(a)),
              "float64")
        check(getattr(f, name)(), getattr(tch, name)(tch.tensor(a)),
              "float64")
        assert getattr(f, name + "_")() is f
        check(f, getattr(tch.tensor(a), name + "_")(), "float64")
        check(getattr(F.tensor([1, 2]), name)(),
              getattr(tch, name)(tch.tensor([1, 2])), "float32")
    a = np.array([1.0, np.nan, np.inf, -np.inf])
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(
            getattr(F, name)(F.tensor(a)).numpy(),
            getattr(tch, name)(tch.tensor(a)).numpy())
        np.testing.assert_array_equal(
            getattr(F.tensor([1, 2]), name)().numpy(),
            getattr(tch.tensor([1, 2]), name)().numpy())
