"""Names that files, tables and pages share, each a small frozen type defined once.

* :class:`JobName`: a run of a driver's job list and its key in a results file, written
  ``<group>/s<seed>`` or ``<group>/<cell>/s<seed>`` (``paper/cg-main/s0``, ``d2/s1``,
  ``d2/nce-reset/s0``, ``photos/paper/s0``);
* :class:`AblationCell`: a cell of the image model's layer-1 ablation, ``<optimiser>-<schedule>``
  (``cg-main``);

``parse`` reads a name's text (``ValueError`` naming it when malformed) and ``str`` writes it, so
a name is built in one place and split in one place.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .constraints import Integer, validate

__all__ = ["JobName", "AblationCell"]

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
        validate(self.seed, Integer(lo=0), "seed")

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
