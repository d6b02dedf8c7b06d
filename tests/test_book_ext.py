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
    ext._cost_substitutions(None, config)
    ext._authors_code_substitutions(None, config)
    ext._ledger_substitutions(None, config)
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
        elif key == "e2e_made":  # where the timing came from: its commit (or that it left the history) and date
            assert re.fullmatch(r"(commit [0-9a-f]{7}|a commit that is no longer in this repository's history), "
                                r"\d{4}-\d\d-\d\d", v), (key, v)
        elif key == "e2e_results_since":  # a sentence computed from the results' provenance
            assert v.endswith(".") and ("computed again after that run" in v or v.startswith("No committed")), v
        elif key.startswith("ledger_"):  # the claims ledger's counts and its records' numbers, as the ledger has them
            continue
        elif key == "cost_image_gpu":  # the GPU named in the shown run's provenance
            assert v in (ROOT / "data" / "weights" / "paper" / "provenance.json").read_text(), v
        elif key == "e2e_studies_differ":  # study names (or "none")
            assert v == "none" or set(v.split(", ")) <= set(STUDIES), v
        else:  # a number or a commit
            assert re.fullmatch(r"[0-9a-f]{7}( and [0-9a-f]{7})?|\d+(\.\d+)?|\d(\.\d+)?e[+-]\d+", v), (key, v)
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


def test_ledger_substitutions_count_the_ledger(tmp_path):
    """The counts a Markdown page takes from the claims ledger follow the ledger's records."""
    import json

    ext = _ext()
    f = tmp_path / "ledger.json"
    recs = [{"id": "a-b", "kind": "paper", "record": {"verdict": "reproduced", "numbers": {"gm": 2.5}}},
            {"id": "c", "kind": "paper", "record": {"verdict": "not reproduced", "numbers": {}}},
            {"id": "d", "kind": "ours", "record": {"verdict": "reproduced", "numbers": {}}}]
    f.write_text(json.dumps({"format": 1, "provenance": {}, "claims": recs}))
    subs = ext.ledger_substitutions(f)
    assert subs["ledger_paper_claims"] == "2" and subs["ledger_our_questions"] == "1"
    assert subs["ledger_paper_reproduced"] == "1" and subs["ledger_paper_not_reproduced"] == "1"
    assert subs["ledger_a_b_gm"] == "2.5" and subs["ledger_c_verdict"] == "not reproduced"


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
    assert "| 301 s | 2.5 | 0 |" in table and "| 21 s | 1.0 | 0 |" in table and "no longer in this repository's history (2026-01-02)" not in table  # the date is given once
    assert "a commit that is no longer in this repository's history" in table  # abcdef0123 is not in the history
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


def test_paper_links_open_at_a_page_only_where_it_is_established(monkeypatch):
    ext = _ext()
    assert ext.paper_pdf_link("2a-b") == ext.PAPER_PDF  # no page established for any figure yet
    intro = (ROOT / "book" / "intro.md").read_text()
    assert ext.PAPER_FIGURE_PAGES or "open the PDF at its first page" in intro, \
        "the intro must say that the figure links carry no page while none is established"
    monkeypatch.setattr(ext, "PAPER_FIGURE_PAGES", {"2": 6})
    out = ext.link_figures("<p>Fig. 2a-b and Fig. 3 and Supp. Fig. 2</p>")
    assert f'href="{ext.PAPER_PDF}#page=6">Fig. 2a-b<' in out and f'href="{ext.PAPER_PDF}">Fig. 3<' in out
    assert f'href="{ext.PAPER_PAGE}">Supp. Fig. 2<' in out


def test_rerun_box_names_commands_and_measured_times():
    ext = _ext()
    box = ext.rerun_box("notebooks/02_consistency", 41.0)
    assert "companion batch 02" in box and "cnce run consistency --scale paper" in box and "41 s in this build" in box
    assert "e2e.json" in box and "GPU" in box
    assert "scripts/book.sh" in ext.rerun_box("book/claims")
    box6 = ext.rerun_box("notebooks/06_image_model")
    assert "GPU" in box6 and ("image-train" in box6 or "GPU command" in box6)


# --- sources shipped with the book, the repository setting, the cost table -------------------

def test_no_repository_button_while_the_address_is_empty():
    ext = _ext()
    empty = SimpleNamespace(html_theme_options={"repository_url": "", "use_repository_button": True,
                                                "use_issues_button": True})
    ext._repository_buttons(None, empty)
    assert not empty.html_theme_options["use_repository_button"] and not empty.html_theme_options["use_issues_button"]
    filled = SimpleNamespace(html_theme_options={"repository_url": "https://example.org/r", "use_repository_button": True})
    ext._repository_buttons(None, filled)
    assert filled.html_theme_options["use_repository_button"]
    import yaml

    url = (yaml.safe_load((ROOT / "_config.yml").read_text())["repository"] or {}).get("url")
    assert not url or "cnce-project" not in url, "the configured repository address must be a real one"
    box = ext.rerun_box("notebooks/02_consistency", 1.0, "", [("02.py", "../downloads/notebooks/02.py")])
    assert "book's sources" in box and 'href="../downloads/notebooks/02.py" download' in box
    assert 'href="../book/costs.html"' in box
    assert 'href="https://example.org/r"' in ext.rerun_box("book/claims", None, "https://example.org/r")


def _fake_app(tmp_path, docs):
    out = tmp_path / "_build" / "html"
    out.mkdir(parents=True)
    exe = tmp_path / "_build" / "jupyter_execute" / "notebooks"
    exe.mkdir(parents=True)
    (exe / "02_consistency.ipynb").write_text("{}")
    paths = {"notebooks/02_consistency": ROOT / "notebooks" / "02_consistency.py", "book/intro": ROOT / "book" / "intro.md"}
    env = SimpleNamespace(found_docs=set(docs), doc2path=lambda d: str(paths[d]),
                          mystnb_config=SimpleNamespace(output_folder=str(exe.parent)))
    return SimpleNamespace(outdir=str(out), env=env, builder=SimpleNamespace(format="html")), out


def test_each_page_ships_its_sources_and_the_archive(tmp_path):
    """After a build, every page's source, every executed notebook and the source archive are
    in the HTML output, at the links the rerun box gives."""
    import zipfile

    ext = _ext()
    app, out = _fake_app(tmp_path, ["notebooks/02_consistency", "book/intro"])
    ext.ship_sources(app, None)
    for page in ("notebooks/02_consistency", "book/intro"):
        links = ext.source_links(app, page)
        assert len(links) == (4 if page.startswith("notebooks/") else 3)
        for _, href in links:
            assert ((out / page).parent / href).resolve().is_file(), (page, href)
    names = zipfile.ZipFile(out / ext.DOWNLOADS / ext.ARCHIVE).namelist()
    assert "cnce-book-source/cnce/fit.py" in names and "cnce-book-source/notebooks/02_consistency.py" in names
    assert "cnce-book-source/data/results/paper/gaussian.csv" in names
    assert not any("/data/weights/" in n or "__pycache__" in n for n in names)
    weights = zipfile.ZipFile(out / ext.DOWNLOADS / ext.ARCHIVE_WEIGHTS).namelist()
    assert "cnce-book-source/data/weights/paper/state.pt" in weights
    assert all(n.startswith("cnce-book-source/data/weights/") for n in weights)
    ext.ship_sources(app, RuntimeError("failed build"))  # nothing to do after a failed build


def test_cost_table_rows_come_from_records_and_estimates_say_so():
    ext = _ext()
    table = ext.costs_markdown()
    rows = [r for r in table.splitlines()[2:] if r.startswith("|")]
    assert rows and all(r.count("|") == 7 for r in rows)
    assert all(("measured:" in r) or ("**estimate**" in r) or ("not measured" in r) for r in rows), rows
    assert "shared by up to 4 jobs at a time" in table and "conjugate gradients" in table
    est = ext.image_cpu_estimate()
    # evaluations x seconds per evaluation x meta-iterations, recomputed from the inputs
    assert est["layer1_seconds"] == est["evaluations_mean"] * est["seconds_per_eval"] * est["meta_iterations"]
    assert est["seconds_per_eval"] == est["seconds_per_eval_measured"] * est["batch"] / est["subsample"]
    assert 10 <= est["evaluations_mean"] <= 200  # 10 line searches of 1 to 20 evaluations each (cnce.images.cg)
    assert ext.image_cpu_estimate(ablation={"runs": {}}) is None
    app_deps = []
    source = [(ROOT / "book" / "costs.md").read_text()]
    ext._insert_costs(SimpleNamespace(env=SimpleNamespace(note_dependency=app_deps.append)), "book/costs", source)
    assert ext.COSTS_MARK not in source[0] and "| result | page |" in source[0]
    assert ext.NOTEBOOK_TIMES_SLOT in source[0]
    html = ext.notebook_times_html({"notebooks/02_consistency": 41.0})
    assert "02_consistency" in html and "41 s" in html


def test_cost_table_lists_every_gpu_calls_jobs_and_marks_unrecorded_times(tmp_path):
    """Every job of the three GPU calls' results files is counted in one row of the cost table,
    with its recorded time; a job whose time was not recorded counts with the driver's planned
    time and its row says **estimate**."""
    import json

    from cnce.images import runs

    ext = _ext()
    assert ext.GPU_CALL_DIRS == (runs.CALL2, runs.CALL3)
    calls = ext.gpu_calls()
    assert [c["which"] for c in calls] == ["first", "second", "third"]
    table = ext.costs_markdown()
    for c in calls:
        rows = ext.gpu_job_rows(c)
        assert sum(int(re.search(r": (\d+) jobs?$", r[0]).group(1)) for r in rows) == len(c["jobs"])
        assert all(r[4].startswith("**estimate**") == ("not recorded" in r[5]) for r in rows)
        assert all(r[0] + " | " in table for r in rows), c["which"]
    third = ext.gpu_job_rows(calls[2])
    assert {"call3/results.json" in r[5] and "NVIDIA H200" in r[3] for r in third} == {True}
    assert "3 GPU calls" in table and "paper-seed2" in table
    # known input: two jobs, one recorded (50 s), one only planned (60 s)
    f = tmp_path / "results.json"
    f.write_text(json.dumps({"calls": [{"gpu": "G", "workers": 2, "commit": "a" * 40, "started": "2026-01-02T00:00:00Z"}],
                             "jobs": {"x/s0": {"seconds": 50.0, "estimate": 30.0}, "x/s1": {"estimate": 60.0}}}))
    (call,) = ext.gpu_calls([(f, "test", {"x": "the x runs"})])
    (row,) = ext.gpu_job_rows(call)
    assert row[0] == "the x runs: 2 jobs" and row[3] == "GPU: G, shared by up to 2 jobs at a time"
    assert row[4] == "**estimate** 50 s to 60 s each, 110 s in all" and row[5].startswith("1 of 2 jobs not recorded")
    f.write_text(json.dumps({"calls": [], "jobs": {"x/s0": {"seconds": 60.0}}}))
    (row,) = ext.gpu_job_rows(ext.gpu_calls([(f, "test", {})])[0])
    assert row[4] == "60 s" and row[5].startswith("measured:") and row[3] == "GPU: not recorded"


def test_authors_code_numbers_come_from_the_recorded_octave_runs():
    """The authors'-code page's counts are computed from data/checks/authors-code (written by
    scripts/authors_code/run.sh from committed drivers), not typed."""
    import json

    ext = _ext()
    a = ext.authors_code_summary()
    assert a is not None and set(a) == {"ring", "ica"}
    assert all(a[k]["provenance"]["drivers_dirty"] is False for k in a)
    fits = json.loads((ext.AUTHORS_CHECKS / "ring" / "ring-nce-fminunc.json").read_text())["fits"]
    at_max = [r for r in fits if r["N"] == max(r["N"] for r in fits)]
    unchanged = sum(abs(r["error_end"] - r["error_start"]) <= 1e-6 * max(1.0, r["error_start"]) for r in at_max)
    assert a["ring"]["fminunc"]["stuck_lo"] <= unchanged <= a["ring"]["fminunc"]["stuck_hi"]
    ica = json.loads((ext.AUTHORS_CHECKS / "ica" / "ica-mle.json").read_text())["fits"]
    assert all(r["nll_refined"] <= r["nll_theirs"] + 1e-9 for r in ica), "the refinement must not raise the loss"
    page = (ROOT / "book" / "authors-code.md").read_text()
    assert "{{ authors_ring_fminunc_stuck_lo }}" in page and "{{ authors_ica_short_hi }}" in page


def test_every_cited_key_is_in_the_bibliography():
    """A {cite} role in a page or a notebook names an entry of book/references.bib (the strict
    build would fail on it, but only after executing every notebook)."""
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "book" / "references.bib").read_text(), re.M))
    pages = [*(ROOT / "book").glob("*.md"), *(ROOT / "book").glob("*.py"), *(ROOT / "notebooks").glob("*.py")]
    used = {(p.name, k.strip()) for p in pages
            for m in re.finditer(r"\{cite(?::\w+)?\}`([^`]+)`", p.read_text()) for k in m.group(1).split(",")}
    assert {k for _, k in used} >= {"vincent2011", "song2019"}
    assert not {(n, k) for n, k in used if k not in keys}
