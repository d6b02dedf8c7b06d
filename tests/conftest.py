"""Shared set-up for the unit tests.

* torch runs each test with one thread (``_torch_threads``, autouse), or with the module's
  ``TORCH_THREADS``: the tests are many small batched operations, which are much slower with
  two OpenMP threads on a busy two-core machine. (A module that set the threads when it was
  imported set them for every later test of its pytest-xdist worker, since collection imports
  all modules first.) OpenMP threads that wait for work sleep (``OMP_WAIT_POLICY=PASSIVE``,
  also in the processes tests start): spinning ones took the cores from the other worker and
  the book build (a fused-against-torch ICA test took 60 s in the suite, 3 s alone).
* ``browser`` is a headless Chromium (Playwright) for the browser tests.
* ``gen`` is a freshly seeded ``torch.Generator`` per test, so every test draws the same
  numbers whatever ran before it; ``make_gen(seed)`` builds more of them.
* ``_seed_global_rngs`` (autouse) seeds torch's and numpy's global generators before every
  test, so a test that draws from them unseeded still draws the same numbers whatever order
  or subset of tests runs (an order-dependent draw failed CI once: stop 20).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read once, when torch loads its OpenMP
import torch  # noqa: E402

torch.set_num_threads(1)

SEED = 20180710  # ICML 2018


def pytest_addoption(parser):
    parser.addoption("--golden-cpu", choices=("generic", "native"), default="generic",
                     help="the CPU the golden notebooks' kernels compile for: 'generic' x86-64 (default; it "
                          "stands in for another CPU than the one that wrote the goldens) or 'native' (as the "
                          "goldens were made); tests/golden/conftest.py")
    parser.addoption("--golden-threads", type=int, default=2,
                     help="CPU threads of the golden notebooks' kernels (default 2; the goldens were made "
                          "with 1); tests/golden/conftest.py")


#: the modules of ``-m fast`` (the edit-test loop; CONTRIBUTING.md, "Running the tests"): unit tests
#: of the estimator, eps, options, noise, losses, models, theory and the experiments' tables, in
#: under 2 minutes on 2 cores with ``-n 2`` once numba's cache is warm. Not in it: the golden
#: notebooks, the generic-CPU pass, the book builds, the image trainer, the browser checks and the
#: long fused-against-torch comparisons of test_fused.py.
FAST_MODULES = frozenset({
    "test_plan.py", "test_eps_rules.py", "test_validation.py", "test_losses.py", "test_models.py",
    "test_theory.py", "test_fit.py", "test_backends.py", "test_noise_eps.py", "test_experiments_analysis.py",
    "test_notebooks.py", "test_provenance.py", "test_claims.py", "test_prose_numbers.py", "test_book_ext.py",
    "test_solvers.py", "test_names.py",
})


#: the longest modules first, so that on pytest-xdist workers (scripts/test.sh) they do not
#: start last and leave one worker running alone at the end: the two longest golden notebooks
#: (nbval on the generic CPU), the other goldens, the compiled-afresh check, the book builds
LONG_FIRST = ("08_energy_networks.ipynb", "06_image_model.ipynb", "golden", "test_portability.py", "test_batch.py",
              "test_fused.py", "test_image_train.py")


def _rank(item) -> int:
    parts = item.path.parts
    for i, name in enumerate(LONG_FIRST):
        if item.path.name == name or (name == "golden" and "golden" in parts):
            return i
    return len(LONG_FIRST)


def pytest_collection_modifyitems(config, items):
    fast = pytest.mark.fast
    for item in items:
        if item.path.name in FAST_MODULES and item.get_closest_marker("slow") is None:
            item.add_marker(fast)
    items.sort(key=_rank)  # stable: the order within a module is kept


@pytest.fixture(autouse=True)
def _seed_global_rngs():
    import numpy as np

    torch.manual_seed(SEED)
    np.random.seed(SEED % 2**32)
    yield


@pytest.fixture(autouse=True)
def _torch_threads(request):
    """torch's threads for the test: the module's ``TORCH_THREADS``, else one."""
    want = getattr(request.module, "TORCH_THREADS", 1)
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)
    yield


@pytest.fixture
def gen() -> torch.Generator:
    """A CPU generator seeded with :data:`SEED`."""
    return torch.Generator().manual_seed(SEED)


@pytest.fixture
def make_gen():
    """``make_gen(seed)`` -> a CPU generator seeded with ``seed``."""
    return lambda seed=SEED: torch.Generator().manual_seed(int(seed))


# --------------------------------------------------------------------------- headless Chromium
#: Debian's Chromium (scripts/test.sh installs it); test tools' own browser downloads fail here.
CHROMIUM = os.environ.get("CNCE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, as GitHub Actions and most CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing_browser(reason: str):
    """Skip a browser test for ``reason`` on a developer's machine; fail it in CI, where a missing
    Chromium means the browser tests silently stopped running."""
    if in_ci():
        pytest.fail(f"{reason}; in CI (CI=true) the browser tests must run, not skip", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """A headless Chromium context (Playwright) with a fresh profile, shared by the browser
    tests (``test_browser.py``: the built book; ``test_lab.py``: JupyterLab). Skips where no
    Chromium or no ``playwright`` package exists -- and fails instead in CI (``CI=true``)."""
    if not Path(CHROMIUM).exists():
        missing_browser(f"no Chromium at {CHROMIUM} (scripts/test.sh installs Debian's chromium)")
    try:
        import playwright.sync_api as sync_api
    except ImportError:
        missing_browser("no playwright package")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"],
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield ctx
        finally:
            ctx.close()
