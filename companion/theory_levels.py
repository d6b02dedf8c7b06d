"""The level asymptotic theory predicts for the paper's error curves, as pages 02-05 draw it.

The levels are the committed ``data/results/asymptotics/theory-levels.csv`` of
``python -m companion.coverage --levels`` (page 09 explains them); they belong to the committed
paper-scale runs with seed 0, so a page draws them only when it shows those runs.
"""
from __future__ import annotations

import pandas as pd

#: the caption's sentence where the levels are drawn
DRAWN = ("Dotted: the median that asymptotic theory predicts for each curve (the sandwich covariance at the true "
         "parameters; page 09).")
#: and where they are not
NOT_DRAWN = "(The level theory predicts is drawn for the committed paper-scale run only.)"


def predicted_levels(shown: str, seed: int, note: str = "", key: str = "predicted_note") -> pd.DataFrame | None:
    """The committed predicted levels when the page shows the committed paper-scale run
    (``shown == "paper"`` and ``seed == 0``), else ``None``; glues ``key``, the caption's sentence
    saying what the dotted lines are (followed by ``note`` where they are drawn) or that they are
    not drawn."""
    from cnce.locations import data_dir
    from cnce.report import glue

    path = data_dir() / "results" / "asymptotics" / "theory-levels.csv"
    levels = pd.read_csv(path) if shown == "paper" and seed == 0 and path.exists() else None
    glue(key, (DRAWN + (" " + note if note else "")) if levels is not None else NOT_DRAWN)
    return levels


def agreement(levels: pd.DataFrame, study: str, methods=("mle", "cnce", "nce")) -> pd.DataFrame:
    """Simulated median squared error over predicted, one row per curve (method, kappa) of
    ``study`` and one column per N (1: theory's level; above 1: the simulations err more)."""
    d = levels[(levels.study == study) & levels.method.isin(list(methods))].copy()
    d["curve"] = [("MLE" if m == "mle" else f"{m.upper()}, \u03ba = {int(k)}") for m, k in zip(d.method, d.kappa)]
    d["sim/pred"] = d.sim_median / d.pred_median
    order = {m: i for i, m in enumerate(methods)}
    d = d.assign(o=d.method.map(order)).sort_values(["o", "kappa", "N"])
    return d.pivot_table(index="curve", columns="N", values="sim/pred", sort=False)


def ratio_table(levels: pd.DataFrame, study: str, num: str = "nce", den: str = "cnce", N=None) -> pd.DataFrame:
    """``num``'s median squared error over ``den``'s at equal kappa and N, predicted and simulated,
    one row per kappa and N (``N``: those only)."""
    d = levels[levels.study == study]
    if N is not None:
        d = d[d.N.isin(list(N))]
    a = d[d.method == num][["kappa", "N", "pred_median", "sim_median"]]
    b = d[d.method == den][["kappa", "N", "pred_median", "sim_median"]]
    m = a.merge(b, on=["kappa", "N"], suffixes=("_num", "_den"))
    return pd.DataFrame({"kappa": m.kappa.astype(int), "N": m.N, "predicted": m.pred_median_num / m.pred_median_den,
                         "simulated": m.sim_median_num / m.sim_median_den}).sort_values(["kappa", "N"]).reset_index(drop=True)
