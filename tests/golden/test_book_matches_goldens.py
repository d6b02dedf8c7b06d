"""The goldens in their own configuration, on the notebooks the book build executed.

The book build executes every notebook as the goldens were made: in ``notebooks/``, under
:data:`companion.process_env.GOLDEN_ENV` (one thread), on this machine's CPU, with the default
parameters (quick scale, seed 0). Its executed copies (the execution cache,
``.jupyter_cache/``, which keeps every output; the copies under ``_build/jupyter_execute/``
lack the glued ones) are compared here with the goldens, cell by cell, as nbval compares them
(``conftest.py``: stderr left out, the same sanitising, numbers within
:mod:`tolerant_compare`'s tolerances). nbval itself checks the goldens on a generic CPU with two threads, so each
notebook runs twice in the suite (book, other CPU) rather than three times.

These tests need the built book (``scripts/test.sh`` runs them once it is built, with the
browser checks); run alone, they build it when it is missing or stale.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import nbval.plugin
import pytest

from companion.book import book_is_current, build_book
from companion.paths import REPO_ROOT
from tolerant_compare import compare_outputs, tolerance_for

pytestmark = pytest.mark.book

HERE = Path(__file__).resolve().parent
ROOT = REPO_ROOT
CACHE = ROOT / ".jupyter_cache"
GOLDENS = sorted(HERE.glob("*.ipynb"))
#: nbval's cell tags that exempt a cell's outputs from the comparison
UNCHECKED = {"nbval-ignore-output", "nbval-skip"}


def _sanitizer():
    import re

    patterns = nbval.plugin.get_sanitize_patterns((HERE / "sanitize.cfg").read_text())

    def sanitize(text: str) -> str:
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    return sanitize


SANITIZE = _sanitizer()


@pytest.fixture(scope="session")
def executed() -> dict:
    """The book build's executed notebooks by name (``02_consistency``): the latest execution
    of each in the execution cache. The build is current, so each is the one of its code as it
    is now (``companion book`` empties the cache when the package or the stored results change)."""
    from jupyter_cache import get_cache

    if not book_is_current():
        build_book(strict=True)
    cache = get_cache(str(CACHE))
    latest = {}
    for rec in cache.list_cache_records():
        stem = Path(rec.uri).stem
        if stem not in latest or rec.created > latest[stem].created:
            latest[stem] = rec
    return {stem: cache.get_cache_bundle(rec.pk).nb for stem, rec in latest.items()}


def _code_cells(nb) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("golden", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_book_outputs_match_the_golden(golden, executed):
    assert golden.stem in executed, f"the book build has no execution of {golden.stem} in {CACHE}"
    g_cells, b_cells = _code_cells(nbformat.read(golden, as_version=4)), _code_cells(executed[golden.stem])
    assert [c["source"].strip() for c in g_cells] == [c["source"].strip() for c in b_cells], (
        f"{golden.stem}: the book executed other code than the golden holds "
        "(regenerate the golden: scripts/regen-goldens.sh, or rebuild the book)")
    failures = []
    for i, (g, b) in enumerate(zip(g_cells, b_cells)):
        if UNCHECKED & set(g.get("metadata", {}).get("tags", [])) or g.get("execution_count") is None:
            continue
        problems = compare_outputs(g.get("outputs", []), b.get("outputs", []), SANITIZE,
                                   tolerance_for(golden.name, g["source"]))
        if problems:
            failures.append(f"code cell {i}:\n  " + "\n  ".join(problems[:8]))
    assert not failures, f"{golden.stem}: the book's outputs differ from the golden's\n" + "\n".join(failures)

