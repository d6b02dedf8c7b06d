"""The fused CPU kernels (cnce._fused) against the torch path: same problem, same answers."""
import math

import numpy as np
import pytest
import torch

import cnce
from cnce import _fused
from cnce.models import ICA, Gaussian, LogNormal, Ring
from cnce.noise import draw_base

pytestmark = pytest.mark.skipif(not _fused.available(), reason="numba not installed")


def test_logistic_block_matches_numpy():
    rng = np.random.default_rng(0)
    m = np.concatenate([rng.normal(0, 8, 20000), [0.0, 1e-300, -1e-300, 1e-8, -1e-8, 39.9, -39.9, 45.0, -45.0]])
    sp, w = np.empty_like(m), np.empty_like(m)
    _fused._logistic_block(m, sp, w, m.size)
    ref_sp = np.logaddexp(0.0, -m)
    with np.errstate(over="ignore"):
        ref_w = 1.0 / (1.0 + np.exp(m))
    inside = np.abs(m) < 40
    assert np.max(np.abs(sp - ref_sp)[inside] / ref_sp[inside]) < 2e-15
    assert np.max(np.abs(w - ref_w)[inside] / ref_w[inside]) < 2e-15
    # beyond |m| = 40 the clipped terms are off by less than exp(-40) in absolute value
    out = ~inside
    assert np.all(np.abs(sp - ref_sp)[out] <= np.maximum(5e-18, 2e-15 * ref_sp[out]))
    assert np.max(np.abs(w - ref_w)[out]) < 5e-18
    assert abs(sp[m.size - 9] - math.log(2.0)) <= 2.3e-16 and w[m.size - 9] == 0.5


def _problem(model, S, N, K, seed):
    g = torch.Generator().manual_seed(seed)
    th = model.random_params(S, g)
    th0 = model.init_params(S, g)
    return th, th0, model.sample(th, N, g), draw_base(model, S, N, K, g)


@pytest.mark.parametrize("N", [300, 4000])
def test_gaussian_fused_equals_torch(N):
    model = Gaussian()
    th, th0, x, base = _problem(model, 6, N, 5, 1)
    kw = dict(kappa=5, eps=0.4, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.info["backend"] == "compiled" and t.info["backend"] == "torch"
    assert f.converged.all() and t.converged.all()
    rel = (f.theta - t.theta).norm(dim=1) / t.theta.norm(dim=1)
    assert rel.max() < 1e-5  # the torch path stores its features in float32
    # the torch path's float32 features shift its losses by ~1e-8 (relative)
    torch.testing.assert_close(f.loss, t.loss, rtol=1e-7, atol=0)
    torch.testing.assert_close(f.init_loss, t.init_loss, rtol=1e-7, atol=0)
    assert (f.grad_norm < 1e-6).all()


def test_ica_fused_and_torch_reach_equally_good_points():
    # Same Gauss-Newton method and stopping rule; the fused line search interpolates instead
    # of halving, so the (piecewise-smooth, non-convex) problem is left at nearby points.
    model = ICA()
    th, th0, x, base = _problem(model, 8, 2000, 5, 2)
    kw = dict(kappa=5, eps=0.6, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.converged.all() and t.converged.all()
    assert ((f.loss - t.loss).abs() / t.loss).max() < 1e-4
    ef, et = f.error(model, th), t.error(model, th)
    assert ((ef - et).abs() / et).max() < 0.2
    assert abs(float(ef.mean() / et.mean()) - 1.0) < 0.05


def test_auto_eps_threads_and_prefix_views():
    model = Gaussian()
    th, th0, x, base = _problem(model, 4, 800, 8, 3)
    # a longer base than needed: the fit takes a (strided) prefix of it, which the compiled
    # backend copies into the layout its kernels are compiled for
    f1 = cnce.fit(model, x[:, :600], kappa=6, eps="auto", theta0=th0, noise_base=base, threads=1)
    f2 = cnce.fit(model, x[:, :600], kappa=6, eps="auto", theta0=th0, noise_base=base, threads=2)
    t = cnce.fit(model, x[:, :600], kappa=6, eps="auto", theta0=th0, noise_base=base, backend="torch")
    torch.testing.assert_close(f1.eps, t.eps, rtol=1e-12, atol=0)
    assert torch.equal(f1.theta, f2.theta)
    assert ((f1.theta - t.theta).norm(dim=1) / t.theta.norm(dim=1)).max() < 1e-5


def test_backend_errors():
    x = torch.randn(2, 50, 5, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'torch', 'compiled'\); got 'gpu'"):
        cnce.fit(Gaussian(), x, eps=0.5, backend="gpu")
    with pytest.raises(ValueError, match=r"backend='compiled' does not apply: .*no compiled kernel for method 'sm'"):
        cnce.fit(Gaussian(), x, method="sm", backend="compiled")
    with pytest.raises(ValueError, match=r"backend='compiled' does not apply: Ring.*no compiled kernel"):
        cnce.fit(Ring(dim=5), x, method="sm", backend="compiled")
    with pytest.raises(ValueError, match=r"backend='compiled' does not apply: .*float64 on the CPU"):
        cnce.fit(Gaussian(), x, eps=0.5, backend="compiled", dtype=torch.float32)
    with pytest.raises(ValueError, match=r"threads must be an integer >= 1; got 0"):
        cnce.fit(Gaussian(), x, eps=0.5, threads=0)
    # the torch path is what a float32 fit uses
    assert cnce.fit(Gaussian(), x, eps=0.5, dtype=torch.float32).info["backend"] == "torch"


def test_ica_mle_fused_matches_torch_lbfgs():
    # the same L-BFGS (two-loop recursion, backtracking, stopping rules) per simulation
    model = ICA()
    th, th0, x, _ = _problem(model, 6, 1500, 1, 4)
    f = cnce.fit(model, x, method="mle", theta0=th0, backend="compiled")
    t = cnce.fit(model, x, method="mle", theta0=th0, backend="torch")
    assert f.info["backend"] == "compiled" and f.converged.all()
    torch.testing.assert_close(f.init_loss, t.init_loss, rtol=1e-12, atol=0)
    # piecewise-smooth likelihood: both stop at kink vertices of the same basin
    assert ((f.loss - t.loss).abs() / t.loss).max() < 1e-5
    ef, et = f.error(model, th), t.error(model, th)
    assert abs(float(ef.mean() / et.mean()) - 1.0) < 0.1


def test_nce_gaussian_fused_equals_torch():
    # NCE: data and noise points y = mu + L xi (formed on the fly from the same base) with the
    # learned log-normaliser c; convex, so both paths reach the same minimiser
    model = Gaussian()
    th, th0, x, base = _problem(model, 5, 3000, 4, 5)
    kw = dict(method="nce", kappa=4, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.info["backend"] == "compiled" and f.converged.all() and t.converged.all()
    assert ((f.theta - t.theta).norm(dim=1) / t.theta.norm(dim=1)).max() < 1e-5
    torch.testing.assert_close(f.log_normaliser, t.log_normaliser, rtol=1e-5, atol=0)
    torch.testing.assert_close(f.loss, t.loss, rtol=1e-7, atol=0)  # float32 features on the torch path
    torch.testing.assert_close(f.init_loss, t.init_loss, rtol=1e-7, atol=0)
    assert torch.isnan(f.eps).all() and f.kappa == 4


def test_nce_ica_fused_and_torch_reach_equally_good_points():
    model = ICA()
    th, th0, x, base = _problem(model, 8, 2500, 5, 6)
    kw = dict(method="nce", kappa=5, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.info["backend"] == "compiled" and f.converged.all() and t.converged.all()
    # same start (c0 included) and the same loss function, to round-off
    torch.testing.assert_close(f.init_loss, t.init_loss, rtol=1e-12, atol=0)
    assert ((f.loss - t.loss).abs() / t.loss).max() < 1e-4
    ef, et = f.error(model, th), t.error(model, th)
    assert abs(float(ef.mean() / et.mean()) - 1.0) < 0.1


def test_nce_params_offsets_are_the_noise_log_density():
    # the fused NCE margin at theta = 0, c = 0 is -log p_n(x) - log nu (data) and
    # log p_n(y) + log nu (noise): compare the resulting loss with numpy
    from cnce.noise import NCEGaussianNoise

    model = Gaussian(3)
    th, th0, x, base = _problem(model, 2, 50, 3, 7)
    pn = NCEGaussianNoise.fit(x)
    prm = _fused.nce_params(pn.mean.numpy(), pn.chol.numpy(), 3)
    got = _fused.loss_all(_fused.NCE_GAUSSIAN, x.numpy(), base.numpy(), prm, np.zeros((2, 7)), threads=1)
    y = pn.apply(base.reshape(2, 150, 3))
    mx = -pn.log_prob(x) - math.log(3)
    my = pn.log_prob(y) + math.log(3)
    ref = (torch.nn.functional.softplus(-mx).sum(-1) + torch.nn.functional.softplus(-my).sum(-1)) / 50
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-12)


@pytest.mark.parametrize("eps", ["auto", 3.0])
def test_lognormal_fused_equals_torch(eps):
    # eps = 3 puts many noise points on u <= 0, where log phi = C
    model = LogNormal()
    th, th0, x, base = _problem(model, 6, 1500, 6, 8)
    kw = dict(kappa=6, eps=eps, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.info["backend"] == "compiled" and f.converged.all() and t.converged.all()
    torch.testing.assert_close(f.eps, t.eps, rtol=1e-12, atol=0)
    torch.testing.assert_close(f.init_loss, t.init_loss, rtol=1e-12, atol=0)
    torch.testing.assert_close(f.loss, t.loss, rtol=1e-12, atol=0)
    # theta agrees; C is not identifiable (the loss flattens as C -> -inf) and is not compared
    torch.testing.assert_close(f.theta[:, 0], t.theta[:, 0], rtol=1e-8, atol=0)
    assert (f.theta[:, 1] < -10).all()


@pytest.mark.parametrize("method", ["cnce", "nce"])
def test_ring_fused_equals_torch(method):
    # one known radius per simulation; convex in gamma (and c)
    g = torch.Generator().manual_seed(9)
    model = Ring(dim=5, mu=Ring.draw_mu(5, g))
    th, th0, x, base = _problem(model, 5, 2500, 6, 10)
    kw = dict(method=method, kappa=6, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.info["backend"] == "compiled" and f.converged.all() and t.converged.all()
    if method == "cnce":
        torch.testing.assert_close(f.eps, t.eps, rtol=1e-12, atol=0)
    torch.testing.assert_close(f.init_loss, t.init_loss, rtol=1e-12, atol=0)
    torch.testing.assert_close(f.loss, t.loss, rtol=1e-12, atol=0)
    torch.testing.assert_close(f.theta, t.theta, rtol=1e-5, atol=0)


@pytest.mark.parametrize("dim", [1, 2, 4])
def test_gaussian_fused_equals_torch_other_dims(dim):
    # the Gaussian pass forms the Gauss-Newton matrix in 3 x 3 tiles: P = dim (dim + 1) / 2
    # need not be a multiple of 3
    model = Gaussian(dim=dim)
    th, th0, x, base = _problem(model, 3, 2000, 6, 4)
    kw = dict(kappa=6, eps=0.4, theta0=th0, noise_base=base)
    f = cnce.fit(model, x, backend="compiled", threads=1, **kw)
    t = cnce.fit(model, x, backend="torch", **kw)
    assert f.info["backend"] == "compiled" and f.converged.all()
    assert ((f.theta - t.theta).norm(dim=1) / t.theta.norm(dim=1)).max() < 1e-5


def test_passes_are_counted_per_simulation():
    """``info["passes"]`` (S, 3): loss-only, gradient and Gauss-Newton passes over the data.
    Without progressive sampling (ICA) the start and every accepted Newton step cost one pass
    with the gradient, and a step whose first trial (formed with the gradient) was rejected one
    more; the start also costs a loss pass. The Gaussian's progressive stages count as their
    share of the data."""
    model = ICA()
    th, th0, x, base = _problem(model, 4, 1000, 5, 3)
    f = cnce.fit(model, x, backend="compiled", kappa=5, eps=0.6, theta0=th0, noise_base=base)
    p = f.info["passes"]
    assert p.shape == (4, 3) and (p >= 0).all() and (p[:, 0] >= 1).all()
    full = p[:, 1] + p[:, 2]
    it = f.n_iter.double()
    assert ((full >= it) & (full <= 2 * it + 1)).all(), (full, it)
    assert torch.equal(p, p.round())  # whole passes: all the data every time
    g = Gaussian()
    th, th0, x, base = _problem(g, 3, 4096, 5, 4)
    pg = cnce.fit(g, x, backend="compiled", kappa=5, eps=0.5, theta0=th0, noise_base=base).info["passes"]
    assert (pg[:, 2] >= 1).all() and not torch.equal(pg, pg.round())  # stages on N/16 and N/4 count as parts


def test_compile_kernels_reaches_every_declared_kernel():
    """``python -m cnce compile`` (scripts/test.sh runs it first) fits every model and method that
    declares a compiled kernel; with the cache warm this takes about a second."""
    from cnce.models import registered
    from cnce.precompile import compile_kernels

    lines = []
    done = compile_kernels(progress=lines.append)
    want = {f"{n}/{m}" for n, cls in registered().items() for m in cls.compiled_kernels}
    assert set(done) == want and len(lines) == len(want)
