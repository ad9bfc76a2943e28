"""Shared fixtures for the Python tests, and the closing summary line."""
import numpy as np
import pytest

try:
    import torch
except ImportError:  # the reference tests skip, saying why
    torch = None

NO_TORCH = "PyTorch is not installed (pip install torch==2.13.0); " \
           "the PyTorch reference tests need it"


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def tch():
    if torch is None:
        pytest.skip(NO_TORCH)
    return torch


def pytest_terminal_summary(terminalreporter):
    # The same closing line as the C harness: make test's last line.
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    terminalreporter.write_line(f"python: {skipped} skipped")
    terminalreporter.write_line(f"{passed} passed, {failed} failed")
