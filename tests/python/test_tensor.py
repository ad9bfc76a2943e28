"""Tensor basics: properties, numpy interop without copies, lifetimes,
repr, conversions."""
import gc
import pickle
import weakref

import numpy as np
import pytest

import foundry as F


def test_properties():
    t = F.zeros(2, 3, dtype=F.float64)
    assert t.shape == (2, 3) and t.size() == (2, 3) and t.size(-1) == 3
    assert t.ndim == 2 and t.dim() == 2 and t.numel() == 6 and len(t) == 2
    assert t.dtype is F.float64 and str(t.device) == "cpu"
    assert t.stride() == (3, 1) and t.strides == (3, 1)
    assert t.T.stride() == (1, 3) and not t.T.is_contiguous()
    assert t.is_contiguous() and t.element_size() == 8
    assert not t.requires_grad and t.grad is None and t.grad_fn is None
    assert t.is_leaf and t.is_floating_point()
    assert repr(t.shape) == "foundry.Size([2, 3])"
    assert F.tensor(3.5).item() == 3.5 and F.tensor(True).item() is True
    assert F.tensor(7).item() == 7 and isinstance(F.tensor(7).item(), int)


def test_tensor_from_python_data_infers_pytorch_dtypes():
    assert F.tensor([1.5, 2]).dtype is F.float32
    assert F.tensor([1, 2]).dtype is F.int64
    assert F.tensor([True]).dtype is F.bool
    assert F.tensor(np.zeros(2, np.float64)).dtype is F.float64
    assert F.tensor([[1, 2], [3, 4]], dtype=F.float16).tolist() == \
        [[1, 2], [3, 4]]
    b = F.tensor([1.0, 2.5, 3.3], dtype=F.bfloat16)
    assert b.dtype is F.bfloat16
    assert b.float().tolist() == [1.0, 2.5, 3.296875]  # bf16 rounding
    assert F.tensor([]).shape == (0,)
    with pytest.raises(ValueError, match="ragged"):
        F.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        F.tensor(["a"])
    with pytest.raises(TypeError, match="not supported"):
        F.tensor(np.zeros(2, np.complex64))


def test_numpy_shares_memory_both_ways():
    t = F.zeros(2, 3)
    a = t.numpy()
    a[1, 2] = 5
    assert t[1, 2].item() == 5
    assert np.shares_memory(a, np.asarray(t))
    v = t.T.numpy()  # strided view, still no copy
    assert v.strides == (4, 12) and v[2, 1] == 5
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    s = F.from_numpy(arr)
    s.add_(1)
    assert arr[0, 0] == 1
    assert s.data_ptr() == arr.ctypes.data
    # non-contiguous arrays are shared with their strides
    col = F.from_numpy(arr[:, 1])
    assert col.stride() == (3,) and col.tolist() == [2.0, 5.0]
    assert F.as_tensor(arr).data_ptr() == arr.ctypes.data


def test_array_interface_and_dtypes_round_trip():
    for name in ("float32", "float64", "float16", "int8", "uint8", "int16",
                 "int32", "int64", "bool"):
        a = (np.arange(6) % 2).astype(name).reshape(3, 2)
        t = F.from_numpy(a)
        assert t.dtype.name == name
        back = np.asarray(t)
        assert back.dtype == a.dtype
        np.testing.assert_array_equal(back, a)
    with pytest.raises(TypeError, match="bfloat16"):
        F.zeros(2, dtype=F.bfloat16).numpy()
    assert F.zeros(0, 4).numpy().shape == (0, 4)
    assert F.tensor(2.0).numpy().shape == ()


def test_tensor_keeps_numpy_array_alive():
    arr = np.arange(1000, dtype=np.float64)
    ref = weakref.ref(arr)
    t = F.from_numpy(arr)
    view = t[10:20]
    del arr
    gc.collect()
    assert ref() is not None  # the tensor's storage holds the array
    del t
    gc.collect()
    assert ref() is not None  # ... and so does a view cut from it
    assert view.sum().item() == sum(range(10, 20))
    del view
    gc.collect()
    assert ref() is None  # released with the last tensor


def test_numpy_array_keeps_tensor_memory_alive():
    t = F.arange(100, dtype=F.float32)
    a = t.numpy()
    del t
    gc.collect()
    F.randn(1000, 100)  # reuse the allocator's cache
    assert a[99] == 99 and a.sum() == sum(range(100))


def test_graph_keeps_borrowed_array_alive():
    arr = np.ones(4, np.float32)
    ref = weakref.ref(arr)
    w = F.ones(4, requires_grad=True)
    y = (w * F.from_numpy(arr)).sum()  # saved for backward
    del arr
    gc.collect()
    assert ref() is not None
    y.backward()
    del y
    gc.collect()
    assert ref() is None
    assert w.grad.tolist() == [1, 1, 1, 1]


def test_read_only_arrays_are_never_written():
    a = np.arange(4, dtype=np.float32)
    a.setflags(write=False)
    t = F.from_numpy(a)
    assert (t + 1).tolist() == [1, 2, 3, 4]
    with pytest.raises(F.FoundryError, match="read-only"):
        t.add_(1)
    with pytest.raises(F.FoundryError, match="read-only"):
        t[0] = 5
    assert a.tolist() == [0, 1, 2, 3]
    assert not np.asarray(t).flags.writeable
    frozen = np.frombuffer(b"\x00" * 16, dtype=np.float32)  # truly r/o
    with pytest.raises(F.FoundryError):
        F.from_numpy(frozen).fill_(1)


def test_arrays_that_cannot_be_shared_are_refused_clearly():
    a = np.arange(6, dtype=np.float32)
    with pytest.raises(ValueError, match="negative strides"):
        F.from_numpy(a[::-1])
    assert F.tensor(a[::-1]).tolist() == a[::-1].tolist()  # copies fine
    with pytest.raises(ValueError, match="byte order"):
        F.from_numpy(a.astype(">f4"))
    rec = np.zeros(3, dtype=[("x", np.int32), ("y", np.int16)])
    with pytest.raises(TypeError):
        F.from_numpy(rec)
    odd = np.ndarray((2,), np.float32, buffer=bytearray(16), strides=(6,))
    with pytest.raises(ValueError, match="not multiples"):
        F.from_numpy(odd)
    with pytest.raises(TypeError):
        F.from_numpy([1, 2])
    with pytest.raises(TypeError):
        F.from_numpy(np.zeros(2, np.uint32))
    with pytest.raises(ValueError):
        F.from_numpy(np.zeros((1,) * 9))


def test_resizing_a_shared_array_is_refused_by_numpy():
    a = np.zeros(10)
    t = F.from_numpy(a)
    with pytest.raises(ValueError):
        a.resize(100)  # would free the memory under the tensor
    assert t.sum().item() == 0


def test_repr_looks_like_pytorch():
    assert repr(F.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(F.tensor([1.5, -2.25])) == "tensor([ 1.5000, -2.2500])"
    assert repr(F.tensor([[1, 2], [3, 4]])) == \
        "tensor([[1, 2],\n        [3, 4]])"
    assert repr(F.tensor([1, 2], dtype=F.int32)) == \
        "tensor([1, 2], dtype=foundry.int32)"
    assert repr(F.tensor(3.0)) == "tensor(3.)"
    assert repr(F.tensor([True, False])) == "tensor([ True, False])"
    assert repr(F.ones(2, requires_grad=True)) == \
        "tensor([1., 1.], requires_grad=True)"
    assert "grad_fn=<MulBackward>" in repr(F.ones(2, requires_grad=True) * 2)
    assert repr(F.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert "..." in repr(F.zeros(2000))
    assert repr(F.tensor([float("nan"), float("inf")])) == \
        "tensor([nan, inf])"


def test_conversions():
    t = F.tensor([1.7, -2.2])
    assert t.long().tolist() == [1, -2] and t.int().dtype is F.int32
    assert t.double().dtype is F.float64 and t.half().dtype is F.float16
    assert t.to(F.float64).dtype is F.float64 and t.float() is t
    assert t.to("cpu") is t and t.cpu() is t
    assert t.to(F.zeros(1, dtype=F.int16)).dtype is F.int16
    assert F.tensor([0.0, 3.0]).bool().tolist() == [False, True]
    assert float(F.tensor([2.5])) == 2.5 and int(F.tensor(3)) == 3
    assert [x.item() for x in F.tensor([4, 5])] == [4, 5]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(F.ones(2))
    c = t.clone()
    assert c.data_ptr() != t.data_ptr() and F.equal(c, t)
    d = t.detach()
    assert d.data_ptr() == t.data_ptr()
    u = pickle.loads(pickle.dumps(F.tensor([[1, 2]], dtype=F.int16)))
    assert u.dtype is F.int16 and u.tolist() == [[1, 2]]
    import copy
    assert copy.deepcopy(t).tolist() == t.tolist()


def test_threads_and_memory_stats():
    n = F.get_num_threads()
    F.set_num_threads(1)
    assert F.get_num_threads() == 1
    F.set_num_threads(0)
    assert F.get_num_threads() == n
    before = F.memory_stats()["current_bytes"]
    x = F.zeros(1 << 20)
    assert F.memory_stats()["current_bytes"] >= before + (4 << 20)
    del x
    gc.collect()
    assert F.memory_stats()["current_bytes"] == before
