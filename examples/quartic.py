"""A new model in one file: the quartic (exponential-family) density on the real line,

    log phi(u; theta) = -theta_1 u^2 / 2 - theta_2 u^4 / 4,     theta_2 > 0,

whose normaliser has no closed form. ``log phi`` is linear in theta, with features
``T(u) = (-u^2 / 2, -u^4 / 4)``: declaring ``linear = True`` and giving :meth:`features` is
all it takes for :func:`cnce.fit` to solve CNCE and NCE on the batched fast path (features
computed once per noise draw, every iteration one batched logistic-regression Newton step),
with no change anywhere else in the package. See CONTRIBUTING.md ("Adding a fast model").

    >>> import cnce; from quartic import Quartic
    >>> m = Quartic(); x = m.sample(m.random_params(4), 2000)
    >>> cnce.fit(m, x).info["formulation"]
    'linear'
"""
from __future__ import annotations

import torch

from cnce.models import UnnormalisedModel


class Quartic(UnnormalisedModel):
    name = "quartic"
    dim = 1
    n_params = 2
    linear = True  # log phi = T(u) . theta: the batched logistic-regression path
    smooth = True  # twice differentiable in u: score matching applies too

    def features(self, u):
        v = u[..., 0]
        return torch.stack([-0.5 * v**2, -0.25 * v**4], -1), torch.zeros_like(v)

    def _log_phi(self, u, theta):
        T, _ = self.features(u)
        return (T * theta.unsqueeze(1)).sum(-1)

    def random_params(self, S, generator=None):
        """``theta_1 ~ U[-1, 1]`` (one or two modes), ``theta_2 ~ U[0.5, 1.5]``."""
        r = torch.rand(S, 2, generator=generator, dtype=torch.float64)
        return torch.stack([2.0 * r[:, 0] - 1.0, 0.5 + r[:, 1]], -1)

    def init_params(self, S, generator=None):
        return torch.tensor([1.0, 1.0], dtype=torch.float64).expand(S, 2).clone()

    def sample(self, theta, n, generator=None, grid: int = 20001):
        """Exact up to the grid: inverse CDF of ``phi`` tabulated on ``[-6, 6]``."""
        u = torch.linspace(-6.0, 6.0, grid, dtype=torch.float64)
        logf = self._log_phi(u.view(1, -1, 1).expand(theta.shape[0], -1, -1), theta)
        f = torch.exp(logf - logf.max(-1, keepdim=True).values)
        cdf = torch.cumsum(f, -1)
        cdf = cdf / cdf[:, -1:]
        q = torch.rand(theta.shape[0], n, generator=generator, dtype=torch.float64)
        idx = torch.searchsorted(cdf, q).clamp(max=grid - 1)
        return u[idx].unsqueeze(-1)
