"""The swarm over MPI against the swarm over TCP (make test-mpi).

Four ranks under `mpirun` and four TCP workers with a coordinator train the
same tiny model from the same seed and data: in TopK mode every rank's
parameters equal every TCP worker's, bit for bit (the ranks sum in rank
order, the coordinator in worker-id order, and the TCP workers join in
order so that id = rank + 1; --min-workers makes the first round wait for
all four, as MPI's ranks start together).  Dense mode over MPI (an
allreduce) leaves identical replicas too.  Every process has a timeout."""
import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

BIN = pathlib.Path(os.environ["FOUNDRY_BIN"]).resolve()
MPI_BIN = pathlib.Path(os.environ["FOUNDRY_MPI_BIN"]).resolve()
LIMIT = 300
MODEL = ["--d-model", "32", "--layers", "1", "--heads", "2", "--context", "32", "--batch", "2",
         "--steps", "40", "--warmup", "2", "--eval-every", "0", "--eval-batches", "2",
         "--threads", "1", "--quiet"]


@pytest.fixture(scope="module")
def prep(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    (d / "corpus").mkdir()
    lib = os.path.dirname(os.__file__)
    for f in ("os.py", "random.py", "textwrap.py", "shutil.py", "string.py", "glob.py"):
        shutil.copy(os.path.join(lib, f), d / "corpus" / f)
    for cmd in ([str(BIN), "train", "--data", str(d / "corpus"), "--vocab-size", "300", *MODEL,
                 "--out", str(d / "prep")],
                [str(BIN), "swarm", "keygen", "--out", str(d / "key")]):
        r = subprocess.run(cmd, capture_output=True, timeout=LIMIT)
        assert r.returncode == 0, r.stderr.decode()
    return d


def data(d):
    return ["--data", str(d / "prep" / "data.ftok"), "--tokenizer", str(d / "prep" / "tokenizer.json")]


def mpi_run(d, tag, *flags):
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", str(MPI_BIN),
                        "swarm", "worker", "--mpi", *data(d), *MODEL, *flags,
                        "--out", str(d / f"{tag}%r")], capture_output=True, timeout=LIMIT)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()[-3000:]
    return [(d / f"{tag}{i}" / "model.safetensors").read_bytes() for i in range(4)]


def tcp_run(d, tag, *flags):
    log = d / f"{tag}-co.log"
    co = subprocess.Popen([str(BIN), "swarm", "coordinator", "--port", "0", "--key-file", str(d / "key"),
                           "--min-workers", "4"], stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        end = time.time() + 30
        while not re.search(r"port (\d+)", log.read_text()):
            assert time.time() < end and co.poll() is None, log.read_text()
            time.sleep(0.05)
        port = re.search(r"port (\d+)", log.read_text()).group(1)
        ws = []
        for i in range(4):  # one at a time, so worker ids follow i
            wlog = d / f"{tag}{i}.log"
            ws.append(subprocess.Popen([str(BIN), "swarm", "worker", "--connect", f"127.0.0.1:{port}",
                                        "--key-file", str(d / "key"), *data(d), *MODEL, *flags,
                                        "--out", str(d / f"{tag}{i}")],
                                       stdout=open(wlog, "w"), stderr=subprocess.STDOUT))
            end = time.time() + 30
            while f"worker {i + 1} joined" not in wlog.read_text():
                assert time.time() < end and ws[-1].poll() is None, wlog.read_text()
                time.sleep(0.02)
        for i, w in enumerate(ws):
            assert w.wait(LIMIT) == 0, (d / f"{tag}{i}.log").read_text()
    finally:
        co.terminate()
        co.wait(LIMIT)
    return [(d / f"{tag}{i}" / "model.safetensors").read_bytes() for i in range(4)]


def test_topk_over_mpi_gives_the_tcp_swarm_parameters_bit_for_bit(prep):
    mpi = mpi_run(prep, "mk", "--topk", "0.05")
    tcp = tcp_run(prep, "tk", "--topk", "0.05")
    assert all(m == mpi[0] for m in mpi), "MPI replicas differ"
    assert all(t == tcp[0] for t in tcp), "TCP replicas differ"
    assert mpi[0] == tcp[0], "MPI and TCP swarms trained different parameters"
    # and training moved them: not the prep run's start
    assert mpi[0] != (prep / "prep" / "model.safetensors").read_bytes()


def test_dense_and_diloco_over_mpi_keep_identical_replicas(prep):
    for tag, flags in (("md", ["--mode", "dense"]),
                       ("ml", ["--mode", "diloco", "--local-steps", "10"])):
        mpi = mpi_run(prep, tag, *flags)
        assert all(m == mpi[0] for m in mpi), f"{flags}: MPI replicas differ"
