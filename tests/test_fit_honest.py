"""No confident wrong answer from :func:`cnce.fit` (issue 44): the degenerate inputs a new user
tried, each with its known answer. A fit that never left its start, ends at an invalid parameter
or ran with an eps the data's scale does not allow is never ``converged=True``, and every
non-converged fit says why (``FitResult.reason``)."""
from __future__ import annotations

import pytest
import torch

import cnce
from cnce.errors import InputError
from cnce.models import Gaussian

BACKENDS = ("auto", "torch")


@pytest.fixture(scope="module")
def x():
    g = torch.Generator().manual_seed(0)
    mix = torch.tensor([[1.0, 0.5], [0.0, 1.0]], dtype=torch.float64)
    return torch.randn(1000, 2, generator=g, dtype=torch.float64) @ mix


def _fit(x, **kw):
    return cnce.fit(Gaussian(dim=2), x, **kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sound_fit_converges_with_an_empty_reason(x, backend):
    r = _fit(x, backend=backend)
    assert bool(r.converged) and r.reason == ""
    truth = torch.linalg.inv(torch.tensor([[1.0, 0.5], [0.5, 1.25]], dtype=torch.float64))  # cov = mix^T mix
    Lam = Gaussian(dim=2).precision(r.theta.unsqueeze(0))[0]
    assert torch.allclose(Lam, truth, atol=0.25)  # the positive control: the check does not flag good fits


@pytest.mark.parametrize("backend", BACKENDS)
def test_eps_zero_refused(x, backend):
    with pytest.raises(InputError, match="eps must be > 0"):
        _fit(x, eps=0, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_huge_eps_never_moves_and_is_flagged(x, backend):
    r = _fit(x, eps=1e6, backend=backend)
    assert not bool(r.converged)
    assert "never moved from its start" in r.reason and "data scales (more than 30)" in r.reason


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eps", [1e-12, 1e-6, 1e-3])
def test_tiny_eps_is_flagged_and_its_estimate_grows_as_one_over_eps(x, backend, eps):
    r = _fit(x, eps=eps, backend=backend)
    assert not bool(r.converged) and "dominated by sampling noise" in r.reason
    # the known answer behind the flag: the estimate is about c / eps, far from the truth (~1)
    c = r.theta.abs().max() * eps
    assert 5e-3 < float(c) < 5e-2


def test_the_small_noise_floor_is_one_over_sqrt_n_kappa(x):
    """Just above the floor the fit is not flagged; just below it is (N kappa = 10^4: floor 0.01)."""
    scale = float(x.std(0).pow(2).mean().sqrt())
    assert bool(_fit(x, eps=0.02 * scale).converged)
    assert not bool(_fit(x, eps=0.005 * scale).converged)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("factor,shown", [(1e-150, "standard deviation 1.06e-150"), (1e150, "standard deviation 1.06e+150")])
def test_extreme_data_scales_are_flagged(x, backend, factor, shown):
    r = _fit(x * factor, backend=backend)
    assert not bool(r.converged) and shown in r.reason and "rescale x" in r.reason


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [0.0, 3.0])
def test_constant_data_get_a_reason(backend, value):
    r = _fit(torch.full((1000, 2), value, dtype=torch.float64), backend=backend)
    assert not bool(r.converged) and "x is constant in column(s) [0, 1]" in r.reason


def test_invalid_end_point_is_never_converged(x):
    m = Gaussian(dim=2)
    not_pd = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)  # [[1, 2], [2, 1]]: eigenvalues 3, -1
    assert m.valid_params(torch.stack([not_pd, torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)])).tolist() == [False, True]
    r = _fit(x, eps=0.5, theta0=not_pd, max_iter=0)
    assert not bool(r.converged) and "invalid parameter" in r.reason and "never moved" in r.reason


def test_iteration_cap_has_a_reason_and_batches_keep_one_reason_per_simulation(x):
    xs = torch.stack([x, torch.full_like(x, 2.0)])
    r = cnce.fit(Gaussian(dim=2), xs, max_iter=1)
    assert r.reason[1] != "" and len(r.reason) == 2
    assert all(bool(c) == (why == "") for c, why in zip(r.converged, r.reason))
    assert "iteration cap max_iter=1" in r.reason[1]
    assert "reason=" in repr(r)


def test_torch_path_keeps_to_the_memory_budget(x):
    """A fit whose one simulation needs more than ``memory_budget_gb`` on the torch path (it used to
    take 9.2 GB at a budget of 1 GB): CNCE of a linear model streams its rows in chunks within the
    budget (tests/test_row_streaming.py); another fit is refused with the estimate and the ways out."""
    with cnce.option_context(memory_budget_gb=0.001):  # 1000 rows x kappa 10 need about 2 MB
        r = _fit(x, backend="torch")
        assert bool(r.converged) and 0 < r.info["row_chunk"] < 1000
        with pytest.raises(InputError, match=r"needs about .* GB for one simulation on the torch backend .*"
                                             r"memory_budget_gb = 0.001 .*; use backend='compiled'"):
            cnce.fit(Gaussian(dim=2), x, "nce", kappa=10, backend="torch")
        assert bool(_fit(x, backend="compiled").converged)  # the compiled path streams rows: not bound by it
    r = _fit(x, backend="torch")
    assert bool(r.converged) and r.info["row_chunk"] is None


def test_balanced_noise_has_no_small_eps_floor(x):
    """Antithetic noise (each xi with its -xi) cancels the linear term whose sampling noise makes
    small eps fail: there a tiny eps is the score-matching limit (Supp. B) and is not flagged,
    while independent draws at the same eps are."""
    g = torch.Generator().manual_seed(3)
    half = torch.randn(1, 1000, 5, 2, generator=g, dtype=torch.float64)
    anti = torch.cat([half, -half], dim=2)
    indep = torch.randn(1, 1000, 10, 2, generator=g, dtype=torch.float64)
    a = _fit(x, eps=1e-3, kappa=10, noise_base=anti.squeeze(0).unsqueeze(0), tol=1e-20)
    i = _fit(x, eps=1e-3, kappa=10, noise_base=indep, tol=1e-20)
    assert bool(a.converged) and a.reason == ""
    assert not bool(i.converged) and "sampling noise" in i.reason
    sm = cnce.fit(Gaussian(dim=2), x, "sm").theta
    assert float((a.theta - sm).norm()) < 0.1 and float((i.theta - sm).norm()) > 1.0
