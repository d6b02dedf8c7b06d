"""Page 08's question of ours (beyond the paper), declared once: should a neural energy be
trained with CNCE rather than NCE, DSM or SSM, and with which eps rule? Computed from the
committed energy-network study (``data/results/paper/nn-study.csv``, ``python -m cnce nn-study``)
by the comparison functions of :mod:`cnce.nn.compare` (methods tuned on equal validation budgets;
paired, Bonferroni-corrected intervals over seeds).
"""
from __future__ import annotations

from . import OURS, QUESTION, Record, declare


def _study(ctx):
    def load():
        from cnce.nn import compare
        from cnce.nn import study as nn_study

        stored = nn_study.load("nn-study")
        if stored is None:
            return None
        rows, prov = stored
        sc = nn_study.StudySettings(**prov["settings"])
        return compare.complete(rows, len(nn_study.candidates(sc)))
    return ctx.cached("nn:study", load)


def _methods(ctx):
    from cnce.nn import compare, plots

    df = _study(ctx)
    if df is None:
        return Record(verdict=QUESTION, short="no committed energy-network study",
                      measured="no committed energy-network study (data/results/paper/nn-study.csv)")
    pair = compare.paired(compare.tuned(df))
    items = compare.verdict_items(pair.assign(other=pair.other.str.lower()), plots.LABELS)
    rs = compare.rule_study(df)
    default = compare.choose_default(rs)
    eps_line = (f"'{default}' is never significantly below the best fixed eps" if default
                else "every schedule is significantly below the best fixed eps somewhere")
    n_seeds = int(df.seed.nunique())
    lower = int((pair.outcome == "lower").sum())
    return Record(
        verdict=QUESTION, value=float(lower), seeds=f"{n_seeds} seeds, data redrawn per seed",
        baselines={"NCE, DSM, SSM (tuned on the same budget)": float(len(pair))},
        short=f"CNCE significantly lower in {lower} of {len(pair)} paired comparisons; eps rule: {eps_line}",
        measured="held-out log-likelihood (exact, 2-D), CNCE minus each other method tuned on equal validation "
                 "budgets, paired intervals over seeds, Bonferroni-corrected: "
                 + "; ".join(f"{lab}: {st}" for lab, st in items) + f". eps rule: {eps_line}",
        numbers={"lower": str(lower), "comparisons": str(len(pair)), "seeds": str(n_seeds),
                 "eps_rule": eps_line, **{lab: st for lab, st in items}})


declare(id="nn-methods", title="Energy networks: CNCE against NCE, DSM, SSM", section="beyond the paper",
        kind=OURS,
        paper="should a neural energy be trained with CNCE rather than NCE, DSM or SSM, and with which eps rule?",
        rule="no verdict (a question of ours): the row reports, per method, where CNCE is significantly higher, "
             "lower or not different, and whether the default eps rule is ever significantly below the best fixed eps",
        measure="exact held-out log-likelihood on six 2-D densities, CNCE minus the other method, each tuned on the "
                "same validation budget; paired intervals over seeds, Bonferroni-corrected",
        data="data/results/paper/nn-study.csv (python -m cnce nn-study)", baselines="NCE, DSM and SSM, tuned alike",
        page="08_energy_networks", anchor="", code="cnce.nn.compare.paired", compute=_methods)
