"""Nothing stale in the book (issue 42, item 5): a commit that the book names is in this
repository's history, and statements about a rerun or a timing are computed from the records
by the current code, naming the commit and date they came from.

The text checked is what a reader sees: every ``book/*.md`` page with the book extension's
substitutions and generated tables filled in (``companion.prose.rendered``), every notebook's
markdown, and the outputs of the golden notebooks (``tests/golden/*.ipynb``: the glued values
the book shows). Where git cannot tell (no git, an unpacked archive, a shallow clone) the
history check is skipped, with the reason.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from companion import prose

ROOT = Path(__file__).resolve().parents[1]
ext = prose.book_extension()


def _head() -> str | None:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def _needs_history():
    head = _head()
    if head is None or ext.in_history(head) is None:
        pytest.skip("git cannot tell this checkout's history (no git, an unpacked archive or a shallow clone)")
    return head


def _golden_text(path: Path) -> str:
    nb = json.loads(path.read_text())
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            for key in ("text/plain", "text/markdown", "text/html"):
                if key in data:
                    t = data[key]
                    out.append("".join(t) if isinstance(t, list) else t)
            if "text" in o:
                out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
    return "\n".join(out)


def test_named_commits_finds_this_repositorys_commits_and_skips_other_repositories_links():
    assert prose.named_commits("timed at commit 1c67aae, 2026-11-26") == ["1c67aae"]
    assert prose.named_commits("recomputed at commit 9557313 on two cores; runs 8708dc5 (clean)") == \
        ["9557313", "8708dc5"]
    assert prose.named_commits("at 47472d9, where both solvers grow") == ["47472d9"]
    assert prose.named_commits("links go to commit [`39c6d4f`](https://github.com/o/r/tree/39c6d4fe41)") == []
    assert prose.named_commits("measured at 1234567 points") == []  # after "at", all digits: a number


def test_a_commit_outside_the_history_is_found_and_one_inside_passes():
    head = _needs_history()
    assert ext.in_history(head) is True
    assert ext.in_history("0123456789abcdef0123456789abcdef01234567") is False
    assert ext.commit_ref(head) == f"commit {head[:7]}"
    said = ext.commit_ref("0123456789abcdef0123456789abcdef01234567", "2026-11-26T13:09:22+00:00")
    assert "no longer in this repository's history" in said and "2026-11-26" in said and "0123456" not in said


def _texts():
    for page in prose.book_pages(ROOT):
        yield page, prose.rendered(page, ROOT)
    for golden in sorted((ROOT / "tests" / "golden").glob("*.ipynb")):
        yield str(golden.relative_to(ROOT)), _golden_text(golden)


def test_every_commit_the_book_names_is_in_the_history():
    _needs_history()
    missing = {}
    for where, text in _texts():
        for c in sorted(set(prose.named_commits(text))):
            if ext.in_history(c) is not True:
                missing.setdefault(where, []).append(c)
    assert not missing, (f"the book names commits that are not in this repository's history: {missing}; "
                         "record the run again at a commit of the history, or let the text say where it came from")


def test_the_rerun_comparison_says_which_tables_were_recomputed_after_it():
    prov = sorted((ROOT / "data" / "results" / "paper").glob("*.provenance.json"))
    if not prov:
        pytest.skip("no committed paper-scale results")
    assert ext.results_recomputed_since("9999-01-01").startswith("No committed paper-scale table")
    early = ext.results_recomputed_since("2000-01-01")
    assert "were computed again after that run" in early and "gaussian" in early
    text = prose.rendered("book/reproduce.md", ROOT)
    e2e = json.loads((ROOT / "benchmarks" / "results" / "e2e.json").read_text())
    assert ext.results_recomputed_since(str(e2e["machine"]["date"])) in text
    assert str(e2e["machine"]["date"])[:10] in text  # the timing names its date and commit


def test_a_changed_ledger_or_companion_makes_cached_page_executions_stale(tmp_path):
    """The book's execution cache keys on the notebooks' code cells only; the build drops it when
    what the pages read changes: the package, the companion, or a committed input (a page glues
    its verdicts from the claims ledger)."""
    from companion import book

    for rel in ("cnce/a.py", "companion/claims/render.py", "data/results/paper/x.csv", "data/claims/ledger.json",
                "data/checks/c.json", "data/weights/paper/provenance.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("0")
    before = book._tree_hash(tmp_path, book._EXECUTION_SOURCES)
    for rel in ("companion/claims/render.py", "data/claims/ledger.json", "data/checks/c.json",
                "data/weights/paper/provenance.json"):
        (tmp_path / rel).write_text("1")
        after = book._tree_hash(tmp_path, book._EXECUTION_SOURCES)
        assert after != before, f"a change of {rel} leaves cached executions in place"
        before = after
