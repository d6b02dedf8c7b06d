"""The image model's claims (Section 4, Supp. D.2) in the ledger: an ADAPTER, for now.

Each claim below is declared in the ledger's form (:func:`companion.claims.declare`), but its
record is taken from the row that :func:`cnce.images.claims.chapter_rows` builds from the
committed runs and claim measures (``data/checks/image-claims.json``), so that the ledger is
complete today. The Section 4 issue replaces this file with proper declarations here (its own
``compute`` functions and rules: Gabor-like = localised AND oriented AND band-pass, a statement
about one shown unit as existence beside a null with the share reported beside it; see the
rule shapes in :mod:`companion.claims` and their functions in :mod:`companion.claims.shapes`), and then ``chapter_rows``' rows stop being a source.
"""
from __future__ import annotations

from . import OURS, PAPER, QUESTION, Record, declare

_DATA = "data/checks/image-claims.json and data/weights (committed GPU runs, three seeds)"
_CODE = "cnce.images.claims.chapter_rows"


def _rows(ctx):
    def build():
        from cnce.images import claims as ic

        return {r.claim: r for r in ic.chapter_rows(seed=ctx.seed)}
    return ctx.cached("images:rows", build)


def _from_row(title: str, kind: str):
    def compute(ctx):
        rows = _rows(ctx)
        if title not in rows:
            raise ValueError(f"cnce.images.claims.chapter_rows gives no row {title!r}; it gives {sorted(rows)}")
        r = rows[title]
        verdict = QUESTION if kind == OURS else r.verdict
        why = "" if verdict in ("reproduced", QUESTION) else r.short
        short, measured = r.short, r.measured
        if kind == OURS and short.startswith("reproduced"):  # our question's answer, not a verdict on the paper
            short = "yes, the earlier failure recurs" + short[len("reproduced"):]
            measured = "yes, the earlier failure recurs" + measured[len("reproduced"):]
        return Record(verdict=verdict, short=short, measured=measured, why=why, seeds="three seeds (see the row)")
    return compute


#: the paper's statement in our words (for a question of ours: the question), by id
PAPER_STATEMENTS = {
    'image-layer-1': 'greedy CNCE on natural image patches learns Gabor-like first-layer features',
    'image-layer-2': 'second-layer units pool first-layer units by position, orientation and frequency',
    'image-layer-3': 'third-layer units detect longer straight or bent contours',
    'image-layer-4-orientation': 'fourth-layer units pool third-layer units of one orientation across frequencies',
    'image-layer-4-corners': 'a fourth-layer unit is a low-frequency corner detector',
    'image-d2-faster': 'CNCE appears to learn first-layer features slightly faster than NCE (the supplement itself declines to claim better performance, the comparison being qualitative)',
    'image-d2-similar': 'CNCE and NCE seem to learn similar first-layer features',
    'image-authors-recipe': "does the recipe of the authors' code (their minimiser, main sets and eps rule) learn the first layer at the paper's sizes?", 'image-what-failed-before': "did fitting PCA on 50,000 patches alone keep the authors' recipe from learning layer 1 in an earlier run?"}

#: (id, title of chapter_rows' row, section, kind, the page's section, rule in words, measure)
_IMAGE = (
    ("image-layer-1", "Image model, layer 1", "Section 4, Fig. 5 (left)", PAPER, "Figure 5 (left): first-layer features",
     "not testable here unless the positive control (FastICA) is at least half oriented and the negative controls at "
     "most 10 %; then reproduced when every seed has at least half its units oriented, else not reproduced",
     "share of oriented first-layer receptive fields per seed, beside localised noise, FastICA and random/DoG controls"),
    ("image-layer-2", "Image model, layer 2 (photo pack)", "Section 4, Fig. 5 (right)", PAPER,
     "Figure 5 (right): second-layer pooling",
     "three parts (position, orientation, frequency): reproduced when every part is, partly when some is, not "
     "testable when none is testable, else not reproduced",
     "share of second-layer units whose strongest inputs are coherent in each property, beside shuffled baselines"),
    ("image-layer-3", "Image model, layer 3 (photo pack)", "Section 4, Fig. 6, Supp. D.3", PAPER,
     "Figure 6 and Supp. D.3: third layer",
     "the measure's own rule (cnce.images.layer_claims.contour_claim)",
     "share of third-layer units preferring contours, beside random networks"),
    ("image-layer-4-orientation", "Image model, layer 4: one orientation across frequencies (photo pack)",
     "Section 4, Fig. 6, Supp. D.4", PAPER, "Figure 6 and Supp. D.4: fourth layer",
     "two probes (the authors' and an extended one): reproduced when both are, partly when one is ",
     "share of fourth-layer units pooling one orientation across frequencies, beside shuffled baselines"),
    ("image-layer-4-corners", "Image model, layer 4: corners (photo pack)", "Section 4, Fig. 6, Supp. D.4", PAPER,
     "Figure 6 and Supp. D.4: fourth layer",
     "the measure's own rule (cnce.images.layer_claims.contour_claim, corners)",
     "share of fourth-layer units preferring corners, beside random networks"),
    ("image-d2-faster", "Image model, Supp. D.2 (faster)", "Supp. D.2", PAPER, "Supp. D.2: CNCE against NCE on the first layer",
     "the measure's own rule (cnce.images.d2)", "difference of oriented shares early in training, CNCE minus NCE"),
    ("image-d2-similar", "Image model, Supp. D.2 (similar features)", "Supp. D.2", PAPER,
     "Supp. D.2: CNCE against NCE on the first layer",
     "the measure's own rule (cnce.images.d2.similar_over_seeds)", "similarity of CNCE's and NCE's first-layer features"),
    ("image-authors-recipe", "Image model, the authors' recipe", "Section 4 (the authors' code)", OURS,
     "Why the authors' recipe failed here before, and what decides",
     "a question of ours: no verdict; the row reports the share of layer 1 oriented at the paper's sizes",
     "share of oriented first-layer units under the authors' minimiser and main sets, per seed"),
    ("image-what-failed-before", "Image model, what failed before", "Section 4 (the authors' code)", OURS,
     "Why the authors' recipe failed here before, and what decides",
     "a question of ours: no verdict; the row reports the PCA-sample test",
     "oriented share with PCA fitted on 50,000 patches against the full sample, per seed"),
)

for _id, _title, _sec, _kind, _anchor, _rule, _measure in _IMAGE:
    declare(id=_id, title=_title.replace(" (photo pack)", ""), section=_sec, kind=_kind,
            paper=PAPER_STATEMENTS[_id], rule=_rule, measure=_measure, data=_DATA, baselines="see the measure",
            page="06_image_model", anchor=_anchor, code=_CODE, compute=_from_row(_title, _kind))
