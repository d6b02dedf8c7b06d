"""The benchmark tables: :func:`render` writes the results of the benchmark suites
(``benchmarks/results/*.json``, see ``benchmarks/__init__.py``) as Markdown sections.

The book's speed page (``book/speed.md``) inserts them at build time (``book/_ext/cnce_book.py``,
without the hand-written notes and the development comparisons), and
``python -m benchmarks.summarize`` writes them with both into ``benchmarks/results/SUMMARY.md``.
In the package, not in ``benchmarks/``, because the book extension imports it like the rest of
``cnce``; ``benchmarks/`` holds the scripts that measure.
"""
from __future__ import annotations

import json

from .paths import REPO_ROOT

__all__ = ["RESULTS", "NOTES", "render", "e2e_totals"]

#: where the benchmark suites write their JSON files
RESULTS = REPO_ROOT / "benchmarks" / "results"
#: the hand-written notes on the measurements
NOTES = REPO_ROOT / "benchmarks" / "notes.md"


def _load(name):
    p = RESULTS / f"{name}.json"
    return json.loads(p.read_text()) if p.is_file() else None


def _machine(m):
    la = ", ".join(f"{x:.1f}" for x in m["load_average"])
    return (f"{m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; torch {m['torch']}, numpy {m['numpy']}, "
            f"{m['torch_threads']} torch thread(s); load average at start {la}; {m['date']}; commit {str(m['git_commit'])[:7]}")


def e2e_totals(e: dict) -> tuple[float, float]:
    """Seconds of the paper's experiments in ``e2e.json`` (every row but the eps experiment,
    which is beyond the paper) and the ICA study's compute seconds within them."""
    paper = ica = 0.0
    for r in e["results"]:
        if r["experiment"] == "eps":
            continue
        paper += r["seconds"]
        ica += sum((q.get("study_seconds") or {}).get("ica", 0.0) for q in r.get("parts") or [] if q["experiment"] != "eps")
    return paper, ica


def _image_row(r: dict) -> str:
    """A row of the image model's table: a timed run, or an estimate from one timed evaluation."""
    if r.get("estimated"):
        return (f"| {r['config']} | {r['n_patches']} | {r['K1']} | {r['optimizer']} | estimate: one loss + gradient on "
                f"{r['subsample']} patches, {r['seconds_per_eval_full']:.0f} s scaled to all | - | "
                f"{r['meta_iteration_s_low']:.0f}-{r['meta_iteration_s_high']:.0f} (11-20 evaluations) |")
    return (f"| {r['config']} | {r['n_patches']} | {r['K1']} | {r['optimizer']} | {r['meta_iterations']} | {r['wall_s']:.0f} | "
            f"{r['wall_s']/r['meta_iterations']:.0f} |")


def render(include_notes: bool = True, include_history: bool = True) -> str:
    """The summary as Markdown (level-2 sections), from the JSON files in ``results/``.

    ``include_history=False`` (the book) leaves out the development comparisons (the pass
    redesign, the heuristic with and without ``active_only`` or a prefix): they compare the
    code with its earlier versions, not what a user gets."""
    out = []
    ai = _load("allin")
    if ai:
        out += _section(
            "All in: what a user pays for `cnce.fit(model, x, \"cnce\", kappa=10)`", ai,
            ["**cnce**: one call with `eps=\"auto\"` and no noise base, one thread: it draws the noise "
             "(`cnce.noise.default_base`: one numpy SFC64 stream per simulation), runs the authors' eps heuristic on the "
             "compiled loss and fits all simulations in one batch. Its parts, each timed alone: the noise draw, the "
             "heuristic (the compiled backend's J, only for the simulations still searching) and the fit with the chosen eps. "
             "**Strong scipy loop**, per simulation: numpy noise (`default_rng().standard_normal`), the same heuristic "
             "(`cnce.eps.choose_eps` on a numpy J at the initial parameters), the features (Gaussian) or the noise points "
             "(ICA) built once, and `scipy.optimize.minimize(method=\"L-BFGS-B\")` with analytic gradients "
             f"(ftol {ai['settings']['allin_ftol']:g}, gtol 1e-10). Both start from the same initial parameters; they draw "
             "different noise, so the errors are compared as medians. Times in ms per simulation, medians over "
             f"{ai['settings']['repeats']} alternating repeats; the load average is the highest seen during the case."],
            ["model", "N", "S, cnce / loop", "cnce.fit, all in (noise + heuristic + fit)",
             "strong loop, all in (noise + heuristic + fit)", "speed-up, all in", "speed-up, fit only",
             "log10 median sq. error, cnce / loop", "load"],
            [f"| {r['model']} | {r['N']} | {r['S']} / {r['S_loop']} | {r['cnce_all_in_ms']:.1f} ({r['cnce_noise_ms']:.1f} + "
             f"{r['cnce_heuristic_ms']:.1f} + {r['cnce_fit_ms']:.1f}) | {r['loop_all_in_ms']:.1f} ({r['loop_noise_ms']:.1f} + "
             f"{r['loop_heuristic_ms']:.1f} + {r['loop_fit_ms']:.1f}) | **{r['speedup_all_in']:.1f}x** | {r['speedup_fit_only']:.1f}x | "
             f"{r['log10_median_err_cnce']:.2f} / {r['log10_median_err_loop']:.2f} | {max(x[0] for x in r['load_average']):.1f} |"
             for r in ai["results"]])
        frac = [(r["model"], r["N"], r["cnce_heuristic_ms"] / r["cnce_fit_ms"]) for r in ai["results"]]
        out += ["The eps heuristic costs cnce " + ", ".join(f"{f:.2f}" for _, _, f in frac) + " of the fit's time ("
                + ", ".join(f"{m} N = {n}" for m, n, _ in frac) + "; the parts' times above); the loop's heuristic, "
                + ", ".join(f"{r['loop_heuristic_ms'] / r['loop_fit_ms']:.2f}" for r in ai["results"]) + " of its fit's.", ""]
    nd = _load("noise-draw")
    if nd:
        out += _section(
            "Drawing the noise base", nd,
            ["`cnce.noise.draw_streams` (one numpy SFC64 stream per simulation; what `cnce.fit` draws when no base is "
             "given) against `torch.randn` of the same shape "
             f"({' x '.join(str(v) for v in nd['rows'][0]['shape'])} doubles), alternating in one process. "
             f"The 1- and 2-thread draws give {'the same' if nd['same_numbers_1_and_2_threads'] else 'DIFFERENT'} numbers."],
            ["way", "seconds", "ns per number", "speed-up over torch.randn"],
            [f"| {r['way']} | {r['seconds']:.3f} | {r['ns_per_number']:.1f} | {r['speedup_vs_torch_randn']:.2f}x |"
             for r in nd["rows"]])
    b = _load("batched")
    if b:
        out += ["## Batched `cnce.fit` against a per-simulation scipy loop", "", _machine(b["machine"]), "",
                "Both fit CNCE with the same data, noise base, initialisation and eps (from the authors' heuristic). "
                "The loop: per simulation, numpy features/projections and `scipy.optimize.minimize(method=\"L-BFGS-B\")` "
                f"with analytic gradients (ftol {b['settings']['scipy_ftol']:g}, gtol 1e-10). Times per simulation; "
                "errors compared on the simulations both ran.", "",
                "`cnce.fit` uses its default backend (`fused`: the compiled CPU kernels of `cnce/_fused.py`) with one "
                "thread; the torch backend (the batched tensor path, also what runs on a GPU) is timed beside it.", "",
                "| model | N | kappa | S, batched / loop | cnce.fit ms/sim: fit / with eps heuristic / torch backend | scipy loop ms/sim | speed-up: 1 thread / 2 threads / torch backend | median Newton iterations | error rel. diff to the loop, median / max |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in b["results"]:
            two = f"{r['speedup_2threads']:.1f}x" if r.get("speedup_2threads") else "-"
            tb = f"{1e3*r['torch_s_per_sim']:.1f}" if r.get("torch_s_per_sim") else "-"
            tsp = f"{r['speedup_torch_backend']:.1f}x" if r.get("speedup_torch_backend") else "-"
            out.append(f"| {r['model']} | {r['N']} | {r['kappa']} | {r['S']} / {r['S_naive']} | {1e3*r['batched_s_per_sim']:.1f} / "
                       f"{1e3*r['batched_auto_eps_s']/r['S']:.1f} / {tb} | {1e3*r['naive_s_per_sim']:.1f} | **{r['speedup']:.1f}x** / {two} / {tsp} | "
                       f"{r['batched_iters_median']:.0f} | {r['err_rel_diff_median']:.1e} / {r['err_rel_diff_max']:.1e} |")
        out.append("")
        for extra in sorted(RESULTS.glob("batched_*.json")):  # extra runs (e.g. fewer simulations), same columns
            e = json.loads(extra.read_text())
            st = e["settings"]
            out += [f"Extra run `{extra.name}` ({st['sims']} simulations batched, {st['naive_sims']} in the loop, "
                    f"{st['repeats']} repeat(s)): {_machine(e['machine'])}", ""]
            for r in e["results"]:
                two = f"{r['speedup_2threads']:.1f}x" if r.get("speedup_2threads") else "-"
                out.append(f"- {r['model']}, N = {r['N']}, kappa = {r['kappa']}: cnce.fit {1e3*r['batched_s_per_sim']:.1f} ms/sim, "
                           f"scipy loop {1e3*r['naive_s_per_sim']:.1f} ms/sim: **{r['speedup']:.1f}x** (1 thread), {two} (2 threads); "
                           f"median squared error {r['err_median_batched']:.2e} against the loop's {r['err_median_naive']:.2e}, "
                           f"relative differences median {r['err_rel_diff_median']:.1e}, max {r['err_rel_diff_max']:.1e}")
            out.append("")
    t = _load("throughput")
    if t:
        bw = t["results"]["bandwidth"]
        out += _section(
            "Loss + gradient throughput", t,
            [f"Memory bandwidth measured in the same run ({bw['buffer_MiB']} MiB float32 buffers, one thread): "
             f"read (sum) {bw['read_GBps']:.2f} GB/s, copy (read + write) {bw['copy_GBps']:.2f} GB/s at the start; the bound in the "
             "table is the median of read probes taken right before each timed evaluation. "
             "Inputs streamed per pass: fused kernels, the data and, in float64, the noise steps `eps xi` laid out once per "
             "simulation (Gaussian) or the noise base (ICA), with the features formed on the fly; the features "
             "`F (S, 15, n)` in float32 (torch backend, Gaussian); data and noise points in float64 (torch backend, ICA)."],
            ["model", "backend", "S", "N", "kappa", "seconds", "M pairs/s", "ns per pair", "input GB", "effective GB/s",
             "x the read bound"],
            [f"| {r['model']} | {r.get('backend', 'torch')} | {r['S']} | {r['N']} | {r['kappa']} | {r['seconds']:.2f} | "
             f"{r['points_per_s']/1e6:.1f} | {1e9/r['points_per_s']:.1f} | {r['input_GB']:.2f} | {r['effective_GBps']:.2f} | "
             f"**{r['ratio_to_bound']:.1f}x** |" for r in t["results"]["rows"]])
    e = _load("e2e")
    if e:
        out += ["## End to end", "", _machine(e["machine"]), "",
                "Wall time of `python -m cnce run <experiment> --scale paper`, the experiments one after the other into one "
                "results folder that is empty at the start "
                "(cells that two figures share run once; `all`: every synthetic experiment in one process).", "",
                "| experiment | scale | threads | seconds | exit code | note |", "|---|---|---|---|---|---|"]
        for r in e["results"]:
            rc = "-" if r["returncode"] is None else r["returncode"]
            note = r.get("note", "")
            if r.get("parts") and len(r["parts"]) > 1:  # `run all`: each experiment's share (shared cells run once)
                note = (note + " " if note else "") + "; ".join(f"{q['experiment']} {q['wall_seconds']:.0f} s ({q['cells_run']} cells)"
                                                                 for q in r["parts"])
            studies = {k: v for q in r.get("parts") or [] for k, v in (q.get("study_seconds") or {}).items()}
            if studies:  # compute seconds per study (from the provenance files)
                note = (note + "; " if note else "") + ", ".join(f"{k} {v:.0f} s" for k, v in studies.items())
            out.append(f"| {r['experiment']} | {r['scale']} | {r.get('threads', e['settings'].get('threads', '-'))} | "
                       f"{r['seconds']:.0f} | {rc} | {note} |")
        paper, ica = e2e_totals(e)
        if len(e["results"]) > 1 and ica:
            out.append(f"| the paper's experiments | | | **{paper:.0f}** | | ICA {ica:.0f} s ({100 * ica / paper:.0f} %) |")
        out.append("")
    im = _load("images")
    if im:
        out += _section(
            "Image model, first layer (CPU)", im, [],
            ["config", "patches", "K1", "optimiser", "meta-iterations timed", "wall seconds", "seconds per meta-iteration"],
            [_image_row(r) for r in im["results"]])
    if include_notes and NOTES.is_file():
        out += [NOTES.read_text()]
    if include_history:
        out += _history()
    return "\n".join(out) + "\n"


def _section(title: str, data: dict, text: list[str], header: list[str], lines: list[str]) -> list[str]:
    """One level-2 section: ``title``, the machine ``data`` ran on, the paragraphs ``text`` and
    a table with the column names ``header`` and the rows ``lines``."""
    return [f"## {title}", "", _machine(data["machine"]), "", *(q for t in text for q in (t, "")),
            "| " + " | ".join(header) + " |", "|" + "---|" * len(header), *lines, ""]


def _yes(flag) -> str:
    return "yes" if flag else "no"


def _passes(what: str):
    """The text of a comparison of the compiled passes with the module before a change (``what``)."""
    return lambda rp: [
        f"{what} against the module before it (`benchmarks/old_vs_new_passes.py`, removed after commit 66a53af, "
        f"which holds it) ({rp['old']}), alternating in one process, one thread; one pass at N = 20000, and "
        "`newton_all` end to end. Below 1: the new code is faster. The passes sum with reassociation, so their "
        "last bit depends on how the compiler vectorised them; \"bitwise equal\" compares loss, gradient and "
        "Gauss-Newton matrix (passes) or the estimates (`newton_all`), and the last column gives the loss's or "
        "the estimates' largest relative difference."]


def _pass_rows(rp: dict) -> list[str]:
    return [f"| {r['kernel']} | {r['what']} | {r['old_ms']:.2f} | {r['new_ms']:.2f} | {r['new_over_old']:.2f} | "
            f"{_yes(r['bitwise_equal'])} | {r.get('loss_rel_diff', r.get('psi_max_rel_diff', 0.0)):.1e} |" for r in rp["rows"]]


_PASS_COLUMNS = ["kernel", "what", "old ms", "new ms", "new / old", "bitwise equal", "rel. difference"]


#: The development comparisons of :func:`_history`: (result file, title, text(data), columns,
#: rows(data)).
def _against_commit(name: str, title: str) -> tuple:
    """A history section of ``benchmarks/against_commit.py``'s result file ``name``."""
    return (name, title,
            lambda ac: [f"`python -m benchmarks.against_commit {ac['old']}`: the package at that commit and the working "
                        f"tree, imported side by side in one process; the same problems, one thread, alternating (each "
                        f"side first in every other repeat), median of {ac['repeats']} repeats after a warm-up. Below 1: "
                        f"the new code is faster."],
            ["case", "backend", "S", "N", "kappa", "eps", "old s", "new s", "new / old", "estimates bitwise equal",
             "eps bitwise equal"],
            lambda ac: [f"| {r['case']} | {r['backend']} | {r['S']} | {r['N']} | {r['kappa'] or '-'} | {r['eps']} | "
                        f"{r['old_s']:.3f} | {r['new_s']:.3f} | {r['new_over_old']:.2f} | "
                        f"{'yes' if r['theta_bitwise_equal'] else 'no (%.0e)' % r['theta_max_rel']} | "
                        f"{_yes(r['eps_bitwise_equal'])} |" for r in ac["rows"]])


_HISTORY = (
    ("eps-active", "The eps heuristic, evaluating only the simulations still searching",
     lambda ea: ["The authors' rule steps until the slowest simulation stops; most stop after one or two evaluations of J. "
                 "With `active_only` (what the compiled backend uses) J is evaluated only for the simulations still "
                 "searching. The chosen eps is the same; times per simulation on the compiled loss, one thread, "
                 "both variants side by side in one process."],
     ["model", "S", "N", "kappa", "same eps", "J evaluations, all / active only", "heuristic ms/sim, all / active only",
      "speed-up", "heuristic / fit, all / active only"],
     lambda ea: [f"| {r['model']} | {r['S']} | {r['N']} | {r['kappa']} | {_yes(r['same_eps'])} | "
                 f"{r['evaluations_full']} / {r['evaluations_active_only']} | {r['heuristic_full_ms_per_sim']:.1f} / "
                 f"{r['heuristic_active_only_ms_per_sim']:.1f} | **{r['speedup']:.1f}x** | "
                 f"{r['heuristic_over_fit_full']:.2f} / {r['heuristic_over_fit_active_only']:.2f} |" for r in ea["rows"]]),
    ("eps-prefix", "The eps heuristic decided on a prefix of the data (off by default)",
     lambda ep: ["`FitOptions(eps_prefix=k, eps_margin=c)`: the steps of the authors' rule are decided on J of the first "
                 "N / k points; a step whose prefix J is within c / sqrt(prefix pairs) of a threshold is decided on all "
                 "points; the eps reached is confirmed on all points (and the rule resumes there where it does not stop). "
                 "Against the rule on all points (`eps_prefix=1`, the default), compiled loss, one thread, "
                 "alternating in one process. *differ*: simulations whose eps is not the all-points rule's. "
                 "Below 64 prefix points the prefix is not used."],
     ["model", "S", "N", "eps_prefix", "eps_margin", "differ", "J evaluations, all points / prefix", "heuristic ms/sim",
      "speed-up"],
     lambda ep: [f"| {r['model']} | {r['S']} | {r['N']} | {v['eps_prefix']} | {v['eps_margin']:g} | {v['differ']} | "
                 f"{v['evaluations_all']} / {v['evaluations_prefix']} | {v['ms_per_sim']:.2f} | {v['speedup_vs_all_points']:.2f}x |"
                 for r in ep["rows"] for v in r["variants"]]),
    ("ica-passes", "ICA fits: passes over the data, and two attempts at fewer",
     lambda ip: ["`benchmarks/ica_passes.py`: compiled kernels, one thread, medians per simulation. Passes as counted by "
                 "the kernels (`FitResult.info[\"passes\"]`); the cost of one pass of each kind timed alone at the same size "
                 "(ms: loss only / with gradient / with Gauss-Newton matrix); *accounted* = passes x cost. Variants: "
                 "a Gauss-Newton subsample of 8192 pairs instead of 32768; warm-started subsampled stages. Final loss "
                 "against the default's (largest increase / decrease)."],
     ["method", "N", "variant", "ms/sim", "iterations", "loss-only passes", "Gauss-Newton passes", "pass ms",
      "accounted ms", "loss - default", "log10 median sq. error"],
     lambda ip: [f"| {r['method']} | {r['N']} | {r['variant']} | {r['ms_per_sim']:.1f} | {r['iterations_median']:.0f} | "
                 f"{r['passes_loss']:.1f} | {r['passes_gauss_newton']:.1f} | {r['pass_ms']['loss']:.2f} / "
                 f"{r['pass_ms']['gradient']:.2f} / {r['pass_ms']['gauss_newton']:.2f} | {r['accounted_ms']:.0f} | "
                 f"{r['loss_minus_default_max']:+.1e} / {r['loss_minus_default_min']:+.1e} | {r['log10_median_err']:.3f} |"
                 for r in ip["rows"]]),
    _against_commit("issue26-against-66a53af", "`cnce.fit` after the settled plan (issue 26) against the commit before"),
    _against_commit("issue38-against-6acfba7-final",
                    "`cnce.fit` after one eps resolver, validation and provenance for every front door (issue 38) "
                    "against the commit before"),
    ("loss-only", "The eps heuristic's loss-only pass",
     lambda lo: ["`benchmarks/loss_only.py`: `cnce._fused.loss_all` (what the compiled heuristic evaluates) against the module "
                 f"before the change ({lo['old']}), one thread, alternating, 9 repeats, ms per simulation."],
     ["kernel", "N", "kappa", "old ms", "new ms", "speed-up", "bitwise equal", "largest rel. difference"],
     lambda lo: [f"| {r['kernel']} | {r['N']} | {r['kappa']} | {r['old_ms_per_sim']:.2f} | {r['new_ms_per_sim']:.2f} | "
                 f"{r['old_over_new']:.2f}x | {_yes(r['bitwise_equal'])} | {r['max_rel_diff']:.1e} |" for r in lo["rows"]]),
    ("ica-mle-stop", "ICA maximum likelihood: an earlier stop (not adopted)",
     lambda ms: ["`benchmarks/ica_mle_stop.py` (removed after commit 66a53af, which holds it): the compiled L-BFGS with its "
                 "default stop against the statistical stop of the ICA CNCE and NCE fits (`stat_ftol * n_params / N`), same "
                 "problems, one thread, alternating. Changes are against the default's estimates."],
     ["N", "S", "stop", "ms/sim", "iterations", "loss - default, largest", "sq. error, largest rel. change",
      "median sq. error, rel. change"],
     lambda ms: [f"| {r['N']} | {r['S']} | {r['variant']} | {r['ms_per_sim']:.1f} | {r['iterations_median']:.0f} | "
                 f"{r['loss_minus_default_max']:.1e} | {r['sq_error_max_rel_change']:.3f} | {r['median_sq_error_rel_change']:.4f} |"
                 for r in ms["rows"]]),
    ("ica-kink-prototype", "ICA CNCE: curvature at the kinks (prototype, not adopted)",
     lambda kp: ["`benchmarks/ica_kink_prototype.py` (numpy; removed after commit 66a53af, which holds it): damped Newton "
                 "with the Gauss-Newton matrix alone or with a box-kernel estimate of the curvature at the kinks of `|b . u|`; "
                 "the kernels' line search and statistical stop. The compiled fit on the same problems: iterations "
                 f"{kp['compiled_iterations']}, log10 median squared error {kp['compiled_log10_median_err']:.3f}."],
     ["variant", "S", "N", "iterations (mean)", "line-search trials (mean)", "loss - compiled fit's (max / min)",
      "log10 median sq. error"],
     lambda kp: [f"| {r['variant']} | {r['S']} | {r['N']} | {r['iterations_mean']:.1f} | {r['line_search_trials_mean']:.1f} | "
                 f"{r['loss_minus_compiled_max']:+.1e} / {r['loss_minus_compiled_min']:+.1e} | {r['log10_median_err']:.3f} |"
                 for r in kp["rows"]]),
    ("gn-tiles-passes", "Compiled kernels: Gauss-Newton sums in tiles",
     _passes("The Gauss-Newton sums in 3 x 3 tiles for every kernel with at least 3 parameters, ICA's data projections "
             "once per data point and a loss-only ICA pass without the sign writes (issue 17)"),
     _PASS_COLUMNS, _pass_rows),
    ("redesign-passes", "Compiled kernels: one pass driver against the hand-written passes",
     _passes("The redesign of `cnce/_fused.py` (one driver over per-model block kernels)"), _PASS_COLUMNS, _pass_rows),
)


def _history() -> list[str]:
    """The development comparisons: the code against its earlier versions and attempts that were
    measured and not adopted (``SUMMARY.md`` only; the book shows what a user gets)."""
    out = []
    for name, title, text, header, rows in _HISTORY:
        data = _load(name)
        if data:
            out += _section(title, data, text(data), header, rows(data))
    return out
