"""Solver options of :func:`cnce.fit`: one documented object, no environment variables.

:class:`FitOptions` holds every setting that changes *how* a fit is computed but not *what*
is estimated (in the manner of scikit-learn's ``config_context``). Pass one to a fit
(``cnce.fit(..., options=FitOptions(hess_points=0))``), or change the defaults of a block of
code with the context manager :func:`option_context`, or for the whole process with
:func:`set_options`::

    with cnce.option_context(feature_dtype=torch.float32):
        res = cnce.fit(model, x)          # float32 feature storage for this fit only

Defaults are read when :func:`cnce.fit` is called (never at import time), so results do not
depend on import order. They live in a :class:`contextvars.ContextVar`: an
:func:`option_context` block changes them for its own thread (or asyncio task) only, and a new
thread starts from the process-wide defaults of :func:`set_options`.

:class:`NewtonSettings` and :class:`LBFGSSettings` are what the optimisers read (both the
batched torch solvers of :mod:`cnce.optim` and the compiled ones of :mod:`cnce._fused`):
:func:`cnce.fit` settles them once per fit from these options and the model's declarations;
their defaults are the one definition of each tuning constant.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass
from typing import Iterator

import torch

from .constraints import Boolean, Integer, Real, validate_fields

__all__ = ["FitOptions", "NewtonSettings", "LBFGSSettings", "COMPILED_RULES", "TINY", "option_context", "set_options", "get_options"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


class _Replace:
    def replace(self, **changes):
        """A copy with ``changes`` (validated); unknown names raise ValueError."""
        names = [f.name for f in dataclasses.fields(self)]
        bad = sorted(set(changes) - set(names))
        if bad:
            raise ValueError(f"unknown option(s) {bad}; {type(self).__name__} has {names}")
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class FitOptions(_Replace):
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
        projection_block_pairs: pairs, summed over the simulations of a chunk, per block of the
            torch path's blocked absolute-projection (ICA) CNCE passes (the block's temporaries
            stay in cache).
        memory_budget_gb: ``sim_batch="auto"`` keeps each torch chunk's features below this;
            where one simulation's features exceed it, CNCE of a model linear in its parameters
            streams its rows in chunks that keep to it (:mod:`cnce.backends.streaming`) and other
            fits are refused naming the estimate. The data and the drawn noise, which every fit
            holds whole, are not counted (1e7 x 2 rows with kappa = 10: about 1.6 GB of them).
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
    projection_block_pairs: int = 65536
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
        validate_fields(self, {"hess_points": Integer(lo=0), "projection_hess_points": Integer(lo=0),
                               "projection_block_pairs": Integer(lo=1), "projection": Boolean(),
                               "eps_prefix": Integer(lo=1), "stat_ftol": Real(lo=0),
                               "memory_budget_gb": Real(lo=0, lo_open=True), "eps_margin": Real(lo=0),
                               "threads": Integer(lo=1) | None}, prefix="",
                        notes={"hess_points": " (0 = all points)", "projection_hess_points": " (0 = all points)",
                               "eps_prefix": " (1 = all points)"})

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


#: the positive floor of the solvers' denominators and scales (guards a division by zero; not a
#: tuning constant)
TINY = 1e-300


_INT0, _INT1, _REAL0, _REAL_POS, _FRACTION = Integer(lo=0), Integer(lo=1), Real(lo=0), Real(lo=0, lo_open=True), \
    Real(lo=0, hi=1, lo_open=True)


@dataclass(frozen=True)
class NewtonSettings(_Replace):
    """How the damped (Gauss-)Newton solvers run: :func:`cnce.optim.newton` (torch) and
    :func:`cnce._fused.newton_all` (compiled) read the same fields; :func:`cnce.fit` builds one
    per fit (``res.info["newton"]``). Every field is validated; every threshold and constant
    of the two solvers is a field here (the conformance test, ``tests/test_solvers.py``, runs
    both on the same problems with the same settings).

    Stopping (both solvers): converged when half the Newton decrement is below ``tol * max(1,
    |loss|)``, or the relative loss decrease stays below ``ftol`` for ``patience`` iterations
    (the rule for the piecewise-smooth ICA problems), or no step lowers the loss while the
    decrement is below ``stall_tol * max(1, |loss|)``; else not converged after ``max_iter``
    iterations; where the torch path stores float32 features, ``tol`` is at least
    ``tol_float32`` (their round-off floor under the decrement). Direction: ``(H + lam I) d = -g`` by Cholesky with ``lam`` from ``damping``
    times the mean absolute diagonal of ``H``, multiplied by ``damping_growth`` until the
    factorisation succeeds, at most ``damping_tries`` times (else the gradient step). Line
    search: Armijo with ``c1``, at most ``max_halvings`` trials, the first at ``alpha_grow``
    times the last accepted step (at most 1); after a rejected trial the minimiser of the
    quadratic through the loss, the slope and the trial, kept within ``[shrink_min,
    shrink_max]`` times the step.

    The torch solver reads every field. The compiled solver has the fields of
    :data:`COMPILED_RULES` built in at their defaults (compile-time constants: passed at run
    time they changed how the kernels were optimised and moved estimates in the last bits) and
    refuses other values. Where the two solvers differ, the plan (:mod:`cnce.backends.plan`)
    sets the field: ``roundoff_accept`` (the compiled solver's rule, always on there; the
    torch solver refuses it): when the
    decrement is below ``roundoff_tol * max(1, |loss|)``, the loss difference of the first
    trial is round-off, so a rejected first trial is accepted where it shrinks the gradient
    (else the problem stops, converged). The remaining fields are the compiled kernels'
    (the torch path has no progressive sampling): ``progressive`` solves first on prefixes of
    the data (``N/16``, ``N/4``) up to ``stage_tol``; ``hess_last`` pairs form the last stage's
    Gauss-Newton matrix (``0``: all; ``None``: ``hess_points``); ``reuse_h`` keeps a matrix
    after a full step whose decrease was ``reuse_rho_lo``-``reuse_rho_hi`` times the predicted
    one, ``carry_h`` carries it into the next stage, ``h_cost`` (a matrix pass in gradient
    passes) lets the last stage form it anew where that saves passes, predicting the decrement
    after forming the matrix where it was ``d_h`` as ``h_quadratic d_h^2`` and each later one
    as ``h_linear d_h`` times the previous (measured on the Gaussian), over at most
    ``h_horizon`` passes; ``noise_t`` lays the
    noise steps out once per simulation (kernels that can); ``sim_block_pairs`` pairs of one
    simulation per block of a compiled pass (the block's scratch stays in cache), and
    ``layout_block_pairs`` per block of the passes that read laid-out noise (the block stays in
    L1).
    """

    max_iter: int = 100
    tol: float = 1e-14
    ftol: float = 1e-12
    patience: int = 3
    c1: float = 1e-4
    max_halvings: int = 40
    alpha_grow: float = 2.0
    stall_tol: float = 1e-8
    damping: float = 1e-12
    damping_growth: float = 1e3
    damping_tries: int = 12
    shrink_min: float = 0.1
    shrink_max: float = 0.5
    roundoff_accept: bool = False
    roundoff_tol: float = 1e-12
    tol_float32: float = 1e-13
    hess_points: int = FitOptions.hess_points  # the plan sets it from FitOptions
    progressive: bool = False
    stage_tol: float = 1e-9
    hess_last: int | None = None
    reuse_h: bool = False
    reuse_rho_lo: float = 0.5
    reuse_rho_hi: float = 1.5
    carry_h: bool = False
    h_cost: float = 0.0
    h_quadratic: float = 2.0
    h_linear: float = 10.0
    h_horizon: int = 30
    noise_t: bool = False
    sim_block_pairs: int = 512
    layout_block_pairs: int = 128

    def __post_init__(self):
        validate_fields(self, {
            "max_iter": _INT0, "tol": _REAL0, "ftol": _REAL0, "patience": _INT1, "c1": _FRACTION, "max_halvings": _INT1,
            "alpha_grow": _REAL_POS, "stall_tol": _REAL0, "damping": _REAL0, "damping_growth": Real(lo=1, lo_open=True),
            "damping_tries": _INT1, "shrink_min": _FRACTION, "shrink_max": _FRACTION, "roundoff_accept": Boolean(),
            "roundoff_tol": _REAL0, "tol_float32": _REAL0, "hess_points": _INT0, "progressive": Boolean(),
            "stage_tol": _REAL0, "hess_last": _INT0 | None, "reuse_h": Boolean(), "reuse_rho_lo": _REAL0,
            "reuse_rho_hi": _REAL0, "carry_h": Boolean(), "h_cost": _REAL0, "h_quadratic": _REAL_POS,
            "h_linear": _REAL_POS, "h_horizon": _INT1, "noise_t": Boolean(), "sim_block_pairs": _INT1,
            "layout_block_pairs": _INT1})
        if self.shrink_min > self.shrink_max:
            raise ValueError(f"NewtonSettings.shrink_min must be <= shrink_max; got {self.shrink_min!r} > {self.shrink_max!r}")

    @property
    def block_pairs(self) -> int:
        """Pairs per block of this fit's compiled passes: ``layout_block_pairs`` where the noise
        is laid out (``noise_t``), else ``sim_block_pairs``."""
        return self.layout_block_pairs if self.noise_t else self.sim_block_pairs


#: the fields of :class:`NewtonSettings` that the compiled Newton solver has built in (their
#: defaults, compile-time constants of the kernels): it refuses other values
#: (:func:`cnce._fused.check_compiled_rules`); the torch solver reads every value
COMPILED_RULES = ("stall_tol", "damping", "damping_growth", "damping_tries", "shrink_min", "shrink_max", "roundoff_tol",
                  "reuse_rho_lo", "reuse_rho_hi", "h_quadratic", "h_linear", "h_horizon")


@dataclass(frozen=True)
class LBFGSSettings(_Replace):
    """How batched L-BFGS runs (:func:`cnce.optim.lbfgs`, and the ICA likelihood's compiled
    :func:`cnce._fused.ica_mle_all`): converged when ``max |grad| < gtol`` or the relative loss
    decrease stays below ``ftol`` for ``patience`` iterations, or when no step lowers the loss
    while ``max |grad| < stall_gtol``; Armijo with ``c1``, at most ``max_halvings`` trials
    (safeguarded within ``[shrink_min, shrink_max]`` times the step, as Newton's); ``history``
    stored pairs, a pair kept when ``s.y > curvature_tol |s| |y|``."""

    max_iter: int = 2000
    history: int = 10
    gtol: float = 1e-10
    ftol: float = 1e-14
    patience: int = 5
    c1: float = 1e-4
    max_halvings: int = 50
    stall_gtol: float = 1e-6
    curvature_tol: float = 1e-12
    shrink_min: float = 0.1
    shrink_max: float = 0.5

    def __post_init__(self):
        validate_fields(self, {"max_iter": _INT0, "history": _INT1, "gtol": _REAL0, "ftol": _REAL0, "patience": _INT1,
                               "c1": _FRACTION, "max_halvings": _INT1, "stall_gtol": _REAL0, "curvature_tol": _REAL0,
                               "shrink_min": _FRACTION, "shrink_max": _FRACTION})
        if self.shrink_min > self.shrink_max:
            raise ValueError(f"LBFGSSettings.shrink_min must be <= shrink_max; got {self.shrink_min!r} > {self.shrink_max!r}")


_DEFAULT = FitOptions()
_process = _DEFAULT  # the process-wide defaults (set_options)
_context: contextvars.ContextVar[FitOptions | None] = contextvars.ContextVar("cnce_fit_options", default=None)


def get_options() -> FitOptions:
    """The current default options: those of the innermost :func:`option_context` block of this
    thread or task, else the process-wide ones (:func:`set_options`)."""
    cur = _context.get()
    return _process if cur is None else cur


def set_options(**changes) -> FitOptions:
    """Change the process-wide defaults (validated); returns the new :class:`FitOptions`. Inside
    an :func:`option_context` block the block's options win until it ends."""
    global _process
    _process = _process.replace(**changes)
    return _process


@contextlib.contextmanager
def option_context(**changes) -> Iterator[FitOptions]:
    """Change the default options inside a ``with`` block; restored on exit (also on errors).
    Only this thread (or asyncio task) sees the change."""
    new = get_options().replace(**changes)
    token = _context.set(new)
    try:
        yield new
    finally:
        _context.reset(token)
