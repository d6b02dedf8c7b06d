"""Do the standard errors of ``cnce.fit(..., cov=True)`` mean what they say? A coverage study.

For every model of the paper and every method that applies to it, ``S`` simulations draw true
parameters and ``N`` data points as the paper's experiments do, fit with ``cov=True`` and ask
how often the 95 % Wald interval ``theta_hat +- 1.96 stderr`` covers the true parameter (ICA
after aligning the estimate's rows to the truth). Beside each coverage: its exact binomial
(Clopper-Pearson) 95 % interval over the simulations, and the asymptotic prediction of the
error level the paper's figures show (the median squared error under the normal law of the
sandwich) against the simulated median.

``python -m companion.coverage`` writes ``data/results/asymptotics/coverage.csv`` (one row per
model, method and parameter), ``coverage-levels.csv`` (one row per model and method) and
``coverage.provenance.json``, atomically; ``--out`` writes elsewhere, ``--sims`` and ``-N``
change the size. Each study is stored as it finishes, and a rerun skips the studies already
stored with the same settings (resume).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import cnce
from cnce import asymptotics, provenance
from cnce.models import get_model

from .paths import REPO_ROOT

#: (model, its constructor's arguments, the parameter groups as (name, indices or None: all))
MODELS = {
    "gaussian": ({"dim": 5}, "diagonal and off-diagonal entries of the precision matrix"),
    "ica": ({"dim": 4}, "entries of the demixing matrix B (aligned to the truth's rows)"),
    "lognormal": ({}, "the two parameters"),
    "bernoulli": ({}, "the two parameters"),
    "ring": ({"dim": 5}, "the precision of the radius"),
}
KAPPA = 10
DEFAULT_OUT = REPO_ROOT / "data" / "results" / "asymptotics"
#: the committed paper-scale results whose error curves get a predicted level
PAPER_RESULTS = REPO_ROOT / "data" / "results" / "paper"


def groups(model) -> dict[str, list[int]]:
    """Parameter groups of a model for the summary: the Gaussian's diagonal and off-diagonal
    precision entries apart; one group otherwise."""
    if model.boundary_params:
        return {"all but the boundary": [p for p in range(model.n_params) if p not in model.boundary_params]}
    if model.name == "gaussian":
        i, j = (t.tolist() for t in model._iu)
        return {"diagonal": [p for p, (a, b) in enumerate(zip(i, j)) if a == b],
                "off-diagonal": [p for p, (a, b) in enumerate(zip(i, j)) if a != b]}
    return {"all": list(range(model.n_params))}


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def run_one(family: str, method: str, S: int, N: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """One model and method: per-parameter coverage rows and the level summary."""
    kwargs, _ = MODELS[family]
    gen = provenance.generator(seed, family)
    model = get_model(family, **kwargs) if family != "ring" else get_model(family, **kwargs).build(S, gen, **kwargs)
    theta = model.random_params(S, generator=gen)
    x = model.sample(theta, N, generator=gen)
    t0 = time.perf_counter()
    res = cnce.fit(model, x, method=method, **({"kappa": KAPPA} if method in ("cnce", "nce") else {}),
                   seed=provenance.int_seed(seed, 1), cov=True, threads=1)
    seconds = time.perf_counter() - t0
    hits = asymptotics.wald_covers(model, res.theta, res.stderr, theta)  # (S, P), NaN: no stderr
    given = torch.tensor([not r for r in res.cov_reason])
    rows = []
    for name, idx in groups(model).items():
        for p in idx:
            h = hits[given, p]
            k, n = int(h.sum()), int(h.numel())
            lo, hi = clopper_pearson(k, n) if n else (float("nan"), float("nan"))
            rows.append(dict(model=family, method=method, group=name, param=p, sims=n, covered=k, coverage=k / n if n else float("nan"),
                             lo=lo, hi=hi))
    keep = [p for p in range(model.n_params) if p not in model.boundary_params]
    aligned, _ = model.align(res.theta, theta)
    sq = ((aligned - theta)[:, keep] ** 2).sum(-1)[given]
    cov = res.cov[given][:, keep][:, :, keep]
    pred = asymptotics.median_sq_error(cov, generator=torch.Generator().manual_seed(seed))
    level = dict(model=family, method=method, N=N, sims=S, with_stderr=int(given.sum()),
                 reasons="; ".join(sorted({r for r in res.cov_reason if r})),
                 sim_median=float(sq.median()), pred_median=float(pred.median()), fit_and_cov_seconds=seconds)
    return pd.DataFrame(rows), level


def run(out: Path = DEFAULT_OUT, S: int = 200, N: int = 5000, seed: int = 0, only=None, redo=()) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cov_path, lev_path, prov_path = out / "coverage.csv", out / "coverage-levels.csv", out / "coverage.provenance.json"
    settings = {"sims": S, "N": N, "seed": seed, "kappa": KAPPA}
    prov = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    if prov.get("settings") != settings:
        prov = {"settings": settings, "studies": {}}
    cov_df = pd.read_csv(cov_path) if cov_path.exists() and prov["studies"] else pd.DataFrame()
    lev_df = pd.read_csv(lev_path) if lev_path.exists() and prov["studies"] else pd.DataFrame()
    for family in redo:  # computed again (the estimator changed): drop what is stored
        prov["studies"] = {k: v for k, v in prov["studies"].items() if k.split("/")[0] != family}
        cov_df = cov_df[cov_df["model"] != family] if len(cov_df) else cov_df
        lev_df = lev_df[lev_df["model"] != family] if len(lev_df) else lev_df
    todo = [(f, m) for f in MODELS for m in get_model(f, **MODELS[f][0]).methods if only is None or f in only]
    for i, (family, method) in enumerate(todo, 1):
        key = f"{family}/{method}"
        if key in prov["studies"]:
            print(f"[coverage] {i}/{len(todo)} {key}: stored", file=sys.stderr)
            continue
        print(f"[coverage] {i}/{len(todo)} {key}: {S} simulations at N = {N} ...", file=sys.stderr, flush=True)
        rows, level = run_one(family, method, S, N, seed)
        rank = {f: i for i, f in enumerate(MODELS)}  # the models' order, whatever order they were computed in
        cov_df = pd.concat([cov_df, rows], ignore_index=True).sort_values("model", key=lambda m: m.map(rank), kind="stable")
        lev_df = pd.concat([lev_df, pd.DataFrame([level])], ignore_index=True).sort_values(
            "model", key=lambda m: m.map(rank), kind="stable")
        provenance.atomic_write_text(cov_path, cov_df.to_csv(index=False, float_format="%.10g"))
        provenance.atomic_write_text(lev_path, lev_df.to_csv(index=False, float_format="%.10g"))
        prov["studies"][key] = {"finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **provenance.git_state("cnce", "companion"),
                                "package_source_sha256": provenance.package_source_hash(), "seconds": level["fit_and_cov_seconds"]}
        provenance.atomic_write_text(prov_path, json.dumps(prov, indent=1) + "\n")
        print(f"[coverage] {key}: pooled coverage {rows.covered.sum() / max(rows.sims.sum(), 1):.3f}, "
              f"median error predicted {level['pred_median']:.3g} / simulated {level['sim_median']:.3g}", file=sys.stderr)


def summary(cov: pd.DataFrame) -> pd.DataFrame:
    """Pooled coverage per model, method and parameter group, with its Clopper-Pearson interval
    over the pooled intervals (parameters of one simulation are not independent: the interval is
    a guide, the per-parameter rows are exact) and the per-parameter range."""
    out = []
    for (m, meth, g), d in cov.groupby(["model", "method", "group"], sort=False):
        k, n = int(d.covered.sum()), int(d.sims.sum())
        lo, hi = clopper_pearson(k, n) if n else (float("nan"), float("nan"))
        out.append(dict(model=m, method=meth, group=g, params=len(d), sims=int(d.sims.max()),
                        coverage=k / n if n else float("nan"), lo=lo, hi=hi,
                        param_min=float(d.coverage.min()), param_max=float(d.coverage.max())))
    return pd.DataFrame(out)


#: the committed paper-scale studies whose error curves get a predicted level, with the methods
#: and kappa covered (``None``: all the study has)
LEVEL_STUDIES = {"gaussian": None, "ica": None, "lognormal": None, "ring-exact": None, "ring-authors": None}
LEVEL_METHODS = ("cnce", "nce", "mle")


def predicted_quantiles(cov: torch.Tensor, q=(0.1, 0.5, 0.9), n_draws: int = 2000, seed: int = 0) -> list[float]:
    """Quantiles over simulations of ``|theta_hat - theta|^2`` when simulation ``s``'s error is
    ``N(0, cov[s])``: the law the paper's curves summarise (median and 0.1/0.9 quantiles over
    simulations) is the mixture of the simulations' laws, so draws of all simulations are pooled."""
    ok = torch.isfinite(cov).all(-1).all(-1)
    lam = torch.linalg.eigvalsh(cov[ok]).clamp_min(0)
    z = torch.randn(int(ok.sum()), n_draws, cov.shape[-1], generator=torch.Generator().manual_seed(seed), dtype=cov.dtype)
    sq = ((z ** 2) @ lam.unsqueeze(-1)).reshape(-1)
    return torch.quantile(sq, torch.tensor(q, dtype=sq.dtype)).tolist()


def _curvature(model, method: str) -> str:
    """The form of ``A`` that :func:`cnce.asymptotics.sandwich` takes by default for this model."""
    return "expected" if asymptotics._kinked(model) and method != "sm" else "observed"


def level_cell(problem, sims: pd.DataFrame, method: str, kappa: int | None, N: int, n_sims: int | None = None) -> dict:
    """One curve point: the predicted error quantiles (the sandwich at the TRUE parameters, with each
    simulation's own data, noise and eps, as the law of the error; the mixture over simulations)
    beside the simulated quantiles of ``sims`` (the committed rows of this point). ``n_sims``: the
    first ``n_sims`` simulations only for the prediction (the cost grows with ``S N kappa``)."""
    model, truth = problem.model, problem.theta_true
    S = problem.n_sims
    S_pred = S if n_sims is None else min(S, n_sims)
    keep = [p for p in range(model.n_params) if p not in model.boundary_params]
    t0 = time.perf_counter()
    kw = {}
    if method in ("cnce", "nce"):
        kw = dict(kappa=kappa, noise_base=problem.noise_base(N, kappa))
    if method == "cnce":
        kw.update(eps=torch.tensor(sims["eps"].to_numpy(float)), noise=cnce.noise.default_noise(model))
    x = problem.data(N)
    step = asymptotics._chunk(S_pred, N, kappa, model.n_params)
    covs = []
    for a in range(0, S_pred, step):
        sl = slice(a, min(S_pred, a + step))
        part = {k: (v[sl] if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
        sub = model.take(sl, S)
        if method == "nce":  # NCE's parameters are (theta, c): c's true value is -log Z(theta)
            part["log_normaliser"] = -sub.log_partition(truth[sl])
        covs.append(asymptotics.sandwich(sub, x[sl], truth[sl], method, **part).cov)
    cov = torch.cat(covs)[:, keep][:, :, keep]
    q10, q50, q90 = predicted_quantiles(cov)
    e = sims["error"].to_numpy(float)
    return dict(study=problem.study.name, method=method, kappa=-1 if kappa is None else kappa, N=N, sims=S_pred,
                with_cov=int(torch.isfinite(cov).all(-1).all(-1).sum()), curvature=_curvature(model, method),
                pred_q10=q10, pred_median=q50, pred_q90=q90, sim_sims=len(e), sim_q10=float(np.quantile(e, 0.1)),
                sim_median=float(np.median(e)), sim_q90=float(np.quantile(e, 0.9)), seconds=time.perf_counter() - t0)


def run_levels(out: Path = DEFAULT_OUT, results: Path = PAPER_RESULTS, studies=LEVEL_STUDIES, methods=LEVEL_METHODS,
               n_sims: dict | None = None, only=None) -> None:
    """The predicted error level of every (method, kappa, N) of the committed consistency studies
    (:func:`level_cell`), written to ``theory-levels.csv`` beside the simulated quantiles of the
    committed errors; resumable per cell (a stored cell is skipped unless the form of its ``A``
    changed), each row with the commit that computed it, the file written atomically after each
    cell. ``n_sims``: ``{(study, method): simulations}`` used for the prediction where not all (a stored
    cell computed from another number of simulations is computed again; the ``sims`` column says how
    many each row used)."""
    from cnce.experiments.runner import build_problem

    out = Path(out)
    path = out / "theory-levels.csv"
    prov_path = out / "theory-levels.provenance.json"
    done = pd.read_csv(path) if path.exists() else pd.DataFrame()
    prov = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    if len(done) and "commit" not in done:  # rows of the first run (one commit for all)
        done["commit"] = prov.get("git_commit", "")
    if len(done) and "curvature" not in done:
        done["curvature"] = np.where(done["study"] == "ica", "observed (central differences)", "observed")
    state = provenance.git_state("cnce", "companion")
    for study in studies:
        if only is not None and study not in only:
            continue
        df = pd.read_csv(Path(results) / f"{study}.csv")
        if "eps_setting" in df:
            df = df[df["eps_setting"].fillna("default") == "default"]
        df = df[df["method"].isin(list(methods))]
        S, N_max = int(df["sim"].max()) + 1, int(df["N"].max())
        problem = build_problem(study, S, N_max, seed=0)
        kappas = studies[study] if isinstance(studies, dict) else None
        if kappas is not None:
            df = df[(df["method"] == "mle") | df["kappa"].isin(kappas)]
        cells = df[["method", "kappa", "N"]].drop_duplicates()
        cells = cells.assign(k=cells["kappa"].fillna(0)).sort_values(["k", "N", "method"])  # cheap cells first
        for _, c in cells.iterrows():
            kappa = None if pd.isna(c["kappa"]) else int(c["kappa"])
            method, N = c["method"], int(c["N"])
            form = _curvature(problem.model, method)
            want = min(S, (n_sims or {}).get((study, method), S))
            if len(done):
                same = ((done["study"] == study) & (done["method"] == method) & (done["kappa"] == (kappa or -1))
                        & (done["N"] == N))
                if (same & (done["curvature"] == form) & (done["sims"] == want)).any():
                    continue
                done = done[~same]
            sims = df[(df["method"] == method) & (df["N"] == N)
                      & ((df["kappa"] == kappa) if kappa is not None else df["kappa"].isna())].sort_values("sim")
            row = level_cell(problem, sims, method, kappa, N, (n_sims or {}).get((study, method)))
            row["commit"] = state["git_commit"] + ("-dirty" if state.get("git_dirty_package") else "")
            done = pd.concat([done, pd.DataFrame([row])], ignore_index=True)
            provenance.atomic_write_text(path, done.to_csv(index=False, float_format="%.10g"))
            print(f"[levels] {study} {method} kappa={kappa} N={N}: predicted median {row['pred_median']:.3g}, simulated "
                  f"{row['sim_median']:.3g} ({row['seconds']:.0f} s, {row['sims']} simulations)", file=sys.stderr, flush=True)
    commits = sorted(set(done["commit"])) if len(done) else []
    provenance.atomic_write_text(prov_path, json.dumps({
        "studies": {k: (list(v) if v else "all") for k, v in dict(studies).items()} if isinstance(studies, dict)
        else list(studies), "methods": list(methods),
        "simulations_used": "per row: the sims column (the first sims simulations of each point)",
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "row_commits": commits, **state,
        "package_source_sha256": provenance.package_source_hash()}, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m companion.coverage", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the result files (default data/results/asymptotics)")
    ap.add_argument("--sims", type=int, default=200, help="simulations per model and method (default 200)")
    ap.add_argument("-N", type=int, default=5000, help="data points per simulation (default 5000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", help="only these models (with --levels: these studies)")
    ap.add_argument("--redo", nargs="*", default=[], choices=sorted(MODELS),
                    help="compute these models again even where stored (after a change of the estimator)")
    ap.add_argument("--levels", action="store_true",
                    help="instead: the predicted error levels of the committed consistency studies (theory-levels.csv)")
    ap.add_argument("--level-sims", nargs="*", default=[], metavar="STUDY/METHOD=S",
                    help="with --levels: predict from the first S simulations only for these curves (e.g. ica/nce=30)")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if a.levels:
        n_sims = {}
        for spec in a.level_sims:
            try:
                key, val = spec.split("=")
                study, method = key.split("/")
                n_sims[(study, method)] = int(val)
            except ValueError:
                ap.error(f"--level-sims: expected STUDY/METHOD=S; got {spec!r}")
        run_levels(a.out, n_sims=n_sims, only=a.only)
        return 0
    run(a.out, a.sims, a.N, a.seed, a.only, a.redo)
    print(summary(pd.read_csv(a.out / "coverage.csv")).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
