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
import re
from pathlib import Path

import latexcodec  # noqa: F401  (registers the "ulatex" codec)
from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

from cnce.names import PAGES

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


# --- where the book comes from (issue 25) ------------------------------------------------------

#: The paper, for the links on "Fig. N" / "Supp. Fig. N" in every page's text.
PAPER_PDF = "https://proceedings.mlr.press/v80/ceylan18a/ceylan18a.pdf"
PAPER_PAGE = "https://proceedings.mlr.press/v80/ceylan18a.html"  # the paper and its supplementary material

#: notebook -> (experiment of ``python -m cnce run``, or None)
#: notebook name -> the experiment it runs (the notebook registry, :data:`cnce.names.PAGES`)
EXPERIMENT_OF = {p.name: p.experiment for p in PAGES if p.experiment}
IMAGE_RUN = ROOT / "data" / "weights" / "paper" / "provenance.json"

_SKIP = {"a", "pre", "code", "script", "style", "textarea", "title", "h1"}
_TAG = re.compile(r"(<[^>]+>)")
_FIG = re.compile(r"\b(Supp\.\s+Figs?\.|Figs?\.)(\s|&nbsp;)(\d+[a-f]?(?:[-\u2013]\d*[a-f])?)")


def link_figures(body: str) -> str:
    """Every "Fig. N..." / "Supp. Fig. N" in the text of ``body`` (not inside links, code,
    headings' titles or scripts) becomes a link to the paper (the main text's PDF; the
    supplementary figures to the paper's page, which carries the supplementary PDF)."""
    out, skip = [], []
    for part in _TAG.split(body):
        if part.startswith("<") and part.endswith(">"):
            m = re.match(r"<\s*(/)?\s*([a-zA-Z0-9]+)", part)
            if m:
                name = m.group(2).lower()
                if name in _SKIP and not part.endswith("/>"):
                    if m.group(1):
                        if skip and skip[-1] == name:
                            skip.pop()
                    else:
                        skip.append(name)
            out.append(part)
        elif skip or "Fig" not in part:
            out.append(part)
        else:
            out.append(_FIG.sub(lambda f: f'<a class="cnce-paper-fig reference external" href="'
                                f'{PAPER_PAGE if f.group(1).startswith("Supp") else PAPER_PDF}">'
                                f"{f.group(0)}</a>", part))
    return "".join(out)


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def rerun_box(docname: str, quick_seconds: float | None = None) -> str:
    """The "rerun this page" box: the exact commands for this page and their measured times
    at quick and paper scale, on a CPU and a GPU, from the build's execution record
    (``quick_seconds``), ``benchmarks/results/e2e.json``, ``e2e_book.json`` and the image run's
    provenance. A time that no record holds is said to be unmeasured, never guessed."""
    import html as _html

    rows = []
    book_t = None
    if BOOK_TIMES.is_file():
        e = json.loads(BOOK_TIMES.read_text())
        clean = [r for r in e["results"] if r["experiment"] == "book (clean)"]
        if clean:
            m = e["machine"]
            book_t = f"{_fmt_s(clean[0]['seconds'])} for the whole book on a {m['cores']}-core CPU (e2e_book.json)"
    name = docname.split("/")[-1]
    if docname.startswith("notebooks/"):
        num = name[:2]
        q = (f"{_fmt_s(quick_seconds)} in this build (CPU, one thread)" if quick_seconds else
             "its time is in the batch summary it writes")
        rows.append(("quick scale, CPU", f".venv/bin/python -m cnce batch {num}", q))
        exp = EXPERIMENT_OF.get(name)
        e2e = BENCH / "results" / "e2e.json"
        if exp and e2e.is_file():
            e = json.loads(e2e.read_text())
            secs = {r["experiment"]: r["seconds"] for r in e["results"]}
            for r in e["results"]:
                for part in r.get("parts") or []:
                    secs[part["experiment"]] = part["wall_seconds"]
            t = (f"{_fmt_s(secs[exp])} on a {e['machine']['cores']}-core CPU, {e.get('settings', {}).get('threads', 2)} "
                 f"threads (benchmarks/results/e2e.json)") if exp in secs else "not measured"
            rows.append(("paper scale, CPU", f".venv/bin/python -m cnce run {exp} --scale paper --seed 1 && "
                         f".venv/bin/python -m cnce batch {num} --scale paper -p seed 1", t))
            rows.append(("paper scale, GPU", f".venv/bin/python -m cnce run {exp} --scale paper --seed 1 --device cuda",
                         "not measured for this experiment (the fits are small; benchmarks/results/cuda-fit-check.json "
                         "compares single fits)"))
        elif name.startswith("06_") and IMAGE_RUN.is_file():
            p = json.loads(IMAGE_RUN.read_text())
            total = sum(float(v) for v in (p.get("wall_seconds_per_layer") or {}).values())
            gpu = next((x.get("gpu") for x in p.get("sessions") or [] if isinstance(x, dict) and x.get("gpu")), None) or "a GPU"
            rows.append(("paper scale, GPU (the run shown)",
                         ".venv/bin/python -m cnce image-train --config paper --device cuda",
                         f"{_fmt_s(total)} of training on {gpu}, sharing it with other runs "
                         "(data/weights/paper/provenance.json)"))
            rows.append(("paper scale, GPU (everything on the page)",
                         "PYTHONPATH=. python3 scripts/gpu_section4.py --out OUT --commit COMMIT",
                         "two calls of at most 10 minutes on one GPU (README)"))
            rows.append(("paper scale, CPU", ".venv/bin/python -m cnce image-train --config demo --compare",
                         "the CPU-sized run; see the image page for its time"))
        elif name.startswith("06_"):  # the committed runs moved: their provenance holds the times
            rows.append(("paper scale, GPU", "the one-call GPU command that the image page and the README give",
                         "in each committed run's provenance under data/weights/"))
        else:
            rows.append(("paper scale, CPU", f".venv/bin/python -m cnce batch {num} --scale paper",
                         "not measured (more simulations and data in every check)"))
    else:
        rows.append(("this page", "scripts/book.sh", book_t or "see the reproduce page"))
    items = "".join(f"<tr><td>{_html.escape(w)}</td><td><code>{_html.escape(c)}</code></td><td>{_html.escape(t)}</td></tr>"
                    for w, c, t in rows)
    return ('<div class="admonition cnce-rerun"><p class="admonition-title">Rerun this page</p>'
            "<p>From a clone of the repository (the repository button at the top of the page), after "
            "<code>scripts/ensure-env.sh</code>:</p>"
            f'<table class="cnce-rerun-table"><tbody>{items}</tbody></table></div>')


def _page_additions(app, pagename, templatename, context, doctree):
    """Links to the paper on its figures, and the rerun box at the end of every page."""
    body = context.get("body")
    if not body or doctree is None:
        return
    quick = None
    try:
        from myst_nb.sphinx_ import NbMetadataCollector

        data = NbMetadataCollector.get_exec_data(app.env, pagename)
        quick = (data or {}).get("runtime")
    except Exception:  # pragma: no cover - not a notebook, or another myst-nb
        quick = None
    context["body"] = link_figures(body) + rerun_box(pagename, quick)


def _repo_substitutions(app, config):
    """``{{ repo_url }}`` from ``_config.yml``'s ``repository: url`` (the theme's source links)."""
    opts = getattr(config, "html_theme_options", None) or {}
    url = opts.get("repository_url") or ""
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    subs["repo_url"] = url or "(the repository's address is not configured)"
    for key, path in (("link_bench_notes", "benchmarks/notes.md"), ("link_bench_summary", "benchmarks/results/SUMMARY.md")):
        subs[key] = f"[`{path}`]({url.rstrip('/')}/blob/main/{path})" if url else f"`{path}`"
    config.myst_substitutions = subs


def setup(app):
    app.connect("html-page-context", _page_additions, priority=800)
    app.connect("config-inited", _repo_substitutions)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("source-read", _insert_benchmarks)
    app.connect("source-read", _insert_book_times)
    app.connect("config-inited", _e2e_substitutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
