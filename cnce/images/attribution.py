"""Attributions of the image chapter, each by changing one thing at a time over several seeds.

* :func:`pca_test`: does the PCA sample alone reproduce the earlier failure of the authors'
  recipe? Layer 1 of the L-BFGS, main-set cell for 20 meta-iterations (two main sets), with the
  input PCA fitted on 50,000 or on 400,000 patches and nothing else changed, two seeds each
  (``data/weights/pca/paper.pt``, histories in ``call2/results.json``).
* :func:`layer3_input_table`: what the layer-3 input changes in the layer 3-4 measures. Layers
  3-4 were trained again on the finished layers 1-2 of each four-layer run with the other
  layer-3 input (the authors' per-sample centring, or the project's earlier ensemble centring),
  so that each pair of groups differs in that input alone (``data/weights/l3/paper.pt``).
"""
from __future__ import annotations

import numpy as np

from cnce.images import runs
from cnce.images.measures import above_chance
from cnce.images.verdicts import Measured, seed_interval

__all__ = ["pca_histories", "pca_test", "layer3_input_table", "L3_GROUPS"]

#: the four groups of layer 3-4 runs: ``prefix -> (images, layer-3 input)``
L3_GROUPS = {"": ("bundled photographs", "earlier (ensemble)"),
             "bundled-l3-sample/": ("bundled photographs", "authors' (per sample)"),
             "photos-l3-ensemble/": ("photo pack", "earlier (ensemble)"),
             "photos/": ("photo pack", "authors' (per sample)")}


def pca_histories(results: dict | None = None) -> dict[str, dict[int, list[dict]]]:
    """``{"50k": {seed: [record per meta-iteration]}, "400k": {...}}`` of the PCA test."""
    results = results or runs.load_call2()
    out: dict = {}
    for name, run in results["runs"].items():
        parts = name.split("/")
        if parts[0] == "pca":
            out.setdefault(parts[1], {})[int(parts[2][1:])] = run["history"]["1"]
    if set(out) != {"50k", "400k"}:
        raise ValueError(f"the results hold PCA arms {sorted(out)}; need 50k and 400k")
    return out


def pca_test(results: dict | None = None, *, chance: float = 0.05, alpha: float = 0.05, K: int = 600) -> Measured:
    """Does PCA fitted on 50,000 patches, and nothing else, keep layer 1 from becoming oriented
    within the meta-iterations that ran (20 in the committed test, two seeds per arm)?

    The question the earlier failing run left open. Rule: *reproduced* when in every seed of the
    50,000-patch arm the final oriented share is not above ``chance`` (the share of localised
    noise that the 95 % threshold counts as oriented; one-sided binomial test over the ``K`` units,
    Bonferroni over the runs) while in every seed of the 400,000-patch arm it is; *not
    reproduced* when the 50,000-patch arm is above chance in some seed; otherwise *not testable
    here* (the control arm did not learn in the time). With two seeds per arm the interval is
    the range of the two seeds.
    """
    h = pca_histories(results)
    final = {arm: {s: hist[-1] for s, hist in sorted(h[arm].items())} for arm in ("50k", "400k")}
    n_tests = sum(len(v) for v in final.values())
    p = {arm: {s: above_chance(r["oriented"], K, chance) for s, r in rs.items()} for arm, rs in final.items()}
    above = {arm: [v < alpha / n_tests for v in ps.values()] for arm, ps in p.items()}
    share = {arm: [r["oriented"] for r in rs.values()] for arm, rs in final.items()}
    unseen = {arm: [r["loss_unseen"] for r in rs.values()] for arm, rs in final.items()}
    m50, iv50, rule = seed_interval(share["50k"], share=True)
    m400, iv400, _ = seed_interval(share["400k"], share=True)
    n_meta = len(next(iter(h["50k"].values())))
    n_seeds = len(share["50k"])
    ran = f"in the {n_meta} meta-iterations and {n_seeds} seeds per arm that ran"
    if not all(above["400k"]):
        word = f"not testable here: the 400,000-patch control did not become oriented in every seed {ran}"
    elif any(above["50k"]):
        word = f"not reproduced: with PCA on 50,000 patches layer 1 still became oriented {ran}"
    else:
        word = f"reproduced {ran}: with PCA fitted on 50,000 patches alone, layer 1 did not become oriented"
    # J on unseen patches of the 50,000-patch arm before and after its last meta-iteration (a
    # main-set redraw at meta-iteration 20 in the authors' schedule): a longer run may differ
    drop = [(hist[-2]["loss_unseen"], hist[-1]["loss_unseen"]) for hist in h["50k"].values() if len(hist) >= 2]
    last = (f"; at the last meta-iteration J on unseen patches of the 50,000-patch arm moves from "
            f"{min(a for a, _ in drop):.2f}-{max(a for a, _ in drop):.2f} to {min(b for _, b in drop):.2f}-"
            f"{max(b for _, b in drop):.2f}, so what a longer run does is not tested" if drop else "")
    verdict = (f"{word} (after {n_meta} meta-iterations, oriented share {100 * iv50[0]:.1f}-{100 * iv50[1]:.1f} % "
               f"with 50,000 patches against {100 * iv400[0]:.1f}-{100 * iv400[1]:.1f} % with 400,000; chance "
               f"{100 * chance:.0f} %; J on unseen patches {min(unseen['50k']):.2f}-{max(unseen['50k']):.2f} against "
               f"{min(unseen['400k']):.2f}-{max(unseen['400k']):.2f}, 2 log 2 = {2 * np.log(2):.2f}{last})")
    return Measured(claim="the PCA sample alone explains the earlier failure", measure="oriented share of layer 1, "
                    "PCA on 50,000 patches", value=m50, baselines={"PCA on 400,000 patches": m400, "chance": chance},
                    interval=iv50, rule=rule, verdict=verdict, n_units=K, n_seeds=len(share["50k"]),
                    extra={"oriented": share, "J_unseen": unseen, "p_above_chance": p, "meta_iterations": n_meta,
                           "interval_400k": iv400})


def layer3_input_table(measured: dict, keys=("layer3_contours", "layer4_orientation_across_frequency_extended",
                                             "layer4_corners"), digits: int = 2):
    """The layer 3-4 measures of the four groups of :data:`L3_GROUPS` side by side: rows are the
    measures, columns the groups (images x layer-3 input), each cell the value with its interval
    over the three seeds and the verdict's first word. Compare along a row, within one kind of
    images, to see what the layer-3 input alone changes."""
    import pandas as pd

    rows = {}
    for key in keys:
        row = {}
        for prefix, (images, l3) in L3_GROUPS.items():
            m = measured.get(prefix + key)
            if m is None:
                row[(images, l3)] = "not measured"
            elif not m.testable:
                row[(images, l3)] = "not testable"
            else:
                lo, hi = m.interval
                row[(images, l3)] = f"{m.value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]; {m.verdict.split(':')[0]}"
        rows[measured[key].claim if key in measured else key] = row
    t = pd.DataFrame(rows).T
    t.columns = pd.MultiIndex.from_tuples(t.columns, names=["images", "layer-3 input"])
    return t
