"""Figure helpers for the neural image model (Figs. 4-6 and Supp. D.2-D.4 of the paper).

Every function takes arrays computed by :mod:`cnce.images` and returns the matplotlib figure.
"""
from __future__ import annotations

import numpy as np

from cnce.plotting import PAGE_WIDTH

__all__ = [
    "caption",
    "page_fontsize",
    "mosaic",
    "plot_photos",
    "plot_mosaic",
    "plot_pooling",
    "plot_space_orientation",
    "plot_layer4",
    "plot_ablation",
    "plot_memorisation",
    "plot_d2_curves",
    "plot_training",
    "plot_comparison",
    "plot_gabor_summary",
    "plot_layer1_measures",
    "plot_pooling_coherence",
    "plot_so_coherence",
    "plot_top_patches",
    "pooled_units",
    "degenerate_spreads",
    "plot_d2_snapshots",
    "plot_layer3_units",
    "icon_responses",
    "ICON_CONVENTIONS",
    "plot_layer4_units",
    "glue_figure",
    "plot_d2_measures",
]


def mosaic(tiles: np.ndarray, ncol: int | None = None, pad: int = 1, normalise: bool = True) -> np.ndarray:
    """Arrange ``tiles (K, n, n)`` in a grid image; each tile scaled to ``[-1, 1]`` by its max |.|
    (``normalise``); padding is NaN (drawn as background)."""
    tiles = np.asarray(tiles, dtype=float)
    K, n, m = tiles.shape
    if normalise:
        tiles = tiles / np.maximum(np.abs(tiles).max(axis=(1, 2), keepdims=True), 1e-12)
    ncol = ncol or int(np.ceil(np.sqrt(K)))
    nrow = int(np.ceil(K / ncol))
    out = np.full((nrow * (n + pad) + pad, ncol * (m + pad) + pad), np.nan)
    for k in range(K):
        r, c = divmod(k, ncol)
        out[pad + r * (n + pad): pad + r * (n + pad) + n, pad + c * (m + pad): pad + c * (m + pad) + m] = tiles[k]
    return out


def page_fontsize(width: float, size: float = 10.5) -> float:
    """Font size (pt) for a figure ``width`` inches wide that the page shrinks to its width
    (:data:`cnce.plotting.PAGE_WIDTH`): ``size`` scaled up by the shrink factor, so that text
    shows on the page as ``size`` does in a page-wide figure (10.5 pt: 14.6 px, the size of the
    book's code and outputs)."""
    return size * max(1.0, width / PAGE_WIDTH)


def _pyplot():
    """``matplotlib.pyplot`` with the book's figure style applied (:func:`cnce.plotting.use_style`:
    fonts of at least 10.5 pt, figures sized for the page)."""
    import matplotlib.pyplot as plt

    from cnce.plotting import use_style

    use_style()
    return plt


def caption(fig, text: str, fontsize: float | None = None):
    """Title ``fig`` with ``text`` (which paper figure it reproduces) above its panels.

    The figure grows by one line at the top and its axes keep their size and place, so the
    layout of any figure (tight or hand-placed) is left as it was. The font follows the
    figure's width so that it reads alike on the page (12 pt at 7 inches)."""
    w, h = fig.get_size_inches()
    fontsize = fontsize or max(12.0, 12.0 * w / PAGE_WIDTH)
    extra = 2.2 * fontsize / 72  # inches: one line with some air
    fig.set_size_inches(w, h + extra)
    for ax in fig.axes:
        x0, y0, bw, bh = ax.get_position().bounds
        ax.set_position([x0, y0 * h / (h + extra), bw, bh * h / (h + extra)])
    fig.text(0.5, 1 - 0.5 * extra / (h + extra), text, ha="center", va="center", fontsize=fontsize)
    return fig


def glue_figure(name: str, fig):
    """Keep ``fig`` under ``name`` for the book's ``{glue:figure}`` directive, which gives it its
    caption and alt text in the page's markdown, and close it so that it is not drawn twice.

    The figure is glued with ``display=True``, so a reader of the notebook still sees it below
    its cell; the book hides that copy through the cell's ``remove-output`` tag and shows the
    figure where the directive stands."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    glue(name, fig, display=True)
    plt.close(fig)


def _show(ax, img, title=None, fontsize: float | None = None):
    plt = _pyplot()

    cmap = plt.get_cmap("gray").with_extremes(bad="white")
    lim = np.nanmax(np.abs(img)) if np.isfinite(img).any() else 1.0
    ax.imshow(img, cmap=cmap, vmin=-lim, vmax=lim, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=fontsize or page_fontsize(ax.figure.get_figwidth()))


def plot_photos(images: list[np.ndarray], names: list[str], ncol: int = 4):
    """The training photographs in a grid of ``ncol`` columns at the page's width, each titled
    with its name and size in pixels."""
    plt = _pyplot()

    nrow = int(np.ceil(len(images) / ncol))
    side = PAGE_WIDTH / ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(PAGE_WIDTH, nrow * (side + 0.35)), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, name, im in zip(axes.flat, names, images):
        ax.imshow(im, cmap="gray")
        ax.set_title(f"{name}, {im.shape[1]} x {im.shape[0]}")
    fig.tight_layout(pad=0.3)
    return fig


def plot_mosaic(panels: dict[str, np.ndarray], ncol: int | None = None, size: float = 4.0):
    """Side-by-side mosaics, one per entry of ``panels`` (title -> tiles ``(K, n, n)``), ``size``
    inches wide each; the figure's height follows the mosaics' aspect ratio (no blank bands)."""
    plt = _pyplot()

    imgs = {title: mosaic(tiles, ncol) for title, tiles in panels.items()}
    aspect = max(img.shape[0] / img.shape[1] for img in imgs.values())
    title_h = 0.35 if any(imgs) else 0.0
    fig, axes = plt.subplots(1, len(panels), figsize=(size * len(panels), size * aspect + title_h), squeeze=False)
    for ax, (title, img) in zip(axes[0], imgs.items()):
        _show(ax, img, title or None)
    fig.subplots_adjust(left=0.005, right=0.995, bottom=0.005, top=1 - title_h / (size * aspect + title_h),
                        wspace=0.04)
    return fig


def pooled_units(q: np.ndarray, max_units: int = 10, mass: float = 0.9) -> list[np.ndarray]:
    """For each row of non-negative pooling weights ``q (K, K_below)``, the indices of the largest
    weights: at most ``max_units``, or fewer when they already hold ``mass`` of the total
    (:func:`cnce.images.measures.pooled_sets`, which the pooling measures use too)."""
    from cnce.images.measures import pooled_sets

    return pooled_sets(q, max_units, mass)


def plot_pooling(units: list[int], q: np.ndarray, features: np.ndarray, max_units: int = 10, mass: float = 0.9):
    """Fig. 5 (right): each selected second-layer unit (a row) with the first-layer features it pools
    and bars for their pooling weights ``q = w**2`` (normalised by the unit's largest weight)."""
    plt = _pyplot()

    sel = pooled_units(q[units], max_units, mass)
    width = max_units * 0.8 + 1.2
    fig = plt.figure(figsize=(width, len(units) * 1.15))
    gs = fig.add_gridspec(2 * len(units), max_units + 1, height_ratios=[1, 0.22] * len(units),
                          width_ratios=[1.5] + [1] * max_units, hspace=0.05, wspace=0.08,
                          left=0.01, right=0.99, bottom=0.01, top=0.99)
    for r, (j, idx) in enumerate(zip(units, sel)):
        lab = fig.add_subplot(gs[2 * r: 2 * r + 2, 0])
        lab.text(0.5, 0.5, f"unit {j}", ha="center", va="center", fontsize=page_fontsize(width))
        lab.axis("off")
        w = q[j, idx] / q[j].max()
        for c, (k, wk) in enumerate(zip(idx, w)):
            ax = fig.add_subplot(gs[2 * r, c + 1])
            _show(ax, features[k] / np.abs(features[k]).max())
            bx = fig.add_subplot(gs[2 * r + 1, c + 1])
            _weight_bar(bx, wk)
    return fig


def _weight_bar(ax, w: float):
    """A thin horizontal bar of length ``w`` (in [0, 1]) on a light track of length 1, as the
    paper's bars beneath each icon."""
    ax.barh([0], [1.0], height=0.5, color="0.88")
    ax.barh([0], [w], height=0.5, color="C0")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.5, 0.5)
    ax.axis("off")


def _integer_ticks(ax, nbins: int | str = "auto"):
    """Whole numbers only on the x axis (meta-iterations), at most ``nbins`` intervals."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=nbins))


def _polar_segments(resp: list[np.ndarray], positions: list[np.ndarray], freqs, orientations, radius: float = 0.5):
    """Closed polar curves (one per probe position and frequency) for one unit.

    ``resp[f] (n_pos, n_orient)`` are normalised responses in [0, 1]; the curve at a position
    has radius ``resp * radius / freq`` in the direction of the stimulus' bars (perpendicular
    to its wave vector), mirrored, so lower frequencies draw larger circles. ``orientations``
    are wave-vector angles in image coordinates (``x`` right, ``y`` down, as
    :func:`cnce.images.probes.gabor` and the probes use them), and so are the curves: drawn on
    axes whose ``y`` points down, a curve lies along the bars of the stimulus it prefers.
    """
    segs, alphas = [], []
    ang = np.concatenate([orientations, orientations + np.pi, orientations[:1] + 2 * np.pi]) + np.pi / 2
    for R, pos, fr in zip(resp, positions, freqs):
        for (x, y), r in zip(pos, R):
            if r.max() <= 0.05:
                continue
            rr = np.concatenate([r, r, r[:1]]) * radius / fr
            segs.append(np.stack([x + rr * np.cos(ang), y + rr * np.sin(ang)], 1))
            alphas.append(float(r.max()))
    return segs, alphas


def _so_segments(resp_unit: list[np.ndarray], probe, radius: float = 0.5):
    """:func:`_polar_segments` of one unit for ``probe``: the largest radius at a frequency is
    ``probe.sigma(freq)`` where the probe has that method, else ``radius / freq``."""
    if hasattr(probe, "sigma"):
        segs, alphas = [], []
        for r, f in zip(resp_unit, probe.freqs):
            s, a = _polar_segments([r], [probe.positions(f)], [f], probe.orientations, radius=probe.sigma(f) * f)
            segs += s
            alphas += a
        return segs, alphas
    return _polar_segments(resp_unit, [probe.positions(f) for f in probe.freqs], probe.freqs, probe.orientations,
                           radius=radius)


def normalise_responses(resp: list[np.ndarray]) -> list[np.ndarray]:
    """Per unit: subtract the median response over all stimuli, divide by the largest excess,
    clip at zero. ``resp[f] (K, n_pos, n_orient)`` -> same shapes in [0, 1]."""
    allr = np.concatenate([r.reshape(r.shape[0], -1) for r in resp], 1)
    med = np.median(allr, 1)
    top = np.maximum(allr.max(1) - med, 1e-12)
    return [np.clip((r - med[:, None, None]) / top[:, None, None], 0, 1) for r in resp]


#: How a space-orientation icon is drawn: ``"authors"`` (their ``plot_rFields_response.m``: the
#: unit's best probe frequency only, its linear response with its sign, positive in blue and
#: negative in red, divided by the largest |response|) or ``"overlay"`` (every probe frequency
#: overlaid, the response above its median divided by the largest excess, clipped at zero).
ICON_CONVENTIONS = ("authors", "overlay")
POSITIVE, NEGATIVE = (0.1, 0.2, 0.6), (0.75, 0.1, 0.1)


def icon_responses(resp: list[np.ndarray], convention: str = "authors") -> list[list[tuple[np.ndarray, tuple]]]:
    """Per unit of ``resp[f] (K, n_pos, n_orient)``, what its icon draws: one list per probe
    frequency of ``(r (n_pos, n_orient) in [0, 1], colour)`` pairs (see
    :data:`ICON_CONVENTIONS`). With ``"authors"`` only the unit's best frequency (largest
    response, as :func:`cnce.images.contours.best_frequency`) holds curves: ``r = max(z, 0) /
    max |z|`` in blue and ``max(-z, 0) / max |z|`` in red; the other frequencies are empty."""
    from cnce.images.contours import best_frequency

    if convention not in ICON_CONVENTIONS:
        raise ValueError(f"convention must be one of {ICON_CONVENTIONS}; got {convention!r}")
    K = resp[0].shape[0]
    if convention == "overlay":
        norm = normalise_responses(resp)
        return [[[(r[j], POSITIVE)] for r in norm] for j in range(K)]
    best = best_frequency(resp)
    out = []
    for j in range(K):
        z = np.asarray(resp[best[j]][j], dtype=float)
        top = max(float(np.abs(z).max()), 1e-12)
        out.append([[(np.maximum(z, 0) / top, POSITIVE), (np.maximum(-z, 0) / top, NEGATIVE)] if f == best[j] else []
                    for f in range(len(resp))])
    return out


def _icon_segments(parts, probe, radius: float = 0.5):
    """Segments, colours and alphas of one unit's icon from :func:`icon_responses`."""
    segs, cols = [], []
    for f, (fr, pp) in enumerate(zip(probe.freqs, parts)):
        rad = probe.sigma(fr) * fr if hasattr(probe, "sigma") else radius
        for r, col in pp:
            s, a = _polar_segments([r], [probe.positions(fr)], [fr], probe.orientations, radius=rad)
            segs += s
            cols += [(*col, al) for al in a]
    return segs, cols


def _draw_so(ax, resp_unit, probe, size):
    from matplotlib.collections import LineCollection

    segs, alphas = _so_segments(resp_unit, probe)
    cols = [(0.1, 0.2, 0.6, a) for a in alphas]
    ax.add_collection(LineCollection(segs, colors=cols, linewidths=0.8))
    ax.set_xlim(-0.5, size - 0.5)
    ax.set_ylim(size - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def plot_space_orientation(resp: list[np.ndarray], probe, units=None, ncol: int = 6, size: float | None = None):
    """Space-orientation receptive fields of third-layer units (Fig. 6, Supp. D.3), ``ncol`` to a
    row at the page's width (each icon ``size`` inches; default the page width over ``ncol``).

    ``resp`` from :func:`cnce.images.probes.probe_layer`; ``units`` selects units (default all).
    """
    plt = _pyplot()

    norm = normalise_responses(resp)
    units = list(range(norm[0].shape[0])) if units is None else list(units)
    nrow = int(np.ceil(len(units) / ncol))
    size = size or PAGE_WIDTH / ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(ncol * size, nrow * size), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, j in zip(axes.flat, units):
        ax.axis("on")
        _draw_so(ax, [r[j] for r in norm], probe, probe.size)
        ax.set_title(str(j), fontsize=page_fontsize(ncol * size), pad=1)
    fig.tight_layout(pad=0.2)
    return fig


def plot_layer4(units: list[int], q4: np.ndarray, resp3: list[np.ndarray], probe, patches: np.ndarray, top_idx: np.ndarray,
                max_units: int = 8, mass: float = 0.9, n_patches: int = 8):
    """Fig. 6 / Supp. D.4 at the page's width, two rows per fourth-layer unit: the third-layer
    units it pools (their space-orientation receptive fields, at most ``max_units``, with a bar
    for each pooling weight relative to the largest), and below them the ``n_patches`` image
    patches of a large batch that drive it most."""
    plt = _pyplot()

    norm = normalise_responses(resp3)
    sel = pooled_units(q4[units], max_units, mass)
    n = probe.size
    ncols = max(max_units, n_patches)
    cell = PAGE_WIDTH / (ncols + 0.6)
    fig = plt.figure(figsize=(PAGE_WIDTH, len(units) * (2 * cell + 0.25 * cell + 0.2)))
    gs = fig.add_gridspec(3 * len(units), ncols + 1, height_ratios=[1, 0.25, 1] * len(units),
                          width_ratios=[0.6] + [1] * ncols, hspace=0.08, wspace=0.06,
                          left=0.01, right=0.99, bottom=0.01, top=0.99)
    for r, (j, idx) in enumerate(zip(units, sel)):
        w = q4[j, idx] / q4[j].max()
        lab = fig.add_subplot(gs[3 * r: 3 * r + 3, 0])
        lab.text(0.5, 0.5, f"unit\n{j}", ha="center", va="center", fontsize=10.5)
        lab.axis("off")
        for c, (k, wk) in enumerate(zip(idx, w)):
            ax = fig.add_subplot(gs[3 * r, 1 + c])
            _draw_so(ax, [x[k] for x in norm], probe, n)
            _weight_bar(fig.add_subplot(gs[3 * r + 1, 1 + c]), wk)
        for c, pi in enumerate(top_idx[j][:n_patches]):
            ax = fig.add_subplot(gs[3 * r + 2, 1 + c])
            _show(ax, patches[pi].reshape(n, n))
    return fig


def plot_ablation(tables: dict, column: str = "oriented", chance: float | None = 0.05):
    """The layer-1 ablation: per size (``{title: table}`` from
    :func:`cnce.images.runs.ablation_table`) a bar per (optimiser, schedule) with its interval over
    seeds and the seeds as dots; ``chance`` drawn as a dotted line."""
    plt = _pyplot()

    fig, axes = plt.subplots(1, len(tables), figsize=(PAGE_WIDTH, 3.3), squeeze=False, sharey=True)
    colours = {"main": "C3", "fresh": "C0"}
    for ax, (title, t) in zip(axes[0], tables.items()):
        labels = []
        for i, ((opt, sched), row) in enumerate(t.iterrows()):
            m, lo, hi = row[column], row[f"{column}_lo"], row[f"{column}_hi"]
            ax.bar(i, m, color=colours[sched], alpha=0.75)
            ax.errorbar(i, m, yerr=[[m - lo], [hi - m]], color="k", capsize=3, lw=1)
            labels.append(f"{opt}\n{sched}")
        ax.set_xticks(range(len(labels)), labels, fontsize=9)
        ax.set_title(title)
        if chance is not None:
            ax.axhline(chance, color="gray", ls=":", lw=1)
    axes[0, 0].set_ylabel("oriented share of layer 1" if column == "oriented" else column)
    axes[0, 0].set_ylim(0, 1)
    fig.tight_layout()
    return fig


def plot_memorisation(histories: dict[str, list[dict]], title: str = ""):
    """Per run (``{label: layer-1 history}``), J after each meta-iteration on its own patches and
    noise (dashed), on the same patches with fresh noise (dotted) and on unseen patches with fresh
    noise (solid): a gap between dashed and dotted is memorised noise, one between dotted and
    solid memorised patches."""
    plt = _pyplot()

    from cnce.losses import LOG4

    fig, axes = plt.subplots(1, len(histories), figsize=(PAGE_WIDTH, 3.9), squeeze=False, sharey=True)
    for ax, (label, h) in zip(axes[0], histories.items()):
        _integer_ticks(ax)
        m = [r["meta"] + 1 for r in h]
        ax.plot(m, [r["train_loss"] for r in h], "--", color="C1", lw=1.3, label="own patches and noise")
        ax.plot(m, [r["loss_fresh_noise"] for r in h], ":", color="C2", lw=1.6, label="own patches, fresh noise")
        ax.plot(m, [r["loss_unseen"] for r in h], "-", color="C0", lw=1.5, label="unseen patches, fresh noise")
        ax.axhline(LOG4, color="gray", ls=":", lw=1)
        ax.set_title(label.replace(": ", ":\n", 1), fontsize=10.5)
        ax.set_xlabel("meta-iteration")
    axes[0, 0].set_ylabel("CNCE loss J after the update")
    axes[0, 0].set_ylim(0, max(2.0, LOG4 + 0.1))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=9.5)
    return fig


def plot_d2_curves(records, column: str = "oriented"):
    """Supp. D.2: ``column`` per meta-iteration for each variant (rows of
    :func:`cnce.images.runs.d2_records`), mean over seeds with the range of the seeds shaded."""
    import pandas as pd

    plt = _pyplot()
    df = pd.DataFrame(records)
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 3.3))
    names = {"cnce": "CNCE", "nce": "NCE, c carried over", "nce-reset": "NCE, c reset to 0 (authors' code)"}
    for c, (v, g) in enumerate(df.groupby("variant", sort=False)):
        s = g.groupby("meta")[column]
        x = np.array(sorted(g["meta"].unique()))
        ax.plot(x, s.mean().values, "-o", ms=3, color=f"C{c}", label=f"{names.get(v, v)} ({g['seed'].nunique()} seeds)")
        ax.fill_between(x, s.min().values, s.max().values, color=f"C{c}", alpha=0.2)
    ax.set_xlabel("meta-iteration")
    _integer_ticks(ax)
    ax.set_ylabel("oriented share of layer 1" if column == "oriented" else column)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def plot_training(history: dict, title: str = ""):
    """Loss on each fresh sample (before its updates) and eps, per meta-iteration, one line per
    layer (left: loss, with 2 log 2 dotted; right: eps)."""
    plt = _pyplot()

    from cnce.losses import LOG4

    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 3.2))
    for c, L in enumerate(sorted(history, key=int)):
        h = history[L]
        m = [r["meta"] + 1 for r in h]
        axes[0].plot(m, [r["loss"] for r in h], "o-", ms=2.5, lw=1.2, color=f"C{c}", label=f"layer {L}")
        axes[1].plot(m, [r["eps"] for r in h], "s-", ms=2.5, lw=1.2, color=f"C{c}", label=f"layer {L}")
    axes[0].axhline(LOG4, color="gray", ls=":", lw=1)
    axes[0].set_ylabel("CNCE loss J (fresh sample)")
    axes[1].set_ylabel("eps")
    for ax in axes:
        ax.set_xlabel("meta-iteration")
        _integer_ticks(ax)
    axes[1].legend(frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_comparison(snaps: dict[str, dict[int, np.ndarray]], iters: list[int], ncol: int | None = None,
                    size: float | None = None, names: dict[str, str] | None = None):
    """Supp. D.2: first-layer features (image space) of each method (rows, labelled at the left
    with ``names[method]``) after each meta-iteration in ``iters`` (columns, titled once at the
    top); ``snaps[method][m] (K, n, n)``, ``m = 0`` the common initialisation. The figure fills
    the page's width unless ``size`` (inches per mosaic) is given."""
    plt = _pyplot()

    methods = list(snaps)
    names = names or {}
    label_w = 0.35
    size = size or (PAGE_WIDTH - label_w) / len(iters)
    fig, axes = plt.subplots(len(methods), len(iters), figsize=(label_w + size * len(iters), size * len(methods) * 1.04 + 0.35),
                             squeeze=False)
    for r, meth in enumerate(methods):
        for c, m in enumerate(iters):
            _show(axes[r, c], mosaic(snaps[meth][m], ncol))
            if r == 0:
                axes[r, c].set_title("initial" if m == 0 else f"meta-it. {m}", fontsize=10.5)
        axes[r, 0].set_ylabel(names.get(meth, meth.upper()), fontsize=10.5)
    W, H = fig.get_size_inches()
    fig.subplots_adjust(left=label_w / W, right=0.995, bottom=0.005, top=1 - 0.35 / H, wspace=0.05, hspace=0.05)
    return fig


def plot_d2_snapshots(snaps: dict[str, dict[int, np.ndarray]], metas: list[int], names: dict[str, str] | None = None,
                      ncol: int = 10, size: float | None = None):
    """Supp. Figs 2-13 of D.2: for each meta-iteration in ``metas`` (a row; 0 is the common
    initialisation) the features of each method side by side (``snaps[method][m] (K, n, n)``,
    ``ncol`` to a row: 100 features in a 10 x 10 mosaic). Each mosaic is ``size`` inches wide
    (default: the methods share the page's width), so a feature of 32 pixels spans about
    30 screen pixels at the default."""
    plt = _pyplot()

    methods = list(snaps)
    names = names or {}
    label_w = 0.6
    size = size or (PAGE_WIDTH - label_w) / len(methods)
    imgs = {(meth, m): mosaic(snaps[meth][m], ncol) for meth in methods for m in metas}
    aspect = max(im.shape[0] / im.shape[1] for im in imgs.values())
    title_h = 0.3
    W, H = label_w + size * len(methods), len(metas) * size * aspect * 1.02 + title_h
    fig, axes = plt.subplots(len(metas), len(methods), figsize=(W, H), squeeze=False)
    for r, m in enumerate(metas):
        for c, meth in enumerate(methods):
            _show(axes[r, c], imgs[meth, m])
            if r == 0:
                axes[r, c].set_title(names.get(meth, meth.upper()), fontsize=10.5)
        axes[r, 0].set_ylabel("init." if m == 0 else f"{m}", fontsize=10.5, rotation=0, ha="right", va="center")
    fig.subplots_adjust(left=label_w / W, right=0.998, bottom=0.002, top=1 - title_h / H, wspace=0.03, hspace=0.04)
    return fig


def plot_gabor_summary(fits: dict[str, np.ndarray], baseline_r2: np.ndarray | None = None, r2_min: float = 0.5):
    """Explained variance of the Gabor fits (against a baseline, e.g. the random initial features),
    and orientation and frequency of the well-fitted features (``r2 >= r2_min``)."""
    plt = _pyplot()

    fig = plt.figure(figsize=(11, 3.2))
    ax = fig.add_subplot(1, 3, 1)
    bins = np.linspace(0, 1, 21)
    ax.hist(np.clip(fits["r2"], 0, 1), bins=bins, alpha=0.8, label="learned")
    if baseline_r2 is not None:
        ax.hist(np.clip(baseline_r2, 0, 1), bins=bins, alpha=0.6, label="random init")
    ax.set_xlabel("explained variance of Gabor fit")
    ax.set_ylabel("features")
    ax.legend()
    good = fits["r2"] >= r2_min
    axp = fig.add_subplot(1, 3, 2, projection="polar")
    th = np.concatenate([fits["theta"][good], fits["theta"][good] + np.pi])
    axp.hist(th, bins=24)
    axp.set_title(f"orientation (r2 >= {r2_min})")
    axp.set_yticklabels([])
    ax3 = fig.add_subplot(1, 3, 3)
    ax3.hist(fits["freq"][good], bins=np.linspace(0, 0.5, 21))
    ax3.set_xlabel("frequency (cycles / pixel)")
    fig.tight_layout()
    return fig


_SET_STYLE = {"learned": dict(color="C0", lw=2.0), "FastICA": dict(color="C2", lw=1.5),
              "initialisation": dict(color="0.5", lw=1.0, ls=":"), "localised noise": dict(color="C3", lw=1.2, ls="--"),
              "isotropic DoG": dict(color="C1", lw=1.2, ls="-.")}


def plot_layer1_measures(props: dict, sets: list[str] | None = None, thresholds: dict[str, float] | None = None):
    """Layer-1 measures of :func:`cnce.images.measures.layer1_table`: distributions (step
    histograms, as a fraction of each set) of the orientation-selectivity index and of the
    preferred frequency (log scale), for receptive fields (top) and features (bottom), one line
    per set of units. ``thresholds[picture]`` draws the OSI above which a unit counts as
    oriented."""
    plt = _pyplot()

    pics = ("receptive fields", "features")
    sets = sets or list(dict.fromkeys(k[0] for k in props))
    fig, axes = plt.subplots(2, 2, figsize=(PAGE_WIDTH, 5.4))
    osi_bins = np.linspace(0, 1, 26)
    f_bins = np.geomspace(1 / 40, 0.55, 26)
    for r, pic in enumerate(pics):
        for name in sets:
            p = props[name, pic]
            style = _SET_STYLE.get(name, {})
            w = np.full(len(p), 1.0 / len(p))
            axes[r, 0].hist(p.osi, bins=osi_bins, weights=w, histtype="step", label=name, **style)
            axes[r, 1].hist(p.frequency, bins=f_bins, weights=w, histtype="step", label=name, **style)
        if thresholds:
            axes[r, 0].axvline(thresholds[pic], color="k", lw=0.8, ls=":")
        axes[r, 0].set_ylabel(f"{pic}\nfraction of units")
        axes[r, 1].set_xscale("log")
        ticks = [1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2]
        axes[r, 1].set_xticks(ticks, ["1/32", "1/16", "1/8", "1/4", "1/2"])
        axes[r, 1].minorticks_off()
    axes[1, 0].set_xlabel("orientation-selectivity index")
    axes[1, 1].set_xlabel("preferred frequency (cycles / pixel)")
    axes[0, 1].legend(loc="upper left", frameon=False)
    fig.tight_layout()
    return fig


def plot_pooling_coherence(tables: dict, units: str = "first-layer"):
    """:func:`cnce.images.measures.pooling_coherence` drawn per pooling unit: the spread of its
    pooled units in orientation, frequency and position (y) against the mean spread of random
    sets of the same size (x); points below the diagonal pool units more alike than chance.
    ``tables``: ``{label: DataFrame}`` (e.g. layer 2 and layer 4), one row of panels each.

    A spread that is zero for every unit and every random set (all pooled units share one
    value, e.g. one probe frequency) has nothing to show: its panel is left out, and
    :func:`degenerate_spreads` names it for the caption."""
    plt = _pyplot()

    from cnce.images.measures import SPREADS

    unit = {"orientation": "deg", "frequency": "oct", "position": "px"}
    shown = {label: [n for n in SPREADS if n not in degenerate_spreads(df)] for label, df in tables.items()}
    ncol = max(len(v) for v in shown.values()) + 1
    fig, axes = plt.subplots(len(tables), ncol, figsize=(PAGE_WIDTH, 2.6 * len(tables) + 0.2), squeeze=False)
    for r, (label, df) in enumerate(tables.items()):
        multi = df[df["n_pooled"] >= 2]
        for ax in axes[r]:
            ax.axis("off")
        for c, name in enumerate(shown[label]):
            ax = axes[r, c]
            ax.axis("on")
            x, y = multi[f"{name}_random"], multi[name]
            ax.plot(x, y, "o", ms=3, alpha=0.6)
            top = max(float(np.nanmax(x)), float(np.nanmax(y))) * 1.05 if len(multi) else 1.0
            lim = [0, top if top > 0 else 1.0]
            ax.plot(lim, lim, color="gray", lw=0.8, ls=":")
            ax.set_xlim(lim)
            ax.set_ylim(lim)
            ax.set_xlabel(f"random ({unit[name]})")
            ax.set_ylabel(f"pooled ({unit[name]})", labelpad=1)
            ax.set_title(f"{label}: {name}" if len(tables) > 1 else f"{name} spread", fontsize=10.5)
        ax = axes[r, len(shown[label])]
        ax.axis("on")
        ax.hist(df["top_share"], bins=np.linspace(0, 1, 21))
        ax.set_xlabel("share of largest")
        ax.set_ylabel("units", labelpad=1)
        ax.set_title(f"{label}: largest weight" if len(tables) > 1 else "largest weight", fontsize=10.5)
    fig.tight_layout(w_pad=0.4)
    return fig


def degenerate_spreads(df) -> list[str]:
    """The spreads of a :func:`cnce.images.measures.pooling_coherence` table that are zero for
    every unit and every random set: nothing to compare (e.g. all units at one probe frequency)."""
    from cnce.images.measures import SPREADS

    multi = df[df["n_pooled"] >= 2]
    return [n for n in SPREADS if len(multi) and np.nanmax(np.abs(multi[n])) == 0
            and np.nanmax(np.abs(multi[f"{n}_random"])) == 0]


def plot_so_coherence(named: dict, measures=("orientation_coherence", "frequency_share")):
    """Distributions of :func:`cnce.images.measures.so_rf_properties` for several networks
    (``{label: properties}``, e.g. learned against random layer weights)."""
    plt = _pyplot()

    fig, axes = plt.subplots(1, len(measures), figsize=(PAGE_WIDTH / 2 * len(measures), 2.9), squeeze=False)
    for ax, m in zip(axes[0], measures):
        lo = 0.0 if m == "orientation_coherence" else 1.0 / 3
        bins = np.linspace(lo, 1, 21)
        for k, (label, props) in enumerate(named.items()):
            v = props[m]
            ax.hist(v, bins=bins, weights=np.full(len(v), 1.0 / len(v)), histtype="step", lw=1.5, label=label,
                    color=f"C{k}", ls="-" if k % 2 == 0 else "--")
        ax.set_xlabel(m.replace("_", " "))
        ax.set_ylabel("fraction of units")
    axes[0, 0].legend(frameon=False)
    fig.tight_layout()
    return fig


def plot_top_patches(patches: np.ndarray, top_idx: np.ndarray, units=None, per_row: int = 2, size: float = 0.5,
                     title: str | None = None):
    """Supp. D.3: for each unit (in ``units``, default all), the patches of ``patches (n, side**2)``
    that drive it most (``top_idx (K, k)`` from :func:`cnce.images.probes.top_patches`), ``per_row``
    units side by side, each unit's patches in a block of ``k`` tiles labelled with its index."""
    plt = _pyplot()

    top_idx = np.asarray(top_idx)
    units = list(range(top_idx.shape[0])) if units is None else list(units)
    k = top_idx.shape[1]
    side = int(round(np.sqrt(patches.shape[1])))
    nrow = int(np.ceil(len(units) / per_row))
    fig, axes = plt.subplots(nrow, per_row, figsize=(per_row * (k * size + 0.4), nrow * (size + 0.15)), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, j in zip(axes.flat, units):
        tiles = patches[top_idx[j]].reshape(k, side, side)
        _show(ax, mosaic(tiles, ncol=k))
        ax.axis("on")
        ax.set_ylabel(str(j), rotation=0, fontsize=page_fontsize(fig.get_figwidth()), labelpad=8, va="center")
    if title:
        fig.suptitle(title)
    fig.tight_layout(pad=0.2, h_pad=0.1, w_pad=0.6)
    return fig


# -- the appendix's drawings: many icons on one canvas ----------------------------------------------


class _Canvas:
    """Tiles (image patches or features), space-orientation icons, bars and labels placed in
    pixel coordinates on one axes: a figure with hundreds of icons draws in one image, one line
    collection and one polygon collection instead of hundreds of axes."""

    def __init__(self, width: float, height: float):
        self.W, self.H = int(np.ceil(width)), int(np.ceil(height))
        self.img = np.full((self.H, self.W), np.nan)
        self.segs, self.seg_cols, self.seg_lw = [], [], []
        self.rects, self.rect_cols = [], []
        self.texts = []

    def tile(self, x: int, y: int, tile: np.ndarray, centre: bool = False):
        """``tile (n, n)`` scaled to [-1, 1] by its largest |value| (after removing its mean when
        ``centre``), its top left at ``(x, y)``."""
        t = np.asarray(tile, dtype=float)
        t = t - t.mean() if centre else t
        t = t / max(float(np.abs(t).max()), 1e-12)
        self.img[y:y + t.shape[0], x:x + t.shape[1]] = t

    def frame(self, x: float, y: float, w: float, h: float, colour=(0.6, 0.6, 0.6, 1.0)):
        self.segs.append(np.array([[x - 0.5, y - 0.5], [x + w - 0.5, y - 0.5], [x + w - 0.5, y + h - 0.5],
                                   [x - 0.5, y + h - 0.5], [x - 0.5, y - 0.5]]))
        self.seg_cols.append(colour)
        self.seg_lw.append(0.5)

    def so_icon(self, x: float, y: float, parts, probe, radius: float = 0.5, scale: float = 1.0):
        """A space-orientation field of ``probe.size`` pixels drawn ``scale`` times larger, its
        top left at ``(x, y)``, in a light frame; ``parts`` one unit's entry of
        :func:`icon_responses`."""
        segs, cols = _icon_segments(parts, probe, radius)
        for sg, c in zip(segs, cols):
            self.segs.append((sg + 0.5) * scale - 0.5 + np.array([x, y]))
            self.seg_cols.append(c)
            self.seg_lw.append(1.0)
        self.frame(x, y, probe.size * scale, probe.size * scale)

    def bar(self, x: float, y: float, w: float, h: float, frac: float):
        """The paper's thin bar: a light track of width ``w`` and a dark part of ``frac * w``."""
        frac = float(np.clip(frac, 0.0, 1.0))
        for ww, col in ((w, (0.86, 0.86, 0.86, 1.0)), (w * frac, (0.27, 0.45, 0.7, 1.0))):
            self.rects.append(np.array([[x - 0.5, y], [x + ww - 0.5, y], [x + ww - 0.5, y + h], [x - 0.5, y + h]]))
            self.rect_cols.append(col)

    def text(self, x: float, y: float, s: str, **kw):
        self.texts.append((x, y, s, kw))

    def draw(self, width: float = PAGE_WIDTH):
        """The figure, ``width`` inches wide, its height following the canvas' aspect."""
        plt = _pyplot()
        from matplotlib.collections import LineCollection, PolyCollection

        fig = plt.figure(figsize=(width, width * self.H / self.W))
        ax = fig.add_axes((0, 0, 1, 1))
        cmap = plt.get_cmap("gray").with_extremes(bad="white")
        ax.imshow(self.img, cmap=cmap, vmin=-1, vmax=1, interpolation="nearest",
                  extent=(-0.5, self.W - 0.5, self.H - 0.5, -0.5))
        if self.segs:
            ax.add_collection(LineCollection(self.segs, colors=self.seg_cols, linewidths=self.seg_lw))
        if self.rects:
            ax.add_collection(PolyCollection(self.rects, facecolors=self.rect_cols, edgecolors="none"))
        for x, y, s, kw in self.texts:
            ax.text(x, y, s, **({"fontsize": 10.5, "ha": "center", "va": "center"} | kw))
        ax.set_xlim(-0.5, self.W - 0.5)
        ax.set_ylim(self.H - 0.5, -0.5)
        ax.axis("off")
        return fig


def plot_layer3_units(resp3: list[np.ndarray], probe, units, patches: np.ndarray, top_idx: np.ndarray,
                      n_patches: int = 10, per_row: int = 5, icon: float = 3.2, radius: float = 0.5,
                      width: float = PAGE_WIDTH, convention: str = "authors"):
    """Supp. D.3 (Figs 14-17): one row per third-layer unit in ``units``: its index, its
    space-orientation field (``resp3`` from :func:`cnce.images.probes.probe_layers` or
    :func:`~cnce.images.probes.probe_layer`; any probe with ``freqs``, ``orientations``,
    ``positions(freq)`` and ``size``) drawn ``icon`` times a patch's size, and the ``n_patches``
    patches of ``patches (N, size**2)`` that drive it most (``top_idx (K, k)``, strongest
    first), ``per_row`` to a row, each with its mean removed and scaled to its own range. Icons
    follow ``convention`` (:data:`ICON_CONVENTIONS`; pass the linear layer-3 response for the
    authors' signed icons)."""
    norm = icon_responses(resp3, convention)
    units = list(units)
    n = probe.size
    gap, label = max(2, n // 8), int(1.4 * n)
    rows = int(np.ceil(n_patches / per_row))
    first = label + int(icon * n) + 3 * gap  # where the patches start
    unit_h = max(icon * n, rows * (n + gap) - gap) + 2 * gap
    cv = _Canvas(first + per_row * (n + gap), len(units) * unit_h + gap)
    for r, j in enumerate(units):
        y = gap + r * unit_h
        cv.text(0, y + icon * n / 2, f"unit {j}", ha="left")
        cv.so_icon(label, y, norm[j], probe, radius=radius, scale=icon)
        for c, pi in enumerate(np.asarray(top_idx)[j][:n_patches]):
            rr, cc = divmod(c, per_row)
            cv.tile(first + cc * (n + gap), int(y + rr * (n + gap)), patches[pi].reshape(n, n), centre=True)
    return cv.draw(width)


def plot_layer4_units(units, q4: np.ndarray, resp3: list[np.ndarray], probe, patches: np.ndarray, top_idx: np.ndarray,
                      top_val: np.ndarray, *, max_units: int = 6, mass: float = 0.9, per_row: int = 10,
                      icons_per_row: int = 3, icon: float = 3.2, radius: float = 0.5, width: float = PAGE_WIDTH,
                      convention: str = "authors"):
    """Supp. D.4 (Figs 18-47): a block per fourth-layer unit in ``units``: the space-orientation
    fields of the third-layer units it pools (at most ``max_units``, or as many as hold ``mass``
    of its pooling weight ``q4 (K4, K3)``; ``icons_per_row`` to a row, ``icon`` times a patch's
    size), each with a bar for ``q / max q``; below them the patches that drive it most
    (``top_idx``, ``top_val (K4, k)`` from :func:`cnce.images.probes.top_patches`), ``per_row``
    to a row, each with a bar for its response relative to the largest. Icons follow
    ``convention`` (:data:`ICON_CONVENTIONS`; the authors draw at most six pooled units)."""
    norm = icon_responses(resp3, convention)
    units = list(units)
    sel = pooled_units(q4[units], max_units, mass)
    n = probe.size
    gap, bar_h, label = max(2, n // 8), max(2, n // 7), int(1.4 * n)
    k = np.asarray(top_idx).shape[1]
    W = label + max(per_row * (n + gap), icons_per_row * (icon * n + 2 * gap))
    icon_h = icon * n + bar_h + 3 * gap
    patch_h = n + bar_h + 2 * gap
    heights = [int(np.ceil(len(idx) / icons_per_row)) * icon_h + int(np.ceil(k / per_row)) * patch_h + 4 * gap
               for idx in sel]
    cv = _Canvas(W, sum(heights))
    y0 = 0.0
    for b, (j, idx, h) in enumerate(zip(units, sel, heights)):
        y = y0 + 2 * gap
        cv.text(0, y + icon * n / 2, f"unit {j}", ha="left")
        w = q4[j, idx] / q4[j].max()
        for c, (kk, wk) in enumerate(zip(idx, w)):
            rr, cc = divmod(c, icons_per_row)
            x, yy = label + cc * (icon * n + 2 * gap), y + rr * icon_h
            cv.so_icon(x, yy, norm[kk], probe, radius=radius, scale=icon)
            cv.bar(x, yy + icon * n + gap, icon * n, bar_h, wk)
        y += int(np.ceil(len(idx) / icons_per_row)) * icon_h + gap
        v = np.asarray(top_val)[j]
        rel = v / v.max() if v.max() > 0 else np.zeros_like(v)
        for c, (pi, rv) in enumerate(zip(np.asarray(top_idx)[j], rel)):
            rr, cc = divmod(c, per_row)
            x, yy = label + cc * (n + gap), int(y + rr * patch_h)
            cv.tile(x, yy, patches[pi].reshape(n, n), centre=True)
            cv.bar(x, yy + n + gap / 2, n, bar_h, rv)
        y0 += h
        if b < len(units) - 1:  # a rule between blocks
            cv.segs.append(np.array([[0, y0 - gap], [cv.W, y0 - gap]]))
            cv.seg_cols.append((0.75, 0.75, 0.75, 1.0))
            cv.seg_lw.append(0.6)
    return cv.draw(width)


def plot_d2_measures(table, names: dict[str, str] | None = None):
    """Supp. D.2 measured on one run's snapshots (:func:`cnce.images.d2.d2_table`, indexed by
    meta-iteration, 0 the common initialisation): the oriented share (left), the median RMS
    radius of the receptive fields (middle) per method, and the matched similarity of the two
    methods' features with its interval, against each method's similarity to the common start
    and the random sets' 95th percentile (right)."""
    plt = _pyplot()

    cols = [c[len("oriented_"):] for c in table.columns if c.startswith("oriented_")]
    names = names or {}
    x = np.asarray(table.index, dtype=int)
    fig, axes = plt.subplots(1, 3, figsize=(PAGE_WIDTH, 3.4))
    for c, v in enumerate(cols):
        style = dict(color=f"C{c}", lw=1.5, label=names.get(v, v))
        axes[0].plot(x, table[f"oriented_{v}"], "-o", ms=2.5, **style)
        axes[1].plot(x, table[f"rms_{v}"], "-o", ms=2.5, **style)
        axes[2].plot(x, table[f"vs_init_{v}"], ":", color=f"C{c}", lw=1.2, label=f"{names.get(v, v)} vs start")
    axes[2].plot(x, table["similarity"], "-", color="k", lw=1.5, label="the two methods")
    axes[2].fill_between(x, table["similarity_lo"], table["similarity_hi"], color="k", alpha=0.15)
    axes[2].plot(x, table["random_p95"], "--", color="0.5", lw=1, label="random sets (95th pct.)")
    axes[0].set_ylabel("oriented share")
    axes[0].set_ylim(0, 1)
    axes[1].set_ylabel("median RMS radius (px)")
    axes[2].set_ylabel("matched |cos|")
    axes[2].set_ylim(0, 1.02)
    for ax in axes:
        ax.set_xlabel("meta-iteration")
        _integer_ticks(ax, nbins=4)
    axes[0].legend(frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    h, lab = axes[2].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", ncol=len(lab), frameon=False, fontsize=9)
    return fig


def plot_pca_test(histories: dict[str, dict[int, list[dict]]], chance: float = 0.05):
    """The PCA-sample test (:func:`cnce.images.attribution.pca_test`): per meta-iteration the
    oriented share of layer 1 (left) and J on unseen patches with fresh noise (right), one line
    per seed, coloured by the number of patches the PCA was fitted on."""
    plt = _pyplot()

    from cnce.losses import LOG4

    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 3.6))
    colours = {"50k": "C3", "400k": "C0"}
    names = {"50k": "PCA on 50,000 patches", "400k": "PCA on 400,000 patches"}
    for arm, per_seed in histories.items():
        for k, (seed, h) in enumerate(sorted(per_seed.items())):
            m = [r["meta"] + 1 for r in h]
            lab = names.get(arm, arm) if k == 0 else None
            axes[0].plot(m, [100 * r["oriented"] for r in h], color=colours.get(arm), lw=1.5, ls="-" if k == 0 else "--", label=lab)
            axes[1].plot(m, [r["loss_unseen"] for r in h], color=colours.get(arm), lw=1.5, ls="-" if k == 0 else "--")
    axes[0].axhline(100 * chance, color="gray", ls=":", lw=1)
    axes[0].text(1, 100 * chance + 1, "chance", color="gray", fontsize=9)
    axes[0].set_ylabel("oriented share of layer 1 (%)")
    axes[1].axhline(LOG4, color="gray", ls=":", lw=1)
    axes[1].text(0.98, LOG4 + 0.02, "2 log 2", color="gray", fontsize=9, ha="right",
                 transform=axes[1].get_yaxis_transform())
    axes[1].set_ylabel("J on unseen patches")
    for ax in axes:
        ax.set_xlabel("meta-iteration")
        _integer_ticks(ax)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False, fontsize=9.5)
    return fig
