"""Exception types as PyTorch raises them: a dim out of range is an
IndexError wherever a dim is taken (it was a ValueError); clamp without
bounds is a RuntimeError (a FoundryError); bool arange / linspace are
refused.  Each case is checked against what torch raises for the same
call, so the expected type is PyTorch's, not ours."""
import pytest

import foundry as F

# (name, call) with `m` the module (foundry or torch) and `t` a [2, 3]
# float tensor of it; every call takes dim 5 or -4 (out of range for 2-d).
DIM_CALLS = [
    ("sum", lambda m, t: t.sum(dim=5)),
    ("mean", lambda m, t: t.mean(dim=-4)),
    ("prod", lambda m, t: t.prod(dim=5)),
    ("amax via max", lambda m, t: t.max(dim=5)),
    ("min", lambda m, t: t.min(dim=-4)),
    ("var", lambda m, t: t.var(dim=5)),
    ("std", lambda m, t: t.std(dim=5)),
    ("logsumexp", lambda m, t: t.logsumexp(dim=5)),
    ("argmax", lambda m, t: t.argmax(dim=5)),
    ("argmin", lambda m, t: t.argmin(dim=-4)),
    ("any", lambda m, t: (t > 0).any(dim=5)),
    ("all", lambda m, t: (t > 0).all(dim=5)),
    ("norm", lambda m, t: t.norm(dim=5)),
    ("softmax", lambda m, t: t.softmax(5)),
    ("log_softmax", lambda m, t: t.log_softmax(-4)),
    ("cumsum", lambda m, t: t.cumsum(5)),
    ("cat", lambda m, t: m.cat([t, t], 5)),
    ("stack", lambda m, t: m.stack([t, t], 4)),
    ("squeeze", lambda m, t: t.squeeze(5)),
    ("unsqueeze", lambda m, t: t.unsqueeze(5)),
    ("transpose", lambda m, t: t.transpose(0, 5)),
    ("sort", lambda m, t: t.sort(dim=5)),
    ("argsort", lambda m, t: t.argsort(dim=5)),
    ("topk", lambda m, t: t.topk(1, dim=5)),
    ("gather", lambda m, t: t.gather(5, m.zeros(2, 3, dtype=m.int64))),
    ("scatter", lambda m, t: t.scatter(5, m.zeros(2, 3, dtype=m.int64),
                                       1.0)),
    ("index_select", lambda m, t: t.index_select(5, m.zeros(
        1, dtype=m.int64))),
    ("select", lambda m, t: t.select(5, 0)),
    ("narrow", lambda m, t: t.narrow(5, 0, 1)),
    ("split", lambda m, t: t.split(1, 5)),
    ("chunk", lambda m, t: t.chunk(2, 5)),
    ("unbind", lambda m, t: t.unbind(5)),
    ("flatten", lambda m, t: t.flatten(5)),
    ("permute", lambda m, t: t.permute(0, 5)),
    ("size", lambda m, t: t.size(5)),
]


@pytest.mark.parametrize("name,call", DIM_CALLS, ids=[c[0] for c in
                                                      DIM_CALLS])
def test_dim_out_of_range_is_an_index_error_as_in_torch(tch, name, call):
    with pytest.raises(IndexError):
        call(tch, tch.zeros(2, 3))
    with pytest.raises(IndexError, match="out of range"):
        call(F, F.zeros(2, 3))


def test_dim_errors_are_foundry_errors_naming_the_function():
    with pytest.raises(F.FoundryError, match=r"tm_sum: dim 5 is out of "
                                             r"range for a 2-d tensor"):
        F.zeros(2, 3).sum(dim=5)
    with pytest.raises(IndexError, match="0-d"):
        F.tensor(1.0).softmax(1)


@pytest.mark.parametrize("fn", ["clamp", "clip"])
def test_clamp_without_bounds_is_a_runtime_error(tch, fn):
    with pytest.raises(RuntimeError):
        getattr(tch, fn)(tch.zeros(2))
    t = F.zeros(2)
    with pytest.raises(RuntimeError, match="at least one of 'min' or 'max'"):
        getattr(F, fn)(t)
    with pytest.raises(F.FoundryError):
        getattr(t, fn)(None, None)
    with pytest.raises(F.FoundryError, match="clamp_"):
        getattr(t, fn + "_")()
    assert t.tolist() == [0.0, 0.0]


def test_bool_linspace_and_arange_are_refused(tch):
    with pytest.raises(NotImplementedError):
        tch.linspace(0, 1, 3, dtype=tch.bool)
    with pytest.raises(NotImplementedError):
        tch.arange(0, 3, dtype=tch.bool)
    with pytest.raises(NotImplementedError, match="bool sequence"):
        F.linspace(0, 1, 3, dtype=F.bool)
    with pytest.raises(NotImplementedError, match="bool sequence"):
        F.arange(0, 3, dtype=F.bool)
    with pytest.raises(F.FoundryError):
        F.arange(3, dtype=F.bool)
    # bool arguments without a dtype count as integers, as in torch
    assert F.arange(True).dtype is F.int64


def test_integer_negative_power_is_a_runtime_error(tch):
    with pytest.raises(RuntimeError):
        tch.tensor([2]) ** -1
    with pytest.raises(RuntimeError, match="negative integer powers"):
        F.tensor([2]) ** -1
    assert (F.tensor([2]) ** -1.0).tolist() == [0.5]
