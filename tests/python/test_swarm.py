"""foundry.swarm: DistributedOptimizer and Coordinator on loopback.

Workers run in Python threads (the C calls release the GIL) against a
coordinator in the same process; every wait is bounded by the
coordinator's round deadline and the workers' timeouts."""
import threading

import numpy as np
import pytest

import foundry
import foundry.swarm as swarm

KEY = b"a swarm key of 32 bytes, for tests"


def data(seed, n=64):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, 8)).astype(np.float32)
    w = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
    return x, (x @ w + 0.1 * r.standard_normal((n, 1))).astype(np.float32)


def model(seed):
    foundry.manual_seed(seed)
    return foundry.nn.Linear(8, 1)


def grad_step(m, opt, x, y):
    opt.zero_grad()
    loss = ((m(foundry.tensor(x)) - foundry.tensor(y)) ** 2).mean()
    loss.backward()
    opt.step()
    return loss.item()


def run_workers(co, shards, steps, **kw):
    """One thread per shard; returns each worker's final (weight, bias)."""
    out = [None] * len(shards)
    errors = []
    # different inits, the founder's wins; made here, since the threads
    # would race on the global seed
    models = [model(100 + i) for i in range(len(shards))]

    def work(i):
        try:
            m = models[i]
            opt = swarm.DistributedOptimizer(
                foundry.optim.SGD(m.parameters(), lr=0.1),
                f"127.0.0.1:{co.port}", key=KEY, name=f"w{i}", **kw)
            worlds = []
            with opt:
                while opt.round < steps:
                    grad_step(m, opt, *shards[i])
                    worlds.append(opt.world_size)
                out[i] = (m.weight.detach().numpy().copy(),
                          m.bias.detach().numpy().copy(), opt.rank, worlds)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    th = [threading.Thread(target=work, args=(i,)) for i in range(len(shards))]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
    assert not errors, errors
    return out


def test_dense_swarm_equals_one_process_on_the_joined_batch():
    shards = [data(1), data(2)]
    with swarm.Coordinator(key=KEY, round_deadline_ms=5000) as co:
        co.start()
        out = run_workers(co, shards, 30, mode="dense")
    w0, b0 = out[0][:2]
    for w, b, _, _ in out[1:]:
        assert np.array_equal(w, w0) and np.array_equal(b, b0)
    # Replay in one process from the founder's start (the founder is the
    # worker whose JOIN came first: it took part from round 0, the other
    # from the round its state arrived; ids follow connections): a round
    # with both workers is one step on the joined batch (the mean of the
    # two shard means is the joined mean), a round before the second
    # joined is the founder's shard alone.  Equal to F32 rounding (the
    # summation order differs), over 30 steps of lr 0.1.
    f = max(range(len(out)), key=lambda i: len(out[i][3]))
    worlds = out[f][3]
    assert len(worlds) == 30 and worlds[-1] == 2
    x = np.concatenate([shards[0][0], shards[1][0]])
    y = np.concatenate([shards[0][1], shards[1][1]])
    m = model(100 + f)
    opt = foundry.optim.SGD(m.parameters(), lr=0.1)
    for wsize in worlds:
        grad_step(m, opt, *((x, y) if wsize == 2 else shards[f]))
    assert np.abs(m.weight.detach().numpy() - w0).max() < 1e-5
    assert np.abs(m.bias.detach().numpy() - b0).max() < 1e-5


def test_topk_swarm_trains_and_replicas_agree():
    shards = [data(3), data(4), data(5)]
    with swarm.Coordinator(key=KEY, encrypt=True) as co:
        co.start()
        out = run_workers(co, shards, 80, topk=0.25, encrypt=True)
        stats = co.stats()
    w0 = out[0][0]
    for w, b, _, _ in out[1:]:
        assert np.array_equal(w, w0) and np.array_equal(b, out[0][1])
    target = np.arange(8, dtype=np.float32) / 8
    assert np.abs(w0.ravel() - target).max() < 0.1
    assert stats["rounds"] >= 80 and stats["refused"] == 0


def test_lookahead_reaches_the_library_and_is_refused_outside_update_topk():
    with swarm.Coordinator(key=KEY) as co:
        co.start()
        opt = foundry.optim.SGD(model(1).parameters(), lr=0.1)
        with pytest.raises(ValueError, match="lookahead 0.5"):
            swarm.DistributedOptimizer(opt, f"127.0.0.1:{co.port}", key=KEY,
                                       lookahead=0.5, reconnect_ms=0)


def test_wrong_key_and_missing_key_are_refused():
    with swarm.Coordinator(key=KEY) as co:
        co.start()
        m = model(1)
        opt = foundry.optim.SGD(m.parameters(), lr=0.1)
        with pytest.raises(ValueError, match="authentication|refused"):
            swarm.DistributedOptimizer(opt, f"127.0.0.1:{co.port}",
                                       key=b"not the key, but long enough",
                                       reconnect_ms=0)
        with pytest.warns(RuntimeWarning, match="insecure"):
            with pytest.raises(ValueError, match="refused|key"):
                swarm.DistributedOptimizer(opt, f"127.0.0.1:{co.port}",
                                           insecure=True, reconnect_ms=0)
        assert co.stats()["refused"] == 2
    with pytest.raises(ValueError, match="16"):
        swarm.Coordinator(key=b"short")
    with pytest.raises(ValueError, match="key"):
        swarm.Coordinator()


def test_topk_matches_torch_topk_of_the_magnitudes():
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(0)
    x = r.standard_normal(100_000).astype(np.float32)
    vals, idx = swarm.topk(foundry.tensor(x), 1000)
    tv, ti = torch.topk(torch.from_numpy(x).abs(), 1000)
    assert np.array_equal(np.sort(ti.numpy()), idx.numpy())
    assert np.array_equal(vals.numpy(), x[idx.numpy()])
    assert np.all(np.diff(idx.numpy()) > 0)
