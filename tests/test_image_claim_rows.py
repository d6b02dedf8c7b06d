"""The image chapter's claims rows (cnce.images.claims): each verdict rule on inputs whose
answer is known."""
from __future__ import annotations

import pytest

from cnce.experiments.claims import VERDICTS
from cnce.images import claims as C


def test_seed_interval_kinds():
    m, lo, hi, kind = C.seed_interval([0.8, 0.9])
    assert (lo, hi) == (0.8, 0.9) and "range" in kind  # two seeds: the range, not a t interval
    m, lo, hi, kind = C.seed_interval([0.8, 0.9, 1.0])
    assert lo < 0.8 and hi > 1.0 and "2 degrees of freedom" in kind
    assert C.seed_interval([0.5])[1:3] == (0.5, 0.5)
    with pytest.raises(ValueError, match="values"):
        C.seed_interval([])
    assert C.format_interval([0.835, 0.92]) == "88 % [84, 92] (range of 2 seeds)"


def test_layer1_rule():
    ok = dict(chance=0.05, control=0.9, negatives=0.0, data="test photographs")
    assert C.layer1_row([0.84, 0.92], **ok).verdict == "reproduced"
    assert C.layer1_row([0.84, 0.3], **ok).verdict == "not reproduced"
    # a measure whose positive control fails (or whose negatives pass) certifies nothing
    assert C.layer1_row([0.84], **(ok | {"control": 0.2})).verdict == "not testable here"
    assert C.layer1_row([0.84], **(ok | {"negatives": 0.5})).verdict == "not testable here"
    assert "84-92 %" in C.layer1_row([0.84, 0.92], **ok).measured


def test_layer2_rule():
    sig, null = (0.4, 1e-9), (0.06, 0.4)
    assert C.layer2_row({"position": sig, "orientation": sig, "frequency": sig}, 200).verdict == "reproduced"
    assert C.layer2_row({"position": sig, "orientation": null, "frequency": null}, 200).verdict == "partly reproduced"
    assert C.layer2_row({"position": null, "orientation": null}, 200).verdict == "not reproduced"
    row = C.layer2_row({"position": sig, "orientation": sig, "frequency": null}, 200,
                       untestable={"frequency": "layer-1 features span 0.4 octaves"})
    assert row.verdict == "partly reproduced" and "0.4 octaves" in row.measured
    assert C.layer2_row({"frequency": sig}, 200, untestable={"frequency": "x"}).verdict == "not testable here"


def test_share_rule():
    kw = dict(claim="c", paper="p", measure="m", baseline=0.05, baseline_name="random weights")
    assert C.share_row(learned=[0.7, 0.8, 0.75], p=1e-6, **kw).verdict == "reproduced"
    assert C.share_row(learned=[0.2, 0.25], p=1e-4, **kw).verdict == "partly reproduced"
    assert C.share_row(learned=[0.06], p=0.3, **kw).verdict == "not reproduced"
    row = C.share_row(learned=[0.9], p=None, untestable="all layer-3 units prefer 0.25 cycles/pixel", **kw)
    assert row.verdict == "not testable here" and "0.25 cycles/pixel" in row.measured
    with pytest.raises(ValueError, match="p must"):
        C.share_row(learned=[0.9], p=None, **kw)


def test_d2_rules():
    end = dict(meta=11, cnce_end=0.7, nce_end=0.9, meta_end=20)
    assert C.d2_faster_row([0.10, 0.12, 0.11], **end).verdict == "reproduced"
    r = C.d2_faster_row([-0.20, -0.25, -0.22], **end)
    assert r.verdict == "not reproduced" and "NCE faster" in r.measured and "2 degrees of freedom" in r.measured
    assert "no significant difference" in C.d2_faster_row([-0.2, 0.2, 0.01], **end).measured
    assert C.d2_faster_row([0.1, 0.2], **end).verdict == "not testable here"
    assert "declines to claim" in r.paper
    assert C.d2_similar_row([0.8, 0.82, 0.79], random_similarity=0.3, p=1e-5, meta=11).verdict == "reproduced"
    assert C.d2_similar_row([0.31, 0.3], random_similarity=0.3, p=0.4, meta=11).verdict == "not reproduced"


def test_recipe_row_is_beyond_the_paper_and_table_columns():
    r = C.recipe_row([0.86, 0.87], decides="at demo size the schedule and sizes decide.")
    assert r.beyond and r.verdict == "beyond the paper"
    with pytest.raises(ValueError, match="beyond"):
        C.ClaimRow("c", "p", "m", "s", "reproduced", beyond=True)
    with pytest.raises(ValueError, match="verdict"):
        C.ClaimRow("c", "p", "m", "s", "holds")
    t = C.image_claims([r, C.layer1_row([0.9], chance=0.05, control=0.9, negatives=0.0, data="d")])
    assert list(t.columns) == ["claim", "paper", "measured", "short", "verdict", "page", "stats", "beyond"]
    assert set(t.verdict) <= set(VERDICTS) and t.beyond.tolist() == [True, False]


def test_seed_table_gives_the_range_for_two_seeds():
    recs = [dict(optimiser="cg", schedule="main", seed=s, oriented=v) for s, v in enumerate((0.75, 0.99))]
    recs += [dict(optimiser="cg", schedule="fresh", seed=s, oriented=v) for s, v in enumerate((0.8, 0.9, 0.85))]
    t = C.seed_table(recs, columns=("oriented",))
    main = t.loc[("cg", "main")]
    assert (main["oriented_lo"], main["oriented_hi"]) == (0.75, 0.99)  # never an interval above 1
    assert t.loc[("cg", "fresh"), "oriented_kind"].startswith("95 % t interval")
