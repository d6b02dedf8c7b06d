"""Result types shared by :func:`cnce.fit` and every backend (below both: no import cycle)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["FitResult", "OptimResult"]


@dataclass
class OptimResult:
    """What an optimiser returns: free parameters ``psi (S, P)`` and per-problem diagnostics."""

    psi: torch.Tensor
    loss: torch.Tensor
    init_loss: torch.Tensor
    grad_norm: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor


@dataclass
class FitResult:
    """Per-simulation estimates and diagnostics of :func:`cnce.fit`.

    Tensors have a leading simulation axis ``S`` (dropped when ``x`` was a single ``(N, D)``
    dataset). ``eps`` is NaN for methods without conditional noise; ``log_normaliser`` is
    NCE's learned ``c`` (``None`` otherwise). ``info`` says which backend ran and how; the
    compiled backend adds ``info["passes"]`` ``(S, 3)``: each simulation's passes over its data (loss
    only, with gradient, with Gauss-Newton matrix; a pass over part of the data counts as that part).
    """

    theta: torch.Tensor
    eps: torch.Tensor
    loss: torch.Tensor
    init_loss: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor
    grad_norm: torch.Tensor
    method: str
    kappa: int | None
    seconds: float
    log_normaliser: torch.Tensor | None = None
    info: dict = field(default_factory=dict)

    _PER_SIM = ("theta", "eps", "loss", "init_loss", "n_iter", "converged", "grad_norm", "log_normaliser")

    def error(self, model, theta_true) -> torch.Tensor:
        """Squared estimation error per simulation (``model.error``)."""
        return model.error(self.theta, theta_true)

    def unbatch(self) -> "FitResult":
        """Drop the simulation axis (in place) of a fit of one ``(N, D)`` dataset."""
        for k in self._PER_SIM:
            v = getattr(self, k)
            if v is not None:
                setattr(self, k, v[0])
        return self

    def __repr__(self) -> str:
        S = self.theta.shape[0] if self.theta.ndim == 2 else 1
        conv = int(self.converged.sum()) if self.converged.ndim else int(self.converged)
        return (f"FitResult(method={self.method!r}, kappa={self.kappa}, S={S}, converged={conv}/{S}, "
                f"median_iter={float(self.n_iter.double().median()):.0f}, seconds={self.seconds:.3f})")
