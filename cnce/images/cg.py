"""The authors' minimiser: Polak-Ribiere conjugate gradients with a near-exact line search.

The image model of the paper was trained with C. E. Rasmussen's ``minimize`` (the MATLAB
function the authors' ``estimateMain.m`` calls for every meta-iteration). This module is an
implementation of that *algorithm*, written from its description, for flat float tensors on
any device:

* **Directions.** Steepest descent first; then Polak-Ribiere conjugate directions
  ``s <- (g'.g' - g.g') / (g.g) * s - g'``, reset to steepest descent whenever the new
  direction is not a descent direction.
* **First trial step** ``1 / (1 + |g|^2)`` (the ``red = 1`` of ``minimize``); after a
  successful line search the next one starts at the last step times
  ``min(RATIO, slope_before / slope_now)``.
* **Line search.** *Extrapolation*: cubic extrapolation from the origin of the search and the
  current point, the step kept within ``[x + INT x, EXT x]``; it stops at a point whose slope
  is no longer below ``SIG`` times the initial slope or whose value breaks the sufficient
  decrease ``f0 + RHO * x * slope0``. *Interpolation*: quadratic (when the bracket's upper
  value is above ``f0``) or cubic interpolation inside the bracket, kept ``INT`` of the
  bracket away from its ends, until the strong Wolfe-Powell conditions
  ``|slope| <= -SIG slope0`` and ``f <= f0 + RHO x slope0`` hold. At most ``MAX``
  evaluations per line search; a non-finite value or gradient halves the trial step.
* **Failure.** When a line search fails, the best point it saw is kept and the next search
  restarts along steepest descent; two failures in a row end the minimisation.
* **Budget.** ``line_searches`` line searches (the authors used 10 per meta-iteration).

The constants are those of ``minimize``: ``INT = 0.1``, ``EXT = 3.0``, ``MAX = 20``,
``RATIO = 10``, ``SIG = 0.1``, ``RHO = SIG / 2``. As ``minimize`` does, the count of line
searches includes failed ones, and the count of evaluations includes the first one at the
starting point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..constraints import Integer, validate

__all__ = ["CGSettings", "CGResult", "minimize_cg", "ConjugateGradients"]

_REALMIN = 2.2250738585072014e-308  # smallest normal double; guards a division in the step ratio


@dataclass(frozen=True)
class CGSettings:
    """Constants of the line search (those of Rasmussen's ``minimize``)."""

    line_searches: int = 10
    INT: float = 0.1  # do not re-evaluate within 0.1 of the bracket's ends
    EXT: float = 3.0  # extrapolate at most 3 times the current step
    MAX: int = 20  # evaluations per line search
    RATIO: float = 10.0  # largest growth of the first trial step from one line search to the next
    SIG: float = 0.1  # curvature condition |slope| <= -SIG * slope0
    RHO: float = 0.05  # sufficient decrease f <= f0 + RHO * x * slope0

    def __post_init__(self):
        validate(self.line_searches, Integer(lo=1), "line_searches")
        if not (0 < self.RHO < self.SIG < 1):
            raise ValueError(f"need 0 < RHO < SIG < 1; got RHO={self.RHO!r}, SIG={self.SIG!r}")
        if not (0 < self.INT < 0.5) or not self.EXT > 1 or not self.RATIO > 0:
            raise ValueError(f"need 0 < INT < 0.5, EXT > 1, RATIO > 0; got INT={self.INT!r}, EXT={self.EXT!r}, RATIO={self.RATIO!r}")
        validate(self.MAX, Integer(lo=1), "MAX")


@dataclass
class CGResult:
    """What :func:`minimize_cg` did: the final point and value, the value after every
    successful line search (``f_history[0]`` is the starting value), the line searches used
    (failed ones included) and the function evaluations (the first one included)."""

    x: torch.Tensor
    f: float
    f_history: list[float] = field(default_factory=list)
    line_searches: int = 0
    evaluations: int = 0
    failed_searches: int = 0
    stopped: str = "budget"  # "budget" or "two failures"


def _finite(f: float, g: torch.Tensor) -> bool:
    return math.isfinite(f) and bool(torch.isfinite(g).all())


def _cubic_extrapolate(x1, f1, d1, x2, f2, d2, s: CGSettings) -> float:
    """The step from the cubic through (x1, f1, d1) and (x2, f2, d2), kept in
    ``[x2 + INT (x2 - x1), EXT x2]``."""
    h = x2 - x1
    A = 6.0 * (f1 - f2) + 3.0 * (d2 + d1) * h
    B = 3.0 * (f2 - f1) - (2.0 * d1 + d2) * h
    disc = B * B - A * d1 * h
    x3 = float("nan")
    if disc >= 0:
        den = B + math.sqrt(disc)
        if den != 0:
            x3 = x1 - d1 * h * h / den
    if not math.isfinite(x3) or x3 < 0 or x3 > x2 * s.EXT:
        return x2 * s.EXT
    return max(x3, x2 + s.INT * h)


def _interpolate(x2, f2, d2, x4, f4, d4, f0, s: CGSettings) -> float:
    """A trial step inside the bracket ``[x2, x4]``: quadratic when ``f4 > f0``, cubic
    otherwise; bisection when that fails; kept ``INT`` of the bracket away from its ends."""
    h = x4 - x2
    x3 = float("nan")
    if f4 > f0:
        den = f4 - f2 - d2 * h
        if den != 0:
            x3 = x2 - 0.5 * d2 * h * h / den
    else:
        A = 6.0 * (f2 - f4) / h + 3.0 * (d4 + d2) if h != 0 else float("nan")
        B = 3.0 * (f4 - f2) - (2.0 * d2 + d4) * h
        disc = B * B - A * d2 * h * h
        if disc >= 0 and A != 0 and math.isfinite(A):
            x3 = x2 + (math.sqrt(disc) - B) / A
    if not math.isfinite(x3):
        x3 = 0.5 * (x2 + x4)
    return max(min(x3, x4 - s.INT * h), x2 + s.INT * h)


def minimize_cg(fg: Callable[[torch.Tensor], tuple[float, torch.Tensor]], x0: torch.Tensor, *,
                settings: CGSettings | None = None, line_searches: int | None = None) -> CGResult:
    """Minimise ``f`` from ``x0`` by Polak-Ribiere conjugate gradients (see the module).

    Args:
        fg: ``x -> (f(x), grad f(x))`` with ``f`` a Python float and the gradient a tensor
            shaped like ``x``.
        x0: flat starting point (not modified).
        settings: the line-search constants (:class:`CGSettings`).
        line_searches: overrides ``settings.line_searches``.
    """
    s = settings or CGSettings()
    if line_searches is not None:
        s = CGSettings(**{**s.__dict__, "line_searches": line_searches})
    if not isinstance(x0, torch.Tensor) or x0.ndim != 1:
        raise ValueError(f"x0 must be a 1-D tensor; got {type(x0).__name__} of shape {getattr(x0, 'shape', None)}")
    x = x0.detach().clone()
    f0, g0 = fg(x)
    f0 = float(f0)
    n_eval = 1
    if not _finite(f0, g0):
        raise ValueError(f"the objective is not finite at the starting point (f = {f0!r})")
    res = CGResult(x=x, f=f0, f_history=[f0])
    d = -g0  # search direction
    slope0 = -float(g0 @ g0)
    step = 1.0 / (1.0 - slope0)
    failed_last = False
    n_search = 0
    while n_search < s.line_searches:
        n_search += 1
        best_x, best_f, best_g = x, f0, g0
        evals_left = s.MAX
        # -- extrapolation: find a bracket, or a point that already satisfies the conditions
        while True:
            x2, f2, d2 = 0.0, f0, slope0  # each extrapolation step uses the origin and the new point
            f3, g3 = f0, g0
            ok = False
            while not ok and evals_left > 0:
                evals_left -= 1
                f3, g3 = fg(x + step * d)
                f3 = float(f3)
                n_eval += 1
                if _finite(f3, g3):
                    ok = True
                else:
                    step = 0.5 * (x2 + step)
            if f3 < best_f:
                best_x, best_f, best_g = x + step * d, f3, g3
            d3 = float(g3 @ d)
            if d3 > s.SIG * slope0 or f3 > f0 + step * s.RHO * slope0 or evals_left == 0:
                break
            x1, f1, d1 = x2, f2, d2
            x2, f2, d2 = step, f3, d3
            step = _cubic_extrapolate(x1, f1, d1, x2, f2, d2, s)
        # -- interpolation inside the bracket until the strong Wolfe-Powell conditions hold
        x4 = f4 = d4 = None  # set at the first pass: the extrapolation ended above the bracket
        while (abs(d3) > -s.SIG * slope0 or f3 > f0 + step * s.RHO * slope0) and evals_left > 0:
            if d3 > 0 or f3 > f0 + step * s.RHO * slope0:
                x4, f4, d4 = step, f3, d3  # new upper end of the bracket
            else:
                x2, f2, d2 = step, f3, d3  # new lower end
            step = _interpolate(x2, f2, d2, x4, f4, d4, f0, s)
            f3, g3 = fg(x + step * d)
            f3 = float(f3)
            n_eval += 1
            evals_left -= 1
            if not _finite(f3, g3):  # treat like a point beyond the minimum
                f3, d3 = float("inf"), float("inf")
                continue
            if f3 < best_f:
                best_x, best_f, best_g = x + step * d, f3, g3
            d3 = float(g3 @ d)
        if abs(d3) < -s.SIG * slope0 and f3 < f0 + step * s.RHO * slope0:
            # success: move, then the Polak-Ribiere direction
            x = x + step * d
            f0 = f3
            res.f_history.append(f0)
            beta = float(g3 @ g3 - g0 @ g3) / float(g0 @ g0)
            d = beta * d - g3
            g0 = g3
            slope_prev = slope0
            slope0 = float(g0 @ d)
            if slope0 > 0:  # not a descent direction: steepest descent instead
                d = -g0
                slope0 = -float(d @ d)
            step = step * min(s.RATIO, slope_prev / (slope0 - _REALMIN))
            failed_last = False
        else:
            # failure: keep the best point seen; two failures in a row end the search
            x, f0, g0 = best_x, best_f, best_g
            res.failed_searches += 1
            if failed_last:
                res.stopped = "two failures"
                break
            d = -g0
            slope0 = -float(d @ d)
            step = 1.0 / (1.0 - slope0)
            failed_last = True
    res.x, res.f, res.line_searches, res.evaluations = x, f0, n_search, n_eval
    return res


class ConjugateGradients:
    """:func:`minimize_cg` over a list of tensors (parameters with ``requires_grad``), in the
    style of a ``torch.optim`` optimiser: ``step(closure)`` runs one call of the minimiser
    (``settings.line_searches`` line searches, a fresh start, as the authors' code does at
    every meta-iteration). ``closure()`` must zero the gradients, compute the loss, call
    ``backward`` and return the loss. The last :class:`CGResult` is in ``last``."""

    def __init__(self, params, settings: CGSettings | None = None):
        self.params = [p for p in params]
        if not self.params:
            raise ValueError("params must hold at least one tensor")
        self.settings = settings or CGSettings()
        self.param_groups = [{"params": self.params}]
        self.last: CGResult | None = None

    def _set(self, flat: torch.Tensor) -> None:
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(flat, self.params)

    def step(self, closure) -> float:
        def fg(flat):
            self._set(flat)
            loss = closure()
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
            loss = loss.detach() if isinstance(loss, torch.Tensor) else loss
            return float(loss), torch.cat([g.reshape(-1) for g in grads]).detach().clone()

        with torch.no_grad():
            x0 = torch.nn.utils.parameters_to_vector(self.params).detach().clone()
        res = minimize_cg(fg, x0, settings=self.settings)
        self._set(res.x)
        self.last = res
        return res.f

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:  # stateless between calls (a fresh start each time)
        return None
