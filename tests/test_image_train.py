"""The image-model trainer: the authors' choices (eps rule, initialisation, layer-3 "Max",
main set and batches), patch sampling on the device, the FLOP estimate, and the CPU smoke run
of the GPU command (``python -m cnce image-train --config smoke``)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from cnce.images import data as D
from cnce.images.configs import ImageConfig, get_config
from cnce.images.network import ImageNetwork
from cnce.images.configs import estimate_flops
from cnce.images.recipe import choose_eps_authors
from cnce.images.runs import load_state, network_from_state
from cnce.images.train import train
from cnce.losses import LOG4

ROOT = Path(__file__).resolve().parents[1]


# -- the authors' eps rule (NoiseProcessor.m) -------------------------------------------------
def test_eps_rule_grows_to_just_above_the_cap():
    # J stays at 2 log 2 (eps always too small): f grows x1.15 while f < cap is tested first
    eps, trace = choose_eps_authors(lambda e: LOG4)
    f_end = 1.15**10  # the first power of 1.15 at or above 4
    assert len(trace) == 11 and eps == pytest.approx(0.5 * f_end) and f_end > 4
    assert [t[0] for t in trace[:3]] == pytest.approx([0.5, 0.575, 0.66125])
    eps8, trace8 = choose_eps_authors(lambda e: LOG4, cap=8.0)  # layer 4
    assert eps8 == pytest.approx(0.5 * 1.15**15) and len(trace8) == 16


def test_eps_rule_bisects_down_and_up():
    # too easy at eps = 0.5: halve until J is in range
    eps, trace = choose_eps_authors(lambda e: LOG4 * math.exp(-20 * e))
    assert [t[0] for t in trace] == pytest.approx([0.5, 0.25, 0.125, 0.0625])
    # grows past the right value, then bisects between the bounds
    J = lambda e: LOG4 * math.exp(-((e / 1.0) ** 8))  # noqa: E731  in range for e roughly in [0.7, 1.1]
    eps, trace = choose_eps_authors(J)
    assert 0.05 * LOG4 <= LOG4 - J(eps) and J(eps) >= 0.2 * LOG4 and len(trace) <= 20
    # in range at once: one evaluation, eps_base returned
    eps, trace = choose_eps_authors(lambda e: 0.5 * LOG4)
    assert eps == 0.5 and len(trace) == 1


def test_eps_rule_evaluation_limit_and_arguments():
    eps, trace = choose_eps_authors(lambda e: 0.0)  # always too easy: bisects towards 0
    assert len(trace) == 20 and eps == pytest.approx(0.5 * 2.0**-19)
    for kw in (dict(eps_base=0), dict(cap=1.0)):
        with pytest.raises(ValueError, match=next(iter(kw))):
            choose_eps_authors(lambda e: 0.0, **kw)


# -- initialisation and layer 3 ---------------------------------------------------------------
def test_authors_initialisation_ranges():
    net = ImageNetwork(D=101, K1=400, K2=30, D3=26, K3=300, K4=20, seed=3)
    d = {k: v.detach() for k, v in net.named_parameters()}
    # feature rows randn / sqrt(D_in - 1): squared norm ~ D_in / (D_in - 1)
    assert abs(float((d["W1"] ** 2).sum(1).mean()) - 101 / 100) < 0.02
    assert abs(float((d["W3"] ** 2).sum(1).mean()) - 26 / 25) < 0.03
    for b in ("b1", "b2", "b3"):
        assert d[b].min() >= -2 and d[b].max() <= -1
    assert d["b4"].min() >= 0 and d["b4"].max() <= 1
    q2, q4 = d["W2"] ** 2, d["W4"] ** 2
    assert q2.max() <= 0.01 / 100 * (1 + 1e-5) and q2.mean() == pytest.approx(0.005 / 100, rel=0.05)
    assert q4.max() <= 0.01 / 25 * (1 + 1e-5) and q4.mean() == pytest.approx(0.005 / 25, rel=0.1)
    old = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, init="orthonormal")
    torch.testing.assert_close(old.W1 @ old.W1.T, torch.eye(12), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="init"):
        ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, init="xavier")
    with pytest.raises(ValueError, match="l3_nonlinearity"):
        ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, l3_nonlinearity="tanh")


def test_layer3_max_and_linear_layer4_input():
    u = torch.randn(50, 40)
    for l3 in ("max", "linear"):
        net = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, l3_nonlinearity=l3)
        net.fit_whitening2(torch.rand(100, 8))
        h3 = net.layer_input(u, 3)
        z3 = net.z3(h3)
        want = torch.relu(z3) if l3 == "max" else z3
        torch.testing.assert_close(net.layer_output(h3, 3), want)
        torch.testing.assert_close(net.layer_input(u, 4), z3)  # layer 4 pools the linear z3
    assert (z3 < 0).any()


# -- patches on the device --------------------------------------------------------------------
def test_sample_patches_torch_recipe():
    rng = np.random.default_rng(0)
    im = rng.standard_normal((80, 90))
    im[:, 45:] *= 0.01  # right half: low variance
    imgs = [torch.as_tensor(im, dtype=torch.float32), torch.as_tensor(im[:40, :50].copy(), dtype=torch.float32)]
    g = lambda s: torch.Generator().manual_seed(s)  # noqa: E731
    P = D.sample_patches_torch(imgs, 300, size=8, generator=g(1))
    assert P.shape == (300, 64) and P.dtype == torch.float32
    torch.testing.assert_close(P.mean(1), torch.zeros(300), atol=1e-5, rtol=0)
    torch.testing.assert_close(P, D.sample_patches_torch(imgs, 300, size=8, generator=g(1)))  # seeded
    allp = D.sample_patches_torch(imgs, 600, size=8, oversample=1, generator=g(1))
    assert P.var(1).mean() > allp.var(1).mean()
    # every patch is a real window of one image (after DC removal)
    win = torch.as_tensor(np.lib.stride_tricks.sliding_window_view(im, (8, 8)).reshape(-1, 64), dtype=torch.float32)
    win = win - win.mean(1, keepdim=True)
    d = torch.cdist(allp[:20], win).min(1).values
    small = torch.as_tensor(np.lib.stride_tricks.sliding_window_view(im[:40, :50], (8, 8)).reshape(-1, 64), dtype=torch.float32)
    d2 = torch.cdist(allp[:20], small - small.mean(1, keepdim=True)).min(1).values
    assert torch.all(torch.minimum(d, d2) < 1e-2)  # cdist in float32 rounds to ~4e-3; other windows are > 1 away
    # the chunked gather gives the same patches
    torch.testing.assert_close(D.sample_patches_torch(imgs, 300, size=8, generator=g(1), chunk=7), P)
    with pytest.raises(ValueError, match="n must"):
        D.sample_patches_torch(imgs, 0, generator=g(0))
    with pytest.raises(ValueError, match="images"):
        D.sample_patches_torch(imgs, 5, size=100, generator=g(0))


def _source():
    rng = np.random.default_rng(0)
    imgs = [np.cumsum(np.cumsum(rng.standard_normal((60, 60)), 0), 1) for _ in range(2)]
    return D.PatchSource([(im - im.mean()) / im.std() for im in imgs], size=8)


def test_patch_source_whitens_on_device():
    src = _source()
    wh = src.fit_whitener(3000, 20, seed=0)
    U = src.draw(3000, seed=1)
    assert U.shape == (3000, 20) and U.dtype == torch.float32
    assert np.abs(np.cov(U.double().numpy().T) - np.eye(20)).max() < 0.15
    torch.testing.assert_close(U, wh.transform(src.raw_torch(3000, 1)))


def test_main_set_batches_alternate_within_an_epoch():
    from cnce.images.draws import LayerDraws, Stream, stream_seed

    src = _source()
    src.fit_whitener(2000, 20, seed=0)
    cfg = replace(get_config("smoke"), n_patches=(100, 100, 100, 100), main_set=(300, 200, 100, 100), epoch=(4, 3, 2, 2),
                  redraw="blocks", meta_iters=(6, 1, 1, 1))
    draws = LayerDraws.of(cfg, 0, 1)
    b = [src.draw_rows(d.n, d.seed, d.start, d.stop) for d in draws.batches]
    main0 = src.draw(300, seed=stream_seed(0, 1, 0, Stream.MAIN_SET))
    for m, j in zip(range(4), (0, 1, 2, 0)):  # epoch 0: batches 0, 1, 2 of the main set, then 0 again
        torch.testing.assert_close(b[m], main0[j * 100:(j + 1) * 100])
    assert not torch.equal(b[4], b[0])  # epoch 1: a new main set
    assert draws.batches[4].seed == stream_seed(0, 1, 1, Stream.MAIN_SET)
    fresh = LayerDraws.of(replace(cfg, main_set=None), 0, 1)
    assert [(d.n, d.start, d.stop) for d in fresh.batches[:2]] == [(100, 0, 100)] * 2
    assert not torch.equal(*(src.draw_rows(d.n, d.seed, d.start, d.stop) for d in fresh.batches[:2]))
    with pytest.raises(ValueError, match="main_set"):
        replace(cfg, main_set=(50, 100, 100, 100))


def test_draw_rows_keeps_one_set_and_follows_the_whitener():
    src = _source()
    src.fit_whitener(2000, 20, seed=0)
    a = src.draw_rows(300, 5, 0, 100)
    assert src.draw_rows(300, 5, 100, 200).data_ptr() == a.data_ptr() + 100 * 20 * 4  # the same draw, kept
    torch.testing.assert_close(src.draw_rows(300, 5, 100, 200), src.draw(300, 5)[100:200])
    src.fit_whitener(2000, 10, seed=1)  # another whitener: the kept set is not reused
    assert src.draw_rows(300, 5, 0, 100).shape == (100, 10)
    src.release_rows()
    assert src._kept is None


def test_run_draws_name_every_seed_of_a_run():
    from cnce import provenance
    from cnce.images.draws import RunDraws

    cfg = replace(get_config("smoke"), meta_iters=(3, 2, 2, 2))
    d = RunDraws.of(cfg, 7)
    assert d.whitener == provenance.int_seed(7, 0, 0, 99) and d.layer3_pca == provenance.int_seed(7, 3, 0, 98)
    L2 = d.layers[2]
    assert L2.pooling_start == provenance.int_seed(7, 2, 0, 97) and L2.noise == tuple(provenance.int_seed(7, 2, m, 1) for m in range(2))
    assert L2.unseen == tuple(provenance.int_seed(7, 2, m, 3) for m in range(2)) and len(L2.batches) == 2
    seeds = [d.whitener, d.layer3_pca] + [s for L in d.layers.values() for s in (L.pooling_start, *L.noise, *L.unseen)]
    assert len(set(seeds)) == len(seeds)  # no two draws share a seed


def test_main_sets_are_drawn_when_the_authors_code_draws_them():
    """CNCEstimator.m: a new main set at the first meta-iteration and whenever the 1-based
    meta-iteration is a multiple of the epoch size; batches alternate and restart at each set."""
    from cnce.images.draws import main_set_index

    idx = [main_set_index(m, 20) for m in range(40)]
    starts = [m for m, (e, k) in enumerate(idx) if k == 0]
    assert starts == [0, 19, 39]  # 1-based meta-iterations 1, 20 and 40: three sets
    assert [e for e, _ in idx] == [0] * 19 + [1] * 20 + [2]
    assert [k % 2 for _, k in idx[:4]] == [0, 1, 0, 1] and idx[19] == (1, 0) and idx[20] == (1, 1)
    assert [main_set_index(m, 4, "blocks") for m in (0, 3, 4)] == [(0, 0), (0, 3), (1, 0)]
    with pytest.raises(ValueError, match="redraw"):
        main_set_index(0, 4, "sometimes")
    with pytest.raises(ValueError, match="epoch"):
        main_set_index(0, 0)


# -- training with the authors' recipe --------------------------------------------------------
def _tiny(**kw):
    base = dict(name="tiny", D=40, K1=10, K2=8, D3=6, K3=5, K4=3, n_whiten=800, patch=8, eps_n=100,
                n_patches=(200, 200, 200, 200), main_set=(400, 400, 200, 200), epoch=(2, 2, 2, 2),
                meta_iters=(3, 2, 2, 2), steps=3, chunk=64, compare_K1=4)
    base.update(kw)
    return replace(get_config("smoke"), **base)


def test_lbfgs_authors_recipe_all_layers(tmp_path):
    st = train(_tiny(), out=tmp_path, source=_source(), progress=False)
    for L, n in zip("1234", (3, 2, 2, 2)):
        h = st["history"][L]
        assert len(h) == n
        for r in h:  # eps restarts from eps_base every meta-iteration
            assert r["eps_trace"][0][0] == 0.5 and len(r["eps_trace"]) <= 20
            assert math.isfinite(r["loss"]) and r["train_loss"] <= r["loss"] + 0.05
            assert r["eps"] <= 0.5 * (1.15**15 if L == "4" else 1.15**10) + 1e-9
    net, _ = network_from_state(st)
    assert net.init == "authors" and net.l3_nonlinearity == "max"
    # dense pooling start: no planted unit of weight 1
    assert float((net.W2.detach() ** 2).max()) < 0.5


def test_old_runs_load_with_their_options(tmp_path):
    st = train(_tiny(init="orthonormal", l3_nonlinearity="linear", pool_start="planted", eps_rule="carry",
                     optimizer="adam", main_set=None, meta_iters=(2, 1, 1, 1)),
               out=tmp_path, source=_source(), progress=False)
    assert st["history"]["1"][0]["eps_trace"] == [(0.5, pytest.approx(st["history"]["1"][0]["eps_trace"][0][1]))]
    net, _ = network_from_state(st)
    assert net.init == "orthonormal" and net.l3_nonlinearity == "linear"
    cfg = dict(st["config"])
    for k in ("init", "l3_nonlinearity"):  # a state saved before the options existed
        cfg.pop(k)
    net_old, _ = network_from_state(dict(st, config=cfg))
    assert net_old.init == "orthonormal" and net_old.l3_nonlinearity == "linear"


def test_config_options_are_checked():
    for k, v in (("init", "he"), ("pool_start", "x"), ("l3_nonlinearity", "relu"), ("eps_rule", "fixed"), ("optimizer", "sgd")):
        with pytest.raises(ValueError, match=k):
            ImageConfig(name="x", **{k: v})


# -- the FLOP estimate ------------------------------------------------------------------------
def test_flop_estimate_by_hand():
    cfg = _tiny(meta_iters=(1, 1, 1, 1), steps=4, eps_n=100, optimizer="lbfgs")
    f = estimate_flops(cfg, eps_evals=2)
    g = estimate_flops(replace(cfg, optimizer="cg"), eps_evals=2, cg_evals=2.5)
    assert g["evals_per_meta"] == 10.0
    rows = 200 * 7
    evals = 5  # 4 * 5 // 4
    # layer 1: no frozen layers; eps rule 2 x 2 x 100 x 6 x (40 x 10); optimisation (3 x 5 + 2) x 2 x rows x 400
    assert f["per_layer"][1] == 2 * 2 * 100 * 6 * 400 + (3 * evals + 2) * 2 * rows * 400
    below2 = 40 * 10
    assert f["per_layer"][2] == 2 * rows * below2 + 2 * 2 * 100 * 6 * (below2 + 80) + (3 * evals + 2) * 2 * rows * 80
    assert f["total"] == sum(f["per_layer"].values())
    paper = estimate_flops("paper")
    assert 3e14 < paper["total"] < 3e15  # about a PFLOP


# -- the GPU command, smoke-tested on the CPU ---------------------------------------------------
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cnce", "image-train", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_gpu_command_smoke_on_cpu(tmp_path):
    out = tmp_path / "run"
    r = _cli("--config", "smoke", "--device", "cpu", "--out", str(out), "--layers", "1-2", "--no-progress")
    assert r.returncode == 0, r.stderr
    st = load_state(out)
    assert {k: len(v) for k, v in st["history"].items()} == {"1": 3, "2": 2}
    # the same command resumes from the folder and finishes the other layers
    r = _cli("--config", "smoke", "--device", "cpu", "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    st = load_state(out)
    assert {k: len(v) for k, v in st["history"].items()} == {"1": 3, "2": 2, "3": 2, "4": 2}
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["config"]["name"] == "smoke" and prov["device"] == "cpu"
    assert not list(out.glob("*.tmp"))  # atomic writes leave no partial files
    assert [s["done"] for s in prov["sessions"]] == [{}, {"1": 3, "2": 2}]  # each invocation records its code


def test_comparison_variants_share_the_start_and_nce_reset_restarts_c(tmp_path, monkeypatch):
    import cnce.images.train as T

    monkeypatch.setattr(T, "make_source", lambda images, patch: (_source(), "test"))
    cfg = _tiny(compare_K1=4, compare_n=100, compare_meta=3)
    res = T.train_comparison(cfg, out=tmp_path / "out", work=tmp_path / "work", progress=False,
                             variants=("cnce", "nce", "nce-reset"))
    assert list(res["snapshots"]) == ["cnce", "nce", "nce-reset"]
    for v in res["snapshots"]:
        assert sorted(res["snapshots"][v]) == [0, 1, 2, 3]
        torch.testing.assert_close(res["snapshots"][v][0], res["snapshots"]["cnce"][0])  # a common initialisation
    # NCE's loss before the update: with c reset it restarts from c = 0, carried it starts where it ended
    carried, reset = res["history"]["nce"], res["history"]["nce-reset"]
    assert all("c" in r for r in carried + reset)
    assert carried[1]["loss"] != reset[1]["loss"]
    assert (tmp_path / "out" / T.COMPARE_FILE).is_file()
    with pytest.raises(ValueError, match="variants"):
        T.train_comparison(cfg, out=tmp_path / "o2", work=tmp_path / "w2", variants=("ncex",), progress=False)


def test_layer3_input_sample_centred_hand_computed():
    """The authors' layer-3 input (``l3_centre="sample"``): each sample's mean over its K2 outputs
    is removed before the PCA. Rows a (1,-1,0,0) + b (0,0,1,-1) + m (1,1,1,1) with
    (a, b) in {(2,0), (-2,0), (0,1), (0,-1)}: after the per-sample centring the ensemble mean is 0
    and the covariance (n - 1 = 3) has eigenvalues 16/3 along (1,-1,0,0)/sqrt(2) and 4/3 along
    (0,0,1,-1)/sqrt(2), whatever the offsets m."""
    m = torch.tensor([3.0, -7.0, 0.5, 100.0])
    ab = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    e1, e2 = torch.tensor([1.0, -1, 0, 0]), torch.tensor([0.0, 0, 1, -1])
    z2 = ab[:, :1] * e1 + ab[:, 1:] * e2 + m[:, None]
    net = ImageNetwork(D=6, K1=5, K2=4, D3=2, K3=2, K4=2, l3_centre="sample")
    retained = net.fit_whitening2(z2)
    assert retained == pytest.approx(1.0)
    torch.testing.assert_close(net.wh2_mean, torch.zeros(4), atol=1e-6, rtol=0)
    want = torch.stack([e1 / 2**0.5 / (16 / 3) ** 0.5, e2 / 2**0.5 / (4 / 3) ** 0.5], 1)
    torch.testing.assert_close(net.wh2_P.abs(), want.abs(), atol=1e-6, rtol=0)
    # the offsets do not reach layer 3; with the ensemble centring they dominate the PCA
    torch.testing.assert_close(net.u3(z2), net.u3(z2 - m[:, None]), atol=1e-5, rtol=0)
    ens = ImageNetwork(D=6, K1=5, K2=4, D3=2, K3=2, K4=2)
    assert ens.l3_centre == "ensemble"
    ens.fit_whitening2(z2)
    assert not torch.allclose(ens.u3(z2), ens.u3(z2 - m[:, None]), atol=1e-3)
    with pytest.raises(ValueError, match="l3_centre"):
        ImageNetwork(D=6, K1=5, K2=4, D3=2, K3=2, K4=2, l3_centre="batch")


def test_paper_config_uses_the_authors_layer3_input():
    from cnce.images.configs import CONFIGS, ImageConfig

    assert CONFIGS["paper"].l3_centre == "sample" and CONFIGS["paper"].whiten3_samples() == 400_000
    old = CONFIGS["paper-l3-ensemble"]
    assert old.l3_centre == "ensemble" and old.whiten3_samples() == 150_000
    # a config saved before the option existed reads as the ensemble-centred input
    legacy = {k: v for k, v in CONFIGS["paper"].to_dict().items() if k not in ("l3_centre", "n_whiten3")}
    assert ImageConfig(**{**legacy, "main_set": tuple(legacy["main_set"])}).l3_centre == "ensemble"
    from cnce.images.runs import _network_options

    assert _network_options(legacy)["l3_centre"] == "ensemble"
    with pytest.raises(ValueError, match="n_whiten3"):
        ImageConfig(name="x", n_whiten3=10)


def test_branch_at_layer3_changes_one_thing():
    """A branch with the parent's own config retrains layers 3-4 to the parent's weights exactly
    (same initial weights, batches and noise); with the other layer-3 input it keeps layers 1-2;
    a change of a field that layers 1-2 read is refused."""
    import tempfile

    from cnce.images.train import branch_state

    cfg = _tiny()
    with tempfile.TemporaryDirectory() as tmp:
        parent = train(cfg, out=Path(tmp) / "p", source=_source(), progress=False, device="cpu")
        same = branch_state(parent, cfg, parent_name="p")
        assert set(same["history"]) == {"1", "2"} and same["branched_from"]["run"] == "p" and same["sessions"] == []
        torch.save(same, Path(tmp) / "state.pt")
        again = train(cfg, out=tmp, source=_source(), progress=False, device="cpu")
        for k in ("W3", "b3", "W4", "b4", "wh2_P"):
            torch.testing.assert_close(again["network"][k], parent["network"][k], rtol=0, atol=0)
        other = branch_state(parent, replace(cfg, l3_centre="sample", n_whiten3=400))
        assert other["config"]["l3_centre"] == "sample" and other["wh2_retained"] is None
        for k in ("W1", "b1", "W2", "b2"):
            assert torch.equal(other["network"][k], parent["network"][k])
        with pytest.raises(ValueError, match="kappa"):
            branch_state(parent, replace(cfg, kappa=3))


def test_torch_switches_are_restored_after_a_run(tmp_path):
    from cnce.images.train import torch_switches

    before = torch.get_num_threads()
    tiny = torch.tensor([1e-39], dtype=torch.float32)
    with torch_switches(torch.device("cpu"), threads=1):
        assert torch.get_num_threads() == 1
        assert float((tiny * 1.0)[0]) == 0.0  # denormals flushed inside
    assert torch.get_num_threads() == before and float((tiny * 1.0)[0]) > 0.0
    with pytest.raises(RuntimeError):
        with torch_switches(torch.device("cpu"), threads=1):
            raise RuntimeError("a failing run")
    assert torch.get_num_threads() == before and float((tiny * 1.0)[0]) > 0.0
    train(_tiny(meta_iters=(1, 1, 1, 1)), out=tmp_path, layers=(1,), source=_source(), progress=False, threads=1)
    assert torch.get_num_threads() == before and float((tiny * 1.0)[0]) > 0.0


def test_named_seed_streams_are_the_committed_keys():
    from cnce import provenance
    from cnce.images.draws import Stream, stream_seed, whitener_seed

    assert [int(s) for s in Stream] == [0, 1, 2, 3, 55, 97, 98, 99]
    assert stream_seed(3, 2, 5, Stream.NOISE) == provenance.int_seed(3, 2, 5, 1)
    assert whitener_seed(1) == provenance.int_seed(1, 0, 0, 99)
    with pytest.raises(TypeError):
        stream_seed(0, 1, 0, 1)


def test_provenance_comes_through_the_session_callback(tmp_path):
    from cnce.images.runs import lent_machine_session

    driver = Path(__file__)
    st = train(_tiny(meta_iters=(1, 1, 1, 1)), out=tmp_path, layers=(1,), source=_source(), progress=False,
               on_session=lent_machine_session("abc123", driver))
    s = st["sessions"][-1]
    assert st["git_commit"] == "abc123" and s["git_commit"] == s["code_commit"] == "abc123"
    assert s["cnce_tree"] is None and s["driver"]["sha256"] and len(s["source_hash"]) == 64
    seen = []
    st = train(_tiny(meta_iters=(1, 1, 1, 1)), out=tmp_path / "b", layers=(1,), source=_source(), progress=False,
               on_session=seen.append)
    assert seen == [st["sessions"][-1]] and "driver" not in seen[0]
