"""Figures of the page "CNCE for your own energy network" (notebook 08)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from .toys import BOX, MLPEnergy, grid, sample_toy, true_log_prob

__all__ = ["density_figure", "net_from_state", "eps_theory_figure", "samples_figure", "interval_figure"]

LABELS = {"cnce": "CNCE", "nce": "NCE", "dsm": "DSM", "ssm": "SSM"}


def net_from_state(state: dict, hidden: int, layers: int) -> MLPEnergy:
    net = MLPEnergy(2, hidden, layers)
    net.load_state_dict(state)
    return net


def _true_density(toy, n, seed=0):
    """The toy's density on the plotting grid: closed form where there is one, else a
    2-D histogram of 400,000 draws (labelled as such)."""
    u, area = grid(n)
    lp = true_log_prob(toy, u)
    if lp is not None:
        return lp.exp().reshape(n, n).numpy(), "true density"
    x = sample_toy(toy, 400_000, generator=torch.Generator().manual_seed(seed)).numpy()
    h, _, _ = np.histogram2d(x[:, 1], x[:, 0], bins=n, range=[[-BOX, BOX], [-BOX, BOX]], density=True)
    return h, "histogram of 400k draws"


@torch.no_grad()
def _model_density(net, n):
    u, area = grid(n, dtype=torch.float32)
    f = net(u).double()
    p = torch.softmax(f, 0) / area
    return p.reshape(n, n).numpy()


def density_figure(nets: dict, toys, methods, *, hidden: int, layers: int, n: int = 150, loglik=None):
    """True densities (first column) beside the learned ones, one row per toy.

    Args:
        nets: ``(toy, method) -> state dict`` of :class:`MLPEnergy` networks.
        loglik: optional ``(toy, method) -> held-out log-likelihood`` shown in the titles.
    """
    fig, axes = plt.subplots(len(toys), len(methods) + 1, figsize=(1.75 * (len(methods) + 1), 1.8 * len(toys)),
                             squeeze=False)
    ext = [-BOX, BOX, -BOX, BOX]
    for i, toy in enumerate(toys):
        d, what = _true_density(toy, n)
        axes[i, 0].imshow(d, origin="lower", extent=ext, cmap="viridis", vmin=0, vmax=np.quantile(d, 0.995))
        axes[i, 0].set_title(f"{toy}\n({what})", fontsize=7)
        for j, m in enumerate(methods, start=1):
            ax = axes[i, j]
            p = _model_density(net_from_state(nets[(toy, m)], hidden, layers), n)
            ax.imshow(p, origin="lower", extent=ext, cmap="viridis", vmin=0, vmax=np.quantile(p, 0.995))
            t = LABELS.get(m, m)
            if loglik is not None and (toy, m) in loglik:
                t += f"\n{loglik[(toy, m)]:.2f}"
            ax.set_title(t, fontsize=7)
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def eps_theory_figure(eps, excess, sm_term):
    """``J(eps) - 2 log 2`` against ``eps^2 / 2 * J_SM`` (the score-matching theorem), log-log."""
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    ax.loglog(eps, np.abs(excess), "o-", label=r"$|J_N(\varepsilon) - 2\log 2|$")
    ax.loglog(eps, np.abs(np.asarray(eps) ** 2 / 2 * sm_term), "k--", label=r"$\varepsilon^2/2\;|J_{SM}|$")
    ax.set_xlabel(r"$\varepsilon$")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def samples_figure(data, samples: dict, *, box=BOX, title: str = "data"):
    """Scatter plots: the data (first panel) beside each method's Langevin samples."""
    fig, axes = plt.subplots(1, len(samples) + 1, figsize=(1.9 * (len(samples) + 1), 2.1), squeeze=False)
    panels = [(title, data)] + [(LABELS.get(k, k), v) for k, v in samples.items()]
    for ax, (name, pts) in zip(axes[0], panels):
        pts = np.asarray(pts)
        ax.scatter(pts[:, 0], pts[:, 1], s=1.5, alpha=0.4, color="k" if name == title else "C0", linewidths=0)
        ax.set_xlim(-box, box)
        ax.set_ylim(-box, box)
        ax.set_aspect("equal")
        ax.set_title(name, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def interval_figure(table, *, group: str, label: str, xlabel: str):
    """Mean differences with their (corrected) intervals: one row per case, one colour per
    ``group`` value (a rule or a method); the zero line is "no difference"."""
    cases = list(dict.fromkeys(zip(table.arch, table.dataset)))
    keys = list(dict.fromkeys(table[group]))
    fig, ax = plt.subplots(figsize=(5.6, 0.42 * len(cases) + 0.9))
    for j, k in enumerate(keys):
        d = table[table[group] == k]
        for i, c in enumerate(cases):
            r = d[(d.arch == c[0]) & (d.dataset == c[1])]
            if not len(r):
                continue
            r = r.iloc[0]
            y = i + (j - (len(keys) - 1) / 2) * 0.18
            ax.plot([r.lo, r.hi], [y, y], color=f"C{j}", lw=1.5)
            ax.plot([r["diff"]], [y], "o", color=f"C{j}", ms=3.5, label=LABELS.get(k, k) if i == 0 else None)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels([d if a == "mlp" else f"{d} ({a})" for a, d in cases], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel, fontsize=8)
    ax.legend(title=label, fontsize=7, title_fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig
