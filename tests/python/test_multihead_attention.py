"""foundry.nn.MultiheadAttention against torch.nn.MultiheadAttention given
the same weights (copied through state_dict): outputs, returned weights
(averaged or per head) and the gradients of the inputs and of every
parameter, batch_first both ways, unbatched input, key_padding_mask and
attn_mask (bool and float), kdim / vdim, add_bias_kv, add_zero_attn, the
is_causal hint, and the parameters' names, shapes and initialisation.

Both sides compute in F64 (modules in double), so the tolerance is 1e-10
(rtol and atol): the same few hundred products summed in another order
round differently only near 1e-14.  need_weights=False runs foundry's
fused kernel, need_weights=True the composed weights."""
import math

import numpy as np
import pytest

import foundry
import foundry.nn as nn

TOL = 1e-10
E, H = 16, 4


def _pair(tch, **kw):
    tch.manual_seed(0)
    ref = tch.nn.MultiheadAttention(E, H, **kw).double()
    mod = nn.MultiheadAttention(E, H, dtype=foundry.float64, **kw)
    sd = {k: foundry.tensor(v.detach().numpy())
          for k, v in ref.state_dict().items()}
    assert list(sd) == list(mod.state_dict())  # names and order
    mod.load_state_dict(sd)
    return mod, ref


def _data(tch, rng, shape):
    a = rng.standard_normal(shape)
    return (foundry.tensor(a).requires_grad_(True),
            tch.tensor(a, requires_grad=True))


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                               rtol=TOL, atol=TOL)


def _run(tch, rng, mod, ref, lq=5, ls=7, n=2, batched=True, kpm=None,
         mask=None, **fw):
    kd, vd = mod.kdim, mod.vdim
    first = mod.batch_first
    if not batched:
        shapes = [(lq, E), (ls, kd), (ls, vd)]
    elif first:
        shapes = [(n, lq, E), (n, ls, kd), (n, ls, vd)]
    else:
        shapes = [(lq, n, E), (ls, n, kd), (ls, n, vd)]
    pairs = [_data(tch, rng, s) for s in shapes]
    f_in, t_in = [p[0] for p in pairs], [p[1] for p in pairs]
    fkw, tkw = dict(fw), dict(fw)
    for name, m in (("key_padding_mask", kpm), ("attn_mask", mask)):
        if m is not None:
            fkw[name] = foundry.tensor(m)
            tkw[name] = tch.tensor(m)
    out, w = mod(*f_in, **fkw)
    rout, rw = ref(*t_in, **tkw)
    assert tuple(out.shape) == tuple(rout.shape)
    _close(out, rout)
    if rw is None:
        assert w is None
    else:
        assert tuple(w.shape) == tuple(rw.shape)
        _close(w, rw)
    g = rng.standard_normal(tuple(rout.shape))
    out.backward(foundry.tensor(g))
    rout.backward(tch.tensor(g))
    for a, b in zip(f_in, t_in):
        _close(a.grad, b.grad)
    rp = dict(ref.named_parameters())
    for name, p in mod.named_parameters():
        assert p.grad is not None, name
        _close(p.grad, rp[name].grad)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_plain(tch, rng, need_weights, batch_first):
    mod, ref = _pair(tch, batch_first=batch_first)
    _run(tch, rng, mod, ref, need_weights=need_weights)


@pytest.mark.parametrize("average", [True, False])
def test_weights_per_head_or_averaged(tch, rng, average):
    mod, ref = _pair(tch, batch_first=True)
    _run(tch, rng, mod, ref, need_weights=True,
         average_attn_weights=average)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks(tch, rng, need_weights, kind):
    mod, ref = _pair(tch, batch_first=True)
    kpm = np.zeros((2, 7), bool)
    kpm[1, 4:] = True  # True = padding (the module's meaning)
    am = rng.random((5, 7)) < 0.3
    am[:, 0] = False
    if kind == "float":
        kpm = np.where(kpm, -np.inf, 0.0)
        am = rng.standard_normal((5, 7))
    _run(tch, rng, mod, ref, kpm=kpm, mask=am, need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_3d_attn_mask(tch, rng, need_weights):
    mod, ref = _pair(tch)
    am = rng.random((2 * H, 5, 7)) < 0.3
    am[..., 0] = False
    _run(tch, rng, mod, ref, mask=am, need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_kdim_vdim(tch, rng, need_weights):
    mod, ref = _pair(tch, kdim=8, vdim=12, batch_first=True)
    assert mod.in_proj_weight is None
    assert tuple(mod.k_proj_weight.shape) == (E, 8)
    _run(tch, rng, mod, ref, need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_bias_kv_and_zero_attn(tch, rng, need_weights):
    mod, ref = _pair(tch, add_bias_kv=True, add_zero_attn=True)
    kpm = np.zeros((2, 7), bool)
    kpm[0, 5:] = True
    _run(tch, rng, mod, ref, kpm=kpm, need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_no_bias(tch, rng, need_weights):
    mod, ref = _pair(tch, bias=False)
    assert mod.in_proj_bias is None and mod.out_proj.bias is None
    _run(tch, rng, mod, ref, need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_unbatched(tch, rng, need_weights):
    mod, ref = _pair(tch, batch_first=True)  # ignored for unbatched input
    kpm = np.zeros(7, bool)
    kpm[5:] = True
    _run(tch, rng, mod, ref, batched=False, kpm=kpm,
         need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_causal_hint(tch, rng, need_weights):
    """is_causal with the causal attn_mask: without weights foundry uses
    the kernel's causal rule instead of the mask, as torch does."""
    mod, ref = _pair(tch, batch_first=True)
    causal = np.triu(np.ones((6, 6), bool), 1)  # True = masked
    _run(tch, rng, mod, ref, lq=6, ls=6, mask=causal, is_causal=True,
         need_weights=need_weights)


def test_dropout_only_in_training(tch, rng):
    mod, _ = _pair(tch, dropout=0.5, batch_first=True)
    x = foundry.tensor(rng.standard_normal((2, 6, E)))
    mod.eval()
    a, _ = mod(x, x, x, need_weights=False)
    b, _ = mod(x, x, x, need_weights=False)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    mod.train()
    c, _ = mod(x, x, x, need_weights=False)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def test_parameters_and_init(tch):
    mod = nn.MultiheadAttention(E, H, add_bias_kv=True)
    shapes = {n: tuple(p.shape) for n, p in mod.named_parameters()}
    assert shapes == {"in_proj_weight": (3 * E, E), "in_proj_bias": (3 * E,),
                      "bias_k": (1, 1, E), "bias_v": (1, 1, E),
                      "out_proj.weight": (E, E), "out_proj.bias": (E,)}
    assert np.all(mod.in_proj_bias.detach().numpy() == 0)
    assert np.all(mod.out_proj.bias.detach().numpy() == 0)
    w = mod.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (E + 3 * E))  # xavier_uniform_ of [3E, E]
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert mod.head_dim == E // H and mod.batch_first is False


def test_errors(tch):
    with pytest.raises(ValueError, match="greater than 0"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    mod = nn.MultiheadAttention(E, H)
    x = foundry.zeros(5, 2, E)
    with pytest.raises(AssertionError):  # torch raises AssertionError
        mod(foundry.zeros(1, 5, 2, E), x, x)
    with pytest.raises(AssertionError):
        mod(x, foundry.zeros(5, E), x)
    with pytest.raises(RuntimeError, match="attn_mask"):
        mod(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="attn_mask"):
        mod(x, x, x, attn_mask=foundry.zeros(4, 5))
    with pytest.raises(RuntimeError, match="key_padding_mask"):
        mod(x, x, x, key_padding_mask=foundry.zeros(2, 4, dtype=foundry.bool))


@pytest.mark.parametrize("need_weights", [True, False])
def test_f32_module_against_torch_f64(tch, rng, need_weights):
    """The default F32 module against torch's in F64 with the same (F32)
    weights and inputs: max |err| / max |ref| <= 1e-5 (F32 projections
    and attention sums of at most a few hundred terms: a few 1e-7)."""
    tch.manual_seed(1)
    ref = tch.nn.MultiheadAttention(E, H, batch_first=True)
    mod = nn.MultiheadAttention(E, H, batch_first=True)
    mod.load_state_dict({k: foundry.tensor(v.detach().numpy())
                         for k, v in ref.state_dict().items()})
    ref = ref.double()
    x = rng.standard_normal((3, 40, E)).astype(np.float32)
    kpm = np.zeros((3, 40), bool)
    kpm[2, 30:] = True
    out, _ = mod(*[foundry.tensor(x)] * 3, key_padding_mask=foundry.tensor(
        kpm), need_weights=need_weights)
    t = tch.tensor(x.astype(np.float64))
    rout, _ = ref(t, t, t, key_padding_mask=tch.tensor(kpm),
                  need_weights=need_weights)
    r = rout.detach().numpy()
    err = np.abs(out.detach().numpy() - r).max() / np.abs(r).max()
    assert err <= 1e-5, err
