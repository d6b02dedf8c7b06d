"""Solver options: one validated object, a context manager, no environment variables."""
from __future__ import annotations

import subprocess
import sys
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
    # one documented place: batch.deterministic_env sets the environment of the notebook kernels
    # it starts (OMP threads, ...); it writes, never reads a switch
    assert len(hits) == 1 and hits[0].startswith("cnce/batch.py"), hits
    getenv = subprocess.run(["grep", "-rn", "getenv", "cnce/", "--include=*.py"], cwd=ROOT, capture_output=True,
                            text=True).stdout.splitlines()
    assert getenv == []


@pytest.mark.parametrize("kw", [dict(feature_dtype="float16"), dict(hess_points=-1), dict(hess_points=1.5),
                                dict(block_pairs=0), dict(projection="yes"), dict(stat_ftol=-1.0),
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


def test_numba_layer_is_set_without_the_environment():
    code = ("import os, cnce, torch; from cnce.models import Gaussian; m = Gaussian(2); "
            "x = m.sample(m.random_params(2), 100); cnce.fit(m, x, backend='fused', threads=2); "
            "import numba; print(numba.threading_layer(), 'NUMBA_THREADING_LAYER' in os.environ)")
    pytest.importorskip("numba")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.stdout.split() == ["workqueue", "False"], out.stderr[-2000:]
