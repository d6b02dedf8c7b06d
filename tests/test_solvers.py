"""Conformance of the two Newton solvers: the torch one (cnce.optim.newton) and the compiled one
(cnce._fused.newton_all) run on the same problems with the same NewtonSettings must take the same
number of iterations and reach the same estimates (to round-off of their different summation
orders), and no solver constant is a literal outside the settings objects."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import cnce
from cnce import _fused
from cnce.backends import plan
from cnce.models import ICA, Gaussian, LogNormal, Ring
from cnce.noise import draw_base
from cnce.options import LBFGSSettings, NewtonSettings

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not _fused.available(), reason="numba not installed")

#: what both solvers read: no progressive sampling nor matrix reuse (the compiled kernels' own
#: devices), the matrix from all pairs, the same first trial step. The one field that differs is
#: ``roundoff_accept``: the compiled solver always applies its round-off rule, the torch solver
#: never; these problems do not reach it (the paths are the same)
COMMON = dict(progressive=False, reuse_h=False, carry_h=False, h_cost=0.0, noise_t=False, hess_points=0,
              hess_last=None, alpha_grow=2.0, patience=NewtonSettings.patience,
              stage_tol=NewtonSettings.stage_tol, sim_block_pairs=NewtonSettings.sim_block_pairs)
#: estimates agree to this tolerance (float64 sums in another order; measured: at most 1.2e-13
#: relative, ICA, on these problems)
RTOL = 1e-10

CASES = {"gaussian-cnce": (Gaussian(dim=2), "cnce", 0.5), "lognormal-cnce": (LogNormal(), "cnce", 0.4),
         "ring-nce": (Ring(dim=3, mu=4.0), "nce", None), "gaussian-nce": (Gaussian(dim=2), "nce", None),
         "ica-cnce": (ICA(dim=2), "cnce", 0.6)}


def _fit(model, x, method, eps, th0, base, backend, **settings):
    orig = plan.newton_settings
    plan.newton_settings = lambda *a, **k: orig(*a, **k).replace(**settings)
    try:
        kw = dict(eps=eps) if eps is not None else {}
        with cnce.option_context(feature_dtype="same", hess_points=0):
            return cnce.fit(model, x, method, kappa=4, theta0=th0, noise_base=base, backend=backend, threads=1, **kw)
    finally:
        plan.newton_settings = orig


@pytest.mark.parametrize("name", list(CASES))
def test_both_newton_solvers_take_the_same_path(name):
    model, method, eps = CASES[name]
    g = torch.Generator().manual_seed(5)
    S, N = 4, 600
    th = model.random_params(S, g)
    th0 = model.init_params(S, g)
    x = model.sample(th, N, generator=g)
    base = draw_base(model, S, N, 4, g)
    t = _fit(model, x, method, eps, th0, base, "torch", roundoff_accept=False, **COMMON)
    f = _fit(model, x, method, eps, th0, base, "fused", roundoff_accept=True, **COMMON)
    assert (t.info["backend"], f.info["backend"]) == ("torch", "fused")
    assert t.info["newton"].replace(roundoff_accept=True) == f.info["newton"]
    assert t.converged.all() and f.converged.all()
    assert torch.equal(t.n_iter, f.n_iter), (t.n_iter, f.n_iter)
    torch.testing.assert_close(f.theta, t.theta, rtol=RTOL, atol=RTOL)
    torch.testing.assert_close(f.loss, t.loss, rtol=1e-12, atol=0)


def test_the_settings_are_validated():
    with pytest.raises(ValueError, match=r"NewtonSettings.stall_tol must be a finite number >= 0; got -1"):
        NewtonSettings(stall_tol=-1)
    with pytest.raises(ValueError, match=r"NewtonSettings.shrink_min must be <= shrink_max"):
        NewtonSettings(shrink_min=0.6)
    with pytest.raises(ValueError, match=r"LBFGSSettings.curvature_tol must be a finite number >= 0; got nan"):
        LBFGSSettings(curvature_tol=float("nan"))
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['damp'\]"):
        NewtonSettings().replace(damp=1.0)
    with pytest.raises(ValueError, match="roundoff_accept is a rule of the compiled solver"):
        cnce.optim.newton(None, torch.zeros(1, 1), NewtonSettings(roundoff_accept=True))


def test_the_compiled_solver_refuses_other_values_of_its_built_in_rules():
    model, method, eps = CASES["gaussian-cnce"]
    g = torch.Generator().manual_seed(5)
    x = model.sample(model.random_params(2, g), 100, generator=g)
    for change, shown in ((dict(stall_tol=1e-7), "stall_tol=1e-07 (compiled: 1e-08)"),
                          (dict(roundoff_accept=False), "roundoff_accept=False")):
        with pytest.raises(ValueError, match=re.escape(shown)):
            _fit(model, x, method, eps, model.init_params(2, g), draw_base(model, 2, 100, 4, g), "fused", **change)
    # the torch solver reads the value: a looser stall rule is accepted there
    _fit(model, x, method, eps, model.init_params(2, g), draw_base(model, 2, 100, 4, g), "torch", stall_tol=1e-7)


def test_no_solver_constant_is_a_literal_outside_the_settings():
    """The thresholds the solvers compare against (tolerances, damping, safeguards) are fields of
    NewtonSettings / LBFGSSettings; the solvers' files hold no such literal."""
    literal = re.compile(r"(?<![\w.])(1e-(?:6|8|12|13|300)|1e3)(?![\w.])")
    for rel in ("cnce/optim.py", "cnce/_fused.py", "cnce/backends/torch.py", "cnce/backends/compiled.py",
                "cnce/backends/projection.py"):
        code = [line.split("#")[0] for line in (ROOT / rel).read_text().splitlines()]
        found = [(rel, i + 1, line.strip()) for i, line in enumerate(code) if literal.search(line)
                 and '"""' not in line and "``" not in line]
        assert not found, found
