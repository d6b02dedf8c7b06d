"""One validated fit problem, as :func:`cnce.fit` hands it to a backend."""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["FitProblem"]


@dataclass
class FitProblem:
    """Everything that defines a fit (validated by :func:`cnce.fit`): ``S`` simulations of data
    ``x (S, N, D)``, the method, the noise and its base, the start. Solver settings that do not
    change the estimate are in :class:`~cnce.options.FitOptions`, not here."""

    model: object
    x: torch.Tensor
    method: str
    kappa: int | None
    eps: object  # "auto" or an (S,) tensor (CNCE); None otherwise
    noise: object
    noise_base: torch.Tensor | None  # (S, N, kappa, D) for CNCE and NCE
    eps_rule: object
    theta0: torch.Tensor
    max_iter: int | None
    tol: float
    device: torch.device
    dtype: torch.dtype
    sim_batch: object = "auto"
    progress: bool = False
    threads: int | None = None

    @property
    def shape(self):
        return tuple(self.x.shape)
