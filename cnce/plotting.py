"""The one figure style of the book: median curves with 0.1/0.9 quantile bands.

Every synthetic figure of the paper (Figs. 2-3, Supp. Fig. 1) plots the median squared
error over simulations as a solid line and the 0.1 and 0.9 quantiles as dashed lines,
against ``log10 N`` with a ``log10`` error axis. :func:`error_plot` draws exactly that for
any subset of the tidy results table (:mod:`cnce.experiments.store`); colours encode the
method (MLE black, CNCE blues, NCE oranges) and the shade and marker encode ``kappa``.
"""
from __future__ import annotations

import math

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .experiments.analysis import curve_label, quantile_summary

__all__ = ["use_style", "curve_style", "error_plot", "slope_guide", "not_computed", "METHOD_COLORS", "KAPPA_MARKERS", "figure"]

METHOD_COLORS = {"mle": "black", "cnce": "tab:blue", "nce": "tab:orange", "sm": "tab:green"}
_METHOD_CMAPS = {"cnce": "Blues", "nce": "Oranges", "sm": "Greens"}
KAPPA_MARKERS = {2: "o", 4: "v", 6: "s", 8: "P", 10: "D", 20: "^", 40: "X", 60: "*"}
_KAPPA_RANGE = (2, 60)


def use_style() -> None:
    """Apply the book's figure style (seaborn ticks, readable sizes, light grid)."""
    sns.set_theme(context="notebook", style="ticks", font_scale=0.9)
    mpl.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "legend.frameon": False,
        "legend.fontsize": "small",
        "lines.linewidth": 1.6,
        "lines.markersize": 5,
    })


def figure(ncols: int = 2, nrows: int = 1, width: float = 5.0, height: float = 3.8, **kw):
    """``plt.subplots`` with the book's panel size."""
    use_style()
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)


def curve_style(method: str, kappa=None) -> dict:
    """Colour, marker and label of one curve: colour by method, shade and marker by kappa."""
    method = str(method)
    if kappa is None or pd.isna(kappa) or method not in _METHOD_CMAPS:
        return {"color": METHOD_COLORS.get(method, "grey"), "marker": "x" if method == "mle" else ".", "label": curve_label(method, kappa)}
    k = int(kappa)
    lo, hi = math.log(_KAPPA_RANGE[0]), math.log(_KAPPA_RANGE[1])
    t = min(max((math.log(k) - lo) / (hi - lo), 0.0), 1.0)
    color = mpl.colormaps[_METHOD_CMAPS[method]](0.4 + 0.55 * t)
    return {"color": color, "marker": KAPPA_MARKERS.get(k, "o"), "label": curve_label(method, kappa)}


def error_plot(
    ax,
    df: pd.DataFrame,
    *,
    x: str = "N",
    curves=None,
    bands: str = "dashed",
    value: str = "error",
    title: str | None = None,
    ylabel: str = r"$\log_{10}$ squared error",
    legend: bool = True,
):
    """Median (solid, markers) and 0.1/0.9 quantiles of ``value`` for each curve.

    Args:
        ax: a matplotlib axis.
        df: tidy rows (one study); each ``(method, kappa)`` pair present is a curve.
        x: ``"N"`` (plotted as ``log10 N``) or ``"kappa"`` (plotted as is).
        curves: optional list of ``(method, kappa)`` to draw, in order (kappa ``None`` for MLE).
        bands: ``"dashed"`` (the paper's dashed quantile lines), ``"fill"`` or ``"none"``.
    Returns the summary table that was drawn.
    """
    if x not in ("N", "kappa"):
        raise ValueError(f"x must be 'N' or 'kappa'; got {x!r}")
    if bands not in ("dashed", "fill", "none"):
        raise ValueError(f"bands must be 'dashed', 'fill' or 'none'; got {bands!r}")
    if df.empty:
        raise ValueError("df must hold at least one row")
    if x == "kappa":
        df = df[df["kappa"].notna()]
        keys = ("method",)
    else:
        keys = ("method", "kappa")
    summary = quantile_summary(df, keys + (x,), value)
    if curves is None:
        present = summary[list(keys)].drop_duplicates()
        order = {"mle": 0, "cnce": 1, "nce": 2, "sm": 3}
        curves = sorted(
            [(r.method, None if x == "kappa" or pd.isna(r.kappa) else int(r.kappa)) for r in present.itertuples()],
            key=lambda c: (order.get(c[0], 9), -1 if c[1] is None else c[1]),
        )
    for method, kappa in curves:
        sel = summary["method"] == method
        if x == "N":
            sel &= summary["kappa"].isna() if kappa is None else (summary["kappa"] == kappa)
        s = summary[sel].sort_values(x)
        if s.empty:
            continue
        xs = s["log10_N"] if x == "N" else s["kappa"].astype(float)
        st = curve_style(method, kappa)
        ax.plot(xs, s["log10_median"], color=st["color"], marker=st["marker"], label=st["label"], zorder=3)
        if bands == "dashed":
            for q in ("log10_q10", "log10_q90"):
                ax.plot(xs, s[q], color=st["color"], linestyle="--", linewidth=0.9, alpha=0.8, zorder=2)
        elif bands == "fill":
            ax.fill_between(xs.to_numpy(float), s["log10_q10"].to_numpy(float), s["log10_q90"].to_numpy(float),
                            color=st["color"], alpha=0.15, linewidth=0, zorder=1)
    ax.set_xlabel(r"$\log_{10} N$" if x == "N" else r"$\kappa$ (noise samples per data point)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(loc="best")
    return summary


def slope_guide(ax, slope: float = -1.0, anchor=None, length: float = 1.0, label: str | None = "slope $-1$"):
    """A grey reference segment of the given slope (the 1/N rate of a consistent estimator)."""
    if anchor is None:
        x0, x1 = ax.get_xlim()
        y0, y1 = ax.get_ylim()
        anchor = (x0 + 0.55 * (x1 - x0), y0 + 0.85 * (y1 - y0))
    xs = np.array([anchor[0], anchor[0] + length])
    ax.plot(xs, anchor[1] + slope * (xs - anchor[0]), color="grey", linewidth=1.0, linestyle=":", label=label, zorder=1)


def not_computed(ax, title: str | None = None, text: str = "not computed at this scale and seed") -> None:
    """Mark an empty panel whose results are not stored."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)


def consistency_figure(df: pd.DataFrame, titles: dict):
    """One panel per study (the keys of ``titles``, in order): error against N with median and
    0.1/0.9 quantile bands (:func:`error_plot`), a 1/N slope guide and a legend. Studies with no
    rows in ``df`` get a "not computed" panel. Returns the figure."""
    fig, axes = figure(len(titles))
    for ax, (study, title) in zip(axes[0], titles.items()):
        if not (df.study == study).any():
            not_computed(ax, title)
            continue
        error_plot(ax, df[df.study == study], title=title)
        slope_guide(ax)
        ax.legend(loc="lower left")
    fig.tight_layout()
    return fig
