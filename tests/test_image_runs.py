"""The committed image runs (cnce.images.runs): tables with intervals over seeds, the adoption of
GPU runs with checked provenance, the dirty-tree guard, and the committed data themselves."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from cnce import provenance
from cnce.images import measures, runs
from cnce.images.configs import get_config
from companion import adopt


def _history(oriented, n=3, unseen=0.5):
    return [dict(meta=m, eps=0.5, loss=1.0, train_loss=0.4, loss_fresh_noise=0.45, loss_unseen=unseen,
                 oriented=oriented, seconds=1.0) for m in range(n)]


def _results():
    r = {"runs": {}, "calls": []}
    for k, o in enumerate((0.8, 0.9, 1.0)):
        r["runs"][f"demo/cg-main/s{k}"] = {"history": {"1": _history(o)}}
    r["runs"]["demo/adam-fresh/s0"] = {"history": {"1": _history(0.5)}}
    r["runs"]["paper/cg-main/s0"] = {"history": {"1": _history(0.7)}}
    for v, o in (("cnce", 0.2), ("nce-reset", 0.6)):
        for k in range(2):
            r["runs"][f"d2/{v}/s{k}"] = {"history": {"1": _history(o + 0.1 * k, n=2)}}
    return r


def test_ablation_table_groups_cells_and_counts_seeds():
    t = runs.ablation_table(_results(), "demo")
    assert t.loc[("cg", "main"), "seeds"] == 3 and t.loc[("adam", "fresh"), "seeds"] == 1
    assert t.loc[("cg", "main"), "oriented"] == pytest.approx(0.9)
    assert np.isnan(t.loc[("adam", "fresh"), "oriented_lo"]) and np.isnan(t.loc[("adam", "fresh"), "oriented_hi"])  # one seed: no interval
    assert list(t.index.get_level_values("schedule")) == ["main", "fresh"]  # main sets first
    assert len(runs.ablation_records(_results(), "paper")) == 1
    with pytest.raises(ValueError, match="no ablation runs"):
        runs.ablation_table(_results(), "huge")


def test_d2_records_are_per_variant_seed_and_meta():
    rows = runs.d2_records(_results())
    assert len(rows) == 2 * 2 * 2
    assert {r["variant"] for r in rows} == {"cnce", "nce-reset"} and {r["meta"] for r in rows} == {1, 2}


def test_measures_above_chance_and_border_share():
    assert measures.above_chance(0.05, 200) > 0.3  # chance itself is not above chance
    assert measures.above_chance(0.5, 200) < 1e-10
    with pytest.raises(ValueError, match="share"):
        measures.above_chance(1.5, 10)
    f = np.zeros((3, 32, 32))
    f[0, 1, 1] = f[1, 16, 16] = f[2, 30, 16] = 1.0
    props = measures.filter_properties(f)
    assert measures.border_share(props, 32) == pytest.approx(2 / 3)


def test_adopt_refuses_runs_whose_source_differs_from_the_commit(tmp_path):
    head = provenance.git("rev-parse", "HEAD")
    if head is None:
        pytest.skip("not a git checkout")
    src = tmp_path / "out"
    src.mkdir()
    (src / "results.json").write_text(json.dumps({"runs": {}, "calls": [{"source_hash": "0" * 64,
                                                                           "driver_hash": adopt.commit_driver_hash(head)}]}))
    with pytest.raises(ValueError, match="hashes"):
        adopt.adopt_device_runs(src, head, root=tmp_path / "weights")


def test_adopt_takes_runs_in_with_the_commit(tmp_path):
    import tarfile

    head = provenance.git("rev-parse", "HEAD")
    if head is None:
        pytest.skip("not a git checkout")
    want, driver = adopt.commit_source_hash(head), adopt.commit_driver_hash(head)
    session = {"git_commit": "abc+dirty", "source_hash": want, "driver": {"path": adopt.DRIVER, "sha256": driver}}
    wh = {"mean": torch.zeros(4), "V": torch.eye(4)[:, :2].contiguous(), "lam": torch.ones(2), "retained": 1.0}
    src, tmp = tmp_path / "out", tmp_path / "tmp"
    (tmp / "pca-50k-s0").mkdir(parents=True)
    src.mkdir()
    torch.save({"network": {"W1": torch.ones(3, 2)}, "config": {"name": "x"}, "seed": 0, "whitener": wh, "data": "d",
                "sessions": [session], "history": {"1": _history(0.5)}}, tmp / "pca-50k-s0" / "state.pt")
    torch.save({"seed": 1, "snapshots": {"cnce": {0: torch.zeros(3, 2)}}, "history": {}, "whitener": wh,
                "sessions": [dict(session)]}, tmp / "d2-s1.pt")
    with tarfile.open(src / "runs-1.tar", "w") as tar:
        tar.add(tmp / "pca-50k-s0", arcname="pca-50k-s0")
        tar.add(tmp / "d2-s1.pt", arcname="d2-s1.pt")
    res = {"runs": {"pca/50k/s0": {"history": {"1": _history(0.5)}, "sessions": [dict(session)]}},
           "calls": [{"source_hash": want, "driver_hash": driver, "commit": "given"}]}
    (src / "results.json").write_text(json.dumps(res))
    placed = adopt.adopt_device_runs(src, head, root=tmp_path / "weights")
    got = json.loads((tmp_path / "weights" / runs.CALL2 / "results.json").read_text())
    assert got["runs"]["pca/50k/s0"]["sessions"][0]["git_commit"] == head and got["calls"][0]["commit"] == head
    assert "dirty" not in json.dumps(got)
    pca = torch.load(placed["pca-50k-s0"], weights_only=False)["runs"]["50k/s0"]
    assert pca["W1"].dtype == torch.float16 and pca["sessions"][0]["git_commit"] == head
    torch.testing.assert_close(runs.whitener_of(pca).V, wh["V"])
    d2 = torch.load(placed["d2-s1"], weights_only=False)["compare-seed1.pt"]
    assert d2["sessions"][0]["git_commit"] == head
    # a session whose driver differs is refused
    session["driver"]["sha256"] = "0" * 64
    res["runs"]["pca/50k/s0"]["sessions"] = [session]
    (src / "results.json").write_text(json.dumps(res))
    with pytest.raises(ValueError, match="driver"):
        adopt.adopt_device_runs(src, head, root=tmp_path / "weights2")


def test_training_into_data_weights_from_a_dirty_tree_is_refused(monkeypatch, tmp_path):
    from cnce.images import train as tr

    monkeypatch.setattr(runs, "weights_dir", lambda: tmp_path / "weights")
    monkeypatch.setattr(tr.provenance, "git", lambda *a: " M cnce/x.py" if a[:1] == ("status",) else None)
    cfg = replace(get_config("smoke"), meta_iters=(1, 1, 1, 1), n_whiten=400, D=16, K1=4, eps_n=50,
                  n_patches=(100, 100, 100, 100), main_set=None, patch=8)
    with pytest.raises(tr.DirtyTreeError, match="uncommitted"):
        tr.train(cfg, out=tmp_path / "weights" / "x", layers=(1,), device="cpu", progress=False)
    st = tr.train(cfg, out=tmp_path / "weights" / "x", layers=(1,), device="cpu", progress=False, allow_dirty=True)
    assert st["sessions"][-1]["allow_dirty"] is True
    st = tr.train(cfg, out=tmp_path / "elsewhere", layers=(1,), device="cpu", progress=False)  # outside: allowed
    assert st["sessions"][-1]["allow_dirty"] is False


def test_no_committed_run_says_dirty():
    root = runs.weights_dir()
    for p in list(root.rglob("provenance.json")) + list(root.rglob("results.json")):
        text = p.read_text()
        assert "+dirty" not in text, p
    for p in root.rglob("state.pt"):
        st = torch.load(p, map_location="cpu", weights_only=False)
        assert "+dirty" not in str(st.get("git_commit")) and all("+dirty" not in str(s.get("git_commit"))
                                                                for s in st.get("sessions", [])), p
