"""The book's Sphinx extension (``book/_ext/cnce_book.py``) fills numbers in from data files."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def _ext():
    spec = importlib.util.spec_from_file_location("cnce_book_ext", ROOT / "book" / "_ext" / "cnce_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_substitution_in_the_book_pages_comes_from_the_results():
    ext = _ext()
    config = SimpleNamespace(myst_substitutions={})
    ext._e2e_substitutions(None, config)
    used = set()
    for page in (ROOT / "book").glob("*.md"):
        used |= set(re.findall(r"\{\{\s*(\w+)\s*\}\}", page.read_text()))
    assert used and used <= set(config.myst_substitutions), used - set(config.myst_substitutions)
    assert all(re.fullmatch(r"[0-9a-f]{7}|\d+", v) for v in config.myst_substitutions.values())


def test_benchmark_tables_are_rendered_into_the_page_and_tracked():
    ext = _ext()
    deps = []
    app = SimpleNamespace(env=SimpleNamespace(note_dependency=deps.append))
    source = [(ROOT / "book" / "reproduce.md").read_text()]
    assert ext.MARK in source[0]
    ext._insert_benchmarks(app, "book/reproduce", source)
    assert ext.MARK not in source[0] and "### End to end" in source[0] and "| experiment | scale |" in source[0]
    assert any(d.endswith("e2e.json") for d in deps)
    other = ["no marker here"]
    ext._insert_benchmarks(app, "book/intro", other)
    assert other == ["no marker here"]
