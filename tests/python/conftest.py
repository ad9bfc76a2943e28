"""Shared fixtures for the Python tests, and the closing summary line."""
import ctypes
import os
import pathlib
import sys

import numpy as np
import pytest

try:
    import torch
except ImportError:  # the reference tests skip, saying why
    torch = None

# The test device (the fixture below) is a shared object whose undefined
# tm_* symbols resolve against the library inside foundry's cffi
# extension.  That works only when the extension's symbols are global, so
# the extension alone is loaded with RTLD_GLOBAL (numpy and torch, imported
# above, keep the default).
_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)
import foundry  # noqa: E402
sys.setdlopenflags(_flags)

NO_TORCH = "PyTorch is not installed (pip install torch==2.13.0); " \
           "the PyTorch reference tests need it"
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def tch():
    if torch is None:
        pytest.skip(NO_TORCH)
    return torch


def _test_device_so():
    """FOUNDRY_TEST_DEVICE_SO, else the newest
    build/*/tests/libfoundry_testdev.so (None when there is none)."""
    path = os.environ.get("FOUNDRY_TEST_DEVICE_SO")
    if path:
        return pathlib.Path(path)
    built = sorted(ROOT.glob("build/*/tests/libfoundry_testdev.so"),
                   key=lambda p: p.stat().st_mtime)
    return built[-1] if built else None


@pytest.fixture(scope="session")
def test_device():
    """foundry.device("test:0"): the conformance tests' device
    (tests/backend), registered from its shared object by calling
    tt_testdev_register().  Skips while the shared object is not built,
    except under CI (the CI variable set), where a missing test device is
    a failure; any other problem fails."""
    so = _test_device_so()
    if so is None or not so.exists():
        where = so if so is not None else \
            ROOT / "build/*/tests/libfoundry_testdev.so"
        msg = (f"the test device is not built ({where} does not exist; "
               f"FOUNDRY_TEST_DEVICE_SO names another)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    lib = ctypes.CDLL(str(so), mode=os.RTLD_GLOBAL)
    lib.tt_testdev_register.restype = ctypes.c_int
    lib.tt_testdev_register.argtypes = []
    rc = lib.tt_testdev_register()
    if rc != 0:
        why = foundry._c.ffi.string(foundry._c.lib.tm_last_error()).decode()
        pytest.fail(f"tt_testdev_register() returned {rc}: {why}")
    dev = foundry.device("test:0")
    assert foundry.is_available(dev), f"{so} registered no test:0"
    return dev


def pytest_terminal_summary(terminalreporter):
    # The same closing line as the C harness: make test's last line.
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    terminalreporter.write_line(f"python: {skipped} skipped")
    terminalreporter.write_line(f"{passed} passed, {failed} failed")
