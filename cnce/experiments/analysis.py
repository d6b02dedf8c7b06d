"""Summaries of the tidy results table: quantile bands, log-log slopes, ratios, counts.

The paper's synthetic figures plot, for each curve, the median over simulations and the
0.1 and 0.9 quantiles of the squared estimation error, against ``log10 N`` (or ``kappa``)
with a ``log10`` error axis (Section 3.2). Quantiles commute with the monotone ``log10``,
so the summaries here are taken on the error and reported in both scales.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["curve_label", "quantile_summary", "fit_slopes", "method_ratio", "stuck_counts", "convergence_summary", "format_table", "with_curve"]

QUANTILES = (0.1, 0.5, 0.9)


def curve_label(method: str, kappa) -> str:
    """``"CNCE, kappa = 10"``, ``"NCE, kappa = 2"``, ``"MLE"``: one label per curve."""
    m = str(method).upper()
    if kappa is None or pd.isna(kappa):
        return m
    return f"{m}, \u03ba = {int(kappa)}"


def quantile_summary(df: pd.DataFrame, by=("study", "method", "kappa", "N"), value: str = "error") -> pd.DataFrame:
    """Median and 0.1/0.9 quantiles of ``value`` for each group, with ``log10`` columns.

    Groups with a missing ``kappa`` (MLE) are kept. Returns columns ``*by, n, q10, median,
    q90, log10_q10, log10_median, log10_q90`` and ``log10_N`` when ``N`` is a key.
    """
    by = list(by)
    for c in by + [value]:
        if c not in df.columns:
            raise ValueError(f"by/value must name columns of df; {c!r} is not one of {list(df.columns)}")
    g = df.groupby(by, dropna=False, sort=True)[value]
    out = pd.DataFrame({
        "n": g.size(),
        "q10": g.quantile(QUANTILES[0]),
        "median": g.median(),
        "q90": g.quantile(QUANTILES[2]),
    }).reset_index()
    with np.errstate(divide="ignore"):
        for c in ("q10", "median", "q90"):
            out[f"log10_{c}"] = np.log10(out[c].astype(float))
    if "N" in by:
        out["log10_N"] = np.log10(out["N"].astype(float))
    return out


def fit_slopes(df: pd.DataFrame, by=("study", "method", "kappa"), value: str = "error", N_min: int | None = None) -> pd.DataFrame:
    """Least-squares slope of ``log10 median error`` against ``log10 N`` for each curve.

    A consistent estimator whose squared error decays like ``1/N`` has slope ``-1``. Returns
    ``*by, slope, stderr, intercept, r2, points`` (``scipy.stats.linregress`` on the medians).
    """
    s = quantile_summary(df, tuple(by) + ("N",), value)
    if N_min is not None:
        s = s[s["N"] >= N_min]
    rows = []
    for key, grp in s.groupby(list(by), dropna=False, sort=True):
        grp = grp[np.isfinite(grp["log10_median"])]
        if len(grp) < 2:
            continue
        r = stats.linregress(grp["log10_N"], grp["log10_median"])
        rows.append({**dict(zip(by, key)), "slope": r.slope, "stderr": r.stderr, "intercept": r.intercept,
                     "r2": r.rvalue**2, "points": len(grp)})
    return pd.DataFrame(rows)


def method_ratio(df: pd.DataFrame, numerator: str = "nce", denominator: str = "cnce", by=("study", "kappa", "N")) -> pd.DataFrame:
    """Ratio of the median errors of two methods at each grid point (e.g. NCE / CNCE)."""
    s = quantile_summary(df[df["method"].isin([numerator, denominator])], ("method",) + tuple(by))
    wide = s.pivot_table(index=list(by), columns="method", values="median", dropna=False)
    if numerator not in wide or denominator not in wide:
        raise ValueError(f"numerator/denominator must be methods present in df; got {numerator!r}/{denominator!r}, have {sorted(df['method'].unique())}")
    out = wide[[numerator, denominator]].rename(columns={numerator: f"median_{numerator}", denominator: f"median_{denominator}"})
    out["ratio"] = out[f"median_{numerator}"] / out[f"median_{denominator}"]
    out["log10_ratio"] = np.log10(out["ratio"])
    return out.dropna().reset_index()


def stuck_counts(df: pd.DataFrame, threshold: float, by=("study", "method", "kappa", "N"), value: str = "error") -> pd.DataFrame:
    """How many simulations end with ``value > threshold`` in each group (a local-minimum count)."""
    if not threshold > 0:
        raise ValueError(f"threshold must be > 0; got {threshold!r}")
    g = df.assign(stuck=df[value] > threshold).groupby(list(by), dropna=False, sort=True)["stuck"]
    return pd.DataFrame({"stuck": g.sum().astype(int), "of": g.size()}).reset_index()


def convergence_summary(df: pd.DataFrame, by=("study", "method", "kappa")) -> pd.DataFrame:
    """Fraction converged, median iterations, largest final gradient norm, loss against its start."""
    g = df.assign(loss_drop=df["init_loss"] - df["loss"]).groupby(list(by), dropna=False, sort=True)
    return pd.DataFrame({
        "converged": g["converged"].mean(),
        "median_iter": g["iterations"].median(),
        "max_grad_norm": g["grad_norm"].max(),
        "median_init_loss": g["init_loss"].median(),
        "median_loss": g["loss"].median(),
        "min_loss_drop": g["loss_drop"].min(),
    }).reset_index()


def format_table(df: pd.DataFrame, digits: int = 3, sci=("max_grad_norm", "grad_norm"), index: bool = False) -> str:
    """``df.to_string`` with floats rounded to ``digits`` and the columns in ``sci`` in 1.2e-05 form."""
    fmt = {c: (lambda v: "nan" if pd.isna(v) else f"{v:.1e}") for c in sci if c in df.columns}
    other = [c for c in df.columns if c not in fmt]
    return df.round({c: digits for c in other}).to_string(index=index, formatters=fmt)


_METHOD_RANK = {"cnce": 0, "nce": 1, "sm": 2, "mle": 3}


def with_curve(df: pd.DataFrame) -> pd.DataFrame:
    """Add a ``curve`` label column (``"CNCE, kappa = 2"``, ..., ``"MLE"``) and sort rows by
    method (CNCE, NCE, SM, MLE) and then kappa, so that pivots keep that order (``sort=False``)."""
    out = df.assign(curve=[curve_label(m, k) for m, k in zip(df["method"], df["kappa"])],
                    _rank=[_METHOD_RANK.get(str(m), 9) for m in df["method"]],
                    _k=pd.to_numeric(df["kappa"], errors="coerce").fillna(-1).to_numpy(float))
    return out.sort_values(["_rank", "_k"], kind="stable").drop(columns=["_rank", "_k"]).reset_index(drop=True)
