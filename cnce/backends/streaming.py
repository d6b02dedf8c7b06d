"""CNCE of a linear model on the torch path with the rows streamed in chunks: memory bounded by
``options.memory_budget_gb`` however many rows a simulation has.

:class:`~cnce.optim.LinearLogistic` stores the features of every (data, noise) pair of a
simulation, ``F = T(x) - T(y)`` (Eq. 9 for a model linear in its parameters), which takes about
:func:`cnce.backends.plan.simulation_bytes` (17.9 GB for 1e7 rows of ``Gaussian(dim=2)`` at
kappa = 10). Where one simulation's features exceed the budget, :func:`cnce.fit` instead hands
the torch backend a row chunk (:func:`cnce.backends.plan.row_chunk`) and this objective forms
the features of one chunk of data rows and their noise at a time, at every pass: loss, gradient
and Gauss-Newton matrix (:meth:`RowStreamLinearCNCE.full`) and the line search's losses
(:meth:`RowStreamLinearCNCE.line`) are sums over the chunks. It is the same problem, solved by
the same Newton method (:func:`cnce.optim.newton`) with the same subsample of points for the
matrix (every ``stride``-th pair of the whole simulation), so the estimates equal the unchunked
path's up to the order of the sums (round-off; ``tests/test_row_streaming.py``). The cost: the
features are formed anew at every pass (about two per Newton iteration) instead of once.

What is not streamed: the data ``x`` and the noise base (``N kappa D`` numbers, drawn by
:func:`cnce.fit` before the backend runs), which every backend holds.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..losses import cnce_loss
from ..options import NewtonSettings

__all__ = ["RowStreamLinearCNCE", "streamed_J_of_eps"]


def _spans(n: int, rows: int):
    for i0 in range(0, n, rows):
        yield i0, min(n, i0 + rows)


class RowStreamLinearCNCE:
    """``loss(psi) = scale * sum_j softplus(-(F psi + b)_j)`` over the ``N kappa`` pairs of each
    simulation, with ``F`` and ``b`` formed per chunk of ``rows`` data rows (see the module).
    The interface of :class:`~cnce.optim.LinearLogistic` that :func:`cnce.optim.newton` uses:
    ``full`` and ``line``."""

    def __init__(self, model, x, base, eps, noise, kappa: int, *, rows: int, feature_dtype=None,
                 hess_points: int | None = None, progress=None):
        self.progress = progress
        self.model, self.x, self.base, self.eps, self.noise, self.kappa = model, x, base, eps, noise, kappa
        self.rows = int(rows)
        self.fdt = feature_dtype or x.dtype
        self.dtype = x.dtype
        S, N, D = x.shape
        n = N * kappa
        self.scale = 2.0 / n
        hp = NewtonSettings.hess_points if hess_points is None else hess_points
        # LinearLogistic's subsample: every stride-th pair of the whole simulation
        self.stride = 1 if (hp is None or hp <= 0 or hp >= n) else -(-n // hp)
        self.n_h = -(-n // self.stride)
        self.n = n
        self.float32_features = self.fdt == torch.float32 and self.dtype == torch.float64

    def _chunk(self, i0: int, i1: int):
        """``Ft (S, P, m)`` and ``b (S, m)`` (or ``None``) of the pairs of data rows ``i0..i1-1``,
        built as :mod:`cnce.backends.torch` builds them for all rows."""
        model, kappa = self.model, self.kappa
        if self.progress is not None:
            self.progress.update(rows=f"{i1}/{self.x.shape[1]}")
        x = self.x[:, i0:i1]
        S, n, D = x.shape
        y = self.noise.apply(x, self.base[:, i0:i1], self.eps)
        log_ratio = self.noise.log_ratio(x, y, self.eps)
        Tx, hx = model.features_t(x, self.fdt)
        Ty, hy = model.features_t(y.reshape(S, n * kappa, D), self.fdt)
        P = Tx.shape[1]
        Ft = Ty.view(S, P, n, kappa).neg_().add_(Tx.unsqueeze(-1)).view(S, P, n * kappa)
        b = None
        if hx is not None or hy is not None or log_ratio is not None:
            b = torch.zeros(S, n, kappa, dtype=x.dtype, device=x.device)
            if hx is not None:
                b = b + hx.unsqueeze(2)
            if hy is not None:
                b = b - hy.view(S, n, kappa)
            if log_ratio is not None:
                b = b + log_ratio
            b = b.reshape(S, n * kappa)
        return Ft, b

    def _margins(self, Ft, b, v):
        m = torch.bmm(v.to(Ft.dtype).unsqueeze(1), Ft).squeeze(1).to(self.dtype)
        return m + b if b is not None else m

    def full(self, psi):
        S, P = psi.shape
        loss = torch.zeros(S, dtype=self.dtype, device=psi.device)
        g = torch.zeros(S, P, dtype=self.dtype, device=psi.device)
        H = torch.zeros(S, P, P, dtype=self.dtype, device=psi.device)
        for i0, i1 in _spans(self.x.shape[1], self.rows):
            Ft, b = self._chunk(i0, i1)
            m = self._margins(Ft, b, psi)
            w = torch.sigmoid(-m)
            loss += F.softplus(-m).sum(-1)
            g -= torch.bmm(Ft, w.to(Ft.dtype).unsqueeze(-1)).squeeze(-1).to(self.dtype)
            first = (-i0 * self.kappa) % self.stride  # the chunk's first pair of the global subsample
            Fh = Ft[:, :, first:: self.stride]
            wh = w[:, first:: self.stride]
            v = (wh * (1.0 - wh)).to(Ft.dtype)
            H += torch.bmm(Fh * v.unsqueeze(1), Fh.transpose(1, 2)).to(self.dtype)
        return self.scale * loss, self.scale * g, H * (self.scale * self.n / self.n_h)

    def loss(self, psi):
        total = torch.zeros(psi.shape[0], dtype=self.dtype, device=psi.device)
        for i0, i1 in _spans(self.x.shape[1], self.rows):
            Ft, b = self._chunk(i0, i1)
            total += F.softplus(-self._margins(Ft, b, psi)).sum(-1)
        return self.scale * total

    def line(self, psi, d):
        def phi(alpha):
            return self.loss(psi + alpha.to(psi.dtype).unsqueeze(-1) * d)

        return phi


def streamed_J_of_eps(model, x, base, noise, psi0, kappa: int, rows: int):
    """CNCE's ``J(eps)`` at ``psi0`` (what the eps heuristic evaluates), over chunks of ``rows``
    data rows: the row-weighted mean of :func:`cnce.losses.cnce_loss` over the chunks of the
    first ``n_data`` rows."""
    S, N, D = x.shape
    lp_x0 = model._log_phi_free(x, psi0)

    def J_of_eps(e, n_data=None):
        n = N if n_data is None else n_data
        total = torch.zeros(S, dtype=x.dtype, device=x.device)
        for i0, i1 in _spans(n, rows):
            xn = x[:, i0:i1]
            y = noise.apply(xn, base[:, i0:i1], e)
            lp_y = model._log_phi_free(y.reshape(S, (i1 - i0) * kappa, D), psi0).reshape(S, i1 - i0, kappa)
            total += cnce_loss(lp_x0[:, i0:i1], lp_y, noise.log_ratio(xn, y, e)) * (i1 - i0)
        return total / n

    return J_of_eps
