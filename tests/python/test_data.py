"""foundry.data: IDX loading (against Python's gzip + numpy) and batches."""
import gzip
import os
import struct

import numpy as np
import pytest

import foundry as F

FASHION = "/usr/share/datasets/fashion-mnist"


def write_idx(path, arr, compress):
    codes = {np.uint8: 8, np.int8: 9, np.int16: 11, np.int32: 12,
             np.float32: 13, np.float64: 14}
    head = bytes([0, 0, codes[arr.dtype.type], arr.ndim])
    head += b"".join(struct.pack(">I", d) for d in arr.shape)
    data = head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    if compress:
        data = gzip.compress(data, 6)
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32,
                                   np.float64])
@pytest.mark.parametrize("compress", [False, True])
def test_idx_round_trip(dtype, compress, tmp_path, rng):
    a = (rng.standard_normal((4, 3, 2)) * 50).astype(dtype)
    p = tmp_path / "a.idx"
    data = write_idx(p, a, compress)
    np.testing.assert_array_equal(F.data.load_idx(p).numpy(), a)
    np.testing.assert_array_equal(F.data.load_idx_bytes(data).numpy(), a)


def test_bad_idx_files(tmp_path):
    p = tmp_path / "bad.idx"
    p.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05abc")
    with pytest.raises(ValueError):
        F.data.load_idx(p)
    p.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x01a")[:-3])
    with pytest.raises(ValueError):
        F.data.load_idx(p)
    with pytest.raises(OSError):
        F.data.load_idx(tmp_path / "missing")


def test_fashion_mnist_matches_python_gzip():
    path = os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")
    if not os.path.exists(path):
        pytest.skip("dataset-fashion-mnist is not installed (apt-get "
                    "install dataset-fashion-mnist); CI installs it")
    want = np.frombuffer(gzip.open(path).read()[8:], np.uint8)
    got = F.data.load_idx(path)
    assert got.dtype is F.uint8 and got.shape == (10000,)
    np.testing.assert_array_equal(got.numpy(), want)


def test_batches_cover_every_row_once():
    x = F.arange(10).reshape(10, 1)
    y = F.arange(10)
    seen = []
    for xb, yb in F.data.batches(x, y, batch_size=3, shuffle=True):
        assert F.equal(xb[:, 0], yb)
        seen += yb.tolist()
    assert sorted(seen) == list(range(10))
    sizes = [len(b[0]) for b in F.data.batches(x, batch_size=4,
                                               drop_last=True)]
    assert sizes == [4, 4]
    with pytest.raises(ValueError):
        next(F.data.batches(x, F.arange(3), batch_size=2))
