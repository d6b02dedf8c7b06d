"""Every backend against the readable objective (:mod:`cnce.losses`) on the same inputs, and
dispatch on declarations: fit never looks at a model's class."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import cnce
from cnce import backends
from cnce.backends.torch import _nce_c0
from cnce.losses import cnce_loss, nce_loss
from cnce.models import ICA, Bernoulli, Gaussian, LogNormal, Ring, UnnormalisedModel
from cnce.noise import NCEGaussianNoise, default_noise, draw_base

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"gaussian": lambda: Gaussian(dim=3), "ica": lambda: ICA(dim=3), "ring": lambda: Ring(dim=3, mu=2.0),
          "lognormal": LogNormal, "bernoulli": Bernoulli}


def _setup(name, S=2, N=150, kappa=3):
    model = MODELS[name]()
    g = torch.Generator().manual_seed(11)
    x = model.sample(model.random_params(S, g), N, generator=g)
    th0 = model.init_params(S, g)
    base = draw_base(model, S, N, kappa, generator=g)
    return model, x, th0, base, kappa


def _reference(model, method, x, th0, base, kappa, eps):
    S, N, D = x.shape
    if method == "cnce":
        noise = default_noise(model)
        e = torch.full((S,), eps, dtype=x.dtype)
        y = noise.apply(x, base, e)
        return cnce_loss(model.log_phi(x, th0), model.log_phi(y.reshape(S, N * kappa, D), th0).reshape(S, N, kappa),
                         noise.log_ratio(x, y, e))
    pn = NCEGaussianNoise.fit(x)
    y = pn.apply(base.reshape(S, N * kappa, D))
    lpn_y = pn.log_prob(y)
    psi0 = model.to_free(th0)
    c = _nce_c0(model, psi0, y, lpn_y, kappa).unsqueeze(-1)
    return nce_loss(model.log_phi(x, th0) + c - pn.log_prob(x) - math.log(kappa),
                    model.log_phi(y, th0) + c - lpn_y - math.log(kappa))


CASES = [(m, meth) for m in MODELS for meth in ("cnce", "nce") if meth in MODELS[m]().methods]


@pytest.mark.parametrize("name,method", CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_every_backend_starts_from_the_readable_loss(name, method):
    """init_loss of every backend that serves the problem equals cnce.losses to float64 round-off."""
    model, x, th0, base, kappa = _setup(name)
    eps = 0.4
    ref = _reference(model, method, x, th0, base, kappa, eps)
    served = []
    for bname, mod in backends.BACKENDS.items():
        kw = dict(eps=eps) if method == "cnce" else {}
        try:
            res = cnce.fit(model, x, method, kappa=kappa, theta0=th0, noise_base=base, backend=bname, max_iter=1, **kw)
        except ValueError as exc:
            assert "does not apply" in str(exc)
            continue
        served.append(bname)
        torch.testing.assert_close(res.init_loss, ref, rtol=1e-11, atol=0, msg=f"backend {bname}")
    assert "torch" in served
    if method in model.compiled_kernels:
        assert "compiled" in served


# fit and the backends import no concrete model: tests/test_layering.py checks it on the import graph


class _Declared(UnnormalisedModel):
    """A copy of the Gaussian of dim 2 by declarations only (no class of the package)."""

    name = "declared"
    dim = 2
    n_params = 3
    linear = True

    def features(self, u):
        T = torch.stack([-0.5 * u[..., 0] ** 2, -u[..., 0] * u[..., 1], -0.5 * u[..., 1] ** 2], -1)
        return T, u.new_zeros(u.shape[:-1])

    def _log_phi(self, u, theta):
        T, _ = self.features(u)
        return (T * theta.unsqueeze(1)).sum(-1)


def test_dispatch_follows_declarations():
    g = torch.Generator().manual_seed(0)
    ref = Gaussian(dim=2)
    th = ref.random_params(2, g)
    x = ref.sample(th, 400, g)
    base = draw_base(ref, 2, 400, 4, generator=g)
    th0 = ref.init_params(2, g)
    a = cnce.fit(_Declared(), x, kappa=4, eps=0.5, theta0=th0, noise_base=base)
    assert a.info["backend"] == "torch"  # no compiled kernel declared
    b = cnce.fit(ref, x, kappa=4, eps=0.5, theta0=th0, noise_base=base, backend="torch")
    torch.testing.assert_close(a.theta, b.theta, rtol=1e-9, atol=1e-12)

    class WithKernel(_Declared):  # declaring the Gaussian kernel is all the compiled path needs
        compiled_kernels = {"cnce": "gaussian"}

    c = cnce.fit(WithKernel(), x, kappa=4, eps=0.5, theta0=th0, noise_base=base)
    assert c.info["backend"] == "compiled" and c.info["kernel"] == "gaussian"
    torch.testing.assert_close(c.theta, b.theta, rtol=1e-6, atol=1e-9)


def test_bad_declarations_fail_at_class_definition():
    with pytest.raises(ValueError, match="contrastive_optimizer"):
        type("Bad", (UnnormalisedModel,), {"contrastive_optimizer": "adam"})
    with pytest.raises(ValueError, match="compiled_kernels"):
        type("Bad", (UnnormalisedModel,), {"compiled_kernels": {"cnce": 3}})
    with pytest.raises(ValueError, match="abs_projection_coef"):
        type("Bad", (UnnormalisedModel,), {"abs_projection_coef": -1.0})


def test_one_registry_serves_runner_and_cli(capsys):
    from cnce.cli import main
    from cnce.experiments import runner
    from cnce.models import registered

    assert set(registered()) == {"gaussian", "ica", "ring", "lognormal", "bernoulli"}
    assert not hasattr(runner, "FAMILY_BUILDERS")
    prob = runner.build_problem("ring-exact", 3, 10, seed=0)
    assert prob.model.mu.shape == (3,)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in registered():
        assert name in out


def test_the_compiled_backends_earlier_name_still_works_with_a_warning():
    """``backend="fused"`` (the compiled backend's earlier name) runs the compiled backend and
    warns; an unknown name is refused naming the value."""
    import warnings

    from cnce.backends import backend_name
    from cnce.errors import InputError

    with pytest.warns(DeprecationWarning, match="backend='fused' is now called backend='compiled'"):
        assert backend_name("fused") == "compiled"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend_name("compiled") == "compiled" and backend_name("auto") == "auto"
    x = torch.randn(1, 200, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with pytest.warns(DeprecationWarning):
        old = cnce.fit(Gaussian(dim=2), x, kappa=2, seed=0, backend="fused")
    new = cnce.fit(Gaussian(dim=2), x, kappa=2, seed=0, backend="compiled")
    assert old.info["backend"] == new.info["backend"] == "compiled" and torch.equal(old.theta, new.theta)
    with pytest.raises(InputError, match="backend must be one of .*'compiled'.*; got 'numba'"):
        cnce.fit(Gaussian(dim=2), x, kappa=2, backend="numba")
