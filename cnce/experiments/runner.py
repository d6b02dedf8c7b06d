"""Run the configured experiments: one batched :func:`cnce.fit` per cell, resumable.

For each study (a model with its data generator) the runner draws, once, from generators
whose seeds derive from the experiment seed:

* ``truth``: the ground-truth parameters of the ``S`` simulations (and, for the ring model,
  the known radius ``mu``);
* ``init``:  one initialisation per simulation, shared by every method, ``N`` and ``kappa``;
* ``data``:  ``S`` data sets of the scale's largest size ``N_max``; a cell with ``N`` data
  points uses the prefix ``x[:, :N]``;
* ``noise``: a noise base (:func:`cnce.noise.draw_base`) per simulation, drawn one column
  ``j = 0, 1, ...`` at a time from its own generator, so that the base of a cell,
  ``[:, :N, :kappa]``, is a prefix of a single base that is never held in memory whole.
  CNCE and NCE read the same numbers (the paper's "one noise base per simulation, reused
  across N and kappa").

Seeds depend on the experiment seed and the study's model family (the data seed also on
the study's name, or on ``Study.data_of``), never on the order in which cells run: a cell's results are the same
whether it ran first, last, or after an interruption. The two ring studies share truth,
initialisation and noise and differ only in their data.

Each cell is one call ``cnce.fit(model, x[:, :N], method, kappa, noise_base=...)`` with all
``S`` simulations batched. A cell of the eps experiment at ``"x<f>"`` fits at the fixed eps
``f * eps_h``, with ``eps_h`` the heuristic's eps of each simulation as stored by the
heuristic's cell of the same ``N`` and ``kappa`` (computed first), and with the same noise
base: the noise is ``x + eps * xi`` with the same ``xi`` at every eps. Each study is a
:class:`cnce.jobs.Job` (:meth:`~cnce.experiments.store.ResultStore.job`): its lock is held while its
cells run (a second process waits), and after each cell its table, the job's checkpoint, is
rewritten atomically, so an interrupted run resumes where it stopped.
"""
from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..errors import IncompleteResultsError, InputError, MissingProvenanceError, RunInterrupted, WrongScaleError
from ..jobs import Job, interruptible, interrupts_held
from ..provenance import derive_seed, environment_record, generator, package_source_hash  # noqa: F401 (re-exported)
from .configs import EPS_RULES, PILOT_RULES, KAPPA_METHODS, STUDIES, Cell, ExperimentConfig, Study, eps_factor, get_config
from .store import CELL_KEYS, ResultStore, default_results_dir

__all__ = [
    "DRAW_SCHEME",
    "derive_seed",
    "StudyProblem",
    "build_problem",
    "run",
    "run_cell",
    "missing_cells",
    "load_results",
    "ensure",
    "provenance_table",
    "environment_record",
]

#: Version of the way truth, data and noise are drawn from the seeds; stored in the
#: provenance so that results drawn differently are never mixed in one table.
DRAW_SCHEME = 1


_generator = generator


# ---------------------------------------------------------------------------- models
def _build_model(family: str, S: int, seed: int, **model_kwargs):
    """The study's model from the one registry (:func:`cnce.models.model_class`); per-simulation
    constants (the ring's radii) come from a generator seeded by the family."""
    from ..models import model_class

    cls = model_class(family)
    return cls.build(S, generator=_generator(seed, family, "mu"), **model_kwargs)


def _draw_base(model, S, N, kappa, generator):
    from ..noise import draw_base

    return draw_base(model, S, N, kappa, generator=generator)


@dataclass
class StudyProblem:
    """Everything a study's cells share: model, truth, initialisation, data, noise columns."""

    study: Study
    seed: int
    n_sims: int
    N_max: int
    model: object
    theta_true: torch.Tensor
    theta0: torch.Tensor
    x: torch.Tensor
    _noise_cols: list = field(default_factory=list, repr=False)
    draw_base: object = field(default=None, repr=False)
    #: ``{(N, kappa): (S,) tensor}``: the heuristic's eps of each simulation, as stored
    heuristic_eps: dict = field(default_factory=dict, repr=False)

    def heuristic(self, N: int, kappa: int) -> torch.Tensor:
        try:
            return self.heuristic_eps[(N, kappa)]
        except KeyError:
            raise InputError(f"the heuristic's cell of study {self.study.name!r} at N = {N}, kappa = {kappa} must be "
                             "stored before its fixed-eps cells (Cell.sort_key runs it first)") from None

    def remember_eps(self, df: pd.DataFrame) -> None:
        """Take the heuristic's eps per simulation from stored rows (CNCE, eps setting "default")."""
        rows = df[(df["method"] == "cnce") & (df["eps_setting"] == "default")]
        for (N, kappa), g in rows.groupby(["N", "kappa"]):
            g = g.sort_values("sim")
            if len(g) == self.n_sims:
                # rounded as the store writes them (9 digits), so a resumed run reads the same numbers
                eps = [float(f"{v:.9g}") for v in g["eps"].to_numpy(float)]
                self.heuristic_eps[(int(N), int(kappa))] = torch.tensor(eps, dtype=torch.float64)

    def data(self, N: int) -> torch.Tensor:
        if N > self.N_max:
            raise InputError(f"N must be <= N_max = {self.N_max}; got {N}")
        return self.x[:, :N].contiguous()

    def noise_base(self, N: int, kappa: int) -> torch.Tensor:
        """``(S, N, kappa, D)``: the prefix of the study's noise base (columns drawn lazily)."""
        draw = self.draw_base or _draw_base
        while len(self._noise_cols) < kappa:
            j = len(self._noise_cols)
            g = _generator(self.seed, self.study.family, "noise", j)
            col = draw(self.model, self.n_sims, self.N_max, 1, g)
            self._noise_cols.append(col)
        return torch.cat([c[:, :N] for c in self._noise_cols[:kappa]], dim=2)


def build_problem(study: str | Study, n_sims: int, N_max: int, seed: int = 0, *, draw_base=None) -> StudyProblem:
    """Draw a study's truth, initialisation and data (noise is drawn lazily per column)."""
    st = STUDIES[study] if isinstance(study, str) else study
    try:
        model = _build_model(st.family, n_sims, seed, **dict(st.model_kwargs))
    except ValueError as exc:
        if "model must be one of" in str(exc):
            raise InputError(f"study.family: {exc}") from None
        raise
    theta_true = model.random_params(n_sims, generator=_generator(seed, st.family, "truth"))
    theta0 = model.init_params(n_sims, generator=_generator(seed, st.family, "init"))
    x = model.sample(theta_true, N_max, generator=_generator(seed, st.data_of or st.name, "data"), **dict(st.sample_kwargs))
    return StudyProblem(st, seed, n_sims, N_max, model, theta_true, theta0, x, draw_base=draw_base)


def _np(t) -> np.ndarray:
    if t is None:
        return None
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu").double().numpy() if t.is_floating_point() else t.detach().to("cpu").numpy()
    return np.asarray(t)


def _col(res, name, S, fill=np.nan):
    v = getattr(res, name, None)
    if v is None:
        return np.full(S, fill)
    a = _np(v)
    return np.broadcast_to(a, (S,)) if a.ndim == 0 else a


def run_cell(problem: StudyProblem, cell: Cell, *, fit=None, device="cpu") -> pd.DataFrame:
    """Fit one cell (all simulations batched) and return its rows of the tidy table."""
    if fit is None:
        from .. import fit
    S = problem.n_sims
    x = problem.data(cell.N)
    kw = dict(method=cell.method, seed=derive_seed(problem.seed, problem.study.name, "fit", cell.method, cell.N, cell.kappa),
              theta0=problem.theta0, device=device, progress=False)
    if cell.method in KAPPA_METHODS:
        kw["kappa"] = cell.kappa
        kw["noise_base"] = problem.noise_base(cell.N, cell.kappa)
    setting = cell.eps_setting
    eps_factor(cell.eps)  # a rule the eps experiment measures
    if cell.method == "cnce":
        kw["eps"] = "auto" if problem.study.cnce_eps is None else float(problem.study.cnce_eps)
        if setting.factor is not None:
            kw["eps"] = setting.factor * problem.heuristic(cell.N, cell.kappa)
    elif not setting.is_default:
        raise InputError(f"cell.eps must be 'default' for method {cell.method!r}; got {cell.eps!r}")
    t0 = time.perf_counter()
    if setting.rule is not None:
        res = _fit_rule(fit, problem.model, x, kw, setting.rule)
    else:
        res = fit(problem.model, x, **kw)
    seconds = time.perf_counter() - t0
    theta_hat = res.theta.detach().to(problem.theta_true.device)
    err = _np(problem.model.error(theta_hat, problem.theta_true))
    return pd.DataFrame(
        {
            "study": problem.study.name,
            "model": getattr(problem.model, "name", problem.study.family),
            "method": cell.method,
            "N": cell.N,
            "kappa": pd.array([cell.kappa] * S, dtype="Int64"),
            "sim": np.arange(S),
            "error": err,
            "eps": _col(res, "eps", S),
            "loss": _col(res, "loss", S),
            "init_loss": _col(res, "init_loss", S),
            "iterations": _col(res, "n_iter", S, fill=-1).astype(np.int64),
            "converged": _col(res, "converged", S, fill=False).astype(bool),
            "grad_norm": _col(res, "grad_norm", S),
            "theta_true_0": _np(problem.theta_true[:, 0]),
            "theta_hat_0": _np(theta_hat[:, 0]),
            "seconds": seconds / S,
            "cell_seconds": seconds,
            "eps_setting": cell.eps,
        }
    )


def _fit_rule(fit, model, x, kw, name: str):
    """A fit with eps from the rule ``name`` of :data:`~cnce.experiments.configs.EPS_RULES`."""
    kw = dict(kw)
    if name in PILOT_RULES:
        # stage 1: the heuristic at the initial parameters (the default cell's fit); stage 2: the
        # heuristic's search rerun with J at that estimate, and the fit restarted from it
        pilot = fit(model, x, **kw)
        kw.update(theta0=pilot.theta.detach(), eps="auto")
        res = fit(model, x, **kw)
        res.n_iter = res.n_iter + pilot.n_iter
        return res
    kw["eps"] = "auto"
    return fit(model, x, eps_rule=EPS_RULES[name], **kw)


# ---------------------------------------------------------------------------- provenance
def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _load_average():
    """The machine's 1, 5 and 15 minute load averages (None where the OS does not say): a wall time
    on a shared machine means little without them."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return None


def _check_provenance(prov: dict | None, config: ExperimentConfig, study: str, path: Path,
                      store: ResultStore | None = None) -> None:
    """Refuse a table of other settings (:class:`~cnce.errors.WrongScaleError`) and a table
    without its provenance record (:class:`~cnce.errors.MissingProvenanceError`): neither is
    adopted. Neither message suggests deleting the table: it is valid for its own settings."""
    if prov is None:
        table = path.with_name(f"{study}.csv")
        if store is not None and table.exists() and table.stat().st_size > 0:
            raise MissingProvenanceError(
                f"results table {table} has no provenance record ({path.name} is missing), so what computed it (seed, "
                f"sizes, draw scheme, code) is unknown and it is not adopted; restore {path.name} (e.g. `git checkout -- "
                f"{path}` for a committed table) or run into another folder with --results-dir (results_dir=...)")
        return
    want = {"seed": config.seed, "n_sims": config.n_sims, "N_max": config.N_max, "draw_scheme": DRAW_SCHEME}
    for k, v in want.items():
        if prov.get(k) != v:
            raise WrongScaleError(
                f"results for study {study!r} in {path.parent} were computed with {k} = {prov.get(k)!r} "
                f"(scale {prov.get('scale')!r}), but this run asks for {k} = {v!r} (scale {config.scale!r}); they are "
                f"valid results of their own settings and are kept: write this run into another folder with "
                f"--results-dir (results_dir=...), e.g. the default data/results/{config.scale}"
                f"{'' if config.seed == 0 else f'-seed{config.seed}'}"
            )


# ---------------------------------------------------------------------------- running
def _resolve(name_or_config, scale, seed) -> ExperimentConfig:
    if isinstance(name_or_config, ExperimentConfig):
        return name_or_config
    return get_config(name_or_config, scale, seed)


def missing_cells(config: ExperimentConfig, store: ResultStore) -> list[Cell]:
    """The cells of ``config`` that ``store`` does not hold yet."""
    out = []
    for study in config.studies:
        done = store.done_cells(study, n_sims=config.n_sims)
        out += [c for c in config.cells_of(study) if c.key() not in done]
    return out


def run(name: str | ExperimentConfig, scale: str = "quick", seed: int = 0, *, results_dir: str | os.PathLike | None = None,
        device: str = "cpu", progress: bool = True, fit=None, draw_base=None,
        studies: tuple[str, ...] | list[str] | None = None) -> dict:
    """Compute the cells of experiment ``name`` at ``scale`` that are not stored yet.

    ``studies`` restricts the run to some of the experiment's studies (e.g. ``["gaussian"]``).

    Returns a summary ``{"experiment", "scale", "seed", "results_dir", "cells_total",
    "cells_run", "wall_seconds"}``. ``fit`` and ``draw_base`` replace :func:`cnce.fit` and
    :func:`cnce.noise.draw_base` (for tests).
    """
    config = _resolve(name, scale, seed)
    if studies is not None:
        bad = [s for s in studies if s not in config.studies]
        if bad:
            raise InputError(f"studies must be among {list(config.studies)} for experiment {config.name!r}; got {bad}")
        config = ExperimentConfig(**{**config.__dict__, "studies": tuple(s for s in config.studies if s in studies),
                                     "cells": tuple(c for c in config.cells if c.study in studies)})
    store = ResultStore(results_dir if results_dir is not None else default_results_dir(config.scale, config.seed))
    t_start = time.perf_counter()
    todo = missing_cells(config, store)
    for study in config.studies:
        _check_provenance(store.read_provenance(study), config, study, store.provenance_path(study), store)
    env = environment_record(device) if todo else None
    bar = Job.bar(len(todo), desc=f"{config.name} ({config.scale})", unit="cell", enabled=progress and bool(todo))
    n_run = 0
    try:
        for study in config.studies:
            if not any(c.study == study for c in todo):
                continue
            with store.job(study, n_sims=config.n_sims) as job:
                # another process may have stored some of these cells while we waited
                done = store.done_cells(study, n_sims=config.n_sims)
                cells = [c for c in todo if c.study == study and c.key() not in done]
                if bar is not None and len(cells) < sum(c.study == study for c in todo):
                    bar.update(sum(c.study == study for c in todo) - len(cells))
                if cells:
                    n_run += _run_study(config, store, job, study, cells, env, bar, fit, draw_base, device)
    finally:
        if bar is not None:
            bar.close()
    return {
        "experiment": config.name,
        "scale": config.scale,
        "seed": config.seed,
        "results_dir": str(store.root),
        "cells_total": len(config.cells),
        "cells_run": n_run,
        "wall_seconds": round(time.perf_counter() - t_start, 3),
    }


def _run_study(config, store, job, study, cells, env, bar, fit, draw_base, device) -> int:
    """Compute ``cells`` of one study (its :class:`cnce.jobs.Job` ``job`` held), appending each to
    the store; returns how many ran."""
    n_run = 0
    prov = store.read_provenance(study) or {
        "study": study,
        "scale": config.scale,
        "seed": config.seed,
        "n_sims": config.n_sims,
        "N_max": config.N_max,
        "draw_scheme": DRAW_SCHEME,
        "study_config": {"family": STUDIES[study].family if study in STUDIES else None,
                         "model_kwargs": dict(STUDIES[study].model_kwargs) if study in STUDIES else None,
                         "sample_kwargs": dict(STUDIES[study].sample_kwargs) if study in STUDIES else None,
                         **({"data_of": STUDIES[study].data_of} if study in STUDIES and STUDIES[study].data_of else {}),
                         **({"cnce_eps": STUDIES[study].cnce_eps} if study in STUDIES and STUDIES[study].cnce_eps is not None else {})},
        "runs": [],
    }
    entry = {"experiment": config.name, "started": _now(), "finished": None, "status": "running",
             "cells_computed": 0, "compute_seconds": 0.0, "wall_seconds": 0.0, **env,
             "load_average_start": _load_average(), "load_average_end": None}
    prov["runs"].append(entry)
    # recorded before the first cell is stored: a table never exists without its provenance, even
    # after SIGKILL between the two writes (a table without one is refused, not adopted)
    store.write_provenance(study, prov)
    t_study = time.perf_counter()
    if bar is not None:
        bar.set_postfix_str(f"{study}: drawing data")
    problem = build_problem(study, config.n_sims, config.N_max, config.seed, draw_base=draw_base)
    problem.remember_eps(job.load(store.empty))  # resume: the heuristic's eps as stored
    try:
        for cell in cells:
            if bar is not None:
                bar.set_postfix_str(str(cell))
            rows, interrupted = interruptible(run_cell, problem, cell, fit=fit, device=device)
            if rows is None:
                raise RunInterrupted(
                    f"interrupted during cell {cell} of study {study!r}; the {n_run} cell(s) finished in this run "
                    f"and every earlier one are stored in {store.root}: run the same command again to resume")
            with interrupts_held() as late:  # a finished cell is always stored whole
                stored = store.append(study, rows, n_sims=config.n_sims)
                if cell.method == "cnce" and cell.eps_setting.is_default and cell.kappa is not None:
                    problem.remember_eps(stored)  # as stored (9 digits), whether or not the run is resumed
                n_run += 1
                entry["cells_computed"] += 1
                entry["compute_seconds"] = round(entry["compute_seconds"] + float(rows["cell_seconds"].iloc[0]), 3)
                entry["wall_seconds"] = round(time.perf_counter() - t_study, 3)
                store.write_provenance(study, prov)
            if bar is not None:
                bar.update(1)
            if interrupted or late:
                raise RunInterrupted(
                    f"interrupted after cell {cell} of study {study!r}; it and every cell before it are stored in "
                    f"{store.root}: run the same command again to resume")
        entry["status"] = "complete"
    except BaseException:
        entry["status"] = "interrupted"
        raise
    finally:
        entry["finished"] = _now()
        entry["load_average_end"] = _load_average()
        entry["wall_seconds"] = round(time.perf_counter() - t_study, 3)
        store.write_provenance(study, prov)
        del problem
    return n_run


def load_results(name: str | ExperimentConfig, scale: str = "quick", seed: int = 0, *,
                 results_dir: str | os.PathLike | None = None, allow_missing: bool = False) -> pd.DataFrame:
    """The tidy rows of experiment ``name`` (only its cells), with provenance in ``df.attrs``.

    ``df.attrs["provenance"]`` maps each study to its provenance record. Raises
    :class:`~cnce.errors.IncompleteResultsError` listing what is missing unless ``allow_missing``; a corrupt file raises
    :class:`~cnce.experiments.store.CorruptResultsError`.
    """
    config = _resolve(name, scale, seed)
    store = ResultStore(results_dir if results_dir is not None else default_results_dir(config.scale, config.seed))
    frames, provs = [], {}
    for study in config.studies:
        provs[study] = store.read_provenance(study)
        _check_provenance(provs[study], config, study, store.provenance_path(study), store)
        frames.append(store.load(study, n_sims=config.n_sims))
    df = pd.concat(frames, ignore_index=True)
    wanted = pd.DataFrame([{"study": c.study, "method": c.method, "N": c.N, "kappa": c.kappa, "eps_setting": c.eps}
                           for c in config.cells])
    wanted["kappa"] = wanted["kappa"].astype("Int64")
    for c in ("study", "method", "eps_setting"):
        wanted[c] = wanted[c].astype("string")
    keys = CELL_KEYS
    df = df.merge(wanted, on=keys, how="inner")
    have = df[keys].drop_duplicates()
    n_missing = len(wanted) - len(have)
    if n_missing and not allow_missing:
        raise IncompleteResultsError(
            f"{n_missing} of {len(wanted)} cells of experiment {config.name!r} at scale {config.scale!r} are missing in "
            f"{store.root}; run `python -m cnce run {config.name} --scale {config.scale}` first"
        )
    df = df.sort_values(keys + ["sim"], na_position="first", kind="stable").reset_index(drop=True)
    df.attrs["provenance"] = provs
    df.attrs["experiment"] = config.name
    df.attrs["scale"] = config.scale
    df.attrs["seed"] = config.seed
    df.attrs["results_dir"] = str(store.root)
    return df


def ensure(
    name: str,
    scale: str = "quick",
    seed: int = 0,
    *,
    results_dir: str | os.PathLike | None = None,
    device: str = "cpu",
    progress: bool = False,
    compute: bool = True,
) -> pd.DataFrame:
    """Compute whatever cells of ``name`` are missing (nothing if all are stored), then load.

    With ``compute=False`` nothing is computed: the stored cells are loaded and the missing
    ones are listed in ``df.attrs["missing"]`` (and printed), so a page can show a partial run.
    """
    if compute:
        run(name, scale, seed, results_dir=results_dir, device=device, progress=progress)
        return load_results(name, scale, seed, results_dir=results_dir)
    df = load_results(name, scale, seed, results_dir=results_dir, allow_missing=True)
    config = _resolve(name, scale, seed)
    store = ResultStore(results_dir if results_dir is not None else default_results_dir(config.scale, config.seed))
    missing = missing_cells(config, store)
    df.attrs["missing"] = [str(c) for c in missing]
    if missing:
        studies = sorted({c.study for c in missing})
        print(f"NOTE: {len(missing)} of {len(config.cells)} cells of {config.name!r} at scale {config.scale!r} are not "
              f"stored (studies: {', '.join(studies)}); they are left out below. Compute them with "
              f"`python -m cnce run {config.name} --scale {config.scale}`.")
    return df


def provenance_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per study and run behind ``df`` (from :func:`load_results`): when, what, where."""
    rows = []
    for study, prov in (df.attrs.get("provenance") or {}).items():
        if not prov:
            continue
        for r in prov.get("runs", []):
            rows.append({
                "study": study,
                "experiment": r.get("experiment"),
                "finished": (r.get("finished") or "")[:16].replace("T", " "),
                "status": r.get("status"),
                "cells": r.get("cells_computed"),
                "wall_s": r.get("wall_seconds"),
                "commit": (r.get("git_commit") or "")[:8],
                "code": (r.get("package_source_sha256") or "")[:8],
                "device": r.get("device"),
                "torch": r.get("torch"),
            })
    return pd.DataFrame(rows)


def for_display(name: str, df_run: pd.DataFrame, scale: str = "quick", seed: int = 0, *,
                paper_dir: str | os.PathLike | None = None) -> tuple[pd.DataFrame, str]:
    """The results a notebook page shows, and their scale.

    A page built at ``quick`` scale computes (or loads) the quick grid -- that is what CI and
    the regression tests exercise -- but when a *complete* paper-scale run of ``name`` is
    stored (committed under ``data/results/paper/``, or ``paper_dir``), the page shows that run
    instead, so the book carries the paper-scale figures. At any other scale ``df_run`` is
    returned unchanged.

    Never a silent fallback: when no paper-scale table of ``name`` is stored at all, the quick
    results are returned and a line says so; a corrupt paper table
    (:class:`~cnce.errors.CorruptResultsError`), one without provenance, one of other settings,
    or an incomplete paper run raise, naming the file and what to do. Returns
    ``(df, shown_scale)``.
    """
    if scale != "quick":
        return df_run, scale
    config = _resolve(name, "paper", seed)
    store = ResultStore(paper_dir if paper_dir is not None else default_results_dir("paper", seed))
    present = [s for s in config.studies if store.path(s).exists() or store.provenance_path(s).exists()]
    if not present:
        print(f"no paper-scale results of {config.name!r} are stored in {store.root}; this page shows the quick-scale "
              "run")
        return df_run, scale
    missing = missing_cells(config, store)  # raises on a corrupt table
    if missing:
        files = sorted({str(store.path(c.study)) for c in missing})
        raise IncompleteResultsError(
            f"the committed paper-scale results of {config.name!r} are incomplete: {len(missing)} of "
            f"{len(config.cells)} cells are missing from {', '.join(files)}; complete them with `python -m cnce run "
            f"{config.name} --scale paper` (the stored cells are kept), or restore the files with git")
    return load_results(name, "paper", seed, results_dir=paper_dir), "paper"


def page_results(name: str, scale: str = "quick", seed: int = 0):
    """What a notebook page of experiment ``name`` works with: computes the quick grid (what CI
    runs; at other scales the stored cells are only loaded), then swaps in a complete committed
    paper-scale run (:func:`for_display`) and says so. Returns ``(df, shown_scale, config)``
    with the :class:`~cnce.experiments.configs.ExperimentConfig` of the scale shown."""
    df_run = ensure(name, scale, seed, compute=(scale == "quick"))
    df, shown = for_display(name, df_run, scale, seed)
    if shown != scale:
        print(f"computed the {scale} grid ({len(df_run)} rows); this page shows the committed {shown}-scale run")
    return df, shown, get_config(name, shown, seed)
