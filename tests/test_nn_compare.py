"""The verdict machinery of notebook 08 on tables whose answers are known."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cnce.nn import compare


def _table(effect, seeds=5, noise=0.01, cases=(("mlp", "a"), ("mlp", "b")), seed=0):
    """Rows of a fake study: every variant of every method, ll = base + effect[variant] + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    variants = {"cnce": ["eps=once", "eps=rechoose", "eps=carry", "eps=upward", *compare.TUNED_GRID["cnce"]],
                "nce": list(compare.TUNED_GRID["nce"]), "dsm": list(compare.TUNED_GRID["dsm"]),
                "ssm": list(compare.TUNED_GRID["ssm"])}
    for arch, ds in cases:
        for s in range(seeds):
            base = rng.normal()  # the seed's data: shared by every method (the pairing removes it)
            for m, vs in variants.items():
                for v in vs:
                    e = effect.get(v, effect.get(m, 0.0))
                    rows.append(dict(arch=arch, dataset=ds, seed=s, method=m, variant=v, proper=True,
                                     ll_val=base + e + noise * rng.normal(), ll_test=base + e + noise * rng.normal()))
    return pd.DataFrame(rows)


def test_paired_finds_a_known_difference_and_no_difference():
    df = _table({"cnce": 0.5, "nce": 0.5, "dsm": 0.0, "ssm": 0.5})
    p = compare.paired(compare.tuned(df))
    assert set(p[p.other == "dsm"].outcome) == {"higher"}
    assert set(p[p.other.isin(["nce", "ssm"])].outcome) == {"no significant difference"}
    assert np.isclose(p.level.iloc[0], 1 - 0.05 / 6)  # 2 cases x 3 other methods
    assert (p.kind == "t").all()
    two = compare.paired(compare.tuned(_table({"cnce": 1.0}, seeds=2)))
    assert (two.kind == "range").all()


def test_bonferroni_widens_the_intervals():
    df = compare.tuned(_table({"cnce": 0.02}, noise=0.02, seed=3))
    one = compare.paired(df[df.dataset == "a"])
    both = compare.paired(df)
    a = both[both.dataset == "a"].set_index("other")
    for o, r in one.set_index("other").iterrows():
        assert a.loc[o, "hi"] - a.loc[o, "lo"] > r.hi - r.lo


def test_tuning_picks_the_best_validation_candidate_and_skips_improper_runs():
    df = _table({"sigma=0.3": 1.0, "sigma=0.03": 2.0})
    df.loc[df.variant == "sigma=0.03", "proper"] = False
    t = compare.tuned(df)
    assert set(t[t.method == "dsm"].variant) == {"sigma=0.3"}
    df.loc[df.method == "dsm", "proper"] = False  # none passes: the best validation score
    assert set(compare.tuned(df).query("method == 'dsm'").variant) == {"sigma=0.03"}
    assert len(t) == 2 * 5 * 4


def test_rule_study_and_the_default():
    # carry as good as the best fixed eps, rechoose clearly worse, once slightly better
    df = _table({"eps=1": 0.3, "eps=carry": 0.3, "eps=rechoose": -0.5, "eps=once": 0.35, "eps=upward": 0.0})
    rs = compare.rule_study(df)
    assert set(rs.best_fixed) == {"eps=1"}
    assert set(rs[rs.rule == "rechoose"].outcome) == {"lower"}
    assert set(rs[rs.rule == "carry"].outcome) == {"no significant difference"}
    assert compare.choose_default(rs) == "once"
    assert set(rs[rs.rule == "fixed 1"]["diff"]) == {0.0}
    # the best fixed eps is itself a candidate: with every schedule worse it is the default
    assert compare.choose_default(compare.rule_study(_table({"eps=1": 1.0}))) == "fixed 1"
    # each fixed eps best on one case and clearly worse on the other, the schedules worse on both: none qualifies
    a = _table({"eps=0.3": 1.0}, cases=(("mlp", "a"),))
    b = _table({"eps=3": 1.0}, cases=(("mlp", "b"),), seed=1)
    assert compare.choose_default(compare.rule_study(pd.concat([a, b]))) is None


def test_defaults_and_complete_seeds():
    df = _table({})
    d = compare.at_defaults(df, "carry")
    assert set(d.variant) == {"eps=carry", "lr=0.005", "sigma=0.1"} and len(d) == 2 * 5 * 4
    cut = df[~((df.seed == 4) & (df.dataset == "b") & (df.method == "ssm"))]
    assert sorted(compare.complete(cut, 16).seed.unique()) == [0, 1, 2, 3]


def test_verdict_words():
    df = _table({"cnce": 0.5, "nce": 0.5, "dsm": 0.0, "ssm": 0.5})
    items = dict(compare.verdict_items(compare.paired(compare.tuned(df)), {"cnce": "CNCE", "nce": "NCE", "dsm": "DSM",
                                                                            "ssm": "SSM"}))
    assert items["CNCE against DSM"].startswith("higher on all 2 cases")
    assert "ties" not in " ".join(items.values())
    assert items["CNCE against NCE"].startswith("no significant difference on all 2 cases")


@pytest.mark.parametrize("n", [1, 3])
def test_interval_kinds(n):
    from cnce.report import seed_interval

    m, lo, hi, kind = seed_interval(np.arange(n, dtype=float), 0.95, empty=True)
    assert kind == ("one" if n == 1 else "t") and (np.isnan(lo) if n == 1 else lo < m < hi)
    assert seed_interval([], 0.95, empty=True)[3] == "none"


def test_eps_auto_is_the_rule_the_committed_study_picks():
    """cnce.nn's eps="auto" must be what notebook 08's study chooses (the candidate never
    significantly below the best fixed eps, with the highest mean)."""
    from cnce.nn import study
    import cnce.nn as nn

    stored = study.load()
    if stored is None:
        pytest.skip("no committed study")
    rows, prov = stored
    df = compare.complete(rows, len(study.candidates(study.StudySettings(**prov["settings"]))))
    picked = compare.choose_default(compare.rule_study(df))
    package = f"fixed {nn.DEFAULT_FACTOR:g}" if nn.DEFAULT_SCHEDULE == "scale" else nn.DEFAULT_SCHEDULE
    assert picked == package
    assert not prov["runs"][0]["environment"]["git_dirty_package"]
    assert {r["environment"]["package_source_sha256"] for r in prov["runs"]} == {prov["package_source_sha256"]}


def test_nn_study_is_a_cnce_command():
    """The study runs as ``python -m cnce nn-study``, registered like every other command."""
    from cnce.cli import build_parser

    args = build_parser().parse_args(["nn-study", "--settings", "tiny", "--name", "x", "--limit-seconds", "5"])
    assert (args.settings, args.name, args.limit_seconds, args.allow_dirty) == ("tiny", "x", 5.0, False)
    assert args.func.__module__ == "cnce.nn.cli"
