"""The image chapter's claims (paper Section 4 and Supp. D.2) as rows of the book's claims table.

Each function takes the numbers a measure gave (computed by :mod:`cnce.images.measures` and
the image notebook) and returns one row: ``claim``, ``paper`` (what the paper says, in our
words), ``measured`` (our numbers with their baseline and interval), ``short`` (the deciding
number in a few words), ``verdict`` (one of :data:`cnce.experiments.claims.VERDICTS`),
``page`` (the notebook that shows it) and ``beyond`` (``True`` for a question of ours that the
paper does not ask). :func:`image_claims` gathers rows into a table with the columns of
:func:`cnce.experiments.claims.claims_table` plus ``beyond``; the image page builds its
verdict block from the same rows, so the two cannot disagree.

The verdict rules are fixed here and tested on inputs whose answer is known
(``tests/test_image_claims.py``):

* a share of units is *above chance* when its one-sided p-value against the chance share is
  below :data:`ALPHA`;
* over seeds, three or more give a Student-t interval (``n - 1`` degrees of freedom), two give
  their range and one gives no interval (:func:`seed_interval`);
* a measure whose input cannot show the property (for example first-layer features that span
  less than an octave, for a claim about frequencies) gives "not testable here" with the
  number that makes it so.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["ALPHA", "PAGE", "ClaimRow", "seed_interval", "format_interval", "layer1_row", "layer2_row",
           "share_row", "d2_faster_row", "d2_similar_row", "recipe_row", "image_claims", "seed_table"]

#: one-sided significance level of a share against its chance level
ALPHA = 0.01
#: the page that shows the evidence
PAGE = "06_image_model"
#: the supplement's own hedge on D.2, in our words (its Section D.2, last paragraph)
D2_HEDGE = ("the supplement itself declines to claim better performance, the comparison being qualitative, and "
            "says only that CNCE appears to learn slightly faster")


@dataclass(frozen=True)
class ClaimRow:
    """One row of the claims table (see the module's docstring)."""

    claim: str
    paper: str
    measured: str
    short: str
    verdict: str
    page: str = PAGE
    beyond: bool = False

    def __post_init__(self):
        from cnce.experiments.claims import VERDICTS

        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}")
        if self.beyond != (self.verdict == "beyond the paper"):
            raise ValueError(f"beyond={self.beyond!r} does not match verdict={self.verdict!r}")


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def seed_interval(values, level: float = 0.95) -> tuple[float, float, float, str]:
    """``(mean, lo, hi, kind)`` over seeds: a Student-t interval for three or more values
    (``kind`` says its degrees of freedom), the range for two, none for one (``lo = hi``)."""
    from cnce.images.runs import interval

    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"values must be a non-empty array of finite numbers; got {values!r}")
    if v.size >= 3:
        m, lo, hi = interval(v, level)
        return m, lo, hi, f"{100 * level:.0f} % t interval, {v.size - 1} degrees of freedom"
    if v.size == 2:
        return float(v.mean()), float(v.min()), float(v.max()), "range of 2 seeds"
    return float(v[0]), float(v[0]), float(v[0]), "1 seed, no interval"


def format_interval(values, scale: float = 100.0, unit: str = " %", signed: bool = False, digits: int = 0,
                    level: float = 0.95) -> str:
    """:func:`seed_interval` as text, e.g. ``"87 % [80, 93] (95 % t interval, 2 degrees of freedom)"``
    (values times ``scale``, ``digits`` decimals)."""
    m, lo, hi, kind = seed_interval(values, level)
    f = "{:" + ("+" if signed else "") + f".{int(digits)}f" + "}"
    if lo == hi:
        return f"{f.format(scale * m)}{unit} ({kind})"
    return f"{f.format(scale * m)}{unit} [{f.format(scale * lo)}, {f.format(scale * hi)}] ({kind})"


def layer1_row(oriented_by_seed, *, chance: float, control: float, negatives: float, data: str) -> ClaimRow:
    """Layer 1: Gabor-like (localised, oriented) first-layer features.

    ``oriented_by_seed``: the share of oriented receptive fields per seed; ``chance``: the share
    of the localised-noise baseline counted as oriented (5 % by construction); ``control``: the
    share for the positive control (FastICA); ``negatives``: the largest share among the
    negative controls (random initialisation, isotropic differences of Gaussians). Rule: the
    measure certifies nothing unless the control passes (at least half oriented) and the
    negatives fail (at most 10 %): otherwise "not testable here". Then "reproduced" when every
    seed has at least half its units oriented, else "not reproduced"."""
    v = np.asarray(oriented_by_seed, dtype=float)
    certified = control >= 0.5 and negatives <= 0.10
    verdict = ("not testable here" if not certified else "reproduced" if v.min() >= 0.5 else "not reproduced")
    rng = _pct(v.min()) if v.min() == v.max() else f"{100 * v.min():.0f}-{100 * v.max():.0f} %"
    return ClaimRow(
        claim="Image model, layer 1",
        paper="greedy CNCE on natural image patches learns Gabor-like first-layer features",
        measured=(f"{rng} of the receptive fields oriented over {v.size} seed{'s' * (v.size > 1)} ({data}), against "
                  f"{_pct(chance)} for localised noise by construction; positive control FastICA {_pct(control)}, "
                  f"negative controls at most {_pct(negatives)}"),
        short=f"{rng} oriented ({_pct(chance)} by chance)",
        verdict=verdict)


def layer2_row(shares: dict, n_units: int, *, untestable: dict | None = None, chance: float = 0.05) -> ClaimRow:
    """Layer 2: second-layer units pool first-layer units alike in position, orientation and
    frequency. ``shares[prop] = (share, p)``: the share of units whose pooled units are more
    alike in ``prop`` than 95 % of random sets, and its one-sided p-value against ``chance``;
    ``untestable[prop]``: why a property cannot show here (the number that makes it so).
    Rule: "reproduced" when every property is testable and above chance; "partly reproduced"
    when some is above chance; "not testable here" when none is testable; else "not
    reproduced"."""
    untestable = dict(untestable or {})
    tested = {k: v for k, v in shares.items() if k not in untestable}
    sig = {k: p < ALPHA for k, (_, p) in tested.items()}
    if not tested:
        verdict = "not testable here"
    elif all(sig.values()) and not untestable:
        verdict = "reproduced"
    elif any(sig.values()):
        verdict = "partly reproduced"
    else:
        verdict = "not reproduced"
    parts = [f"{k} {_pct(s)} (p = {p:.2g})" for k, (s, p) in tested.items()]
    parts += [f"{k} not testable here: {why}" for k, why in untestable.items()]
    return ClaimRow(
        claim="Image model, layer 2",
        paper="second-layer units pool first-layer units of similar position, orientation and frequency",
        measured=(f"share of {n_units} units whose pooled units are more alike than 95 % of random sets of the same "
                  f"size ({_pct(chance)} by chance): " + "; ".join(parts)),
        short=", ".join(f"{k} {_pct(s)}" for k, (s, _) in tested.items()) + f" coherent ({_pct(chance)} by chance)",
        verdict=verdict)


def share_row(claim: str, paper: str, measure: str, *, learned, baseline: float, baseline_name: str,
              p: float | None, untestable: str | None = None, majority: float = 0.5) -> ClaimRow:
    """A claim that some units have a property (layer 3: contour-like; layer 4: pooling one
    orientation across frequencies; corner-like), measured as the share of units that
    ``measure`` scores as having it. ``learned``: that share per seed; ``baseline``: the share
    for ``baseline_name`` (random or shuffled weights); ``p``: one-sided p-value of the learned
    share against the baseline (pooled over seeds); ``untestable``: why the input cannot show
    the property, if so. Rule: "not testable here" when ``untestable``; "reproduced" when the
    share is above the baseline (``p < ALPHA``) in a majority of units; "partly reproduced"
    when above the baseline in fewer; else "not reproduced"."""
    if untestable:
        return ClaimRow(claim=claim, paper=paper, measured=f"{measure}: not testable here, {untestable}",
                        short="not testable here", verdict="not testable here")
    v = np.asarray(learned, dtype=float)
    if p is None:
        raise ValueError("p must be given when the claim is testable")
    above = p < ALPHA
    verdict = ("reproduced" if above and v.mean() >= majority else "partly reproduced" if above else "not reproduced")
    return ClaimRow(
        claim=claim, paper=paper,
        measured=(f"{measure}: {format_interval(v)} of the units, against {_pct(baseline)} for {baseline_name} "
                  f"(p = {p:.2g})"),
        short=f"{_pct(v.mean())} of units against {_pct(baseline)} for {baseline_name}",
        verdict=verdict)


def d2_faster_row(diff_by_seed, *, meta: int, cnce_end: float, nce_end: float, meta_end: int) -> ClaimRow:
    """Supp. D.2: CNCE learns first-layer features slightly faster than NCE. ``diff_by_seed``:
    CNCE's oriented share minus NCE's (as the authors' code runs it) after ``meta``
    meta-iterations, per seed. Rule (with three or more seeds, the t interval): "reproduced"
    when the interval lies above 0; otherwise "not reproduced" (below 0: NCE is faster; across
    0: no significant difference). With fewer than three seeds no interval can decide:
    "not testable here"."""
    v = np.asarray(diff_by_seed, dtype=float)
    m, lo, hi, kind = seed_interval(v)
    if v.size < 3:
        verdict, words = "not testable here", f"only {v.size} seed{'s' * (v.size > 1)}"
    elif lo > 0:
        verdict, words = "reproduced", "CNCE faster"
    else:
        verdict, words = "not reproduced", "NCE faster" if hi < 0 else "no significant difference"
    return ClaimRow(
        claim="Image model, Supp. D.2",
        paper=f"CNCE appears to learn first-layer features slightly faster than NCE ({D2_HEDGE})",
        measured=(f"CNCE minus NCE in the oriented share after {meta} meta-iterations: "
                  f"{format_interval(v, unit=' points', signed=True)}: {words}; after {meta_end} meta-iterations "
                  f"CNCE {_pct(cnce_end)}, NCE {_pct(nce_end)}"),
        short=f"CNCE - NCE {100 * m:+.0f} points after {meta}: {words}",
        verdict=verdict)


def d2_similar_row(similarity_by_seed, *, random_similarity: float, p: float | None, meta: int,
                   what: str = "mean best-match correlation of the two feature sets") -> ClaimRow:
    """Supp. D.2: the two methods learn similar features. ``similarity_by_seed``: ``what`` per
    seed after ``meta`` meta-iterations; ``random_similarity``: the same for two random feature
    sets; ``p``: one-sided p-value against it. Rule: "reproduced" when above the random
    matching (``p < ALPHA``), else "not reproduced"."""
    v = np.asarray(similarity_by_seed, dtype=float)
    if p is None:
        raise ValueError("p must be given")
    return ClaimRow(
        claim="Image model, Supp. D.2 (similar features)",
        paper="CNCE and NCE seem to learn first-layer features of the same kind",
        measured=(f"{what} after {meta} meta-iterations: {format_interval(v, scale=1, unit='', digits=2)}, "
                  f"against {random_similarity:.2f} for random sets (p = {p:.2g})"),
        short=f"similarity {v.mean():.2f} against {random_similarity:.2f} for random sets",
        verdict="reproduced" if p < ALPHA else "not reproduced")


def recipe_row(oriented_by_seed, *, decides: str) -> ClaimRow:
    """The authors' recipe (their minimiser, main sets and eps rule, from their code) at the
    paper's sizes: a question of ours that the paper does not ask, so its row is marked
    "beyond the paper". ``decides``: the sentence on what decides at smaller sizes."""
    v = np.asarray(oriented_by_seed, dtype=float)
    return ClaimRow(
        claim="Image model, the authors' recipe",
        paper="(not a claim of the paper) the recipe of the authors' code learns the first layer at the paper's sizes",
        measured=(f"their minimiser and main sets orient {format_interval(v)} of layer 1 at the paper's sizes; "
                  + decides),
        short=f"{_pct(v.mean())} of layer 1 oriented ({v.size} seed{'s' * (v.size > 1)})",
        verdict="beyond the paper", beyond=True)


def image_claims(rows) -> "pd.DataFrame":  # noqa: F821
    """The rows as a table with the columns of :func:`cnce.experiments.claims.claims_table`
    (``stats`` empty) plus ``beyond``."""
    import pandas as pd

    rows = list(rows)
    if not all(isinstance(r, ClaimRow) for r in rows):
        raise ValueError("rows must be ClaimRow objects")
    df = pd.DataFrame([asdict(r) | {"stats": {}} for r in rows])
    cols = ["claim", "paper", "measured", "short", "verdict", "page", "stats", "beyond"]
    return df[cols] if len(df) else pd.DataFrame(columns=cols)


def seed_table(records, by=("optimiser", "schedule"), columns=("oriented", "J_train", "J_unseen")):
    """Per group of ``records`` (dicts with a ``seed``, e.g.
    :func:`cnce.images.runs.ablation_records`) the number of seeds and, for each of
    ``columns``, ``mean``, ``_lo`` and ``_hi`` from :func:`seed_interval` (a t interval for
    three or more seeds, the range for two, none for one) and ``_kind``, which says which."""
    import pandas as pd

    df = pd.DataFrame(list(records))
    if df.empty:
        raise ValueError("records must not be empty")
    out = []
    for key, g in df.groupby(list(by), sort=False):
        rec = dict(zip(by, key if isinstance(key, tuple) else (key,))) | {"seeds": len(g)}
        for c in columns:
            m, lo, hi, kind = seed_interval(g[c])
            rec.update({c: m, f"{c}_lo": lo, f"{c}_hi": hi, f"{c}_kind": kind})
        out.append(rec)
    return pd.DataFrame(out).set_index(list(by))
