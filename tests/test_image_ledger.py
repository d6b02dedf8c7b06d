"""Known answers of the image claims' rules in the ledger (``companion/claims/images.py``)."""
from __future__ import annotations

import pytest

from cnce.images.verdicts import Measured, not_testable
from companion.claims import images as I


def test_settings_verdict_agrees_or_names_the_deciding_setting():
    assert I.settings_verdict({"a": "reproduced", "b": "reproduced"}) == ("reproduced", "")
    v, why = I.settings_verdict({"a": "not reproduced", "b": "not reproduced"})
    assert v == "not reproduced" and "every testable setting" in why
    v, why = I.settings_verdict({"a": "reproduced", "b": "not reproduced"})
    assert v == "partly reproduced" and "reproduced under a, not under b" in why
    v, why = I.settings_verdict({"a": "not reproduced", "b": "not testable here"})
    assert v == "not reproduced" and "b: not testable" in why
    assert I.settings_verdict({"a": "not testable here"})[0] == "not testable here"
    assert I.settings_verdict({"a": "reproduced", "b": "not testable here"})[0] == "partly reproduced"
    with pytest.raises(ValueError, match="words"):
        I.settings_verdict({})


def _share(per_seed, q95, p):
    q = [{"mean": q95 / 2, "q05": 0.0, "q50": q95 / 2, "q95": q95, "n": 200}] * len(per_seed)
    return Measured(claim="c", measure="m", value=sum(per_seed) / len(per_seed), interval=(0.0, 1.0),
                    verdict="x: y", extra={"per_seed": per_seed, "p_per_seed": p, "n_tests": 1,
                                           "null quantiles": {"random": q}})


def test_existence_rule_known_answers():
    many = _share([0.2, 0.3, 0.25], 0.05, [0.005] * 3)
    v, why, nums = I.existence_by_settings({"a": many}, n_units=60)
    assert v == "reproduced" and why == "" and "12 of 60" in nums["a, seed 0"]
    few = _share([0.03, 0.03, 0.0], 0.05, [0.3, 0.3, 1.0])  # units exist in two seeds, not beyond the null
    assert I.existence_by_settings({"a": few}, n_units=60)[0] == "partly reproduced"
    none = _share([0.0, 0.0, 0.0], 0.05, [1.0] * 3)
    assert I.existence_by_settings({"a": none}, n_units=60)[0] == "not reproduced"
    untestable = not_testable("c", "m", "the positive control fails")
    v, why, _ = I.existence_by_settings({"a": untestable, "b": untestable}, n_units=30)
    assert v == "not testable here"
    v, why, _ = I.existence_by_settings({"a": few, "b": untestable}, n_units=60)
    assert v == "partly reproduced" and "b: not testable" in why


def test_image_claims_compute_from_the_committed_files():
    from companion.claims import ledger

    rows = dict((c.id, r) for c, r in ledger.compute(only={
        "image-layer-2", "image-layer-2-sparse", "image-layer-3", "image-layer-4-orientation", "image-layer-4-corners",
        "image-pca-variance", "image-d2-faster"}))
    assert rows["image-d2-faster"].verdict == "not reproduced"  # NCE ahead under both orientation measures
    assert rows["image-layer-4-corners"].verdict == "not testable here"
    assert all(r.verdict == "reproduced" or r.why for r in rows.values())
    assert any("null" in k for k in rows["image-layer-4-orientation"].numbers)


def test_layer1_is_gabor_like_in_three_parts_from_the_committed_file():
    from companion.claims import ledger

    (c, r), = ledger.compute(only={"image-layer-1"})
    assert c.id == "image-layer-1" and r.verdict in ("reproduced", "partly reproduced", "not reproduced",
                                                       "not testable here")
    # every data group and setting reports the three parts and the controls beside the share
    for group in ("bundled photographs", "photo pack"):
        for part in ("localised", "oriented", "band-pass", "Gabor-like", "controls (Gabor-like share)"):
            assert sum(k.startswith(group) and k.endswith(part) for k in r.numbers) == 2, (group, part)
    assert "localised" in r.short and "band-pass" in r.short
