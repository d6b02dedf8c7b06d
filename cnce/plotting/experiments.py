"""Figures of the synthetic-experiment pages (notebooks 02-05): the paper's Figs. 1, 2 and 3
and the figures that check them. Each function takes the tidy results table (or what the
notebook computed) and returns the figure; :func:`cnce.plotting.consistency_figure` draws
Fig. 2a-b and Supp. Fig. 1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
import torch

from ..experiments.analysis import with_curve
from . import (METHOD_COLORS, PREDICTED_LABEL, PREDICTED_STYLE, QUANTILE_STYLE, error_plot, figure, not_computed,
               predicted_lines, shared_legend)

__all__ = ["stuck_strip_plot", "nce_vs_n_figure", "kappa_sweep_figure", "ring_noise_figure", "radii_figure",
           "ring_figure", "eps_sweep_figure", "RULE_MARKERS"]

_MODEL_NAMES = {"gaussian": "Gaussian", "ica": "ICA"}


def stuck_strip_plot(ica: pd.DataFrame, threshold: float = 1.0):
    """Every simulation's squared error at the largest N, one row of dots per curve, with the
    threshold above which a fit counts as stuck in a local minimum (dotted)."""
    N_max = int(ica.N.max())
    last = with_curve(ica[ica.N == N_max])
    last = last.assign(log10_error=np.log10(last.error))
    fig, ax = figure(1)
    sns.stripplot(data=last, x="log10_error", y="curve", hue="method", palette=METHOD_COLORS, ax=ax[0, 0], size=3,
                  legend=False)
    ax[0, 0].axvline(np.log10(threshold), color="grey", linestyle=":")
    ax[0, 0].set_xlabel(rf"$\log_{{10}}$ squared error at N = {N_max}")
    ax[0, 0].set_ylabel("")
    fig.tight_layout()
    return fig


def _method_handles(ax):
    """The first panel's legend entries with the kappa dropped from their labels."""
    handles, labels = ax.get_legend_handles_labels()
    return handles, [lab.split(",")[0] for lab in labels]


def _study_levels(predicted, study):
    return None if predicted is None else predicted[predicted.study == study]


def nce_vs_n_figure(df: pd.DataFrame, study: str, kappas, panel: str = "c", predicted: pd.DataFrame | None = None):
    """Paper Fig. 2c (Gaussian) or 2d (ICA): CNCE, NCE and MLE against N, one panel per kappa,
    two panels a row, one legend below. ``df`` holds the rows against N (no kappa sweep).
    ``predicted``: the level asymptotic theory predicts (:func:`cnce.plotting.predicted_lines`)."""
    kappas = list(kappas)
    fig, axes = figure(2, -(-len(kappas) // 2), sharey=True)
    name = _MODEL_NAMES.get(study, study)
    drawn = None
    for ax, k in zip(axes.flat, kappas):
        title = f"({panel}) {name}, \u03ba = {k}"
        if not (df.study == study).any():
            not_computed(ax, title)
            continue
        sub = df[(df.study == study) & ((df.kappa == k) | df.kappa.isna())]
        summary = error_plot(ax, sub, bands="dashed", title=title, legend=False)
        pred = _study_levels(predicted, study)
        if pred is not None:
            predicted_lines(ax, pred[(pred.kappa == k) | (pred.kappa < 0)], summary)
        drawn = drawn or ax
    for ax in axes.flat[len(kappas):]:
        ax.set_visible(False)
    if drawn is not None:
        shared_legend(fig, *_method_handles(drawn), quantiles=True, ncol=4)
    else:
        fig.tight_layout()
    return fig


def kappa_sweep_figure(df: pd.DataFrame, N_fixed: int, kappas, studies=("gaussian", "ica"),
                       predicted: pd.DataFrame | None = None):
    """Paper Fig. 2e-f: CNCE and NCE against kappa at ``N = N_fixed``, with MLE's median at
    that N as a horizontal line; one panel per model, one legend below. ``predicted``: the level
    asymptotic theory predicts, dotted (MLE's a dotted horizontal line)."""
    sweep = df[(df.N == N_fixed) & df.kappa.isin(list(kappas))]
    fig, axes = figure(2)
    drawn = None
    for ax, study, panel in zip(axes[0], studies, "ef"):
        title = f"({panel}) {_MODEL_NAMES.get(study, study)}, N = {N_fixed}"
        if not (sweep.study == study).any():
            not_computed(ax, title)
            continue
        summary = error_plot(ax, sweep[sweep.study == study], x="kappa", bands="dashed", title=title, legend=False)
        mle = df[(df.study == study) & (df.method == "mle") & (df.N == N_fixed)].error
        ax.axhline(np.log10(mle.median()), color="black", linewidth=1, label="MLE (median)")
        pred = _study_levels(predicted, study)
        if pred is not None:
            pred = pred[pred.N == N_fixed]
            predicted_lines(ax, pred, summary, x="kappa")
            mle_pred = pred[pred.method == "mle"].pred_median
            if len(mle_pred):
                if PREDICTED_LABEL not in ax.get_legend_handles_labels()[1]:
                    ax.plot([], [], color="grey", label=PREDICTED_LABEL, **PREDICTED_STYLE)
                ax.axhline(np.log10(float(mle_pred.iloc[0])), color="black", **PREDICTED_STYLE)
        drawn = drawn or ax
    if drawn is not None:
        shared_legend(fig, *drawn.get_legend_handles_labels(), quantiles=True, ncol=4)
    else:
        fig.tight_layout()
    return fig


def ring_noise_figure(model, theta, y_nce, y_cnce, eps: float, lim: float = 9.0):
    """Paper Fig. 1: the 2-D ring's normalised density (a), NCE's noise (b) and CNCE's noise
    with scale ``eps`` (c), as 2-D histograms on ``[-lim, lim]^2``; a colour bar beside each
    panel (density; noise points per bin)."""
    import matplotlib as mpl

    grid = torch.linspace(-lim, lim, 301, dtype=torch.float64)
    U = torch.stack(torch.meshgrid(grid, grid, indexing="xy"), -1).reshape(1, -1, 2)
    dens = model.log_prob(U, theta).exp().reshape(301, 301)
    fig, axes = figure(3, height=3.0)
    a = axes[0]
    cs = a[0].contourf(grid, grid, dens, levels=12, cmap="Blues")
    cbars = [fig.colorbar(cs, ax=a[0], fraction=0.046, pad=0.04)]
    a[0].set_title("(a) model density")
    bins = np.linspace(-lim, lim, 90)
    *_, im = a[1].hist2d(*y_nce.numpy().T, bins=bins, cmap="Oranges")
    cbars.append(fig.colorbar(im, ax=a[1], fraction=0.046, pad=0.04))
    a[1].set_title("(b) NCE noise")
    *_, im = a[2].hist2d(*y_cnce.numpy().T, bins=bins, cmap="Blues")
    cbars.append(fig.colorbar(im, ax=a[2], fraction=0.046, pad=0.04))
    a[2].set_title(f"(c) CNCE noise, \u03b5 = {eps:.2f}")
    for ax in a:
        ax.set_aspect("equal")
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_xlabel("$u_1$")
        ax.set_ylabel("$u_2$")
        ax.title.set_fontsize("medium")
        ax.grid(False)
    for cb in cbars:  # colour: the density (a), noise points per histogram bin (b, c)
        cb.ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(3))
        cb.ax.tick_params(labelsize="small")
    fig.tight_layout()
    return fig


def radii_figure(radii: dict, mu: float, gamma: float, dim: int):
    """Histograms of the radii of each data generator (``{radial: radii}``) against the radial
    density of the ring model, ``r^(dim-1) exp(-gamma (r - mu)^2 / 2)``."""
    fig, axes = figure(1)
    ax = axes[0, 0]
    colors = {"exact": "tab:blue", "authors": "tab:red"}
    for radial, r in radii.items():
        ax.hist(r.numpy(), bins=80, density=True, alpha=0.4, color=colors.get(radial),
                label=f"radial = {radial!r} (mean {float(r.mean()):.2f})")
    rs = np.linspace(0.01, 12, 400)
    logp = (dim - 1) * np.log(rs) - 0.5 * gamma * (rs - mu) ** 2
    p = np.exp(logp - logp.max())
    ax.plot(rs, p / np.trapezoid(p, rs), color="black",
            label=f"model: $r^{dim - 1} e^{{-\\gamma(r-\\mu)^2/2}}$")
    ax.set_xlabel("radius r")
    ax.set_ylabel("density")
    # the legend goes below the axes: inside, it covered the bars of one generator
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1, frameon=False)
    fig.tight_layout()
    return fig


def ring_figure(df: pd.DataFrame, titles: dict, predicted: pd.DataFrame | None = None):
    """Paper Fig. 3: CNCE, NCE and MLE against N, one panel per data generator (the keys of
    ``titles``), one legend below. Each panel has its own y-axis: under the authors' generator the
    errors flatten at a bias far above the exact sampler's (a shared axis squeezed them).
    ``predicted``: the level asymptotic theory predicts, dotted."""
    fig, axes = figure(2, sharey=False)
    for ax, (study, title) in zip(axes[0], titles.items()):
        summary = error_plot(ax, df[df.study == study], title=title, legend=False)
        predicted_lines(ax, _study_levels(predicted, study), summary)
    shared_legend(fig, quantiles=True, ncol=4)
    return fig


#: Marker of each other eps rule in :func:`eps_sweep_figure`.
RULE_MARKERS = {"scale": "s", "pilot": "^"}


def eps_sweep_figure(df: pd.DataFrame, titles: dict, ncols: int = 2):
    """The eps experiment (notebook 07): one panel per study (the keys of ``titles``, in order).

    ``log10`` median squared error (solid, markers) and its 0.1/0.9 quantiles (dashed) of CNCE
    against ``log10`` of eps over the heuristic's eps of each simulation, one colour per
    ``N``; the heuristic's choice (0 on the x axis) is a star on a grey vertical line, MLE's
    median a dotted and score matching's a dash-dotted horizontal line in the curve's colour
    (where the model has them), and the other rules open markers at their median relative
    eps. One legend below the panels. Returns the figure."""
    import matplotlib as mpl
    from matplotlib.lines import Line2D

    from ..experiments import eps_sweep

    n = len(titles)
    nrows = -(-n // ncols)
    fig, axes = figure(ncols, nrows)
    summary = eps_sweep.sweep_summary(df)
    ref = eps_sweep.reference_levels(df)
    Ns = sorted(summary["N"].unique())
    colors = {N: mpl.colormaps["viridis"](0.15 + 0.6 * i / max(len(Ns) - 1, 1)) for i, N in enumerate(Ns)}
    handles = {"heuristic's eps": Line2D([], [], color="white", marker="*", markersize=12, markeredgecolor="black",
                                         linestyle="none")}
    for ax, (study, title) in zip(axes.flat, titles.items()):
        s_all = summary[summary.study == study]
        if s_all.empty:
            not_computed(ax, title)
            continue
        ax.axvline(0.0, color="grey", linewidth=1.0, zorder=1)
        for N in Ns:
            s = s_all[(s_all.N == N) & s_all.factor.notna()].sort_values("factor")
            if s.empty:
                continue
            c = colors[N]
            xs = np.log10(s["factor"].to_numpy(float))
            handles.setdefault(f"CNCE, N = {N}", ax.plot(xs, s["log10_median"], color=c, marker=".", zorder=3)[0])
            for q in ("log10_q10", "log10_q90"):
                ax.plot(xs, s[q], color=c, zorder=2, **QUANTILE_STYLE)
            h = s[s.eps_setting == "default"]
            ax.plot([0.0], h["log10_median"], color=c, marker="*", markersize=12, markeredgecolor="black",
                    linestyle="none", zorder=5)
            for method, ls, name in (("mle", ":", "MLE"), ("sm", "-.", "score matching")):
                r = ref[(ref.study == study) & (ref.method == method) & (ref.N == N)]
                if not r.empty:
                    ax.axhline(float(r["log10_median"].iloc[0]), color=c, linestyle=ls, linewidth=1.1, zorder=1)
                    handles.setdefault(name, Line2D([], [], color="black", linestyle=ls, linewidth=1.1))
            for rule, marker in RULE_MARKERS.items():
                r = s_all[(s_all.N == N) & (s_all.eps_setting == f"rule:{rule}")]
                if not r.empty:
                    ax.plot(np.log10(r["rel_eps"].to_numpy(float)), r["log10_median"], color=c, marker=marker,
                            markerfacecolor="none", markersize=8, linestyle="none", zorder=4)
                    handles.setdefault(f"rule {rule!r}", Line2D([], [], color="black", marker=marker, markerfacecolor="none",
                                                                 markersize=8, linestyle="none"))
        ax.set_title(title)
        ax.set_xlabel(r"$\log_{10}$ ($\varepsilon$ / heuristic's)")
        ax.set_ylabel(r"$\log_{10}$ squared error")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    shared_legend(fig, list(handles.values()), list(handles.keys()), quantiles=True, ncol=3)
    return fig

