"""The progress line of one fit (cnce.backends.progress): it appears once a fit has run longer
than its delay, says what the fit is doing, never appears for ``progress=False`` or a short fit,
and changes no result (bitwise) on either backend."""
import time

import numpy as np
import pytest
import torch

import cnce
from cnce import _fused
from cnce.options import NewtonSettings
from cnce.backends import compiled
from cnce.backends.progress import DELAY, FitProgress, settle
from cnce.errors import InputError


@pytest.fixture(autouse=True)
def _tqdm_on(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)


def _data(S=2, N=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(S, N, 2, generator=g, dtype=torch.float64)


def _same(a, b):
    """Bitwise equal results (NaN where both have NaN: NCE's eps)."""
    for f in ("theta", "loss", "init_loss", "n_iter", "converged", "grad_norm", "eps", "log_normaliser"):
        if getattr(a, f, None) is not None:
            torch.testing.assert_close(getattr(a, f), getattr(b, f), rtol=0, atol=0, equal_nan=True, msg=f)


@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_line_appears_after_the_delay_and_changes_nothing(backend, capsys):
    x = _data()
    quiet = cnce.fit(cnce.models.Gaussian(dim=2), x, "cnce", kappa=5, eps=0.5, backend=backend, progress=False)
    assert capsys.readouterr().err == ""
    shown = cnce.fit(cnce.models.Gaussian(dim=2), x, "cnce", kappa=5, eps=0.5, backend=backend, progress=0)
    err = capsys.readouterr().err
    _same(quiet, shown)
    assert f"fit gaussian cnce ({backend})" in err
    assert "2/2" in err and "converged=2" in err  # the final state: both simulations done and converged
    assert ("passes=" in err) if backend == "compiled" else ("chunk=1/1" in err)


@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_short_fit_prints_nothing_by_default(backend, capsys):
    cnce.fit(cnce.models.Gaussian(dim=2), _data(), "cnce", kappa=5, eps=0.5, backend=backend, progress=False)  # kernels loaded
    capsys.readouterr()
    t0 = time.perf_counter()
    cnce.fit(cnce.models.Gaussian(dim=2), _data(), "cnce", kappa=5, eps=0.5, backend=backend)
    assert time.perf_counter() - t0 < DELAY  # a short fit (else the check below says nothing)
    assert capsys.readouterr().err == ""


def test_fused_threads_and_nce_bitwise():
    x = _data(S=3)
    for kw in (dict(method="cnce", kappa=5, eps="auto", threads=2), dict(method="nce", kappa=5, threads=1)):
        a = cnce.fit(cnce.models.Gaussian(dim=2), x, backend="compiled", progress=False, **kw)
        b = cnce.fit(cnce.models.Gaussian(dim=2), x, backend="compiled", progress=0, **kw)
        _same(a, b)


def test_watch_sees_the_kernels_counters_while_they_run():
    """The line reads the kernels' arrays while they run: ``passes`` grows from 0."""
    seen = []

    class Recorder(FitProgress):
        def _draw(self):
            seen.append(self._state())

    X = _data(S=1, N=100_000).numpy()  # about 0.1 s of kernels: many readings at 1 ms
    XI = np.random.default_rng(0).standard_normal((1, 100_000, 10, 2))
    model = cnce.models.Gaussian(dim=2)
    th0 = model.to_free(model.init_params(1)).numpy()
    st = NewtonSettings(roundoff_accept=True)
    with Recorder("t", 1, delay=0.0, interval=0.001) as bar:
        out = compiled.newton_all(_fused.GAUSSIAN, X, XI, np.full(1, 0.5), th0, st, threads=1, progress=bar)
    ref = _fused.newton_all(_fused.GAUSSIAN, X, XI, np.full(1, 0.5), th0, st, threads=1)
    for k in ref:
        assert np.array_equal(out[k], ref[k]), k
    passes = [s["passes"] for s in seen if "passes" in s]
    assert len(set(passes)) > 1 and passes == sorted(passes)  # read while the kernels ran: it grew
    final = bar._state()
    assert final["passes"] == ref["passes"].sum() and final["done"] == 1 and final["converged"] == 1


@pytest.mark.parametrize("bad", [-1, "yes", None, float("nan")])
def test_bad_progress_is_refused(bad):
    with pytest.raises(InputError, match="progress"):
        settle(bad)
    with pytest.raises(InputError, match="progress"):
        cnce.fit(cnce.models.Gaussian(dim=2), _data(), "cnce", kappa=5, progress=bad)


def test_settle():
    assert settle(True) == DELAY and settle(False) is None and settle(0) == 0.0 and settle(2.5) == 2.5
