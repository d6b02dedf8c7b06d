"""The one-file example model (examples/quartic.py) gets the batched fast path from its
declarations alone, and that path solves the same problem as the generic one."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

import cnce
from cnce.noise import draw_base

_spec = importlib.util.spec_from_file_location("quartic", Path(__file__).resolve().parents[1] / "examples" / "quartic.py")
quartic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quartic)


class Undeclared(quartic.Quartic):
    """The same density with the declaration taken away: the generic (autodiff) path."""

    linear = False


def test_declaration_selects_the_fast_path_and_it_solves_the_same_problem():
    m = quartic.Quartic()
    g = torch.Generator().manual_seed(5)
    theta = m.random_params(6, g)
    x = m.sample(theta, 3000, generator=g)
    base = draw_base(m, 6, 3000, 5, generator=g)
    fast = cnce.fit(m, x, kappa=5, noise_base=base, seed=1)
    slow = cnce.fit(Undeclared(), x, kappa=5, noise_base=base, seed=1)
    assert fast.info["formulation"] == "linear" and slow.info["formulation"] == "nonlinear, newton"
    assert fast.converged.all() and slow.converged.all()
    torch.testing.assert_close(fast.eps, slow.eps, rtol=1e-12, atol=0)
    # the same minimum: losses agree to round-off, estimates to the optimiser's tolerance (the
    # fast path forms its Gauss-Newton matrix from a subsample of the pairs)
    torch.testing.assert_close(fast.loss, slow.loss, rtol=1e-11, atol=0)
    torch.testing.assert_close(fast.theta, slow.theta, rtol=1e-4, atol=1e-6)
    # and it estimates: squared errors far below the spread of the truth
    assert (fast.error(m, theta).median() < 0.05)
    nce = cnce.fit(m, x, "nce", kappa=5, noise_base=base, seed=1)
    assert nce.info["formulation"] == "linear" and nce.converged.all()
    assert nce.error(m, theta).median() < 0.05
