"""One result type for the Section 4 measures, and the interval rules every one of them follows.

A :class:`Measured` holds what the notebook prints for one claim: the measured value, its
baselines (what chance gives), an interval and the rule it came from, the verdict sentence, or
the reason the claim is *not testable here* with the number that makes it so.

Interval rules (:func:`seed_interval`, :func:`unit_interval`):

* three or more seeds: a Student-t interval over the per-seed values, with ``n - 1`` degrees of
  freedom stated (two for three seeds);
* two seeds: the range of the two values, not a t-interval;
* one seed: an interval over units (Wilson score interval for a share of units, a Student-t
  interval over units for a mean);
* a share's interval is clipped to ``[0, 1]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from cnce import report

__all__ = ["Measured", "seed_interval", "unit_interval", "share_interval", "not_testable", "results_table"]


@dataclass(frozen=True)
class Measured:
    """One claim's measure.

    Attributes:
        claim: what the paper says, in a few words (e.g. ``"layer 2 pools by orientation"``).
        measure: what is measured (e.g. ``"share of units pooling coherent orientations"``).
        value: the measured value (mean over seeds), ``nan`` when not testable.
        baselines: ``{name: value}``: what chance gives (random weights, shuffled inputs...).
        interval: ``(lo, hi)`` of ``value``; ``rule`` says how it was made.
        verdict: one sentence; starts with ``"not testable here"`` when the input lacks the
            spread the claim needs.
        not_testable: ``None``, or the reason (with the number) when not testable.
        n_units, n_seeds: what the value and interval rest on.
        extra: further numbers (p-values, per-seed values, ...).
    """

    claim: str
    measure: str
    value: float
    baselines: dict = field(default_factory=dict)
    interval: tuple[float, float] = (math.nan, math.nan)
    rule: str = ""
    verdict: str = ""
    not_testable: str | None = None
    n_units: int = 0
    n_seeds: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def testable(self) -> bool:
        return self.not_testable is None

    def row(self, digits: int = 2) -> dict:
        """A flat dict for a table: claim, value, interval, baselines, verdict."""
        f = lambda v: round(float(v), digits) if v is not None and np.isfinite(v) else None  # noqa: E731
        out = {"claim": self.claim, "measure": self.measure, "value": f(self.value),
               "interval": None if not self.testable else (f(self.interval[0]), f(self.interval[1])),
               "rule": self.rule}
        for k, v in self.baselines.items():
            out[f"baseline: {k}"] = f(v)
        out["verdict"] = self.verdict
        return out

    def __str__(self) -> str:
        if not self.testable:
            return f"{self.claim}: not testable here ({self.not_testable})"
        base = ", ".join(f"{k} {v:.2f}" for k, v in self.baselines.items())
        return (f"{self.claim}: {self.measure} {self.value:.2f} [{self.interval[0]:.2f}, {self.interval[1]:.2f}] "
                f"({self.rule}); baselines: {base}. {self.verdict}")


def results_table(results, digits: int = 2):
    """A pandas DataFrame of several :class:`Measured`, one row each (:meth:`Measured.row`)."""
    import pandas as pd

    return pd.DataFrame([r.row(digits) for r in results])


def not_testable(claim: str, measure: str, reason: str, **extra) -> Measured:
    """A :class:`Measured` that says the claim is not testable here, and why."""
    return Measured(claim=claim, measure=measure, value=math.nan, verdict=f"not testable here: {reason}",
                    not_testable=reason, extra=dict(extra))


def seed_interval(values, *, share: bool = False, level: float = 0.95) -> tuple[float, tuple[float, float], str]:
    """``(mean, (lo, hi), rule)`` over per-seed ``values`` by the library's one interval over
    seeds (:func:`cnce.report.seed_interval`: t with ``n - 1`` degrees of freedom for three or
    more seeds, the range for two, ``(v, v)`` and "one seed" for one; clipped to ``[0, 1]``
    when ``share``), for finite values only."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"values must be a non-empty array of finite numbers; got {values!r}")
    r = report.seed_interval(v, level, share=share)
    return r.mean, r.ci, r.rule


def share_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a share ``k / n`` of units (inside ``[0, 1]`` by construction)."""
    from scipy.stats import binomtest

    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1; got k={k!r}, n={n!r}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def unit_interval(per_seed_units, *, share: bool = False, level: float = 0.95) -> tuple[float, tuple[float, float], str, list]:
    """The interval of a measure over units and seeds.

    ``per_seed_units`` is a list (one entry per seed) of per-unit values (booleans when
    ``share``: the share of units with the property). The per-seed value is the share (or mean)
    over units; with one seed the interval is over units (Wilson for a share, t over units for
    a mean); with two or more seeds :func:`seed_interval` applies. Returns ``(value, (lo, hi),
    rule, per_seed_values)``."""
    seeds = [np.asarray(u, dtype=float).ravel() for u in per_seed_units]
    if not seeds or any(s.size == 0 for s in seeds):
        raise ValueError("per_seed_units must hold at least one non-empty array of unit values")
    per_seed = [float(s.mean()) for s in seeds]
    if len(seeds) >= 2:
        m, ci, rule = seed_interval(per_seed, share=share, level=level)
        return m, ci, rule, per_seed
    u = seeds[0]
    if share:
        return per_seed[0], share_interval(int(round(u.sum())), u.size, level), f"Wilson interval over {u.size} units, one seed", per_seed
    if u.size < 2:
        return per_seed[0], (per_seed[0], per_seed[0]), "one unit, one seed: no interval", per_seed
    _, lo, hi = report.t_interval(u, level)
    return per_seed[0], (lo, hi), f"t-interval over {u.size} units, one seed", per_seed

