"""The comparison of training recipes on the image page: measures with known answers."""
from dataclasses import replace

import pytest
import torch

from cnce.images import measures
from cnce.images.configs import get_config
from cnce.images.train import find_weights, train


def test_share_words_follow_the_number():
    assert measures.share_words(0.92) == "mostly"
    assert measures.share_words(0.5) == "mostly"
    assert measures.share_words(0.2) == "partly"
    assert measures.share_words(0.06) == "hardly"  # about chance (5 %)
    with pytest.raises(ValueError, match="share"):
        measures.share_words(1.5)


def test_generalisation_gap_pairs_training_loss_with_the_next_fresh_loss():
    # meta-iteration m: loss before its updates (fresh), train_loss after them (own sample)
    hist = [{"loss": 1.0 + m, "train_loss": 0.1 * m} for m in range(5)]
    train_l, fresh = measures.generalisation_gap(hist, last=2)
    assert train_l == pytest.approx((0.2 + 0.3) / 2)  # m = 2, 3
    assert fresh == pytest.approx((4.0 + 5.0) / 2)  # their successors m = 3, 4
    with pytest.raises(ValueError, match="history"):
        measures.generalisation_gap(hist[:1])


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("weights")
    cfg = replace(get_config("smoke"), meta_iters=(2, 1, 1, 1))
    train(cfg, out=root / "paper", layers=(1,), device="cpu", progress=False)  # layer 1 only
    full = replace(cfg, name="smoke-adam", optimizer="adam", main_set=None, lr=1e-3)
    train(full, out=root / "paper-adam", device="cpu", progress=False)
    (root / "unfinished").mkdir()
    return root


def test_finished_runs_and_recipe_table(two_runs):
    runs = measures.finished_runs(two_runs)
    assert list(runs) == ["paper", "paper-adam"]  # the folder without a state is left out
    t = measures.recipe_table(runs)
    assert list(t.index) == ["paper", "paper-adam"]
    assert set(t["optimiser"]) == {"cg", "adam"}
    assert ((t["oriented share"] >= 0) & (t["oriented share"] <= 1)).all()
    assert (t["OSI localised noise"] > 0).all()
    assert torch.isfinite(torch.tensor(t[["train loss", "next fresh loss"]].to_numpy())).all()


def test_recipe_findings_quote_the_table_and_say_when_runs_are_missing():
    import pandas as pd

    row = {"seed": 0, "oriented share": 0.02, "OSI": 0.1, "OSI localised noise": 0.2, "train loss": 0.13,
           "next fresh loss": 0.7, "layer-1 seconds": 30.0, "device": "GPU X"}
    t = pd.DataFrame([{**row, "config": "paper"}, {**row, "config": "paper", "seed": 1, "oriented share": 0.03},
                      {**row, "config": "paper-adam", "oriented share": 0.92, "OSI": 0.67}],
                     index=["paper", "paper-seed1", "paper-adam"])
    f = measures.recipe_findings(t)
    assert (f["n_paper"], f["paper_seeds"], f["paper_oriented"], f["adam_oriented"]) == ("2", "0, 1", "2 to 3", "92")
    assert f["verdict"].startswith("On these photographs the authors' recipe does not")
    missing = measures.recipe_findings(t.drop(index="paper-adam"))
    assert set(missing) == set(f) and missing["adam_osi"] == "n/a" and "not committed" in missing["verdict"]


def test_find_weights_prefers_the_finished_paper_adam_run(two_runs):
    # "paper" has only layer 1, so "auto" skips it; "paper-adam" finished every layer
    assert find_weights("auto", root=two_runs).name == "paper-adam"
    assert find_weights("paper", root=two_runs).name == "paper"
