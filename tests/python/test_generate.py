"""Sampling and generation: the sampler against a numpy transcription of
Hugging Face's logits warpers (transformers' RepetitionPenaltyLogitsProcessor,
TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
MinPLogitsWarper with min_tokens_to_keep=1, applied in generate()'s order),
draw frequencies against the processed softmax, and generation with the KV
cache against the uncached model."""
import numpy as np
import pytest

from foundry._models_generate import Sampler


def softmax(x):
    m = np.max(x)
    e = np.exp(x - m)
    return e / e.sum()


def hf_probs(logits, history=(), temperature=1.0, top_k=0, top_p=1.0,
             min_p=0.0, repetition_penalty=1.0):
    """transformers' processors, line by line, in float64."""
    s = np.asarray(logits, dtype=np.float64).copy()
    if repetition_penalty != 1.0 and len(history):
        ids = np.asarray(history, dtype=np.int64)
        score = s[ids]                                     # torch.gather
        score = np.where(score < 0, score * repetition_penalty,
                         score / repetition_penalty)
        s[ids] = score                                     # scatter_
    if temperature == 0:                                   # greedy search
        out = np.zeros_like(s)
        out[np.argmax(s)] = 1.0
        return out
    s = s / temperature
    if top_k > 0:
        k = min(max(top_k, 1), s.size)
        kth = np.sort(s)[::-1][k - 1]                      # topk(...)[0][..., -1]
        s[s < kth] = -np.inf
    if top_p < 1.0:
        order = np.argsort(s, kind="stable")               # sort(descending=False)
        cum = np.cumsum(softmax(s[order]))
        remove = cum <= 1 - top_p
        remove[-1:] = False                                # min_tokens_to_keep
        s[order[remove]] = -np.inf
    if min_p > 0:
        probs = softmax(s)
        remove = probs < min_p * probs.max()
        order = np.argsort(-s, kind="stable")
        sorted_remove = remove[order]
        sorted_remove[:1] = False                          # min_tokens_to_keep
        remove[order] = sorted_remove
        s[remove] = -np.inf
    return softmax(s)


SETTINGS = [
    dict(),
    dict(temperature=0.7),
    dict(temperature=1.6, top_k=5),
    dict(top_k=1),
    dict(top_p=0.9),
    dict(top_p=0.3, temperature=0.5),
    dict(min_p=0.05),
    dict(min_p=0.2, top_k=20, temperature=1.3),
    dict(top_k=40, top_p=0.8, min_p=0.02, repetition_penalty=1.3),
    dict(repetition_penalty=1.5),
    dict(repetition_penalty=0.7, temperature=0.0),
    dict(temperature=0.0),
    dict(top_p=0.0),
]


@pytest.mark.parametrize("kw", SETTINGS, ids=[str(k) for k in SETTINGS])
def test_sampler_distribution_matches_hf_warpers(kw):
    rng = np.random.default_rng(0)
    for trial in range(20):
        v = int(rng.integers(2, 300))
        logits = (rng.standard_normal(v) * rng.uniform(0.5, 4)).astype(np.float32)
        if trial % 4 == 1:
            logits[rng.integers(0, v, size=v // 3)] = -np.inf
            logits[rng.integers(0, v)] = 1.0                # at least one finite
        if trial % 4 == 2:                                  # ties
            logits = np.round(logits).astype(np.float32)
        history = rng.integers(0, v, size=int(rng.integers(0, 12)))
        want = hf_probs(logits, history, **kw)
        got = Sampler(**kw).probs(logits, history)
        np.testing.assert_array_equal(got > 0, want > 0)    # the same ids kept
        # both in float64, summed in another order
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(), dict(temperature=0.6, top_k=6),
                                dict(top_p=0.8, repetition_penalty=1.4),
                                dict(min_p=0.1, temperature=1.5)])
def test_sampler_draw_frequencies_follow_the_processed_softmax(kw):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal(12).astype(np.float32)
    history = [0, 3, 3]
    s = Sampler(seed=123, **kw)
    p = s.probs(logits, history)
    n = 40000
    counts = np.bincount([s.sample(logits, history) for _ in range(n)],
                         minlength=12)
    assert np.all(counts[p == 0] == 0)
    # each count is binomial(n, p): 5 standard deviations (plus one for
    # the discreteness) fail by chance with probability < 1e-6 per id
    bound = 5 * np.sqrt(n * p * (1 - p)) + 1
    assert np.all(np.abs(counts - n * p) <= bound), (counts, n * p)


def test_sampler_is_reproducible_for_a_seed():
    logits = np.linspace(-1, 1, 50).astype(np.float32)
    a = Sampler(seed=9, top_p=0.95)
    b = Sampler(seed=9, top_p=0.95)
    c = Sampler(seed=10, top_p=0.95)
    xa = [a.sample(logits) for _ in range(100)]
    assert xa == [b.sample(logits) for _ in range(100)]
    assert xa != [c.sample(logits) for _ in range(100)]


def test_sampler_do_sample_false_is_greedy():
    logits = np.array([0.1, 3.0, 3.0, -2.0], dtype=np.float32)
    s = Sampler(do_sample=False, temperature=5.0, top_k=2)
    assert [s.sample(logits) for _ in range(5)] == [1] * 5


def test_sampler_errors_name_the_value():
    with pytest.raises(ValueError, match="top_p"):
        Sampler(top_p=1.5)
    with pytest.raises(ValueError, match="repetition_penalty"):
        Sampler(repetition_penalty=-1)
    s = Sampler()
    with pytest.raises(ValueError, match="nan"):
        s.sample(np.array([0.0, np.nan], dtype=np.float32))
    with pytest.raises(IndexError, match="history"):
        s.sample(np.zeros(4, dtype=np.float32), history=[7])
    with pytest.raises(ValueError, match="1-d"):
        s.sample(np.zeros((2, 2), dtype=np.float32))


# ------------------------------------------------------------- generation

models = pytest.importorskip("foundry.models")


def tiny(preset="gpt-tiny", seed=0, **kw):
    cfg = dict(vocab_size=53, context=20, d_model=32, n_layers=2, n_heads=4,
               head_dim=0, d_ff=48, dropout=0.0, init_std=0.3)
    cfg["n_kv_heads"] = 2 if preset == "llama-tiny" else 4
    cfg.update(kw)
    c = models.GPTConfig.preset(preset, **cfg)
    if preset == "llama-tiny":
        c.update(rope=dict(c.rope, head_dim=8))
    m = models.GPT(c, seed=seed)
    m.eval()
    return m


@pytest.mark.parametrize("preset", ["gpt-tiny", "llama-tiny"])
def test_greedy_generate_is_the_argmax_of_the_uncached_forward(preset):
    import foundry as F
    m = tiny(preset, seed=3)
    prompt = [5, 11, 2, 40]
    out = m.generate(prompt, max_new_tokens=10, do_sample=False)
    assert len(out) == 10
    seq = list(prompt)
    with F.no_grad():
        for t in out:
            row = m(np.array([seq]))[0, -1].numpy()
            # cached and uncached forwards differ by rounding (~1e-6): a
            # different id is allowed only as a near-tie of the best
            assert t == int(np.argmax(row)) or row[t] >= row.max() - 1e-4
            seq.append(t)


def test_stream_yields_the_same_ids_as_the_list():
    m = tiny(seed=1)
    a = m.generate([1, 2, 3], max_new_tokens=8, seed=5, top_k=10)
    s = m.generate([1, 2, 3], max_new_tokens=8, seed=5, top_k=10, stream=True)
    assert list(s) == a
    s = m.generate([1, 2, 3], max_new_tokens=8, seed=5, top_k=10, stream=True)
    assert [next(s), next(s)] == a[:2]
    s.close()
    assert list(s) == []


def test_seeded_generation_is_reproducible():
    import foundry as F
    m = tiny(seed=2)
    a = m.generate([7], max_new_tokens=12, temperature=1.5, seed=1)
    assert a == m.generate([7], max_new_tokens=12, temperature=1.5, seed=1)
    assert a != m.generate([7], max_new_tokens=12, temperature=1.5, seed=2)
    F.manual_seed(4)
    b = m.generate([7], max_new_tokens=12, temperature=1.5)
    F.manual_seed(4)
    assert b == m.generate([7], max_new_tokens=12, temperature=1.5)


def test_generation_ends_at_a_stop_token_and_the_context():
    m = tiny(seed=4)
    a = m.generate([3, 4], max_new_tokens=10, seed=8, temperature=2.0)
    cut = a.index(a[4]) + 1
    assert m.generate([3, 4], max_new_tokens=10, seed=8, temperature=2.0,
                      stop_tokens=[a[4]]) == a[:cut]
    assert len(m.generate(list(range(17)), max_new_tokens=10)) == 3   # context 20
    assert m.generate(list(range(20)), max_new_tokens=10) == []
    assert m.generate([1], max_new_tokens=0) == []


def test_generate_leaves_the_training_flag_alone():
    m = tiny(seed=5)
    m.train()
    m.generate([1, 2], max_new_tokens=3)
    assert m.training


def test_generate_errors_name_the_problem():
    m = tiny(seed=6)
    with pytest.raises(ValueError, match="prompt is empty"):
        m.generate([], max_new_tokens=3)
    with pytest.raises(IndexError, match=r"prompt\[1\] = 53"):
        m.generate([1, 53], max_new_tokens=3)
    with pytest.raises(ValueError, match="longer than the model's context 20"):
        m.generate(list(range(21)), max_new_tokens=3)
    with pytest.raises(IndexError, match="stop_tokens"):
        m.generate([1], stop_tokens=[99])
    with pytest.raises(ValueError, match="top_k"):
        m.generate([1], top_k=-1)
    with pytest.raises(ValueError, match="one sequence"):
        m.generate([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="prompt is empty"):
        m.generate([], stream=True)
