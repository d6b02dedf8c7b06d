"""The verdicts of notebook 08 from the study's rows (:mod:`cnce.nn.study`).

* :func:`tuned`: per method, dataset and seed, the candidate with the best *validation*
  log-likelihood among the method's three (CNCE: three fixed eps; DSM: three sigmas; NCE and
  SSM: three learning rates), scored on the test points;
* :func:`at_defaults`: each method at its default (CNCE: ``eps="auto"``, i.e. the default
  schedule; DSM: sigma 0.1 data scales; NCE and SSM: the common learning rate);
* :func:`paired`: differences paired by seed (same data, same initial network), with
  Student-t intervals at the family level corrected for the number of comparisons
  (Bonferroni), or the range with two seeds; the outcome in words: "higher", "lower" or
  "no significant difference";
* :func:`rule_study`: each eps schedule against the best fixed eps of each case.
"""
from __future__ import annotations


import numpy as np

from ..eps import Schedule, eps_label, format_eps, parse_eps_label
from ..report import seed_interval, t_interval

__all__ = ["complete", "tuned", "at_defaults", "paired", "rule_study", "choose_default", "verdict_items",
           "TUNED_GRID", "t_interval"]

#: the variants each method is tuned over (the study's names)
TUNED_GRID = {"cnce": ("eps=0.3", "eps=1", "eps=3"), "nce": ("lr=0.00167", "lr=0.005", "lr=0.015"),
              "dsm": ("sigma=0.03", "sigma=0.1", "sigma=0.3"), "ssm": ("lr=0.00167", "lr=0.005", "lr=0.015")}
DEFAULTS = {"nce": "lr=0.005", "dsm": "sigma=0.1", "ssm": "lr=0.005"}
KEYS = ["arch", "dataset"]


def complete(df, n_runs: int | None = None):
    """The rows of the seeds that every cell finished (``n_runs`` runs per cell; a stopped
    study keeps whole seeds)."""
    n = n_runs or df.groupby(["method", "variant"]).ngroups
    per = df.groupby(["seed", "arch", "dataset"]).size()
    cells = df.groupby(["arch", "dataset"]).ngroups
    ok = [s for s, d in per.groupby(level=0) if len(d) == cells and (d == n).all()]
    return df[df.seed.isin(ok)]


def tuned(df):
    """One row per arch, dataset, seed and method: the candidate of :data:`TUNED_GRID` with
    the best validation log-likelihood among those that pass the normaliser check (among all
    when none does; a run that diverged is never chosen over one that did not)."""
    import pandas as pd

    out = []
    for m, grid in TUNED_GRID.items():
        d = df[(df.method == m) & df.variant.isin(grid)].copy()
        d["ok"] = d.proper.astype(bool)
        d["score"] = d.ll_val.fillna(-np.inf)
        idx = (d.sort_values(["ok", "score", "variant"], ascending=[False, False, True])
               .groupby(KEYS + ["seed"]).head(1).index)
        out.append(df.loc[idx])
    return pd.concat(out).sort_values(KEYS + ["seed", "method"]).reset_index(drop=True)


def at_defaults(df, schedule: str):
    """One row per arch, dataset, seed and method at the method's default (CNCE: ``eps=schedule``)."""
    want = {"cnce": eps_label(Schedule(schedule)), **DEFAULTS}
    keep = np.zeros(len(df), dtype=bool)
    for m, v in want.items():
        keep |= ((df.method == m) & (df.variant == v)).to_numpy()
    return df[keep].sort_values(KEYS + ["seed", "method"]).reset_index(drop=True)


def _outcome(lo, hi):
    if lo > 0:
        return "higher"
    if hi < 0:
        return "lower"
    return "no significant difference"


def paired(table, ref: str = "cnce", *, family: float = 0.95, col: str = "ll_test"):
    """``ref`` minus every other method per arch and dataset, paired by seed. The intervals
    are at level ``1 - (1 - family) / m`` for ``m`` comparisons (Bonferroni), so that all of
    them hold together with probability ``family``; ``outcome`` says whether ``ref`` is
    significantly "higher", "lower" or shows "no significant difference". Scores are the
    log-likelihoods of the networks' densities restricted to the box (a run that failed the
    normaliser check is scored so too; a run that diverged is NaN and its pair dropped)."""
    import pandas as pd

    groups = list(table.groupby(KEYS, sort=False))
    others = [m for m in table.method.unique() if m != ref]
    n_cmp = len(groups) * len(others)
    level = 1 - (1 - family) / n_cmp
    out = []
    for key, d in groups:
        y = d.pivot(index="seed", columns="method", values=col)
        for o in others:
            diff = (y[ref] - y[o]).dropna()
            m, lo, hi, kind = seed_interval(diff, level, empty=True)
            out.append(dict(zip(KEYS, key)) | {"other": o, "diff": m, "lo": lo, "hi": hi, "seeds": len(diff),
                                               "kind": kind, "level": level, "outcome": _outcome(lo, hi)})
    return pd.DataFrame(out)


def rule_study(df, rules=("once", "rechoose", "carry", "upward"), fixed=("eps=0.3", "eps=1", "eps=3"),
               family: float = 0.95, col: str = "ll_test"):
    """Per arch and dataset, each candidate rule minus the *best* fixed eps (the fixed eps with
    the highest mean test log-likelihood over seeds, picked with hindsight, which favours the
    fixed eps), paired by seed, Bonferroni-corrected over all candidates and cases. The
    candidates are the schedules ``rules`` and the fixed multiples of the data scale
    themselves (``"fixed 0.3"``, ...: a fixed multiple is a rule a default could be)."""
    import pandas as pd

    d = df[df.method == "cnce"]
    groups = list(d.groupby(KEYS, sort=False))
    cands = [(r, eps_label(Schedule(r))) for r in rules] + [(f"fixed {format_eps(parse_eps_label(v))}", v) for v in fixed]
    level = 1 - (1 - family) / (len(groups) * len(cands))
    out = []
    for key, g in groups:
        y = g.pivot(index="seed", columns="variant", values=col)
        best = y[list(fixed)].mean().idxmax()
        for name, v in cands:
            diff = (y[v] - y[best]).dropna()
            m, lo, hi, kind = seed_interval(diff, level, empty=True)
            if v == best:
                m, lo, hi = 0.0, 0.0, 0.0
            out.append(dict(zip(KEYS, key)) | {"rule": name, "best_fixed": best, "diff": m, "lo": lo, "hi": hi,
                                               "seeds": len(diff), "kind": kind, "level": level,
                                               "outcome": _outcome(lo, hi)})
    return pd.DataFrame(out)


def choose_default(rs):
    """The candidate that is never significantly below the best fixed eps (no interval
    entirely below 0) with the highest mean difference over cases; ``None`` when every
    candidate is significantly worse somewhere."""
    ok = rs.groupby("rule").hi.min()
    ok = ok[ok >= 0].index
    if not len(ok):
        return None
    return rs[rs.rule.isin(ok)].groupby("rule")["diff"].mean().idxmax()


def verdict_items(p, labels, ref: str = "cnce"):
    """Per other method: where ``ref`` is higher, lower or not significantly different."""
    out = []
    n = p.groupby(KEYS).ngroups
    for other, d in p.groupby("other", sort=False):
        bits = []
        for outcome in ("higher", "no significant difference", "lower"):
            where = [f"{ds}" + ("" if a == "mlp" else f" ({a})") for a, ds in zip(d[d.outcome == outcome].arch,
                                                                                d[d.outcome == outcome].dataset)]
            if where:
                bits.append(f"{outcome} on {'all ' + str(n) + ' cases' if len(where) == n else ', '.join(where)}")
        out.append((f"{labels[ref]} against {labels[other]}",
                    f"{'; '.join(bits)} (mean differences {d['diff'].min():+.2f} to {d['diff'].max():+.2f} nats)"))
    return out
