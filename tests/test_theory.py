"""cnce.theory: the eps -> 0 behaviour of the CNCE loss (notebook 01)."""
from __future__ import annotations

import math

import pytest
import torch

from cnce import theory
from cnce.losses import LOG4
from cnce.models import ICA, Gaussian


@pytest.fixture
def gauss_problem():
    g = torch.Generator().manual_seed(1)
    model = Gaussian(dim=3)
    theta_true = model.random_params(2, generator=g)
    x = model.sample(theta_true, 200, generator=g)
    theta = model.init_params(2, generator=g)
    xi = torch.randn(2, 200, 3, 3, generator=g, dtype=torch.float64)
    return model, x, theta_true, theta, xi


def test_loss_is_2log2_at_eps_zero(gauss_problem):
    model, x, _, theta, xi = gauss_problem
    # every G is exactly 0; only the rounding of the average remains
    torch.testing.assert_close(theory.cnce_objective(model, x, theta, 0.0, xi), torch.full((2,), LOG4, dtype=torch.float64), rtol=0, atol=1e-15)
    assert torch.equal(theory.cnce_excess(model, x, theta, 0.0, xi), torch.zeros(2, dtype=torch.float64))


def test_excess_matches_loss_minus_2log2(gauss_problem):
    model, x, _, theta, xi = gauss_problem
    for eps in (0.05, 0.5, 3.0):
        J = theory.cnce_objective(model, x, theta, eps, xi)
        torch.testing.assert_close(theory.cnce_excess(model, x, theta, eps, xi), J - LOG4, rtol=1e-9, atol=1e-13)


def test_moment_matched_directions_are_exact(gauss_problem):
    *_, xi = gauss_problem
    mm = theory.moment_matched(xi)
    assert mm.shape == (2, 200, 6, 3)
    torch.testing.assert_close(mm.mean(2), torch.zeros(2, 200, 3, dtype=torch.float64), atol=1e-10, rtol=0)
    outer = mm.transpose(-1, -2) @ mm / mm.shape[2]
    torch.testing.assert_close(outer, torch.eye(3, dtype=torch.float64).expand_as(outer), atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="at least D"):
        theory.moment_matched(xi[:, :, :2])


def test_antithetic_ratio_tends_to_half_score_matching(gauss_problem):
    model, x, _, theta, xi = gauss_problem
    mm = theory.moment_matched(xi)
    half_sm = 0.5 * theory.sm_objective(model, x, theta)
    torch.testing.assert_close(theory.small_eps_limit(model, x, theta, mm), half_sm, rtol=1e-10, atol=1e-12)
    ratio = {e: theory.cnce_excess(model, x, theta, e, mm) / e**2 for e in (1e-2, 1e-3)}
    d2, d3 = ((ratio[e] - half_sm).abs() for e in (1e-2, 1e-3))
    assert (d3 < 2e-5).all() and (d2 / d3 > 50).all()  # O(eps^2)
    # plain antithetic pairs converge to B_N, independent noise does not converge
    anti = theory.antithetic(xi)
    lim = theory.small_eps_limit(model, x, theta, anti)
    assert ((theory.cnce_excess(model, x, theta, 1e-3, anti) / 1e-6 - lim).abs() < 1e-4).all()
    indep = theory.cnce_excess(model, x, theta, 1e-4, xi) / 1e-8 - theory.small_eps_limit(model, x, theta, xi)
    assert (indep.abs() > 1.0).all()


def test_laplacian_by_parts_gaussian_and_ica():
    g = torch.Generator().manual_seed(2)
    model = Gaussian(dim=3)
    th = model.random_params(1, generator=g)
    x = model.sample(th, 200000, generator=g)
    trace = -torch.diagonal(model.precision(th), dim1=-2, dim2=-1).sum(-1)
    torch.testing.assert_close(theory.laplacian_by_parts(model, x, th, th), trace, rtol=0.02, atol=0)
    ica = ICA(dim=3)
    B = ica.random_params(1, generator=g)
    xs = ica.sample(B, 200000, generator=g)
    exact = -2.0 * (ica.demixing(B) ** 2).sum((-2, -1))
    torch.testing.assert_close(theory.laplacian_by_parts(ica, xs, B, B), exact, rtol=0.02, atol=0)
    assert theory.ica_kink_pairs(ica, xs[:, :100], B, torch.zeros(1, 100, 2, 3, dtype=torch.float64), 1.0).item() == 0
    assert math.isclose(float(theory.sm_objective(ica, xs[:, :1000], B)),
                        float(0.5 * (theory.score(ica, xs[:, :1000], B) ** 2).sum(-1).mean()), rel_tol=1e-12)
