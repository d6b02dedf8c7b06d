"""The committed claim measures of the image page (data/checks/image-claims.json) match what the
committed runs give when measured again (their clean provenance:
tests/test_check_files_provenance.py)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from companion.paths import REPO_ROOT
from cnce.images import claims, d2, layer_claims, measures, runs

FILE = REPO_ROOT / "data" / "checks" / "image-claims.json"


@pytest.fixture(scope="module")
def committed():
    return claims.load_measured(FILE)


def test_every_group_and_d2_seed_was_measured(committed):
    measured, tables, meta = committed
    for g in meta["groups"]:
        assert f"{g}layer3_contours" in measured and f"{g}layer2_position_extended" in measured, g
    assert {"d2_table", "d2_table_s1", "d2_table_s2"} <= set(tables) and "d2_similar_s2" in measured


def test_d2_faster_remeasured(committed):
    measured, _, _ = committed
    again = d2.faster_claim(runs.load_pt(measured_args(committed)["d2"]))
    old = measured["d2_faster"]
    # the sentence now names its orientation measure (Fourier index) and the seeds' signs; the
    # number and the verdict's word are what the committed file decides
    assert again.value == pytest.approx(old.value, abs=1e-9) and again.interval == pytest.approx(old.interval)
    assert again.verdict.split(":")[0] == old.verdict.split(":")[0]


def test_layer2_frequency_remeasured(committed):
    """The cheapest layer claim, from the committed first layers alone: whether layer 2's
    frequency claim is testable, with the spreads (in its reason) that decide it. The pooling
    weights do not enter that decision (two different ``q`` give the same answer), and the check
    can say "testable": the same units with frequencies spread over 3 octaves are testable."""
    measured, _, _ = committed
    props = []
    for r in committed[2]["groups"][""]["runs"]:
        net, wh = runs.network_from_state(runs.load_state(runs.weights_dir() / r))
        props.append(measures.filter_properties(measures.unit_images(net.W1.detach(), wh)["receptive fields"]))
    rng = np.random.default_rng(0)
    q = [rng.random((10, len(p.frequency))) for p in props]
    again = layer_claims.pooling_claim(q, props, "frequency", layer=2, n_random=20)
    old = measured["layer2_frequency"]
    assert again.testable == old.testable and again.not_testable == old.not_testable
    other_q = layer_claims.pooling_claim([np.zeros_like(x) for x in q], props, "frequency", layer=2, n_random=20)
    assert (other_q.testable, other_q.not_testable) == (again.testable, again.not_testable)
    if not old.testable:  # the positive control: a wide frequency spread is testable
        wide = []
        for p in props:
            d = layer_claims._props_dict(p)
            d["frequency"] = d["frequency"] * 2.0 ** rng.uniform(-1.5, 1.5, len(d["frequency"]))
            wide.append(d)
        assert layer_claims.pooling_claim(q, wide, "frequency", layer=2, n_random=20).testable


def measured_args(committed) -> dict:
    return committed[2]["args"]


@pytest.mark.slow
def test_script_remeasures_every_claim(tmp_path, committed):
    """All measures again with the committed arguments: the same verdict words, and values
    within 0.02 (the random sets of the permutation tests are seeded, so they agree exactly on
    one machine; another CPU may move a unit at a threshold)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("image_claims", REPO_ROOT / "scripts" / "image_claims.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = measured_args(committed)
    out = tmp_path / "claims.json"
    assert mod.main(["--out", str(out), "--groups", "", "--d2", args["d2"], "--n-random", str(args["n_random"]),
                     "--seed", str(args["seed"]), "--allow-dirty"]) == 0
    again, _, _ = claims.load_measured(out)
    for k, old in committed[0].items():
        if k not in again:  # the other groups of runs
            continue
        new = again[k]
        assert claims.badge(new) == claims.badge(old), k
        if old.testable:
            assert math.isclose(new.value, old.value, abs_tol=0.02), (k, new.value, old.value)
    json.loads(out.read_text())  # valid JSON
