"""One settled fit problem, as :func:`cnce.fit` hands it to a backend: the backends only read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..eps import EpsSearch
from ..options import LBFGSSettings, NewtonSettings
from .progress import NO_PROGRESS

if TYPE_CHECKING:
    from .plan import Formulation

__all__ = ["FitProblem"]


@dataclass(frozen=True)
class FitProblem:
    """Everything that defines a fit, validated and settled by :func:`cnce.fit`: ``S``
    simulations of data ``x (S, N, D)``, the method, the noise and its base, the start, eps and
    how the solvers run. A backend reads it and fills in nothing.

    ``eps``: CNCE's ``(S,)`` tensor (given, already checked against the noise's bound) or an
    :class:`~cnce.eps.EpsSearch` (the heuristic still to run, its rule already bounded);
    ``None`` for the other methods. ``optimizer``: ``"newton"``, ``"lbfgs"`` or ``"closed
    form"`` (what the model declares for the method). ``threads``: CPU threads (an integer).
    ``chunk``: simulations per torch chunk (``S`` for the compiled backend). What the plan
    settled from the :class:`~cnce.options.FitOptions` (the problem carries no options):
    ``formulation`` (:func:`cnce.backends.plan.formulation`), ``feature_dtype`` (the storage
    dtype of a linear problem's features on the torch path) and ``projection_block_pairs``
    (pairs, over the simulations of a chunk, per block of the torch projection passes)."""

    model: object
    x: torch.Tensor
    method: str
    kappa: int | None
    eps: torch.Tensor | EpsSearch | None
    noise: object
    noise_base: torch.Tensor | None  # (S, N, kappa, D) for CNCE and NCE
    theta0: torch.Tensor
    device: torch.device
    dtype: torch.dtype
    optimizer: str
    newton: NewtonSettings
    lbfgs: LBFGSSettings
    threads: int
    chunk: int
    formulation: Formulation
    feature_dtype: torch.dtype
    projection_block_pairs: int
    #: data rows per chunk where the torch path streams rows (cnce.backends.streaming), else None
    row_chunk: int | None = None
    progress: object = NO_PROGRESS  # a FitProgress (cnce.backends.progress) the backend reports into

    @property
    def shape(self):
        return tuple(self.x.shape)
