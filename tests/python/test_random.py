"""foundry.Generator and generator=: every function that draws takes one.

A generator is a C tm_rng of its own: the same seed gives the same numbers,
drawing from it never moves the default generator (and the other way
round), two generators with the same seed agree, and manual_seed /
set_state restart a stream.  Comparisons are exact: the same generator
state must give bit-identical draws."""
import numpy as np
import pytest

import foundry as F
from foundry import nn
from foundry._c import ffi, lib

# Every draw that takes generator= (None: the default generator).
DRAWS = {
    "rand": lambda g: F.rand(5, generator=g),
    "randn": lambda g: F.randn(2, 3, generator=g),
    "randint": lambda g: F.randint(0, 1000, (7,), generator=g),
    "randperm": lambda g: F.randperm(12, generator=g),
    "rand_like": lambda g: F.rand_like(F.zeros(4), generator=g),
    "randn_like": lambda g: F.randn_like(F.zeros(4), generator=g),
    "randint_like": lambda g: F.randint_like(F.zeros(6, dtype=F.int64),
                                             1000, generator=g),
    "uniform_": lambda g: F.empty(6).uniform_(-1, 1, generator=g),
    "normal_": lambda g: F.empty(6).normal_(2, 3, generator=g),
    "random_": lambda g: F.empty(6).random_(0, 1000, generator=g),
    "init.uniform_": lambda g: nn.init.uniform_(F.empty(3, 4), generator=g),
    "init.normal_": lambda g: nn.init.normal_(F.empty(3, 4), generator=g),
    "init.trunc_normal_": lambda g: nn.init.trunc_normal_(F.empty(3, 4),
                                                          generator=g),
    "init.xavier_uniform_": lambda g: nn.init.xavier_uniform_(
        F.empty(3, 4), generator=g),
    "init.xavier_normal_": lambda g: nn.init.xavier_normal_(
        F.empty(3, 4), generator=g),
    "init.kaiming_uniform_": lambda g: nn.init.kaiming_uniform_(
        F.empty(3, 4), generator=g),
    "init.kaiming_normal_": lambda g: nn.init.kaiming_normal_(
        F.empty(3, 4), generator=g),
    "dropout": lambda g: nn.functional.dropout(F.ones(40), 0.5,
                                               generator=g),
}


def equal(a, b):
    return a.dtype is b.dtype and np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_the_same_seed_gives_the_same_numbers(name):
    draw = DRAWS[name]
    a = draw(F.Generator().manual_seed(7))
    assert equal(a, draw(F.Generator().manual_seed(7)))
    assert not equal(a, draw(F.Generator().manual_seed(8)))


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_generator_and_the_default_generator_do_not_share_a_stream(name):
    draw = DRAWS[name]
    F.manual_seed(3)
    want = draw(None), draw(None)
    F.manual_seed(3)
    first = draw(None)
    draw(F.Generator().manual_seed(3))  # must not move the default
    assert equal(first, want[0]) and equal(draw(None), want[1])
    g = F.Generator().manual_seed(5)
    mine = draw(g)
    F.rand(1000)  # moving the default must not move g
    h = F.Generator().manual_seed(5)
    assert equal(draw(h), mine) and equal(draw(g), draw(h))


def test_manual_seed_restarts_the_stream_and_returns_the_generator():
    g = F.Generator()
    assert g.manual_seed(11) is g
    a = F.randn(8, generator=g)
    F.randn(3, generator=g)
    g.manual_seed(11)
    assert equal(F.randn(8, generator=g), a)


def test_a_new_generator_starts_as_the_default_one_does():
    # seed 0: the C library's default generator at process start
    F.manual_seed(0)
    assert equal(F.rand(6, generator=F.Generator()), F.rand(6))
    assert F.Generator().initial_seed() == 0


def test_draws_are_the_c_generators_documented_stream():
    # float32 uniforms: element i is word i % 4 of block i / 4, (w >> 8)
    # 2^-24 (include/foundry/random.h); 8 of them use two blocks.
    g = F.Generator().manual_seed(9)
    x = F.rand(8, generator=g)
    rng = ffi.new("tm_rng *", lib.tm_rng_new(9))
    words = ffi.new("uint32_t[8]")
    lib.tm_rng_u32(rng, words, 8)
    want = np.array([(w >> 8) * 2.0 ** -24 for w in words], np.float32)
    np.testing.assert_array_equal(x.numpy(), want)
    key, counter = np.frombuffer(g.get_state().numpy().tobytes(), "<u8")
    assert (key, counter) == (9, 2)


def test_get_state_and_set_state_round_trip():
    g = F.Generator().manual_seed(123)
    F.rand(5, generator=g)
    state = g.get_state()
    assert state.dtype is F.uint8 and state.shape == (16,)
    a = F.randn(10, generator=g)
    assert g.set_state(state) is g
    assert equal(F.randn(10, generator=g), a)
    h = F.Generator().set_state(bytes(state.numpy()))  # bytes work too
    assert equal(F.randn(10, generator=h), a)
    assert h.initial_seed() == 123
    with pytest.raises(ValueError):
        g.set_state(F.zeros(15, dtype=F.uint8))
    with pytest.raises(TypeError):
        g.set_state(F.zeros(16))
    with pytest.raises(TypeError):
        g.set_state([0] * 16)


def test_seeds():
    g = F.Generator()
    assert g.manual_seed(42).initial_seed() == 42
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1  # modulo 2^64
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64
    assert g.device == "cpu" and F.Generator("cpu").device == F.device("cpu")


def test_generator_arguments_are_checked():
    with pytest.raises(TypeError, match="foundry.Generator"):
        F.rand(2, generator=1)
    if not F.is_available("cuda"):
        with pytest.raises(RuntimeError, match="device='cuda'"):
            F.Generator("cuda")


def test_generators_match_torchs_api(tch):
    for name in ("manual_seed", "seed", "initial_seed", "get_state",
                 "set_state", "device"):
        assert hasattr(tch.Generator(), name), name
    for fn in ("rand", "randn", "randint", "randperm", "rand_like",
               "randn_like", "randint_like"):
        assert "generator" in getattr(tch, fn).__doc__, fn


def test_randperm_is_a_permutation():
    p = F.randperm(1000, generator=F.Generator().manual_seed(1))
    assert p.dtype is F.int64
    assert sorted(p.tolist()) == list(range(1000))
    assert p.tolist() != list(range(1000))
    assert F.randperm(5, dtype=F.int32).dtype is F.int32
    assert F.randperm(0).shape == (0,)


def test_random_fills_integers_in_range():
    g = F.Generator().manual_seed(2)
    x = F.empty(2000).random_(-3, 4, generator=g)
    assert set(x.tolist()) == set(range(-3, 4))
    assert 0 <= F.empty(500).random_(10).min().item()
    assert F.empty(500).random_(10).max().item() < 10
    top = F.empty(20000, dtype=F.float16).random_().max().item()
    assert 2 ** 10 < top <= 2 ** 11  # [0, 2^mantissa], as PyTorch
    assert F.empty(100, dtype=F.bool).random_().dtype is F.bool
    with pytest.raises(ValueError):  # [0, 2^63) is beyond +-2^53
        F.empty(3, dtype=F.int64).random_()
