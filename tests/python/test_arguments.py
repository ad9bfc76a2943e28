"""No argument is silently ignored: one that is accepted is honoured, or
refused with NotImplementedError naming it; a device that is not available
is refused with FoundryDeviceError (a RuntimeError) naming it (a
representative set of the package's signatures)."""
import numpy as np
import pytest

import foundry as F
from foundry import nn

FACTORIES = {
    "tensor": lambda **kw: F.tensor([1.0, 2.0], **kw),
    "as_tensor": lambda **kw: F.as_tensor([1.0, 2.0], **kw),
    "zeros": lambda **kw: F.zeros(2, 3, **kw),
    "ones": lambda **kw: F.ones(2, **kw),
    "empty": lambda **kw: F.empty(2, **kw),
    "full": lambda **kw: F.full((2,), 1.5, **kw),
    "arange": lambda **kw: F.arange(4, **kw),
    "linspace": lambda **kw: F.linspace(0, 1, 5, **kw),
    "eye": lambda **kw: F.eye(3, **kw),
    "rand": lambda **kw: F.rand(2, **kw),
    "randn": lambda **kw: F.randn(2, **kw),
    "randint": lambda **kw: F.randint(0, 5, (3,), **kw),
    "randperm": lambda **kw: F.randperm(4, **kw),
    "zeros_like": lambda **kw: F.zeros_like(F.ones(2), **kw),
    "ones_like": lambda **kw: F.ones_like(F.ones(2), **kw),
    "empty_like": lambda **kw: F.empty_like(F.ones(2), **kw),
    "full_like": lambda **kw: F.full_like(F.ones(2), 3, **kw),
    "rand_like": lambda **kw: F.rand_like(F.ones(2), **kw),
    "randn_like": lambda **kw: F.randn_like(F.ones(2), **kw),
    "randint_like": lambda **kw: F.randint_like(F.ones(2), 5, **kw),
}
PINNABLE = ("tensor", "empty", "rand", "randn", "randperm")


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_create_on_the_cpu_or_refuse_the_device(name):
    make = FACTORIES[name]
    for dev in (None, "cpu", F.device("cpu"), "cpu:0"):
        assert make(device=dev).device == "cpu"
    if not F.is_available("cuda"):  # refused, naming the argument
        with pytest.raises(RuntimeError, match="device='cuda'"):
            make(device="cuda")
    with pytest.raises(ValueError):
        make(device="tpu")  # not a device at all


@pytest.mark.parametrize("name", PINNABLE)
def test_pin_memory_true_is_refused(name):
    make = FACTORIES[name]
    assert make(pin_memory=False).device == "cpu"
    with pytest.raises(NotImplementedError, match="pin_memory=True"):
        make(pin_memory=True)


def test_to_copy_true_always_copies():
    t = F.ones(3)
    assert t.to(F.float32) is t
    c = t.to(F.float32, copy=True)
    assert c is not t and c.data_ptr() != t.data_ptr()
    assert t.to(dtype=F.float64, copy=True).dtype is F.float64
    assert t.to(non_blocking=True) is t  # synchronous is what it allows


def test_sum_and_prod_give_the_dtype_asked_for(tch):
    a = [[100, 27], [3, 4]]
    for name, dt in (("sum", "int32"), ("prod", "int16"),
                     ("sum", "float64"), ("sum", "int8")):
        got = getattr(F.tensor(a), name)(dtype=getattr(F, dt))
        want = getattr(tch.tensor(a), name)(dtype=getattr(tch, dt))
        assert got.dtype.name == dt
        assert got.tolist() == want.tolist()  # int8 wraps in both


def test_a_float_reduction_refuses_an_integer_dtype(tch):
    with pytest.raises(TypeError, match="float dtype"):
        F.ones(3).mean(dtype=F.int64)
    with pytest.raises(RuntimeError):
        tch.ones(3).mean(dtype=tch.int64)
    assert F.ones(3).mean(dtype=F.float64).dtype is F.float64


def test_optimizer_switches_are_honoured_or_refused():
    p = [nn.Parameter(F.ones(2))]
    for k in ("foreach", "fused"):  # one fused C pass whatever they say
        for v in (None, False, True):
            F.optim.Adam(p, **{k: v})
    for k in ("capturable", "differentiable"):
        F.optim.SGD(p, lr=0.1, **{k: False})
        with pytest.raises(NotImplementedError, match=k + "=True"):
            F.optim.AdamW(p, **{k: True})


def test_array_copy_false_refuses_a_conversion():
    t = F.ones(3)
    assert np.asarray(t, copy=False).dtype == np.float32
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


def test_safe_open_refuses_an_unavailable_device(tmp_path):
    path = tmp_path / "t.safetensors"
    F.save_file({"a": F.ones(2)}, path)
    with F.safe_open(path, device="cpu") as f:
        assert f.get_tensor("a").tolist() == [1.0, 1.0]
    if not F.is_available("cuda"):
        with pytest.raises(RuntimeError, match="device='cuda'"):
            F.load_file(path, device="cuda")


def test_sort_and_topk_flags_are_honoured():
    t = F.tensor([3.0, 1.0, 2.0, 1.0])
    # always stable and sorted: what stable=False / sorted=False allow
    assert F.sort(t, stable=False).indices.tolist() == [1, 3, 2, 0]
    assert F.topk(t, 2, sorted=False).values.tolist() == [3.0, 2.0]
