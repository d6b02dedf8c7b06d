"""Standard errors of ``cnce.fit(..., cov=True)`` (:mod:`cnce.asymptotics`): known answers.

The coverage study over simulations is a committed result (``python -m companion.coverage``,
``data/results/paper/coverage.csv``); these tests check the pieces on small cases in seconds."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import cnce
from cnce import asymptotics, losses
from cnce.models import ICA, Bernoulli, Gaussian, LogNormal
from cnce.noise import NCEGaussianNoise, default_noise

pytestmark = pytest.mark.fast


def _data(model, S=3, N=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    theta = model.random_params(S, generator=g)
    return theta, model.sample(theta, N, generator=g)


def test_gaussian_mle_covariance_is_the_closed_form_inverse_fisher():
    """For the Gaussian, -log p is linear in theta but for log Z = -1/2 log det Lambda + const, so
    the observed information is the Fisher information I_ab = 1/2 tr(Sigma E_a Sigma E_b)."""
    m = Gaussian(3)
    _, x = _data(m, S=2, N=300)
    r = cnce.fit(m, x, method="mle", cov=True)
    i, j = m._iu
    E = torch.zeros(m.n_params, 3, 3, dtype=torch.float64)
    for p, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        E[p, a, b] = E[p, b, a] = 1.0
    for s in range(2):
        Sigma = torch.linalg.inv(m.precision(r.theta[s:s + 1])[0])
        fisher = 0.5 * torch.einsum("ij,ajk,kl,bli->ab", Sigma, E, Sigma, E)
        expected = torch.linalg.inv(fisher) / x.shape[1]
        assert torch.allclose(r.cov[s], expected, rtol=1e-10, atol=0)
    assert r.cov_reason == ["", ""]
    assert torch.allclose(r.stderr, torch.diagonal(r.cov, dim1=-2, dim2=-1).sqrt())


@pytest.mark.parametrize("method", ["cnce", "nce"])
def test_contrastive_hessian_and_gradients_match_autograd_of_the_loss(method):
    """A (written from the logistic weights and the Jacobians) is the autograd Hessian of the
    loss of Eq. (8) / of NCE, and the per-tuple gradients average to its gradient."""
    m = Gaussian(2)
    theta, x = _data(m, S=2, N=150)
    kappa = 4
    g = torch.Generator().manual_seed(5)
    base = torch.randn(2, 150, kappa, 2, generator=g, dtype=torch.float64)
    noise = default_noise(m)
    eps = torch.tensor([0.7, 1.3], dtype=torch.float64)
    c = torch.tensor([-1.0, -2.0], dtype=torch.float64)
    psi = torch.cat([theta, c.unsqueeze(-1)], -1) if method == "nce" else theta
    gt, A = asymptotics._contrastive(m, x, psi, method, kappa=kappa, eps=eps, noise=noise, noise_base=base)
    if method == "cnce":
        y = noise.apply(x, base, eps).reshape(2, 150 * kappa, 2)

        def J(q):
            return losses.cnce_loss(m.log_phi(x, q), m.log_phi(y, q).reshape(2, 150, kappa))
    else:
        pn = NCEGaussianNoise.fit(x)
        y = pn.apply(base.reshape(2, 150 * kappa, 2))

        def J(q):
            th, cc = q[:, :-1], q[:, -1:]
            return losses.nce_loss(m.log_phi(x, th) + cc - pn.log_prob(x) - math.log(kappa),
                                   m.log_phi(y, th) + cc - pn.log_prob(y) - math.log(kappa))
    assert torch.allclose(A, asymptotics.hessian(J, psi), rtol=1e-10, atol=1e-12)
    assert torch.allclose(gt.mean(1), asymptotics._grad(J, psi), rtol=1e-10, atol=1e-12)


def test_no_standard_error_where_the_asymptotics_do_not_hold():
    # a fit stopped after one iteration is not at a minimum
    m = Gaussian(2)
    _, x = _data(m, S=2, N=200)
    r = cnce.fit(m, x, method="cnce", max_iter=1, cov=True)
    assert not bool(r.converged.any())
    assert torch.isnan(r.stderr).all() and all("did not converge" in q for q in r.cov_reason)
    # the log-normal's C has its ideal value at -inf (a boundary): theta's error is given, C's is not
    ln = LogNormal()
    _, x = _data(ln, S=2, N=500)
    for method in ("cnce", "mle"):
        r = cnce.fit(ln, x, method=method, cov=True)
        assert torch.isfinite(r.stderr[:, 0]).all() and torch.isnan(r.stderr[:, 1]).all(), method
        assert "boundary" in r.info["cov_boundary"]
    # the Bernoulli model is identified up to a common factor: a flat direction, no number
    b = Bernoulli()
    _, x = _data(b, S=2, N=300)
    r = cnce.fit(b, x, method="cnce", cov=True)
    assert torch.isnan(r.stderr).all() and all("not positive definite" in q for q in r.cov_reason)


def test_cov_is_off_by_default_and_must_be_a_bool():
    m = Gaussian(2)
    _, x = _data(m, S=1, N=100)
    r = cnce.fit(m, x[0], method="mle")
    assert r.cov is None and r.stderr is None and r.cov_reason is None
    r = cnce.fit(m, x[0], method="mle", cov=True)  # one (N, D) dataset: no simulation axis
    assert r.cov.shape == (3, 3) and r.stderr.shape == (3,) and r.cov_reason == ""
    with pytest.raises(ValueError, match="cov must be True or False; got 'yes'"):
        cnce.fit(m, x[0], method="mle", cov="yes")


def test_wald_covers_known_answers_and_aligns_ica():
    m = Gaussian(2)
    truth = torch.tensor([[2.0, 0.5, 1.0]], dtype=torch.float64)
    se = torch.tensor([[0.1, 0.1, 0.1]], dtype=torch.float64)
    hat = truth + torch.tensor([[0.1, -0.19, 0.3]], dtype=torch.float64)
    assert asymptotics.wald_covers(m, hat, se, truth).tolist() == [[1.0, 1.0, 0.0]]
    assert torch.isnan(asymptotics.wald_covers(m, hat, torch.full_like(se, float("nan")), truth)).all()
    # ICA: an estimate whose rows are swapped and one re-signed is the truth, covered, and the
    # standard errors follow their rows
    ica = ICA(2)
    B = torch.tensor([[1.0, 0.2, -0.3, 2.0]], dtype=torch.float64)
    B_hat = torch.tensor([[0.3, -2.0, 1.0, 0.2]], dtype=torch.float64) + 0.01
    se = torch.tensor([[0.001, 0.001, 1.0, 1.0]], dtype=torch.float64)  # only the first row of B_hat is tight
    hits = asymptotics.wald_covers(ica, B_hat, se, B)
    assert hits.tolist() == [[1.0, 1.0, 0.0, 0.0]]  # B_hat's loose row is B's first row; its tight row is B's second


def test_median_sq_error_known_answer():
    """For one parameter the median of sigma^2 chi^2_1 is sigma^2 times 0.45494 (chi^2_1's median)."""
    cov = torch.tensor([[[4.0]], [[float("nan")]]], dtype=torch.float64)
    med = asymptotics.median_sq_error(cov, n_draws=200000, generator=torch.Generator().manual_seed(0))
    assert abs(float(med[0]) / 4.0 - 0.454936) < 0.01
    assert math.isnan(float(med[1]))


def test_expected_curvature_agrees_with_the_observed_hessian_on_ica():
    """ICA's loss is kinked in B: the expected form of A (first derivatives only; the curvature
    term averages to zero at the truth) and the central differences of the exact gradient (the
    observed form) estimate the same matrix. At the truth, N = 20000: within 15 % in the
    Frobenius norm (the differences' own noise is about (N h)^(-1/2) = 4 %); maximum likelihood's
    expected form is the gradients' covariance B (the information equality)."""
    m = ICA(2)
    theta, x = _data(m, S=2, N=20000, seed=3)
    kappa = 4
    base = torch.randn(2, 20000, kappa, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    eps = torch.tensor([0.5, 0.5], dtype=torch.float64)
    kw = dict(kappa=kappa, eps=eps, noise=default_noise(m), noise_base=base)
    exp_ = asymptotics.sandwich(m, x, theta, "cnce", curvature="expected", **kw)
    obs = asymptotics.sandwich(m, x, theta, "cnce", curvature="observed", **kw)
    rel = torch.linalg.matrix_norm(exp_.A - obs.A) / torch.linalg.matrix_norm(obs.A)
    assert (rel < 0.15).all(), rel
    assert torch.equal(asymptotics.sandwich(m, x, theta, "cnce", **kw).cov, exp_.cov)  # "auto" on a kinked model
    mle = asymptotics.sandwich(m, x, theta, "mle", curvature="expected")
    assert torch.allclose(mle.A, mle.B) and torch.allclose(mle.cov, torch.linalg.inv(mle.B) / 20000)
    with pytest.raises(ValueError, match="curvature must be 'auto', 'observed' or 'expected'; got 'fd'"):
        asymptotics.sandwich(m, x, theta, "mle", curvature="fd")


def _levels_frame():
    import pandas as pd

    rows = []
    for method, kappa, scale in (("mle", -1, 1.0), ("cnce", 2, 4.0), ("nce", 2, 2.0), ("cnce", 6, 2.0), ("nce", 6, 1.5)):
        for N in (100, 1000):
            rows.append(dict(study="gaussian", method=method, kappa=kappa, N=N, pred_median=scale / N,
                             sim_median=1.1 * scale / N))
    return pd.DataFrame(rows)


def test_theory_level_tables_known_answers():
    from companion.theory_levels import agreement, ratio_table

    lev = _levels_frame()
    a = agreement(lev, "gaussian")
    assert list(a.index) == ["MLE", "CNCE, \u03ba = 2", "CNCE, \u03ba = 6", "NCE, \u03ba = 2", "NCE, \u03ba = 6"]
    assert list(a.columns) == [100, 1000] and abs(a.to_numpy() - 1.1).max() < 1e-12
    r = ratio_table(lev, "gaussian", N=[1000])
    assert r.kappa.tolist() == [2, 6] and r.predicted.round(12).tolist() == [0.5, 0.75]
    assert r.simulated.round(12).tolist() == [0.5, 0.75]


def test_predicted_lines_draw_one_dotted_line_per_drawn_curve():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from cnce import plotting

    lev = _levels_frame()
    fig, ax = plt.subplots()
    drawn = pd.DataFrame({"method": ["mle", "cnce"], "kappa": [float("nan"), 2.0]})  # NCE not drawn: no line
    plotting.predicted_lines(ax, lev, drawn)
    dotted = [ln for ln in ax.lines if len(ln.get_xdata())]  # the legend's entry has no data
    assert len(dotted) == 2 and ax.get_legend_handles_labels()[1] == [plotting.PREDICTED_LABEL]
    assert sorted(round(float(ln.get_ydata()[1]), 12) for ln in dotted) == sorted(
        round(float(np.log10(v / 1000)), 12) for v in (4.0, 1.0))  # CNCE kappa 2 and MLE at N = 1000
    fig2, ax2 = plt.subplots()
    sweep = pd.DataFrame({"method": ["cnce", "cnce", "nce", "nce"], "kappa": [2.0, 6.0, 2.0, 6.0]})
    plotting.predicted_lines(ax2, lev[lev.N == 1000], sweep, x="kappa")
    lines = [ln for ln in ax2.lines if len(ln.get_xdata())]
    assert len(lines) == 2 and lines[0].get_xdata().tolist() == [2.0, 6.0]
    plt.close(fig)
    plt.close(fig2)
