"""The image chapter's claims (paper Section 4 and Supp. D.2) as rows of the book's claims table.

A row has ``claim``, ``paper`` (what the paper says, in our words), ``measured`` (our numbers
with their baselines and interval), ``short`` (the deciding number in a few words),
``verdict`` (a badge: one of :data:`VERDICTS`), ``page`` (the notebook
that shows it) and ``beyond`` (``True`` for a question of ours that the paper does not ask).
:func:`image_claims` gathers rows into a table (claim, paper, measured, short, verdict, page,
stats) plus ``beyond``; the image page builds its verdict
block from the same rows, so the two cannot disagree.

The measures and their rules are those of :mod:`cnce.images.layer_claims`,
:mod:`cnce.images.d2` and :mod:`cnce.images.verdicts` (each a
:class:`~cnce.images.verdicts.Measured` whose verdict sentence starts with "supported",
"partly", "not supported", "contradicted" or "not testable here"); :func:`row_from_measured`
turns one into a row, :func:`row_from_parts` several parts of one sentence of the paper (layer
2's position, orientation and frequency). Layer 1 (Gabor-like: localised AND oriented AND
band-pass) comes from :data:`LAYER1_FILE` (:func:`gabor_row`; :func:`layer1_row`, the oriented part
alone, only where that file is absent); the authors' recipe has its own rule (:func:`recipe_row`).

The page reads the measures of the committed runs from ``data/checks/image-claims.json``,
written by ``scripts/image_claims.py`` (:func:`save_measured`, :func:`load_measured`), so that
its quick execution stays cheap.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from cnce.images.verdicts import Measured, seed_interval

__all__ = ["PAGE", "D2_HEDGE", "ClaimRow", "badge", "row_from_measured", "row_from_parts", "layer1_row", "gabor_row", "recipe_row",
           "pca_row", "layer1_inputs", "chapter_rows", "CLAIMS_FILE", "SETTINGS_FILE", "LAYER1_FILE", "row_from_settings", "settings_table", "pca_variance_claim", "DECIDING_GROUP", "image_claims", "seed_table", "format_interval", "save_measured", "load_measured"]

#: the page that shows the evidence
PAGE = "06_image_model"
#: the supplement's own hedge on D.2, in our words (its Section D.2, last paragraph)
D2_HEDGE = ("the supplement itself declines to claim better performance, the comparison being qualitative, and "
            "says only that CNCE appears to learn slightly faster")

#: the badges a row can carry (the claims ledger, ``companion.claims``, defines what they mean
#: and renders the rows; this module only builds them from the measures)
VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "not testable here", "beyond the paper")

#: the first words of a :class:`Measured` verdict sentence and the badge they give
_BADGES = (("not testable here", "not testable here"), ("supported", "reproduced"), ("partly", "partly reproduced"),
           ("not supported", "not reproduced"), ("contradicted", "not reproduced"),
           ("reproduced", "reproduced"), ("not reproduced", "not reproduced"))  # the last two: over_settings


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
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}")
        if self.beyond != (self.verdict == "beyond the paper"):
            raise ValueError(f"beyond={self.beyond!r} does not match verdict={self.verdict!r}")


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def badge(m: Measured) -> str:
    """The badge of a :class:`Measured`: "not testable here" when it is; otherwise from the
    first words of its verdict sentence (supported: "reproduced"; partly: "partly reproduced";
    not supported or contradicted: "not reproduced")."""
    if not m.testable:
        return "not testable here"
    text = m.verdict.strip().lower()
    for words, b in sorted(_BADGES, key=lambda x: -len(x[0])):  # "not supported" before "supported"
        if text.startswith(words):
            return b
    raise ValueError(f"verdict sentence of {m.claim!r} starts with none of {[w for w, _ in _BADGES]}: {m.verdict!r}")


def _number(m: Measured, percent: bool | str) -> str:
    lo, hi = m.interval
    if percent == "points":
        return f"{100 * m.value:+.0f} points [{100 * lo:+.0f}, {100 * hi:+.0f}]"
    if percent:
        return f"{_pct(m.value)} [{100 * lo:.0f}, {100 * hi:.0f}]"
    return f"{m.value:.2f} [{lo:.2f}, {hi:.2f}]"


def _measured_text(m: Measured, percent: bool) -> str:
    if not m.testable:
        return f"{m.measure}: not testable here, {m.not_testable}"
    base = ", ".join(f"{k} {_pct(v) if percent is True else f'{100 * v:+.0f} points' if percent == 'points' else f'{v:.2f}'}"
                     for k, v in m.baselines.items())
    return f"{m.measure}: {_number(m, percent)} ({m.rule}); baselines: {base}"


def row_from_measured(m: Measured, *, claim: str, paper: str, percent: bool | str = True) -> ClaimRow:
    """A row from one :class:`Measured`. ``percent``: ``True`` when its value is a share (printed
    in %), ``"points"`` when a difference of shares (in percentage points), ``False`` otherwise."""
    v = badge(m)
    if not m.testable:
        short = m.not_testable.split(":")[0].split(" (")[0]  # what makes it so, in a few words
    elif percent is True:
        worst = max(m.baselines.values()) if m.baselines else float("nan")
        short = f"{_pct(m.value)} of units against at most {_pct(worst)} for the baselines"
    else:
        short = _number(m, percent) + (f" against {', '.join(f'{k} {b:.2f}' for k, b in m.baselines.items())}"
                                       if percent is False else "")
    return ClaimRow(claim=claim, paper=paper, measured=_measured_text(m, percent), short=short, verdict=v)


def row_from_parts(parts: dict[str, Measured], *, claim: str, paper: str) -> ClaimRow:
    """One row for a sentence of the paper with several parts (layer 2 pools by position,
    orientation and frequency): ``parts[name]`` a share :class:`Measured` each. Rule:
    "reproduced" when every part is reproduced; "partly reproduced" when some is (the others
    failing or not testable); "not testable here" when none is testable; else "not reproduced"."""
    badges = {k: badge(m) for k, m in parts.items()}
    tested = [b for b in badges.values() if b != "not testable here"]
    if not tested:
        v = "not testable here"
    elif all(b == "reproduced" for b in badges.values()):
        v = "reproduced"
    elif any(b in ("reproduced", "partly reproduced") for b in tested):
        v = "partly reproduced"
    else:
        v = "not reproduced"
    measured = "; ".join(f"{k}: {m.verdict if 'settings' in m.extra else _measured_text(m, True)}" for k, m in parts.items())
    short = ", ".join(f"{k} {'not testable' if not m.testable else _pct(m.value)}" for k, m in parts.items())
    return ClaimRow(claim=claim, paper=paper, measured=measured, short=short, verdict=v)


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
    rng = _pct(v.min()) if round(100 * v.min()) == round(100 * v.max()) else f"{100 * v.min():.0f}-{100 * v.max():.0f} %"
    return ClaimRow(
        claim="Image model, layer 1",
        paper="greedy CNCE on natural image patches learns Gabor-like first-layer features",
        measured=(f"{rng} of the receptive fields oriented over {v.size} seed{'s' * (v.size > 1)} ({data}), against "
                  f"{_pct(chance)} for localised noise by construction; positive control FastICA {_pct(control)}, "
                  f"negative controls at most {_pct(negatives)}"),
        short=f"{rng} oriented ({_pct(chance)} by chance)",
        verdict=verdict)


def gabor_row(layer1: dict[str, Measured]) -> ClaimRow:
    """Layer 1 Gabor-like (localised AND oriented AND band-pass) from :data:`LAYER1_FILE`
    (``scripts/image_layer1.py``): one part per data group, each that group's two settings
    combined (:func:`cnce.images.layer_claims.over_settings`), by :func:`row_from_parts`."""
    groups = {k.split(" | ")[1]: m for k, m in layer1.items() if k.startswith("layer1_gabor | ") and k.count(" | ") == 1}
    if not groups:
        raise ValueError(f"layer1 must hold 'layer1_gabor | <group>' entries; got {sorted(layer1)[:4]}")
    row = row_from_parts(groups, claim="Image model, layer 1",
                         paper="greedy CNCE on natural image patches learns Gabor-like first-layer features")
    seeds = sum(m.n_seeds for m in groups.values())
    return ClaimRow(claim=row.claim, paper=row.paper, verdict=row.verdict, short=row.short + " Gabor-like",
                    measured=f"{seeds} seeds; " + row.measured)


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
    """The rows as a table (the columns claim, paper, measured, short, verdict, page, stats)
    (``stats`` empty) plus ``beyond``."""
    import pandas as pd

    rows = list(rows)
    if not all(isinstance(r, ClaimRow) for r in rows):
        raise ValueError("rows must be ClaimRow objects")
    cols = ["claim", "paper", "measured", "short", "verdict", "page", "stats", "beyond"]
    df = pd.DataFrame([asdict(r) | {"stats": {}} for r in rows])
    return df[cols] if len(df) else pd.DataFrame(columns=cols)


def format_interval(values, scale: float = 100.0, unit: str = " %", signed: bool = False, digits: int = 0,
                    share: bool = False) -> str:
    """:func:`cnce.images.verdicts.seed_interval` as text, e.g. ``"88 % [84, 92] (range of 2
    seeds)"`` (values times ``scale``, ``digits`` decimals)."""
    m, (lo, hi), rule = seed_interval(values, share=share)
    f = "{:" + ("+" if signed else "") + f".{int(digits)}f" + "}"
    if lo == hi:
        return f"{f.format(scale * m)}{unit} ({rule})"
    return f"{f.format(scale * m)}{unit} [{f.format(scale * lo)}, {f.format(scale * hi)}] ({rule})"


def seed_table(records, by=("optimiser", "schedule"), columns=("oriented", "J_train", "J_unseen"),
               shares=("oriented",)):
    """Per group of ``records`` (dicts with a ``seed``, e.g.
    :func:`cnce.images.runs.ablation_records`) the number of seeds and, for each of
    ``columns``, the mean, ``_lo`` and ``_hi`` by :func:`cnce.images.verdicts.seed_interval`
    (a t interval for three or more seeds, the range for two, none for one; the columns in
    ``shares`` clipped to [0, 1]) and ``_rule``, which says which."""
    import pandas as pd

    df = pd.DataFrame(list(records))
    if df.empty:
        raise ValueError("records must not be empty")
    out = []
    for key, g in df.groupby(list(by), sort=False):
        rec = dict(zip(by, key if isinstance(key, tuple) else (key,))) | {"seeds": len(g)}
        for c in columns:
            m, (lo, hi), rule = seed_interval(g[c], share=c in shares)
            rec.update({c: m, f"{c}_lo": lo, f"{c}_hi": hi, f"{c}_rule": rule})
        out.append(rec)
    return pd.DataFrame(out).set_index(list(by))


# -- the committed measures ---------------------------------------------------------------------


def _plain(x):
    """JSON-ready: numpy scalars and arrays to Python numbers and lists, NaN to None."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer, int)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    return x


def save_measured(measured: dict[str, Measured], tables: dict, meta: dict) -> str:
    """The JSON text of ``measured`` (``{key: Measured}``), ``tables`` (``{name: DataFrame}``,
    stored as ``to_dict(orient="split")``) and ``meta`` (provenance, arguments)."""
    out = {"meta": _plain(meta), "measured": {k: _plain(asdict(m)) for k, m in measured.items()},
           "tables": {k: _plain(t.reset_index().to_dict(orient="split")) for k, t in tables.items()}}
    return json.dumps(out, indent=1, sort_keys=False) + "\n"


def load_measured(path) -> tuple[dict[str, Measured], dict, dict]:
    """``(measured, tables, meta)`` from a file written with :func:`save_measured`: the
    :class:`Measured` objects (NaN restored), the tables as pandas DataFrames, the meta dict."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not a file; write it with scripts/image_claims.py")
    d = json.loads(p.read_text())
    nan = lambda v: math.nan if v is None else v  # noqa: E731
    measured = {}
    for k, m in d["measured"].items():
        m = dict(m)
        m["value"] = nan(m["value"])
        m["interval"] = tuple(nan(v) for v in m["interval"])
        m["baselines"] = {b: nan(v) for b, v in m["baselines"].items()}
        measured[k] = Measured(**m)
    tables = {}
    for k, t in d["tables"].items():
        df = pd.DataFrame(t["data"], columns=t["columns"]).astype(float, errors="ignore")
        tables[k] = df.set_index(t["columns"][0])
    return measured, tables, d["meta"]


#: the committed claim measures (``scripts/image_claims.py``), relative to ``data/``
CLAIMS_FILE = "checks/image-claims.json"
#: layer 1 Gabor-like (localised AND oriented AND band-pass) under two settings, on the bundled
#: and photo-pack runs (``scripts/image_layer1.py``), relative to ``data/``
LAYER1_FILE = "checks/image-layer1.json"
#: the deciding claims under two measure settings each, with null distributions
#: (``scripts/image_settings.py``), relative to ``data/``
SETTINGS_FILE = "checks/image-settings.json"


def row_from_settings(m: Measured, *, claim: str, paper: str, percent: bool | str = True) -> ClaimRow:
    """A row from a claim measured under several settings
    (:func:`cnce.images.layer_claims.over_settings`): the badge from its first words
    ("reproduced", "not reproduced", "partly: depends on the setting", "not testable here"), the
    measured column its whole sentence (every setting's verdict, with the null distributions'
    95th percentiles), the short column the first setting's number and the verdict per setting."""
    v = badge(m)
    per = m.extra.get("settings", {})
    words = "; ".join(f"{k}: {t.split(':')[0]}" for k, t in per.items())
    if m.testable:
        first = next(iter(per), "")
        num = _number(m, percent) if percent is not True else f"{_pct(m.value)} [{100 * m.interval[0]:.0f}, {100 * m.interval[1]:.0f}]"
        short = f"{num} ({first}); {words}"
    else:
        short = words
    return ClaimRow(claim=claim, paper=paper, measured=m.verdict, short=short, verdict=v)
#: the group of runs whose measures decide the rows of layers 2-4: the photo pack, whose first
#: layer spans the frequencies that the frequency claims need in both pictures of a unit (on the
#: bundled photographs the receptive fields span under one octave, the features just over one:
#: ``scripts/image_layer1.py``)
DECIDING_GROUP = "photos/"


def pca_row(m: Measured) -> ClaimRow:
    """The PCA-sample test of the earlier failure (:func:`cnce.images.attribution.pca_test`): a
    question of ours, so "beyond the paper"."""
    return ClaimRow(claim="Image model, what failed before", beyond=True, verdict="beyond the paper",
                    paper="(not a claim of the paper) PCA fitted on 50,000 patches alone kept the authors' recipe "
                          "from learning layer 1 in an earlier run",
                    measured=m.verdict, short=m.verdict.split(":")[0] + f" ({m.n_seeds} seeds per arm)")


def layer1_inputs(run_names, *, seed: int = 0, root=None) -> dict:
    """What :func:`layer1_row` needs, measured on the committed four-layer runs ``run_names``
    (folders under ``data/weights``): the oriented share of the receptive fields per seed, and
    on the first run the positive control FastICA (``ica/paper.pt``) and the largest share of
    the negative controls (the run's random initialisation, isotropic differences of Gaussians),
    each by :func:`cnce.images.measures.layer1_table` with baselines seeded by ``seed``."""
    from cnce.images import measures, runs

    by_seed, first = [], None
    for name in run_names:
        st = runs.load_state(Path(root or runs.weights_dir()) / name)
        net, wh = runs.network_from_state(st)
        sets = {"learned": net.W1.detach(), **measures.baseline_weights(wh, len(net.W1), seed=seed)}
        if first is None:
            sets.update(FastICA=runs.load_pt("ica/paper.pt", root)["W"], initialisation=measures.initial_network(st).W1.detach())
        t, _ = measures.layer1_table(sets, wh)
        by_seed.append(float(t.loc[("receptive fields", "learned"), "oriented_share"]))
        first = first if first is not None else t
    rf = "receptive fields"
    return dict(oriented_by_seed=by_seed, chance=0.05, control=float(first.loc[(rf, "FastICA"), "oriented_share"]),
                negatives=max(float(first.loc[(rf, n), "oriented_share"]) for n in ("initialisation", "isotropic DoG")))


def chapter_rows(measured: dict[str, Measured] | None = None, *, layer1: dict | None = None, decides: str | None = None,
                 pca: Measured | None = None, data: str = "the seven photographs bundled with scikit-image, not the paper's",
                 seed: int = 0, settings: dict[str, Measured] | None = None) -> list[ClaimRow]:
    """The image chapter's rows of the claims table, from the committed runs and measures alone;
    the image page and the claims page both call this, so they cannot disagree.

    Layer 1 on the run the page shows (bundled photographs, three seeds; ``layer1``: the
    arguments of :func:`layer1_row`, measured by :func:`layer1_inputs` when not given); layers 2-4
    on :data:`DECIDING_GROUP` (the photo pack); Supp. D.2 over its seeds; beyond the paper, the
    authors' recipe (``decides``: the page's sentence on the ablation; a summary of the
    ablation's paper size when not given) and the PCA-sample test (``pca``).

    ``settings`` (default: :data:`SETTINGS_FILE` when committed): the deciding claims under two
    measure settings each with null distributions (``scripts/image_settings.py``); when given,
    the rows of layers 2-4 and of D.2 "faster" come from it, and two rows follow the others:
    layer-2 sparsity and the variance PCA keeps at D = 600."""
    from cnce.images import attribution, d2, runs

    if measured is None:
        measured = load_measured(runs.weights_dir().parent / CLAIMS_FILE)[0]
    if settings is None and (runs.weights_dir().parent / SETTINGS_FILE).is_file():
        settings = load_measured(runs.weights_dir().parent / SETTINGS_FILE)[0]
    l1_file = runs.weights_dir().parent / LAYER1_FILE
    l1_measured, _, l1_meta = load_measured(l1_file) if l1_file.is_file() else ({}, {}, {})
    if layer1 is None and l1_measured and l1_meta["args"]["seed"] == seed:
        # the oriented share per seed of the runs shown, as layer1_inputs measures it (the same
        # localised-noise threshold and seed), committed by scripts/image_layer1.py
        first = next(m for k, m in l1_measured.items() if k.startswith("layer1_gabor | bundled photographs | "))
        layer1 = {"oriented_by_seed": first.extra["parts per seed"]["oriented"]}
    if layer1 is None:
        shown = json.loads((runs.weights_dir().parent / CLAIMS_FILE).read_text())["meta"]["groups"][""]["runs"]
        layer1 = layer1_inputs(shown, seed=seed)
    g = DECIDING_GROUP
    where = " (photo pack)"
    similar = d2.similar_over_seeds([m for k, m in sorted(measured.items())
                                     if k == "d2_similar" or k.startswith("d2_similar_s")])
    cells = runs.ablation_records(runs.load_results(), "paper")
    recipe = layer1["oriented_by_seed"]  # the runs shown are the recipe at the paper's sizes, three seeds
    if decides is None:
        shares = [r["oriented"] for r in cells]
        decides = (f"every cell of the layer-1 ablation at the paper's sizes orients {_pct(min(shares))} to "
                   f"{_pct(max(shares))} of its units")
    if settings:
        return _settings_rows(settings, measured, layer1, similar, recipe, decides, pca, data, where)
    return [
        gabor_row(l1_measured) if l1_measured else
        layer1_row(layer1["oriented_by_seed"], chance=layer1["chance"], control=layer1["control"],
                   negatives=layer1["negatives"], data=data),
        row_from_parts({k: measured[f"{g}layer2_{k}"] for k in ("position", "orientation", "frequency")},
                       claim="Image model, layer 2" + where,
                       paper="second-layer units pool first-layer units by position, orientation and frequency"),
        row_from_measured(measured[f"{g}layer3_contours"], claim="Image model, layer 3" + where,
                          paper="third-layer units detect longer straight or bent contours"),
        row_from_parts({"authors' probe": measured[f"{g}layer4_orientation_across_frequency"],
                        "extended probe": measured[f"{g}layer4_orientation_across_frequency_extended"]},
                       claim="Image model, layer 4: one orientation across frequencies" + where,
                       paper="fourth-layer units pool third-layer units of one orientation across frequencies"),
        row_from_measured(measured[f"{g}layer4_corners"], claim="Image model, layer 4: corners" + where,
                          paper="a fourth-layer unit is a low-frequency corner detector"),
        row_from_measured(measured["d2_faster"], claim="Image model, Supp. D.2 (faster)", percent="points",
                          paper="CNCE appears to learn first-layer features slightly faster than NCE (" + D2_HEDGE + ")"),
        row_from_measured(similar, claim="Image model, Supp. D.2 (similar features)", percent=False,
                          paper="CNCE and NCE seem to learn similar first-layer features"),
        recipe_row(recipe, decides=decides),
        pca_row(pca if pca is not None else attribution.pca_test()),
    ]


def _settings_rows(st: dict, measured: dict, layer1: dict, similar, recipe, decides, pca, data, where) -> list[ClaimRow]:
    """:func:`chapter_rows` with the layers 2-4 and D.2 "faster" rows from ``st`` (the settings
    file), in the same order, then layer-2 sparsity and the PCA variance."""
    from cnce.images import attribution, runs

    l1_file = runs.weights_dir().parent / LAYER1_FILE
    return [
        gabor_row(load_measured(l1_file)[0]) if l1_file.is_file() else layer1_row(layer1["oriented_by_seed"], chance=layer1["chance"], control=layer1["control"],
                   negatives=layer1["negatives"], data=data),
        row_from_parts({k: st[f"layer2_{k}"] for k in ("position", "orientation", "frequency")},
                       claim="Image model, layer 2" + where,
                       paper="second-layer units pool first-layer units by position, orientation and frequency"),
        row_from_settings(st["layer3_contours"], claim="Image model, layer 3" + where,
                          paper="third-layer units detect longer straight or bent contours"),
        row_from_settings(st["layer4_orientation_across_frequency"],
                          claim="Image model, layer 4: one orientation across frequencies" + where,
                          paper="fourth-layer units pool third-layer units of one orientation across frequencies"),
        row_from_settings(st["layer4_corners"], claim="Image model, layer 4: corners" + where,
                          paper="a fourth-layer unit is a low-frequency corner detector"),
        row_from_settings(st["d2_faster"], claim="Image model, Supp. D.2 (faster)", percent="points",
                          paper="CNCE appears to learn first-layer features slightly faster than NCE (" + D2_HEDGE + ")"),
        row_from_measured(similar, claim="Image model, Supp. D.2 (similar features)", percent=False,
                          paper="CNCE and NCE seem to learn similar first-layer features"),
        recipe_row(recipe, decides=decides),
        pca_row(pca if pca is not None else attribution.pca_test()),
        row_from_settings(st["layer2_sparsity"], claim="Image model, layer 2 sparsity" + where, percent=False,
                          paper="the learned second-layer weight vectors are sparse"),
        ClaimRow(claim="Image model, PCA to D = 600 (Sec. 4.1)", measured=st["pca_variance"].verdict,
                 paper="whitening to 600 dimensions retains 98 % of the variance (van Hateren images)",
                 short=f"{_pct(st['pca_variance'].value)} of the variance kept on the photo pack",
                 verdict=badge(st["pca_variance"])),
    ]


def settings_table(settings: dict[str, Measured], digits: int = 2):
    """The claims of :data:`SETTINGS_FILE` one row per claim and setting: the value with its
    interval, each null distribution's mean and 5-95 % range (over seeds: the smallest 5 % and the
    largest 95 % quantile), the p-value per seed and the verdict's first words; the combined
    rows (:func:`cnce.images.layer_claims.over_settings`) give the claim's verdict over its
    settings. Returns a pandas DataFrame indexed by (claim, setting)."""
    import pandas as pd

    rows = []
    for key, m in settings.items():
        if " | " not in key:
            continue
        claim, setting = key.split(" | ", 1)
        nulls = m.extra.get("null quantiles", {})
        null_txt = "; ".join(
            (f"{k} {np.mean([q['mean'] for q in v]):.{digits}f} ({min(q['q05'] for q in v):.{digits}f}-"
             f"{max(q['q95'] for q in v):.{digits}f})") if isinstance(v, list) else
            f"{k} {v['q50']:.0f} ({v['q05']:.0f}-{v['q95']:.0f})" for k, v in nulls.items()) or (
            ", ".join(f"{k} {v:.{digits}f}" for k, v in m.baselines.items()))
        rows.append({"claim": claim, "setting": setting,
                     "value [interval]": (f"{m.value:.{digits}f} [{m.interval[0]:.{digits}f}, {m.interval[1]:.{digits}f}]"
                                          if m.testable else "not testable"),
                     "null: mean (5-95 %)": null_txt if m.testable else "",
                     "p per seed": ", ".join(f"{p:.2g}" for p in m.extra.get("p_per_seed", [])),
                     "verdict": m.verdict.split(":")[0],
                     "claim's verdict": settings[claim].verdict.split(":")[0] if claim in settings else ""})
    return pd.DataFrame(rows).set_index(["claim", "setting"])


def pca_variance_claim(retained: dict) -> Measured:
    """Sec. 4.1: PCA to D = 600 keeps 98 % of the variance (van Hateren images). ``retained``:
    ``{data: [fraction per run]}``; the first entry decides. Reproduced when the interval over
    runs reaches 98 % within one point, otherwise not reproduced, with the numbers."""
    name, first = next(iter(retained.items()))
    value, ci, rule = seed_interval(first, share=True)
    ok = ci[1] >= 0.975
    others = "; ".join(f"{k}: {100 * np.mean(v):.1f} %" for k, v in retained.items())
    return Measured(claim="PCA to D = 600 keeps 98 % of the variance", measure="variance kept by the first 600 components",
                    value=value, baselines={"paper": 0.98}, interval=ci, rule=rule,
                    verdict=("supported" if ok else "not supported") + f": {100 * value:.1f} % [{100 * ci[0]:.1f}, "
                            f"{100 * ci[1]:.1f}] on the {name} against the paper's 98 % on the van Hateren images ({others})",
                    n_seeds=len(first), extra={"per_run": retained})
