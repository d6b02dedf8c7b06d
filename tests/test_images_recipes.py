"""Finding committed image runs (cnce.images.runs.find_weights) and the ablation's configurations."""
from dataclasses import replace

import pytest

from cnce.images.configs import CONFIGS, ablation_config, get_config
from cnce.images.runs import find_weights
from cnce.images.train import train


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("weights")
    cfg = replace(get_config("smoke"), meta_iters=(2, 1, 1, 1))
    train(cfg, out=root / "paper", layers=(1,), device="cpu", progress=False)  # layer 1 only
    train(replace(cfg, name="smoke-adam", optimizer="adam", main_set=None, lr=1e-3), out=root / "demo", device="cpu",
          progress=False)
    (root / "unfinished").mkdir()
    return root


def test_find_weights_takes_the_first_finished_run(two_runs):
    # "paper" has only layer 1, so "auto" skips it; "demo" finished every layer
    assert find_weights("auto", root=two_runs).name == "demo"
    assert find_weights("paper", root=two_runs).name == "paper"
    with pytest.raises(ValueError, match="no state.pt"):
        find_weights("unfinished", root=two_runs)
    assert find_weights("auto", root=two_runs / "unfinished") is None


def test_ablation_changes_one_thing_at_a_time():
    base = get_config("paper")
    for opt in ("cg", "lbfgs", "adam"):
        for sched in ("main", "fresh"):
            c = ablation_config("paper", opt, sched)
            diff = {k for k, v in c.to_dict().items() if v != base.to_dict()[k]} - {"name"}
            want = ({"optimizer"} if opt != "cg" else set()) | ({"main_set"} if sched == "fresh" else set())
            assert diff == want, (opt, sched, diff)
    assert ablation_config("paper", "cg", "main") is CONFIGS["paper"]
    assert ablation_config("paper", "adam", "fresh") is CONFIGS["paper-adam"]
    assert ablation_config("demo-authors", "adam", "fresh").name == "demo"
    assert ablation_config("demo-authors", "cg", "main").main_set == (40_000, 10_000, 10_000, 10_000)
    with pytest.raises(ValueError, match="optimizer"):
        ablation_config("paper", "sgd", "main")
    with pytest.raises(ValueError, match="schedule"):
        ablation_config("paper", "cg", "weekly")


def test_the_paper_configuration_is_the_authors_recipe():
    c = get_config("paper")
    assert (c.optimizer, c.steps, c.redraw, c.n_whiten, c.eps_rule, c.kappa) == ("cg", 10, "authors", 400_000, "authors", 6)
    assert c.main_set[0] == 2 * c.n_patches[0] and c.meta_iters == (40, 20, 20, 20)
    d2 = c.for_comparison()
    assert (d2.K1, d2.n_patches[0], d2.main_set[0], d2.optimizer) == (100, 100_000, 200_000, "cg")
