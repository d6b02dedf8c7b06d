"""cnce.fit settles every setting once (eps, threads, the solvers' settings) and the backends
only read the plan; options are safe under threads; bad input is never ignored."""
from __future__ import annotations

import inspect
import threading

import pytest
import torch

import cnce
from cnce import _fused
from cnce.backends import plan
from cnce.eps import AUTHORS_RULE, BERNOULLI_RULE, EpsRule, EpsSearch
from cnce.models import ICA, Bernoulli, Gaussian, Ring
from cnce.noise import BernoulliFlipNoise, GaussianNoise
from cnce.options import FitOptions, LBFGSSettings, NewtonSettings

def test_options_are_per_thread():
    """Two threads in option_context blocks with different options each see their own, and a
    thread started meanwhile sees the process-wide defaults."""
    barrier = threading.Barrier(2)
    seen = {}

    def work(name, hp):
        with cnce.option_context(hess_points=hp):
            barrier.wait()  # both blocks are open now
            seen[name] = cnce.get_options().hess_points
            barrier.wait()
        seen[name + "-after"] = cnce.get_options().hess_points

    threads = [threading.Thread(target=work, args=("a", 7)), threading.Thread(target=work, args=("b", 11))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    default = FitOptions().hess_points
    assert seen == {"a": 7, "b": 11, "a-after": default, "b-after": default}
    with cnce.option_context(hess_points=3):
        out = []
        t = threading.Thread(target=lambda: out.append(cnce.get_options().hess_points))
        t.start()
        t.join()
        assert out == [default] and cnce.get_options().hess_points == 3


@pytest.mark.parametrize("method", ["nce", "mle", "sm"])
def test_eps_with_another_method_is_an_error(method):
    x = torch.randn(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    model = Gaussian(dim=2)
    if method not in model.methods:
        pytest.skip(f"{method} not offered")
    with pytest.raises(ValueError, match=r"eps=0\.5 applies to method 'cnce' only"):
        cnce.fit(model, x, method=method, eps=0.5, backend="torch")
    with pytest.raises(ValueError, match="eps_rule=.* applies to method 'cnce' only"):
        cnce.fit(model, x, method=method, eps_rule=AUTHORS_RULE, backend="torch")


def test_the_noise_declares_its_eps_rule():
    assert GaussianNoise.eps_rule is AUTHORS_RULE and BernoulliFlipNoise.eps_rule is BERNOULLI_RULE

    class Wide(BernoulliFlipNoise):  # a flip noise with a rule of its own
        eps_rule = EpsRule(start=0.25, max_steps=0, relative=False)

    g = torch.Generator().manual_seed(1)
    m = Bernoulli()
    x = m.sample(m.random_params(2, generator=g), 200, generator=g)
    res = cnce.fit(m, x, kappa=2, noise=Wide())
    assert torch.equal(res.eps, torch.full((2,), 0.25, dtype=torch.float64))
    # a rule without a bound is bounded by the noise (flip probability <= 1), once
    res = cnce.fit(m, x, kappa=2, eps_rule=EpsRule(start=3.0, max_steps=0, relative=False))
    assert torch.equal(res.eps, torch.ones(2, dtype=torch.float64))


def _capture_problems(monkeypatch):
    """Record every FitProblem handed to a backend, with a copy of what it held before solving."""
    from cnce import backends

    seen = []
    orig = backends.choose

    def choose(*a, **k):
        mod = orig(*a, **k)

        class Spy:
            NAME = mod.NAME

            @staticmethod
            def solve(problem):
                before = {"eps": problem.eps.clone() if isinstance(problem.eps, torch.Tensor) else problem.eps,
                          "theta0": problem.theta0.clone(), "newton": problem.newton, "lbfgs": problem.lbfgs,
                          "threads": problem.threads, "chunk": problem.chunk}
                res = mod.solve(problem)
                seen.append((mod.NAME, problem, before, res))
                return res

        return Spy

    monkeypatch.setattr(backends, "choose", choose)
    return seen


def test_backends_read_a_settled_plan(monkeypatch):
    """Behaviour instead of source greps: a backend gets eps as numbers or a search (never a
    string), settings it uses as given (a max_iter of the plan caps it: no default of its own)
    and leaves the problem as it got it."""
    seen = _capture_problems(monkeypatch)
    g = torch.Generator().manual_seed(4)
    m = ICA(dim=2)
    x = m.sample(m.random_params(2, generator=g), 200, generator=g)
    for backend in ("torch", "compiled"):
        for eps in ("auto", 0.5):
            res = cnce.fit(m, x, kappa=3, eps=eps, backend=backend, max_iter=2)
            name, problem, before, _ = seen[-1]
            assert name == backend and not isinstance(problem.eps, str)
            assert problem.newton is before["newton"] and problem.lbfgs is before["lbfgs"]
            assert torch.equal(problem.theta0, before["theta0"]) and problem.threads == before["threads"]
            if isinstance(before["eps"], torch.Tensor):
                assert torch.equal(problem.eps, before["eps"])
            assert (res.n_iter <= 2).all() and res.info["newton"].max_iter == 2
    # the compiled solvers take their settings whole: no defaults of their own
    for fn in (_fused.newton_all, _fused.ica_mle_all):
        params = inspect.signature(fn).parameters
        assert "settings" in params and "max_iter" not in params and params["threads"].default is inspect._empty


def test_newton_settings_per_backend():
    """One NewtonSettings, read by both solvers; they differ on purpose in the compiled solver's
    round-off rule only (documented in NewtonSettings), and the ICA problems get the same
    settings on both otherwise."""
    opts = FitOptions()
    ica = ICA(dim=2)
    t = plan.newton_settings(ica, "cnce", 1000, opts, "torch")
    f = plan.newton_settings(ica, "cnce", 1000, opts, "compiled", "ica")
    assert t.replace(roundoff_accept=True) == f and not t.roundoff_accept
    assert t.alpha_grow == f.alpha_grow == NewtonSettings.alpha_grow == 2.0
    assert f.hess_points == opts.projection_hess_points and f.ftol == max(1e-12, opts.stat_ftol * 4 / 1000)
    g = plan.newton_settings(Gaussian(dim=5), "cnce", 1000, opts, "compiled", "gaussian")
    assert g.progressive and g.noise_t and g.block_pairs == g.layout_block_pairs == 128 and g.hess_last == 0
    r = plan.newton_settings(Ring(dim=5, mu=7.0), "nce", 1000, opts, "compiled", "nce_ring")
    assert r.progressive and r.hess_points == 0 and not r.noise_t
    assert plan.newton_settings(Gaussian(dim=5), "cnce", 1000, opts, "torch").hess_points == opts.hess_points
    assert plan.newton_settings(Gaussian(dim=5), "cnce", 1000, opts, "torch", max_iter=7).max_iter == 7
    # the torch Newton reads alpha_grow: a smaller growth needs more line-search trials on ICA
    assert NewtonSettings().max_iter == 100 and LBFGSSettings().max_iter == 2000


def test_alpha_grow_is_read_by_both_newton_solvers():
    g = torch.Generator().manual_seed(3)
    m = ICA(dim=2)
    x = m.sample(m.random_params(2, generator=g), 300, generator=g)
    th0 = m.init_params(2, generator=g)
    for backend in ("torch", "compiled"):
        runs = {}
        for grow in (1.0, 4.0):
            orig = plan.newton_settings

            def patched(*a, **k):
                return orig(*a, **k).replace(alpha_grow=grow)

            plan.newton_settings = patched
            try:
                res = cnce.fit(m, x, kappa=3, eps=0.5, theta0=th0, seed=0, backend=backend)
            finally:
                plan.newton_settings = orig
            assert res.info["newton"].alpha_grow == grow
            runs[grow] = (res.theta, res.n_iter)
        # both solvers read it: another step growth takes other iterations to another point
        assert not torch.equal(runs[1.0][0], runs[4.0][0]), backend
        assert not torch.equal(runs[1.0][1], runs[4.0][1]), backend


def test_threads_is_an_integer_in_the_plan(monkeypatch):
    """With no thread count given anywhere, the plan holds torch's current one, as an integer,
    read when the fit is called (not at import)."""
    seen = _capture_problems(monkeypatch)
    x = torch.randn(2, 100, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            with cnce.option_context(threads=None):
                res = cnce.fit(Gaussian(dim=2), x, kappa=2, eps=0.5)
            assert res.info["backend"] == "compiled"
            threads = seen[-1][1].threads
            assert type(threads) is int and threads == n
    finally:
        torch.set_num_threads(before)


def test_eps_search_is_what_the_backends_get():
    x = torch.randn(3, 100, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    res = {b: cnce.fit(Gaussian(dim=2), x, kappa=2, backend=b, seed=1) for b in ("torch", "compiled")}
    torch.testing.assert_close(res["torch"].eps, res["compiled"].eps, rtol=1e-12, atol=0)
    assert isinstance(EpsSearch(AUTHORS_RULE).on_all_points(), EpsSearch)
