"""Names that files, tables and pages share, each a small frozen type defined once.

* :class:`JobName`: a run of a driver's job list and its key in a results file, written
  ``<group>/s<seed>`` or ``<group>/<cell>/s<seed>`` (``paper/cg-main/s0``, ``d2/s1``,
  ``d2/nce-reset/s0``, ``photos/paper/s0``);
* :class:`AblationCell`: a cell of the image model's layer-1 ablation, ``<optimiser>-<schedule>``
  (``cg-main``);
* :class:`Page` and :data:`PAGES`: the notebook registry, each results page with the experiment
  it runs (``python -m cnce run <experiment>``). (What a page's claims are, and the page titles
  the claims table shows, is the claims ledger's: ``companion.claims``.)

``parse`` reads a name's text (``ValueError`` naming it when malformed) and ``str`` writes it, so
a name is built in one place and split in one place.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["JobName", "AblationCell", "Page", "PAGES", "page", "page_of_experiment"]

_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_SEED = re.compile(r"s(\d+)")


@dataclass(frozen=True, order=True)
class JobName:
    """``<group>[/<cell>]/s<seed>``: ``group`` and ``cell`` are words (letters, digits, ``_.-``),
    ``cell`` is ``None`` for a group without cells, ``seed`` an integer >= 0."""

    group: str
    cell: str | None
    seed: int

    def __post_init__(self):
        for name in ("group", "cell"):
            v = getattr(self, name)
            if (v is not None or name == "group") and not (isinstance(v, str) and _PART.fullmatch(v)):
                raise ValueError(f"{name} must be a word of letters, digits, '_', '.', '-'; got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0; got {self.seed!r}")

    @classmethod
    def parse(cls, text: str) -> "JobName":
        parts = text.split("/") if isinstance(text, str) else []
        m = _SEED.fullmatch(parts[-1]) if len(parts) in (2, 3) else None
        try:
            if m is not None:
                return cls(parts[0], parts[1] if len(parts) == 3 else None, int(m.group(1)))
        except ValueError:
            pass
        raise ValueError(f"a job name must read '<group>/s<seed>' or '<group>/<cell>/s<seed>' (words of letters, "
                         f"digits, '_', '.', '-'); got {text!r}")

    def with_seed(self, seed: int) -> "JobName":
        return JobName(self.group, self.cell, seed)

    def __str__(self) -> str:
        return f"{self.group}/s{self.seed}" if self.cell is None else f"{self.group}/{self.cell}/s{self.seed}"


@dataclass(frozen=True, order=True)
class AblationCell:
    """``<optimiser>-<schedule>``: a cell of the layer-1 ablation (``AblationCell("cg", "main")``)."""

    optimiser: str
    schedule: str

    def __post_init__(self):
        for name in ("optimiser", "schedule"):
            v = getattr(self, name)
            if not (isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_]+", v)):
                raise ValueError(f"{name} must be a word of letters, digits and '_'; got {v!r}")

    @classmethod
    def parse(cls, text: str) -> "AblationCell":
        parts = text.split("-") if isinstance(text, str) else []
        if len(parts) != 2:
            raise ValueError(f"an ablation cell must read '<optimiser>-<schedule>'; got {text!r}")
        return cls(*parts)

    def job(self, size: str, seed: int) -> JobName:
        """The job of this cell at ``size`` (``"paper"``, ``"demo"``) and ``seed``."""
        return JobName(size, str(self), seed)

    def __str__(self) -> str:
        return f"{self.optimiser}-{self.schedule}"


@dataclass(frozen=True)
class Page:
    """A results page of the book: its notebook's name (``notebooks/<name>.py``) and the experiment
    it runs (``None``: it runs no experiment of :mod:`cnce.experiments`)."""

    name: str
    experiment: str | None

    @property
    def number(self) -> str:
        """The notebook's number, ``"02"``."""
        return self.name[:2]


#: The notebook registry: every results page, in the book's order.
PAGES: tuple[Page, ...] = (
    Page("02_consistency", "consistency"),
    Page("03_cnce_vs_nce", "nce"),
    Page("04_ring", "ring"),
    Page("05_supplementary", "supplementary"),
    Page("06_image_model", None),
    Page("07_choosing_eps", "eps"),
    Page("08_energy_networks", None),
)


def page(name: str) -> Page:
    """The :class:`Page` of a notebook's name (``"02_consistency"``; a path or ``.py``/``.ipynb``
    name is reduced to it); ``ValueError`` naming the known pages otherwise."""
    stem = str(name).rsplit("/", 1)[-1].split(".", 1)[0]
    for p in PAGES:
        if p.name == stem:
            return p
    raise ValueError(f"page must be one of {[p.name for p in PAGES]}; got {name!r}")


def page_of_experiment(experiment: str) -> Page:
    """The page that shows ``experiment`` (``"consistency"``)."""
    for p in PAGES:
        if p.experiment == experiment:
            return p
    raise ValueError(f"experiment must be one of {[p.experiment for p in PAGES if p.experiment]}; got {experiment!r}")
