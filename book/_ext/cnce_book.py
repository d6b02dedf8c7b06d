"""Small Sphinx additions for the cnce book (loaded from _config.yml: sphinx.local_extensions).

Numbers from data files, at build time. A page never types a benchmark's result by hand:

* the line ``<!-- generated: benchmarks -->`` in a page is replaced, when the page is read,
  by the tables that :mod:`cnce.speed` renders from ``benchmarks/results/*.json``
  (the page is re-read whenever one of those files changes);
* the line ``<!-- generated: book-times -->`` is replaced by a table of the book-build wall
  times in ``benchmarks/results/e2e_book.json`` (written by ``python -m benchmarks.e2e --book
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
BOOK_COMMAND = ".venv/bin/python -m benchmarks.e2e --book --experiments --tag _book"


def _summarize():
    from cnce import speed

    return speed


def _insert_benchmarks(app, docname, source):
    if MARK not in source[0]:
        return
    files = sorted((BENCH / "results").glob("*.json"))
    if not files:
        raise RuntimeError(f"{docname}: {MARK} needs the benchmark results in {BENCH / 'results'}; none found")
    for f in files:
        app.env.note_dependency(str(f))
    app.env.note_dependency(_summarize().__file__)
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


# --- what each result costs -------------------------------------------------------------------

COSTS_MARK = "<!-- generated: costs -->"
#: Where the cost page's per-notebook rows go; filled when the page is written (the notebooks'
#: execution times of this build are known then).
NOTEBOOK_TIMES_SLOT = '<div id="cnce-notebook-times"></div>'
WEIGHTS = ROOT / "data" / "weights"
ABLATION = WEIGHTS / "ablation" / "results.json"
EXPERIMENT_NOTEBOOK = {"consistency": "02", "nce": "03", "ring": "04", "supplementary": "05", "eps": "07"}


def _h(seconds: float) -> str:
    """``"203 s"``, ``"12 min"`` or ``"12.4 h"``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _load_json(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def image_cpu_estimate(ablation: dict | None = None, images: dict | None = None, flops: dict | None = None) -> dict | None:
    """The CPU time of the paper configuration's image model (the authors' recipe: conjugate
    gradients), **estimated**: the mean number of loss-and-gradient evaluations per
    meta-iteration of layer 1 in the recorded GPU runs of that recipe (``history`` of the
    ``paper/cg-*`` runs of ``data/weights/ablation/results.json``) times one evaluation's CPU
    time (``benchmarks/results/images.json``: measured on a subsample, scaled linearly to the
    recipe's batch) times layer 1's meta-iterations; the whole model adds layers 2-4 in the
    proportion of their floating-point operations (``image_gpu_estimate.json``). The eps
    heuristic's evaluations of the loss are not counted. ``None`` when a record is missing."""
    ablation = ablation if ablation is not None else _load_json(ABLATION)
    images = images if images is not None else _load_json(BENCH / "results" / "images.json")
    flops = flops if flops is not None else _load_json(BENCH / "results" / "image_gpu_estimate.json")
    if not ablation or not images:
        return None
    runs = {k: r for k, r in ablation.get("runs", {}).items() if k.startswith("paper/cg-")}
    evals = [h["evaluations"] for r in runs.values() for h in (r.get("history") or {}).get("1", []) if h.get("evaluations")]
    cpu = next((r for r in images.get("results", []) if r.get("estimated") and r.get("seconds_per_eval_measured")), None)
    if not evals or cpu is None:
        return None
    cfg = next(iter(runs.values()))["config"]
    batch, metas = int(cfg["n_patches"][0]), int(cfg["meta_iters"][0])
    per_eval = float(cpu["seconds_per_eval_measured"]) * batch / float(cpu["subsample"])
    per_meta = sum(evals) / len(evals) * per_eval
    layer1 = per_meta * metas
    share = None
    if flops and flops.get("flops_per_layer"):
        f = {int(k): float(v) for k, v in flops["flops_per_layer"].items()}
        share = sum(v for k, v in f.items() if k != 1) / f[1]
    return dict(runs=sorted(runs), evaluations_mean=sum(evals) / len(evals), evaluations_min=min(evals),
                evaluations_max=max(evals), batch=batch, meta_iterations=metas, subsample=int(cpu["subsample"]),
                seconds_per_eval_measured=float(cpu["seconds_per_eval_measured"]), seconds_per_eval=per_eval,
                seconds_per_meta=per_meta, layer1_seconds=layer1, other_layers_share=share,
                model_seconds=layer1 * (1 + share) if share is not None else None,
                cpu_machine=images.get("machine", {}))


#: The GPU calls whose jobs' times the cost table lists: (results file, which call, what each
#: group of jobs is). The second and third calls' folders are ``cnce.images.runs.CALL2`` and
#: ``CALL3`` (a test checks that they agree); a group is a job's name without its seed
#: (``/s<k>``), or its first part where the table names the first part alone.
GPU_CALL_DIRS = ("call2", "call3")
GPU_CALLS = (
    (ABLATION, "first", {
        "demo": "ablation runs at the demo size (optimiser x data schedule x seed)",
        "paper": "ablation runs at the paper's size (optimiser x data schedule x seed; `data/weights/paper` and "
                 "`paper-seed1` above are two of them)",
        "d2": "Supp. D.2 runs (CNCE, NCE, NCE with the authors' reset)", "ica": "FastICA positive control",
        "photos": "the recipe on the photographs, layer 1"}),
    (WEIGHTS / GPU_CALL_DIRS[0] / "results.json", "second", {
        "shown": "the four-layer run, a third seed (`data/weights/paper-seed2` above)",
        "photos": "the authors' recipe, four layers, on the photo pack with the authors' layer-3 input "
                  "(`data/weights/photos/paper-seed<k>`)",
        "pca": "the PCA test: layer 1 of the L-BFGS main-set cell, PCA fitted on fewer or more patches "
               "(`data/weights/pca`)",
        "d2": "Supp. D.2 again, every meta-iteration's first-layer weights kept (`data/weights/d2`)"}),
    (WEIGHTS / GPU_CALL_DIRS[1] / "results.json", "third", {
        "l3/pack-ensemble": "layers 3-4 again on the finished layers 1-2, the ensemble-centred layer-3 input, "
                            "photo pack (`data/weights/l3`)",
        "l3/bundled-sample": "layers 3-4 again on the finished layers 1-2, the authors' layer-3 input, bundled "
                             "photographs (`data/weights/l3`)"}),
)


def gpu_calls(spec=None) -> list[dict]:
    """One record per GPU call that has a results file: ``which`` ("first"...), the results
    file, its ``jobs``, the group labels, the GPU(s), the most jobs that shared the GPU at a
    time (``workers``), the commits, the start dates and the number of commands."""
    out = []
    for path, which, labels in spec or GPU_CALLS:
        r = _load_json(path)
        if not r:
            continue
        cs = r.get("calls") or []
        out.append(dict(which=which, path=path, jobs=r.get("jobs") or {}, labels=labels,
                        gpu=", ".join(sorted({c["gpu"] for c in cs if c.get("gpu")})) or None,
                        workers=max((int(c.get("workers", 1)) for c in cs), default=None),
                        commits={c.get("commit") for c in cs if c.get("commit")},
                        started=sorted(str(c.get("started", ""))[:10] for c in cs), commands=len(cs)))
    return out


def _shared(call: dict) -> str:
    return f", shared by up to {call['workers']} jobs at a time" if call.get("workers") and call["workers"] > 1 else ""


def _job_group(name: str, labels: dict) -> str:
    base = re.sub(r"/s\d+$", "", name)
    return base if base in labels else name.split("/")[0]


def gpu_job_rows(call: dict) -> list[tuple]:
    """The cost table's rows of one GPU call: one per group of jobs, with the recorded wall time
    of each job (``jobs[name]["seconds"]``). A job without a recorded time counts with the
    driver's planned time (``estimate``), and its row says **estimate**."""
    groups: dict = {}
    for k, v in call["jobs"].items():
        groups.setdefault(_job_group(k, call["labels"]), []).append(v)
    rel = call["path"].relative_to(ROOT) if call["path"].is_relative_to(ROOT) else call["path"]
    commits = ", ".join(sorted(c[:7] for c in call["commits"]))
    rows = []
    for g, jobs in sorted(groups.items()):
        secs = [float(j["seconds"] if j.get("seconds") is not None else j["estimate"]) for j in jobs]
        planned = sum(j.get("seconds") is None for j in jobs)
        lo, hi = _h(min(secs)), _h(max(secs))
        span = lo if len(secs) == 1 else f"{lo if lo == hi else f'{lo} to {hi}'} each, {_h(sum(secs))} in all"
        rec = f"`{rel}` (`jobs`), the {call['which']} GPU call" + (f", commit {commits}" if commits else "")
        if planned:
            span = f"**estimate** {span}"
            rec = f"{planned} of {len(jobs)} jobs not recorded: the driver's planned time; the others measured: {rec}"
        else:
            rec = f"measured: {rec}"
        rows.append((f"{call['labels'].get(g, g)}: {len(jobs)} job{'s' if len(jobs) > 1 else ''}", "06",
                     "demo" if g == "demo" else "paper", f"GPU: {call['gpu'] or 'not recorded'}{_shared(call)}",
                     span, rec))
    return rows


def gpu_calls_markdown(calls: list[dict] | None = None) -> str:
    """One sentence per GPU call: its date, commit, commands, GPU and how many jobs shared it."""
    calls = gpu_calls() if calls is None else calls
    if not calls:
        return ""
    items = []
    for c in calls:
        n = c["commands"]
        items.append(f"the {c['which']} GPU call ({', '.join(sorted(set(c['started'])))}, commit "
                     f"{', '.join(sorted(x[:7] for x in c['commits'])) or 'not recorded'}, {n} command{'s' if n != 1 else ''}) "
                     f"on one {c['gpu'] or 'GPU (not recorded)'}, "
                     + (f"up to {c['workers']} jobs at a time" if c["workers"] else "jobs at a time not recorded"))
    return f"The image model's GPU runs came from {len(calls)} GPU call{'s' if len(calls) > 1 else ''}: " + ("; ".join(items[:-1]) + "; and " if len(items) > 1 else "") + \
        items[-1] + " (each results file's `calls`)."


def costs_markdown() -> str:
    """The cost table of ``book/costs.md``: every row from a record in the repository (named in
    its last column), measured unless it says *estimate*."""
    rows = []  # (result, notebook, scale, hardware, wall time, record)
    e2e = _load_json(BENCH / "results" / "e2e.json")
    if e2e:
        m = e2e["machine"]
        hw = f"CPU: {m['cpu']}, {m['cores']} cores, {e2e['settings'].get('threads', 2)} threads"
        for r in e2e["results"]:
            parts = r.get("parts") or [{"experiment": r["experiment"], "wall_seconds": r["seconds"]}]
            for q in parts:
                studies = ", ".join(f"{k} {v:.0f} s" for k, v in (q.get("study_seconds") or {}).items())
                nb = EXPERIMENT_NOTEBOOK.get(q["experiment"], "-")
                rows.append((f"`python -m cnce run {q['experiment']}`" + (f" ({studies})" if studies else ""), nb, "paper",
                             hw, _h(q["wall_seconds"]), f"measured: `benchmarks/results/e2e.json`, commit {str(m['git_commit'])[:7]}"))
        rows.append(("the same experiments on a GPU", "02-05, 07", "paper", "GPU", "not measured",
                     "the fits are small; single fits are compared in `benchmarks/results/cuda-fit-check.json`"))
    book = _load_json(BOOK_TIMES)
    if book:
        m = book["machine"]
        for r in book["results"]:
            rows.append((f"the whole book, {r['experiment'].split('(')[-1].rstrip(')')} build (`scripts/book.sh`)", "all",
                         "quick", f"CPU: {m['cpu']}, {m['cores']} cores, 1 thread per notebook", _h(r["seconds"]),
                         f"measured: `benchmarks/results/e2e_book.json`, commit {str(m['git_commit'])[:7]}"))
    calls = gpu_calls()
    abl = _load_json(ABLATION)
    for name in ("paper", "paper-seed1", "paper-seed2"):
        p = _load_json(WEIGHTS / name / "provenance.json")
        if not p:
            continue
        secs = {k: float(v) for k, v in (p.get("wall_seconds_per_layer") or {}).items()}
        gpu = next((x.get("gpu") for x in p.get("sessions") or [] if x.get("gpu")), None)
        if not secs:
            continue
        call = next((c for c in calls if c["gpu"] == gpu and p.get("git_commit") in c["commits"]), None)
        per = ", ".join(f"layer {k} {_h(v)}" for k, v in sorted(secs.items()))
        rows.append((f"image model, four layers, the authors' recipe (`data/weights/{name}`: {per})", "06", "paper",
                     f"GPU: {gpu or 'not recorded'}" + (_shared(call) if call else ""), _h(sum(secs.values())),
                     f"measured: `data/weights/{name}/provenance.json`"
                     + (f" ({call['which']} GPU call)" if call else "")))
    for call in calls:
        rows += gpu_job_rows(call)
    demo = _load_json(WEIGHTS / "demo-d600-layer1" / "provenance.json")
    if demo and demo.get("wall_seconds_per_layer"):
        s1 = float(demo["wall_seconds_per_layer"].get("1", 0))
        thr = next((x.get("threads") for x in demo.get("sessions") or [] if x.get("threads")), None)
        rows.append((f"image model, layer 1 only, CPU-sized recipe ({demo['config'].get('optimizer')}, "
                     f"{demo['config']['n_patches'][0]} patches, {demo['meta_iterations_done'].get('1')} meta-iterations)",
                     "06", "demo", f"CPU: {demo.get('machine', 'x86_64')}, {thr or '?'} thread(s)", _h(s1),
                     "measured: `data/weights/demo-d600-layer1/provenance.json`"))
    est = image_cpu_estimate(abl)
    if est:
        m = est["cpu_machine"]
        hw = f"CPU: {m.get('cpu', 'x86_64')}, {m.get('cores', '?')} cores, 1 thread"
        rows.append((f"image model, layer 1, the authors' recipe (conjugate gradients): {est['evaluations_mean']:.1f} "
                     f"evaluations per meta-iteration (GPU runs: {est['evaluations_min']} to {est['evaluations_max']}) x "
                     f"{est['seconds_per_eval']:.0f} s per evaluation on {est['batch']} patches x {est['meta_iterations']} "
                     f"meta-iterations", "06", "paper", hw, f"**estimate** {_h(est['layer1_seconds'])}",
                     "`data/weights/ablation/results.json` (evaluations) and `benchmarks/results/images.json` (one "
                     f"evaluation measured on {est['subsample']} patches: {est['seconds_per_eval_measured']:.1f} s, scaled linearly)"))
        if est["model_seconds"] is not None:
            rows.append(("image model, all four layers, the authors' recipe: layer 1 and layers 2-4 in proportion to "
                         f"their floating-point operations (+{100 * est['other_layers_share']:.0f} %)", "06", "paper", hw,
                         f"**estimate** {_h(est['model_seconds'])}",
                         "the row above and `benchmarks/results/image_gpu_estimate.json` (`flops_per_layer`)"))
    if not rows:
        return "No run times are recorded in this checkout."
    out = ["| result | page | scale | hardware | wall time | record |", "|---|---|---|---|---|---|"]
    out += [f"| {' | '.join(str(c).replace('|', '/') for c in r)} |" for r in rows]
    calls = gpu_calls_markdown()
    return "\n".join(out + (["", calls] if calls else []))


def _cost_substitutions(app, config):
    """``cost_image_cpu_layer1_h`` and ``cost_image_cpu_model_h`` (hours, estimated by
    :func:`image_cpu_estimate`) and ``cost_image_gpu_min`` (minutes of the shown run's
    training on its GPU, measured), for the prose of the reproduce and cost pages."""
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    est = image_cpu_estimate()
    if est:
        subs["cost_image_cpu_layer1_h"] = f"{est['layer1_seconds'] / 3600:.1f}"
        if est["model_seconds"] is not None:
            subs["cost_image_cpu_model_h"] = f"{est['model_seconds'] / 3600:.1f}"
    p = _load_json(IMAGE_RUN)
    if p and p.get("wall_seconds_per_layer"):
        subs["cost_image_gpu_min"] = f"{sum(float(v) for v in p['wall_seconds_per_layer'].values()) / 60:.0f}"
    config.myst_substitutions = subs


AUTHORS_CHECKS = ROOT / "data" / "checks" / "authors-code"


def authors_code_summary(folder: Path = AUTHORS_CHECKS) -> dict | None:
    """What ``scripts/authors_code/run.sh`` recorded under GNU Octave: ``ring`` (their NCE on
    their ring model; per optimiser, the fits per N, the fewest and most fits over N whose
    error did not change, i.e. the fit did not move, and the median share of noise terms in the
    saturated branch of their NCE loss at the start) and ``ica`` (their ICA maximum
    likelihood; per N, the fits whose likelihood the refinement with the true gradient raised
    by more than :data:`ICA_GAP` nats per data point, and the fits in a wrong basin, squared
    error above 1, before and after the refinement), each with its provenance; ``None``
    without any record."""
    out = {}
    ring = folder / "ring"
    prov = _load_json(ring / "provenance.json")
    if prov:
        out["ring"] = {"provenance": prov}
        for alg in ("fminunc", "minimize"):
            d = _load_json(ring / f"ring-nce-{alg}.json")
            if not d:
                continue
            byN = {}
            for r in d["fits"]:
                same = abs(r["error_end"] - r["error_start"]) <= 1e-6 * max(1.0, abs(r["error_start"]))
                byN.setdefault(int(r["N"]), []).append(bool(same))
            sat = sorted(float(r["saturated_noise_share"]) for r in d["fits"])
            out["ring"][alg] = dict(per_N=len(next(iter(byN.values()))), Ns=sorted(byN),
                                    stuck_lo=min(sum(v) for v in byN.values()),
                                    stuck_hi=max(sum(v) for v in byN.values()),
                                    saturated_median=sat[len(sat) // 2], kappa=int(d["kappa"]))
    ica = folder / "ica"
    prov = _load_json(ica / "provenance.json")
    d = _load_json(ica / "ica-mle.json")
    if prov and d:
        byN = {}
        for r in d["fits"]:
            byN.setdefault(int(r["N"]), []).append(r)
        out["ica"] = {"provenance": prov, "per_N": {
            N: dict(fits=len(rs), short=sum(r["gap"] > ICA_GAP for r in rs),
                    wrong_theirs=sum(r["error_theirs"] > 1 for r in rs),
                    wrong_refined=sum(r["error_refined"] > 1 for r in rs)) for N, rs in sorted(byN.items())}}
    return out or None


#: Nats per data point by which the refinement must lower their ICA fit's mean negative
#: log-likelihood for the fit to count as stopped short of the optimum.
ICA_GAP = 1e-3


def _authors_code_substitutions(app, config):
    """``authors_ring_*`` and ``authors_ica_*`` numbers of the authors'-code page from
    :func:`authors_code_summary`."""
    a = authors_code_summary()
    if not a:
        return
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    ring = a.get("ring") or {}
    for alg in ("fminunc", "minimize"):
        if alg in ring:
            r = ring[alg]
            subs[f"authors_ring_{alg}_stuck_lo"] = str(r["stuck_lo"])
            subs[f"authors_ring_{alg}_stuck_hi"] = str(r["stuck_hi"])
            subs[f"authors_ring_{alg}_saturated_pct"] = f"{100 * r['saturated_median']:.0f}"
            subs["authors_ring_fits"] = str(r["per_N"])
            subs["authors_ring_kappa"] = str(r["kappa"])
            subs["authors_ring_N_lo"], subs["authors_ring_N_hi"] = str(r["Ns"][0]), str(r["Ns"][-1])
    if ring:
        subs["authors_ring_commit"] = str(ring["provenance"].get("project_commit", ""))[:7]
    ica = a.get("ica")
    if ica:
        for tag, N in (("lo", min(ica["per_N"])), ("hi", max(ica["per_N"]))):
            r = ica["per_N"][N]
            subs[f"authors_ica_N_{tag}"] = str(N)
            for k in ("fits", "short", "wrong_theirs", "wrong_refined"):
                subs[f"authors_ica_{k}_{tag}"] = str(r[k])
        subs["authors_ica_commit"] = str(ica["provenance"].get("project_commit", ""))[:7]
        subs["authors_ica_gap"] = f"{ICA_GAP:g}"
    commits = sorted({str(v["provenance"].get("project_commit", ""))[:7] for v in a.values()})
    subs["authors_code_commits"] = " and ".join(commits)
    config.myst_substitutions = subs


def _insert_costs(app, docname, source):
    if COSTS_MARK not in source[0]:
        return
    for f in (BENCH / "results" / "e2e.json", BOOK_TIMES, *(c[0] for c in GPU_CALLS), BENCH / "results" / "images.json",
              BENCH / "results" / "image_gpu_estimate.json", *WEIGHTS.glob("*/provenance.json")):
        app.env.note_dependency(str(f))
    source[0] = source[0].replace(COSTS_MARK, costs_markdown())


def notebook_times_html(times: dict) -> str:
    """``{docname: seconds}`` of this build's notebook executions as an HTML table (quick scale)."""
    import html as _html

    if not times:
        return "<p>This build recorded no notebook execution times (every notebook came from the cache).</p>"
    rows = "".join(f"<tr><td>{_html.escape(d.split('/')[-1])}</td><td>{_fmt_s(t)}</td></tr>" for d, t in sorted(times.items()))
    return ('<table class="table"><thead><tr><th>notebook (quick scale, CPU, one thread)</th><th>execution time in '
            f"this build</th></tr></thead><tbody>{rows}</tbody></table>")


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


# --- where the book comes from ----------------------------------------------------------------

#: The paper, for the links on "Fig. N" / "Supp. Fig. N" in every page's text.
PAPER_PDF = "https://proceedings.mlr.press/v80/ceylan18a/ceylan18a.pdf"
PAPER_PAGE = "https://proceedings.mlr.press/v80/ceylan18a.html"  # the paper and its supplementary material

#: The page of the 9-page PMLR PDF (proceedings pages 725-733) on which each figure of the main
#: text starts, where it has been established; a figure listed here gets ``#page=N`` on its link.
#: None is: we have the paper as text without its page breaks (the spec's markdown), and the
#: text extraction of the PDF that the project's search tool reaches (an ``object.cloud.sdsc.edu``
#: copy of the ICML 2018 papers) shows only its opening, in which the abstract, the start of
#: Section 1 and the first page's footnote ("Proceedings of the 35th International Conference
#: ...") come together: Section 1 starts on page 1 (checked 2026-11-27), which the bare link
#: opens anyway. Figures 1-6 and Sections 2-5 could not be placed on a page, so their links open
#: the PDF's first page, and the intro says so. Add a figure here only with the evidence.
PAPER_FIGURE_PAGES: dict[str, int] = {}


def paper_pdf_link(figure: str | None = None) -> str:
    """The PDF's address, with ``#page=N`` where :data:`PAPER_FIGURE_PAGES` holds the page of
    ``figure`` ("1", "2a", "2a-b": its number decides), else the bare address."""
    num = re.match(r"\d+", figure or "")
    page = PAPER_FIGURE_PAGES.get(num.group(0)) if num else None
    return f"{PAPER_PDF}#page={page}" if page else PAPER_PDF

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
    supplementary figures to the paper's page, which carries the supplementary PDF). A main-text
    figure whose page is established opens at that page (:func:`paper_pdf_link`)."""
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
                                f'{PAPER_PAGE if f.group(1).startswith("Supp") else paper_pdf_link(f.group(3))}">'
                                f"{f.group(0)}</a>", part))
    return "".join(out)


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def rerun_box(docname: str, quick_seconds: float | None = None, repo_url: str = "",
              sources: list[tuple[str, str]] | None = None) -> str:
    """The "rerun this page" box: the exact commands for this page and their measured times
    at quick and paper scale, on a CPU and a GPU, from the build's execution record
    (``quick_seconds``), ``benchmarks/results/e2e.json``, ``e2e_book.json`` and the image run's
    provenance. A time that no record holds is said to be unmeasured, never guessed.
    ``repo_url``: the repository's address (``_config.yml``; empty: the box names the sources
    that come with the book instead); ``sources``: ``(label, relative link)`` of this page's
    downloadable sources (:func:`source_links`)."""
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
        num = name.split("_")[0]  # "06", "06a": what cnce batch takes for this page alone
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
                         "two calls on one GPU, the second with --round l3-input (README); every job's recorded "
                         "time is in the cost table (book/costs)"))
            rows.append(("paper scale, CPU", ".venv/bin/python -m cnce image-train --config paper",
                         "not run on a CPU; estimated in the cost table (book/costs)"))
        elif name.startswith("06_"):  # the image runs' times are in their provenance files
            rows.append(("paper scale, GPU", "the GPU commands that the image page and the README give",
                         "in each committed run's provenance under data/weights/"))
        else:
            rows.append(("paper scale, CPU", f".venv/bin/python -m cnce batch {num} --scale paper",
                         "not measured (more simulations and data in every check)"))
    else:
        rows.append(("this page", "scripts/book.sh", book_t or "see the reproduce page"))
    items = "".join(f"<tr><td>{_html.escape(w)}</td><td><code>{_html.escape(c)}</code></td><td>{_html.escape(t)}</td></tr>"
                    for w, c, t in rows)
    where = (f'From a clone of <a href="{_html.escape(repo_url)}">the repository</a>' if repo_url else
             "From the book's sources (the archive linked below, unpacked)")
    up = "../" * docname.count("/")
    costs = f'<a href="{up}book/costs.html">the cost table</a>'
    src = ""
    if sources:
        src = ("<p>Sources of this page: " + " &middot; ".join(
            f'<a href="{_html.escape(href)}" download>{_html.escape(label)}</a>' for label, href in sources) + "</p>")
    return ('<div class="admonition cnce-rerun"><p class="admonition-title">Rerun this page</p>'
            f"<p>{where}, after <code>scripts/ensure-env.sh</code> (what each result costs, on a CPU "
            f"and a GPU: {costs}):</p>"
            f'<table class="cnce-rerun-table"><tbody>{items}</tbody></table>{src}</div>')


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
    repo = (app.config.html_theme_options or {}).get("repository_url") or ""
    if NOTEBOOK_TIMES_SLOT in body:
        times = {}
        try:
            from myst_nb.sphinx_ import NbMetadataCollector

            for d in sorted(app.env.found_docs):
                t = (NbMetadataCollector.get_exec_data(app.env, d) or {}).get("runtime")
                if d.startswith("notebooks/") and t:
                    times[d] = float(t)
        except Exception:  # pragma: no cover - another myst-nb
            times = {}
        body = body.replace(NOTEBOOK_TIMES_SLOT, notebook_times_html(times))
    context["body"] = link_figures(body) + rerun_box(pagename, quick, repo, source_links(app, pagename))


def _repo_substitutions(app, config):
    """``{{ repo_url }}`` from ``_config.yml``'s ``repository: url`` (the theme's source links)."""
    opts = getattr(config, "html_theme_options", None) or {}
    url = opts.get("repository_url") or ""
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    subs["repo_url"] = f"<{url}>" if url else "its address is not configured in this build"
    for key, path in (("link_bench_notes", "benchmarks/notes.md"), ("link_bench_summary", "benchmarks/results/SUMMARY.md")):
        subs[key] = f"[`{path}`]({url.rstrip('/')}/blob/main/{path})" if url else f"`{path}`"
    config.myst_substitutions = subs


def _repository_buttons(app, config):
    """No repository, issues or edit button while ``_config.yml``'s ``repository: url`` is
    empty: the book never links to an address nobody filled in."""
    opts = dict(getattr(config, "html_theme_options", None) or {})
    filled = bool((opts.get("repository_url") or "").strip())
    if not filled:
        opts["repository_url"] = ""
        for key in ("use_edit_page_button", "use_source_button"):
            opts[key] = False
    # _config.yml leaves these off (Jupyter Book refuses them without an address); on with one
    opts["use_repository_button"] = opts["use_issues_button"] = filled
    config.html_theme_options = opts


#: Where the built book keeps the sources it ships (under the HTML output folder).
DOWNLOADS = "downloads"
#: The archive of the package, notebooks, book, tests, scripts and committed results tables.
ARCHIVE = "cnce-source.zip"
#: What the archive holds (paths relative to the repository root); data/weights is left out (42 MB).
ARCHIVE_ROOTS = ("cnce", "companion", "notebooks", "book", "tests", "scripts", "examples", "benchmarks", "_static", "jupyter",
                 "data/results", "data/checks", "data/claims", "pyproject.toml", "requirements.in", "requirements-lock.txt",
                 "environment.yml", "README.md", "CONTRIBUTING.md", "_config.yml", "_toc.yml")


def _rel(href: str, pagename: str) -> str:
    import posixpath

    return posixpath.relpath(href, posixpath.dirname(pagename) or ".")


def source_links(app, pagename: str) -> list[tuple[str, str]]:
    """``(label, link relative to the page)`` for the page's own source, its executed notebook
    (notebooks only) and the source archive, as :func:`ship_sources` writes them."""
    if app is None or pagename not in getattr(app.env, "found_docs", ()):
        return []
    src = Path(app.env.doc2path(pagename))
    try:
        rel = src.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return []
    links = [(f"{src.name} (as written)", _rel(f"{DOWNLOADS}/{rel}", pagename))]
    if src.suffix in (".py", ".ipynb") and rel.startswith("notebooks/"):
        links.append((f"{src.stem}.ipynb (as executed for this book)", _rel(f"{DOWNLOADS}/{pagename}.ipynb", pagename)))
    links.append((f"{ARCHIVE} (the package and every page's source)", _rel(f"{DOWNLOADS}/{ARCHIVE}", pagename)))
    return links


def _archive_files(root: Path = ROOT) -> list[Path]:
    """The files of :data:`ARCHIVE_ROOTS`: those git tracks when ``root`` is a git checkout,
    else every file under them (caches and notebooks' checkpoints left out)."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *ARCHIVE_ROOTS], capture_output=True,
                             check=True, timeout=60).stdout.decode()
        files = [root / f for f in out.split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = []
        for r in ARCHIVE_ROOTS:
            p = root / r
            files += [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
    skip = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache")
    return sorted(f for f in files if f.is_file() and not any(k in f.parts for k in skip))


def _claims_code_files() -> list[str]:
    """The code files the claims ledger names (:func:`companion.claims.render.code_files`);
    none without a ledger."""
    try:
        from companion.claims import render

        return render.code_files()
    except ValueError:  # no ledger: the claims page fails the build with its own message
        return []


def ship_sources(app, exception):
    """After an HTML build: every page's source and every notebook as executed for the book
    under ``downloads/`` (same paths as in the repository), and :data:`ARCHIVE`."""
    import shutil
    import zipfile

    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    out = Path(app.outdir) / DOWNLOADS
    out.mkdir(parents=True, exist_ok=True)
    executed = Path(getattr(getattr(app.env, "mystnb_config", None), "output_folder", "") or
                    Path(app.outdir).parent / "jupyter_execute")
    for doc in sorted(app.env.found_docs):
        src = Path(app.env.doc2path(doc)).resolve()
        try:
            rel = src.relative_to(ROOT)
        except ValueError:
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out / rel)
        nb = executed / f"{doc}.ipynb"
        if nb.is_file():
            (out / f"{doc}.ipynb").parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(nb, out / f"{doc}.ipynb")
    for rel in _claims_code_files():  # the claims table links the code of every claim
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, out / rel)
    tmp = out / (ARCHIVE + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in _archive_files():
            z.write(f, Path("cnce-book-source") / f.relative_to(ROOT))
    tmp.replace(out / ARCHIVE)


def setup(app):
    app.connect("html-page-context", _page_additions, priority=800)
    app.connect("config-inited", _repo_substitutions)
    app.connect("config-inited", _repository_buttons)
    app.connect("build-finished", ship_sources)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("source-read", _insert_benchmarks)
    app.connect("source-read", _insert_book_times)
    app.connect("source-read", _insert_costs)
    app.connect("config-inited", _e2e_substitutions)
    app.connect("config-inited", _cost_substitutions)
    app.connect("config-inited", _authors_code_substitutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
