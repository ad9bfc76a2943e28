"""foundry.quantize / dequantize / quantize_module and quantized tensors.

Bytes and values are checked against the reference `gguf` package (whose
gguf.quants transcribes ggml's reference quantizers and dequantizers):
the 32-value formats quantize byte-identically, every format dequantizes
bit-identically (Q8_K, which gguf lacks, against a numpy transcription of
its layout: d as float32, then 256 int8).  Products with a quantized weight
are compared with the same product on the dequantized weight, within the
error of quantizing the activations to 8 bits (derived per test)."""
import numpy as np
import pytest

import foundry as F
import foundry.nn as nn
import foundry.nn.functional as NF

gguf = pytest.importorskip(
    "gguf", reason="the gguf package is not installed (pip install gguf); "
                   "CI installs it")
from gguf import GGMLQuantizationType as GT  # noqa: E402
from gguf import quants as GQ  # noqa: E402

QK32 = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1"]
KQ = ["q4_k", "q5_k", "q6_k"]
WEIGHTS = QK32 + KQ
GGML = {"q8_0": GT.Q8_0, "q4_0": GT.Q4_0, "q4_1": GT.Q4_1, "q5_0": GT.Q5_0,
        "q5_1": GT.Q5_1, "q4_k": GT.Q4_K, "q5_k": GT.Q5_K, "q6_k": GT.Q6_K}


def sample(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[0, :7] = [0.0, -0.0, 1e-8, -3.5, 3.5, 100.0, -100.0]  # odd blocks
    x[-1, :32] = 0.0                                          # a zero block
    return x


def test_dtype_objects():
    for name, blk, nb in [("q8_0", 32, 34), ("q4_0", 32, 18),
                          ("q4_1", 32, 20), ("q5_0", 32, 22),
                          ("q5_1", 32, 24), ("q8_1", 32, 36),
                          ("q4_k", 256, 144), ("q5_k", 256, 176),
                          ("q6_k", 256, 210), ("q8_k", 256, 292)]:
        dt = getattr(F, name)
        assert dt.name == name and repr(dt) == f"foundry.{name}"
        assert dt.is_quantized and not dt.is_floating_point
        assert (dt.block_size, dt.block_bytes) == (blk, nb)
        # the gguf package's table agrees (ggml's block sizes), except for
        # Q8_1, an activation type never stored in files: gguf-py still
        # lists the old 40-byte block (float d and s); ggml's is 36 bytes
        # (two halves), as quantize/quant_blocks.h has it
        if name.upper() in GT.__members__ and name != "q8_1":
            assert GQ.GGML_QUANT_SIZES[GT[name.upper()]] == (blk, nb)
    assert not F.float32.is_quantized and F.float32.block_size == 1


@pytest.mark.parametrize("name", QK32)
def test_32_value_formats_quantize_like_ggml(name):
    x = sample(5, 256, 1)
    q = F.quantize(x, name)
    ref = GQ.quantize(x, GGML[name])
    raw = q.numpy()
    assert raw.dtype == np.uint8 and raw.shape == ref.shape
    assert np.array_equal(raw, ref)
    # the same from a foundry tensor, and from float16 values
    assert np.array_equal(F.quantize(F.tensor(x), name).numpy(), ref)
    h = x.astype(np.float16)
    assert np.array_equal(F.quantize(F.tensor(h), name).numpy(),
                          GQ.quantize(h.astype(np.float32), GGML[name]))


@pytest.mark.parametrize("name", WEIGHTS)
def test_dequantize_like_ggml(name):
    x = sample(4, 512, 2)
    q = F.quantize(x, name)
    want = GQ.dequantize(q.numpy(), GGML[name]).astype(np.float32)
    got = F.dequantize(q).numpy()
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_q8_k_dequantize_matches_its_layout():
    x = sample(2, 512, 4)
    q = F.quantize(x, "q8_k")
    raw = q.numpy().reshape(-1, 292)
    d = raw[:, :4].copy().view(np.float32)[:, 0]
    qs = raw[:, 4:260].view(np.int8).astype(np.float32)
    want = (d[:, None] * qs).reshape(2, 512)
    got = F.dequantize(q).numpy()
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_quantized_tensor_basics():
    x = sample(6, 512, 5)
    q = F.quantize(x, "q4_k")
    assert q.dtype is F.q4_k and tuple(q.shape) == (6, 512)
    assert q.nbytes == 6 * 2 * 144 and not q.requires_grad
    assert repr(q) == "tensor(q4_k[6, 512], 1728 bytes)"
    raw = q.numpy()
    assert raw.shape == (6, 288)
    assert raw.ctypes.data == q.data_ptr()       # shares memory
    assert np.shares_memory(raw, np.asarray(q))
    # row views keep blocks whole
    r = q[2]
    assert tuple(r.shape) == (512,) and r.numpy().ctypes.data == \
        q.data_ptr() + 2 * 288
    assert np.array_equal(q[1:3].numpy(), raw[1:3])
    with pytest.raises(TypeError, match="q4_k"):
        q + 1
    with pytest.raises(TypeError, match="frozen"):
        q.requires_grad_(True)
    with pytest.raises(TypeError, match="block dim last"):
        q.T.numpy()
    with pytest.raises(ValueError, match="multiple"):
        F.quantize(np.zeros((2, 48), np.float32), "q4_0")
    with pytest.raises(ValueError, match="NaN"):
        F.quantize(np.full((1, 32), np.nan, np.float32), "q8_0")
    with pytest.raises(ValueError, match="q4_2"):
        F.quantize(x, "q4_2")
    with pytest.raises(TypeError, match="float32 is not a quantized"):
        F.quantize(x, F.float32)
    d64 = F.dequantize(q, dtype=F.float64)
    assert d64.dtype is F.float64
    assert np.array_equal(d64.numpy(), F.dequantize(q).numpy().astype(
        np.float64))


def act_bound(x, wd, block):
    """|x·wdᵀ with x quantized to 8 bits - x·wdᵀ| per output: every value
    moves by at most d (1/2 + 127·2^-11), d = amax/127 of its block (the
    rounding, and the scale kept as a half), times |wd| summed per block;
    plus 1e-5 of sum |x wd| for F32 summation."""
    r, k = x.shape
    xb = np.abs(x).reshape(r, k // block, block).max(axis=2) / 127 * \
        (0.5 + 127 / 2048)
    wb = np.abs(wd).reshape(wd.shape[0], k // block, block).sum(axis=2)
    return xb @ wb.T + 1e-5 * np.abs(x) @ np.abs(wd).T + 1e-6


@pytest.mark.parametrize("name", WEIGHTS)
def test_linear_and_matmul_forward_backward(name):
    x = sample(3, 256, 6)
    w = sample(10, 256, 7)
    b = np.random.default_rng(8).standard_normal(10).astype(np.float32)
    wq = F.quantize(w, name)
    wd = F.dequantize(wq).numpy().astype(np.float64)
    xt = F.tensor(x, requires_grad=True)
    bt = F.tensor(b, requires_grad=True)
    y = NF.linear(xt, wq, bt)
    ref = x.astype(np.float64) @ wd.T + b
    block = 256 if name in KQ else 32
    assert np.all(np.abs(y.detach().numpy() - ref) <=
                  act_bound(x.astype(np.float64), wd, block))
    # x @ w.T and w @ x.T are the same computation, bit for bit
    y0 = NF.linear(xt, wq).detach().numpy()
    assert np.array_equal((xt @ wq.T).detach().numpy(), y0)
    assert np.array_equal((wq @ xt.T).detach().numpy(), y0.T)
    g = np.random.default_rng(9).standard_normal((3, 10)).astype(np.float32)
    y.backward(F.tensor(g))
    # dx = g·wd: exact products, F32 summation over 10 terms
    want = g.astype(np.float64) @ wd
    mag = np.abs(g).astype(np.float64) @ np.abs(wd)
    assert np.all(np.abs(xt.grad.numpy() - want) <= 1e-6 * mag + 1e-30)
    assert np.allclose(bt.grad.numpy(), g.sum(0), rtol=0, atol=1e-6)


def test_quantize_module_mlp():
    F.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    x = F.randn(8, 64)
    ref = model(x).detach().numpy()
    params_before = len(list(model.parameters()))
    F.quantize_module(model, "q8_0")
    assert model[0].weight.dtype is F.q8_0 and model[2].weight.dtype is F.q8_0
    assert len(list(model.parameters())) == params_before - 2  # biases left
    sd = model.state_dict()
    assert sd["0.weight"].dtype is F.q8_0
    xq = x.detach().clone().requires_grad_(True)
    out = model(xq)
    # Q8_0 weights and activations: each step within ~1% of the output's
    # scale (two 8-bit roundings of O(1) values summed over 64-128 terms)
    assert np.max(np.abs(out.detach().numpy() - ref)) <= \
        0.02 * np.max(np.abs(ref))
    out.sum().backward()
    assert xq.grad is not None and tuple(xq.grad.shape) == (8, 64)
    # dx = W1ᵀ (relu'(h) ⊙ W2ᵀ 1) with the dequantized weights and the
    # ReLU pattern of the quantized forward's own pre-activations h:
    # exact products, F32 sums over 32 and 128 terms
    w1 = F.dequantize(model[0].weight).numpy().astype(np.float64)
    w2 = F.dequantize(model[2].weight).numpy().astype(np.float64)
    h = model[0](x).detach().numpy()
    up = np.where(h > 0, 1.0, 0.0) * w2.sum(axis=0)
    want = up @ w1
    mag = (np.where(h > 0, 1.0, 0.0) * np.abs(w2).sum(axis=0)) @ np.abs(w1)
    assert np.all(np.abs(xq.grad.numpy() - want) <= 1e-5 * mag + 1e-30)
    # rules: keep the last layer float
    m2 = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 32))
    F.quantize_module(m2, "q4_0", rules={"1.*": None})
    assert m2[0].weight.dtype is F.q4_0 and m2[1].weight.dtype is F.float32
    # embeddings only when asked
    emb = nn.Embedding(10, 64)
    F.quantize_module(emb, "q8_0")
    assert emb.weight.dtype is F.float32
    F.quantize_module(emb, "q8_0", embeddings=True)
    assert emb.weight.dtype is F.q8_0
    ids = F.tensor([[1, 2], [9, 0]])
    e = emb(ids)
    assert np.array_equal(e.numpy(), F.dequantize(emb.weight).numpy()[
        [[1, 2], [9, 0]]])


def test_quantize_module_gpt():
    cfg = F.models.GPTConfig.preset("gpt-tiny", vocab_size=256)
    model = F.models.GPT(cfg, seed=1)
    model.eval()
    ids = F.tensor(np.arange(32).reshape(2, 16) % 256)
    ref = model(ids).detach().numpy()
    F.quantize_module(model, "q8_0")
    layer = model.model.layers[0]
    assert layer.self_attn.q_proj.weight.dtype is F.q8_0
    assert layer.mlp.up_proj.weight.dtype is F.q8_0
    assert model.model.embed_tokens.weight.dtype is F.float32
    assert layer.input_layernorm.weight.dtype is F.float32
    out = model(ids).detach().numpy()
    # 8-bit weights and activations through every layer: logits within a
    # few percent of their range
    assert np.max(np.abs(out - ref)) <= 0.05 * (ref.max() - ref.min())
    # gradients reach the float parameters (embeddings, norms, biases)
    model.train()
    loss = model.loss(ids, ids)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert grads and all(g is not None for g in grads)
