"""Unit tests of the noise distributions (``cnce.noise``) and the epsilon heuristic (``cnce.eps``).

Monte Carlo checks allow 5 standard errors (computed in each test); see ``test_models``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from cnce.eps import AUTHORS_RULE, BERNOULLI_RULE, EpsRule, choose_eps, data_scale
from cnce.losses import LOG4
from cnce.noise import BernoulliFlipNoise, GaussianNoise, MultiplicativeLogNormalNoise, NCEGaussianNoise, default_noise, draw_base
from cnce.models import Bernoulli, Gaussian

Z = 5.0


# ----------------------------------------------------------------------------- conditional noise
def test_gaussian_noise_moments_and_per_simulation_eps(gen):
    """``y = x + eps xi`` (Eq. 13): (y - x)/eps has mean 0 and unit variance, eps per simulation."""
    x = torch.randn(2, 20000, 3, generator=gen, dtype=torch.float64)
    eps = torch.tensor([0.3, 2.0], dtype=torch.float64)
    y = GaussianNoise().sample(x, 2, eps, generator=gen)
    assert y.shape == (2, 20000, 2, 3)
    z = (y - x.unsqueeze(-2)) / eps.view(-1, 1, 1, 1)
    n = z[0].numel() / 1  # per simulation
    assert (z.mean((1, 2, 3)).abs() * math.sqrt(n)).max() < Z
    assert ((z**2).mean((1, 2, 3)) - 1).abs().max() * math.sqrt(n / 2) < Z


def test_gaussian_noise_log_prob_matches_scipy(gen):
    x = torch.randn(1, 4, 3, generator=gen, dtype=torch.float64)
    eps = torch.tensor([0.7], dtype=torch.float64)
    noise = GaussianNoise()
    y = noise.sample(x, 2, eps, generator=gen)
    got = noise.log_prob(y, x, eps)
    for i, k in itertools.product(range(4), range(2)):
        ref = stats.multivariate_normal(x[0, i].numpy(), 0.49 * np.eye(3)).logpdf(y[0, i, k].numpy())
        assert got[0, i, k].item() == pytest.approx(ref, rel=1e-12)
    assert noise.log_ratio(x, y, eps) is None  # symmetric: the densities cancel in G


def test_bernoulli_flip_noise(gen):
    """Eq. (64): each bit flips with probability eps (binomial standard error); eps = 0 copies,
    eps = 1 flips everything; log_prob is a distribution over {0, 1}^D (sums to one, D = 3)."""
    noise = BernoulliFlipNoise()
    x = (torch.rand(2, 20000, 1, generator=gen) < 0.4).double()
    eps = torch.tensor([0.1, 0.65], dtype=torch.float64)
    y = noise.sample(x, 3, eps, generator=gen)
    flips = (y != x.unsqueeze(-2)).double().mean((1, 2, 3))
    n = 60000
    assert ((flips - eps).abs() / torch.sqrt(eps * (1 - eps) / n)).max() < Z
    assert torch.equal(noise.sample(x, 2, 0.0, generator=gen), x.unsqueeze(-2).expand(2, 20000, 2, 1))
    assert torch.equal(noise.sample(x, 2, 1.0, generator=gen), 1 - x.unsqueeze(-2).expand(2, 20000, 2, 1))
    assert noise.eps_max == 1.0
    xs = torch.tensor([[[0.0, 1.0, 1.0]]], dtype=torch.float64)
    ys = torch.tensor(list(itertools.product([0.0, 1.0], repeat=3)), dtype=torch.float64).reshape(1, 1, 8, 3)
    for e in (0.0, 0.2, 1.0):
        p = torch.exp(noise.log_prob(ys, xs, torch.tensor([e], dtype=torch.float64)))
        assert p.sum().item() == pytest.approx(1.0, abs=1e-14)
        assert p[0, 0, 0].item() == pytest.approx(e**2 * (1 - e), abs=1e-15)  # (0,0,0): two flips


def test_multiplicative_lognormal_noise(gen):
    """The asymmetric noise ``y = x exp(eps xi)``: its log-ratio equals the difference of its
    log-densities ``log p_c(y|x) - log p_c(x|y)`` evaluated directly, and equals
    ``sum(log x - log y)``; it is 0 (not NaN) at eps = 0; ``log(y/x)/eps`` is standard normal
    (KS test); and ``p_c(. | x)`` integrates to one (quad, D = 1)."""
    noise = MultiplicativeLogNormalNoise()
    assert not noise.symmetric
    x = torch.exp(torch.randn(2, 5, 2, generator=gen, dtype=torch.float64))
    eps = torch.tensor([0.3, 1.1], dtype=torch.float64)
    y = noise.sample(x, 3, eps, generator=gen)
    direct = torch.empty(2, 5, 3, dtype=torch.float64)
    for s, i, k in itertools.product(range(2), range(5), range(3)):
        e = eps[s : s + 1]
        fwd = noise.log_prob(y[s : s + 1, i : i + 1, k : k + 1], x[s : s + 1, i : i + 1], e)
        bwd = noise.log_prob(x[s : s + 1, i : i + 1].unsqueeze(-2), y[s : s + 1, i : i + 1, k], e)
        direct[s, i, k] = (fwd - bwd).item()
    torch.testing.assert_close(noise.log_ratio(x, y, eps), direct, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(direct, (torch.log(x).unsqueeze(-2) - torch.log(y)).sum(-1), rtol=1e-12, atol=1e-12)
    zero = torch.zeros(2, dtype=torch.float64)
    y0 = noise.sample(x, 3, zero, generator=gen)
    torch.testing.assert_close(noise.log_ratio(x, y0, zero), torch.zeros(2, 5, 3, dtype=torch.float64))
    xb = torch.full((1, 1, 1), 2.0, dtype=torch.float64)
    big = noise.sample(xb.expand(1, 20000, 1).contiguous(), 1, torch.tensor([0.5], dtype=torch.float64), generator=gen)
    z = torch.log(big[0, :, 0, 0] / 2.0) / 0.5
    assert stats.kstest(z.numpy(), "norm").pvalue > 1e-4
    e = torch.tensor([0.5], dtype=torch.float64)
    dens = lambda v: math.exp(noise.log_prob(torch.tensor([[[[v]]]], dtype=torch.float64), xb, e).item())
    assert integrate.quad(dens, 0, math.inf, epsrel=1e-10)[0] == pytest.approx(1.0, abs=1e-8)
    with pytest.raises(ValueError, match="x must be positive"):
        noise.sample(-x, 1, eps, generator=gen)


def test_nce_gaussian_noise(gen):
    """NCE's noise: the data's sample mean and covariance, log_prob of that Gaussian (scipy),
    samples with those moments (5 standard errors)."""
    x = torch.randn(1, 500, 3, generator=gen, dtype=torch.float64) @ torch.tensor([[2.0, 0, 0], [0.5, 1.0, 0], [0, 0.3, 0.2]], dtype=torch.float64) + 1.5
    pn = NCEGaussianNoise.fit(x)
    xn = x[0].numpy()
    np.testing.assert_allclose(pn.mean[0].numpy(), xn.mean(0), rtol=1e-12)
    np.testing.assert_allclose(pn.cov[0].numpy(), np.cov(xn.T), rtol=1e-8)
    u = torch.randn(1, 10, 3, generator=gen, dtype=torch.float64)
    ref = stats.multivariate_normal(xn.mean(0), np.cov(xn.T)).logpdf(u[0].numpy())
    np.testing.assert_allclose(pn.log_prob(u)[0].numpy(), ref, rtol=1e-8)
    y = pn.sample(40000, generator=gen)[0]
    sd = torch.sqrt(pn.cov[0].diagonal())
    assert ((y.mean(0) - pn.mean[0]).abs() / (sd / math.sqrt(40000))).max() < Z


def test_default_noise_and_draw_base(gen):
    assert isinstance(default_noise(Bernoulli()), BernoulliFlipNoise)
    assert isinstance(default_noise(Gaussian()), GaussianNoise)
    b = draw_base(Gaussian(), 2, 10, 3, generator=gen)
    assert b.shape == (2, 10, 3, 5) and b.dtype == torch.float64 and (b < 0).any()
    u = draw_base(Bernoulli(), 2, 10, 3, generator=gen)
    assert u.shape == (2, 10, 3, 1) and u.min() >= 0 and u.max() < 1


# ----------------------------------------------------------------------------- epsilon heuristic
def test_data_scale():
    x = torch.tensor([[[0.0, 0.0], [2.0, 4.0]]], dtype=torch.float64)  # stds sqrt 2 and 2 sqrt 2
    assert data_scale(x).item() == pytest.approx(1.5 * math.sqrt(2))


def _toy_J(eps):
    """A loss that moves away from 2 log 2 as eps grows: J = 2 log 2 * exp(-eps^2)."""
    return LOG4 * torch.exp(-(eps**2))


def test_choose_eps_grows_from_half_the_data_scale(gen):
    """Too close to 2 log 2 at the start: eps = 0.5 * scale * 1.2^k with the first k where
    |1 - J / 2 log 2| >= 0.1, i.e. exp(-eps^2) <= 0.9 <=> eps >= sqrt(-log 0.9) = 0.3246."""
    x = torch.stack([0.1 * torch.randn(50, 2, generator=gen, dtype=torch.float64), 0.3 * torch.randn(50, 2, generator=gen, dtype=torch.float64)])
    eps, trace = choose_eps(_toy_J, x, return_trace=True)
    scale = data_scale(x)
    for s in range(2):
        e = 0.5 * scale[s].item()
        while (1 - math.exp(-(e**2))) < 0.1:
            e *= 1.2
        assert eps[s].item() == pytest.approx(e, rel=1e-12)
    E, J = trace.as_tensors()
    assert torch.equal(E[-1], eps) and E.shape[1] == 2
    assert ((1 - J[-1] / LOG4).abs() >= 0.1).all() and (J[-1] >= 0.5 * LOG4).all()


def test_choose_eps_shrinks_when_too_far(gen):
    """J below half of 2 log 2 at the start: halve eps until it is not (exp(-eps^2) >= 0.5
    <=> eps <= 0.8326); simulations run independently in one batch."""
    x = torch.stack([5.0 * torch.randn(50, 1, generator=gen, dtype=torch.float64), 0.05 * torch.randn(50, 1, generator=gen, dtype=torch.float64)])
    eps = choose_eps(_toy_J, x)
    scale = data_scale(x)
    e = 0.5 * scale[0].item()
    assert e > 0.84
    while math.exp(-(e**2)) < 0.5:
        e *= 0.5
    assert eps[0].item() == pytest.approx(e, rel=1e-12)
    eps1 = choose_eps(_toy_J, x[1:])
    assert eps[1].item() == pytest.approx(eps1[0].item(), rel=1e-12)


def test_choose_eps_cap_is_tested_before_each_step_not_clamped(gen):
    """A loss that never leaves 2 log 2: the authors test the multiplier against 1000 *before*
    each step and never clamp, so the run stops at the first multiplier that is not below 1000,
    0.5 x 1.2^42 = 1058 (0.5 x 1.2^41 = 882 is still below), not at 1000 x scale."""
    x = torch.randn(1, 30, 2, generator=gen, dtype=torch.float64)
    flat = lambda e: torch.full_like(e, LOG4)
    assert 0.5 * 1.2**41 < 1000 <= 0.5 * 1.2**42
    eps, trace = choose_eps(flat, x, return_trace=True)
    assert eps.item() == pytest.approx(0.5 * 1.2**42 * data_scale(x).item(), rel=1e-12)
    assert eps.item() > 1000 * data_scale(x).item()
    E, J = trace.as_tensors()
    assert E.shape[0] == 43 and torch.equal(E[-1], eps) and (J == LOG4).all()  # 42 steps; J at the end for the trace
    # a small cap: 0.5 -> 0.6 (< 0.7, so one more step) -> 0.72, which is returned as it is
    eps = choose_eps(flat, x, EpsRule(cap=0.7))
    assert eps.item() == pytest.approx(0.72 * data_scale(x).item(), rel=1e-12)
    # a start at or above the cap takes no step and evaluates nothing
    calls = []
    eps = choose_eps(lambda e: calls.append(e) or flat(e), x, EpsRule(start=2.0, cap=2.0))
    assert eps.item() == pytest.approx(2.0 * data_scale(x).item(), rel=1e-12) and not calls


def test_choose_eps_step_limit(gen):
    """At most ``max_steps`` evaluations, each followed by a step."""
    x = torch.randn(1, 30, 2, generator=gen, dtype=torch.float64)
    calls = []
    eps = choose_eps(lambda e: calls.append(e) or torch.full_like(e, LOG4), x, EpsRule(max_steps=3))
    assert eps.item() == pytest.approx(0.5 * 1.2**3 * data_scale(x).item(), rel=1e-12) and len(calls) == 3


def _steps_J(levels):
    """A piecewise-constant J(eps / scale): ``levels`` = [(upper end, J / 2 log 2), ...]."""
    def J(eps, scale):
        r = eps / scale
        out = torch.full_like(eps, levels[-1][1])
        for upper, v in reversed(levels[:-1]):
            out = torch.where(r < upper, torch.full_like(eps, v), out)
        return LOG4 * out
    return J


def test_choose_eps_retests_both_conditions_after_shrinking(gen):
    """The authors re-test both conditions at every step. Too far at 0.5 (J = 0.3 x 2 log 2):
    halve to 0.25, where J is too close (0.98 x 2 log 2): grow to 0.30, where J is neither:
    stop at 0.30 x scale. A rule that kept its first direction would stop at 0.25, with J
    still within 2 % of 2 log 2."""
    x = torch.randn(2, 40, 3, generator=gen, dtype=torch.float64) * torch.tensor([1.0, 0.2, 3.0], dtype=torch.float64)
    scale = data_scale(x)
    J = _steps_J([(0.27, 0.98), (0.4, 0.7), (None, 0.3)])
    eps, trace = choose_eps(lambda e: J(e, scale), x, return_trace=True)
    torch.testing.assert_close(eps, 0.3 * scale, rtol=1e-12, atol=0)
    E, Jt = trace.as_tensors()
    torch.testing.assert_close(E / scale, torch.tensor([[0.5], [0.25], [0.3]], dtype=torch.float64).expand(3, 2), rtol=1e-12, atol=0)
    torch.testing.assert_close(Jt[:, 0] / LOG4, torch.tensor([0.3, 0.98, 0.7], dtype=torch.float64), rtol=1e-12, atol=0)


def test_choose_eps_retests_both_conditions_after_growing(gen):
    """The other direction: too close at 0.5, grow to 0.6 where J is too far (0.3 x 2 log 2),
    halve to 0.3 where J is neither: stop at 0.3 x scale (not at 0.6)."""
    x = torch.randn(1, 40, 2, generator=gen, dtype=torch.float64)
    scale = data_scale(x)
    J = _steps_J([(0.4, 0.7), (0.55, 0.95), (None, 0.3)])
    eps = choose_eps(lambda e: J(e, scale), x)
    assert eps.item() == pytest.approx(0.3 * scale.item(), rel=1e-12)


def test_bernoulli_rule_stays_a_probability():
    """The Bernoulli rule starts at 1 (absolute), steps while eps < 1.1 (the authors' loop, which
    can end at 1.1) and clips the result to the admissible 1."""
    x = torch.zeros(1, 10, 1, dtype=torch.float64)
    assert not BERNOULLI_RULE.relative and BERNOULLI_RULE.cap == 1.1 and BERNOULLI_RULE.limit == 1.0
    assert AUTHORS_RULE.relative and AUTHORS_RULE.limit is None
    eps, trace = choose_eps(lambda e: torch.full_like(e, LOG4), x, BERNOULLI_RULE, return_trace=True)
    assert eps.item() == 1.0 and trace.eps[-1].item() == pytest.approx(1.1)
    eps = choose_eps(lambda e: LOG4 * 0.3 * e / e.clamp_min(0.5), x, BERNOULLI_RULE)  # always "too far"
    assert eps.item() == pytest.approx(0.9**50, rel=1e-12)
    # shrink to 0.9 (too far at 1), then too close: grow 0.99 -> 1.089 -> 1.198 (not below 1.1): clipped to 1
    J = lambda e: LOG4 * torch.where((e > 0.995) & (e < 1.05), 0.3, 0.95).to(e.dtype)
    eps, trace = choose_eps(J, x, BERNOULLI_RULE, return_trace=True)
    assert eps.item() == 1.0
    torch.testing.assert_close(trace.as_tensors()[0][:, 0], torch.tensor([1.0, 0.9, 0.99, 1.089, 1.1979], dtype=torch.float64))


def test_choose_eps_changes_direction_on_a_real_problem():
    """The case found against the authors' code: anisotropic Gaussian data (standard deviations
    spanning two decades), fits started at 30 times the true precision. J at 0.5 x scale is far
    below 2 log 2, so eps halves three times, to 0.0625 x scale, where J is within 10 % of
    2 log 2; the authors' loop then grows it once, to 0.075 x scale. ``cnce.fit`` picks the same."""
    import cnce
    from cnce import theory
    from cnce.models import Gaussian

    m = Gaussian(dim=5)
    g = torch.Generator().manual_seed(27)
    sd = torch.tensor([3.0, 1.0, 0.3, 0.1, 0.03], dtype=torch.float64) ** 1.5
    theta = m.theta_from_precision(torch.diag(1 / sd**2).unsqueeze(0))
    x = m.sample(theta, 1000, generator=g)
    theta0 = 30 * theta
    xi = GaussianNoise().draw_base(x, 10, generator=g)
    eps, trace = choose_eps(lambda e: theory.cnce_objective(m, x, theta0, e, xi), x, return_trace=True)
    E, J = trace.as_tensors()
    scale = data_scale(x)[0]
    torch.testing.assert_close(E[:, 0] / scale, torch.tensor([0.5, 0.25, 0.125, 0.0625, 0.075], dtype=torch.float64), rtol=1e-12, atol=0)
    assert (1 - J[3, 0] / LOG4).abs() < 0.1  # where a rule that kept shrinking would have stopped
    assert (1 - J[4, 0] / LOG4).abs() >= 0.1 and J[4, 0] >= 0.5 * LOG4
    res = cnce.fit(m, x, "cnce", kappa=10, eps="auto", theta0=theta0, noise_base=xi, max_iter=1)
    torch.testing.assert_close(res.eps, eps, rtol=1e-12, atol=0)


def test_choose_eps_active_only_same_eps_less_work(gen):
    """``active_only``: J is evaluated only for the simulations still searching. Same eps and
    trace as the full loop (simulations at different scales stop after different numbers of
    steps, one of them at the cap), and fewer evaluations."""
    scales = torch.tensor([0.01, 0.1, 0.3, 1.0, 5.0], dtype=torch.float64)
    x = scales[:, None, None] * torch.randn(5, 40, 2, generator=gen, dtype=torch.float64)
    J_toy = lambda e: torch.where(e < 1e3, _toy_J(e), torch.full_like(e, LOG4))  # noqa: E731
    seen = []

    def J_sub(e, sims):
        seen.append(sims.numel())
        return J_toy(e)

    eps, trace = choose_eps(J_toy, x, return_trace=True)
    eps2, trace2 = choose_eps(J_sub, x, return_trace=True, active_only=True)
    assert torch.equal(eps, eps2)
    for a, b in zip(trace.as_tensors(), trace2.as_tensors()):
        assert torch.equal(a, b)
    assert sum(seen) < len(seen) * 5 and max(seen) == 5 and min(seen) >= 1


def test_compiled_heuristic_evaluates_only_active_simulations(gen):
    """The compiled backend's heuristic (``active_only``) picks the same eps as the full loop
    over the compiled loss."""
    import cnce
    from cnce import _fused
    from cnce.models import Gaussian

    if not _fused.available():
        pytest.skip("numba missing")
    m = Gaussian()
    th = m.random_params(6, gen)
    x = m.sample(th, 300, generator=gen) * torch.tensor([0.2, 1.0, 3.0, 0.5, 1.5, 8.0], dtype=torch.float64)[:, None, None]
    base = draw_base(m, 6, 300, 5, generator=gen)
    psi0 = m.to_free(m.init_params(6, gen))
    fit = cnce.fit(m, x, method="cnce", kappa=5, eps="auto", noise_base=base, theta0=m.from_free(psi0), backend="compiled")
    J_all = lambda e: torch.from_numpy(_fused.loss_all(_fused.GAUSSIAN, x.numpy(), base.numpy(), e.numpy()[:, None],  # noqa: E731
                                                       psi0.numpy(), threads=1))
    assert torch.equal(fit.eps, choose_eps(J_all, x))
    sub = _fused.loss_all(_fused.GAUSSIAN, x.numpy(), base.numpy(), np.full((6, 1), 0.3), psi0.numpy(), threads=1, sims=[4, 1])
    full = _fused.loss_all(_fused.GAUSSIAN, x.numpy(), base.numpy(), np.full((6, 1), 0.3), psi0.numpy(), threads=1)
    assert np.array_equal(sub, full[[4, 1]])


def test_choose_eps_prefix_decides_on_prefix_and_confirms_on_all(gen):
    """``prefix``: the steps are decided on J of the first points, the result is confirmed on
    all points. An exact prefix (J independent of ``n_data``) gives the all-points eps; a
    biased prefix that would stop too early is corrected by the confirmation, so the result
    satisfies the rule on all points; ``margin`` sends near-threshold steps to all points."""
    scales = torch.tensor([0.01, 0.1, 0.3, 1.0, 5.0], dtype=torch.float64)
    x = scales[:, None, None] * torch.randn(5, 400, 2, generator=gen, dtype=torch.float64)
    seen = {"prefix": 0, "all": 0}

    def J(e, sims, n_data=None, bias=0.0):
        seen["all" if n_data is None else "prefix"] += sims.numel()
        return _toy_J(e) - (bias if n_data is not None else 0.0)

    ref = choose_eps(lambda e: _toy_J(e), x)
    assert torch.equal(choose_eps(J, x, active_only=True, prefix=25), ref)
    assert seen["prefix"] > 0 and seen["all"] >= 5  # every simulation confirmed on all points
    # prefix J too low by 0.3: the prefix path shrinks too far; the confirmation resumes on all points
    biased = choose_eps(lambda e, s, n_data=None: J(e, s, n_data, bias=0.3), x, active_only=True, prefix=25)
    Jb = _toy_J(biased)
    assert not ((1 - Jb / LOG4).abs() < 0.1).any() and not (Jb < 0.5 * LOG4).any()
    # prefix >= N: the all-points loop
    seen.update(prefix=0, all=0)
    assert torch.equal(choose_eps(J, x, active_only=True, prefix=400), ref) and seen["prefix"] == 0
    # an infinite margin decides every step on all points: the all-points eps
    assert torch.equal(choose_eps(lambda e, s, n_data=None: J(e, s, n_data, bias=0.3), x, active_only=True,
                                  prefix=25, margin=1e9), ref)
    for bad in (dict(prefix=0), dict(prefix=10, margin=-1.0)):
        with pytest.raises(ValueError, match=next(iter(bad)) if "margin" not in bad else "margin"):
            choose_eps(J, x, active_only=True, **bad)


def test_loss_all_on_a_prefix_equals_the_loss_of_the_first_points(gen):
    """``loss_all(n_data=n)`` is the loss of the first ``n`` points and their noise, normalised by n."""
    from cnce import _fused
    from cnce.models import Gaussian

    if not _fused.available():
        pytest.skip("numba missing")
    m = Gaussian()
    x = m.sample(m.random_params(3, gen), 200, generator=gen)
    base = draw_base(m, 3, 200, 4, generator=gen)
    psi0 = m.to_free(m.init_params(3, gen)).numpy()
    prm = np.full((3, 1), 0.4)
    pre = _fused.loss_all(_fused.GAUSSIAN, x.numpy(), base.numpy(), prm, psi0, threads=1, n_data=50)
    cut = _fused.loss_all(_fused.GAUSSIAN, np.ascontiguousarray(x.numpy()[:, :50]),
                          np.ascontiguousarray(base.numpy()[:, :50]), prm, psi0, threads=1)
    np.testing.assert_allclose(pre, cut, rtol=1e-13)
    with pytest.raises(ValueError, match="n_data"):
        _fused.loss_all(_fused.GAUSSIAN, x.numpy(), base.numpy(), prm, psi0, threads=1, n_data=201)


def test_fit_eps_prefix_option_keeps_eps_on_an_easy_problem(gen):
    """``FitOptions(eps_prefix=...)`` reaches the heuristic of both backends; validated."""
    import cnce
    from cnce.models import Gaussian

    m = Gaussian()
    x = m.sample(m.random_params(2, gen), 2048, generator=gen)
    base = draw_base(m, 2, 2048, 4, generator=gen)
    th0 = m.init_params(2, gen)
    kw = dict(method="cnce", kappa=4, noise_base=base, theta0=th0, max_iter=1)
    for backend in ("torch",) + (("compiled",) if cnce._fused.available() else ()):
        full = cnce.fit(m, x, backend=backend, **kw).eps
        pre = cnce.fit(m, x, backend=backend, options=cnce.FitOptions(eps_prefix=8, eps_margin=1e9), **kw).eps
        torch.testing.assert_close(pre, full, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="eps_prefix"):
        cnce.FitOptions(eps_prefix=0)


def test_draw_streams_same_numbers_for_any_threads_batch_and_prefix():
    """One stream per simulation: the base does not depend on the thread count or on which
    other simulations are drawn, and N points are a prefix of a longer draw."""
    from cnce.noise import draw_streams

    a = draw_streams(6, 300, 4, 3, key=7, threads=1)
    assert torch.equal(a, draw_streams(6, 300, 4, 3, key=7, threads=3))
    assert torch.equal(a[:2], draw_streams(2, 300, 4, 3, key=7))
    assert torch.equal(a[:, :100], draw_streams(6, 100, 4, 3, key=7))
    assert not torch.equal(a, draw_streams(6, 300, 4, 3, key=8))
    assert not torch.equal(a[0], a[1])
    # standard normal: mean 0 and variance 1 within 5 standard errors (n = 21600)
    n = a.numel()
    assert abs(float(a.mean())) < 5 / n**0.5 and abs(float(a.var()) - 1) < 5 * (2 / n) ** 0.5
    u = draw_streams(2, 500, 2, 2, key=1, kind="uniform")
    assert float(u.min()) >= 0 and float(u.max()) < 1 and abs(float(u.mean()) - 0.5) < 5 * (1 / 12 / u.numel()) ** 0.5
    for bad, match in ((dict(kind="gamma"), "kind"), (dict(key=-1), "key"), (dict(threads=0), "threads")):
        kw = dict(key=1) | bad
        with pytest.raises(ValueError, match=match):
            draw_streams(2, 10, 2, 2, **kw)


def test_fit_default_base_is_the_seeded_streams_whatever_the_threads(gen):
    """Without ``noise_base`` a fit draws :func:`draw_streams` keyed from its seed: the same
    estimate for any thread count, and the same as passing that base explicitly."""
    import cnce
    from cnce.models import Gaussian
    from cnce.noise import GaussianNoise, default_base

    m = Gaussian()
    x = m.sample(m.random_params(3, gen), 400, generator=gen)
    r1 = cnce.fit(m, x, "cnce", 5, seed=3, threads=1)
    r2 = cnce.fit(m, x, "cnce", 5, seed=3, threads=2)
    assert torch.equal(r1.theta, r2.theta) and torch.equal(r1.eps, r2.eps)
    g = torch.Generator().manual_seed(3)
    th0 = m.init_params(3, generator=g)
    base = default_base(GaussianNoise(), 3, 400, 5, 5, g)
    r3 = cnce.fit(m, x, "cnce", 5, theta0=th0, noise_base=base, threads=1)
    assert torch.equal(r1.theta, r3.theta)
