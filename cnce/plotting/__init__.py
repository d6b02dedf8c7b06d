"""The book's figures: one style, and one named function per figure of the notebooks.

Every synthetic figure of the paper (Figs. 2-3, Supp. Fig. 1) plots the median squared
error over simulations as a solid line and the 0.1 and 0.9 quantiles as dashed lines,
against ``log10 N`` with a ``log10`` error axis. :func:`error_plot` draws exactly that for
any subset of the tidy results table (:mod:`cnce.experiments.store`). Colours encode the
method (MLE black, CNCE blue, NCE orange); where one panel holds CNCE at several ``kappa``,
as in the paper's Fig. 2a-b, each ``kappa`` gets a colour and a marker of its own.

Figures are sized for the book's page: :data:`PAGE_WIDTH` inches at 100 dpi is the width of
the page body at a 1280 px window, so a figure is shown at its natural size and its fonts
(:func:`use_style`) keep their size on screen. Legends that several panels share go below
the panels (:func:`shared_legend`).

The figures of single pages live in submodules: :mod:`cnce.plotting.theory` (the theory
page) and :mod:`cnce.plotting.experiments` (the synthetic experiments, Figs. 1-3 and
Supp. Fig. 1).
"""
from __future__ import annotations

import math

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from ..experiments.analysis import curve_label, quantile_summary

__all__ = ["use_style", "curve_style", "error_plot", "slope_guide", "not_computed", "shared_legend",
           "consistency_figure", "predicted_lines", "METHOD_COLORS", "KAPPA_COLORS", "KAPPA_MARKERS", "PAGE_WIDTH", "figure"]

#: Width of the book's page body at a 1280 px window (688 px), in inches at the figures' 100 dpi.
PAGE_WIDTH = 6.8
METHOD_COLORS = {"mle": "black", "cnce": "tab:blue", "nce": "tab:orange", "sm": "tab:green"}
#: Colours of CNCE's curves when one panel shows several kappa (Okabe-Ito based, colour-blind safe).
KAPPA_COLORS = {2: "#56B4E9", 4: "#7B3294", 6: "#009E73", 8: "#A6761D", 10: "#0072B2", 20: "#CC79A7",
                40: "#D55E00", 60: "#666666"}
KAPPA_MARKERS = {2: "o", 4: "v", 6: "s", 8: "P", 10: "D", 20: "^", 40: "X", 60: "*"}
_KAPPA_RANGE = (2, 60)
QUANTILE_STYLE = {"linestyle": (0, (4, 2)), "linewidth": 0.9, "alpha": 0.75}


def use_style() -> None:
    """Apply the book's figure style: seaborn ticks, a light grid, and fonts of at least
    10.5 pt, legends and tick labels included: 14.6 px on the page, at least the size of the
    book's smallest text (code and outputs, 14 px)."""
    sns.set_theme(context="notebook", style="ticks")
    mpl.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "font.size": 11,
        "axes.titlesize": 11,
        "axes.labelsize": 11,
        "xtick.labelsize": 10.5,
        "ytick.labelsize": 10.5,
        "legend.fontsize": 10.5,
        "legend.title_fontsize": 10.5,
        "figure.titlesize": 11.5,
        "legend.frameon": False,
        "lines.linewidth": 1.6,
        "lines.markersize": 5,
    })


def figure(ncols: int = 2, nrows: int = 1, width: float | None = None, height: float | None = None, **kw):
    """``plt.subplots`` sized for the page: ``width`` and ``height`` are per panel (inches);
    by default the panels of a row share :data:`PAGE_WIDTH`."""
    use_style()
    width = PAGE_WIDTH / ncols if width is None else width
    height = (3.4 if ncols == 1 else 2.9) if height is None else height
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)


def shared_legend(fig, handles=None, labels=None, *, ax=None, ncol: int | None = None, quantiles: bool = False):
    """One legend for all panels, below them (or filling the spare axis ``ax``). Handles
    default to the first panel's; ``quantiles`` adds a grey dashed "0.1 / 0.9 quantiles" entry."""
    if handles is None:
        handles, labels = fig.axes[0].get_legend_handles_labels()
    handles, labels = list(handles), list(labels)
    if quantiles:
        handles.append(Line2D([], [], color="grey", **QUANTILE_STYLE))
        labels.append("0.1 / 0.9 quantiles")
    if ax is not None:
        ax.axis("off")
        return ax.legend(handles, labels, loc="center")
    ncol = ncol or min(len(handles), 3)
    fig.tight_layout()
    leg = fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol)
    return leg


def curve_style(method: str, kappa=None, *, by_kappa: bool = True) -> dict:
    """Colour, marker and label of one curve. With ``by_kappa`` (a panel with several kappa of
    one method) the colour and marker follow kappa; otherwise the colour is the method's."""
    method = str(method)
    if kappa is None or pd.isna(kappa):
        return {"color": METHOD_COLORS.get(method, "grey"), "marker": "x" if method == "mle" else ".", "label": curve_label(method, kappa)}
    k = int(kappa)
    marker = KAPPA_MARKERS.get(k, "o")
    if not by_kappa:
        return {"color": METHOD_COLORS.get(method, "grey"), "marker": marker, "label": curve_label(method, kappa)}
    if k in KAPPA_COLORS:
        color = KAPPA_COLORS[k]
    else:  # a kappa outside the book's grids: a shade of viridis by log kappa
        lo, hi = math.log(_KAPPA_RANGE[0]), math.log(_KAPPA_RANGE[1])
        color = mpl.colormaps["viridis"](min(max((math.log(k) - lo) / (hi - lo), 0.0), 1.0) * 0.9)
    return {"color": color, "marker": marker, "label": curve_label(method, kappa)}


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
    per_method = pd.Series([m for m, k in curves if k is not None]).value_counts()
    for method, kappa in curves:
        sel = summary["method"] == method
        if x == "N":
            sel &= summary["kappa"].isna() if kappa is None else (summary["kappa"] == kappa)
        s = summary[sel].sort_values(x)
        if s.empty:
            continue
        xs = s["log10_N"] if x == "N" else s["kappa"].astype(float)
        st = curve_style(method, kappa, by_kappa=per_method.get(method, 0) > 1)
        ax.plot(xs, s["log10_median"], color=st["color"], marker=st["marker"], label=st["label"], zorder=3)
        if bands == "dashed":
            for q in ("log10_q10", "log10_q90"):
                ax.plot(xs, s[q], color=st["color"], zorder=2, **QUANTILE_STYLE)
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


def consistency_figure(df: pd.DataFrame, titles: dict, predicted: pd.DataFrame | None = None):
    """Paper Fig. 2a-b and Supp. Fig. 1: one panel per study (the keys of ``titles``, in
    order, two panels a row), error against N with the median and the 0.1/0.9 quantiles
    (:func:`error_plot`) and a 1/N slope guide; one legend for all panels (below them, or in
    the spare place of an odd number of panels). Studies with no rows in ``df`` get a "not
    computed" panel. ``predicted``: rows ``study, method, kappa, N, pred_median`` (kappa -1 for
    MLE; ``theory-levels.csv`` of ``python -m companion.coverage --levels``), drawn dotted in
    each curve's colour: the median asymptotic theory predicts. Returns the figure."""
    n = len(titles)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    fig, axes = figure(ncols, nrows)
    handles = {}
    for ax, (study, title) in zip(axes.flat, titles.items()):
        if not (df.study == study).any():
            not_computed(ax, title)
            continue
        drawn = error_plot(ax, df[df.study == study], title=title, legend=False)
        if predicted is not None:
            predicted_lines(ax, predicted[predicted.study == study], drawn)
        slope_guide(ax, label="slope $-1$ (rate 1/N)")
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    spare = list(axes.flat[n:])
    for ax in spare[1:]:
        ax.set_visible(False)
    labels = sorted(handles, key=lambda lab: (lab.startswith(("slope", "predicted")), lab != "MLE", _kappa_of(lab)))
    if spare:
        fig.tight_layout()
        shared_legend(fig, [handles[lab] for lab in labels], labels, ax=spare[0], quantiles=True)
    else:
        shared_legend(fig, [handles[lab] for lab in labels], labels, quantiles=True)
    return fig


#: legend label and line style of the level asymptotic theory predicts (:func:`predicted_lines`)
PREDICTED_LABEL = "predicted median (theory; dotted)"
PREDICTED_STYLE = {"lw": 1.1, "ls": (0, (1, 1.5)), "zorder": 4}


def predicted_lines(ax, pred: pd.DataFrame, drawn: pd.DataFrame, *, x: str = "N") -> None:
    """The predicted median of each drawn curve, dotted in its colour (one legend entry).

    ``pred``: rows ``method, kappa, N, pred_median`` of one study (kappa -1 for MLE;
    ``theory-levels.csv`` of ``python -m companion.coverage --levels``); ``drawn``: the summary
    :func:`error_plot` returned. ``x="N"``: one line per ``(method, kappa)`` against ``log10 N``;
    ``x="kappa"``: one line per method against kappa at the one N drawn, MLE's a horizontal line."""
    if pred is None or pred.empty:
        return
    first = True

    def line(xs, ys, color):
        nonlocal first
        if first:  # one grey legend entry for all the dotted lines
            ax.plot([], [], color="grey", label=PREDICTED_LABEL, **PREDICTED_STYLE)
        ax.plot(xs, np.log10(np.asarray(ys, float)), color=color, **PREDICTED_STYLE)
        first = False

    if x == "kappa":
        for method, c in pred[pred.kappa > 0].groupby("method", sort=True):
            shown = drawn[drawn.method == method]
            c = c[c.kappa.isin(shown.kappa)].sort_values("kappa")
            if len(c) >= 2:
                line(c["kappa"].to_numpy(float), c["pred_median"], curve_style(method, None)["color"])
        return
    per_method = drawn.dropna(subset=["kappa"]).groupby("method")["kappa"].nunique()
    for (method, kappa), c in pred.groupby(["method", "kappa"], sort=True):
        k = None if kappa < 0 else int(kappa)
        shown = drawn[(drawn.method == method) & (drawn.kappa.isna() if k is None else drawn.kappa == k)]
        if c["N"].nunique() < 2 or shown.empty:
            continue
        c = c.sort_values("N")
        st = curve_style(method, k, by_kappa=per_method.get(method, 0) > 1)
        line(np.log10(c["N"].to_numpy(float)), c["pred_median"], st["color"])



def _kappa_of(label: str) -> int:
    """The kappa of a curve label such as ``"CNCE, κ = 10"`` (0 without one): legend order."""
    return int(label.rsplit("= ", 1)[1]) if "= " in label else 0


from . import experiments, theory  # noqa: E402  (the pages' figures; they use the names above)
