"""Unit tests of the loss functions (``cnce.losses``) and of the Gauss-Newton problems in
``cnce.optim`` that :func:`cnce.fit` minimises.

Gradients are checked against central finite differences with ``torch.autograd.gradcheck``
(float64, step 1e-6, the default tolerances atol=1e-5, rtol=1e-3: the finite-difference error
is O(step^2) times third derivatives plus O(1e-16/step) round-off, far below them).
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from cnce.losses import LOG4, cnce_G, cnce_loss, cnce_loss_from_G, mle_loss, nce_loss, score_matching_loss
from cnce.models import ICA, Bernoulli, Gaussian, LogNormal, Ring
from cnce.noise import BernoulliFlipNoise, GaussianNoise, MultiplicativeLogNormalNoise
from cnce.optim import AutogradObjective, LinearLogistic, NonlinearLogistic


def _models_and_noise():
    return [
        (Gaussian(), GaussianNoise()),
        (ICA(), GaussianNoise()),
        (Ring(mu=6.0), GaussianNoise()),
        (LogNormal(), GaussianNoise()),
        (LogNormal(), MultiplicativeLogNormalNoise()),
        (Bernoulli(), BernoulliFlipNoise()),
    ]


def _ids(case):
    return f"{case[0].name}-{type(case[1]).__name__}"


def _data_and_theta(model, S, N, gen):
    truth = model.random_params(S, gen)
    x = model.sample(truth, N, gen)
    theta = model.init_params(S, gen)
    if isinstance(model, LogNormal):
        theta = theta.clone()
        theta[:, 1] = -2.0 + torch.randn(S, generator=gen, dtype=torch.float64)
    return x, theta


def _cnce(model, noise, x, y, theta, eps):
    S, N, K, D = y.shape
    lpx = model.log_phi(x, theta)
    lpy = model.log_phi(y.reshape(S, N * K, D), theta).reshape(S, N, K)
    return cnce_loss(lpx, lpy, noise.log_ratio(x, y, eps))


# ----------------------------------------------------------------------------- CNCE at eps = 0
@pytest.mark.parametrize("case", _models_and_noise(), ids=_ids)
def test_cnce_loss_is_2log2_at_eps_zero(case, gen):
    """J_N = 2 log 2 at eps = 0 for every model and noise, at several random theta (Sec. 2)."""
    model, noise = case
    S, N, K = 4, 50, 3
    x, theta = _data_and_theta(model, S, N, gen)
    eps = torch.zeros(S, dtype=torch.float64)
    y = noise.sample(x, K, eps, generator=gen)
    torch.testing.assert_close(y, x.unsqueeze(-2).expand_as(y))
    J = _cnce(model, noise, x, y, theta, eps)
    torch.testing.assert_close(J, torch.full((S,), LOG4, dtype=torch.float64), rtol=0, atol=1e-14)
    # ... and not at eps > 0 (the check can fail)
    J1 = _cnce(model, noise, x, noise.sample(x, K, 0.5 * torch.ones(S, dtype=torch.float64), generator=gen), theta, 0.5 * torch.ones(S, dtype=torch.float64))
    assert ((J1 - LOG4).abs() > 1e-3).all()


def test_cnce_loss_formula_and_stability():
    """Eq. (8) written out, and no overflow for |G| up to 1e4 (softplus, no clipping)."""
    G = torch.tensor([[[0.3, -1.2], [2.0, 0.0]]], dtype=torch.float64)
    ref = 2.0 / 4 * torch.log1p(torch.exp(-G)).sum()
    torch.testing.assert_close(cnce_loss_from_G(G), ref.reshape(1))
    big = torch.tensor([[[1e4, -1e4]]], dtype=torch.float64)
    torch.testing.assert_close(cnce_loss_from_G(big), torch.tensor([1e4], dtype=torch.float64))
    lpx = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    lpy = torch.tensor([[[0.5, 3.0], [2.0, -1.0]]], dtype=torch.float64)
    lr = torch.tensor([[[0.1, 0.2], [0.3, 0.4]]], dtype=torch.float64)
    torch.testing.assert_close(cnce_G(lpx, lpy, lr), torch.tensor([[[0.6, -1.8], [0.3, 3.4]]], dtype=torch.float64))


def test_nce_loss_formula():
    Gx = torch.tensor([[0.5, -0.2]], dtype=torch.float64)
    Gy = torch.tensor([[1.0, -3.0, 0.0, 2.0]], dtype=torch.float64)
    ref = (torch.log1p(torch.exp(-Gx)).sum() + torch.log1p(torch.exp(Gy)).sum()) / 2
    torch.testing.assert_close(nce_loss(Gx, Gy), ref.reshape(1))


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("case", _models_and_noise(), ids=_ids)
def test_cnce_loss_gradient_matches_finite_differences(case, gen):
    model, noise = case
    S, N, K = 2, 15, 2
    x, theta = _data_and_theta(model, S, N, gen)
    eps = torch.full((S,), 0.4 if model.discrete else 0.7, dtype=torch.float64)
    y = noise.sample(x, K, eps, generator=gen)
    psi = model.to_free(theta).requires_grad_(True)
    f = lambda p: _cnce(model, noise, x, y, model.from_free(p), eps)
    assert torch.autograd.gradcheck(f, (psi,), eps=1e-6)


@pytest.mark.parametrize("model", [Gaussian(), ICA(), Ring(mu=6.0), LogNormal()], ids=lambda m: m.name)
def test_nce_loss_gradient_matches_finite_differences(model, gen):
    """NCE: G(u) = log phi(u; theta) + c - log p_n(u) - log nu, gradient in (theta, c)."""
    S, N, K = 2, 15, 3
    x, theta = _data_and_theta(model, S, N, gen)
    y = 2.0 * torch.randn(S, N * K, model.dim, generator=gen, dtype=torch.float64)
    lpn = lambda u: -0.5 * (u**2).sum(-1) / 4.0
    P = model.n_params
    psi = torch.cat([theta, torch.full((S, 1), -1.0, dtype=torch.float64)], -1).requires_grad_(True)

    def f(p):
        th, c = p[:, :P], p[:, P:]
        return nce_loss(model.log_phi(x, th) + c - lpn(x) - math.log(K), model.log_phi(y, th) + c - lpn(y) - math.log(K))

    assert torch.autograd.gradcheck(f, (psi,), eps=1e-6)


@pytest.mark.parametrize("model", [Gaussian(dim=3), Ring(dim=3, mu=4.0)], ids=lambda m: m.name)
def test_score_matching_loss_gradient_matches_finite_differences(model, gen):
    x, theta = _data_and_theta(model, 2, 20, gen)
    th = theta.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: score_matching_loss(model.log_phi, x, t), (th,), eps=1e-6)


@pytest.mark.parametrize("model", [Gaussian(dim=3), ICA(dim=3), Ring(dim=3, mu=4.0), LogNormal(), Bernoulli()], ids=lambda m: m.name)
def test_mle_loss_gradient_matches_finite_differences(model, gen):
    """Includes d log Z / d theta (the ring's by differentiating through the quadrature)."""
    x, theta = _data_and_theta(model, 2, 20, gen)
    psi = model.to_free(theta).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda p: mle_loss(model.log_prob, x, model.from_free(p)), (psi,), eps=1e-6)


def test_score_matching_loss_gaussian_closed_form(gen):
    """f = -x^T L x / 2: tr H = -tr L and grad f = -L x, so J_SM = -tr L + mean ||L x||^2 / 2."""
    m = Gaussian(dim=4)
    x, theta = _data_and_theta(m, 3, 100, gen)
    L = m.precision(theta)
    ref = -L.diagonal(dim1=-2, dim2=-1).sum(-1) + 0.5 * ((x @ L) ** 2).sum(-1).mean(-1)
    torch.testing.assert_close(score_matching_loss(m.log_phi, x, theta), ref)


# ----------------------------------------------------------------------------- Gauss-Newton problems
@pytest.mark.parametrize("feature_dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_linear_logistic_gradient_and_hessian_match_autograd(feature_dtype, gen):
    """For a margin linear in psi the Gauss-Newton matrix is the exact Hessian.

    With float64 features they agree to round-off (1e-10). With float32 storage (the fast
    path on a GPU, ``FitOptions.feature_dtype``) the gradient and Hessian carry float32
    rounding: relative agreement to 1e-5 (float32 epsilon 6e-8 times the 40-term sums'
    cancellation) is required there."""
    S, n, P = 3, 40, 5
    F_ = torch.randn(S, n, P, generator=gen, dtype=torch.float64)
    b = torch.randn(S, n, generator=gen, dtype=torch.float64)
    kw = {} if feature_dtype is None else {"feature_dtype": feature_dtype}
    prob = LinearLogistic(F_, b, 0.05, **kw)
    psi = torch.randn(S, P, generator=gen, dtype=torch.float64)
    loss, g, H = prob.full(psi)
    exact = 0.05 * F.softplus(-(torch.einsum("snp,sp->sn", F_, psi) + b)).sum(-1)
    loss_ad, g_ad, H_ad = AutogradObjective(lambda p: 0.05 * F.softplus(-(torch.einsum("snp,sp->sn", F_, p) + b)).sum(-1)).full(psi)
    tol = dict(rtol=1e-10, atol=1e-12) if feature_dtype is torch.float64 else dict(rtol=1e-5, atol=1e-6)
    assert loss.dtype == g.dtype == H.dtype == torch.float64
    torch.testing.assert_close(loss, exact, **tol)
    torch.testing.assert_close(prob.loss(psi), exact, **tol)
    torch.testing.assert_close(g, g_ad, **tol)
    torch.testing.assert_close(H, H_ad, **tol)
    d = torch.randn(S, P, generator=gen, dtype=torch.float64)
    alpha = torch.tensor([0.0, 0.5, 2.0], dtype=torch.float64)
    torch.testing.assert_close(prob.line(psi, d)(alpha), prob.loss(psi + alpha[:, None] * d), **tol)


def test_nonlinear_logistic_ica_margin_matches_autograd(gen):
    """CNCE's ICA problem as :func:`cnce.fit` builds it: the gradient equals autograd's, and
    the Gauss-Newton matrix equals autograd's Hessian (the margin is piecewise linear in B,
    so its second derivative vanishes almost everywhere)."""
    m = ICA()
    S, N, K = 2, 30, 2
    x, theta = _data_and_theta(m, S, N, gen)
    yf = (x.unsqueeze(2) + 0.8 * torch.randn(S, N, K, 4, generator=gen, dtype=torch.float64)).reshape(S, N * K, 4)

    def margin_fn(psi, jac):
        lpx, Jx = m.jac_log_phi(x, psi)
        lpy, Jy = m.jac_log_phi(yf, psi)
        mm = (lpx.unsqueeze(2) - lpy.reshape(S, N, K)).reshape(S, N * K)
        J = (Jx.unsqueeze(2) - Jy.reshape(S, N, K, 16)).reshape(S, N * K, 16)
        return mm, (J if jac else None)

    prob = NonlinearLogistic(margin_fn, 2.0 / (N * K))
    loss, g, H = prob.full(theta)
    loss_ad, g_ad, H_ad = AutogradObjective(prob.loss).full(theta)
    torch.testing.assert_close(loss, loss_ad)
    torch.testing.assert_close(g, g_ad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(H, H_ad, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- score matching limit
def _pair_values(model, x, theta, xi, eps):
    """Per-pair ``(J - 2 log 2) / eps^2`` with the antithetic noise pair ``y = x +- eps xi``:
    the loss of Eq. (8) with kappa = 2 evaluated per data point (a batch of N one-point sets)."""
    n, D = x.shape
    lpx = model.log_phi(x, theta).reshape(n, 1)
    y = torch.stack([x + eps * xi, x - eps * xi], 1)
    lpy = model.log_phi(y.reshape(2 * n, D), theta).reshape(n, 1, 2)
    return (cnce_loss(lpx, lpy) - LOG4) / eps**2


def test_score_matching_limit_gaussian(gen):
    """Theorem (connection to score matching), Gaussian model, with antithetic pairs (xi, -xi).

    The O(eps) term of J cancels within each pair, and for the quadratic f the pair value is
    ``s = xi^T H xi / 2 + (grad f . xi)^2 / 4 + O(eps^2)`` (the cubic term of softplus vanishes
    by symmetry). So (1) ``(J - 2 log 2)/eps^2 - mean(s)`` shrinks 4-fold per halving of eps
    (checked between 3 and 5 for three halvings); (2) ``mean(s)`` estimates
    ``1/2 E[tr H + 1/2 ||grad f||^2]``, which has the closed form
    ``(-tr L + tr(L Sigma L) / 2) / 2`` (data covariance Sigma, model precision L): they agree
    within 5 Monte Carlo standard errors (std of s / sqrt n); and (3) given the data, the
    expectation over xi is half the package's score-matching loss on the same data.
    The model is evaluated at a theta other than the truth, where the bracket is not minimal.
    """
    m = Gaussian()
    n = 20000
    Sig_theta, theta = m.random_params(1, gen), m.init_params(1, gen)[0]
    x = m.sample(Sig_theta, n, gen)[0]
    xi = torch.randn(n, 5, generator=gen, dtype=torch.float64)
    L = m.precision(theta)[0]
    g = -x @ L
    s = (xi @ -L * xi).sum(-1) / 2 + (g * xi).sum(-1) ** 2 / 4
    gaps = [(_pair_values(m, x, theta, xi, e).mean() - s.mean()).abs().item() for e in (0.04, 0.02, 0.01, 0.005)]
    for a, b in zip(gaps, gaps[1:]):
        assert 3.0 < a / b < 5.0, gaps
    assert gaps[-1] < 1e-3 * s.mean().abs().item()
    Sigma = torch.linalg.inv(m.precision(Sig_theta)[0])
    expected = 0.5 * (-torch.trace(L) + 0.5 * torch.trace(L @ Sigma @ L))
    se = s.std() / math.sqrt(n)
    assert (s.mean() - expected).abs() < 5 * se
    sm = score_matching_loss(m.log_phi, x.unsqueeze(0), theta.unsqueeze(0))[0]
    assert (s.mean() - 0.5 * sm).abs() < 5 * se
    # a target without the tr H term would be rejected by many standard errors
    assert (0.5 * torch.trace(L)).abs() > 50 * se


def test_score_matching_limit_ica(gen):
    """Theorem (connection to score matching), ICA model, with antithetic pairs (xi, -xi).

    f = -sqrt 2 sum_j |b_j . u| is not twice differentiable: H = 0 off the kinks and the kinks
    carry tr H as a delta. Integration by parts gives ``E[tr H] = -E[grad log p_d . grad f]``,
    computable with data from the ICA model (known ``grad log p_d``). Per data point the
    target is ``t = (-grad log p_d . grad f + ||grad f||^2 / 2) / 2`` and we compare
    ``d(eps) = mean(pair value - t)`` on the same points.

    The model is evaluated at a random demixing matrix with unit-norm rows (not the truth),
    so that eps is on the scale of the projections ``b_j . u``.

    A pair crosses a kink with probability O(eps), and such crossings leave an O(eps)
    relative bias (measured on six seeds: d about -0.1 to -0.26 at eps = 0.1, about half of
    that at 0.05, for targets of 0.4 to 2.6). The test therefore (1) checks that |d| shrinks
    as eps halves, and (2) removes the O(eps) term by Richardson extrapolation per point,
    ``2 d(eps/2) - d(eps)`` at eps = 0.05, which must vanish within 5 Monte Carlo standard
    errors (std over points / sqrt n, about 0.025 at n = 4e5) plus 0.05 for the remaining
    O(eps^2) term (the extrapolation from eps = 0.1 leaves at most 0.08 on those seeds, so
    about 0.02 at 0.05). The tr H part of the target is about -2, some ten tolerances: a
    limit without it (or with its sign flipped) fails.
    """
    m = ICA()
    n = 400000
    truth, theta = m.random_params(1, gen), m.random_params(1, gen)[0]
    theta = (theta.reshape(4, 4) / theta.reshape(4, 4).norm(dim=1, keepdim=True)).reshape(16)
    x = m.sample(truth, n, gen)[0]
    xi = torch.randn(n, 4, generator=gen, dtype=torch.float64)
    B, Bs = theta.reshape(4, 4), truth.reshape(4, 4)
    grad_f = -math.sqrt(2) * torch.sign(x @ B.T) @ B
    grad_lpd = -math.sqrt(2) * torch.sign(x @ Bs.T) @ Bs
    tr_h = -(grad_lpd * grad_f).sum(-1)
    t = 0.5 * (tr_h + 0.5 * (grad_f**2).sum(-1))
    d = {e: _pair_values(m, x, theta, xi, e) - t for e in (0.1, 0.05, 0.025)}
    means = [d[e].mean().abs().item() for e in (0.1, 0.05, 0.025)]
    assert means[0] > means[1] > means[2], means
    r = 2 * d[0.025] - d[0.05]
    se = r.std().item() / math.sqrt(n)
    assert abs(r.mean().item()) < 5 * se + 0.05, (r.mean().item(), se)
    assert abs(0.5 * tr_h.mean().item()) > 8 * (5 * se + 0.05)
