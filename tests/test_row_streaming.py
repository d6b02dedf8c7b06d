"""The torch path streams rows where one simulation's features exceed memory_budget_gb
(cnce.backends.streaming): the same estimates as the unchunked path, to round-off."""
import pytest
import torch

import cnce
from cnce.backends import plan
from cnce.errors import InputError


def _data(S=2, N=1500, D=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(S, N, D, generator=g, dtype=torch.float64) * torch.linspace(1.0, 2.0, D, dtype=torch.float64)


#: a budget of 300 rows of Gaussian(dim=2) pairs at kappa = 5
TINY_GB = 300 * plan.simulation_bytes(cnce.models.Gaussian(dim=2), "cnce", 1, 5, torch.float64) / 2**30


@pytest.mark.parametrize("eps", [0.5, "auto"])
def test_streamed_equals_unchunked(eps):
    model, x = cnce.models.Gaussian(dim=2), _data()
    full = cnce.fit(model, x, "cnce", kappa=5, eps=eps, backend="torch", progress=False)
    assert full.info["row_chunk"] is None
    with cnce.option_context(memory_budget_gb=TINY_GB):
        rows = plan.row_chunk(model, "cnce", x.shape[1], 5, torch.float64, cnce.get_options(), plan.Formulation.LINEAR)
        streamed = cnce.fit(model, x, "cnce", kappa=5, eps=eps, backend="torch", progress=False)
    assert rows == 300 and streamed.info["row_chunk"] == 300 and streamed.info["sim_batch"] == 1
    assert streamed.converged.all() and full.converged.all()
    torch.testing.assert_close(streamed.eps, full.eps, rtol=1e-12, atol=0)
    torch.testing.assert_close(streamed.theta, full.theta, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(streamed.loss, full.loss, rtol=1e-12, atol=0)
    assert torch.equal(streamed.n_iter, full.n_iter)


def test_subsampled_matrix_matches_across_chunk_edges():
    """The Gauss-Newton matrix from every stride-th pair of the whole simulation, whatever the chunking
    (rows that do not divide the stride)."""
    from cnce.backends.streaming import RowStreamLinearCNCE
    from cnce.noise import GaussianNoise
    from cnce.optim import LinearLogistic

    model, x = cnce.models.Gaussian(dim=2), _data(S=1, N=701)
    base = torch.randn(1, 701, 3, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    eps = torch.tensor([0.7], dtype=torch.float64)
    psi = model.to_free(model.init_params(1))
    ref = RowStreamLinearCNCE(model, x, base, eps, GaussianNoise(), 3, rows=701, hess_points=100)
    for rows in (1, 7, 50, 333):
        s = RowStreamLinearCNCE(model, x, base, eps, GaussianNoise(), 3, rows=rows, hess_points=100)
        for a, b in zip(s.full(psi), ref.full(psi)):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    # and the one-chunk objective is LinearLogistic's problem
    Ft, b = ref._chunk(0, 701)
    ll = LinearLogistic(None, b, ref.scale, Ft=Ft, dtype=x.dtype, hess_points=100)
    for a, b in zip(ref.full(psi), ll.full(psi)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_fits_that_cannot_stream_are_still_refused():
    x = _data(S=1, N=1500, D=4)
    with cnce.option_context(memory_budget_gb=TINY_GB), pytest.raises(InputError, match="streams rows"):
        cnce.fit(cnce.models.ICA(dim=4), x, "cnce", kappa=5, eps=0.5, backend="torch", progress=False)
