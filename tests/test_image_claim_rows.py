"""The image chapter's claims rows (cnce.images.claims): each badge rule on inputs whose answer
is known, and the committed measures' round trip through JSON."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from cnce.images.claims import VERDICTS
from cnce.images import claims as C
from cnce.images.verdicts import Measured, not_testable


def _m(verdict: str, value=0.4, base=0.05) -> Measured:
    return Measured(claim="c", measure="share of units", value=value, baselines={"random": base}, interval=(0.3, 0.5),
                    rule="range of 2 seeds", verdict=verdict, n_seeds=2)


@pytest.mark.parametrize("sentence,badge", [("supported: 0.40 of units", "reproduced"),
                                            ("partly: matched |cos| 0.49", "partly reproduced"),
                                            ("not supported: 0.07 of units", "not reproduced"),
                                            ("contradicted: after 11 meta-iterations", "not reproduced")])
def test_badge_follows_the_verdict_sentence(sentence, badge):
    assert C.badge(_m(sentence)) == badge


def test_badge_of_not_testable_and_of_an_unknown_sentence():
    nt = not_testable("c", "m", "the units span 0.46 octaves")
    assert C.badge(nt) == "not testable here"
    row = C.row_from_measured(nt, claim="x", paper="y")
    assert row.verdict == "not testable here" and "0.46 octaves" in row.measured and row.short == "the units span 0.46 octaves"
    with pytest.raises(ValueError, match="starts with none"):
        C.badge(_m("holds"))


def test_parts_rule():
    sup, no = _m("supported: x"), _m("not supported: x", value=0.06)
    nt = not_testable("c", "m", "0.46 octaves")
    kw = dict(claim="layer 2", paper="p")
    assert C.row_from_parts({"position": sup, "orientation": sup, "frequency": sup}, **kw).verdict == "reproduced"
    row = C.row_from_parts({"position": sup, "orientation": sup, "frequency": nt}, **kw)
    assert row.verdict == "partly reproduced" and "frequency not testable" in row.short
    assert C.row_from_parts({"position": no, "orientation": no}, **kw).verdict == "not reproduced"
    assert C.row_from_parts({"frequency": nt}, **kw).verdict == "not testable here"


def test_layer1_rule():
    ok = dict(chance=0.05, control=0.9, negatives=0.0, data="test photographs")
    assert C.layer1_row([0.84, 0.92], **ok).verdict == "reproduced"
    assert C.layer1_row([0.84, 0.3], **ok).verdict == "not reproduced"
    # a measure whose positive control fails (or whose negatives pass) certifies nothing
    assert C.layer1_row([0.84], **(ok | {"control": 0.2})).verdict == "not testable here"
    assert C.layer1_row([0.84], **(ok | {"negatives": 0.5})).verdict == "not testable here"
    assert "84-92 %" in C.layer1_row([0.84, 0.92], **ok).measured


def test_recipe_row_is_beyond_the_paper_and_table_columns():
    r = C.recipe_row([0.86, 0.87], decides="at demo size several settings change together.")
    assert r.beyond and r.verdict == "beyond the paper" and "range of 2 seeds" in r.measured
    with pytest.raises(ValueError, match="beyond"):
        C.ClaimRow("c", "p", "m", "s", "reproduced", beyond=True)
    with pytest.raises(ValueError, match="verdict"):
        C.ClaimRow("c", "p", "m", "s", "holds")
    t = C.image_claims([r, C.layer1_row([0.9], chance=0.05, control=0.9, negatives=0.0, data="d")])
    assert list(t.columns) == ["claim", "paper", "measured", "short", "verdict", "page", "stats", "beyond"]
    assert set(t.verdict) <= set(VERDICTS) and t.beyond.tolist() == [True, False]


def test_seed_table_gives_the_range_for_two_seeds():
    recs = [dict(optimiser="cg", schedule="main", seed=s, oriented=v) for s, v in enumerate((0.75, 0.99))]
    recs += [dict(optimiser="cg", schedule="fresh", seed=s, oriented=v) for s, v in enumerate((0.8, 0.9, 0.97))]
    t = C.seed_table(recs, columns=("oriented",))
    main = t.loc[("cg", "main")]
    assert (main["oriented_lo"], main["oriented_hi"]) == (0.75, 0.99) and main["oriented_rule"] == "range of 2 seeds"
    assert t.loc[("cg", "fresh"), "oriented_hi"] <= 1.0  # a share's t interval is clipped
    assert "2 degrees of freedom" in t.loc[("cg", "fresh"), "oriented_rule"]
    assert C.format_interval([0.835, 0.92]) == "88 % [84, 92] (range of 2 seeds)"


def test_measured_round_trip(tmp_path):
    ms = {"a": _m("supported: x"), "b": not_testable("c", "m", "why")}
    table = pd.DataFrame({"meta": [0, 1], "similarity": [1.0, 0.5]}).set_index("meta")
    p = tmp_path / "claims.json"
    p.write_text(C.save_measured(ms, {"d2": table}, {"git": {"git_commit": "abc"}}))
    back, tables, meta = C.load_measured(p)
    assert back["a"] == ms["a"] and math.isnan(back["b"].value) and not back["b"].testable
    assert tables["d2"].loc[1, "similarity"] == 0.5 and meta["git"]["git_commit"] == "abc"
    with pytest.raises(ValueError, match="path="):
        C.load_measured(tmp_path / "missing.json")


def test_short_texts_by_kind_of_value():
    share = C.row_from_measured(_m("supported: x", value=0.65, base=0.06), claim="c", paper="p")
    assert share.short == "65 % of units against at most 6 % for the baselines"
    diff = Measured(claim="c", measure="CNCE minus NCE", value=-0.44, baselines={"no difference": 0.0},
                    interval=(-0.64, -0.24), rule="t", verdict="contradicted: x", n_seeds=3)
    row = C.row_from_measured(diff, claim="c", paper="p", percent="points")
    assert row.short == "-44 points [-64, -24]" and row.verdict == "not reproduced"
    sim = Measured(claim="c", measure="matched |cos|", value=0.49, baselines={"random sets": 0.34},
                   interval=(0.45, 0.53), rule="t", verdict="partly: x", n_seeds=1)
    assert C.row_from_measured(sim, claim="c", paper="p", percent=False).short == "0.49 [0.45, 0.53] against random sets 0.34"


def test_chapter_rows_from_the_committed_runs():
    """Layer 1 on the run shown (three seeds of one recipe), layers 2-4 on the photo pack, D.2
    over its seeds, two rows beyond the paper; every badge one of the claims table's."""
    from cnce.images import claims as C
    from cnce.images import runs

    rows = C.chapter_rows()
    assert [r.claim.split(",")[1].split(":")[0].split(" (")[0].strip() for r in rows][:5] == [
        "layer 1", "layer 2", "layer 3", "layer 4", "layer 4"]
    assert all("(photo pack)" in r.claim for r in rows[1:5])
    assert [r.beyond for r in rows].count(True) == 2 and rows[8].verdict == "beyond the paper"
    # from the settings file: layer-2 sparsity and the PCA variance follow the others
    assert [r.claim.split(", ", 1)[1] for r in rows[9:]] == ["layer 2 sparsity (photo pack)", "PCA to D = 600 (Sec. 4.1)"]
    assert "null 95th percentiles" in rows[2].measured and rows[5].verdict == "not reproduced"
    # layer 1 from data/checks/image-layer1.json: Gabor-like in three parts, both data groups
    assert "Gabor-like" in rows[0].short and "band-pass" in rows[0].measured and "photo pack" in rows[0].measured
    assert all(r.verdict in C.VERDICTS for r in rows)
    a, b = (runs.load_state(runs.weights_dir() / r)["config"] for r in ("paper", "paper-seed2"))
    assert runs.same_recipe(a, b) and not runs.same_recipe(a, runs.load_state(runs.weights_dir() / "photos" / "paper-seed0")["config"])
