"""Small Sphinx additions for the cnce book (loaded from _config.yml: sphinx.local_extensions).

Numbers from data files, at build time. A page never types a benchmark's result by hand:

* the line ``<!-- generated: benchmarks -->`` in a page is replaced, when the page is read,
  by the tables that ``benchmarks/summarize.py`` renders from ``benchmarks/results/*.json``
  (the page is re-read whenever one of those files changes);
* the line ``<!-- generated: book-times -->`` is replaced by a table of the book-build wall
  times in ``benchmarks/results/e2e_book.json`` (written by ``benchmarks/run.py --e2e --book
  --experiments --tag _book``), or, without that file, by a sentence that gives the command;
* ``{{ e2e_... }}`` substitutions (MyST's ``substitution`` extension) carry the end-to-end
  run times of ``benchmarks/results/e2e.json``. A key that the file no longer provides is an
  undefined substitution, which fails the strict build.

sphinx-thebe registers its inline configuration script on every ``env-before-read-docs``
event; in a Jupyter Book 1 build that event can fire more than once, and the page then
declares ``const THEBE_JS_URL`` twice, which is a JavaScript error in every browser. Here the
page's script list is de-duplicated before the page is written.

The bibliography's labels match the in-text citations (``bibtex_reference_style:
author_year`` gives "Ceylan and Gutmann, 2018" in the text; pybtex's default ``alpha`` labels
would be "CG18"). The ``cnce`` bibliography style is pybtex's ``unsrt`` with author-year
labels, sorted by author and year; it prints each entry's DOI or URL as a link.
"""
from __future__ import annotations

import codecs
import importlib.util
import json
from pathlib import Path

import latexcodec  # noqa: F401  (registers the "ulatex" codec)
from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
MARK = "<!-- generated: benchmarks -->"
BOOK_MARK = "<!-- generated: book-times -->"
BOOK_TIMES = BENCH / "results" / "e2e_book.json"
BOOK_COMMAND = ".venv/bin/python benchmarks/run.py --e2e --book --experiments --tag _book"


def _summarize():
    spec = importlib.util.spec_from_file_location("cnce_benchmarks_summarize", BENCH / "summarize.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _insert_benchmarks(app, docname, source):
    if MARK not in source[0]:
        return
    files = sorted((BENCH / "results").glob("*.json"))
    if not files:
        raise RuntimeError(f"{docname}: {MARK} needs the benchmark results in {BENCH / 'results'}; none found")
    for f in files:
        app.env.note_dependency(str(f))
    app.env.note_dependency(str(BENCH / "summarize.py"))
    text = _summarize().render(include_notes=False, include_history=False)
    text = "\n".join("#" + line if line.startswith("## ") else line for line in text.splitlines())  # sections -> level 3
    source[0] = source[0].replace(MARK, text)


def book_times_markdown(path: Path = BOOK_TIMES) -> str:
    """The book-build wall times of ``e2e_book.json`` as a Markdown table with the machine and
    its load, or a sentence naming the command that measures them when the file is absent."""
    if not path.is_file():
        return f"No build times are stored; `{BOOK_COMMAND}` measures them."
    e = json.loads(path.read_text())
    m = e["machine"]
    rows = [r for r in e["results"] if str(r["experiment"]).startswith("book")]
    if not rows:
        raise RuntimeError(f"{path} holds no book-build timings")
    what = {"book (clean)": "`python -m cnce book --clean` (as `scripts/book.sh --clean`): every notebook "
                            "executed, stored quick-scale results reused",
            "book (cached)": "`python -m cnce book` right after: cached executions, pages re-rendered"}
    out = [f"Measured by `{BOOK_COMMAND}` on {m['cpu']} ({m['cores']} cores, {m['memory_gib']} GiB, no GPU used), "
           f"{str(m['date'])[:10]}, commit {str(m['git_commit'])[:7]}:", "",
           "| build | wall time | load average (1 min) at its end | exit code |", "|---|---|---|---|"]
    note = (f"A load average above the {m['cores']} cores means that other jobs competed for the CPU "
            "during the measurement; an otherwise idle machine of this kind would likely be faster.")
    for r in rows:
        out.append(f"| {what.get(r['experiment'], r['experiment'])} | {r['seconds']:.0f} s | "
                   f"{r['load_average'][0]:.1f} | {r['returncode']} |")
    if any(r["load_average"][0] > m["cores"] for r in rows):
        out += ["", note]
    return "\n".join(out)


def _insert_book_times(app, docname, source):
    if BOOK_MARK not in source[0]:
        return
    app.env.note_dependency(str(BOOK_TIMES))
    source[0] = source[0].replace(BOOK_MARK, book_times_markdown())


def _e2e_substitutions(app, config):
    """``e2e_all_s``, ``e2e_<experiment>_s`` (seconds), ``e2e_threads``, ``e2e_commit`` and
    ``e2e_cores`` (the machine's CPU cores) from ``e2e.json``."""
    path = BENCH / "results" / "e2e.json"
    if not path.is_file():
        return
    e = json.loads(path.read_text())
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    for r in e["results"]:
        subs[f"e2e_{r['experiment']}_s"] = f"{r['seconds']:.0f}"
        subs["e2e_threads"] = str(r.get("threads", e["settings"].get("threads")))
        parts = r.get("parts") or []
        if len(parts) > 1:  # `run all` in one process: each experiment's share of its wall time
            for q in parts:
                subs[f"e2e_{q['experiment']}_s"] = f"{q['wall_seconds']:.0f}"
    paper_s, ica_s = _summarize().e2e_totals(e)  # the paper's experiments, and ICA within them
    subs.setdefault("e2e_all_s", f"{paper_s:.0f}")  # runs timed one experiment at a time: their sum
    subs["e2e_ica_s"] = f"{ica_s:.0f}"
    subs["e2e_ica_pct"] = f"{100 * ica_s / paper_s:.0f}" if paper_s else "-"
    subs["e2e_commit"] = str(e["machine"]["git_commit"])[:7]
    subs["e2e_cores"] = str(e["machine"]["cores"])
    cmp_path = BENCH / "results" / "e2e-compare.json"
    if cmp_path.is_file():  # the timed run's results against the committed ones
        st = json.loads(cmp_path.read_text())["studies"]
        rows = sum(v["matched"] for v in st.values())
        same = sum(v["error_identical_rows"] for v in st.values())
        subs["e2e_rows"] = str(rows)
        subs["e2e_rows_differ"] = str(rows - same)
        subs["e2e_err_max_rel"] = f"{max(v['error_max_rel'] for v in st.values()):.0e}"
        subs["e2e_median_max_rel"] = f"{max(v['median_error_max_rel'] for v in st.values()):.0e}"
        subs["e2e_studies_differ"] = ", ".join(k for k, v in st.items() if v["error_identical_rows"] < v["matched"]) or "none"
    config.myst_substitutions = subs


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        key = (getattr(js, "filename", None) or "", tuple(sorted((getattr(js, "attributes", None) or {}).items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(js)
    scripts[:] = unique


class _AuthorYearLabels(BaseLabelStyle):
    """Labels "Last, year", "Last and Last, year" or "Last et al., year", as in the text."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            last = [_plain(" ".join(p.prelast_names + p.last_names)) for p in people]
            names = (last[0] if len(last) == 1 else " and ".join(last) if len(last) == 2
                     else f"{last[0]} et al." if last else entry.key)
            yield f"{names}, {entry.fields.get('year', 'n.d.')}"


def _plain(latex: str) -> str:
    """``Hyv{\\"a}rinen`` -> ``Hyvärinen``."""
    return codecs.decode(latex, "ulatex").replace("{", "").replace("}", "")


class _CnceStyle(UnsrtStyle):
    default_label_style = "cnce-author-year"
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "cnce-author-year", _AuthorYearLabels)
register_plugin("pybtex.style.formatting", "cnce", _CnceStyle)


def setup(app):
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("source-read", _insert_benchmarks)
    app.connect("source-read", _insert_book_times)
    app.connect("config-inited", _e2e_substitutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
