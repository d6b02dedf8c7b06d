"""The notebooks, their nbval goldens and the book's table of contents stay in step.

The goldens themselves are executed and compared by nbval (``--nbval`` in pytest's
addopts, set-up in ``tests/golden/conftest.py``); these tests check that they are the
goldens of the current notebooks. Regenerate them with ``python -m companion goldens``.
"""
from __future__ import annotations


import pytest
import yaml

from companion.reruns import (
    GOLDEN_PARAMETERS,
    code_cells,
    default_golden_dir,
    find_notebooks,
    notebook_parameters,
    read_notebook,
)
from companion.paths import REPO_ROOT

NOTEBOOKS = find_notebooks()
GOLDEN_DIR = default_golden_dir()
REGEN = "regenerate it with `python -m companion goldens {}` (scripts/regen-goldens.sh)"


def _ids(paths):
    return [p.stem for p in paths]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_golden_exists(path):
    golden = GOLDEN_DIR / f"{path.stem}.ipynb"
    assert golden.is_file(), f"{path.name} has no golden notebook; " + REGEN.format(path.stem)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_golden_code_matches_notebook(path):
    golden = GOLDEN_DIR / f"{path.stem}.ipynb"
    if not golden.is_file():
        pytest.skip("no golden (reported by test_golden_exists)")
    want, have = code_cells(read_notebook(path)), code_cells(read_notebook(golden))
    for i, (w, h) in enumerate(zip(want, have)):
        assert w == h, (f"code cell {i} of {golden.name} differs from {path.name}; "
                        + REGEN.format(path.stem) + f"\n--- notebook:\n{w}\n--- golden:\n{h}")
    assert len(want) == len(have), (f"{path.name} has {len(want)} code cells, its golden {len(have)}; "
                                     + REGEN.format(path.stem))


def test_no_orphan_goldens():
    stems = {p.stem for p in NOTEBOOKS}
    orphans = sorted(g.name for g in GOLDEN_DIR.glob("*.ipynb") if g.stem not in stems)
    assert not orphans, f"goldens without a notebook: {orphans}; delete them or run `python -m companion goldens`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_parameters_cell(path):
    params = notebook_parameters(read_notebook(path))
    for key, value in GOLDEN_PARAMETERS.items():
        assert key in params, f"{path.name}: the 'parameters' cell must define {key}"
        assert params[key] == value, f"{path.name}: default {key} must be {value!r}, got {params[key]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_starts_with_a_title(path):
    nb = read_notebook(path)
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    assert first.source.lstrip().startswith("# "), f"{path.name}: the first markdown cell must start with a '# ' title"


def test_toc_covers_every_notebook_and_book_page():
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    entries = [toc["root"]]
    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            entries.append(ch.get("file") or ch.get("glob"))
    assert "notebooks/*" in entries or all(f"notebooks/{p.stem}" in entries for p in NOTEBOOKS)
    for page in ("book/intro", "book/reproduce", "book/differences", "book/references", "book/authors-code",
                 "book/glossary", "book/speed"):
        assert page in entries, f"{page} missing from _toc.yml"
        assert (REPO_ROOT / f"{page}.md").is_file()
