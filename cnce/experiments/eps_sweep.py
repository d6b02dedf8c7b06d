"""Summaries of the eps experiment (notebook 07): error against eps relative to the heuristic,
the heuristic's efficiency loss with a bootstrap interval, and other rules against it.

The rows are those of :func:`cnce.experiments.load_results` for experiment ``"eps"``: CNCE at
the heuristic's eps (``eps_setting == "default"``), at fixed multiples of it (``"x<f>"``) and
at other rules (``"rule:<name>"``), with MLE and score matching as reference levels.

*Efficiency loss* of a setting at one ``(study, N)``: its median squared error over the
smallest median squared error on the grid (the heuristic and its fixed multiples), so 1 when
the setting is the grid's best. Its interval resamples the simulations with replacement (one
draw of indices for every setting: the settings share each simulation's data and noise) and
recomputes the ratio, the grid's best included, 2000 times: the 2.5 % and 97.5 % quantiles.
Because the grid's smallest median is itself noisy, a setting that is truly as good as the
best shows a loss somewhat above 1; :func:`efficiency_loss` also reports that noise level
(``split_half``): the loss, on the odd simulations, of the setting that is best on the even
ones.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .analysis import quantile_summary
from ..eps import EpsSetting
from .configs import eps_factor

__all__ = ["FLAT_WITHIN", "with_factor", "sweep_summary", "reference_levels", "efficiency_loss", "rule_comparison", "flat_range"]


#: The flat part of an error-against-eps curve: the grid points within this factor of the best median.
FLAT_WITHIN = 1.25


def _grid_setting(s: str) -> bool:
    """The heuristic or a multiple of it (not another rule)."""
    return EpsSetting.parse(s).rule is None


def with_factor(df: pd.DataFrame) -> pd.DataFrame:
    """CNCE rows with ``factor`` (the nominal multiple of the heuristic's eps; NaN for other
    rules) and ``rel_eps`` (eps over the heuristic's eps of the same simulation, N and kappa)."""
    cn = df[df["method"] == "cnce"].copy()
    cn["factor"] = [eps_factor(str(s)) for s in cn["eps_setting"]]
    keys = ["study", "N", "kappa", "sim"]
    h = cn[cn["eps_setting"] == "default"].set_index(keys)["eps"]
    idx = pd.MultiIndex.from_frame(cn[keys])
    cn["rel_eps"] = cn["eps"].to_numpy(float) / h.reindex(idx).to_numpy(float)
    return cn


def sweep_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median and 0.1/0.9 quantiles of the error per ``(study, N, eps_setting)`` of CNCE, with
    the nominal ``factor`` and the median ``rel_eps``; sorted by study, N and factor."""
    cn = with_factor(df)
    s = quantile_summary(cn, ("study", "N", "eps_setting"))
    extra = cn.groupby(["study", "N", "eps_setting"], sort=True).agg(factor=("factor", "first"), rel_eps=("rel_eps", "median"),
                                                                   eps=("eps", "median")).reset_index()
    s = s.merge(extra, on=["study", "N", "eps_setting"])
    return s.sort_values(["study", "N", "factor"], na_position="last", kind="stable").reset_index(drop=True)


def reference_levels(df: pd.DataFrame) -> pd.DataFrame:
    """Median and 0.1/0.9 quantiles of MLE's and score matching's errors per ``(study, N)``."""
    ref = df[df["method"].isin(["mle", "sm"])]
    if ref.empty:
        return quantile_summary(df.iloc[:0], ("study", "method", "N"))
    return quantile_summary(ref, ("study", "method", "N"))


def _matrix(g: pd.DataFrame, settings) -> np.ndarray:
    """``(len(settings), S)`` errors, simulations in order."""
    w = g.pivot_table(index="eps_setting", columns="sim", values="error", aggfunc="first")
    return w.loc[list(settings)].to_numpy(float)


def _boot_medians(E: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Medians of each row of ``E (G, S)`` over the resampled simulations ``idx (B, S)``: ``(G, B)``."""
    return np.median(E[:, idx], axis=-1)


def efficiency_loss(df: pd.DataFrame, of: str = "default", n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The efficiency loss of setting ``of`` at each ``(study, N)`` (see the module docstring).

    Returns ``study, N, setting, value, lo, hi, best, best_factor, split_half``; ``value`` is the
    ratio of medians (>= 1 for a grid setting), ``best`` the grid's best setting and
    ``split_half`` the noise level described in the module docstring."""
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2; got {n_boot!r}")
    cn = df[df["method"] == "cnce"]
    rng = np.random.default_rng(seed)
    rows = []
    for (study, N), g in cn.groupby(["study", "N"], sort=True):
        present = set(g["eps_setting"].astype(str))
        if of not in present:
            continue
        grid = sorted((s for s in present if _grid_setting(s)), key=eps_factor)
        E = _matrix(g, grid)
        e_of = _matrix(g, [of])[0]
        S = E.shape[1]
        med = np.median(E, axis=1)
        b = int(np.argmin(med))
        idx = rng.integers(0, S, size=(n_boot, S))
        reps = np.median(e_of[idx], axis=-1) / _boot_medians(E, idx).min(axis=0)
        lo, hi = np.quantile(reps, [0.025, 0.975])
        even, odd = np.arange(0, S, 2), np.arange(1, S, 2)
        pick = int(np.argmin(np.median(E[:, even], axis=1)))
        m_odd = np.median(E[:, odd], axis=1)
        rows.append(dict(study=study, N=int(N), setting=of, value=float(np.median(e_of) / med[b]), lo=float(lo), hi=float(hi),
                         best=grid[b], best_factor=eps_factor(grid[b]), split_half=float(m_odd[pick] / m_odd.min())))
    return pd.DataFrame(rows)


def rule_comparison(df: pd.DataFrame, rule: str, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """``log10`` of the median error of setting ``rule`` over the heuristic's, per ``(study, N)``,
    with a paired bootstrap interval (negative: the rule is more accurate), and the rule's
    median eps relative to the heuristic's. Columns ``study, N, rule, value, lo, hi, rel_eps``."""
    cn = with_factor(df)
    rng = np.random.default_rng(seed)
    rows = []
    for (study, N), g in cn.groupby(["study", "N"], sort=True):
        if rule not in set(g["eps_setting"].astype(str)):
            continue
        E = _matrix(g, [rule, "default"])
        S = E.shape[1]
        idx = rng.integers(0, S, size=(n_boot, S))
        m = _boot_medians(E, idx)
        reps = np.log10(m[0] / m[1])
        lo, hi = np.quantile(reps, [0.025, 0.975])
        rel = float(g.loc[g["eps_setting"] == rule, "rel_eps"].median())
        rows.append(dict(study=study, N=int(N), rule=rule, value=float(np.log10(np.median(E[0]) / np.median(E[1]))),
                         lo=float(lo), hi=float(hi), rel_eps=rel))
    return pd.DataFrame(rows)


def flat_range(summary: pd.DataFrame, within: float = FLAT_WITHIN) -> pd.DataFrame:
    """Per ``(study, N)``: the smallest and largest grid factor whose median error is within a
    factor ``within`` of the grid's best (the flat part of the curve), and whether the
    heuristic (factor 1) is in it. ``summary`` is :func:`sweep_summary`'s table."""
    if not within >= 1:
        raise ValueError(f"within must be >= 1; got {within!r}")
    rows = []
    grid = summary[summary["factor"].notna()]
    for (study, N), g in grid.groupby(["study", "N"], sort=True):
        best = g["median"].min()
        flat = g[g["median"] <= within * best]
        rows.append(dict(study=study, N=int(N), flat_lo=float(flat["factor"].min()), flat_hi=float(flat["factor"].max()),
                         heuristic_in=bool((flat["factor"] == 1.0).any())))
    return pd.DataFrame(rows)
