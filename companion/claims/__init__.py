"""The claims ledger: every claim the book checks, declared once, computed once, rendered everywhere.

The format
----------
A claim is a :class:`Claim`, declared once with :func:`declare` in a module of this package
(``companion/claims/synthetic.py`` for Sections 2-3 and the supplement's synthetic models,
``companion/claims/images.py`` for Section 4 and Supp. D.2). Its fields:

``id``
    a short slug, unique and stable (``"consistency-gaussian"``); pages and the claims table
    link to ``claims.html#claim-<id>``.
``title``
    the row's name in a few words ("Consistency (gaussian)").
``section``
    where the paper says it ("Section 3.2, Fig. 2a").
``paper``
    the paper's statement in our words (never pasted), no final full stop. For a question of
    ours: the question.
``kind``
    :data:`PAPER` (a claim of the paper) or :data:`OURS` (a question of ours that the paper does
    not ask); the two are counted apart (:func:`tally`).
``rule``
    the verdict rule in words: what each verdict of :data:`VERDICTS` requires. A rule must be
    able to give each verdict it names; its known-answer tests (``tests/test_ledger.py``) build
    inputs that give each one.
``measure``
    the statistic, in words, with its uncertainty (e.g. "slope of log10 median error against
    log10 N, 95 % bootstrap interval over simulations").
``data``
    the runs/results and seeds it reads ("data/results/paper/gaussian.csv, 100 simulations").
``baselines``
    what the measure stands beside (chance, noise, the paper's number, MLE); "" when none.
``page``, ``anchor``
    the notebook or book page (a key of :data:`PAGES`) and the section label on it where the
    evidence is shown (``"02_consistency"``, ``"consistency-verdict"``; ``""`` for the top).
``code``
    the dotted name of the function that computes the measure (the claims table links it).
``compute``
    a function ``compute(ctx) -> Record`` (``ctx`` a :class:`companion.claims.ledger.Context`,
    which loads the committed results once and caches shared computations).

A :class:`Record` is what ``compute`` returns and what the ledger stores: ``verdict`` (a word
of :data:`VERDICTS` for a paper claim, :data:`QUESTION` for a question of ours), ``value`` and
``interval`` (``(lo, hi)`` or ``None``) of the deciding statistic with ``interval_kind``
("95 % bootstrap over simulations", "t-interval over 3 seeds", "range of 2 seeds"),
``seeds`` (the simulations or seeds it pools, in words), ``baselines`` (``{name: value}``),
``short`` (the deciding number in a few words: verdict blocks quote it), ``measured`` (every
number, in full), ``why`` (one line where a paper claim is not "reproduced": why we differ,
or why it cannot be tested; required then) and ``numbers`` (``{name: text}``: numbers a page
may quote by name, formatted as printed).

Rule shapes. Besides the interval rules of the synthetic claims, two shapes recur (their
rules: :mod:`companion.claims.shapes`):

* a statement about **one shown unit** ("a fourth-layer unit is a corner detector") is an
  existence claim: ``value`` is the number of units like it, ``baselines`` holds the count
  the null gives (shuffled or random network), the verdict asks for at least one unit beyond
  the null, and the share of such units goes in ``numbers["share"]`` beside it;
* a claim with **several parts** (Gabor-like = localised AND oriented AND band-pass; layer 2
  pools by position, orientation AND frequency) is "reproduced" when every part is,
  "partly reproduced" when some is, "not reproduced" when none is, each part's value in
  ``numbers``.

Writing the ledger: ``python -m companion claims`` (:func:`companion.claims.ledger.write`)
computes every record and writes ``data/claims/ledger.json`` atomically, with provenance
(commit, clean or dirty, a hash of the claims code and one of the inputs). Pages read it
(:func:`companion.claims.render.glue_verdict_block`); nothing else defines or recomputes a
claim.

Declaring the image claims (Section 4): write ``companion/claims/images.py`` with one
:func:`declare` per claim (kind, rule, measure, data, baselines, page ``"06_image_model"`` and
its section anchor, code), each ``compute`` reading the committed measures
(``data/checks/image-claims.json``) and weights through ``ctx.cached``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

__all__ = ["PAPER", "OURS", "KINDS", "VERDICTS", "QUESTION", "ALL_VERDICTS", "PAGES", "Claim", "Record", "declare",
           "claims", "claim", "tally"]

#: A claim of the paper / a question of ours (the paper does not ask it).
PAPER, OURS = "paper", "ours"
KINDS = (PAPER, OURS)

#: The verdicts of a paper claim, each used only as defined here (the claims page prints these
#: definitions):
VERDICTS = {
    "reproduced": "our measurement supports the whole statement, with its interval on the claim's side",
    "partly reproduced": "part of the statement holds: the direction agrees but the size does not, or it holds "
                         "under one of two data generators, or some of its parts hold and others do not",
    "not reproduced": "our measurement contradicts the statement or does not show the effect",
    "not testable here": "our runs cannot show it (the row says why)",
}
#: The one word of a question of ours: the row reports what we measure, its answer; no verdict
#: (a claim the paper does not make cannot be reproduced or not).
QUESTION = "beyond the paper"
ALL_VERDICTS = (*VERDICTS, QUESTION)

#: The pages a claim can be shown on: name -> short title (book pages by their path).
PAGES = {"01_theory": "Theory", "02_consistency": "Consistency", "03_cnce_vs_nce": "NCE", "04_ring": "Ring",
         "05_supplementary": "Supp. models", "06_image_model": "Image model", "07_choosing_eps": "Choosing eps",
         "08_energy_networks": "Energy networks", "09_standard_errors": "Standard errors"}


def _text(name, v, empty=False):
    if not isinstance(v, str) or (not v and not empty):
        raise ValueError(f"{name} must be a {'' if empty else 'non-empty '}string; got {v!r}")


@dataclass(frozen=True)
class Record:
    """One claim's computed result (see the module's docstring for the fields)."""

    verdict: str
    short: str
    measured: str
    value: float | None = None
    interval: tuple[float, float] | None = None
    interval_kind: str = ""
    seeds: str = ""
    baselines: dict = field(default_factory=dict)
    why: str = ""
    numbers: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in ALL_VERDICTS:
            raise ValueError(f"verdict must be one of {list(ALL_VERDICTS)}; got {self.verdict!r}")
        for name in ("short", "measured"):
            _text(name, getattr(self, name))
        if self.interval is not None and len(self.interval) != 2:
            raise ValueError(f"interval must be (lo, hi) or None; got {self.interval!r}")

    def as_dict(self) -> dict:
        f = lambda x: None if x is None else float(x)  # noqa: E731
        return {"verdict": self.verdict, "value": f(self.value),
                "interval": None if self.interval is None else [f(self.interval[0]), f(self.interval[1])],
                "interval_kind": self.interval_kind, "seeds": self.seeds,
                "baselines": {str(k): f(v) for k, v in self.baselines.items()}, "short": self.short,
                "measured": self.measured, "why": self.why, "numbers": {str(k): str(v) for k, v in self.numbers.items()}}


@dataclass(frozen=True)
class Claim:
    """One claim's declaration (see the module's docstring for the fields)."""

    id: str
    title: str
    section: str
    paper: str
    kind: str
    rule: str
    measure: str
    data: str
    baselines: str
    page: str
    anchor: str
    code: str
    compute: Callable = field(repr=False, compare=False)

    def __post_init__(self):
        import re

        if not (isinstance(self.id, str) and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", self.id)):
            raise ValueError(f"id must be a lower-case slug (letters, digits, single hyphens); got {self.id!r}")
        for name in ("title", "section", "paper", "rule", "measure", "data", "code"):
            _text(name, getattr(self, name))
        _text("baselines", self.baselines, empty=True)
        _text("anchor", self.anchor, empty=True)
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        if self.page not in PAGES:
            raise ValueError(f"page must be one of {sorted(PAGES)}; got {self.page!r}")
        if not callable(self.compute):
            raise ValueError(f"compute must be callable; got {self.compute!r}")

    def check(self, record: Record) -> Record:
        """``record`` if it fits this claim's kind, else ``ValueError`` naming the claim."""
        if not isinstance(record, Record):
            raise TypeError(f"claim {self.id!r}: compute must return a Record; got {type(record).__name__}")
        if self.kind == OURS and record.verdict != QUESTION:
            raise ValueError(f"claim {self.id!r} is a question of ours: its verdict must be {QUESTION!r}; "
                             f"got {record.verdict!r}")
        if self.kind == PAPER and record.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id!r} is a claim of the paper: its verdict must be one of "
                             f"{list(VERDICTS)}; got {record.verdict!r}")
        if self.kind == PAPER and record.verdict != "reproduced" and not record.why:
            raise ValueError(f"claim {self.id!r}: a verdict other than 'reproduced' needs a one-line why")
        return record

    @property
    def declared_in(self) -> str:
        """The module that declares the claim and holds its rule (``companion.claims.synthetic``)."""
        return self.compute.__module__

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "title", "section", "paper", "kind", "rule", "measure", "data",
                                              "baselines", "page", "anchor", "code", "declared_in")}


_REGISTRY: dict[str, Claim] = {}
#: the modules that declare claims, in the book's order
MODULES = ("synthetic", "images", "nn", "theory")


def declare(**fields) -> Claim:
    """Declare a claim (the fields of :class:`Claim`); its id must be new. Returns it."""
    c = Claim(**fields)
    if c.id in _REGISTRY:
        raise ValueError(f"claim id {c.id!r} is declared twice")
    _REGISTRY[c.id] = c
    return c


def claims() -> list[Claim]:
    """Every declared claim, in the book's order: the declaring modules' order (:data:`MODULES`,
    whichever was imported first), then each module's order of declarations."""
    from . import images, nn, synthetic, theory  # noqa: F401  (importing declares)

    rank = {f"{__name__}.{m}": i for i, m in enumerate(MODULES)}
    return sorted(_REGISTRY.values(), key=lambda c: rank.get(c.declared_in, len(rank)))  # stable: declaration order


def claim(id: str) -> Claim:
    """The declared claim ``id``; ``ValueError`` naming the known ids otherwise."""
    cs = {c.id: c for c in claims()}
    if id not in cs:
        raise ValueError(f"claim id must be one of {sorted(cs)}; got {id!r}")
    return cs[id]


def tally(rows) -> dict:
    """``{"paper": {verdict: [ids]}, "ours": [ids]}`` over ``rows`` (dicts with ``id``, ``kind``
    and ``verdict``, as in the ledger): the paper's claims by verdict (every verdict of
    :data:`VERDICTS`, in order, ``[]`` when none) and our questions apart."""
    out = {PAPER: {v: [] for v in VERDICTS}, OURS: []}
    for r in rows:
        if r["kind"] == OURS:
            out[OURS].append(r["id"])
        elif r["verdict"] in VERDICTS:
            out[PAPER][r["verdict"]].append(r["id"])
        else:
            raise ValueError(f"claim {r['id']!r}: verdict {r['verdict']!r} is not one of {list(VERDICTS)}")
    return out
