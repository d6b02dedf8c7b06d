"""Unit tests of the models (``cnce.models``): densities, Jacobians, samplers, errors.

Tolerances on random quantities are stated as multiples of a standard error computed in the
test (z-scores); five standard errors make a false alarm about a one-in-a-million event per
check, while every check still fails for a wrong formula (a wrong moment is off by many
standard errors at the sample sizes used).
"""
from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from cnce.models import ICA, Bernoulli, Gaussian, LogNormal, Ring, UnnormalisedModel, get_model, signed_permutation_match


Z = 5.0  # z-score bound for Monte Carlo checks (see module docstring)


def all_models():
    return [Gaussian(), ICA(), Ring(mu=6.0), LogNormal(), Bernoulli()]


def _points(model, S, M, gen):
    """Evaluation points that exercise every branch of ``log phi``."""
    if model.discrete:
        return (torch.rand(S, M, 1, generator=gen) < 0.5).double()
    if isinstance(model, LogNormal):  # both signs: the u <= 0 branch has the constant C
        return 2.0 * torch.randn(S, M, 1, generator=gen, dtype=torch.float64)
    return 3.0 * torch.randn(S, M, model.dim, generator=gen, dtype=torch.float64)


def _theta(model, S, gen):
    th = model.init_params(S, gen)
    if isinstance(model, LogNormal):
        th = th.clone()
        th[:, 1] = torch.randn(S, generator=gen, dtype=torch.float64)  # a finite C
    return th


# ----------------------------------------------------------------------------- evaluation
@pytest.mark.parametrize("model", all_models(), ids=lambda m: m.name)
def test_jac_log_phi_matches_autograd_default(model, gen):
    """The analytic Jacobian of every built-in model equals the base class's forward-mode
    autograd default (run on a copy with ``linear = False`` so the default really uses jvp)."""
    S, M = 3, 50
    u = _points(model, S, M, gen)
    psi = model.to_free(_theta(model, S, gen))
    val, jac = model.jac_log_phi(u, psi)
    plain = copy.copy(model)
    plain.linear = False
    val_ad, jac_ad = UnnormalisedModel.jac_log_phi(plain, u, psi)
    assert jac.shape == (S, M, model.n_params)
    torch.testing.assert_close(val, val_ad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(jac, jac_ad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(val, model._log_phi_free(u, psi), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model", [m for m in all_models() if m.linear], ids=lambda m: m.name)
def test_linear_models_features(model, gen):
    """``log phi = T(u) . psi + h(u)`` for the models that declare ``linear = True``."""
    u = _points(model, 2, 40, gen)
    psi = model.to_free(_theta(model, 2, gen))
    T, h = model.features(u)
    torch.testing.assert_close(torch.einsum("smp,sp->sm", T, psi) + h, model._log_phi_free(u, psi), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model", all_models(), ids=lambda m: m.name)
def test_line_log_phi(model, gen):
    """The line-search helper (cached projections for ICA) equals re-evaluating the model."""
    u = _points(model, 3, 30, gen)
    psi = model.to_free(_theta(model, 3, gen))
    d = torch.randn(psi.shape, generator=gen, dtype=torch.float64)
    alpha = torch.tensor([0.0, 0.3, -1.7], dtype=torch.float64)
    got = model.line_log_phi(u, psi, d)(alpha)
    torch.testing.assert_close(got, model._log_phi_free(u, psi + alpha[:, None] * d), rtol=1e-12, atol=1e-12)


def test_log_phi_single_and_batched_shapes(gen):
    m = Gaussian(dim=3)
    th = m.init_params(2, gen)
    u = torch.randn(2, 7, 3, generator=gen, dtype=torch.float64)
    assert m.log_phi(u, th).shape == (2, 7)
    assert m.log_phi(u[0], th[0]).shape == (7,)
    torch.testing.assert_close(m.log_phi(u[0], th[0]), m.log_phi(u, th)[0])
    # Eq. (15) written out
    Lam = m.precision(th)
    torch.testing.assert_close(m.log_phi(u, th), -0.5 * torch.einsum("smi,sij,smj->sm", u, Lam, u))


def test_gaussian_log_prob_matches_scipy(gen):
    m = Gaussian()
    th = m.random_params(1, gen)
    u = torch.randn(20, 5, generator=gen, dtype=torch.float64)
    cov = torch.linalg.inv(m.precision(th)[0]).numpy()
    ref = stats.multivariate_normal(mean=np.zeros(5), cov=cov).logpdf(u.numpy())
    np.testing.assert_allclose(m.log_prob(u, th[0]).numpy(), ref, rtol=1e-10)


def test_ica_log_prob_matches_scipy(gen):
    """Normalised ICA density: ``|det B| prod_j Laplace(b_j . u; scale 1/sqrt 2)``."""
    m = ICA()
    th = m.random_params(1, gen)
    B = th.reshape(4, 4).numpy()
    u = torch.randn(20, 4, generator=gen, dtype=torch.float64)
    ref = stats.laplace(scale=1 / math.sqrt(2)).logpdf(u.numpy() @ B.T).sum(-1) + np.log(abs(np.linalg.det(B)))
    np.testing.assert_allclose(m.log_prob(u, th[0]).numpy(), ref, rtol=1e-10)


def test_lognormal_log_prob_matches_scipy(gen):
    m = LogNormal()
    theta = torch.tensor([2.5, 0.0], dtype=torch.float64)
    u = torch.rand(20, 1, generator=gen, dtype=torch.float64) * 5 + 1e-3
    ref = stats.lognorm(s=1 / math.sqrt(2.5)).logpdf(u[:, 0].numpy())
    np.testing.assert_allclose(m.log_prob(u, theta).numpy(), ref, rtol=1e-10)
    # Eq. (62): the constant C on the non-positive axis
    v = torch.tensor([[-1.0], [0.0], [2.0]], dtype=torch.float64)
    got = m.log_phi(v, torch.tensor([2.5, -3.0], dtype=torch.float64))
    torch.testing.assert_close(got, torch.tensor([-3.0, -3.0, -1.25 * math.log(2.0) ** 2 - math.log(2.0)], dtype=torch.float64))


def test_bernoulli_log_phi_and_log_prob():
    m = Bernoulli()
    th = torch.tensor([0.6, 1.8], dtype=torch.float64)
    u = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    torch.testing.assert_close(m.log_phi(u, th), torch.log(th))
    torch.testing.assert_close(m.log_prob(u, th), torch.log(th / th.sum()))


@pytest.mark.parametrize("D,mu,gamma", [(5, 7.5, 1.0), (5, 5.0, 11.1), (5, 10.0, 0.44), (2, 1.0, 0.5), (3, 0.3, 2.0), (5, 0.5, 0.2)])
def test_ring_log_partition_matches_quad(D, mu, gamma):
    """``log Z`` by the package's Gauss-Legendre rule vs ``scipy.integrate.quad`` of the
    radial integral ``A_(D-1) int_0^inf r^(D-1) exp(-gamma/2 (r - mu)^2) dr``; the cases with
    small ``mu sqrt(gamma)`` check that the integral is cut at r = 0, not at -12 sigma."""
    m = Ring(dim=D, mu=mu)
    got = m.log_partition(torch.tensor([[gamma]], dtype=torch.float64)).item()
    integral, err = integrate.quad(lambda r: r ** (D - 1) * math.exp(-0.5 * gamma * (r - mu) ** 2), 0, math.inf, epsabs=0, epsrel=1e-13, limit=200)
    area = 2 * math.pi ** (D / 2) / math.gamma(D / 2)
    assert got == pytest.approx(math.log(area * integral), abs=1e-10)


def test_ring_log_partition_per_simulation_mu():
    m = Ring(mu=torch.tensor([5.0, 9.0], dtype=torch.float64))
    lz = m.log_partition(torch.tensor([[1.0], [2.0]], dtype=torch.float64))
    assert lz[0].item() == pytest.approx(Ring(mu=5.0).log_partition(torch.tensor([[1.0]])).item(), abs=1e-12)
    assert lz[1].item() == pytest.approx(Ring(mu=9.0).log_partition(torch.tensor([[2.0]])).item(), abs=1e-12)


@pytest.mark.parametrize("model", [Gaussian(dim=2), ICA(dim=2), LogNormal(), Ring(dim=2, mu=2.0)], ids=lambda m: m.name)
def test_log_prob_integrates_to_one(model, gen):
    """The normalised density integrates to one, which checks ``log_partition``.

    1-D: ``scipy.integrate.quad``. 2-D: polar coordinates, radius by 400-node Gauss-Legendre
    on [0, 40] (the densities are below e^-20 beyond), angle by the trapezoid rule on 2000
    points (periodic, so it converges fast even across ICA's kinks: the error is O(h^2) with
    h = 3e-3, i.e. about 1e-5 at worst); tolerance 1e-4."""
    th = model.random_params(1, gen)
    if model.dim == 1:
        f = lambda a: math.exp(model.log_prob(torch.tensor([[a]], dtype=torch.float64), th[0]).item())
        total, _ = integrate.quad(f, 0, math.inf, epsrel=1e-10)
        assert total == pytest.approx(1.0, abs=1e-8)
        return
    x, w = np.polynomial.legendre.leggauss(400)
    r, wr = torch.tensor(20.0 * (x + 1)), torch.tensor(20.0 * w)
    a = torch.arange(2000, dtype=torch.float64) * (2 * math.pi / 2000)
    u = torch.stack([r[:, None] * torch.cos(a), r[:, None] * torch.sin(a)], -1).reshape(-1, 2)
    dens = torch.exp(model.log_prob(u, th[0])).reshape(400, 2000)
    total = ((dens * r[:, None]).sum(1) * wr).sum().item() * (2 * math.pi / 2000)
    assert total == pytest.approx(1.0, abs=1e-4)


# ----------------------------------------------------------------------------- ground truth
def test_random_params_follow_the_authors_recipes(gen):
    S = 200
    g = Gaussian()
    cov_eig = 1.0 / torch.linalg.eigvalsh(g.precision(g.random_params(S, gen)))
    assert cov_eig.min() >= 0.1 - 1e-12 and cov_eig.max() <= 1.0 + 1e-12
    ica = ICA()
    A = torch.linalg.inv(ica.demixing(ica.random_params(S, gen)))
    assert torch.linalg.cond(A).max() <= 10.0 + 1e-9
    gam = Ring().random_params(S, gen)[:, 0]
    assert gam.min() >= 1 / 1.5**2 - 1e-12 and gam.max() <= 1 / 0.3**2 + 1e-12
    th = Bernoulli().random_params(S, gen)
    assert torch.allclose(th.sum(-1), torch.ones(S, dtype=torch.float64))
    assert th[:, 1].min() >= 0.01 and th[:, 1].max() <= 0.99
    ln = LogNormal().random_params(S, gen)
    assert ln[:, 0].min() >= 1.0 - 1e-12 and ln[:, 0].max() <= 10.0 + 1e-12 and torch.isneginf(ln[:, 1]).all()


@pytest.mark.parametrize("model", all_models(), ids=lambda m: m.name)
def test_identical_seeds_identical_draws(model, make_gen):
    a = model.sample(model.random_params(2, make_gen(5)), 30, make_gen(6))
    b = model.sample(model.random_params(2, make_gen(5)), 30, make_gen(6))
    c = model.sample(model.random_params(2, make_gen(5)), 30, make_gen(7))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert a.shape == (2, 30, model.dim)


# ----------------------------------------------------------------------------- samplers
def test_gaussian_sampler_covariance(gen):
    """Sample covariance vs ``Lambda^-1``; the standard error of a sample covariance entry of a
    zero-mean Gaussian is ``sqrt((S_ii S_jj + S_ij^2) / n)``."""
    m = Gaussian()
    th = m.random_params(3, gen)
    n = 40000
    x = m.sample(th, n, gen)
    Sig = torch.linalg.inv(m.precision(th))
    C = x.transpose(-1, -2) @ x / n
    se = torch.sqrt((Sig.diagonal(dim1=-2, dim2=-1).unsqueeze(-1) * Sig.diagonal(dim1=-2, dim2=-1).unsqueeze(-2) + Sig**2) / n)
    assert ((C - Sig).abs() / se).max() < Z
    assert (x.mean(1).abs() / torch.sqrt(Sig.diagonal(dim1=-2, dim2=-1) / n)).max() < Z


def test_ica_sampler_sources(gen):
    """``B x`` recovers the sources: independent unit-variance Laplacians.

    Checked: mean 0, variance 1, ``E|s| = 1/sqrt 2`` and the fourth moment 6 (a Gaussian
    would give 3), and zero cross-correlation; standard errors from the Laplace moments
    (Var s^2 = E s^4 - 1 = 5, Var |s| = 1/2, Var s^4 = E s^8 - 36 = 20160/16 - 36)."""
    m = ICA()
    th = m.random_params(2, gen)
    n = 60000
    s = m.sample(th, n, gen) @ m.demixing(th).transpose(-1, -2)
    r = math.sqrt(n)
    assert (s.mean(1).abs() * r).max() < Z
    assert ((s**2).mean(1) - 1).abs().max() * r / math.sqrt(5) < Z
    assert (s.abs().mean(1) - 1 / math.sqrt(2)).abs().max() * r / math.sqrt(0.5) < Z
    assert ((s**4).mean(1) - 6).abs().max() * r / math.sqrt(20160 / 16 - 36) < Z
    cross = (s[..., 0] * s[..., 1]).mean(1)
    assert cross.abs().max() * r < Z


def _ring_radial_cdf(D, mu, gamma, points):
    dens = lambda r: r ** (D - 1) * math.exp(-0.5 * gamma * (r - mu) ** 2)
    total, _ = integrate.quad(dens, 0, math.inf, epsrel=1e-12)
    return np.array([integrate.quad(dens, 0, v, epsrel=1e-10)[0] / total for v in points])


@pytest.mark.parametrize("D,mu,gamma", [(5, 6.0, 1.0), (5, 1.0, 0.6), (2, 5.0, 4.0)])
def test_ring_exact_sampler_radius_distribution(D, mu, gamma, gen):
    """The radii of ``radial="exact"`` samples follow ``r^(D-1) exp(-gamma/2 (r-mu)^2)``:
    the empirical CDF at 19 sample quantiles vs the ``scipy.integrate.quad`` CDF, each within
    5 binomial standard errors ``sqrt(F (1 - F) / n)``; and the directions are uniform
    (``E[u u^T / r^2] = I / D`` within 5 standard errors entrywise)."""
    m = Ring(dim=D, mu=mu)
    n = 20000
    x = m.sample(torch.tensor([[gamma]], dtype=torch.float64), n, gen)[0]
    r = torch.linalg.vector_norm(x, dim=-1).numpy()
    q = np.quantile(r, np.linspace(0.05, 0.95, 19))
    F = _ring_radial_cdf(D, mu, gamma, q)
    Fn = (r[:, None] <= q[None, :]).mean(0)
    assert (np.abs(Fn - F) / np.sqrt(F * (1 - F) / n)).max() < Z
    if mu * math.sqrt(gamma) < 3:
        # a sampler that drops the surface factor r^(D-1) (the authors' generator) fails this
        sd = 1 / math.sqrt(gamma)
        Ft = stats.truncnorm(-mu / sd, np.inf, loc=mu, scale=sd).cdf(q)
        assert (np.abs(Fn - Ft) / np.sqrt(Ft * (1 - Ft) / n)).max() > Z
    d = x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    M = d.unsqueeze(-1) * d.unsqueeze(-2)
    se = M.std(0) / math.sqrt(n)
    assert ((M.mean(0) - torch.eye(D, dtype=torch.float64) / D).abs() / se.clamp_min(1e-12)).max() < Z


def test_ring_authors_sampler_radius_distribution(gen):
    """``radial="authors"``: r ~ N(mu, 1/gamma) truncated below at 0.1 (KS test)."""
    mu, gamma = 1.0, 0.5
    m = Ring(mu=mu)
    x = m.sample(torch.tensor([[gamma]], dtype=torch.float64), 20000, gen, radial="authors")[0]
    r = torch.linalg.vector_norm(x, dim=-1).numpy()
    sd = 1 / math.sqrt(gamma)
    assert r.min() >= 0.1
    assert stats.kstest(r, stats.truncnorm((0.1 - mu) / sd, np.inf, loc=mu, scale=sd).cdf).pvalue > 1e-4


def test_lognormal_sampler(gen):
    """``log x ~ N(0, 1/theta)``: KS test on the standardised logs."""
    m = LogNormal()
    th = torch.tensor([[4.0, -math.inf], [1.2, -math.inf]], dtype=torch.float64)
    x = m.sample(th, 20000, gen)
    assert (x > 0).all()
    for s in range(2):
        z = torch.log(x[s, :, 0]) * math.sqrt(th[s, 0].item())
        assert stats.kstest(z.numpy(), "norm").pvalue > 1e-4


def test_bernoulli_sampler(gen):
    """The frequency of ones is ``theta_2 / (theta_1 + theta_2)`` within 5 binomial standard errors,
    also for unnormalised parameters."""
    m = Bernoulli()
    th = torch.tensor([[0.7, 0.3], [2.0, 6.0], [0.99, 0.01]], dtype=torch.float64)
    n = 50000
    x = m.sample(th, n, gen)
    assert set(x.unique().tolist()) <= {0.0, 1.0}
    p = th[:, 1] / th.sum(-1)
    assert ((x[..., 0].mean(1) - p).abs() / torch.sqrt(p * (1 - p) / n)).max() < Z


# ----------------------------------------------------------------------------- errors
def _signed_perms(D):
    for perm in itertools.permutations(range(D)):
        for signs in itertools.product([1.0, -1.0], repeat=D):
            P = torch.zeros(D, D, dtype=torch.float64)
            P[range(D), perm] = torch.tensor(signs, dtype=torch.float64)
            yield P


def test_ica_error_invariant_to_signs_and_permutations(gen):
    """Zero at the truth, unchanged by any signed permutation of the estimate's rows, and equal
    to the brute-force minimum over all ``D! 2^D`` signed permutations."""
    m = ICA(dim=3)
    B = m.random_params(1, gen)
    assert m.error(B, B).item() == 0.0
    Bhat = B + 0.3 * torch.randn(B.shape, generator=gen, dtype=torch.float64)
    e0 = m.error(Bhat, B).item()
    assert e0 > 0
    perms = list(_signed_perms(3))
    Bh = Bhat.reshape(3, 3)
    for P in perms:
        PB = (P @ Bh).reshape(1, 9)
        assert m.error(PB, B).item() == pytest.approx(e0, rel=1e-12, abs=1e-14)
        assert m.error((P @ B.reshape(3, 3)).reshape(1, 9), B).item() == pytest.approx(0.0, abs=1e-24)
    brute = min((((P @ Bh) - B.reshape(3, 3)) ** 2).sum().item() for P in perms)
    assert e0 == pytest.approx(brute, rel=1e-12)
    # far from the truth (where a greedy match can pick a row twice) the match is still optimal
    for _ in range(20):
        Bf = torch.randn(1, 9, generator=gen, dtype=torch.float64)
        brute = min((((P @ Bf.reshape(3, 3)) - B.reshape(3, 3)) ** 2).sum().item() for P in perms)
        assert m.error(Bf, B).item() == pytest.approx(brute, rel=1e-12)


def test_signed_permutation_match_returns_matched_rows(gen):
    B = ICA().random_params(2, gen).reshape(2, 4, 4)
    P = torch.tensor([[0, 0, -1, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, -1, 0, 0]], dtype=torch.float64)
    torch.testing.assert_close(signed_permutation_match(P @ B, B), B)


def test_errors_of_the_other_models():
    """Squared Euclidean error; Bernoulli after normalising (Supp. C); log-normal on theta only."""
    g = Gaussian(dim=2)
    assert g.error(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 1.0])).item() == pytest.approx(8.0)
    b = Bernoulli()
    assert b.error(torch.tensor([3.0, 1.0]), torch.tensor([0.75, 0.25])).item() == pytest.approx(0.0, abs=1e-15)
    assert b.error(torch.tensor([1.0, 1.0]), torch.tensor([0.75, 0.25])).item() == pytest.approx(2 * 0.25**2)
    ln = LogNormal()
    assert ln.error(torch.tensor([2.0, -5.0]), torch.tensor([3.0, -math.inf])).item() == pytest.approx(1.0)
    r = Ring()
    assert r.error(torch.tensor([[2.0], [3.0]]), torch.tensor([1.0])).tolist() == [1.0, 4.0]


def test_methods_per_model():
    assert Gaussian().methods == ("cnce", "nce", "mle", "sm")
    assert ICA().methods == ("cnce", "nce", "mle")
    assert Ring().methods == ("cnce", "nce", "mle", "sm")
    assert LogNormal().methods == ("cnce", "nce", "mle")
    assert Bernoulli().methods == ("cnce", "mle")


def test_get_model():
    assert isinstance(get_model("ICA", dim=3), ICA) and get_model("ica", dim=3).dim == 3
    with pytest.raises(ValueError, match=r"model must be one of .*got 'potts'"):
        get_model("potts")
