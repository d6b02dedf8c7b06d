"""The committed layer-1 Gabor-like measures (data/checks/image-layer1.json) match what the
committed weights give when measured again (their clean provenance:
tests/test_check_files_provenance.py)."""
from __future__ import annotations

import math

import pytest

from cnce.images import claims, measures, runs
from companion.paths import REPO_ROOT

FILE = REPO_ROOT / "data" / "checks" / "image-layer1.json"


@pytest.fixture(scope="module")
def committed():
    return claims.load_measured(FILE)


def test_learned_units_remeasured_on_one_photo_pack_run(committed):
    """The three parts of one deciding run (photo pack, seed 0) again from its committed
    weights, with the file's thresholds (the nulls' 95 % quantiles): the same shares, up to a unit
    or two at a threshold on another CPU. The full re-measure, nulls included, is the slow test."""
    measured, _, meta = committed
    group, run = "photo pack", meta["groups"]["photo pack"][0]
    net, wh = runs.network_from_state(runs.load_state(runs.weights_dir() / run))
    rf = measures.unit_images(net.W1.detach(), wh)["receptive fields"]
    for setting, s in list(meta["settings"].items())[:1]:  # the first setting (seconds); both in the slow test
        m = measured[f"layer1_gabor | {group} | {setting}"]
        thr = m.extra["thresholds per seed"][0]
        flags = measures.gabor_like(measures.gabor_parts(rf, radius=s["radius"], octaves=s["octaves"]), thr,
                                    size=rf.shape[-1], f_max=s["f_max"])
        for part, shares in m.extra["parts per seed"].items():
            assert float(flags[part].mean()) == pytest.approx(shares[0], abs=2.5 / len(rf)), (setting, part)


@pytest.mark.slow
def test_script_remeasures_every_claim(tmp_path, committed):
    """scripts/image_layer1.py again with the committed arguments: the same verdict words, and
    values within 0.01."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("image_layer1", REPO_ROOT / "scripts" / "image_layer1.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = committed[2]["args"]
    out = tmp_path / "layer1.json"
    assert mod.main(["--out", str(out), "--seed", str(args["seed"]), "--n-perm", str(args["n_perm"]),
                     "--n-random", str(args["n_random"]), "--allow-dirty"]) == 0
    again, _, _ = claims.load_measured(out)
    assert set(again) == set(committed[0])
    for k, old in committed[0].items():
        new = again[k]
        assert claims.badge(new) == claims.badge(old), k
        if old.testable:
            assert math.isclose(new.value, old.value, abs_tol=0.01), (k, new.value, old.value)
