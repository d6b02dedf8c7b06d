"""Held-out log-likelihood in any dimension (cnce.nn.log_normaliser): known answers by
quadrature (D <= 3) and by AIS with its reverse bracket (D = 5 cheap, D = 10 slow), and the
refusals: an improper density, a budget too small to support a number."""
from __future__ import annotations

import math

import pytest
import torch

import cnce.nn as nn
from cnce.nn.likelihood import UnsupportedEstimateError


def gaussian(D, seed=0, c=1.7, n=2000):
    """An unnormalised Gaussian exp(c) N(mu, cov): log Z = c exactly."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(D, D, generator=g, dtype=torch.float64) / math.sqrt(D)
    cov = A @ A.T + 0.5 * torch.eye(D, dtype=torch.float64)
    mu = torch.randn(D, generator=g, dtype=torch.float64)
    P = torch.linalg.inv(cov)
    half_logdet = 0.5 * float(torch.logdet(2 * math.pi * cov))

    def f(u):
        d = u - mu
        return -0.5 * ((d @ P) * d).sum(-1) - half_logdet + c

    x = mu + torch.randn(n, D, generator=g, dtype=torch.float64) @ torch.linalg.cholesky(cov).T
    return f, c, x


def mixture(D, K=8, seed=0, c=-2.3, n=3000):
    """exp(c) times a mixture of K isotropic Gaussians of unequal weights and widths, far apart:
    log Z = c exactly."""
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(K, generator=g, dtype=torch.float64) + 0.2
    w = w / w.sum()
    mu = 3 * torch.randn(K, D, generator=g, dtype=torch.float64)
    sd = 0.5 + torch.rand(K, generator=g, dtype=torch.float64)

    def f(u):
        d = ((u.unsqueeze(1) - mu) ** 2).sum(-1) / sd**2
        return torch.logsumexp(w.log() - 0.5 * d - D * sd.log() - 0.5 * D * math.log(2 * math.pi), -1) + c

    comp = torch.multinomial(w, n, replacement=True, generator=g)
    x = mu[comp] + sd[comp, None] * torch.randn(n, D, generator=g, dtype=torch.float64)
    return f, c, x


def _report(name, est, truth):
    print(f"{name}: {est.method} log Z {est.log_z:.4f} [{est.lo:.4f}, {est.hi:.4f}] truth {truth:.4f} "
          f"forward {est.forward:.4f} reverse {est.reverse:.4f} ESS {est.ess:.1f}/{est.chains}")


@pytest.mark.parametrize("D", [1, 2, 3])
def test_quadrature_known_answer(D):
    f, truth, x = gaussian(D)
    est = nn.log_normaliser(f, x)
    _report(f"gaussian D={D}", est, truth)
    assert est.method == "quadrature" and est.ok
    assert est.lo <= truth <= est.hi and est.error < 0.05


@pytest.mark.parametrize("case", ["gaussian", "mixture"])
def test_ais_known_answer_d5(case):
    f, truth, x = (gaussian if case == "gaussian" else lambda D: mixture(D, K=3))(5)
    est = nn.log_normaliser(f, x)
    _report(f"{case} D=5", est, truth)
    assert est.method == "ais" and est.ok
    assert est.lo <= truth <= est.hi, (est.lo, truth, est.hi)
    assert est.error < 0.1 and est.ess > 0.5 * est.chains


@pytest.mark.slow
@pytest.mark.parametrize("case", ["gaussian", "mixture"])
def test_ais_known_answer_d10(case):
    f, truth, x = (gaussian if case == "gaussian" else mixture)(10)
    est = nn.log_normaliser(f, x, temperatures=1000, chains=512)
    _report(f"{case} D=10", est, truth)
    assert est.ok and est.lo <= truth <= est.hi, (est.lo, truth, est.hi)
    assert est.error < 0.1 and est.ess > 0.3 * est.chains


def test_held_out_likelihood_of_a_known_density():
    f, c, x = gaussian(5, n=3000)
    ll = nn.held_out_log_likelihood(f, x[2000:], x[:2000])
    truth = float(f(x[2000:]).mean()) - c
    assert ll.lo <= truth <= ll.hi and ll.n == 1000 and ll.se_points > 0


def test_refuses_what_it_cannot_support():
    # a density that rises away from the data (improper): quadrature sees mass outside its box
    _, _, x2 = gaussian(2)
    with pytest.raises(UnsupportedEstimateError, match="mass outside"):
        nn.log_normaliser(lambda u: 0.8 * u[:, 0], x2)
    # in 5-D, AIS cannot support a number for it either
    _, _, x5 = gaussian(5)
    with pytest.raises(UnsupportedEstimateError, match="cannot be supported"):
        nn.log_normaliser(lambda u: 0.5 * (u**2).sum(-1), x5, temperatures=50, chains=64)
    # a budget too small for a far-apart mixture in 10-D: refused, or with "warn" NaN
    f, _, x = mixture(10)
    with pytest.warns(RuntimeWarning, match="returning NaN"):
        est = nn.log_normaliser(f, x, temperatures=3, chains=32, steps=1, components=(1,), on_fail="warn")
    assert math.isnan(est.log_z) and est.problem
    with pytest.raises(ValueError, match="D <= 3"):
        nn.log_normaliser(f, x, method="quadrature")
    with pytest.raises(ValueError, match="reference must have shape"):
        nn.log_normaliser(f, x[:, 0])
    with pytest.raises(ValueError, match=r"x must have D = 10 columns"):
        nn.held_out_log_likelihood(f, x[:, :3], x)
