"""Every committed GPU run can be measured again from the repository alone, on a CPU: a sample of
them is re-measured (the oriented share of the first layer, as the training monitor logged it on
the GPU) and compared with the logged number. Tolerance: one unit in the share (1/K), for the
float16 storage of some weights and for GPU against CPU arithmetic near the threshold."""
import json

import pytest
import torch

from cnce.images import measures, runs
from cnce.images.network import ImageNetwork
from companion import adopt


def _share(W1, whitener) -> float:
    net = ImageNetwork.__new__(ImageNetwork)  # the monitor reads W1 only
    torch.nn.Module.__init__(net)
    net.W1 = torch.nn.Parameter(W1.float(), requires_grad=False)
    return measures.Layer1Monitor()(net, 1, whitener)["oriented"]


def _check(W1, whitener, logged: float):
    assert _share(W1, whitener) == pytest.approx(logged, abs=1.01 / W1.shape[0])


@pytest.mark.parametrize("name", ["50k/s0", "400k/s1"])
def test_pca_runs_remeasure_to_their_logged_share(name):
    run = runs.load_pt("pca/paper.pt")["runs"][name]
    logged = runs.load_call2()["runs"][f"pca/{name}"]["history"]["1"][-1]["oriented"]
    _check(run["W1"], runs.whitener_of(run), logged)


@pytest.mark.parametrize("key,variant", [("compare.pt", "cnce"), ("compare-seed2.pt", "nce-reset")])
def test_d2_snapshots_remeasure_with_their_whitener(key, variant):
    c = runs.load_pt("d2/paper.pt")[key]
    last = max(c["snapshots"][variant])
    _check(c["snapshots"][variant][last], runs.whitener_of(c), c["history"][variant][last - 1]["oriented"])


@pytest.mark.parametrize("rel", ["paper-seed2", "photos/paper-seed1"])
def test_four_layer_runs_remeasure(rel):
    st = runs.load_state(runs.weights_dir() / rel)
    net, wh = runs.network_from_state(st)
    _check(net.W1.detach(), wh, st["history"]["1"][-1]["oriented"])


@pytest.mark.parametrize("rel", ["ablation/results.json", "call2/results.json", "call3/results.json"])
def test_each_gpu_call_names_a_commit_whose_source_and_driver_hashes_match(rel):
    """Every GPU call's results name one commit of this history, whose package source (and,
    from the second call on, driver) hashes are the ones the call recorded."""
    from cnce import provenance

    res = json.loads((runs.weights_dir() / rel).read_text())
    commits = {c["commit"] for c in res["calls"]}
    assert len(commits) == 1
    commit = commits.pop()
    if provenance.git("cat-file", "-e", commit) is None:
        pytest.skip("the commit is not in this clone")
    assert {c["source_hash"] for c in res["calls"]} == {adopt.commit_source_hash(commit)}
    if rel != "ablation/results.json":  # the first call predates the driver hash
        assert {c["driver_hash"] for c in res["calls"]} == {adopt.commit_driver_hash(commit)}
        assert all(s["git_commit"] == commit for r in res["runs"].values() for s in r.get("sessions") or [])
    st = runs.load_state(runs.weights_dir() / "photos" / "paper-seed0")
    assert st["config"]["l3_centre"] == "sample"


def test_l3_branches_rebuild_on_their_parents_and_name_their_commit():

    b = runs.load_pt("l3/paper.pt")["runs"]
    assert set(b) == {f"{v}/s{k}" for v in ("pack-ensemble", "bundled-sample") for k in range(3)}
    net, wh, parent = runs.network_from_branch(b["pack-ensemble/s1"])
    assert net.l3_centre == "ensemble" and parent["config"]["l3_centre"] == "sample"
    assert torch.equal(net.W1.detach(), parent["network"]["W1"]) and not torch.equal(net.W3.detach(), parent["network"]["W3"])
    net, _, parent = runs.network_from_branch(b["bundled-sample/s0"])
    assert net.l3_centre == "sample" and parent["config"].get("l3_centre", "ensemble") == "ensemble"
    assert all(s["git_commit"] == r["sessions"][0]["git_commit"] for r in b.values() for s in r["sessions"])


@pytest.mark.parametrize("rel", ["photos/paper.pt", "ica/paper.pt"])
def test_first_call_runs_name_the_first_calls_commit_and_source_hash(rel):
    """``photos/paper.pt`` and ``ica/paper.pt`` came from the first GPU call: they name its
    commit and source hash, as ``ablation/results.json`` records them, and the hash is that of
    ``cnce/`` at the commit."""
    from cnce import provenance

    d = runs.load_pt(rel)
    first = json.loads((runs.weights_dir() / "ablation/results.json").read_text())["calls"][0]
    assert d["commit"] == first["commit"] and d["source_hash"] == first["source_hash"]
    assert "ablation/results.json" in d["provenance"]
    if provenance.git("cat-file", "-e", d["commit"]) is None:
        pytest.skip("the commit is not in this clone")
    assert adopt.commit_source_hash(d["commit"]) == d["source_hash"]
