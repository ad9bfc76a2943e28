"""foundry.device and tensors, modules and optimizers on devices.

Devices are checked against torch.device where torch is installed (str and
repr; torch knows no "metal" or "test", whose forms are cuda's with the
type renamed).  The tests that move tensors off the CPU use the test
device (the `test_device` fixture of conftest.py: tests/backend's shared
object registered as "test"); they skip until it is built.  Results there
must equal the CPU's bitwise for exact ops and whole training runs: a
backend computes what the CPU computes."""
import ctypes
import pickle

import numpy as np
import pytest

import foundry as F
from foundry import nn

STRINGS = ["cpu", "cpu:0", "cuda", "cuda:0", "cuda:1", "cuda:15", "metal",
           "metal:0", "metal:3", "test", "test:0", "test:2"]
BAD = ["tpu", "CUDA", "", "cuda:", "cuda:x", "cuda:-1", "cuda:1:2",
       "cuda 1", " cuda", "cpu:1", "cuda:16"]
STATS = {"current_bytes", "peak_bytes", "cached_bytes", "allocs", "frees"}


def as_torch(tch, s):
    """torch's device for a device string, and the type it stands for."""
    kind = s.split(":")[0]
    if kind in ("metal", "test"):
        return tch.device(s.replace(kind, "cuda")), kind
    return tch.device(s), None


def torch_form(text, kind):
    return text if kind is None else text.replace("cuda", kind)


# ----------------------------------------------------------------- device
@pytest.mark.parametrize("s", STRINGS)
def test_device_strings_match_torch(s, tch):
    d = F.device(s)
    t, kind = as_torch(tch, s)
    assert str(d) == torch_form(str(t), kind) == s
    assert repr(d) == torch_form(repr(t), kind)
    assert d.type == torch_form(t.type, kind)
    assert d.index == t.index  # None for a bare type, as torch
    assert F.device(d) == d and F.device(str(d)) == d


def test_device_from_type_and_index(tch):
    assert F.device("cuda", 1) == F.device("cuda:1")
    assert repr(F.device("cuda", 1)) == repr(tch.device("cuda", 1))
    assert F.device(type="metal", index=2) == F.device("metal:2")
    assert F.device(3) == F.device("cuda:3")  # an int is a cuda index
    assert F.device("cuda", None).index is None
    assert F.device(F.device("test:1")) == F.device("test:1")
    with pytest.raises(RuntimeError, match="index"):
        F.device("cuda:1", 0)  # two indices
    with pytest.raises(RuntimeError):
        tch.device("cuda:1", 0)
    for bad in (-1, ("cuda", -1)):
        with pytest.raises(RuntimeError, match="negative"):
            F.device(*bad) if isinstance(bad, tuple) else F.device(bad)
    with pytest.raises(RuntimeError, match="out of range"):
        F.device("cuda", 16)  # the library's range check
    for bad in (1.0, None, b"cpu", True):
        with pytest.raises(TypeError):
            F.device(bad)


def test_device_equality_and_hash(tch):
    pairs = [("cuda", "cuda:0"), ("cpu", "cpu:0"), ("cuda:1", "cuda:1"),
             ("cuda:0", "cuda:1"), ("cuda:1", "mps:1"), ("cpu", "cpu")]
    for a, b in pairs:
        equal = tch.device(a) == tch.device(b)
        fa, fb = F.device(a), F.device(b.replace("mps", "metal"))
        assert (fa == fb) is equal, (a, b)
        assert (fa != fb) is not equal, (a, b)
        if equal:
            assert hash(fa) == hash(fb)
    assert len({F.device("test:0"), F.device("test", 0), F.device("test"),
                F.device("cpu")}) == 3
    # unlike torch, a device equals the string it prints as
    assert F.device("cuda:1") == "cuda:1" and F.device("cpu") == "cpu"
    assert F.device("cuda") != "cuda:0" and F.device("cpu") != "tpu"
    assert {F.device("cuda:1"): 1}["cuda:1"] == 1
    assert F.device("cpu") != 0 and F.device("cpu") != F.float32


@pytest.mark.parametrize("s", BAD)
def test_invalid_device_strings_raise_runtime_error(s, tch):
    with pytest.raises(RuntimeError) as e:
        F.device(s)
    assert isinstance(e.value, F.FoundryError)
    assert "not a device" in str(e.value) or "out of range" in str(e.value)
    if s not in ("cpu:1", "cuda:16"):  # torch takes those
        with pytest.raises(RuntimeError):
            tch.device(s)


def test_device_is_immutable_and_pickles():
    d = F.device("cuda:1")
    with pytest.raises(AttributeError):
        d.index = 2
    for x in (d, F.device("cuda"), F.device("cpu")):
        y = pickle.loads(pickle.dumps(x))
        assert y == x and repr(y) == repr(x)


# ------------------------------------------------------------ CPU tensors
def test_cpu_tensors_report_the_cpu(tch):
    t = F.ones(2, 3)
    assert t.device == F.device("cpu") and t.device.index is None
    assert repr(t.device) == repr(tch.ones(2).device)
    assert t.is_cpu and not t.is_cuda
    assert F.zeros(2, device="cpu:0").device == F.device("cpu")


def test_to_the_cpu_returns_self():
    t = F.ones(3)
    for d in ("cpu", "cpu:0", F.device("cpu")):
        assert t.to(d) is t
        assert t.to(device=d) is t
    assert t.cpu() is t
    u = t.to("cpu", F.float64)
    assert u.dtype is F.float64 and u.device == "cpu"
    assert t.to(F.device("cpu"), dtype=F.float16).dtype is F.float16
    assert t.to(F.ones(1, dtype=F.int32)).dtype is F.int32  # other's
    assert t.to("float64").dtype is F.float64  # a dtype name, not a device


CREATE = {
    "tensor": lambda **kw: F.tensor([[1.5, -2.0], [3.0, 4.0]], **kw),
    "as_tensor": lambda **kw: F.as_tensor([1.0, 2.0], **kw),
    "zeros": lambda **kw: F.zeros(2, 3, **kw),
    "ones": lambda **kw: F.ones(2, **kw),
    "empty": lambda **kw: F.empty(2, **kw).fill_(7),
    "full": lambda **kw: F.full((2, 2), 1.5, **kw),
    "arange": lambda **kw: F.arange(1, 10, 2, **kw),
    "linspace": lambda **kw: F.linspace(0, 1, 7, **kw),
    "eye": lambda **kw: F.eye(3, 4, **kw),
    "rand": lambda **kw: F.rand(5, generator=F.Generator().manual_seed(3),
                                **kw),
    "randn": lambda **kw: F.randn(2, 3,
                                  generator=F.Generator().manual_seed(4),
                                  **kw),
    "randint": lambda **kw: F.randint(0, 9, (6,),
                                      generator=F.Generator().manual_seed(5),
                                      **kw),
    "randperm": lambda **kw: F.randperm(
        6, generator=F.Generator().manual_seed(6), **kw),
    "zeros_like": lambda **kw: F.zeros_like(F.ones(2), **kw),
    "ones_like": lambda **kw: F.ones_like(F.ones(2), **kw),
    "full_like": lambda **kw: F.full_like(F.ones(2), 3, **kw),
    "empty_like": lambda **kw: F.empty_like(F.ones(2), **kw).fill_(1),
    "rand_like": lambda **kw: F.rand_like(
        F.ones(2), generator=F.Generator().manual_seed(7), **kw),
    "randn_like": lambda **kw: F.randn_like(
        F.ones(2), generator=F.Generator().manual_seed(8), **kw),
    "randint_like": lambda **kw: F.randint_like(
        F.ones(2), 5, generator=F.Generator().manual_seed(9), **kw),
}


@pytest.mark.parametrize("name", sorted(CREATE))
def test_creation_on_the_cpu(name):
    want = CREATE[name]().tolist()
    for d in ("cpu", F.device("cpu"), "cpu:0"):
        t = CREATE[name](device=d)
        assert t.device == F.device("cpu") and t.tolist() == want


def test_unavailable_devices_raise_runtime_errors_naming_them():
    for name in ("cuda", "metal"):
        if F.is_available(name):
            continue
        assert F.device_count(name) == 0
        with pytest.raises(RuntimeError, match=name) as e:
            F.zeros(2, device=f"{name}:0")
        assert isinstance(e.value, F.FoundryError)
        assert e.value.status == "TM_EDEVICE"
        assert "device='" + name + ":0'" in str(e.value)
        with pytest.raises(RuntimeError, match=name):
            F.ones(2).to(f"{name}:0")
        with pytest.raises(RuntimeError, match=name):
            F.arange(3, device=name)
        with pytest.raises(RuntimeError, match=name):
            F.memory_stats(name)
        with pytest.raises(RuntimeError, match=name):
            F.synchronize(f"{name}:0")
        with pytest.raises(RuntimeError, match=name):
            nn.Linear(2, 2).to(name)
    with pytest.raises(RuntimeError, match="not a device"):
        F.zeros(2, device="tpu")


def test_device_queries():
    assert F.device_count("cpu") == 1 and F.device_count(F.device("cpu"))
    assert F.is_available("cpu") and F.is_available(F.device("cpu"))
    assert not F.is_available("cuda:15") or F.device_count("cuda") == 16
    with pytest.raises(RuntimeError):
        F.device_count("tpu")
    with pytest.raises(TypeError):
        F.device_count(None)
    assert F._c.lib.tm_last_status() == 0  # a "no" is not left as an error
    F.synchronize()
    F.synchronize("cpu")


def test_memory_stats_and_cache():
    s = F.memory_stats()
    assert set(s) == STATS and all(isinstance(v, int) for v in s.values())
    assert set(F.memory_stats("cpu")) == STATS
    before = F.memory_stats("cpu")["current_bytes"]
    t = F.empty(1 << 16)
    assert F.memory_stats("cpu")["current_bytes"] >= before + t.nbytes
    del t
    F.empty_cache()
    assert F.memory_stats("cpu")["cached_bytes"] == 0
    F.set_cache_limit(1 << 28, "cpu")  # the default cap
    with pytest.raises(ValueError):
        F.set_cache_limit(-1)


def test_the_extension_exports_its_symbols_globally():
    # The test device's shared object links against tm_* symbols that only
    # the extension defines: they must be in its dynamic symbol table, and
    # global (conftest.py loads it RTLD_GLOBAL).
    import foundry._foundry_cffi as extension
    ext = ctypes.CDLL(extension.__file__)
    for name in ("tm_backend_register", "tm_ctx_fail", "tm_device_ctx",
                 "tm_empty_on"):
        assert hasattr(ext, name), name
        assert hasattr(ctypes.CDLL(None), name), name + " is not global"


# ------------------------------------------- modules and optimizers (CPU)
def mlp(seed=0):
    F.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def train(model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def data(seed=1):
    g = F.Generator().manual_seed(seed)
    return (F.randn(16, 4, generator=g),
            F.randn(16, 3, generator=g))


def bits(t):
    return t.detach().cpu().numpy().copy()


def test_module_to_keeps_parameters_and_the_optimizer_follows():
    # Module.to changes parameters in place, so an optimizer made before
    # the move goes on updating them, its state converted with them.  The
    # run equals one whose state is carried over by hand.
    x, y = data()
    a = mlp()
    params = list(a.parameters())
    opt = F.optim.AdamW(a.parameters(), lr=0.01)
    train(a, opt, x, y, 3)
    a.double()
    assert [p is q for p, q in zip(params, a.parameters())] == [True] * 4
    assert all(p.dtype is F.float64 and p.requires_grad and p.grad
               .dtype is F.float64 for p in params)
    train(a, opt, x.double(), y.double(), 3)
    assert opt.step_count == 6
    state = opt.state_dict()["state"]
    assert state["state.0.exp_avg"].dtype is F.float64

    b = mlp()
    opt_b = F.optim.AdamW(b.parameters(), lr=0.01)
    train(b, opt_b, x, y, 3)
    saved = opt_b.state_dict()
    b2 = mlp().double()
    b2.load_state_dict(b.state_dict())
    opt_b2 = F.optim.AdamW(b2.parameters(), lr=0.01)
    opt_b2.load_state_dict(saved)  # float32 state into float64 parameters
    assert opt_b2.state_dict()["state"]["state.0.exp_avg"].dtype is \
        F.float64
    train(b2, opt_b2, x.double(), y.double(), 3)
    for p, q in zip(a.parameters(), b2.parameters()):
        assert np.array_equal(bits(p), bits(q))


def test_module_to_converts_float_tensors_only():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(F.ones(2))
            self.register_buffer("count", F.zeros(1, dtype=F.int64))
            self.register_buffer("scale", F.ones(1))

    m = M().to(F.float64)
    assert m.w.dtype is F.float64 and m.scale.dtype is F.float64
    assert m.count.dtype is F.int64
    with pytest.raises(TypeError, match="float"):
        m.to(F.int32)
    assert m.cpu() is m and m.w.device == "cpu"


def test_data_setter_keeps_the_object():
    p = nn.Parameter(F.ones(3))
    (p * 2).sum().backward()
    p.data = F.zeros(3)
    assert p.requires_grad and p.tolist() == [0.0, 0.0, 0.0]
    assert p.grad.tolist() == [2.0, 2.0, 2.0]  # still fits: kept
    p.data = F.zeros(2)
    assert p.grad is None  # another shape: dropped


# ------------------------------------------------------------ test device
DTYPES = [F.float32, F.float64, F.float16, F.bfloat16, F.int64, F.int32,
          F.uint8, F.bool]


def test_tensors_move_to_the_test_device_and_back(test_device):
    g = F.Generator().manual_seed(11)
    for dt in DTYPES:
        x = (F.randn(3, 5, generator=g) * 4).to(dt)
        y = x.to(test_device)
        assert y.device == test_device and y.device == "test:0"
        assert not y.is_cpu and y.dtype is dt and y.shape == x.shape
        assert y.to(test_device) is y and y.to("test:0") is y
        back = y.cpu()
        assert back.is_cpu and back is not y
        assert back.dtype is dt and np.array_equal(bits(back.float()),
                                                   bits(x.float()))
        assert y.tolist() == x.tolist()
    v = F.arange(12.0).reshape(3, 4).t()  # a non-contiguous view
    assert v.to(test_device).tolist() == v.tolist()
    assert F.tensor(2.5).to(test_device).item() == 2.5
    assert "device='test:0'" in repr(y)
    with pytest.raises(TypeError, match="cpu"):
        y.numpy()


def test_creation_on_the_test_device(test_device):
    for name, make in sorted(CREATE.items()):
        t = make(device=test_device)
        assert t.device == test_device, name
        assert t.tolist() == make().tolist(), name
    x = F.ones(2, device=test_device)
    for like in (F.zeros_like(x), F.rand_like(x), x.new_zeros(3),
                 x.new_full((2,), 4.0), x.new_tensor([1, 2]),
                 F.full_like(x, 2)):
        assert like.device == test_device
    assert x.new_ones(2, device="cpu").is_cpu


def test_ops_on_the_test_device_match_the_cpu(test_device):
    g = F.Generator().manual_seed(12)
    a, b = F.randn(4, 6, generator=g), F.randn(4, 6, generator=g)
    da, db = a.to(test_device), b.to(test_device)
    exact = {
        "add": lambda p, q: p + q, "mul": lambda p, q: p * q,
        "sub_scalar": lambda p, q: p - 2.5, "div": lambda p, q: p / q,
        "max": lambda p, q: F.maximum(p, q), "where": lambda p, q:
        F.where(p > q, p, q), "relu": lambda p, q: p.relu(),
        "neg_abs": lambda p, q: -p.abs(), "cat": lambda p, q: F.cat([p, q]),
        "t_contig": lambda p, q: p.t().contiguous(),
        "index": lambda p, q: p[[0, 2]], "mask": lambda p, q: p[p > 0],
        "argmax": lambda p, q: p.argmax(1), "sort": lambda p, q:
        p.sort(1).values, "cast": lambda p, q: p.to(F.float16),
    }
    close = {
        "matmul": lambda p, q: p @ q.t(), "exp": lambda p, q: p.exp(),
        "sum": lambda p, q: p.sum(1), "mean": lambda p, q: p.mean(),
        "softmax": lambda p, q: p.softmax(-1),
        "tanh": lambda p, q: p.tanh(),
    }
    for name, op in {**exact, **close}.items():
        want, got = op(a, b), op(da, db)
        assert got.device == test_device, name
        if name in exact:
            assert np.array_equal(bits(got), bits(want)), name
        else:
            np.testing.assert_allclose(bits(got), bits(want), rtol=1e-6,
                                       atol=1e-6, err_msg=name)
    da[0, 0] = 9.0  # an assignment from Python data
    assert da[0, 0].item() == 9.0
    da.copy_(a)  # from the CPU: copied across
    assert np.array_equal(bits(da), bits(a))


def test_mixing_devices_raises_naming_both(test_device):
    x, y = F.ones(2, 3), F.ones(2, 3, device=test_device)
    for op in (lambda: x + y, lambda: y * x, lambda: x @ y.t(),
               lambda: F.where(x > 0, x, y), lambda: F.cat([x, y])):
        with pytest.raises(RuntimeError) as e:
            op()
        assert e.value.status == "TM_EDEVICE"
        assert "cpu" in str(e.value) and "test:0" in str(e.value)


def test_autograd_on_the_test_device(test_device):
    w = F.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (w.to(test_device) ** 2).sum().backward()  # back through the copy
    assert w.grad.is_cpu and w.grad.tolist() == [2.0, -4.0, 6.0]
    v = F.tensor([1.0, 2.0], device=test_device, requires_grad=True)
    (v * 3).sum().backward()
    assert v.grad.device == test_device and v.grad.tolist() == [3.0, 3.0]


def test_training_on_the_test_device_matches_the_cpu(test_device):
    # The same MLP and AdamW run for 20 steps on the CPU and, moved after
    # its optimizer was made, on the test device: bitwise equal parameters.
    x, y = data()
    cpu = mlp()
    opt = F.optim.AdamW(cpu.parameters(), lr=0.01, weight_decay=0.1)
    train(cpu, opt, x, y, 20)

    dev = mlp()
    params = list(dev.parameters())
    opt_dev = F.optim.AdamW(dev.parameters(), lr=0.01, weight_decay=0.1)
    assert dev.to("test:0") is dev
    assert [p is q for p, q in zip(params, dev.parameters())] == [True] * 4
    assert all(p.device == test_device for p in params)
    train(dev, opt_dev, x.to(test_device), y.to(test_device), 20)
    for p in params:
        assert p.device == test_device
        assert p.grad is not None and p.grad.device == F.device("test:0")
    for name, s in opt_dev.state_dict()["state"].items():
        if not name.endswith(".step"):
            assert s.device == test_device, name
    for p, q in zip(cpu.parameters(), dev.parameters()):
        assert np.array_equal(bits(p), bits(q))

    # and back: the optimizer follows to the CPU and continues the run
    dev.cpu()
    train(dev, opt_dev, x, y, 2)
    train(cpu, opt, x, y, 2)
    assert opt_dev.step_count == 22
    for p, q in zip(cpu.parameters(), dev.parameters()):
        assert q.is_cpu and np.array_equal(bits(p), bits(q))


def test_optimizer_state_loads_onto_the_parameters_device(test_device):
    x, y = data()
    cpu = mlp()
    opt = F.optim.Adam(cpu.parameters(), lr=0.02)
    train(cpu, opt, x, y, 3)
    saved = opt.state_dict()  # CPU tensors

    dev = mlp().to(test_device)
    dev.load_state_dict(cpu.state_dict())  # CPU values onto the device
    opt_dev = F.optim.Adam(dev.parameters(), lr=0.02)
    opt_dev.load_state_dict(saved)
    for name, s in opt_dev.state_dict()["state"].items():
        if not name.endswith(".step"):
            assert s.device == test_device, name
    train(cpu, opt, x, y, 3)
    train(dev, opt_dev, x.to(test_device), y.to(test_device), 3)
    for p, q in zip(cpu.parameters(), dev.parameters()):
        assert np.array_equal(bits(p), bits(q))


def test_device_memory_and_synchronize(test_device):
    F.synchronize(test_device)
    F.synchronize()
    s = F.memory_stats(test_device)
    assert set(s) == STATS
    t = F.empty(1 << 16, device=test_device)
    assert F.memory_stats(test_device)["current_bytes"] >= \
        s["current_bytes"] + t.nbytes
    del t
    F.empty_cache(test_device)
    assert F.memory_stats(test_device)["cached_bytes"] == 0
    assert F.device_count("test") >= 1
