"""Solver options of :func:`cnce.fit`: one documented object, no environment variables.

:class:`FitOptions` holds every setting that changes *how* a fit is computed but not *what*
is estimated (in the manner of scikit-learn's ``config_context``). Pass one to a fit
(``cnce.fit(..., options=FitOptions(hess_points=0))``), or change the defaults of a block of
code with the context manager :func:`option_context`, or for the whole process with
:func:`set_options`::

    with cnce.option_context(feature_dtype=torch.float32):
        res = cnce.fit(model, x)          # float32 feature storage for this fit only

Defaults are read when :func:`cnce.fit` is called (never at import time), so results do not
depend on import order.
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Iterator

import torch

__all__ = ["FitOptions", "option_context", "set_options", "get_options"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class FitOptions:
    """How :func:`cnce.fit` computes (not what it estimates). Every field is validated.

    Attributes:
        feature_dtype: storage dtype of the fixed logistic features of linear models on the
            batched torch path: ``"auto"`` (default) keeps the parameters' dtype (float64) on
            the CPU, so that ``init_loss`` and the loss are exact to float64 round-off, and
            stores float32 on a GPU, where it is the fast path; ``"same"`` always keeps the
            parameters' dtype; ``torch.float32`` / ``torch.float64`` (or their names) force
            one. float32 storage is used only for models with at least 4 parameters (where
            the features dominate the work); margins, loss and gradient are always
            accumulated in the parameters' dtype.
        hess_points: points per problem used to form the Gauss-Newton matrix of the convex
            logistic problems (every ``ceil(n / hess_points)``-th point; ``0`` = all). The
            matrix only sets the search direction: the minimiser does not depend on it.
        projection_hess_points: the same for the piecewise-linear absolute-projection (ICA)
            problems, whose iterations and local optima depend on the matrix much more.
        projection: models that declare ``abs_projection_coef`` (ICA) are solved from their
            projections ``B u`` (fast); ``False`` uses the generic Jacobian-based problem.
        stat_ftol: absolute-projection (ICA) problems stop when the loss decreases by less
            than ``stat_ftol * n_params / N`` (relative) for 3 iterations in a row, far below
            the statistical resolution of the loss (order ``n_params / N``); ``0`` restores
            ``ftol = 1e-12``. At N = 2000, kappa = 10 the default changes squared errors by
            < 0.2 % (``benchmarks/``).
        block_pairs: pairs (summed over simulations) per block of the blocked torch ICA CNCE
            passes (the block's temporaries stay in cache).
        memory_budget_gb: ``sim_batch="auto"`` keeps each torch chunk's features below this.
        threads: CPU threads of the compiled kernels (simulations run in parallel); ``None``
            uses ``torch.get_num_threads()``. ``cnce.fit(threads=...)`` overrides it.
        eps_prefix: with ``eps_prefix > 1`` the eps heuristic (``eps="auto"``) decides its
            steps on the first ``N // eps_prefix`` data points and confirms the result on all
            of them (:func:`cnce.eps.choose_eps` ``prefix``; not used below 64 prefix points).
            The default ``1`` evaluates every step on all points: the authors' rule stops
            after 1.6-1.9 evaluations per simulation on average (Gaussian, N = 1000-20000,
            kappa = 10), so the confirmation alone costs most of what the prefix saves, and a
            prefix of N / 16 chose a different eps for 8-12 of 100 simulations without
            ``eps_margin`` (``benchmarks/eps_prefix.py``).
        eps_margin: with ``eps_prefix``, a step whose prefix J lies within
            ``eps_margin / sqrt(prefix pairs)`` of a threshold of the rule is decided on all
            points.
    """

    feature_dtype: object = "auto"
    hess_points: int = 4096
    projection_hess_points: int = 32768
    projection: bool = True
    stat_ftol: float = 1e-5
    block_pairs: int = 65536
    memory_budget_gb: float = 1.0
    threads: int | None = None
    eps_prefix: int = 1
    eps_margin: float = 4.0

    def __post_init__(self):
        fd = self.feature_dtype
        if isinstance(fd, str) and fd in _DTYPES:
            object.__setattr__(self, "feature_dtype", _DTYPES[fd])
        elif not (fd in ("auto", "same") or fd in (torch.float32, torch.float64)):
            raise ValueError(f"feature_dtype must be 'auto', 'same', torch.float32 or torch.float64; got {fd!r}")
        for name in ("hess_points", "projection_hess_points"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0 (0 = all points); got {v!r}")
        v = self.block_pairs
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"block_pairs must be an integer >= 1; got {v!r}")
        if not isinstance(self.projection, bool):
            raise ValueError(f"projection must be True or False; got {self.projection!r}")
        v = self.eps_prefix
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"eps_prefix must be an integer >= 1 (1 = all points); got {v!r}")
        for name in ("stat_ftol", "memory_budget_gb", "eps_margin"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
                raise ValueError(f"{name} must be a finite number >= 0; got {v!r}")
        if self.memory_budget_gb == 0:
            raise ValueError(f"memory_budget_gb must be > 0; got {self.memory_budget_gb!r}")
        t = self.threads
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise ValueError(f"threads must be None or an integer >= 1; got {t!r}")

    def replace(self, **changes) -> "FitOptions":
        """A copy with ``changes`` (validated); unknown names raise ValueError."""
        bad = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if bad:
            raise ValueError(f"unknown option(s) {bad}; FitOptions has {[f.name for f in dataclasses.fields(self)]}")
        return dataclasses.replace(self, **changes)

    def features_dtype(self, P: int, dtype: torch.dtype, device: torch.device) -> torch.dtype:
        """The storage dtype of a linear problem's features with ``P`` parameters."""
        fd = self.feature_dtype
        if fd == "auto":
            fd = torch.float32 if torch.device(device).type == "cuda" else "same"
        if fd == "same" or P < 4:
            return dtype
        return fd

    def eps_prefix_settings(self, N: int, kappa: int) -> tuple[int | None, float]:
        """``(prefix, margin)`` for :func:`cnce.eps.choose_eps` with ``N`` data points."""
        n0 = N // self.eps_prefix
        if self.eps_prefix == 1 or n0 < 64:
            return None, 0.0
        return n0, self.eps_margin / float(n0 * kappa) ** 0.5

    @property
    def memory_budget_bytes(self) -> int:
        return int(self.memory_budget_gb * 2**30)


_current = FitOptions()


def get_options() -> FitOptions:
    """The current default options (those of the innermost :func:`option_context` block)."""
    return _current


def set_options(**changes) -> FitOptions:
    """Change the process-wide defaults (validated); returns the new :class:`FitOptions`."""
    global _current
    _current = _current.replace(**changes)
    return _current


@contextlib.contextmanager
def option_context(**changes) -> Iterator[FitOptions]:
    """Change the default options inside a ``with`` block; restored on exit (also on errors)."""
    global _current
    old = _current
    _current = old.replace(**changes)
    try:
        yield _current
    finally:
        _current = old
