"""The eps experiment (notebook 07): cells at fixed multiples of the heuristic's eps reuse one
noise base per simulation (only eps changes), resume with the same numbers, and a known
case: on the Gaussian model, CNCE at a very small eps gives the score-matching estimate when
the noise directions are antithetic and moment-matched (and does not with independent draws)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

import cnce
from cnce import models, theory
from cnce.experiments import configs, eps_sweep, runner
from cnce.experiments.configs import Cell, ExperimentConfig, Study, eps_factor, get_config
from cnce.noise import draw_base

from test_experiments import FakeModel, fake_draw_base


class RecordingFit:
    """Deterministic fake fit that records the eps and the noise base of every call."""

    def __init__(self):
        self.calls = []

    def __call__(self, model, x, method="cnce", kappa=10, eps="auto", seed=0, theta0=None, noise_base=None,
                 device="cpu", progress=False, eps_rule=None):
        S = x.shape[0]
        if isinstance(eps, str):  # a stand-in for the heuristic: depends on the data, differs per simulation
            eps = 0.1 + x.std(dim=1).mean(-1)
        self.calls.append(SimpleNamespace(method=method, N=x.shape[1], eps=eps.clone() if torch.is_tensor(eps) else eps,
                                          base=None if noise_base is None else noise_base.clone()))
        theta = x.mean(1) + (0.0 if noise_base is None else 0.01 * eps.view(-1, 1) * noise_base.mean(dim=(1, 2)))
        return SimpleNamespace(theta=theta, eps=eps if torch.is_tensor(eps) else torch.full((S,), float("nan")),
                               loss=torch.zeros(S), init_loss=torch.ones(S), n_iter=torch.full((S,), 3),
                               converged=torch.ones(S, dtype=torch.bool), grad_norm=torch.zeros(S))


@pytest.fixture
def eps_config(monkeypatch):
    monkeypatch.setitem(models._REGISTRY, "fake", FakeModel)
    monkeypatch.setitem(configs.STUDIES, "fake-eps", Study("fake-eps", "fake"))
    settings = ("default", "x0.1", "x3", "x30")
    cells = tuple(sorted([Cell("fake-eps", "cnce", 3, n, e) for n in (10, 40) for e in settings]
                         + [Cell("fake-eps", "mle", None, n) for n in (10, 40)], key=Cell.sort_key))
    return ExperimentConfig(name="fake-eps", figure="-", description="fake", scale="quick", seed=0, n_sims=5,
                            N_max=40, kappa_max=3, studies=("fake-eps",), cells=cells)


def test_fixed_eps_cells_reuse_one_noise_base_and_scale_the_heuristics_eps(eps_config, tmp_path):
    fit = RecordingFit()
    runner.run(eps_config, results_dir=tmp_path, fit=fit, draw_base=fake_draw_base, progress=False)
    for N in (10, 40):
        calls = [c for c in fit.calls if c.method == "cnce" and c.N == N]
        assert len(calls) == 4
        default, fixed = calls[0], calls[1:]  # the heuristic's cell runs first (Cell.sort_key)
        for c in fixed:  # the same xi at every eps: the noise is x + eps * xi, only eps changes
            assert torch.equal(c.base, default.base)
        stored = torch.tensor([float(f"{v:.9g}") for v in default.eps.tolist()], dtype=torch.float64)
        for c, f in zip(fixed, (0.1, 3.0, 30.0)):
            torch.testing.assert_close(c.eps, f * stored, rtol=0, atol=0)
    df = runner.load_results(eps_config, results_dir=tmp_path)
    cn = df[df.method == "cnce"]
    h = cn[cn.eps_setting == "default"].set_index(["N", "sim"])["eps"]
    for setting in ("x0.1", "x3", "x30"):
        e = cn[cn.eps_setting == setting].set_index(["N", "sim"])["eps"]
        np.testing.assert_allclose(e / h.loc[e.index], eps_factor(setting), rtol=1e-8)


def test_a_resumed_eps_run_gives_the_same_table(eps_config, tmp_path):
    runner.run(eps_config, results_dir=tmp_path / "a", fit=RecordingFit(), draw_base=fake_draw_base, progress=False)
    # b: the heuristic's cells first (another run), then the rest reads their eps from the store
    first = ExperimentConfig(**{**eps_config.__dict__, "cells": tuple(c for c in eps_config.cells if c.eps == "default")})
    runner.run(first, results_dir=tmp_path / "b", fit=RecordingFit(), draw_base=fake_draw_base, progress=False)
    runner.run(eps_config, results_dir=tmp_path / "b", fit=RecordingFit(), draw_base=fake_draw_base, progress=False)
    a = runner.load_results(eps_config, results_dir=tmp_path / "a")
    b = runner.load_results(eps_config, results_dir=tmp_path / "b")
    cols = ["study", "method", "N", "kappa", "eps_setting", "sim", "error", "eps"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_fixed_eps_noise_is_x_plus_eps_xi_with_the_given_base():
    """cnce.fit at a fixed eps with a noise base starts from J_N of y = x + eps xi with that xi."""
    g = torch.Generator().manual_seed(3)
    m = models.Gaussian(dim=3)
    S, N, kappa = 4, 200, 4
    th0 = m.init_params(S, generator=g)
    x = m.sample(m.random_params(S, generator=g), N, generator=g)
    xi = draw_base(m, S, N, kappa, generator=g)
    for eps in (0.05, 0.5, 5.0):
        res = cnce.fit(m, x, "cnce", kappa=kappa, eps=eps, noise_base=xi, theta0=th0, device="cpu", max_iter=1)
        torch.testing.assert_close(res.init_loss, theory.cnce_objective(m, x, th0, eps, xi), rtol=1e-10, atol=1e-12)
    # as the runner calls it: one eps per simulation (f times the heuristic's), the same xi; the
    # reference builds y = x + eps * xi by hand (symmetric noise: J_N = 2 mean log(1 + exp(-G)),
    # G = log phi(x) - log phi(y), Eq. 8)
    eps = torch.tensor([0.03, 0.3, 1.0, 3.0], dtype=torch.float64)
    res = cnce.fit(m, x, "cnce", kappa=kappa, eps=eps, noise_base=xi, theta0=th0, device="cpu", max_iter=1)
    torch.testing.assert_close(res.eps, eps, rtol=0, atol=0)
    y = x.unsqueeze(2) + eps.view(-1, 1, 1, 1) * xi
    G = m.log_phi(x, th0).unsqueeze(2) - m.log_phi(y.reshape(S, N * kappa, 3), th0).reshape(S, N, kappa)
    torch.testing.assert_close(res.init_loss, 2 * torch.nn.functional.softplus(-G).mean(dim=(1, 2)), rtol=1e-10, atol=1e-12)


def test_eps_config_grid_and_errors():
    cfg = get_config("eps", "paper")
    assert cfg.n_sims == 100 and cfg.N_max == 20000  # the same problems as the paper's figures
    g = {(c.N, c.eps) for c in cfg.cells_of("eps-gaussian") if c.method == "cnce"}
    factors = sorted(eps_factor(e) for N, e in g if N == 5000 and not e.startswith("rule:"))
    assert len(factors) == 15 and factors[0] == pytest.approx(1 / 30, rel=1e-3) and factors[-1] == 30
    assert {N for N, _ in g} == {500, 5000}
    assert {c.kappa for c in cfg.cells if c.method == "cnce"} == {10}
    # score matching only where the model is smooth; the flip noise's grid stops at eps = 1 times the heuristic's
    assert {c.study for c in cfg.cells if c.method == "sm"} == {"eps-gaussian", "eps-ring-exact", "eps-ring-authors"}
    assert max(eps_factor(c.eps) for c in cfg.cells_of("eps-bernoulli") if c.method == "cnce") == 1.0
    for bad in ("x0", "x-1", "y2", "rule:nope", ""):
        with pytest.raises(ValueError, match="eps setting"):
            eps_factor(bad)


def test_efficiency_loss_is_one_when_the_heuristic_is_best_and_detects_a_better_eps():
    rng = np.random.default_rng(0)
    rows = []
    for setting, scale in (("default", 1.0), ("x0.1", 3.0), ("x10", 0.25)):
        for sim in range(200):
            rows.append(dict(study="s", method="cnce", N=100, kappa=10, eps_setting=setting, sim=sim,
                             error=scale * rng.chisquare(3), eps=eps_factor(setting)))
    df = pd.DataFrame(rows)
    loss = eps_sweep.efficiency_loss(df, n_boot=300, seed=0).iloc[0]
    assert loss["best"] == "x10" and loss["value"] == pytest.approx(4.0, rel=0.3) and loss["lo"] > 2
    same = df[df.eps_setting != "x10"]
    loss = eps_sweep.efficiency_loss(same, n_boot=300, seed=0).iloc[0]
    assert loss["value"] == 1.0 and loss["best"] == "default"


def test_small_eps_approaches_score_matching_on_the_gaussian_model():
    """The known case: CNCE's estimate tends to score matching's as eps -> 0 (Sec. 2, Supp. B) when
    the noise directions are antithetic and moment-matched; with independent draws it does not."""
    g = torch.Generator().manual_seed(0)
    m = models.Gaussian(dim=5)
    S, N = 6, 1000
    th = m.random_params(S, generator=g)
    th0 = m.init_params(S, generator=g)
    x = m.sample(th, N, generator=g)
    xi = draw_base(m, S, N, 10, generator=g)
    sm = cnce.fit(m, x, "sm", theta0=th0, device="cpu")
    e_sm = m.error(sm.theta, th)
    mm = theory.moment_matched(xi[:, :, :5])
    gaps = []
    for eps in (1e-1, 1e-2, 1e-3):
        res = cnce.fit(m, x, "cnce", kappa=10, eps=eps, noise_base=mm, theta0=th0, device="cpu")
        gaps.append(float((m.error(res.theta, th) / e_sm - 1).abs().max()))
    assert gaps[-1] < 1e-3 and gaps[0] > gaps[1] > gaps[2]
    indep = cnce.fit(m, x, "cnce", kappa=10, eps=1e-3, noise_base=xi, theta0=th0, device="cpu")
    assert float((m.error(indep.theta, th) / e_sm).median()) > 100


def test_the_ledger_has_an_eps_row_and_keeps_eps_tables_out_of_the_figure_claims():
    from companion.claims import QUESTION, ledger

    rng = np.random.default_rng(1)
    rows = [dict(study="eps-gaussian", method="cnce", N=N, kappa=10, eps_setting=s, sim=sim, error=c * rng.chisquare(3),
                 eps=eps_factor(s))
            for N in (100, 1000) for s, c in (("default", 1.0), ("x0.5", 1.1), ("x2", 3.0)) for sim in range(60)]
    ctx = ledger.Context(n_boot=100, results={"eps-gaussian": pd.DataFrame(rows)})
    recs = {c.id: r for c, r in ledger.compute(ctx, only={"eps-heuristic", "consistency-gaussian"})}
    assert recs["eps-heuristic"].verdict == QUESTION and recs["eps-heuristic"].numbers["cases"] == "2"
    assert recs["consistency-gaussian"].verdict == "not testable here"  # the eps table is not a figure's


def test_eps_is_listed_and_runnable_from_the_command_line(capsys, tmp_path):
    from cnce.cli import build_parser, main

    assert main(["list", "--scale", "quick", "--results-dir", str(tmp_path)]) == 0
    line = [l for l in capsys.readouterr().out.splitlines() if l.startswith("eps ")]
    assert len(line) == 1 and "eps-gaussian" in line[0] and "eps-bernoulli" in line[0]
    args = build_parser().parse_args(["run", "eps", "--scale", "paper"])
    assert args.experiment == "eps" and args.scale == "paper"
