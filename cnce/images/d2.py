"""Supp. D.2 measured: CNCE against NCE on the first layer, meta-iteration by meta-iteration.

The supplement shows 100 first-layer features of each method after each of the first eleven
meta-iterations (its Figs. 3-13, from a common initialisation, its Fig. 2) and says that the two
methods seem to learn similar features; it declines to claim superior performance, given the
qualitative comparison, and says only that CNCE appears to learn slightly faster (Supp. D.2,
paraphrased). Measured here, per meta-iteration and method:

* the *oriented share* (:func:`cnce.images.measures.oriented_share`: receptive fields more
  oriented than 95 % of localised noise);
* the *receptive-field size*, the RMS radius (:func:`rms_radius`: the energy-weighted RMS
  distance from the energy centroid, in pixels; a Gaussian envelope of width ``sigma`` has
  RMS radius ``sigma``);
* the *similarity of the two feature sets* (:func:`matched_similarity`: the best one-to-one
  matching of the unit-norm, mean-free features by ``|cosine|``, scipy's
  ``linear_sum_assignment``, averaged over the pairs), against the same matching of two random
  sets (:func:`random_matching`: Gaussian weights in the whitened space, pictured the same
  way) and against each method's matching with the common initialisation (both methods start
  from it, so their similarity is 1 at meta-iteration 0 and must be judged against what the
  start alone gives).

:func:`d2_table` gives all of these for the snapshots of one run (``data/weights/d2/paper.pt``
holds them for seed 0); :func:`d2_seed_table` the oriented share over seeds from the runs'
histories, with the project's interval rules (:func:`cnce.images.verdicts.seed_interval`).
:func:`faster_claim` and :func:`similar_claim` return the two sentences' measures as
:class:`cnce.images.verdicts.Measured`.
"""
from __future__ import annotations

import numpy as np
import torch

from cnce.images.data import Whitener
from cnce.images.measures import filter_properties, osi_threshold, unit_images
from cnce.images.verdicts import Measured, seed_interval, unit_interval

__all__ = ["rms_radius", "matched_similarity", "random_matching", "d2_table", "d2_seed_table", "faster_claim",
           "similar_claim", "PICTURES", "grating_histories"]

PICTURES = ("receptive fields", "features")


def rms_radius(images) -> np.ndarray:
    """Per image in ``images (K, n, n)``: the RMS distance (pixels) of its energy ``f**2`` from
    the energy centroid, ``sqrt(sum E |r - c|^2 / sum E)``."""
    f = np.asarray(images, dtype=float)
    if f.ndim == 2:
        f = f[None]
    if f.ndim != 3:
        raise ValueError(f"images must have shape (K, n, n) or (n, n); got {f.shape}")
    E = f**2
    s = np.maximum(E.sum((1, 2)), 1e-300)
    yy, xx = np.mgrid[0:f.shape[1], 0:f.shape[2]].astype(float)
    cx = (E * xx).sum((1, 2)) / s
    cy = (E * yy).sum((1, 2)) / s
    r2 = (xx[None] - cx[:, None, None]) ** 2 + (yy[None] - cy[:, None, None]) ** 2
    return np.sqrt((E * r2).sum((1, 2)) / s)


def _unit_rows(A) -> np.ndarray:
    A = np.asarray(A, dtype=float)
    A = A.reshape(len(A), -1)
    A = A - A.mean(1, keepdims=True)
    return A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-300)


def matched_similarity(A, B) -> tuple[float, np.ndarray, np.ndarray]:
    """The best one-to-one matching of the rows (or images) of ``A (K, ...)`` and ``B (K', ...)``
    by ``|cosine|`` of the mean-free, unit-norm vectors (``scipy.optimize.linear_sum_assignment``,
    maximising the sum). Returns ``(mean |cos| over the min(K, K') pairs, |cos| per pair, index
    in B matched to each matched row of A)``."""
    from scipy.optimize import linear_sum_assignment

    a, b = _unit_rows(A), _unit_rows(B)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"A and B must hold vectors of the same size; got {a.shape[1]} and {b.shape[1]}")
    C = np.abs(a @ b.T)
    rows, cols = linear_sum_assignment(C, maximize=True)
    pairs = C[rows, cols]
    return float(pairs.mean()), pairs, cols


def _pictures(W, whitener: Whitener, picture: str) -> np.ndarray:
    if picture not in PICTURES:
        raise ValueError(f"picture must be one of {PICTURES}; got {picture!r}")
    return unit_images(torch.as_tensor(W).float(), whitener)[picture]


def random_matching(K: int, whitener: Whitener, *, picture: str = "features", n_draws: int = 20, seed: int = 0) -> np.ndarray:
    """``n_draws`` values of :func:`matched_similarity` between two independent sets of ``K``
    Gaussian weight vectors in the whitened space, pictured as ``picture``: what the matching
    gives by chance."""
    g = torch.Generator().manual_seed(int(seed))
    out = []
    for _ in range(n_draws):
        A = torch.randn(K, whitener.D, generator=g)
        B = torch.randn(K, whitener.D, generator=g)
        out.append(matched_similarity(_pictures(A, whitener, picture), _pictures(B, whitener, picture))[0])
    return np.array(out)


def d2_table(snapshots: dict, whitener: Whitener, *, variants=("cnce", "nce-reset"), picture: str = "features",
             size_picture: str = "receptive fields", threshold: float | None = None, n_random: int = 20, seed: int = 0):
    """Per meta-iteration (``0`` = the common initialisation) the D.2 measures of one run.

    ``snapshots`` is ``{variant: {meta: W1 (K, D)}}`` (``load_pt("d2/paper.pt")["compare.pt"]
    ["snapshots"]``); the two ``variants`` are compared (first: CNCE). Columns per variant ``v``:
    ``oriented_v`` (share, receptive fields, ``threshold`` default :func:`osi_threshold`),
    ``rms_v`` (median RMS radius of ``size_picture``, pixels), ``freq_v`` (median preferred
    frequency, cycles/pixel), ``vs_init_v`` (matching with the initialisation); and
    ``similarity`` (the two variants matched, with ``similarity_lo``, ``similarity_hi`` a
    t-interval over the matched pairs), ``random`` and ``random_p95`` (mean and 95th
    percentile of :func:`random_matching`). Returns a pandas DataFrame indexed by ``meta``."""
    import pandas as pd

    if len(variants) != 2 or any(v not in snapshots for v in variants):
        raise ValueError(f"variants must name two of the snapshot sets {sorted(snapshots)}; got {variants!r}")
    metas = sorted(set(snapshots[variants[0]]) & set(snapshots[variants[1]]))
    if 0 not in metas:
        raise ValueError("snapshots must hold the common initialisation at meta-iteration 0")
    thr = osi_threshold(whitener) if threshold is None else float(threshold)
    init = {v: snapshots[v][0].float() for v in variants}
    init_pic = _pictures(init[variants[0]], whitener, picture)
    K = init[variants[0]].shape[0]
    rnd = random_matching(K, whitener, picture=picture, n_draws=n_random, seed=seed)
    rows = []
    for m in metas:
        row = {"meta": m}
        pics = {}
        for v in variants:
            W = snapshots[v][m].float()
            imgs = unit_images(W, whitener)
            pics[v] = imgs[picture]
            row[f"oriented_{v}"] = float(np.mean(filter_properties(imgs["receptive fields"]).osi > thr))
            row[f"rms_{v}"] = float(np.median(rms_radius(imgs[size_picture])))
            row[f"freq_{v}"] = float(np.median(filter_properties(imgs[size_picture]).frequency))
            row[f"vs_init_{v}"] = matched_similarity(pics[v], init_pic)[0]
        sim, pairs, _ = matched_similarity(pics[variants[0]], pics[variants[1]])
        _, (lo, hi), _, _ = unit_interval([pairs])
        row.update(similarity=sim, similarity_lo=lo, similarity_hi=hi)
        row["random"], row["random_p95"] = float(rnd.mean()), float(np.percentile(rnd, 95))
        rows.append(row)
    t = pd.DataFrame(rows).set_index("meta")
    t.attrs.update(variants=tuple(variants), picture=picture, size_picture=size_picture, osi_threshold=thr)
    return t


def _histories(d2: dict, variant: str) -> dict[int, list[float]]:
    """``{seed: [oriented share after meta-iteration 1, 2, ...]}`` from ``d2/paper.pt``."""
    out = {}
    for run in d2.values():
        h = run["history"].get(variant)
        if h is not None:
            out[int(run["seed"])] = [float(r["oriented"]) for r in sorted(h, key=lambda r: r["meta"])]
    return out


def d2_seed_table(d2: dict, *, variants=("cnce", "nce-reset")):
    """The oriented share per meta-iteration (``1`` = after the first) over the seeds of
    ``d2 = load_pt("d2/paper.pt")``: per variant the mean and interval
    (:func:`cnce.images.verdicts.seed_interval`, shares clipped to [0, 1]), and the paired
    difference of the two variants with its interval. Returns a pandas DataFrame indexed by
    ``meta``; ``attrs["rule"]`` states the interval rule."""
    return _seed_table([_histories(d2, v) for v in variants], variants)


def _seed_table(hs, variants):
    import pandas as pd

    seeds = sorted(set(hs[0]) & set(hs[1]))
    if not seeds:
        raise ValueError(f"no seed holds histories of both variants {variants!r}")
    n_meta = min(len(h[s]) for h in hs for s in seeds)
    rows, rule, per_seed = [], "", {}
    for m in range(n_meta):
        row = {"meta": m + 1}
        for v, h in zip(variants, hs):
            mean, (lo, hi), rule = seed_interval([h[s][m] for s in seeds], share=True)
            row.update({f"oriented_{v}": mean, f"oriented_{v}_lo": lo, f"oriented_{v}_hi": hi})
        diffs = [hs[0][s][m] - hs[1][s][m] for s in seeds]
        per_seed[m + 1] = diffs
        mean, (lo, hi), _ = seed_interval(diffs)
        row.update({"difference": mean, "difference_lo": lo, "difference_hi": hi})
        rows.append(row)
    t = pd.DataFrame(rows).set_index("meta")
    t.attrs.update(rule=rule, seeds=seeds, variants=tuple(variants), per_seed_difference=per_seed)
    return t


def grating_histories(d2: dict, variant: str, *, whiteners: dict | None = None, threshold_seed: int = 0) -> dict[int, list[float]]:
    """``{seed: [oriented share after meta-iteration 1, 2, ...]}`` like :func:`_histories`, but
    measured from the stored snapshots by the best-frequency grating index
    (:func:`cnce.images.measures.grating_tuning` above :func:`cnce.images.measures.grating_threshold`
    of localised noise through the run's own whitener). ``whiteners``: ``{seed: Whitener}``
    (default: :func:`cnce.images.runs.whitener_of` of each run)."""
    from cnce.images import runs as runs_mod
    from cnce.images.measures import grating_threshold, grating_tuning

    out = {}
    for run in d2.values():
        snaps = run.get("snapshots", {}).get(variant)
        if snaps is None:
            continue
        k = int(run["seed"])
        wh = (whiteners or {}).get(k) or runs_mod.whitener_of(run)
        thr = grating_threshold(wh, seed=threshold_seed)
        out[k] = [float(np.mean(grating_tuning(snaps[m].float(), wh)["osi"] > thr)) for m in sorted(snaps) if m > 0]
    return out


def faster_claim(d2: dict, *, meta: int = 11, variants=("cnce", "nce-reset"), measure: str = "fourier",
                 whiteners: dict | None = None) -> Measured:
    """"CNCE appears to learn slightly faster than NCE" (Supp. D.2): the oriented share after
    ``meta`` meta-iterations, CNCE minus NCE, paired by seed. ``measure``: ``"fourier"`` (the
    Fourier index over all frequencies, as logged during training, :func:`d2_seed_table`) or
    ``"grating"`` (the grating index at each unit's best frequency, :func:`grating_histories`).
    Supported when the interval of the difference lies above 0; "contradicted" when it lies
    below 0 (NCE faster), "not supported" when it holds 0."""
    if measure not in ("fourier", "grating"):
        raise ValueError(f"measure must be 'fourier' or 'grating'; got {measure!r}")
    if measure == "fourier":
        t = d2_seed_table(d2, variants=variants)
    else:
        t = _seed_table([grating_histories(d2, v, whiteners=whiteners) for v in variants], variants)
    if meta not in t.index:
        raise ValueError(f"meta must be one of the recorded meta-iterations 1..{t.index.max()}; got {meta!r}")
    r = t.loc[meta]
    a, b = variants
    lo, hi = float(r["difference_lo"]), float(r["difference_hi"])
    what = "Fourier index" if measure == "fourier" else "best-frequency grating index"
    verdict = ("supported" if lo > 0 else "not supported" if hi >= 0 else "contradicted") + (
        f": after {meta} meta-iterations {a} minus {b} in oriented share ({what}) is {r['difference']:+.2f} "
        f"[{lo:+.2f}, {hi:+.2f}]; seeds favouring {a}: {int(sum(np.asarray(t.attrs['per_seed_difference'][meta]) > 0))} "
        f"of {len(t.attrs['seeds'])}")
    return Measured(claim=f"{a} learns faster than {b}", measure=f"oriented share ({what}) after {meta} meta-iterations, {a} minus {b}",
                    value=float(r["difference"]), baselines={"no difference": 0.0}, interval=(lo, hi), rule=t.attrs["rule"],
                    verdict=verdict, n_units=0, n_seeds=len(t.attrs["seeds"]),
                    extra={f"oriented_{a}": float(r[f"oriented_{a}"]), f"oriented_{b}": float(r[f"oriented_{b}"]),
                           "per_seed_difference": list(map(float, t.attrs["per_seed_difference"][meta])),
                           "orientation measure": measure})


def similar_claim(table, *, meta: int = 11, max_oriented_gap: float = 0.10, max_radius_ratio: float = 1.25) -> Measured:
    """"The methods seem to learn similar features" (Supp. D.2), from :func:`d2_table` of one
    run, after ``meta`` meta-iterations.

    Two parts. *Matching*: the matched similarity of the two feature sets must exceed the
    random sets' 95th percentile and both methods' similarity to the common start (so that it
    is not the shared start alone). *Same kind*: their oriented shares differ by at most
    ``max_oriented_gap`` and their median RMS radii by at most the factor ``max_radius_ratio``.
    The verdict is "supported" when both hold, "partly" when the matching holds but the kinds
    differ, "not supported" otherwise. The interval is over the matched pairs of the one run
    (a t-interval over units); one run gives no interval over seeds."""
    if meta not in table.index:
        raise ValueError(f"meta must be one of the table's meta-iterations; got {meta!r}")
    a, b = table.attrs.get("variants", ("cnce", "nce-reset"))
    r = table.loc[meta]
    base = {"random sets": float(r["random"]), f"{a} vs start": float(r[f"vs_init_{a}"]),
            f"{b} vs start": float(r[f"vs_init_{b}"])}
    s = float(r["similarity"])
    match = s > float(r["random_p95"]) and s > base[f"{a} vs start"] and s > base[f"{b} vs start"]
    gap = abs(float(r[f"oriented_{a}"]) - float(r[f"oriented_{b}"]))
    ratio = max(float(r[f"rms_{a}"]), float(r[f"rms_{b}"])) / max(min(float(r[f"rms_{a}"]), float(r[f"rms_{b}"])), 1e-300)
    kind = gap <= max_oriented_gap and ratio <= max_radius_ratio
    word = "supported" if match and kind else "partly" if match else "not supported"
    verdict = word + (
        f": matched |cos| {s:.2f} after {meta} meta-iterations, against {base['random sets']:.2f} for random sets "
        f"(95th percentile {float(r['random_p95']):.2f}) and {base[f'{a} vs start']:.2f} / {base[f'{b} vs start']:.2f} "
        f"for each method against the common start; oriented share {r[f'oriented_{a}']:.2f} vs {r[f'oriented_{b}']:.2f} "
        f"(gap {gap:.2f}, at most {max_oriented_gap:.2f} for the same kind), median RMS radius {r[f'rms_{a}']:.1f} vs "
        f"{r[f'rms_{b}']:.1f} px (ratio {ratio:.2f}, at most {max_radius_ratio:.2f})")
    return Measured(claim=f"{a} and {b} learn similar features",
                    measure=f"matched |cosine| of the two sets of {table.attrs.get('picture', 'features')}",
                    value=s, baselines=base, interval=(float(r["similarity_lo"]), float(r["similarity_hi"])),
                    rule="t-interval over the matched pairs of one run; no interval over seeds", verdict=verdict,
                    n_units=0, n_seeds=1, extra={"matching": match, "same kind": kind, "oriented gap": gap,
                                                 "radius ratio": ratio, "row": {k: float(v) for k, v in r.items()}})


def similar_over_seeds(per_seed: list[Measured]) -> Measured:
    """:func:`similar_claim` over seeds (one :class:`Measured` per seed's :func:`d2_table`): the
    matched similarity with its interval over seeds (:func:`cnce.images.verdicts.seed_interval`),
    the baselines averaged, and the verdict word the seeds share, or "partly" when they differ
    (some seeds supporting it)."""
    if not per_seed:
        raise ValueError("per_seed must hold at least one seed's similar_claim")
    words = [m.verdict.split(":")[0] for m in per_seed]
    value, interval, rule = seed_interval([m.value for m in per_seed])
    word = words[0] if len(set(words)) == 1 else ("partly" if any(w in ("supported", "partly") for w in words)
                                                    else "not supported")
    base = {k: float(np.mean([m.baselines[k] for m in per_seed])) for k in per_seed[0].baselines}
    kinds = [bool(m.extra.get("same kind")) for m in per_seed]
    verdict = (f"{word}: matched |cos| {value:.2f} [{interval[0]:.2f}, {interval[1]:.2f}] over {len(per_seed)} seeds "
               f"against {base.get('random sets', float('nan')):.2f} for random sets; features of the same kind in "
               f"{sum(kinds)} of {len(kinds)} seeds (per seed: {'; '.join(words)})")
    return Measured(claim=per_seed[0].claim, measure=per_seed[0].measure, value=value, baselines=base,
                    interval=interval, rule=rule, verdict=verdict, n_units=0, n_seeds=len(per_seed),
                    extra={"per_seed": [m.verdict for m in per_seed], "same kind": kinds})
