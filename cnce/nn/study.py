"""The study of notebook 08: CNCE's eps rules, and the four methods with equally tuned baselines.

For every dataset (the four toys and the two cases of :data:`cnce.nn.toys.CASES`), network
(:class:`~cnce.nn.toys.MLPEnergy` on all six; :class:`~cnce.nn.toys.QuarticEnergy`, a second
architecture, on the two cases) and seed, the data are drawn afresh (training, validation and
test points from the seed), one initial network is drawn (the same for every run of that
seed), and these runs are trained, all with Adam at the same steps, batch size and ``kappa``:

* CNCE with each eps schedule of :data:`cnce.nn.objectives.SCHEDULES` that searches
  (``once``, ``rechoose``, ``carry``, ``upward``) and with eps fixed at
  :data:`FIXED_EPS` data scales;
* NCE and SSM at the learning rates :data:`LR_FACTORS` times the common one;
* DSM at sigma :data:`DSM_SIGMAS` data scales.

Each run is scored by the exact log-likelihood (grid normaliser, checked for mass outside the
box and for resolution: :func:`~cnce.nn.toys.normaliser_check`) on the validation and on the
test points. *Tuning* picks, per method, dataset and seed, the candidate with the best
validation log-likelihood among three (CNCE: the three fixed eps; DSM: three sigmas; NCE and
SSM: three learning rates), and reports its test log-likelihood: every method gets the same
budget of three trained candidates and the same validation data.

``python -m cnce nn-study`` (:func:`write_study`) writes ``data/results/paper/nn-study.csv`` cell
by cell (a :class:`cnce.jobs.Job`: the table is its checkpoint, written atomically; the folder's
``.nn-study.lock`` refuses a second run of the same table; rerunning resumes where it stopped, and
refuses to mix code versions) and its provenance ``nn-study.json``; ``--out DIR`` writes into another folder (settings other than
``paper`` go to ``data/results/quick/`` by default, which git ignores).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import torch

from ..eps import Fixed, Schedule, eps_label
from ..jobs import Job, interrupts_held
from ..errors import DirtyTreeError, InputError, ResultsError, RunInterrupted, TrainingError, WrongScaleError
from ..locations import data_dir
from ..provenance import atomic_write_text, derive_seed, environment_record
from .objectives import CNCELoss, DSMLoss, NCELoss, SSMLoss
from .toys import CASES, TOYS, MLPEnergy, QuarticEnergy, normaliser_check, sample_toy
from .toys import _log_phi_on  # noqa: PLC2701 (the held-out points share one log Z)
from .train import train

__all__ = ["StudySettings", "SETTINGS", "FIXED_EPS", "DSM_SIGMAS", "LR_FACTORS", "RULES", "run_study", "cells",
           "results_path", "load", "write_study"]

#: fixed eps, in data scales of the training data
FIXED_EPS = (0.3, 1.0, 3.0)
#: DSM's sigma, in data scales
DSM_SIGMAS = (0.03, 0.1, 0.3)
#: the learning rates of NCE and SSM, as multiples of the common one
LR_FACTORS = (1 / 3, 1.0, 3.0)
#: the searched eps schedules of the study
RULES = ("once", "rechoose", "carry", "upward")


@dataclass(frozen=True)
class StudySettings:
    """The sizes of one scale of the study (:data:`SETTINGS`)."""

    seeds: int = 5
    """Seeds per cell (network initialisation, data and minibatches)."""
    steps: int = 1000
    """Adam steps per run."""
    batch_size: int = 128
    """Data points per step."""
    kappa: int = 10
    """Random draws per data point (noise points, perturbations or projections)."""
    lr: float = 5e-3
    """The common learning rate (NCE and SSM also try multiples of it, :data:`LR_FACTORS`)."""
    hidden: int = 32
    """Width of the MLP energy."""
    layers: int = 2
    """Hidden layers of the MLP energy."""
    quartic_K: int = 8
    """Terms of the quartic energy."""
    n_train: int = 5000
    """Points drawn from each toy for training."""
    n_val: int = 2000
    """Points for choosing each method's setting."""
    n_test: int = 5000
    """Points the exact log-likelihood is scored on."""
    grid: int = 200
    """Grid points per axis of the exact normaliser."""
    tol: float = 0.05
    """How much the normaliser's log (nats) may grow on a box twice as wide
    (:func:`cnce.nn.toys.normaliser_check`)."""
    every: int = 100
    """Calls between the heuristic's runs (the re-choosing schedules)."""


SETTINGS = {"paper": StudySettings(), "tiny": StudySettings(seeds=1, steps=20, n_train=400, n_val=200, n_test=200,
                                                             grid=40, every=10)}


def default_out(settings: str = "paper"):
    """Where a study of the named ``settings`` is written by default: ``results/paper`` under the
    data folder (:func:`cnce.locations.data_dir`; the committed study) for ``"paper"``,
    ``results/quick`` (ignored by git) for the others."""
    return data_dir() / "results" / ("paper" if settings == "paper" else "quick")


def results_path(name: str = "nn-study", out=None):
    """``<out>/<name>.csv``; ``out`` defaults to ``results/paper`` under the data folder
    (:func:`cnce.locations.data_dir`), where the committed study lives."""
    from pathlib import Path

    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise InputError(f"name must be a file name without folders (e.g. 'nn-study'); got {name!r}")
    return (default_out() if out is None else Path(out)) / f"{name}.csv"


def cells(settings: StudySettings):
    """``(seed, arch, dataset)`` in the order computed: seeds outermost, so that a stopped run
    has whole seeds."""
    out = []
    for s in range(settings.seeds):
        out += [(s, "mlp", d) for d in TOYS + CASES] + [(s, "quartic", d) for d in CASES]
    return out


def candidates(sc: StudySettings):
    """``(method, variant, value)`` of every run of a cell."""
    out = [("cnce", eps_label(e), e) for e in (*(Schedule(r) for r in RULES), *(Fixed(e) for e in FIXED_EPS))]
    out += [("nce", f"lr={f * sc.lr:.3g}", f) for f in LR_FACTORS]
    out += [("dsm", f"sigma={s:g}", s) for s in DSM_SIGMAS]
    out += [("ssm", f"lr={f * sc.lr:.3g}", f) for f in LR_FACTORS]
    return out


def _net(arch, sc, seed, dataset):
    s = derive_seed(seed, "net", arch, dataset)
    if arch == "mlp":
        return MLPEnergy(2, sc.hidden, sc.layers, seed=s)
    return QuarticEnergy(2, sc.quartic_K, seed=s)


def _run(arch, dataset, seed, method, value, sc, xtr, xva, xte, unit):
    net = _net(arch, sc, seed, dataset)
    noise_seed = derive_seed(seed, "noise", arch, dataset)
    lr = sc.lr
    if method == "cnce":
        loss = CNCELoss(sc.kappa, value.value * unit if isinstance(value, Fixed) else value.name,
                        every=sc.every if isinstance(value, Schedule) and value.name in ("rechoose", "carry", "upward")
                        else None, seed=noise_seed)
    elif method == "dsm":
        loss = DSMLoss(sc.kappa, value * unit, seed=noise_seed)
    elif method == "nce":
        loss, lr = NCELoss(sc.kappa, data=xtr, seed=noise_seed), sc.lr * value
    else:
        loss, lr = SSMLoss(sc.kappa, seed=noise_seed), sc.lr * value
    t0 = time.perf_counter()
    err = ""
    try:
        res = train(net, xtr, loss, steps=sc.steps, batch_size=sc.batch_size, lr=lr,
                    seed=derive_seed(seed, "train", arch, dataset), device="cpu", progress=False)
        scale = res.eps
    except (FloatingPointError, TrainingError) as exc:
        err, scale = str(exc)[:120], float("nan")
    sec = time.perf_counter() - t0
    row = dict(arch=arch, dataset=dataset, seed=seed, method=method, lr=lr, seconds=sec, scale=scale,
               scale_units=scale / unit if scale == scale else float("nan"), error=err)
    if err:
        return row | dict(ll_val=float("nan"), ll_test=float("nan"), outside=float("nan"), resolution=float("nan"),
                          proper=False)
    c = normaliser_check(net, n=sc.grid, tol=sc.tol)
    ll = {k: float(_log_phi_on(net, v.float()).mean()) - c.log_z for k, v in (("ll_val", xva), ("ll_test", xte))}
    return row | ll | dict(outside=c.outside, resolution=c.resolution, proper=c.ok)


def run_study(settings: str | StudySettings = "paper", *, stored=None, save=None, log=None, limit_seconds=None,
              progress: bool = False):
    """Compute the rows not in ``stored`` (a DataFrame or ``None``); ``save(df)`` after each
    cell; ``progress``: a bar over the cells (:meth:`cnce.jobs.Job.bar`). Returns the DataFrame
    of all rows."""
    import pandas as pd

    sc = SETTINGS[settings] if isinstance(settings, str) else settings
    rows = [] if stored is None else stored.to_dict("records")
    done = {(r["seed"], r["arch"], r["dataset"], r["variant"]) for r in rows}
    t_start = time.perf_counter()
    all_cells = cells(sc)
    bar = Job.bar(len(all_cells), desc="nn-study", unit="cell", enabled=progress)
    for seed, arch, dataset in all_cells:
        todo = [c for c in candidates(sc) if (seed, arch, dataset, c[1]) not in done]
        if not todo:
            if bar is not None:
                bar.update(1)
            continue
        if limit_seconds is not None and time.perf_counter() - t_start > limit_seconds:
            break
        g = torch.Generator().manual_seed(derive_seed(seed, "data", dataset))
        xtr = sample_toy(dataset, sc.n_train, generator=g).float()
        xva = sample_toy(dataset, sc.n_val, generator=g).float()
        xte = sample_toy(dataset, sc.n_test, generator=g).float()
        unit = float(xtr.double().std(0).mean())
        for method, variant, value in todo:
            r = _run(arch, dataset, seed, method, value, sc, xtr, xva, xte, unit)
            r["variant"] = variant
            rows.append(r)
            if log:
                log(f"seed {seed} {arch} {dataset} {method} {variant}: val {r['ll_val']:.3f} test {r['ll_test']:.3f} "
                    f"{'' if r['proper'] else '(normaliser check fails) '}{r['seconds']:.1f} s")
        if save:
            save(pd.DataFrame(rows))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows)


def _read_table(path):
    import pandas as pd

    return pd.read_csv(path, keep_default_na=True, dtype={"error": "string"}).fillna({"error": ""})


def _job(name: str, out) -> Job:
    """The study's job: its table ``<name>.csv`` in ``out`` is the checkpoint (written whole and
    atomically after every cell), its lock ``.<name>.lock`` (ignored by git)."""
    p = results_path(name, out)
    return Job(p.parent, p.name, kind="text", loader=_read_table, saver=lambda df, fh: fh.write(df.to_csv(index=False)),
               lock_file=f".{name}.lock")


def load(name: str = "nn-study", out=None):
    """``(rows, provenance)`` of the study ``name`` in ``out`` (default: the committed one), or ``None``."""
    job = _job(name, out)
    rows = job.load(lambda: None)
    if rows is None:
        return None
    prov_path = job.path.with_suffix(".json")
    return rows, (json.loads(prov_path.read_text()) if prov_path.exists() else {})


def write_study(settings: str = "paper", name: str = "nn-study", *, out=None, limit_seconds: float | None = None,
                allow_dirty: bool = False, log=print, progress: bool = False):
    """Run the study with the named ``settings`` into ``<out>/<name>.csv`` and its provenance
    ``<name>.json`` (what ``python -m cnce nn-study`` runs, :mod:`cnce.nn.cli`). ``out``: a folder,
    default :func:`default_out` (``data/results/paper`` for the paper settings, where the
    committed study lives; ``data/results/quick``, ignored by git, for the others).

    Rows are written atomically as they finish (the table is the checkpoint of a
    :class:`cnce.jobs.Job`); a second call resumes where the first stopped, and a call while
    another run holds the table raises :class:`~cnce.jobs.JobLockedError`. ``progress``: a bar
    over the cells. Raises :class:`~cnce.errors.DirtyTreeError` when ``cnce/`` has uncommitted changes (unless
    ``allow_dirty``, for trying the code out), :class:`~cnce.errors.WrongScaleError` when the
    stored table holds other settings and :class:`~cnce.errors.ResultsError` when it was computed
    by other code (one table, one version of the code): the stored table is valid and kept, and
    the message says to write into another folder (``out``) or under another ``name``. Returns the
    rows and the table's path."""
    if settings not in SETTINGS:
        raise InputError(f"settings must be one of {sorted(SETTINGS)}; got {settings!r}")
    env = environment_record("cpu")
    if env["git_dirty_package"] and not allow_dirty:
        raise DirtyTreeError("cnce/ has uncommitted changes: commit first (results must come from a clean commit), "
                             "or pass --allow-dirty to try the code out")
    out = default_out(settings) if out is None else out
    with _job(name, out) as job:
        return _write_study(job, settings, name, out, env, limit_seconds, log, progress)


def _write_study(job, settings, name, out, env, limit_seconds, log, progress):
    p = job.path
    old = load(name, out)
    prov = old[1] if old else {}
    elsewhere = ("it is kept: write this run into another folder (--out DIR) or under another name (--name NAME); "
                 "rerunning with the table's own settings and code resumes it")
    if old and prov.get("settings") != asdict(SETTINGS[settings]):
        was = prov.get("settings_name", "other")
        raise WrongScaleError(f"{p} holds a study of other settings ({was!r}, not {settings!r}), a valid table; "
                              + elsewhere)
    if old and prov["runs"][0]["environment"]["package_source_sha256"] != env["package_source_sha256"]:
        raise ResultsError(f"{p} was computed by other code (its package source hash differs; one table, one version "
                           "of the code), a valid table; " + elsewhere)
    runs = prov.get("runs", []) + [dict(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), environment=env)]
    t0 = time.time()

    def write_prov(n_rows):
        runs[-1]["wall_seconds"] = time.time() - t0
        runs[-1]["rows_total"] = n_rows
        atomic_write_text(p.with_suffix(".json"), json.dumps(
            dict(settings=asdict(SETTINGS[settings]), settings_name=settings, git_commit=runs[0]["environment"]["git_commit"],
                 package_source_sha256=env["package_source_sha256"], runs=runs), indent=1, default=str))

    def save(df):
        with interrupts_held() as late:  # the table and its provenance are written together
            job.save(df)
            write_prov(len(df))
        if late:
            raise RunInterrupted(f"interrupted; every finished cell ({len(df)} rows) is stored in {p}: run the same "
                                 "command again to resume")

    df = run_study(settings, stored=old[0] if old else None, save=save, log=log, limit_seconds=limit_seconds,
                   progress=progress)
    save(df)
    total = len(cells(SETTINGS[settings])) * len(candidates(SETTINGS[settings]))
    log(f"{len(df)} of {total} rows in {p} ({time.time() - t0:.0f} s this run)")
    return df, p
