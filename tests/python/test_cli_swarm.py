"""`foundry swarm` as processes on loopback: a worker SIGKILLed mid-run,
a worker joining mid-run, the coordinator SIGKILLed and restarted from its
checkpoint.  Every wait is bounded (timeouts on every process and poll)."""
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("FOUNDRY_BIN", ROOT / "bin" / "foundry"))

if not BIN.exists():
    pytest.skip(f"{BIN} is not built (run make)", allow_module_level=True)

MODEL = ["--d-model", "32", "--layers", "1", "--heads", "2", "--context", "32",
         "--batch", "2", "--warmup", "2", "--eval-every", "0", "--eval-batches", "2",
         "--threads", "1", "--quiet"]
LIMIT = 120  # seconds any one process may take


@pytest.fixture(scope="module")
def prep(tmp_path_factory):
    d = tmp_path_factory.mktemp("swarm")
    (d / "corpus").mkdir()
    lib = os.path.dirname(os.__file__)
    for f in ("os.py", "random.py", "textwrap.py", "shutil.py", "string.py", "glob.py",
              "fnmatch.py", "bisect.py", "heapq.py", "copy.py"):
        (d / "corpus" / f).write_text(open(os.path.join(lib, f)).read())
    r = subprocess.run([str(BIN), "train", "--data", str(d / "corpus"), "--vocab-size", "300",
                        *MODEL, "--steps", "3", "--out", str(d / "prep")],
                       capture_output=True, timeout=LIMIT)
    assert r.returncode == 0, r.stderr.decode()
    r = subprocess.run([str(BIN), "swarm", "keygen", "--out", str(d / "key")],
                       capture_output=True, timeout=LIMIT)
    assert r.returncode == 0, r.stderr.decode()
    return d


def coordinator(d, log, *extra, port=0):
    p = subprocess.Popen([str(BIN), "swarm", "coordinator", "--port", str(port), "--key-file",
                          str(d / "key"), "--heartbeat-ms", "100", "--peer-timeout-ms", "1500",
                          "--round-deadline-ms", "1000", *extra],
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    end = time.time() + 20
    while time.time() < end:
        m = re.search(r"port (\d+)", open(log).read())
        if m:
            return p, int(m.group(1))
        assert p.poll() is None, open(log).read()
        time.sleep(0.05)
    p.kill()
    raise AssertionError("the coordinator did not start: " + open(log).read())


def worker(d, port, name, steps, *extra):
    out = d / name
    return subprocess.Popen([str(BIN), "swarm", "worker", "--connect", f"127.0.0.1:{port}",
                             "--key-file", str(d / "key"), "--name", name,
                             "--data", str(d / "prep" / "data.ftok"),
                             "--tokenizer", str(d / "prep" / "tokenizer.json"), *MODEL,
                             "--steps", str(steps), "--out", str(out), *extra],
                            stdout=open(d / f"{name}.log", "w"), stderr=subprocess.STDOUT)


def step_of(d, name):
    """The last step in a worker's metrics.jsonl (0 before any)."""
    try:
        lines = open(d / name / "metrics.jsonl").read().splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            return json.loads(line)["step"]
        except (ValueError, KeyError):
            continue
    return 0


def wait_step(d, name, step, procs):
    end = time.time() + LIMIT
    while step_of(d, name) < step:
        assert time.time() < end, f"{name} did not reach step {step}"
        for p in procs:
            assert p.poll() is None or p.returncode == 0, (d / f"{name}.log").read_text()
        time.sleep(0.02)


def finish(d, procs, names):
    for p, n in zip(procs, names):
        assert p.wait(LIMIT) == 0, (d / f"{n}.log").read_text()


def same_params(d, names):
    blobs = [(d / n / "model.safetensors").read_bytes() for n in names]
    return all(b == blobs[0] for b in blobs)


def test_a_killed_worker_is_dropped_and_a_new_one_joins_mid_run(prep):
    d = prep
    co, port = coordinator(d, d / "co1.log")
    try:
        steps = 1500  # long enough to be training still when a1 wakes:
        # 4x the tokens per step of MODEL, so 2.5 s is a few hundred steps
        # even on an idle, fast machine
        slow = ["--batch", "4", "--context", "64"]
        ws = [worker(d, port, f"a{i}", steps, *slow) for i in range(3)]
        wait_step(d, "a2", 60, ws)
        ws[2].send_signal(signal.SIGKILL)  # mid-round: no LEAVE, no FIN first
        ws[2].wait(LIMIT)
        late = worker(d, port, "late", steps, *slow)
        wait_step(d, "late", 200, [ws[0], ws[1], late])
        # a straggler: a1 stops answering; rounds close at the deadline
        # without it, the silent connection is dropped, and when it wakes it
        # rejoins with the swarm's state
        ws[1].send_signal(signal.SIGSTOP)
        s0 = step_of(d, "a0")
        time.sleep(2.5)  # over the peer timeout
        progressed = step_of(d, "a0") - s0
        ws[1].send_signal(signal.SIGCONT)
        assert progressed >= 1, "the round did not close without the stopped worker"
        assert step_of(d, "a0") < steps - 100, "too fast for this test: raise steps"
        finish(d, [ws[0], ws[1], late], ["a0", "a1", "late"])
        assert "reconnecting" in (d / "a1.log").read_text()
        assert same_params(d, ["a0", "a1", "late"])
        log = (d / "late.log").read_text()
        joined = int(re.search(r"joined .* at step (\d+)", log).group(1))
        assert 60 < joined < steps, log  # it got the swarm's state, mid-run
    finally:
        co.send_signal(signal.SIGINT)
        co.wait(LIMIT)
    stats = (d / "co1.log").read_text()
    assert re.search(r"(\d+) joins", stats).group(1) == "5", stats  # a1 twice


def test_the_coordinator_resumes_from_its_checkpoint(prep):
    d = prep
    ck = d / "ckpt"
    co, port = coordinator(d, d / "co2.log", "--checkpoint", str(ck), "--checkpoint-every", "10")
    steps = 400
    ws = [worker(d, port, f"b{i}", steps, "--reconnect-ms", "60000") for i in range(2)]
    try:
        wait_step(d, "b0", 120, ws)
        co.send_signal(signal.SIGKILL)
        co.wait(LIMIT)
        assert (ck / "swarm.ckpt").exists()
        co, port2 = coordinator(d, d / "co3.log", "--checkpoint", str(ck), port=port)
        assert port2 == port
        finish(d, ws, ["b0", "b1"])
        assert same_params(d, ["b0", "b1"])
        start = int(re.search(r"round (\d+)", (d / "co3.log").read_text()).group(1))
        assert 0 < start <= 120  # resumed from a checkpoint, not from 0
        for n in ("b0", "b1"):
            assert "val loss" in (d / f"{n}.log").read_text()
    finally:
        for p in ws:
            if p.poll() is None:
                p.kill()
        co.send_signal(signal.SIGINT)
        co.wait(LIMIT)
