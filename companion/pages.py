"""The notebook registry: :class:`Page` and :data:`PAGES`, each results page of the book with the
experiment it runs (``python -m cnce run <experiment>``). (What a page's claims are, and the page
titles the claims table shows, is the claims ledger's: ``companion.claims``.)
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Page", "PAGES", "page", "page_of_experiment"]


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
    Page("09_standard_errors", None),
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
