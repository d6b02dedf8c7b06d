"""Statistics of the committed results that the claims ledger's rules read, with bootstrap uncertainty.

These are library measures; no claim is defined here. The claims (the paper's statements,
the rules, the verdicts) are declared once in the companion's ledger
(``companion/claims/synthetic.py``), which calls these functions.

Every statistic here is a function of the ``log10`` median squared error of curves
(simulations x grid points). The uncertainty comes from resampling the *simulations* with
replacement (a nonparametric bootstrap): one draw of simulation indices is applied to every
curve and grid point of a study at once, because a study's methods, sample sizes and
``kappa`` share each simulation's truth, data and noise (the comparisons are paired). The
reported interval is the 2.5 % to 97.5 % percentile interval of the replicates, and the
standard error their standard deviation.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Estimate", "Medians", "log10_medians", "slope", "slope_bend", "log_ratio", "gap_change", "point_log_ratios",
           "count_above", "ring_best_eps", "score_matching_limit", "eps0_check", "eps_one_share", "committed_results"]


@dataclass
class Estimate:
    """A statistic with its bootstrap standard error and 95 % percentile interval."""

    value: float
    se: float
    lo: float
    hi: float

    @classmethod
    def from_reps(cls, value, reps) -> "Estimate":
        reps = np.asarray(reps, dtype=float)
        lo, hi = np.quantile(reps, [0.025, 0.975])
        return cls(float(value), float(reps.std(ddof=1)), float(lo), float(hi))

    def fmt(self, digits: int = 2) -> str:
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


@dataclass
class Medians:
    """``log10`` median error per curve point (``keys``) and its bootstrap replicates ``(G, B)``."""

    keys: pd.DataFrame
    point: np.ndarray
    reps: np.ndarray

    def select(self, **where) -> np.ndarray:
        """Boolean mask of the rows of ``keys`` matching ``column=value`` (``kappa=None``: MLE)."""
        m = np.ones(len(self.keys), dtype=bool)
        for c, v in where.items():
            col = self.keys[c]
            m &= col.isna().to_numpy() if v is None else (col == v).fillna(False).to_numpy(dtype=bool)
        return m


def log10_medians(df: pd.DataFrame, by=("study", "method", "kappa", "N"), n_boot: int = 2000, seed: int = 0,
                  value: str = "error") -> Medians:
    """``log10`` of the median of ``value`` per group of ``by``, and ``n_boot`` bootstrap replicates.

    Each study's simulations (column ``sim``) are resampled with replacement, with one draw
    of indices per replicate shared by all of that study's groups. The draws of a study come
    from a generator seeded by ``seed`` and the study's name, so a study's intervals are the
    same whichever other studies ``df`` holds (a page and the claims page agree). Every group
    must hold the same simulations ``0..S-1`` (as the runner writes them)."""
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2; got {n_boot!r}")
    by = list(by)
    keys, point, reps = [], [], []
    for study, sdf in df.groupby("study", sort=True):
        S = int(sdf["sim"].max()) + 1
        rng = np.random.default_rng([seed, zlib.crc32(str(study).encode())])
        idx = rng.integers(0, S, size=(n_boot, S))
        for key, g in sdf.groupby(by, dropna=False, sort=True):
            e = np.full(S, np.nan)
            e[g["sim"].to_numpy()] = g[value].to_numpy(dtype=float)
            if np.isnan(e).any():
                raise ValueError(f"df must hold simulations 0..{S - 1} in every group; group {key} of study {study!r} does not")
            keys.append(dict(zip(by, key if isinstance(key, tuple) else (key,))))
            point.append(np.log10(np.median(e)))
            reps.append(np.log10(np.median(e[idx], axis=1)))
    k = pd.DataFrame(keys)
    if "kappa" in k:
        k["kappa"] = pd.array(k["kappa"], dtype="Int64")
    return Medians(k, np.array(point), np.array(reps))


def _pick(m: Medians, study, method, kappa, N=None):
    mask = m.select(study=study, method=method, kappa=kappa)
    if N is not None:
        mask &= m.keys["N"].isin(np.atleast_1d(N)).to_numpy()
    if not mask.any():
        raise ValueError(f"no curve points for study={study!r}, method={method!r}, kappa={kappa!r}, N={N!r}")
    order = np.argsort(m.keys["N"].to_numpy()[mask], kind="stable")
    return m.keys["N"].to_numpy()[mask][order], m.point[mask][order], m.reps[mask][order]


def _slope_draws(m: Medians, study, method, kappa, N):
    Ns, p, r = _pick(m, study, method, kappa, N)
    if Ns.size < 2:
        raise ValueError(f"a slope needs two or more N; study={study!r}, method={method!r}, kappa={kappa!r} has {Ns.size}")
    x = np.log10(Ns.astype(float))
    w = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    return Ns, w @ p, w @ r


def slope(m: Medians, study: str, method: str, kappa=None, N=None) -> Estimate:
    """Least-squares slope of ``log10`` median error against ``log10 N`` for one curve."""
    _, p, r = _slope_draws(m, study, method, kappa, N)
    return Estimate.from_reps(p, r)


def slope_bend(m: Medians, study: str, method: str, kappa=None, N=None) -> Estimate:
    """How far one curve is from a straight line in log-log: the slope over the upper half of
    its N grid minus the slope over the lower half (the middle point in both when the number
    of N is odd), paired over the bootstrap replicates. 0 for a straight line; negative when
    the curve steepens with N. Needs three or more N."""
    Ns, _, _ = _pick(m, study, method, kappa, N)
    if Ns.size < 3:
        raise ValueError(f"a bend needs three or more N; study={study!r}, method={method!r}, kappa={kappa!r} has {Ns.size}")
    half = (Ns.size + 1) // 2
    _, pl, rl = _slope_draws(m, study, method, kappa, Ns[:half])
    _, pu, ru = _slope_draws(m, study, method, kappa, Ns[Ns.size - half:])
    return Estimate.from_reps(pu - pl, ru - rl)


def _log_ratio_draws(m: Medians, study, num, den, N):
    Nn, pn, rn = _pick(m, study, *num, N=N)
    Nd, pd_, rd = _pick(m, study, *den, N=N)
    common = np.intersect1d(Nn, Nd)
    if common.size == 0:
        raise ValueError(f"num and den share no N for study {study!r}")
    a, b = np.isin(Nn, common), np.isin(Nd, common)
    return (pn[a] - pd_[b]).mean(), (rn[a] - rd[b]).mean(0)


def log_ratio(m: Medians, study: str, num: tuple, den: tuple, N=None) -> Estimate:
    """Mean over the grid points (``N``, optionally restricted to ``N``) of
    ``log10 median(num) - log10 median(den)``; ``num``/``den`` are ``(method, kappa)``.
    A ``kappa`` of ``None`` selects MLE's curve (no kappa)."""
    return Estimate.from_reps(*_log_ratio_draws(m, study, num, den, N))


def gap_change(m: Medians, study: str, first: tuple, last: tuple, N=None) -> Estimate:
    """How much a gap shrinks: ``|first| - |last|``, where ``first`` and ``last`` are
    ``(num, den)`` pairs of :func:`log_ratio` (e.g. NCE over CNCE at the smallest and the
    largest kappa), paired over the bootstrap replicates. Positive: the gap shrinks."""
    pa, ra = _log_ratio_draws(m, study, *first, N)
    pb, rb = _log_ratio_draws(m, study, *last, N)
    return Estimate.from_reps(abs(pa) - abs(pb), np.abs(ra) - np.abs(rb))


def point_log_ratios(m: Medians, study: str, num: str, den: str) -> pd.DataFrame:
    """``log10 median(num) - log10 median(den)`` at every ``(kappa, N)`` both methods have, with
    the bootstrap standard error, the 95 % interval and ``z = value / se``."""
    rows = []
    sel = m.keys["study"] == study
    for (k, N) in sorted(set(map(tuple, m.keys.loc[sel & (m.keys["method"] == num), ["kappa", "N"]].to_numpy().tolist()))):
        a = m.select(study=study, method=num, kappa=k) & (m.keys["N"] == N).to_numpy()
        b = m.select(study=study, method=den, kappa=k) & (m.keys["N"] == N).to_numpy()
        if not b.any():
            continue
        e = Estimate.from_reps(m.point[a][0] - m.point[b][0], m.reps[a][0] - m.reps[b][0])
        rows.append({"kappa": int(k), "N": int(N), "log10_ratio": e.value, "se": e.se, "lo": e.lo, "hi": e.hi,
                     "z": e.value / e.se if e.se > 0 else float("nan")})
    return pd.DataFrame(rows)


def count_above(df: pd.DataFrame, threshold: float, n_boot: int = 2000, seed: int = 0) -> Estimate:
    """Number of rows (simulations) of ``df`` with ``error > threshold``, with a bootstrap interval."""
    e = df["error"].to_numpy(dtype=float)
    rng = np.random.default_rng(seed)
    reps = (e[rng.integers(0, e.size, size=(n_boot, e.size))] > threshold).sum(1)
    return Estimate.from_reps((e > threshold).sum(), reps)


def ring_best_eps(fig_df: pd.DataFrame, eps_df: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict:
    """NCE against CNCE at the best eps of the eps experiment's grid, for one ring generator.

    ``fig_df``: the ring study's table (NCE's fits); ``eps_df``: the eps experiment's table of
    the same generator (CNCE at the heuristic's eps and at fixed multiples of it). The two
    share each simulation's truth, data and noise, so the comparison is paired. At each N
    both hold: ``log10(median NCE) - log10(min over the grid of median CNCE)``, the grid's
    best chosen again in every bootstrap replicate (as in
    :func:`cnce.experiments.eps_sweep.efficiency_loss`), and the same with the heuristic's
    eps. The best eps is chosen on the simulations it is scored on, so it flatters CNCE a
    little (an oracle no fit has).

    Returns ``{"table": DataFrame(N, best, default, best_factor), "mean_best": Estimate,
    "mean_default": Estimate}`` (means over N)."""
    from .configs import eps_factor

    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2; got {n_boot!r}")
    study = str(fig_df["study"].iloc[0])
    cn = eps_df[(eps_df["method"] == "cnce")]
    cn = cn[cn["eps_setting"].astype(str).map(lambda s: s == "default" or s.startswith("x"))]
    nce = fig_df[fig_df["method"] == "nce"]
    common = sorted(set(cn["N"]) & set(nce["N"]))
    if not common:
        raise ValueError(f"the eps table and the table of {study!r} share no N with NCE fits")
    S = int(nce["sim"].max()) + 1
    rng = np.random.default_rng([seed, zlib.crc32(f"{study}:best-eps".encode())])
    idx = rng.integers(0, S, size=(n_boot, S))
    rows, best_reps, def_reps, best_pts, def_pts = [], [], [], [], []
    for N in common:
        e_n = nce[nce["N"] == N].sort_values("sim")["error"].to_numpy(float)
        w = cn[cn["N"] == N].pivot_table(index="eps_setting", columns="sim", values="error", aggfunc="first")
        if e_n.size != S or w.shape[1] != S:
            raise ValueError(f"NCE and the eps grid must hold simulations 0..{S - 1} at N = {N}")
        grid = sorted(w.index, key=lambda s: eps_factor(str(s)))
        E = w.loc[grid].to_numpy(float)
        med = np.median(E, axis=1)
        b = int(np.argmin(med))
        d = grid.index("default")
        ln = np.log10(np.median(e_n[idx], axis=1))
        lg = np.log10(np.median(E[:, idx], axis=-1))  # (G, B)
        best = Estimate.from_reps(np.log10(np.median(e_n)) - np.log10(med[b]), ln - lg.min(axis=0))
        dflt = Estimate.from_reps(np.log10(np.median(e_n)) - np.log10(med[d]), ln - lg[d])
        rows.append(dict(N=int(N), best=best, default=dflt, best_factor=float(eps_factor(str(grid[b])))))
        best_reps.append(ln - lg.min(axis=0)), def_reps.append(ln - lg[d])
        best_pts.append(best.value), def_pts.append(dflt.value)
    return {"table": pd.DataFrame(rows),
            "mean_best": Estimate.from_reps(np.mean(best_pts), np.mean(best_reps, axis=0)),
            "mean_default": Estimate.from_reps(np.mean(def_pts), np.mean(def_reps, axis=0))}


def score_matching_limit(N: int = 1000, seed: int = 0, kappa: int = 10, noise: str = "moment-matched") -> dict:
    """The score-matching limit (Section 2, Supp. B) checked on the Gaussian model (Eq. 15).

    One sample of ``N`` points from a random Gaussian, the model at its initial parameters,
    ``kappa`` noise directions per data point: ``noise`` is ``"independent"`` draws,
    ``"antithetic"`` pairs or ``"moment-matched"`` antithetic pairs
    (:func:`cnce.theory.moment_matched`). Returns the grid ``eps`` (1e-3 to 1), the ratio
    ``(J_N - 2 log 2) / eps^2`` for each kind of noise (``ratio``), its small-eps limit ``B_N``
    (``limit``), half the sample score-matching objective (``half_sm``), and for ``noise`` (its
    key in ``ratio`` is ``noise``, ``"antithetic, moment-matched"`` for the default):
    the relative difference of the ratio at the smallest eps from ``half_sm`` (``rel_dev``)
    and the log-log slope of ``|ratio - B_N|`` for eps <= 0.01 (``slope``). Also the data
    (``model``, ``x``, ``theta0``, ``theta_true``, ``xi``: the independent directions, ``noises``). Deterministic in
    ``(N, seed)``."""
    import torch

    from .. import theory
    from ..models import Gaussian
    from ..provenance import generator

    if noise not in ("independent", "antithetic", "moment-matched"):
        raise ValueError(f"noise must be 'independent', 'antithetic' or 'moment-matched'; got {noise!r}")
    if kappa < 4 or kappa % 2:
        raise ValueError(f"kappa must be an even number >= 4 (antithetic pairs, D = 2 directions); got {kappa!r}")
    g = generator(seed, "score-matching-limit")
    gauss = Gaussian()
    theta_true = gauss.random_params(1, generator=g)
    x = gauss.sample(theta_true, N, generator=g)
    theta0 = gauss.init_params(1, generator=g)
    xi = torch.randn(1, N, kappa, gauss.dim, generator=g, dtype=torch.float64)
    noises = {"independent": xi, "antithetic": theory.antithetic(xi[:, :, :kappa // 2]),
              "antithetic, moment-matched": theory.moment_matched(xi[:, :, :kappa // 2])}
    key = {"moment-matched": "antithetic, moment-matched"}.get(noise, noise)
    eps = torch.logspace(-3, 0, 31, dtype=torch.float64)
    half_sm = 0.5 * float(theory.sm_objective(gauss, x, theta0))
    ratio, limit = {}, {}
    for name, z in noises.items():
        excess = theory.loss_curve(gauss, x, theta0, eps, z, excess=True)
        ratio[name] = (excess[:, 0] / eps**2).numpy()
        limit[name] = float(theory.small_eps_limit(gauss, x, theta0, z))
    small = (eps <= 1e-2).numpy()
    slopes = {name: float(np.polyfit(np.log10(eps.numpy()[small]), np.log10(np.abs(ratio[name] - limit[name])[small]), 1)[0])
              for name in noises}
    return dict(eps=eps.numpy(), ratio=ratio, limit=limit, half_sm=half_sm, slopes=slopes, noise=key, N=N,
                rel_dev=abs(ratio[key][0] - half_sm) / half_sm, slope=slopes[key],
                model=gauss, x=x, theta0=theta0, theta_true=theta_true, xi=xi, noises=noises)


def eps_one_share(df: pd.DataFrame, study: str) -> float:
    """The share of CNCE fits of ``study`` whose eps is 1 (for the Bernoulli model: every bit
    flipped, where CNCE gives the maximum-likelihood estimate at every kappa)."""
    eps = df[(df.study == study) & (df.method == "cnce")]["eps"]
    return float((eps == 1).mean()) if len(eps) else 0.0


def eps0_check(S: int = 20, N: int = 1000, seed: int = 0, kappa: int = 10) -> dict:
    """The CNCE loss at eps = 0 (Eq. 8 with every noise point on its data point) for the
    paper's five models, at the true parameters, the fits' initial parameters and parameters
    drawn afresh, ``S`` simulations of ``N`` points each: ``{model: {setting: max |J_N - 2 log
    2|}}`` and ``"worst"``, the largest of them. Deterministic in ``(S, N, seed)`` (one
    generator, models in the order Gaussian, ICA, ring, log-normal, Bernoulli)."""
    import torch

    from .. import theory
    from ..losses import LOG4
    from ..models import ICA, Bernoulli, Gaussian, LogNormal, Ring
    from ..noise import default_noise

    g = torch.Generator().manual_seed(seed)
    out, worst = {}, 0.0
    for model in (Gaussian(), ICA(), Ring(), LogNormal(), Bernoulli()):
        theta_true = model.random_params(S, generator=g)
        x = model.sample(theta_true, N, generator=g)
        xi = default_noise(model).draw_base(x, kappa, generator=g)
        settings = {"true": theta_true, "initial": model.init_params(S, generator=g),
                    "other": model.random_params(S, generator=g)}
        dev = {k: float((theory.cnce_objective(model, x, th, 0.0, xi) - LOG4).abs().max()) for k, th in settings.items()}
        out[model.name] = dev
        worst = max(worst, *dev.values())
    return {"deviations": out, "worst": worst, "S": S, "N": N, "seed": seed}


def committed_results(seed: int = 0, studies=None, scale: str = "paper") -> tuple[dict, list[str]]:
    """The committed tables of ``data/results/<scale>/`` as ``{study: DataFrame}`` (a study
    shared by two figures: the union of their cells), and one line per study naming the commits
    of its runs. ``studies``: only these. Experiments without a complete run are left out."""
    from .configs import FIGURES
    from .runner import load_results

    results, runs = {}, []
    for name in FIGURES:
        try:
            df = load_results(name, scale, seed)
        except (FileNotFoundError, ValueError):  # not committed: its claims are left out
            continue
        for study in df.study.unique():
            if studies is not None and str(study) not in studies:
                continue
            rows = df[df.study == study]
            if str(study) in results:
                both = pd.concat([results[str(study)], rows], ignore_index=True)
                results[str(study)] = both.drop_duplicates(["method", "kappa", "N", "sim"], ignore_index=True)
                continue
            results[str(study)] = rows
            commits = {(r.get("git_commit") or "")[:8] for r in (df.attrs["provenance"].get(study) or {}).get("runs", [])}
            runs.append(f"{study} ({', '.join(sorted(commits))})")
    return results, runs
