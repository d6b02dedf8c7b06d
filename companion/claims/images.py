"""The image model's claims (Section 4, Supp. D.2) declared in the ledger's form.

The measures are library code (:mod:`cnce.images.layer_claims`, :mod:`cnce.images.d2`,
:mod:`cnce.images.measures`); the committed values come from two files written from clean
commits:

* ``data/checks/image-settings.json`` (``scripts/image_settings.py``): the deciding claims of
  layers 2-4 on the photo-pack runs (three seeds) and of Supp. D.2 "faster", each under two
  measure settings, every baseline a null distribution (at least 100 draws per seed), and the
  new rows (layer-2 sparsity, the variance PCA keeps at D = 600);
* ``data/checks/image-claims.json`` (``scripts/image_claims.py``): Supp. D.2 "similar", per seed.

Rules (each a function below, with known-answer tests in ``tests/test_image_ledger.py``):

* a claim measured under several settings (:func:`settings_verdict`): "reproduced" or "not
  reproduced" only when every testable setting agrees; when they disagree "partly reproduced",
  and the why names the setting that decides;
* a statement with several parts (layer 2 pools by position AND orientation AND frequency):
  :func:`companion.claims.shapes.parts_verdict` over the parts' settings verdicts;
* a statement about the units the paper shows (layer 3 "detects longer contours", layer 4 "a
  corner detector"): existence (:func:`existence_by_settings`): in every seed more such units
  than the 95 % quantile of the null distribution, with a permutation p-value below the
  threshold (:func:`companion.claims.shapes.existence_verdict` per seed), the share of such units
  reported beside it; the settings combined as above.

Layer 1 (Gabor-like = localised AND oriented AND band-pass) reads ``data/checks/image-layer1.json``
(``scripts/image_layer1.py``): each part's threshold is the 95 % quantile of a noise null, each
data group (bundled photographs, photo pack) is measured under two settings, and the four are
combined by :func:`settings_verdict`. D.2 "similar" and the two questions of ours still take
their record from :func:`cnce.images.claims.chapter_rows` (its ``recipe_row``, ``pca_row``).
"""
from __future__ import annotations

import numpy as np

from . import OURS, PAPER, QUESTION, Record, declare
from .shapes import existence_verdict, parts_verdict

_SETTINGS = "data/checks/image-settings.json"
_DATA_SETTINGS = (f"{_SETTINGS} (scripts/image_settings.py) from data/weights/photos/paper-seed0..2 "
                  "(photo pack, three seeds, committed GPU runs)")
_DATA_ROWS = "data/checks/image-claims.json and data/weights (committed GPU runs, three seeds)"
_PAGE = "06_image_model"
_SETTINGS_ANCHOR = "Every verdict under two measure settings, against null distributions"


def _settings(ctx) -> dict:
    def build():
        from cnce.images import claims as ic, runs

        return ic.load_measured(runs.weights_dir().parent / ic.SETTINGS_FILE)[0]
    return ctx.cached("images:settings", build)


def _rows(ctx) -> dict:
    def build():
        from cnce.images import claims as ic

        return {r.claim: r for r in ic.chapter_rows(seed=ctx.seed)}
    return ctx.cached("images:rows", build)


def _word(m) -> str:
    """The ledger verdict of one setting's (or a combined) :class:`cnce.images.verdicts.Measured`."""
    from cnce.images.claims import badge

    return badge(m)


def settings_verdict(words: dict[str, str]) -> tuple[str, str]:
    """``words``: setting -> that setting's verdict (a word of :data:`companion.claims.VERDICTS`).
    "reproduced" / "not reproduced" when every testable setting agrees (and at least one is
    testable); "not testable here" when none is; otherwise "partly reproduced", the why naming
    the settings on each side. Returns ``(verdict, why)``."""
    if not words:
        raise ValueError("words must name at least one setting")
    tested = {k: v for k, v in words.items() if v != "not testable here"}
    untested = [k for k in words if k not in tested]
    note = f" ({', '.join(untested)}: not testable)" if untested else ""
    if not tested:
        return "not testable here", "no setting can test it: " + ", ".join(words)
    kinds = set(tested.values())
    if kinds == {"reproduced"}:
        return ("reproduced", "") if not untested else ("partly reproduced", "reproduced only where testable" + note)
    if len(kinds) == 1:
        v = kinds.pop()
        return v, f"{v} under every testable setting" + note
    yes = [k for k, v in tested.items() if v == "reproduced"]
    no = [k for k, v in tested.items() if v != "reproduced"]
    return "partly reproduced", (f"the setting decides: reproduced under {', '.join(yes) or 'none'}, not under "
                                 f"{', '.join(no)}" + note)


def _settings_of(st: dict, key: str) -> dict:
    return {k.split(" | ", 1)[1]: m for k, m in st.items() if k.startswith(key + " | ")}


def _numbers(by: dict, fmt=".2f") -> dict:
    out = {}
    for s, m in by.items():
        if m.testable:
            out[s] = f"{m.value:{fmt}} [{m.interval[0]:{fmt}}, {m.interval[1]:{fmt}}]"
            for name, qs in m.extra.get("null quantiles", {}).items():
                if isinstance(qs, list):
                    out[f"{s}, null {name}"] = (f"mean {np.mean([q['mean'] for q in qs]):{fmt}}, 5-95 % "
                                                f"{min(q['q05'] for q in qs):{fmt}}-{max(q['q95'] for q in qs):{fmt}}")
                else:
                    out[f"{s}, null {name}"] = f"median {qs['q50']:.0f}, 5-95 % {qs['q05']:.0f}-{qs['q95']:.0f}"
            if "p_per_seed" in m.extra:
                out[f"{s}, p per seed"] = ", ".join(f"{p:.2g}" for p in m.extra["p_per_seed"])
        else:
            out[s] = "not testable: " + m.not_testable
    return out


def _record_from_settings(st: dict, key: str, *, fmt=".2f", seeds="three photo-pack seeds") -> Record:
    by = _settings_of(st, key)
    words = {k: _word(m) for k, m in by.items()}
    verdict, why = settings_verdict(words)
    combined = st[key]
    first = next((m for m in by.values() if m.testable), None)
    if why:  # the numbers behind it, setting by setting
        why += ": " + "; ".join(f"{k} {m.value:{fmt}} [{m.interval[0]:{fmt}}, {m.interval[1]:{fmt}}]" if m.testable
                                else f"{k} not testable" for k, m in by.items())
    short = "; ".join(f"{k}: {words[k]}" for k in by)
    if first is not None:
        short = f"{first.value:{fmt}} [{first.interval[0]:{fmt}}, {first.interval[1]:{fmt}}] ({next(iter(by))}); " + short
    return Record(verdict=verdict, short=short, measured=combined.verdict, why=why,
                  value=None if first is None else float(first.value),
                  interval=None if first is None else tuple(map(float, first.interval)),
                  interval_kind="" if first is None else first.rule, seeds=seeds,
                  baselines={} if first is None else {k: float(v) for k, v in first.baselines.items()},
                  numbers=_numbers(by, fmt))


def existence_by_settings(by: dict, *, n_units: int, alpha: float = 0.05) -> tuple[str, str, dict]:
    """Existence per setting (``by``: setting -> :class:`cnce.images.verdicts.Measured` of a
    share of units with per-seed values, null quantiles and permutation p-values): per seed,
    :func:`companion.claims.shapes.existence_verdict` of the count of such units against the
    null's 95 % quantile count (``n_units`` per seed) with the seed's p-value; a setting is
    reproduced when every seed is, not reproduced when no seed has a unit, partly otherwise.
    The settings are combined by :func:`settings_verdict`. Returns ``(verdict, why, numbers)``
    (numbers: the share and count per seed, and the null's 95 % quantile count)."""
    words, numbers = {}, {}
    for s, m in by.items():
        if not m.testable:
            words[s] = "not testable here"
            numbers[s] = "not testable: " + m.not_testable
            continue
        seed_words = []
        for k, share in enumerate(m.extra["per_seed"]):
            null_q95 = max(qs[k]["q95"] for qs in m.extra["null quantiles"].values()) * n_units
            count = int(round(share * n_units))
            seed_words.append(existence_verdict(count, null_q95, p_value=m.extra["p_per_seed"][k],
                                                alpha=alpha / m.extra.get("n_tests", 1))[0])
            numbers[f"{s}, seed {k}"] = f"{count} of {n_units} units (share {share:.2f}); null 95 % quantile {null_q95:.1f}"
        words[s] = ("reproduced" if all(w == "reproduced" for w in seed_words) else
                    "not reproduced" if all(w == "not reproduced" for w in seed_words) else "partly reproduced")
        numbers[f"{s}, share"] = f"{m.value:.2f} [{m.interval[0]:.2f}, {m.interval[1]:.2f}]"
    verdict, why = settings_verdict(words)
    counts = [f"{k.rsplit(', ', 1)[1]}: {v}" for k, v in numbers.items() if ", seed " in k]
    if why and counts:  # the counts behind it, seed by seed
        why += "; " + "; ".join(counts)
    return verdict, why, numbers


def existence_measured(by: dict, n_units: int) -> str:
    """What an existence row measured, setting by setting, in the words of its own rule: the
    count of such units per seed against the null's 95 % quantile count, with the permutation
    p-values. The share test of the settings table (the interval against the nulls' means,
    :mod:`cnce.images.layer_claims`) is named beside it, since the page shows that test too
    and the two can read differently."""
    parts = []
    for s, m in by.items():
        if not m.testable:
            parts.append(f"{s}: not testable here, {m.not_testable}")
            continue
        counts = ", ".join(str(int(round(x * n_units))) for x in m.extra["per_seed"])
        q95 = ", ".join(f"{max(qs[k]['q95'] for qs in m.extra['null quantiles'].values()) * n_units:.1f}"
                        for k in range(len(m.extra["per_seed"])))
        ps = ", ".join(f"{p:.2g}" for p in m.extra["p_per_seed"])
        parts.append(f"{s}: {counts} of {n_units} units per seed (share {m.value:.2f} [{m.interval[0]:.2f}, "
                     f"{m.interval[1]:.2f}]) against null 95 % quantiles of {q95} units, permutation p {ps}; the "
                     f"settings table's share test (interval against the nulls' means): {m.verdict.split(':')[0]}")
    return "; ".join(parts)


def _existence(key: str, n_units: int):
    def compute(ctx):
        st = _settings(ctx)
        by = _settings_of(st, key)
        verdict, why, numbers = existence_by_settings(by, n_units=n_units)
        first = next((m for m in by.values() if m.testable), None)
        short = "; ".join(f"{k}: {'not testable' if not m.testable else f'share {m.value:.2f}'}" for k, m in by.items())
        return Record(verdict=verdict, short=short, measured=existence_measured(by, n_units), why=why, numbers=numbers,
                      value=None if first is None else float(first.value),
                      interval=None if first is None else tuple(map(float, first.interval)),
                      interval_kind="" if first is None else first.rule, seeds="three photo-pack seeds")
    return compute


def _layer2(ctx) -> Record:
    st = _settings(ctx)
    parts = {p: settings_verdict({k: _word(m) for k, m in _settings_of(st, f"layer2_{p}").items()})[0]
             for p in ("position", "orientation", "frequency")}
    verdict, why = parts_verdict(parts)
    numbers = {}
    for p in parts:
        numbers.update({f"{p}, {k}": v for k, v in _numbers(_settings_of(st, f"layer2_{p}")).items()})
    measured = "; ".join(f"{p}: {st[f'layer2_{p}'].verdict}" for p in parts)
    short = ", ".join(f"{p} {parts[p]} ({st[f'layer2_{p}'].value:.2f})" for p in parts)
    return Record(verdict=verdict, short=short, measured=measured, why=why, numbers=numbers,
                  seeds="three photo-pack seeds")


def _from_settings(key: str, fmt=".2f"):
    return lambda ctx: _record_from_settings(_settings(ctx), key, fmt=fmt)


def _pca_variance(ctx) -> Record:
    from cnce.images.claims import badge

    m = _settings(ctx)["pca_variance"]
    verdict = badge(m)
    why = "" if verdict == "reproduced" else ("our photographs are not the van Hateren images: " + m.verdict.split(": ", 1)[1])
    return Record(verdict=verdict, short=f"{100 * m.value:.1f} % on the photo pack against the paper's 98 %",
                  measured=m.verdict, why=why, value=float(m.value), interval=tuple(map(float, m.interval)),
                  interval_kind=m.rule, seeds="three photo-pack runs",
                  baselines={"paper": 0.98},
                  numbers={k: ", ".join(f"{100 * x:.1f} %" for x in v) for k, v in m.extra["per_run"].items()})


_LAYER1 = "data/checks/image-layer1.json"
#: the data groups of the layer-1 test (``scripts/image_layer1.py``), the first the runs the page shows
_L1_GROUPS = ("bundled photographs", "photo pack")


def _layer1(ctx) -> Record:
    """Gabor-like = localised AND oriented AND band-pass (``data/checks/image-layer1.json``): per
    data group and measure setting a verdict (:func:`cnce.images.layer_claims.gabor_claim`), all
    four combined by :func:`settings_verdict`; the share of each part beside the controls."""
    from cnce.images import claims as ic, runs

    st = ctx.cached("images:layer1", lambda: ic.load_measured(runs.weights_dir().parent / ic.LAYER1_FILE)[0])
    by = {f"{g}, {k.split(' | ')[2]}": m for g in _L1_GROUPS for k, m in st.items()
          if k.startswith(f"layer1_gabor | {g} | ")}
    if len(by) != 4:
        raise ValueError(f"{_LAYER1} must hold two settings for each of {_L1_GROUPS}; got {sorted(by)}")
    words = {k: _word(m) for k, m in by.items()}
    verdict, why = settings_verdict(words)
    numbers = {}
    for k, m in by.items():
        if not m.testable:
            numbers[k] = "not testable: " + m.not_testable
            continue
        numbers[f"{k}, Gabor-like"] = f"{m.value:.2f} [{m.interval[0]:.2f}, {m.interval[1]:.2f}]; per seed " + ", ".join(
            f"{v:.2f}" for v in m.extra["per_seed"])
        for part, v in m.extra["parts per seed"].items():
            if part != "Gabor-like":
                numbers[f"{k}, {part}"] = ", ".join(f"{x:.2f}" for x in v)
        init = m.extra["references per seed"].get("initialisation")
        if init:  # whitening alone makes random weights band-pass near the PCA cut-off; the other parts fail
            numbers[f"{k}, initialisation's parts"] = ", ".join(f"{p} {np.mean(v):.2f}" for p, v in init.items())
        numbers[f"{k}, controls (Gabor-like share)"] = ", ".join(f"{c} {v:.2f}" for c, v in m.baselines.items())
        thr = m.extra["thresholds per seed"]
        numbers[f"{k}, thresholds (95 % of the nulls)"] = "; ".join(
            f"{t}: {min(x[t] for x in thr):.2f}-{max(x[t] for x in thr):.2f}" for t in thr[0])
    first_key = next(iter(by))
    first = by[first_key]
    if why:
        why += ": " + "; ".join(f"{k} {m.value:.2f}" if m.testable else f"{k} not testable" for k, m in by.items())
    tested = [m for m in by.values() if m.testable]
    rng = {p: [x for m in tested for x in m.extra["parts per seed"][p]] for p in ("localised", "oriented", "band-pass")}
    others = [m.value for m in list(by.values())[1:] if m.testable]
    short = (f"{100 * first.value:.0f} % [{100 * first.interval[0]:.0f}, {100 * first.interval[1]:.0f}] of the units "
             f"Gabor-like ({first_key})" + (f"; {100 * min(others):.0f}-{100 * max(others):.0f} % under the other "
                                             f"{len(others)}" if others else "")
             + "; each part over seeds and settings: " + ", ".join(f"{p} {100 * min(v):.0f}-{100 * max(v):.0f} %"
                                                                  for p, v in rng.items()))
    return Record(verdict=verdict, short=short, measured="; ".join(f"{k}: {m.verdict}" for k, m in by.items()),
                  why=why, value=float(first.value), interval=tuple(map(float, first.interval)),
                  interval_kind=first.rule, seeds="three seeds per data group", numbers=numbers,
                  baselines={c: float(v) for c, v in first.baselines.items()})


def _from_row(title: str, kind: str):
    def compute(ctx):
        rows = _rows(ctx)
        if title not in rows:
            raise ValueError(f"cnce.images.claims.chapter_rows gives no row {title!r}; it gives {sorted(rows)}")
        r = rows[title]
        verdict = QUESTION if kind == OURS else r.verdict
        why = "" if verdict in ("reproduced", QUESTION) else f"by the measure's own rule: {r.short}"
        short, measured = r.short, r.measured
        if kind == OURS and short.startswith("reproduced"):  # our question's answer, not a verdict on the paper
            short = "yes, the earlier failure recurs" + short[len("reproduced"):]
            measured = "yes, the earlier failure recurs" + measured[len("reproduced"):]
        return Record(verdict=verdict, short=short, measured=measured, why=why, seeds="three seeds (see the row)")
    return compute


_S2 = "the picture of a first-layer unit (receptive field or feature)"
_SP = "the probe's range (the authors' 0.10-0.25 or 0.05-0.45 cycles/pixel)"
_SL1 = "the disc's radius n/8 or 3n/16 and the band's width 1 or 1.5 octaves"
_SETTINGS_RULE = ("reproduced or not reproduced only when every testable setting agrees, partly reproduced when "
                  "they disagree (the why names the setting that decides); settings: ")
_EXIST_RULE = ("existence: in every seed more such units than the null distribution's 95 % quantile, with a "
               "permutation p-value below 0.05 (at least 200 draws per seed): reproduced; some units but not beyond "
               "the null: partly; none: not reproduced; positive control failing: not testable; settings combined "
               "as for the other image claims (")

declare(id="image-layer-1", title="Image model, layer 1", section="Section 4, Fig. 5 (left)", kind=PAPER,
        paper="greedy CNCE on natural image patches learns Gabor-like first-layer features",
        rule="Gabor-like = localised AND oriented AND band-pass, each part above the 95 % quantile of a noise null "
             "(localised: white noise; oriented and band-pass: localised noise; band-pass also needs the power to peak "
             "between one cycle per patch and 0.45 cycles/pixel); per data group (bundled photographs, photo pack) "
             "and measure setting (" + _SL1 + "): not testable here unless the positive controls (Gabor functions, "
             "FastICA) are at least half Gabor-like and the negative controls (noise, blobs, isotropic DoG, the "
             "initialisation) at most 10 %; supported when every seed has at least half its units Gabor-like; the "
             "four combined by the settings rule (" + _SETTINGS_RULE.split("; settings")[0] + ")",
        measure="share of first-layer receptive fields that are localised, oriented and band-pass, per seed, with "
                "the share of each part",
        data=f"{_LAYER1} (scripts/image_layer1.py) from data/weights/paper, paper-seed1, paper-seed2 (bundled "
             "photographs) and photos/paper-seed0..2 (photo pack), three seeds each",
        baselines="nulls: white noise, localised noise; positive controls: Gabor functions, FastICA (bundled "
                  "whitening); negative controls: isotropic DoG, Gaussian blobs, the initialisation",
        page=_PAGE, anchor="Figure 5 (left): first-layer features", code="cnce.images.layer_claims.gabor_claim",
        compute=_layer1)
declare(id="image-layer-2", title="Image model, layer 2", section="Section 4, Fig. 5 (right)", kind=PAPER,
        paper="second-layer units pool first-layer units by position, orientation and frequency",
        rule="three parts (position, orientation, frequency), each by the settings rule (" + _SETTINGS_RULE + _S2
             + "); reproduced when every part is, partly when some is, not testable when none is, else not reproduced",
        measure="share of second-layer units whose pooled units are more alike in the property than 95 % of random "
                "sets of their size, interval over three seeds; per seed a permutation p-value against each null",
        data=_DATA_SETTINGS, baselines="null distributions: random pooling and shuffled properties, 200 draws per seed",
        page=_PAGE, anchor=_SETTINGS_ANCHOR, code="cnce.images.layer_claims.pooling_claims", compute=_layer2)
declare(id="image-layer-2-sparse", title="Image model, layer 2 sparse", section="Section 4.2", kind=PAPER,
        paper="the learned second-layer weight vectors are sparse",
        rule="the settings rule (" + _SETTINGS_RULE + "the share of a unit's weight that counts, 90 % or 50 %); a "
             "setting supports it when the interval of the median count lies below the 5 % quantile of every "
             "baseline's per-unit counts",
        measure="median over units of how many first-layer units hold 90 % (or 50 %) of a second-layer unit's "
                "pooling weight, interval over three seeds",
        data=_DATA_SETTINGS, baselines="the runs' initialisation and random Gaussian weights (per-unit counts)",
        page=_PAGE, anchor=_SETTINGS_ANCHOR, code="cnce.images.layer_claims.sparsity_claim",
        compute=_from_settings("layer2_sparsity", ".0f"))
declare(id="image-layer-3", title="Image model, layer 3", section="Section 4, Fig. 6, Supp. D.3", kind=PAPER,
        paper="third-layer units detect longer straight or bent contours",
        rule=_EXIST_RULE + _SP + ")",
        measure="units with a contour-like space-orientation field (cnce.images.contours), count and share per seed",
        data=_DATA_SETTINGS, baselines="null distributions: random layer-3 weights and shuffled locations, 200 draws "
                                       "per seed; positive control: layer-3 units fitted to ideal contours",
        page=_PAGE, anchor=_SETTINGS_ANCHOR, code="cnce.images.layer_claims.contour_claim",
        compute=_existence("layer3_contours", 60))
declare(id="image-layer-4-orientation", title="Image model, layer 4: one orientation across frequencies",
        section="Section 4, Fig. 6, Supp. D.4", kind=PAPER,
        paper="fourth-layer units pool third-layer units of one orientation across frequencies",
        rule="the settings rule (" + _SETTINGS_RULE + _SP + "); a setting supports it when the interval's lower end "
             "lies above every null's mean and every seed's permutation p-value is below 0.025",
        measure="share of fourth-layer units whose pooled layer-3 units are coherent in orientation and span at "
                "least half an octave in best frequency, interval over three seeds",
        data=_DATA_SETTINGS, baselines="null distributions: random pooling and shuffled properties, 200 draws per seed",
        page=_PAGE, anchor=_SETTINGS_ANCHOR, code="cnce.images.layer_claims.orientation_across_frequency_claim",
        compute=_from_settings("layer4_orientation_across_frequency"))
declare(id="image-layer-4-corners", title="Image model, layer 4: corners", section="Section 4, Fig. 6, Supp. D.4",
        kind=PAPER, paper="a fourth-layer unit is a low-frequency corner detector",
        rule=_EXIST_RULE + _SP + ")",
        measure="units with a corner-like space-orientation field, count and share per seed",
        data=_DATA_SETTINGS, baselines="null distributions: permuted layer-4 weights and shuffled locations; positive "
                                       "control: layer-4 pooling fitted to ideal corners",
        page=_PAGE, anchor=_SETTINGS_ANCHOR, code="cnce.images.layer_claims.contour_claim",
        compute=_existence("layer4_corners", 30))
declare(id="image-pca-variance", title="Image model, PCA to D = 600", section="Section 4.1", kind=PAPER,
        paper="whitening to 600 dimensions retains 98 % of the variance",
        rule="reproduced when the interval over runs of the variance kept reaches 97.5 %, else not reproduced",
        measure="variance kept by the first 600 principal components of the patches, over the three photo-pack runs",
        data=_DATA_SETTINGS + "; the bundled-photograph runs beside them", baselines="the paper's 98 %",
        page=_PAGE, anchor=_SETTINGS_ANCHOR, code="cnce.images.claims.pca_variance_claim", compute=_pca_variance)
declare(id="image-d2-faster", title="Image model, Supp. D.2 (faster)", section="Supp. D.2", kind=PAPER,
        paper="CNCE appears to learn first-layer features slightly faster than NCE (the supplement itself declines "
              "to claim better performance, the comparison being qualitative)",
        rule="the settings rule (" + _SETTINGS_RULE + "the orientation index: Fourier over all frequencies, or the "
             "grating index at each unit's best frequency); a setting supports it when the interval of CNCE minus "
             "NCE lies above 0",
        measure="oriented share after 11 meta-iterations, CNCE minus NCE as the authors run it, paired by seed, "
                "t-interval over three seeds",
        data=_DATA_SETTINGS.split(" from ")[0] + " from data/weights/d2/paper.pt (three seeds)",
        baselines="no difference", page=_PAGE, anchor="Supp. D.2: CNCE against NCE on the first layer",
        code="cnce.images.d2.faster_claim", compute=_from_settings("d2_faster"))
declare(id="image-d2-similar", title="Image model, Supp. D.2 (similar features)", section="Supp. D.2", kind=PAPER,
        paper="CNCE and NCE seem to learn similar first-layer features",
        rule="the measure's own rule (cnce.images.d2.similar_over_seeds): matching above random sets and the common "
             "start, and features of the same kind (oriented share and size)",
        measure="matched |cosine| of CNCE's and NCE's first-layer features after 11 meta-iterations",
        data=_DATA_ROWS, baselines="random sets, each method against the common start", page=_PAGE,
        anchor="Supp. D.2: CNCE against NCE on the first layer", code="cnce.images.d2.similar_over_seeds",
        compute=_from_row("Image model, Supp. D.2 (similar features)", PAPER))
declare(id="image-authors-recipe", title="Image model, the authors' recipe", section="Section 4 (the authors' code)",
        kind=OURS, paper="does the recipe of the authors' code (their minimiser, main sets and eps rule) learn the first "
                         "layer at the paper's sizes?",
        rule="a question of ours: no verdict; the row reports the share of layer 1 oriented at the paper's sizes",
        measure="share of oriented first-layer units under the authors' minimiser and main sets, per seed",
        data=_DATA_ROWS, baselines="see the measure", page=_PAGE,
        anchor="Why the authors' recipe failed here before, and what decides", code="cnce.images.claims.recipe_row",
        compute=_from_row("Image model, the authors' recipe", OURS))
declare(id="image-what-failed-before", title="Image model, what failed before", section="Section 4 (the authors' code)",
        kind=OURS, paper="did fitting PCA on 50,000 patches alone keep the authors' recipe from learning layer 1 in the "
                         "20 meta-iterations of an earlier run?",
        rule="a question of ours: no verdict; the row reports the PCA-sample test (20 meta-iterations, two seeds per arm)",
        measure="oriented share with PCA fitted on 50,000 patches against the full sample, per seed",
        data="data/weights/pca (20 meta-iterations, two seeds per arm)", baselines="PCA on 400,000 patches, chance",
        page=_PAGE, anchor="Why the authors' recipe failed here before, and what decides",
        code="cnce.images.attribution.pca_test", compute=_from_row("Image model, what failed before", OURS))
