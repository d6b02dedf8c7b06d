"""Shared set-up for the unit tests.

* torch runs with one thread: the tests are many small batched operations, which are much
  slower with two OpenMP threads on a busy two-core machine. Modules that need another
  setting (e.g. ``test_images``) set it themselves; ``torch_one_thread`` restores one thread
  around each test of the modules that use it.
* ``gen`` is a freshly seeded ``torch.Generator`` per test, so every test draws the same
  numbers whatever ran before it; ``make_gen(seed)`` builds more of them.
"""
from __future__ import annotations

import pytest
import torch

torch.set_num_threads(1)

SEED = 20180710  # ICML 2018


def pytest_addoption(parser):
    parser.addoption("--golden-threads", type=int, default=None,
                     help="run the golden notebooks' kernels with this many CPU threads (default: 1, as the "
                          "goldens were made; tests/golden/conftest.py)")


@pytest.fixture
def torch_one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def gen() -> torch.Generator:
    """A CPU generator seeded with :data:`SEED`."""
    return torch.Generator().manual_seed(SEED)


@pytest.fixture
def make_gen():
    """``make_gen(seed)`` -> a CPU generator seeded with ``seed``."""
    return lambda seed=SEED: torch.Generator().manual_seed(int(seed))
