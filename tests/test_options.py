"""Solver options: one validated object, a context manager, no environment variables."""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
import torch

import cnce
from cnce.models import Gaussian
from cnce.options import FitOptions

ROOT = Path(__file__).resolve().parents[1]


def test_no_environment_reads_in_the_package():
    hits = subprocess.run(["grep", "-rn", "os.environ", "cnce/", "--include=*.py"], cwd=ROOT, capture_output=True,
                          text=True).stdout.splitlines()
    # the environment of notebook kernels is set by the companion (companion.process_env), not the library
    assert hits == [], hits
    getenv = subprocess.run(["grep", "-rn", "getenv", "cnce/", "--include=*.py"], cwd=ROOT, capture_output=True,
                            text=True).stdout.splitlines()
    assert getenv == []


@pytest.mark.parametrize("kw", [dict(feature_dtype="float16"), dict(hess_points=-1), dict(hess_points=1.5),
                                dict(projection_block_pairs=0), dict(projection="yes"), dict(stat_ftol=-1.0),
                                dict(memory_budget_gb=0.0), dict(threads=0)])
def test_bad_options_name_the_field(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        FitOptions(**kw)


def test_context_manager_restores_defaults():
    before = cnce.get_options()
    with cnce.option_context(hess_points=0, feature_dtype="float32") as o:
        assert cnce.get_options() is o and o.hess_points == 0 and o.feature_dtype is torch.float32
        with pytest.raises(ValueError, match="unknown option"):
            with cnce.option_context(hess_pts=3):
                pass
        assert cnce.get_options() is o
    assert cnce.get_options() == before


def test_feature_dtype_auto_is_exact_on_the_cpu():
    o = FitOptions()
    assert o.features_dtype(15, torch.float64, torch.device("cpu")) is torch.float64
    assert o.features_dtype(15, torch.float64, torch.device("cuda")) is torch.float32
    assert o.features_dtype(2, torch.float64, torch.device("cuda")) is torch.float64  # small P keeps float64
    assert FitOptions(feature_dtype=torch.float32).features_dtype(15, torch.float64, torch.device("cpu")) is torch.float32


def test_torch_path_init_loss_is_exact_by_default():
    """The default keeps init_loss at float64 round-off of the readable loss (cnce.losses)."""
    from cnce.losses import cnce_loss
    from cnce.noise import GaussianNoise, draw_base

    model = Gaussian(dim=3)
    g = torch.Generator().manual_seed(3)
    th = model.random_params(2, g)
    x = model.sample(th, 300, g)
    base = draw_base(model, 2, 300, 4, generator=g)
    th0 = model.init_params(2, g)
    res = cnce.fit(model, x, "cnce", kappa=4, eps=0.5, theta0=th0, noise_base=base, backend="torch", max_iter=1)
    noise = GaussianNoise()
    y = noise.apply(x, base, res.eps)
    ref = cnce_loss(model.log_phi(x, th0), model.log_phi(y.reshape(2, -1, 3), th0).reshape(2, 300, 4))
    assert torch.allclose(res.init_loss, ref, rtol=1e-13, atol=0)
    with cnce.option_context(feature_dtype="float32"):
        res32 = cnce.fit(model, x, "cnce", kappa=4, eps=0.5, theta0=th0, noise_base=base, backend="torch", max_iter=1)
    assert (res32.init_loss - ref).abs().max() > 1e-12  # float32 storage is visibly inexact


def test_options_argument_and_threads_override():
    model = Gaussian(dim=2)
    g = torch.Generator().manual_seed(0)
    x = model.sample(model.random_params(2, g), 200, g)
    with pytest.raises(ValueError, match="options"):
        cnce.fit(model, x, options={"hess_points": 0})
    a = cnce.fit(model, x, kappa=3, options=FitOptions(hess_points=0), backend="torch")
    b = cnce.fit(model, x, kappa=3, backend="torch")
    assert torch.allclose(a.theta, b.theta, rtol=1e-6)  # the subsample sets only the direction


@pytest.mark.parametrize("method, kernel", [("cnce", "_newton_all"), ("nce", "_newton_all"), ("mle", "_ica_mle_all")])
def test_threads_are_python_threads_with_the_estimates_of_one(monkeypatch, method, kernel):
    """``threads=3`` runs the compiled kernels' simulations on a pool of Python threads (the
    kernels release the GIL), with bitwise the estimates of one thread; numba never starts a
    threading layer of its own (its OpenMP workers once slowed every later torch call tenfold)."""
    numba = pytest.importorskip("numba")
    from cnce import _fused
    from cnce.models import ICA

    m = ICA()
    g = torch.Generator().manual_seed(0)
    x = m.sample(m.random_params(3, generator=g), 300, generator=g)
    kw = dict(seed=1, backend="compiled") if method == "mle" else dict(kappa=4, seed=1, backend="compiled")
    one = cnce.fit(m, x, method, threads=1, **kw)
    names = []
    real = getattr(_fused, kernel)

    def spy(*args):
        names.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(_fused, kernel, spy)
    monkeypatch.setattr(_fused, "_CPUS", 8)  # a pool of three threads on any machine
    three = cnce.fit(m, x, method, threads=3, **kw)
    assert len(names) == 3 and all(n.startswith("cnce-kernels-3") for n in names), names
    assert torch.equal(one.theta, three.theta) and torch.equal(one.n_iter, three.n_iter)
    with pytest.raises(ValueError, match="not initialized"):
        numba.threading_layer()
