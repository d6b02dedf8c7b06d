"""The authors' minimiser (cnce.images.cg): Polak-Ribiere conjugate gradients with Rasmussen's
line search, checked against scipy's CG and known minima."""
import numpy as np
import pytest
import scipy.optimize as so
import torch

from cnce.images.cg import CGSettings, ConjugateGradients, minimize_cg


def _fg_numpy(f, g):
    return lambda x: (float(f(x.numpy())), torch.from_numpy(g(x.numpy())))


def _quadratic(D=12, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((D, D)))[0]
    A = Q @ np.diag(np.linspace(1.0, 20.0, D)) @ Q.T  # condition number 20
    b = rng.standard_normal(D)
    return A, b, np.linalg.solve(A, b)


def test_quadratic_reaches_the_known_minimum_like_scipy():
    A, b, x_star = _quadratic()
    f = lambda x: 0.5 * x @ A @ x - b @ x  # noqa: E731
    g = lambda x: A @ x - b  # noqa: E731
    r = minimize_cg(_fg_numpy(f, g), torch.zeros(len(b), dtype=torch.float64), line_searches=200)
    sp = so.minimize(f, np.zeros(len(b)), jac=g, method="CG", options=dict(gtol=1e-12))
    assert np.abs(r.x.numpy() - x_star).max() < 1e-7
    assert np.abs(sp.x - x_star).max() < 1e-5
    assert abs(r.f - f(x_star)) < 1e-12
    # near-exact line searches on a quadratic: about one search per dimension, a few evaluations each
    assert r.line_searches <= 4 * len(b) and r.evaluations <= 4 * r.line_searches + 1


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [-1.2, 1.0, -0.5, 0.8, 1.5, 0.3]])
def test_rosenbrock_reaches_its_minimum_like_scipy(x0):
    x0 = np.array(x0)
    r = minimize_cg(_fg_numpy(so.rosen, so.rosen_der), torch.tensor(x0), line_searches=2000)
    sp = so.minimize(so.rosen, x0, jac=so.rosen_der, method="CG", options=dict(gtol=1e-10))
    assert np.abs(r.x.numpy() - 1.0).max() < 1e-6  # the known minimum (1, ..., 1)
    assert np.abs(sp.x - 1.0).max() < 1e-4
    assert r.f < 1e-12 and r.f <= sp.fun + 1e-12


def test_counts_line_searches_and_evaluations_as_minimize_does():
    A, b, _ = _quadratic(D=30, seed=1)
    calls = []

    def fg(x):
        calls.append(1)
        x = x.numpy()
        return float(0.5 * x @ A @ x - b @ x), torch.from_numpy(A @ x - b)

    r = minimize_cg(fg, torch.zeros(30, dtype=torch.float64))  # the authors' budget: 10 line searches
    assert r.line_searches == 10 and r.evaluations == len(calls)  # the first evaluation included
    assert len(r.f_history) == 11 and all(a > b for a, b in zip(r.f_history, r.f_history[1:]))
    # the first trial step is 1 / (1 + |g|^2)
    seen = []
    minimize_cg(lambda x: (seen.append(x.clone()), fg(x))[1], torch.zeros(30, dtype=torch.float64), line_searches=1)
    g0 = -b
    step = (seen[1] - seen[0]).norm() / torch.from_numpy(g0).norm()
    assert float(step) == pytest.approx(1.0 / (1.0 + g0 @ g0), rel=1e-12)


def test_each_line_search_stops_at_max_evaluations():
    # a function whose slope never satisfies the curvature condition: a linear descent
    r = minimize_cg(lambda x: (float(-x.sum()), -torch.ones_like(x)), torch.zeros(3, dtype=torch.float64), line_searches=3)
    assert r.evaluations <= 1 + 3 * CGSettings().MAX


def test_non_finite_trial_points_halve_the_step():
    def fg(x):  # -log(1 - x) + 50 (x - 0.9)^2: not defined at x >= 1, where it returns NaN
        v = float(x[0])
        if v >= 1:
            return float("nan"), torch.full_like(x, float("nan"))
        return -np.log(1 - v) + 50 * (v - 0.9) ** 2, torch.tensor([1 / (1 - v) + 100 * (v - 0.9)], dtype=x.dtype)

    r = minimize_cg(fg, torch.tensor([0.0], dtype=torch.float64), line_searches=50)
    assert np.isfinite(r.f) and float(r.x[0]) < 1


def test_torch_wrapper_trains_parameters_in_place():
    torch.manual_seed(0)
    X = torch.randn(200, 5, dtype=torch.float64)
    w_true = torch.arange(1.0, 6.0, dtype=torch.float64)
    y = X @ w_true
    w = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    c = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = ConjugateGradients([w, c], CGSettings(line_searches=50))

    def closure():
        w.grad = c.grad = None
        loss = ((X @ w + c - y) ** 2).mean()
        loss.backward()
        return loss

    f = opt.step(closure)
    assert f < 1e-12 and torch.allclose(w, w_true, atol=1e-6) and abs(c.item()) < 1e-6
    assert opt.last.line_searches <= 50 and opt.last.evaluations >= opt.last.line_searches


def test_bad_settings_and_inputs_are_refused():
    with pytest.raises(ValueError, match="line_searches"):
        CGSettings(line_searches=0)
    with pytest.raises(ValueError, match="RHO"):
        CGSettings(SIG=0.01, RHO=0.05)
    with pytest.raises(ValueError, match="x0"):
        minimize_cg(lambda x: (0.0, x), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="not finite"):
        minimize_cg(lambda x: (float("nan"), x), torch.zeros(2))
    with pytest.raises(ValueError, match="params"):
        ConjugateGradients([])
