"""Hostile input: every failure is a Python exception carrying the C
library's message; nothing crashes the interpreter."""
import gc

import numpy as np
import pytest

import foundry as F


def test_errors_carry_the_library_message_and_status():
    with pytest.raises(ValueError, match=r"shapes \[2,3\] and \[2,3\] do "
                       r"not match: 3 != 2") as e:
        F.ones(2, 3) @ F.ones(2, 3)
    assert isinstance(e.value, F.FoundryError)
    assert e.value.status == "TM_ESHAPE"
    with pytest.raises(ValueError, match="broadcast"):
        F.ones(3) + F.ones(4)
    with pytest.raises(TypeError) as e:
        F.ones(2, dtype=F.bool) - F.ones(2, dtype=F.bool)
    assert e.value.status == "TM_EDTYPE"
    with pytest.raises(IndexError):
        F.ones(3).select(0, 5)
    with pytest.raises(ValueError):
        F.ones(6).view(4, -1)


def test_bad_shapes_and_sizes():
    with pytest.raises(ValueError):
        F.zeros(-1)
    with pytest.raises((ValueError, MemoryError)):
        F.zeros(2 ** 62, 2 ** 62)
    with pytest.raises(ValueError, match="int64"):
        F.zeros(2 ** 70)
    with pytest.raises(MemoryError):
        F.empty(2 ** 45)  # 128 TiB
    with pytest.raises(ValueError, match="at most 8"):
        F.zeros(*([1] * 9))
    with pytest.raises(TypeError):
        F.zeros(2.5)
    with pytest.raises(TypeError):
        F.zeros("3")
    with pytest.raises(TypeError):
        F.ones(3).reshape(None)
    with pytest.raises(ValueError):
        F.ones(3).reshape(2, 2)
    with pytest.raises((ValueError, IndexError)):
        F.ones(3).transpose(0, 5)
    with pytest.raises(ValueError):
        F.arange(0, 10, 0)


def test_wrong_types_everywhere():
    t = F.ones(3)
    with pytest.raises(TypeError):
        t + "x"
    with pytest.raises(TypeError):
        t.add(object())
    with pytest.raises(TypeError):
        t @ "x"
    with pytest.raises(TypeError):
        F.cat([t, np.ones(3)])
    with pytest.raises(TypeError):
        F.nn.functional.linear(np.ones((2, 3)), t)
    with pytest.raises(TypeError):
        t.gather(0, [0, 1])
    with pytest.raises(TypeError):
        F.tensor(object())
    with pytest.raises(TypeError):
        t.to("float128")
    with pytest.raises(ValueError):
        F.nn.functional.mse_loss(t, t, reduction="avg")
    with pytest.raises(TypeError):
        t.backward(gradient=[1, 2, 3])
    with pytest.raises(TypeError):
        t.grad = "g"
    with pytest.raises(ValueError):
        F.device("tpu")


def test_wrong_dtypes():
    i = F.ones(3, dtype=F.int64)
    with pytest.raises(TypeError):
        F.nn.functional.linear(F.ones(2, 3), F.ones(2, 3, dtype=F.float64))
    with pytest.raises(TypeError):
        i.softmax(0)
    with pytest.raises(TypeError):
        i.exp_()  # float result into an int tensor
    with pytest.raises(TypeError):
        F.ones(3).index_select(0, F.tensor([0.5]))
    with pytest.raises(TypeError):
        F.nn.functional.cross_entropy(F.ones(2, 3, dtype=F.int64),
                                      F.tensor([0, 1]))


def test_objects_without_a_c_tensor_do_not_crash():
    t = F.Tensor.__new__(F.Tensor)  # __init__ never ran
    with pytest.raises(AttributeError):
        t.sum()
    with pytest.raises(AttributeError):
        F.ones(2) + t
    del t
    gc.collect()
    p = F.nn.Parameter.__new__(F.nn.Parameter, F.ones(2))
    assert p.requires_grad


def test_backward_misuse():
    x = F.ones(3, requires_grad=True)
    with pytest.raises(ValueError):
        (x * 2).backward()  # needs a gradient: not one element
    with pytest.raises(F.FoundryError):
        F.ones(1).backward()  # nothing requires grad
    y = (x * 2).sum()
    y.backward()
    with pytest.raises(F.FoundryError):
        y.backward()
    with pytest.raises(ValueError):
        (x * 2).backward(F.ones(4))


def test_many_failures_leak_nothing():
    gc.collect()
    before = F.memory_stats()["current_bytes"]
    for _ in range(200):
        for bad in (lambda: F.ones(2, 3) @ F.ones(2, 3),
                    lambda: F.ones(3)[F.tensor([5])],
                    lambda: F.ones(2)[[0, 1], [0]],
                    lambda: F.from_numpy(np.ones(3)[::-1])):
            with pytest.raises(Exception):
                bad()
    gc.collect()
    assert F.memory_stats()["current_bytes"] == before


def test_failed_allocations_raise_memory_error():
    lib = F._c.lib
    a = F.ones(100)
    lib.tm_alloc_fail_after(1)
    try:
        with pytest.raises(MemoryError):
            a + 1
    finally:
        lib.tm_alloc_fail_after(0)
    assert (a + 1).sum().item() == 200
