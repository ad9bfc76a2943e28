"""Rotary embeddings (foundry.nn.RotaryEmbedding, F.apply_rotary_emb)
against an independent numpy transcription, written here, of the formulas
of Hugging Face transformers' modeling_rope_utils (the frequencies of each
rope_type and YaRN's attention factor) and of the rotations of HF's
apply_rotary_pos_emb (halves, rotate_half) and GPT-J (interleaved pairs).

Tolerances: with F64 inputs foundry computes the angles and the rotation
in double, so only the order of a few double operations differs; the
stated bound 1e-6 (the acceptance bound) leaves orders of magnitude of
room and fails on any formula slip.  F32 inputs round cos, sin and each
product once: a few ulp of values below ~8, hence 4e-6 absolute.
"""
import math

import numpy as np
import pytest

import foundry
import foundry.nn.functional as F
from foundry import nn

# ------------------------------------------------ numpy transcription


def np_default_inv(base, r):
    return 1.0 / base ** (np.arange(0, r, 2, dtype=np.float64) / r)


def np_yarn(base, r, sc, max_pos):
    orig = sc.get("original_max_position_embeddings", max_pos)
    factor = sc["factor"]

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    att = sc.get("attention_factor")
    if att is None:
        if sc.get("mscale") and sc.get("mscale_all_dim"):
            att = mscale(factor, sc["mscale"]) / mscale(factor,
                                                        sc["mscale_all_dim"])
        else:
            att = mscale(factor)
    fast, slow = sc.get("beta_fast", 32), sc.get("beta_slow", 1)

    def corr_dim(rot):
        return r * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))

    lo, hi = corr_dim(fast), corr_dim(slow)
    if sc.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, r - 1)
    if lo == hi:
        hi += 0.001
    ramp = np.clip((np.arange(r // 2, dtype=np.float64) - lo) / (hi - lo),
                   0, 1)
    pos_freqs = base ** (np.arange(0, r, 2, dtype=np.float64) / r)
    extrap, interp = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    ext_factor = 1 - ramp
    inv = interp * (1 - ext_factor) + extrap * ext_factor
    return inv, att, ramp


def np_llama3(base, r, sc):
    inv = np_default_inv(base, r)
    factor, lf, hf = sc["factor"], sc["low_freq_factor"], \
        sc["high_freq_factor"]
    old = sc["original_max_position_embeddings"]
    low_wl, high_wl = old / lf, old / hf
    wl = 2 * math.pi / inv
    out = np.where(wl > low_wl, inv / factor, inv)
    smooth = (old / wl - lf) / (hf - lf)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wl < high_wl) & ~(wl > low_wl)
    return np.where(medium, smoothed, out), (wl > low_wl, medium,
                                             wl < high_wl)


def np_freqs(r, base, max_pos, sc, seq_len):
    """(inv_freq, attention factor) for a sequence of seq_len positions."""
    kind = (sc or {}).get("rope_type", "default")
    att = (sc or {}).get("attention_factor") or 1.0
    if kind == "default":
        return np_default_inv(base, r), att
    if kind == "linear":
        return np_default_inv(base, r) / sc["factor"], att
    if kind == "dynamic":
        orig = sc.get("original_max_position_embeddings", max_pos)
        f, L = sc["factor"], max(seq_len, orig)
        b = base * ((f * L / orig) - (f - 1)) ** (r / (r - 2))
        return np_default_inv(b, r), att
    if kind == "yarn":
        inv, a, _ = np_yarn(base, r, sc, max_pos)
        return inv, a
    if kind == "llama3":
        return np_llama3(base, r, sc)[0], att
    raise AssertionError(kind)


def np_tables(inv, att, pos):
    """HF layout: (pos.shape..., r), each pair's value twice (halves)."""
    ang = pos.astype(np.float64)[..., None] * inv
    return np.cos(ang) * att, np.sin(ang) * att


def np_rotate(x, cos_h, sin_h, r, interleaved):
    """x (..., T, D); cos_h, sin_h (..., T, r/2) broadcastable."""
    rot, rest = x[..., :r], x[..., r:]
    if interleaved:  # GPT-J: rotate_every_two with repeat_interleave
        c, s = np.repeat(cos_h, 2, -1), np.repeat(sin_h, 2, -1)
        x1, x2 = rot[..., ::2], rot[..., 1::2]
        other = np.stack([-x2, x1], -1).reshape(rot.shape)
    else:  # HF Llama: rotate_half with cat((freqs, freqs))
        c = np.concatenate([cos_h, cos_h], -1)
        s = np.concatenate([sin_h, sin_h], -1)
        h = r // 2
        other = np.concatenate([-rot[..., h:], rot[..., :h]], -1)
    return np.concatenate([rot * c + other * s, rest], -1)


# ------------------------------------------------------------- cases

SCALINGS = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0,
                "original_max_position_embeddings": 64},
    "yarn": {"rope_type": "yarn", "factor": 8.0,
             "original_max_position_embeddings": 256},
    "yarn_mscale": {"rope_type": "yarn", "factor": 40.0,
                    "original_max_position_embeddings": 4096,
                    "mscale": 0.707, "mscale_all_dim": 1.0,
                    "beta_fast": 24, "beta_slow": 2},
    "yarn_no_truncate": {"rope_type": "yarn", "factor": 4.0,
                         "original_max_position_embeddings": 128,
                         "truncate": False},
    "yarn_attention_factor": {"rope_type": "yarn", "factor": 4.0,
                              "original_max_position_embeddings": 128,
                              "attention_factor": 0.8},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192},
}
BASE = {"llama3": 500000.0}


def rng_x(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("kind", list(SCALINGS))
def test_rotation_matches_numpy_for_every_layout_and_scaling(kind, partial,
                                                             interleaved):
    d = 64
    r = 40 if partial else d
    sc, base = SCALINGS[kind], BASE.get(kind, 10000.0)
    rope = nn.RotaryEmbedding(d, max_position_embeddings=512, base=base,
                              rope_scaling=sc, rotary_dim=r,
                              interleaved=interleaved)
    x = rng_x((2, 3, 7, d), np.float64)
    # positions past dynamic's original 64 and YaRN's trained length
    pos = np.array([[0, 1, 2, 3, 500, 901, 77], [9, 8, 7, 6, 5, 4, 1000]])
    y = rope.rotate(foundry.tensor(x), foundry.tensor(pos))
    inv, att = np_freqs(r, base, 512, sc, int(pos.max()) + 1)
    ch, sh = np_tables(inv, att, pos)
    want = np_rotate(x, ch[:, None], sh[:, None], r, interleaved)
    np.testing.assert_allclose(np.asarray(y), want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("interleaved", [False, True])
def test_f32_offsets_and_1d_positions(interleaved):
    d, r = 48, 32
    sc = SCALINGS["yarn"]
    rope = nn.RotaryEmbedding(d, rope_scaling=sc, rotary_dim=r,
                              interleaved=interleaved)
    x = rng_x((3, 11, d), np.float32, 1)
    inv, att = np_freqs(r, 10000.0, 2048, sc, 0)
    for offset in (0, 5, 1000):
        pos = offset + np.arange(11)
        ch, sh = np_tables(inv, att, pos)
        want = np_rotate(x.astype(np.float64), ch, sh, r, interleaved)
        y = rope.rotate(foundry.tensor(x), offset=offset)
        assert y.dtype is foundry.float32
        np.testing.assert_allclose(np.asarray(y), want, rtol=0, atol=4e-6)
    p1 = np.array([3, 0, 9, 2, 2, 40, 1, 0, 8, 7, 1999])
    ch, sh = np_tables(inv, att, p1 + 4)
    want = np_rotate(x.astype(np.float64), ch, sh, r, interleaved)
    y = rope.rotate(foundry.tensor(x), foundry.tensor(p1), offset=4)
    np.testing.assert_allclose(np.asarray(y), want, rtol=0, atol=4e-6)


def test_yarn_attention_factor_is_applied():
    for name in ("yarn", "yarn_mscale", "yarn_attention_factor"):
        sc = SCALINGS[name]
        rope = nn.RotaryEmbedding(32, max_position_embeddings=8192,
                                  rope_scaling=sc)
        x = foundry.tensor(np.zeros((1, 4, 32)))
        c, s = rope(x, foundry.tensor(np.arange(4)[None]))
        mag = np.asarray(c) ** 2 + np.asarray(s) ** 2
        _, att, _ = np_yarn(10000.0, 32, sc, 8192)
        assert att != 1.0
        np.testing.assert_allclose(mag, att * att, rtol=1e-12)
    assert np_yarn(10000.0, 32, SCALINGS["yarn"], 0)[1] == pytest.approx(
        0.1 * math.log(8.0) + 1)
    # a rotation scaled by the attention factor: |y| = att |x| on the
    # rotated dims
    rope = nn.RotaryEmbedding(32, rope_scaling=SCALINGS["yarn"])
    x = rng_x((5, 32), np.float64, 2)
    y = np.asarray(rope.rotate(foundry.tensor(x), offset=3))
    att = 0.1 * math.log(8.0) + 1
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1),
                               att * np.linalg.norm(x, axis=-1), rtol=1e-12)


def test_the_cases_reach_every_branch_of_the_formulas():
    # YaRN's ramp is partly between 0 and 1, llama3 hits all three bands,
    # so the comparisons above exercise every branch
    _, _, ramp = np_yarn(10000.0, 64, SCALINGS["yarn"], 512)
    assert ((ramp > 0) & (ramp < 1)).any() and (ramp == 0).any() and \
        (ramp == 1).any()
    _, bands = np_llama3(500000.0, 64, SCALINGS["llama3"])
    assert all(b.any() for b in bands)
    _, _, ramp = np_yarn(10000.0, 64, SCALINGS["yarn_no_truncate"], 512)
    lo = 64 * math.log(128 / (32 * 2 * math.pi)) / (2 * math.log(10000.0))
    assert lo != math.floor(lo)  # truncation changes the bounds


def test_dynamic_ntk_follows_the_longest_length_seen():
    sc = SCALINGS["dynamic"]
    rope = nn.RotaryEmbedding(16, rope_scaling=sc)
    x = rng_x((1, 6, 16), np.float64, 3)

    def check(offset, made_for):
        inv, att = np_freqs(16, 10000.0, 64, sc, made_for)
        ch, sh = np_tables(inv, att, offset + np.arange(6))
        want = np_rotate(x, ch, sh, 16, False)
        got = rope.rotate(foundry.tensor(x), offset=offset)
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-6)

    check(0, 64)       # within the original length: unscaled
    check(200, 206)    # beyond: the base for length 206
    check(100, 206)    # shorter, still above orig: kept (HF's update)
    check(300, 306)    # longer again
    check(10, 64)      # shorter than orig: back to the original
    # and the frequencies really differ beyond the original length
    a = np_freqs(16, 10000.0, 64, sc, 64)[0]
    b = np_freqs(16, 10000.0, 64, sc, 206)[0]
    assert np.abs(a - b).max() > 1e-3


@pytest.mark.parametrize("interleaved", [False, True])
def test_forward_returns_hf_layout_tables(interleaved):
    sc = SCALINGS["llama3"]
    rope = nn.RotaryEmbedding(64, base=500000.0, rope_scaling=sc,
                              partial_rotary_factor=0.5,
                              interleaved=interleaved)
    pos = np.array([[0, 5, 9000], [1, 2, 3]])
    x = foundry.tensor(np.zeros((2, 4, 3, 64), np.float32))
    c, s = rope(x, foundry.tensor(pos))
    assert tuple(c.shape) == (2, 3, 32) and c.dtype is foundry.float32
    inv, att = np_freqs(32, 500000.0, 2048, sc, 0)
    ch, sh = np_tables(inv, att, pos)
    rep = (lambda t: np.repeat(t, 2, -1)) if interleaved else \
        (lambda t: np.concatenate([t, t], -1))
    np.testing.assert_allclose(np.asarray(c), rep(ch), rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(s), rep(sh), rtol=0, atol=1e-6)
    xv = rng_x((2, 4, 3, 64), np.float32, 4)
    y1 = F.apply_rotary_emb(foundry.tensor(xv), c, s,
                            interleaved=interleaved, unsqueeze_dim=1)
    y2 = rope.rotate(foundry.tensor(xv), foundry.tensor(pos))
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(y2))


@pytest.mark.parametrize("interleaved", [False, True])
def test_gradient_is_the_inverse_rotation(interleaved):
    d, r = 24, 16
    sc = SCALINGS["yarn_no_truncate"]
    rope = nn.RotaryEmbedding(d, rope_scaling=sc, rotary_dim=r,
                              interleaved=interleaved)
    xv = rng_x((2, 2, 5, d), np.float64, 5)
    wv = rng_x((2, 2, 5, d), np.float64, 6)
    x = foundry.tensor(xv, requires_grad=True)
    q, k = rope.apply_rotary(x, x * 2.0, offset=7)
    ((q * foundry.tensor(wv)).sum() + (k * foundry.tensor(wv)).sum()
     ).backward()
    inv, att = np_freqs(r, 10000.0, 2048, sc, 0)
    ch, sh = np_tables(inv, att, 7 + np.arange(5))
    # the transpose of a rotation by +a scaled by att: a rotation by -a
    back = np_rotate(wv, ch, -sh, r, interleaved)
    np.testing.assert_allclose(np.asarray(x.grad), 3 * back, rtol=0,
                               atol=1e-6)


def test_half_precision_computes_in_f32():
    rope = nn.RotaryEmbedding(16)
    xv = rng_x((3, 16), np.float32, 7)
    x = foundry.tensor(xv).to(foundry.bfloat16)
    y = rope.rotate(x, offset=2)
    assert y.dtype is foundry.bfloat16
    ref = np.asarray(rope.rotate(x.to(foundry.float32), offset=2))
    got = np.asarray(y.to(foundry.float32))
    np.testing.assert_allclose(got, ref, rtol=2 ** -8, atol=2 ** -8)


def test_torch_agrees_on_the_unscaled_formula():
    torch = pytest.importorskip("torch")
    rope = nn.RotaryEmbedding(32)
    xv = rng_x((2, 4, 9, 32), np.float64, 8)
    y = np.asarray(rope.rotate(foundry.tensor(xv), offset=3))
    # HF's formula in torch, in F64
    inv = 1.0 / 10000.0 ** (torch.arange(0, 32, 2, dtype=torch.float64) / 32)
    emb = torch.outer(torch.arange(3, 12, dtype=torch.float64), inv)
    emb = torch.cat([emb, emb], -1)
    x = torch.from_numpy(xv)
    rot = torch.cat([-x[..., 16:], x[..., :16]], -1)
    want = x * emb.cos() + rot * emb.sin()
    np.testing.assert_allclose(y, want.numpy(), rtol=0, atol=1e-6)


# ------------------------------------------------------------ errors

@pytest.mark.parametrize("kwargs, match", [
    (dict(rotary_dim=7), "rotary_dim"),
    (dict(rotary_dim=20), "rotary_dim"),
    (dict(rope_scaling={"rope_type": "ntk-by-parts", "factor": 2.0}),
     "unknown rope_type"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 0.0}), "factor"),
    (dict(rope_scaling={"rope_type": "linear", "factor": -2.0}), "factor"),
    (dict(rope_scaling={"rope_type": "linear"}), "needs a factor"),
    (dict(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                        "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                        "original_max_position_embeddings": 64}),
     "low_freq_factor"),
    (dict(rope_scaling={"rope_type": "yarn", "factor": 2.0,
                        "beta_fast": -1.0}), "beta_fast"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 2.0,
                        "fator": 3.0}), "unknown rope_scaling keys"),
    (dict(base=-5.0), "theta"),
])
def test_bad_configurations_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nn.RotaryEmbedding(16, **kwargs)


def test_bad_inputs_raise():
    rope = nn.RotaryEmbedding(16)
    x = foundry.tensor(np.zeros((2, 5, 16), np.float32))
    with pytest.raises(ValueError, match="head_dim 16"):
        rope.rotate(foundry.tensor(np.zeros((2, 5, 12), np.float32)))
    with pytest.raises(ValueError, match="-2"):
        rope.rotate(x, foundry.tensor(np.array([0, 1, -2, 3, 4])))
    with pytest.raises(ValueError, match="positions"):
        rope.rotate(x, foundry.tensor(np.arange(4)))
    with pytest.raises(ValueError, match="offset -1"):
        rope.rotate(x, offset=-1)
    with pytest.raises(TypeError, match="integer"):
        rope.rotate(x, foundry.tensor(np.zeros(5, np.float32)))
    with pytest.raises(TypeError, match="float"):
        rope.rotate(foundry.tensor(np.zeros((2, 5, 16), np.int64)))
    with pytest.raises(ValueError, match="even last dim"):
        F.apply_rotary_emb(x, foundry.tensor(np.zeros((5, 3))),
                           foundry.tensor(np.zeros((5, 3))))
    with pytest.raises(ValueError, match="must broadcast"):
        F.apply_rotary_emb(x, foundry.tensor(np.zeros((4, 8))),
                           foundry.tensor(np.zeros((4, 8))))
