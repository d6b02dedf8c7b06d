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
    config = SimpleNamespace(myst_substitutions={}, html_theme_options={"repository_url": "https://example.org/r"})
    ext._e2e_substitutions(None, config)
    ext._repo_substitutions(None, config)
    repo_keys = {"repo_url", "link_bench_notes", "link_bench_summary"}
    used = set()
    for page in (ROOT / "book").glob("*.md"):
        used |= set(re.findall(r"\{\{\s*(\w+)\s*\}\}", page.read_text()))
    assert used and used <= set(config.myst_substitutions), used - set(config.myst_substitutions)
    from cnce.experiments.configs import STUDIES

    for key, v in config.myst_substitutions.items():
        if key in repo_keys:  # the repository's address and links into it
            assert "https://example.org/r" in v, (key, v)
        elif key == "e2e_studies_differ":  # study names (or "none")
            assert v == "none" or set(v.split(", ")) <= set(STUDIES), v
        else:  # a number or a commit
            assert re.fullmatch(r"[0-9a-f]{7}|\d+|\d(\.\d+)?e[+-]\d+", v), (key, v)
    # the page's total is the sum of the experiments it lists (each rounded to a second)
    subs = config.myst_substitutions
    parts = [int(subs[f"e2e_{e}_s"]) for e in ("consistency", "nce", "ring", "supplementary")]
    assert abs(sum(parts) - int(subs["e2e_all_s"])) <= 2, (parts, subs["e2e_all_s"])


def test_benchmark_tables_are_rendered_into_the_page_and_tracked():
    ext = _ext()
    deps = []
    app = SimpleNamespace(env=SimpleNamespace(note_dependency=deps.append))
    source = [(ROOT / "book" / "speed.md").read_text()]
    assert ext.MARK in source[0]
    ext._insert_benchmarks(app, "book/speed", source)
    assert ext.MARK not in source[0] and "### End to end" in source[0] and "| experiment | scale |" in source[0]
    assert any(d.endswith("e2e.json") for d in deps)
    other = ["no marker here"]
    ext._insert_benchmarks(app, "book/intro", other)
    assert other == ["no marker here"]


def test_bibliography_labels_are_author_year_with_links():
    """The bibliography's labels read like the in-text author-year citations, and every entry
    links to the work (DOI or URL); pybtex's default 'alpha' labels ("GH10") would fail."""
    _ext()  # registers the 'cnce' style
    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    bib = parse_file(str(ROOT / "book" / "references.bib"))
    entries = list(find_plugin("pybtex.style.formatting", "cnce")().format_entries(bib.entries.values()))
    labels = {e.key: e.label for e in entries}
    assert labels["ceylan2018"] == "Ceylan and Gutmann, 2018"
    assert labels["gutmann2010"] == "Gutmann and Hyvärinen, 2010"
    assert labels["hinton2002"] == "Hinton, 2002"
    assert labels["vanderwalt2014"] == "van der Walt et al., 2014"
    assert not [k for k, v in labels.items() if "{" in v or "\\" in v]
    unlinked = [e.key for e in entries if "doi" not in bib.entries[e.key].fields and "url" not in bib.entries[e.key].fields]
    assert not unlinked, f"bibliography entries without a DOI or URL: {unlinked}"
    html = next(e for e in entries if e.key == "ceylan2018").text.render_as("html")
    assert 'href="https://proceedings.mlr.press/v80/ceylan18a.html"' in html


def test_book_build_times_come_from_the_results_file(tmp_path):
    """The reproduce page's build times are a table from ``e2e_book.json``; without the file the
    page names the command instead of showing numbers (none are typed by hand)."""
    import json

    ext = _ext()
    assert ext.BOOK_MARK in (ROOT / "book" / "reproduce.md").read_text()
    missing = ext.book_times_markdown(tmp_path / "absent.json")
    assert ext.BOOK_COMMAND in missing and not re.search(r"\d+ s\b", missing)
    f = tmp_path / "e2e_book.json"
    f.write_text(json.dumps({
        "machine": {"cpu": "Test CPU", "cores": 2, "memory_gib": 8, "date": "2026-01-02T03:04:05", "git_commit": "abcdef0123"},
        "results": [{"experiment": "book (clean)", "seconds": 301.4, "returncode": 0, "load_average": [2.5, 2, 2]},
                    {"experiment": "book (cached)", "seconds": 20.6, "returncode": 0, "load_average": [1.0, 1, 1]}]}))
    table = ext.book_times_markdown(f)
    assert "| 301 s | 2.5 | 0 |" in table and "| 21 s | 1.0 | 0 |" in table and "abcdef0" in table
    deps = []
    app = SimpleNamespace(env=SimpleNamespace(note_dependency=deps.append))
    source = [(ROOT / "book" / "reproduce.md").read_text()]
    ext._insert_book_times(app, "book/reproduce", source)
    assert ext.BOOK_MARK not in source[0] and any(d.endswith("e2e_book.json") for d in deps)


def test_paper_figures_are_linked_outside_code_and_links():
    ext = _ext()
    out = ext.link_figures('<p>Fig. 2a-b and Supp. Fig. 1</p><pre>Fig. 3</pre><a href="x">Fig. 1</a><code>Fig. 4</code>')
    assert out.count(ext.PAPER_PDF) == 1 and out.count(ext.PAPER_PAGE) == 1
    assert "<pre>Fig. 3</pre>" in out and '<a href="x">Fig. 1</a>' in out and "<code>Fig. 4</code>" in out


def test_rerun_box_names_commands_and_measured_times():
    ext = _ext()
    box = ext.rerun_box("notebooks/02_consistency", 41.0)
    assert "cnce batch 02" in box and "cnce run consistency --scale paper" in box and "41 s in this build" in box
    assert "e2e.json" in box and "GPU" in box
    assert "scripts/book.sh" in ext.rerun_box("book/claims")
    box6 = ext.rerun_box("notebooks/06_image_model")
    assert "GPU" in box6 and ("image-train" in box6 or "GPU command" in box6)
