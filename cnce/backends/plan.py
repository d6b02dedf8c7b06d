"""How a fit is solved, settled once from :class:`~cnce.options.FitOptions` and the model's
declarations: the formulation of the problem, the features' storage dtype, the optimiser, its
:class:`~cnce.options.NewtonSettings` / :class:`~cnce.options.LBFGSSettings`, and the torch
path's chunk of simulations. Every tuning choice of the solvers is made here and documented
here; the backends only read it (a :class:`~cnce.backends.FitProblem` carries no options).
"""
from __future__ import annotations

import enum

import torch

from .. import _fused
from ..options import FitOptions, LBFGSSettings, NewtonSettings

__all__ = ["Formulation", "formulation", "feature_dtype", "optimizer", "newton_settings", "lbfgs_settings", "chunk_size",
           "row_chunk", "streams", "COUNTS_MAX_DIM", "PROJECTIONS", "PAIR_COUNTS"]

#: the first trial step of a line search, as a multiple of the last accepted step (at most 1):
#: the compiled kernels' value (1.0-1.5 measured and not adopted: ``benchmarks/notes.md``) and
#: the torch path's (the value its results were computed with); see :class:`NewtonSettings`
#: the stopping tolerance of the earlier stages of progressive sampling (compiled kernels)
PROGRESSIVE_STAGE_TOL = 1e-5


#: discrete data of at most this dimension are fitted from pair-type counts (4^D types)
COUNTS_MAX_DIM = 6


class Formulation(str, enum.Enum):
    """The formulation a fit is solved in (:func:`formulation`). A ``str`` enum: a member equals
    its text (``Formulation.LINEAR == "linear"``), prints as it and is stored as it
    (``res.info["formulation"]``), so the backends match on members, not on strings."""

    CLOSED_FORM = "closed form"
    LIKELIHOOD_NEWTON = "likelihood, newton"
    LIKELIHOOD_LBFGS = "likelihood, lbfgs"
    SCORE_MATCHING = "score matching, autograd"
    PAIR_COUNTS = "linear, pair-type counts"
    LINEAR = "linear"
    PROJECTIONS = "absolute projections"
    NONLINEAR_NEWTON = "nonlinear, newton"
    NONLINEAR_LBFGS = "nonlinear, lbfgs"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: the formulation of the absolute-projection problems (ICA) and of binary data fitted from counts
PROJECTIONS = Formulation.PROJECTIONS
PAIR_COUNTS = Formulation.PAIR_COUNTS


def formulation(model, method: str, noise=None, x: torch.Tensor | None = None,
                options: FitOptions | None = None) -> Formulation:
    """The formulation that solves the fit, decided here only: ``"closed form"``,
    ``"likelihood, <optimiser>"``, ``"score matching, autograd"``, ``"linear, pair-type counts"``
    (CNCE for binary data ``x`` of a linear discrete model with symmetric ``noise``, at most
    :data:`COUNTS_MAX_DIM` dimensions), ``"linear"``, ``"absolute projections"`` (models that
    declare ``abs_projection_coef``, unless ``options.projection`` is off) or
    ``"nonlinear, <optimiser>"``."""
    options = FitOptions() if options is None else options
    if method == "mle":
        return Formulation.CLOSED_FORM if model.closed_form_mle else Formulation(f"likelihood, {model.mle_optimizer}")
    if method == "sm":
        return Formulation.SCORE_MATCHING
    if (method == "cnce" and model.linear and model.discrete and noise is not None and noise.symmetric
            and x is not None and x.shape[-1] <= COUNTS_MAX_DIM and bool(((x == 0) | (x == 1)).all())):
        return PAIR_COUNTS
    if model.linear:
        return Formulation.LINEAR
    if model.abs_projection_coef is not None and options.projection:
        return PROJECTIONS
    return Formulation(f"nonlinear, {model.contrastive_optimizer}")


def feature_dtype(model, method: str, dtype: torch.dtype, device, options: FitOptions) -> torch.dtype:
    """The storage dtype of a linear problem's features on the torch path
    (:meth:`~cnce.options.FitOptions.features_dtype` of its parameters, NCE's ``c`` included)."""
    return options.features_dtype(model.n_params + (method == "nce"), dtype, device)


def optimizer(model, method: str) -> str:
    """``"newton"``, ``"lbfgs"`` or ``"closed form"``: what the model declares for ``method``."""
    if method == "mle":
        return "closed form" if model.closed_form_mle else model.mle_optimizer
    if method == "sm" or model.linear:
        return "newton"
    return model.contrastive_optimizer


def newton_settings(model, method: str, N: int, options: FitOptions, backend: str, kernel: str | None = None,
                    max_iter: int | None = None, tol: float = NewtonSettings.tol,
                    form: str | None = None) -> NewtonSettings:
    """The Newton settings of one fit.

    * Absolute projections (``abs_projection_coef``, ICA; non-convex, piecewise linear): the
      Gauss-Newton matrix from ``options.projection_hess_points`` points, and the statistical
      stop ``ftol = max(1e-12, options.stat_ftol * n_params / N)``; no progressive sampling
      (it would change which local optimum is reached).
    * Compiled kernels of convex problems: progressive sampling, earlier stages stopped at
      ``stage_tol =`` :data:`PROGRESSIVE_STAGE_TOL`, the matrix kept after a step that decreased as predicted. With at
      least 3 parameters (the Gaussian, P = 15) the matrix comes from ``options.hess_points``
      points and the last stage forms it from all pairs (a subsample converges only linearly
      there), once, where the first step lands, carried over from the previous stage and
      formed anew where that saves passes (a matrix pass costs about 2 gradient passes); with
      1-2 parameters (ring, log-normal) the full matrix costs little and is used throughout.
      Kernels that can lay their noise out once per simulation (:data:`cnce._fused.LAYS_OUT_NOISE`)
      do so (in blocks of ``NewtonSettings.layout_block_pairs`` pairs). These problems stop on the Newton
      decrement only (``patience`` off): the relative-decrease rule would stop the last stage
      early when it starts close to the optimum.
    * Otherwise: the defaults, the matrix from ``options.hess_points`` points.

    Both solvers grow the first trial step by ``NewtonSettings.alpha_grow`` (2; the torch path's
    earlier 4 was slower on all but one of its problems, ``benchmarks/alpha_grow.py``); the
    compiled kernels alone apply the round-off acceptance rule (``roundoff_accept``).
    ``form``: the fit's :func:`formulation` (default: decided from the model and ``options``).
    """
    if form is None:
        form = formulation(model, method, options=options)
    fused = backend == "compiled"
    s = NewtonSettings(roundoff_accept=fused, hess_points=options.hess_points, tol=tol)
    if max_iter is not None:
        s = s.replace(max_iter=max_iter)
    if method not in ("cnce", "nce"):
        return s
    if form == PROJECTIONS:
        return s.replace(hess_points=options.projection_hess_points,
                         ftol=max(NewtonSettings.ftol, options.stat_ftol * model.n_params / N))
    if not fused:
        return s
    s = s.replace(progressive=True, reuse_h=True, patience=1 << 30, stage_tol=PROGRESSIVE_STAGE_TOL)
    P = model.n_params + (method == "nce")
    if P < 3:
        return s.replace(hess_points=0)
    s = s.replace(hess_last=0, carry_h=True, h_cost=1.0)
    if kernel is not None and _fused.KERNELS[kernel] in _fused.LAYS_OUT_NOISE:
        s = s.replace(noise_t=True)
    return s


def lbfgs_settings(max_iter: int | None = None) -> LBFGSSettings:
    """L-BFGS settings: the defaults, with ``max_iter`` where given."""
    s = LBFGSSettings()
    return s if max_iter is None else s.replace(max_iter=max_iter)


def chunk_size(model, method: str, S: int, N: int, kappa: int | None, dtype: torch.dtype, options: FitOptions,
               sim_batch) -> int:
    """Simulations per torch chunk: ``sim_batch``, or for ``"auto"`` as many as keep a chunk's
    features below ``options.memory_budget_gb``."""
    if sim_batch != "auto":
        return sim_batch
    per_sim = simulation_bytes(model, method, N, kappa, dtype)
    return max(1, min(S, options.memory_budget_bytes // max(per_sim, 1)))


def row_chunk(model, method: str, N: int, kappa: int | None, dtype: torch.dtype, options: FitOptions,
              form: str) -> int | None:
    """Data rows per chunk where the torch path streams rows (:mod:`cnce.backends.streaming`):
    ``None`` where one simulation's working memory (:func:`simulation_bytes`) fits
    ``options.memory_budget_gb`` (no streaming), else the most rows whose pairs' features fit it
    (at least 1). Only CNCE of a model linear in its parameters streams (formulation
    ``"linear"``); :func:`cnce.fit` refuses the other fits that do not fit the budget."""
    if simulation_bytes(model, method, N, kappa, dtype) <= options.memory_budget_bytes:
        return None
    if not streams(method, form):
        return None
    return max(1, min(N, options.memory_budget_bytes // simulation_bytes(model, method, 1, kappa, dtype)))


def streams(method: str, form: str) -> bool:
    """Whether the torch path can stream this fit's rows: CNCE in the linear formulation."""
    return method == "cnce" and form == Formulation.LINEAR


def simulation_bytes(model, method: str, N: int, kappa: int | None, dtype: torch.dtype) -> int:
    """The torch path's working memory for one simulation (features, margins, noise; an upper
    estimate: 1e5 rows of Gaussian(dim=2) with kappa = 10 estimate 192 MB and peak at 172 MB
    above the process's start, ``benchmarks/large_rows.py``)."""
    item = torch.finfo(dtype).bits // 8
    n = N * kappa if method == "cnce" else N * (1 + kappa) if method == "nce" else N
    return n * (model.n_params + 1 + 2 * model.dim + 4) * item * 2
