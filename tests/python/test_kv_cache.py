"""foundry.nn.KVCache: decoding through the cache matches attention over
the whole prefix (numpy F64 reference; torch's SDPA as a second opinion),
for chunks of mixed sizes, GQA, sliding windows, truncate/crop and F16/BF16
storage; what update returns; bytes; errors.

F32 tolerance: max |got - ref| / max |ref| <= 1e-5, F32 rounding (6e-8 per
operation) over sums of at most T = 21 products and the softmax
normalisation; a wrong offset, window or key order moves outputs by O(1).
"""
import numpy as np
import pytest

import foundry

B, T, D, DV = 2, 21, 16, 8


def ref_attention(q, k, v, window=0, scale=None):
    """Causal attention of every position (numpy, F64): q (B, H, T, D), k
    (B, Hkv, T, D), v (B, Hkv, T, Dv); query i sees keys j <= i and, with a
    window, j > i - window."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k = np.repeat(k, rep, axis=1)
    v = np.repeat(v, rep, axis=1)
    s = (q @ k.swapaxes(-1, -2)) * (scale or 1 / np.sqrt(q.shape[-1]))
    i = np.arange(q.shape[2])[:, None]
    j = np.arange(k.shape[2])[None, :]
    seen = j <= i
    if window:
        seen &= j > i - window
    s = np.where(seen, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def rel_err(got, want):
    return np.abs(np.asarray(got, np.float64) - want).max() / np.abs(
        want).max()


def seq(rng, h, hkv, t=T):
    f = np.float32
    return (rng.standard_normal((B, h, t, D)).astype(f),
            rng.standard_normal((B, hkv, t, D)).astype(f),
            rng.standard_normal((B, hkv, t, DV)).astype(f))


def decode(cache, layer, q, k, v, chunks, start=0, stop=None, **kw):
    """Outputs of positions [start, stop) fed in chunks (cycled)."""
    stop = q.shape[2] if stop is None else stop
    out, pos, i = [], start, 0
    while pos < stop:
        n = min(chunks[i % len(chunks)], stop - pos)
        sl = slice(pos, pos + n)
        y = cache.attend(layer, foundry.tensor(q[:, :, sl]),
                         foundry.tensor(k[:, :, sl]),
                         foundry.tensor(v[:, :, sl]), **kw)
        out.append(np.asarray(y))
        pos, i = pos + n, i + 1
    return np.concatenate(out, axis=2)


CHUNKS = {"token_by_token": [1], "mixed": [5, 1, 1, 7, 2, 1, 4]}


@pytest.mark.parametrize("heads", [(2, 2), (4, 2), (4, 1)],
                         ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("chunks", CHUNKS.values(), ids=CHUNKS.keys())
def test_decoding_matches_full_causal_attention(rng, heads, chunks):
    q, k, v = seq(rng, *heads)
    cache = foundry.nn.KVCache(1, B, heads[1], T, D, v_head_dim=DV)
    got = decode(cache, 0, q, k, v, chunks)
    assert rel_err(got, ref_attention(q, k, v)) <= 1e-5
    assert len(cache) == cache.get_seq_length() == T


def test_decoding_matches_torch_sdpa(rng, tch):
    q, k, v = seq(rng, 4, 2)
    cache = foundry.nn.KVCache(1, B, 2, T, D, v_head_dim=DV)
    got = decode(cache, 0, q, k, v, [3, 1])
    want = tch.nn.functional.scaled_dot_product_attention(
        *(tch.from_numpy(a).double() for a in (q, k, v)), is_causal=True,
        enable_gqa=True).numpy()
    assert rel_err(got, want) <= 1e-5


@pytest.mark.parametrize("window", [1, 5])
@pytest.mark.parametrize("chunks", [[1], [1, 3, 1, 8, 2, 6]],
                         ids=["token_by_token", "chunks_past_the_window"])
def test_window_decoding_matches_windowed_attention(rng, window, chunks):
    # The ring of W slots wraps several times over T positions.
    q, k, v = seq(rng, 4, 2)
    cache = foundry.nn.KVCache(2, B, 2, T, D, v_head_dim=DV,
                               window=[0, window])
    assert cache.windows == (0, window)
    got = decode(cache, 1, q, k, v, chunks, scale=0.3)
    want = ref_attention(q, k, v, window, scale=0.3)
    assert rel_err(got, want) <= 1e-5
    assert cache.get_seq_length(1) == T and cache.get_seq_length(0) == 0


@pytest.mark.parametrize("window,keep", [(0, 9), (5, 14)],
                         ids=["full", "window"])
@pytest.mark.parametrize("name", ["truncate", "crop"])
def test_redecoding_after_truncate_matches_the_new_sequence(rng, window,
                                                            keep, name):
    # Decode 15 positions of a, go back to `keep` (a wrapped ring: one
    # position), decode b from there: attention over a[:keep] + b[keep:].
    a, b = seq(rng, 4, 2), seq(rng, 4, 2)
    mix = [np.concatenate([x[:, :, :keep], y[:, :, keep:]], axis=2)
           for x, y in zip(a, b)]
    cache = foundry.nn.KVCache(1, B, 2, T, D, v_head_dim=DV, window=window)
    decode(cache, 0, *a, [4, 1, 3], stop=15)
    if window:
        with pytest.raises(foundry.FoundryError, match="no longer holds"):
            cache.truncate(keep - 1)
        assert len(cache) == 15
    getattr(cache, name)(keep)
    assert len(cache) == keep
    got = decode(cache, 0, *b, [1, 2], start=keep)
    want = ref_attention(*mix, window)[:, :, keep:]
    assert rel_err(got, want) <= 1e-5


def test_crop_follows_hugging_face():
    cache = foundry.nn.KVCache(1, 1, 1, 8, 2)
    cache.append(0, foundry.zeros(1, 1, 6, 2), foundry.zeros(1, 1, 6, 2))
    cache.crop(10)          # already shorter: left alone
    assert len(cache) == 6
    cache.crop(-2)          # drops two
    assert len(cache) == 4
    with pytest.raises(IndexError, match="cannot truncate to 5"):
        cache.truncate(5)
    cache.reset()
    assert len(cache) == 0


def test_update_returns_the_keys_in_position_order(rng):
    # Window 3: the two positions before the new ones, then the new ones,
    # also once the ring has wrapped.
    k = rng.standard_normal((B, 2, 12, D)).astype(np.float32)
    v = rng.standard_normal((B, 2, 12, DV)).astype(np.float32)
    full = foundry.nn.KVCache(1, B, 2, 12, D, v_head_dim=DV)
    ring = foundry.nn.KVCache(1, B, 2, 12, D, v_head_dim=DV, window=3)
    pos = 0
    for n in [1, 2, 1, 4, 1, 3]:
        sl = slice(pos, pos + n)
        kf, vf = full.update(0, foundry.tensor(k[:, :, sl]),
                             foundry.tensor(v[:, :, sl]))
        np.testing.assert_array_equal(np.asarray(kf), k[:, :, :pos + n])
        np.testing.assert_array_equal(np.asarray(vf), v[:, :, :pos + n])
        kr, vr = ring.update(0, foundry.tensor(k[:, :, sl]),
                             foundry.tensor(v[:, :, sl]))
        first = max(0, pos - 2)
        np.testing.assert_array_equal(np.asarray(kr), k[:, :, first:pos + n])
        np.testing.assert_array_equal(np.asarray(vr), v[:, :, first:pos + n])
        pos += n


@pytest.mark.parametrize("dtype,loose", [("float16", 5e-3),
                                         ("bfloat16", 4e-2)])
def test_narrow_storage_attends_over_the_rounded_keys(rng, dtype, loose):
    # Tight against attention over the rounded k and v (the kernel reads
    # the stored values exactly); loose against the F32 keys: the storage
    # rounding (2^-11 relative for F16, 2^-8 for BF16, per element) moves
    # scores of size ~|q||k| ~ 16 by ~1e-2 (BF16 ~6e-2).
    dt = getattr(foundry, dtype)
    q, k, v = seq(rng, 4, 2)
    kr, vr = (np.asarray(foundry.tensor(a, dtype=dt).float()) for a in (k, v))
    cache = foundry.nn.KVCache(2, B, 2, T, D, v_head_dim=DV, dtype=dt,
                               window=[0, 4])
    assert cache.dtype == dt
    for layer, window in enumerate([0, 4]):
        got = decode(cache, layer, q, k, v, [3, 1, 2])
        assert rel_err(got, ref_attention(q, kr, vr, window)) <= 1e-5
        assert 0 < rel_err(got, ref_attention(q, k, v, window)) <= loose


def test_nbytes_is_the_allocated_storage():
    # Full layers hold max_len slots, windowed ones W.
    for dt, size in [(foundry.float32, 4), (foundry.float16, 2),
                     (foundry.bfloat16, 2), (foundry.float64, 8)]:
        cache = foundry.nn.KVCache(3, 2, 4, 100, 16, v_head_dim=8, dtype=dt,
                                   window=[None, 10, 0])
        assert cache.nbytes == (100 + 10 + 100) * 2 * 4 * (16 + 8) * size


def test_errors_name_the_values_and_change_nothing():
    cache = foundry.nn.KVCache(2, 1, 2, 4, 8)
    k = foundry.zeros(1, 2, 3, 8)
    cache.append(0, k, k)
    with pytest.raises(IndexError, match="appending 3 tokens to 3 passes "
                                         "max_len 4"):
        cache.update(0, k, k)
    assert len(cache) == 3
    with pytest.raises(IndexError, match="layer 2 out of range"):
        cache.append(2, k, k)
    with pytest.raises(ValueError, match=r"k has shape \[1,2,3,4\]"):
        cache.append(1, foundry.zeros(1, 2, 3, 4), k)
    with pytest.raises(ValueError, match="equal to k's"):
        cache.append(1, k, foundry.zeros(1, 2, 2, 8))
    with pytest.raises(TypeError, match="k must be a float tensor, got i64"):
        cache.append(1, foundry.zeros(1, 2, 3, 8, dtype=foundry.int64), k)
    with pytest.raises(TypeError, match="key must be a foundry.Tensor"):
        cache.append(1, np.zeros((1, 2, 3, 8), np.float32), k)
    with pytest.raises(ValueError, match=r"q has shape \[1,3,1,8\]"):
        cache.attend(1, foundry.zeros(1, 3, 1, 8), k[:, :, :1], k[:, :, :1])
    assert cache.get_seq_length(1) == 0
    with pytest.raises(IndexError, match="layer 1 holds 0 positions"):
        cache.truncate(2)
    with pytest.raises(ValueError, match="window has 1 entries for 2"):
        foundry.nn.KVCache(2, 1, 2, 4, 8, window=[3])
    with pytest.raises(ValueError, match="window must be >= 0"):
        foundry.nn.KVCache(1, 1, 2, 4, 8, window=-1)
    with pytest.raises(TypeError, match="got i32"):
        foundry.nn.KVCache(1, 1, 2, 4, 8, dtype=foundry.int32)
    with pytest.raises(ValueError, match="max_len must be positive"):
        foundry.nn.KVCache(1, 1, 2, 0, 8)
    with pytest.raises(ValueError, match="num_layers must be positive"):
        foundry.nn.KVCache(0, 1, 2, 4, 8)


def test_attend_gives_the_query_a_gradient(rng):
    # Only q is differentiable (cached keys are detached): its gradient
    # matches one through attention over the plain prefix tensors.
    q, k, v = seq(rng, 2, 2, t=5)
    cache = foundry.nn.KVCache(1, B, 2, 5, D, v_head_dim=DV)
    cache.append(0, foundry.tensor(k[:, :, :4]), foundry.tensor(v[:, :, :4]))
    qt = foundry.tensor(q[:, :, 4:], requires_grad=True)
    y = cache.attend(0, qt, foundry.tensor(k[:, :, 4:]),
                     foundry.tensor(v[:, :, 4:]))
    y.sum().backward()
    # d/dq of sum(softmax(q k^T s) v) in F64.
    qd = q[:, :, 4:].astype(np.float64)
    kd, vd = k.astype(np.float64), v.astype(np.float64)
    s = qd @ kd.swapaxes(-1, -2) / np.sqrt(D)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    dw = vd.sum(-1)[:, :, None, :]
    ds = w * (dw - (w * dw).sum(-1, keepdims=True))
    want = ds @ kd / np.sqrt(D)
    assert rel_err(qt.grad, want) <= 1e-5
    # The node saves a view of the storage: a write before the backward is
    # reported, not turned into a wrong gradient.
    cache.truncate(4)
    y = cache.attend(0, qt, foundry.tensor(k[:, :, 4:]),
                     foundry.tensor(v[:, :, 4:]))
    cache.truncate(4)
    cache.append(0, foundry.tensor(k[:, :, :1]), foundry.tensor(v[:, :, :1]))
    with pytest.raises(foundry.FoundryError, match="modified in place"):
        y.sum().backward()


def test_cache_on_the_test_device_matches_the_cpu(rng, test_device):
    # The cache writes through tensor copies only, so it runs on a device
    # whose memory the host cannot touch: the same keys come back, and
    # attention over them matches the CPU's.
    q, k, v = seq(rng, 4, 2, t=9)
    dev = foundry.nn.KVCache(1, B, 2, 9, D, v_head_dim=DV, window=4,
                             device=test_device)
    cpu = foundry.nn.KVCache(1, B, 2, 9, D, v_head_dim=DV, window=4)
    assert dev.device == test_device
    pos = 0
    for n in [2, 1, 3, 1, 2]:
        sl = slice(pos, pos + n)
        kd, vd = dev.update(0, foundry.tensor(k[:, :, sl]).to(test_device),
                            foundry.tensor(v[:, :, sl]).to(test_device))
        kc, vc = cpu.update(0, foundry.tensor(k[:, :, sl]),
                            foundry.tensor(v[:, :, sl]))
        assert kd.device == test_device
        np.testing.assert_array_equal(np.asarray(kd.to("cpu")),
                                      np.asarray(kc))
        np.testing.assert_array_equal(np.asarray(vd.to("cpu")),
                                      np.asarray(vc))
        pos += n
    # Attention through the cache on the device, chunks and single tokens
    # over a ring that wraps, against the numpy reference.
    dev = foundry.nn.KVCache(1, B, 2, 9, D, v_head_dim=DV, window=4,
                             device=test_device)
    out, pos = [], 0
    for n in [2, 1, 3, 1, 2]:
        sl = slice(pos, pos + n)
        y = dev.attend(0, *(foundry.tensor(a[:, :, sl]).to(test_device)
                            for a in (q, k, v)))
        assert y.device == test_device
        out.append(np.asarray(y.to("cpu")))
        pos += n
    got = np.concatenate(out, axis=2)
    assert rel_err(got, ref_attention(q, k, v, 4)) <= 1e-5
    with pytest.raises(foundry.FoundryError, match="is on cpu, the cache "
                                                   "on test"):
        dev.append(0, foundry.tensor(k[:, :, :1]), foundry.tensor(v[:, :, :1]))
