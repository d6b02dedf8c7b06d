"""Figures of the theory page (notebook 01): the loss against eps with the heuristic's path,
the approach of the CNCE loss to the score-matching objective (Supp. B), and the ICA
model's kinks. None of them is a figure of the paper; they illustrate Section 2.

Each function takes what the notebook computed and returns the figure.
"""
from __future__ import annotations

import math

import numpy as np

from . import METHOD_COLORS, curve_style, figure, shared_legend

__all__ = ["eps_path_figure", "sm_limit_figure", "ica_kinks_figure", "levels_figure"]

LOG4 = 2 * math.log(2)


def _np(a):
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def eps_path_figure(paths: dict, eps_grid):
    """The loss ``J_N(eps)`` at the initial parameters (solid) and at the true ones (dashed),
    the heuristic's two bands, the points it visited and the eps it chose; one panel per model.

    Args:
        paths: ``{model name: {"k", "E", "J", "curve0", "curve_true"}}``: the simulation shown,
            the eps and loss values the heuristic visited, and the loss on ``eps_grid`` at the
            initial and true parameters.
        eps_grid: the eps values of the curves.
    """
    fig, axes = figure(2)
    e = _np(eps_grid)
    for ax, (name, p) in zip(axes[0], paths.items()):
        top = max(1.1 * LOG4, 1.03 * float(p["curve0"].max()))
        ax.axhspan(0.9 * LOG4, 1.1 * LOG4, color="0.85", alpha=0.6, lw=0, label="too close: grow $\\varepsilon$")
        ax.axhspan(0.0, 0.5 * LOG4, color="tab:red", alpha=0.08, lw=0, label="too far: shrink $\\varepsilon$")
        ax.axhline(LOG4, color="grey", lw=0.9, ls=":")
        ax.plot(e, _np(p["curve0"]), color=METHOD_COLORS["cnce"], label=r"$\mathcal{J}_N$ at initial $\theta$")
        ax.plot(e, _np(p["curve_true"]), color=METHOD_COLORS["cnce"], ls="--", lw=1.0, label=r"$\mathcal{J}_N$ at true $\theta$")
        ax.plot(_np(p["E"]), _np(p["J"]), "o-", color="tab:orange", ms=5, lw=1.0, zorder=4, label="heuristic's path")
        ax.plot(_np(p["E"][-1:]), _np(p["J"][-1:]), "*", color="tab:red", ms=12, zorder=5, label="chosen $\\varepsilon$")
        ax.set_xscale("log")
        ax.set_ylim(0, top)
        ax.set_xlabel(r"$\varepsilon$")
        ax.set_ylabel(r"$\mathcal{J}_N(\varepsilon)$")
        ax.set_title(f"{name} model, simulation {p['k']}")
    shared_legend(fig, ncol=3)
    return fig


_NOISE_COLORS = {"independent": "tab:orange", "antithetic": "tab:blue", "antithetic, moment-matched": "navy"}
_NOISE_STYLES = {"independent": "-", "antithetic": "-", "antithetic, moment-matched": "--"}


def sm_limit_figure(eps, ratio: dict, limit: dict, half_sm: float):
    """``(J_N - 2 log 2) / eps^2`` against eps for each kind of noise, with half the
    score-matching objective (left), and its distance from the small-eps limit ``B_N`` (right).

    Args:
        eps: the eps values.
        ratio: ``{noise kind: ratio at each eps}``.
        limit: ``{noise kind: B_N}``.
        half_sm: half the sample score-matching objective.
    """
    fig, axes = figure(2)
    e = _np(eps)
    ax = axes[0, 0]
    for name in ratio:
        ax.plot(e, ratio[name], color=_NOISE_COLORS.get(name), ls=_NOISE_STYLES.get(name, "-"), label=name)
    ax.axhline(half_sm, color=METHOD_COLORS["sm"], lw=1.0, ls=":", label=r"$J_{SM}/2$")
    lo, hi = min(ratio["antithetic"].min(), half_sm), max(ratio["antithetic"].max(), half_sm)
    ax.set_ylim(lo - 0.6 * (hi - lo), hi + 0.2 * (hi - lo))
    ax.set_xscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$(\mathcal{J}_N - 2\log 2)/\varepsilon^2$")
    ax.set_title("Gaussian model")
    ax = axes[0, 1]
    for name in ratio:
        ax.plot(e, np.abs(ratio[name] - limit[name]), color=_NOISE_COLORS.get(name), ls=_NOISE_STYLES.get(name, "-"), label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$|(\mathcal{J}_N - 2\log 2)/\varepsilon^2 - B_N|$")
    ax.set_title(r"distance from the small-$\varepsilon$ limit")
    shared_legend(fig, ncol=2)
    return fig


def ica_kinks_figure(eps, ratio, kinks, half_sm_ae: float, half_sm_kinks: float, n_data: int, n_pairs: int):
    """ICA at the true demixing matrix: ``(J_N - 2 log 2) / eps^2`` against eps with the two
    versions of half the score-matching objective (left; values below -12 are cut), and the
    number of data-noise pairs that straddle a kink (right; zero is drawn at 0.5).

    Args:
        eps: the eps values.
        ratio: the ratio at each eps.
        kinks: the number of pairs straddling a kink at each eps.
        half_sm_ae: ``J_SM / 2`` with the almost-everywhere Hessian.
        half_sm_kinks: ``J_SM / 2`` with the kinks (integration by parts).
        n_data, n_pairs: the sample size and the number of data-noise pairs (for the titles).
    """
    fig, axes = figure(2)
    e = _np(eps)
    ax = axes[0, 0]
    ax.plot(e, ratio, color=METHOD_COLORS["cnce"], marker=".", label=r"$(\mathcal{J}_N - 2\log 2)/\varepsilon^2$")
    ax.axhline(half_sm_ae, color="grey", ls="--", lw=1.0, label=r"$J_{SM}/2$, a.e. Hessian (autograd)")
    ax.axhline(half_sm_kinks, color=METHOD_COLORS["sm"], ls=":", lw=1.4, label=r"$J_{SM}/2$ with the kinks (by parts)")
    ax.set_xscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$(\mathcal{J}_N - 2\log 2)/\varepsilon^2$")
    ax.set_ylim(-12, 6)
    ax.set_title(f"ICA at the true B, N = {n_data}")
    ax = axes[0, 1]
    ax.plot(e, np.maximum(kinks, 0.5), color=METHOD_COLORS["cnce"], marker=".")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel("pairs straddling a kink")
    ax.set_title(f"of {n_pairs} data-noise pairs\n(a count of 0 is plotted at 0.5 on this log axis)", fontsize="medium")
    shared_legend(fig, ncol=1)
    return fig


def levels_figure(levels, titles: dict):
    """Simulated median squared error (markers) against the level asymptotic theory predicts
    (lines: the median under the sandwich's normal law at the true parameters), ``log10``
    against ``log10 N``; one panel per study, one colour per kappa and one for MLE.

    Args:
        levels: the rows of ``theory-levels.csv`` (``study, method, kappa, N, pred_median,
            sim_median``; ``kappa`` -1 for MLE).
        titles: ``{study: panel title}``, in panel order.
    """
    fig, axes = figure(len(titles))
    for ax, (study, title) in zip(axes[0], titles.items()):
        d = levels[levels["study"] == study]
        for (method, kappa), c in d.groupby(["method", "kappa"], sort=True):
            if c["N"].nunique() < 2:  # a kappa of the sweep at one N only: no curve
                continue
            c = c.sort_values("N")
            st = curve_style(method, None if kappa < 0 else kappa)
            lx = np.log10(c["N"].to_numpy(float))
            ax.plot(lx, np.log10(c["pred_median"].to_numpy(float)), color=st["color"], lw=1.3, label=st["label"])
            ax.plot(lx, np.log10(c["sim_median"].to_numpy(float)), ls="none", marker=st["marker"], color=st["color"])
        ax.set_title(title)
        ax.set_xlabel(r"$\log_{10} N$")
    axes[0][0].set_ylabel(r"$\log_{10}$ median squared error")
    handles, labels = axes[0][0].get_legend_handles_labels()
    from matplotlib.lines import Line2D

    handles += [Line2D([], [], color="grey", lw=1.3), Line2D([], [], color="grey", ls="none", marker=".")]
    labels += ["predicted (theory)", "simulated median"]
    shared_legend(fig, handles, labels, ncol=4)
    return fig
