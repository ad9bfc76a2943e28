"""foundry.nn against torch.nn: layers with the same weights give the same
outputs and gradients (float64, 1e-9: conv and matmul sum in a different
order than PyTorch's kernels, so not bit-equal), and Module behaves like
torch.nn.Module."""
import math

import numpy as np
import pytest

import foundry as F
import foundry.nn as nn

TOL = 1e-9


def copy_params(fm, tm, tch):
    """Makes the torch module's parameters equal to the foundry module's."""
    with tch.no_grad():
        for (fname, fp), (tname, tp) in zip(fm.named_parameters(),
                                            tm.named_parameters()):
            assert fname == tname
            tp.copy_(tch.from_numpy(fp.detach().numpy().copy()))


def check_layer(fm, tm, tch, x, **kw):
    fm.double()
    tm.double()
    copy_params(fm, tm, tch)
    fx = F.tensor(x, requires_grad=x.dtype.kind == "f")
    tx = tch.tensor(x, requires_grad=x.dtype.kind == "f")
    fy, ty = fm(fx), tm(tx)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(),
                               rtol=TOL, atol=TOL)
    g = np.random.default_rng(5).standard_normal(tuple(ty.shape))
    fy.backward(F.tensor(g))
    ty.backward(tch.tensor(g))
    if x.dtype.kind == "f":
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(),
                                   rtol=TOL, atol=TOL)
    for (n, fp), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(),
                                   rtol=TOL, atol=TOL, err_msg=n)


def test_linear(tch, rng):
    check_layer(nn.Linear(5, 3), tch.nn.Linear(5, 3), tch,
                rng.standard_normal((2, 4, 5)))
    check_layer(nn.Linear(5, 3, bias=False), tch.nn.Linear(5, 3, bias=False),
                tch, rng.standard_normal((4, 5)))


def test_conv_and_pools(tch, rng):
    x = rng.standard_normal((2, 4, 9, 8))
    check_layer(nn.Conv2d(4, 6, 3, stride=2, padding=1),
                tch.nn.Conv2d(4, 6, 3, stride=2, padding=1), tch, x)
    check_layer(nn.Conv2d(4, 6, (3, 2), dilation=2, groups=2, bias=False),
                tch.nn.Conv2d(4, 6, (3, 2), dilation=2, groups=2,
                              bias=False), tch, x)
    # conv processes images in chunks of about 2^17 im2col elements
    # (nn/functional/conv.c): 16*3*3*18*20 each gives chunks of 2 and 1, and
    # 16*3*3*64*96 each one image per chunk
    for shape in ((3, 16, 18, 20), (3, 16, 64, 96)):
        check_layer(nn.Conv2d(16, 4, 3, padding=1),
                    tch.nn.Conv2d(16, 4, 3, padding=1), tch,
                    rng.standard_normal(shape))
    check_layer(nn.MaxPool2d(2), tch.nn.MaxPool2d(2), tch, x)
    check_layer(nn.MaxPool2d(3, 2, 1), tch.nn.MaxPool2d(3, 2, 1), tch, x)
    check_layer(nn.AvgPool2d(2, 1), tch.nn.AvgPool2d(2, 1), tch, x)


def test_norms_and_embedding(tch, rng):
    x = rng.standard_normal((3, 4, 6)) * 3 + 1
    check_layer(nn.LayerNorm(6), tch.nn.LayerNorm(6), tch, x)
    check_layer(nn.LayerNorm((4, 6)), tch.nn.LayerNorm((4, 6)), tch, x)
    check_layer(nn.RMSNorm(6, eps=1e-6), tch.nn.RMSNorm(6, eps=1e-6), tch, x)
    idx = np.array([[0, 3, 3], [9, 1, 0]])
    check_layer(nn.Embedding(10, 4), tch.nn.Embedding(10, 4), tch, idx)


ACTS = ["ReLU", "SiLU", "Sigmoid", "Tanh", "GELU", "LeakyReLU", "Softplus",
        "Identity"]


@pytest.mark.parametrize("name", ACTS)
def test_activations(name, tch, rng):
    check_layer(getattr(nn, name)(), getattr(tch.nn, name)(), tch,
                rng.standard_normal((3, 5)) * 3)


def test_softmax_flatten_gelu_tanh(tch, rng):
    x = rng.standard_normal((2, 3, 4))
    check_layer(nn.Softmax(1), tch.nn.Softmax(1), tch, x)
    check_layer(nn.LogSoftmax(-1), tch.nn.LogSoftmax(-1), tch, x)
    check_layer(nn.Flatten(), tch.nn.Flatten(), tch, x)
    check_layer(nn.GELU("tanh"), tch.nn.GELU("tanh"), tch, x)


LOSSES = [("MSELoss", {}), ("L1Loss", {"reduction": "sum"}),
          ("SmoothL1Loss", {"beta": 0.5}), ("HuberLoss", {"delta": 0.7}),
          ("BCEWithLogitsLoss", {}), ("MSELoss", {"reduction": "none"})]


@pytest.mark.parametrize("name,kw", LOSSES)
def test_regression_losses(name, kw, tch, rng):
    x, y = rng.standard_normal((4, 3)), rng.random((4, 3))
    fx = F.tensor(x, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    fl = getattr(nn, name)(**kw)(fx, F.tensor(y))
    tl = getattr(tch.nn, name)(**kw)(tx, tch.tensor(y))
    np.testing.assert_allclose(fl.detach().numpy(), tl.detach().numpy(),
                               rtol=TOL)
    fl.sum().backward()
    tl.sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=TOL,
                               atol=TOL)


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.1},
                                {"ignore_index": 2}, {"reduction": "sum"}])
def test_cross_entropy_and_nll(kw, tch, rng):
    x = rng.standard_normal((6, 5))
    y = np.array([0, 2, 4, 2, 1, 3])
    fx = F.tensor(x, requires_grad=True)
    tx = tch.tensor(x, requires_grad=True)
    fl = nn.CrossEntropyLoss(**kw)(fx, F.tensor(y))
    tl = tch.nn.CrossEntropyLoss(**kw)(tx, tch.tensor(y))
    np.testing.assert_allclose(fl.item(), tl.item(), rtol=TOL)
    fl.backward()
    tl.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=TOL,
                               atol=TOL)
    nk = {k: v for k, v in kw.items() if k != "label_smoothing"}
    fn = nn.NLLLoss(**nk)(fx.log_softmax(1), F.tensor(y))
    tn = tch.nn.NLLLoss(**nk)(tx.log_softmax(1), tch.tensor(y))
    np.testing.assert_allclose(fn.item(), tn.item(), rtol=TOL)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.blocks = [nn.Linear(8, 8), nn.Linear(8, 8)]
        self.heads = {"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)}
        self.seq = nn.Sequential(nn.ReLU(), nn.Dropout(0.5))
        self.scale = nn.Parameter(F.ones(1))
        self.register_buffer("steps", F.zeros(1, dtype=F.int64))

    def forward(self, x):
        x = self.seq(self.fc(x))
        for b in self.blocks:
            x = b(x).relu()
        return self.heads["a"](x) * self.scale


def test_parameters_are_found_through_attributes_lists_and_dicts():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc.weight", "fc.bias", "blocks.0.weight",
                     "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                     "heads.a.weight", "heads.a.bias", "heads.b.weight",
                     "heads.b.bias"]
    assert len(list(net.parameters())) == 11
    assert [n for n, _ in net.named_children()] == [
        "fc", "blocks.0", "blocks.1", "heads.a", "heads.b", "seq"]
    assert len(list(net.modules())) == 9
    shared = nn.Linear(2, 2)
    net.blocks.append(shared)
    net.extra = shared  # the same module twice: its parameters once
    assert len(list(net.parameters())) == 13


def test_state_dict_round_trip_and_strict_mode():
    F.manual_seed(1)
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd)[:3] == ["scale", "steps", "fc.weight"]
    x = F.randn(3, 4)
    a.eval()
    b.eval()
    assert not F.equal(a(x), b(x))
    keys = b.load_state_dict(sd)
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    assert F.equal(a(x), b(x))
    bad = dict(sd)
    del bad["fc.bias"]
    bad["junk"] = F.zeros(1)
    with pytest.raises(F.FoundryError, match="fc.bias.*junk"):
        b.load_state_dict(bad)
    keys = b.load_state_dict(bad, strict=False)
    assert keys.missing_keys == ["fc.bias"] and keys.unexpected_keys == \
        ["junk"]
    bad = dict(sd)
    bad["fc.weight"] = F.zeros(3, 3)
    with pytest.raises(ValueError, match="fc.weight"):
        b.load_state_dict(bad)
    # state_dict tensors share memory with the parameters
    sd["scale"].fill_(3)
    assert a.scale.item() == 3


def test_train_eval_zero_grad_apply():
    net = Net()
    assert net.training and net.seq[1].training
    net.eval()
    assert not net.training and not net.seq[1].training
    x = F.randn(2, 4)
    assert F.equal(net(x), net(x))  # dropout off in eval
    net.train()
    net(x).sum().backward()
    assert net.fc.weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and "Linear" in seen
    assert "Linear(in_features=4, out_features=8, bias=True)" in repr(net)


def test_containers():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU)
    assert len(seq[:2]) == 2 and seq(F.ones(5, 3)).shape == (5, 2)
    assert [n for n, _ in seq.named_parameters()] == [
        "0.weight", "0.bias", "2.weight", "2.bias"]
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.Linear(2, 1))
    assert len(ml) == 4 and len(list(ml.parameters())) == 8
    md = nn.ModuleDict({"enc": nn.Linear(2, 2)})
    md["dec"] = nn.Linear(2, 3)
    assert list(md.keys()) == ["enc", "dec"] and "dec" in md
    assert [n for n, _ in md.named_parameters()][-1] == "dec.bias"
    with pytest.raises(TypeError):
        nn.Sequential(nn.Linear(2, 2), "relu")


def test_default_init_matches_pytorch_scheme():
    F.manual_seed(3)
    lin = nn.Linear(400, 300)
    w = lin.weight.detach().numpy()
    bound = 1 / math.sqrt(400)
    assert w.min() >= -bound and w.max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    emb = nn.Embedding(1000, 64).weight.detach().numpy()
    assert abs(emb.std() - 1) < 0.02
    t = F.empty(200, 300)
    nn.init.xavier_normal_(t)
    assert abs(t.std().item() - math.sqrt(2 / 500)) < 0.002
    nn.init.kaiming_normal_(t, nonlinearity="relu")
    assert abs(t.std().item() - math.sqrt(2 / 300)) < 0.003
    nn.init.trunc_normal_(t, std=1, a=-1, b=1)
    assert t.abs().max().item() <= 1
    nn.init.constant_(t, 0.5)
    assert t.mean().item() == 0.5
    assert nn.init.calculate_gain("relu") == math.sqrt(2)


def test_dropout_scales_and_respects_eval():
    F.manual_seed(0)
    x = F.ones(10000)
    y = nn.functional.dropout(x, 0.25)
    kept = (y > 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    assert abs(y[y > 0].mean().item() - 1 / 0.75) < 1e-6
    d = nn.Dropout(0.25).eval()
    assert F.equal(d(x), x)
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_a_training_loop_learns(rng):
    F.manual_seed(0)
    x = F.tensor(rng.standard_normal((256, 2)).astype(np.float32))
    y = ((x[:, 0] * x[:, 1]) > 0).long()
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for step in range(300):
        loss = loss_fn(model(x), y)
        first = first or loss.item()
        model.zero_grad()
        loss.backward()
        with F.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
    acc = (model(x).argmax(1) == y).float().mean().item()
    assert loss.item() < first / 3 and acc > 0.9
