"""Tests of the neural image model (cnce.images): loaders, preprocessing, layers, training, probes."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from cnce.losses import LOG4
from cnce.images import data as D
from cnce.images.configs import get_config
from cnce.images.network import ImageNetwork, f_th, gain_control
from cnce.images.recipe import choose_eps_carry
from cnce.images.runs import load_state, network_from_state
from cnce.images.train import train
from cnce.plotting import PAGE_WIDTH

TORCH_THREADS = 2  # torch's threads in this module's tests (tests/conftest.py)


# -- loaders ---------------------------------------------------------------------------------
def _write_iml(path, arr):
    path.write_bytes(np.asarray(arr, dtype=">u2").tobytes())


def test_load_iml_roundtrip(tmp_path):
    arr = np.arange(8 * 12, dtype=np.uint16).reshape(8, 12) * 500
    _write_iml(tmp_path / "a.iml", arr)
    out = D.load_iml(tmp_path / "a.iml", shape=(8, 12))
    assert out.dtype == np.float64 and out.shape == (8, 12)
    np.testing.assert_array_equal(out, arr)


def test_load_iml_full_size_big_endian(tmp_path):
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 65535, size=D.IML_SHAPE, dtype=np.uint16)
    _write_iml(tmp_path / "imk00001.iml", arr)
    out = D.load_iml(tmp_path / "imk00001.iml")
    assert out.shape == (1024, 1536)
    np.testing.assert_array_equal(out, arr)
    # little-endian reading would give different numbers: the byte order matters
    assert not np.array_equal(out, arr.byteswap())


def test_load_iml_malformed_raises(tmp_path):
    p = tmp_path / "bad.iml"
    p.write_bytes(b"\x00" * 1001)
    with pytest.raises(ValueError, match="bad.iml.*1001 bytes"):
        D.load_iml(p)
    with pytest.raises(ValueError, match="path="):
        D.load_iml(tmp_path / "missing.iml")


def test_load_image_folder(tmp_path):
    from PIL import Image

    Image.fromarray((np.random.default_rng(1).random((40, 50, 3)) * 255).astype(np.uint8)).save(tmp_path / "b.png")
    _write_iml(tmp_path / "a.iml", np.ones(D.IML_SHAPE, dtype=np.uint16))
    (tmp_path / "notes.txt").write_text("not an image")
    imgs = D.load_image_folder(tmp_path)
    assert [im.shape for im in imgs] == [D.IML_SHAPE, (40, 50)]
    with pytest.raises(ValueError, match="folder="):
        D.load_image_folder(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no image files"):
        D.load_image_folder(empty)


def test_skimage_images_are_bundled():
    imgs = D.load_skimage_images(["camera", "chelsea"])
    assert imgs[0].shape == (512, 512) and imgs[1].ndim == 2
    with pytest.raises(ValueError, match="names"):
        D.load_skimage_images(["brick_does_not_exist"])


# -- preprocessing ---------------------------------------------------------------------------
def test_prepare_image_log_unit_variance():
    img = np.random.default_rng(0).random((60, 70)) * 255
    x = D.prepare_image(img, border=0)
    assert abs(x.mean()) < 1e-10 and abs(x.std() - 1) < 1e-10
    assert D.prepare_image(img, halve=True, border=4).shape == (30 - 8, 35 - 8)
    # log makes a power-law encoding a scale factor, removed by the standardisation
    np.testing.assert_allclose(D.prepare_image(img**2.2 - 1 + 1e-9 + 1, border=0), D.prepare_image(img**2.2, border=0), atol=1e-6)
    with pytest.raises(ValueError, match="img"):
        D.prepare_image(np.ones(5))


def test_sample_patches_dc_and_variance_selection():
    rng = np.random.default_rng(0)
    im = rng.standard_normal((80, 80))
    im[:, 40:] *= 0.01  # right half: low variance
    P = D.sample_patches([im], 200, size=8, rng=1)
    assert P.shape == (200, 64)
    np.testing.assert_allclose(P.mean(1), 0, atol=1e-12)
    # keeping the higher-variance half favours the high-variance part of the image
    all_p = D.sample_patches([im], 400, size=8, oversample=1, rng=1)
    assert P.var(1).mean() > all_p.var(1).mean()
    with pytest.raises(ValueError, match="n must"):
        D.sample_patches([im], 0)


def test_whitened_covariance_is_identity():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 30)) @ rng.standard_normal((30, 30))
    wh = D.Whitener.fit(X, 20)
    U = wh.transform(torch.as_tensor(X, dtype=torch.float32)).double()
    np.testing.assert_allclose(torch.cov(U.T).numpy(), np.eye(20), atol=1e-3)
    assert 0 < wh.retained < 1
    # filters: <filter, x - mean> equals <w, u>
    W = torch.randn(4, 20)
    lhs = (torch.as_tensor(X[:10], dtype=torch.float32) - wh.mean) @ wh.filters(W).T
    np.testing.assert_allclose(lhs.numpy(), (U[:10].float() @ W.T).numpy(), rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="D must"):
        D.Whitener.fit(X, 31)


def test_gain_control_norm_and_centre():
    u = torch.randn(7, 5, 600) * 3 + 1
    g = gain_control(u)
    np.testing.assert_allclose(g.norm(dim=-1).numpy(), math.sqrt(599), rtol=1e-5)
    np.testing.assert_allclose(g.mean(-1).numpy(), 0, atol=1e-5)


def test_f_th_formula_and_stability():
    u = torch.linspace(-5, 5, 101, dtype=torch.float64)
    ref = 0.25 * torch.log(torch.cosh(2 * u)) + 0.5 * u + 0.17
    torch.testing.assert_close(f_th(u), ref)
    big = f_th(torch.tensor([-1e4, 1e4]))
    assert torch.isfinite(big).all() and abs(float(big[0]) - (0.17 - 0.25 * math.log(2))) < 1e-4


# -- network ---------------------------------------------------------------------------------
def test_layer_shapes_and_gradients():
    # Seeded input, and the whitening fitted on the network's own layer-2 outputs: with an
    # unrelated whitening every u3 points the same way, and with probability ~1/32 (the CI
    # failure of stop 20) all relu(z3) are zero and W3 gets no gradient.
    net = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, seed=0)
    u = torch.randn(9, 4, 40, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        net.fit_whitening2(net.z2(net.z1(u.reshape(-1, 40))))
    want_in = {1: 40, 2: 12, 3: 6, 4: 5}
    want_out = {1: 12, 2: 8, 3: 5, 4: 3}
    for L in (1, 2, 3, 4):
        h = net.layer_input(u, L)
        assert h.shape == (9, 4, want_in[L])
        assert net.layer_output(h, L).shape == (9, 4, want_out[L])
        net.zero_grad(set_to_none=True)
        lp = net.log_phi(u, L)
        assert lp.shape == (9, 4)
        lp.sum().backward()
        for p in net.layer_params(L):
            assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0
        view = net.layer(L)  # the per-layer view the trainer hands to the recipe: the same layer
        assert view.params()[0] is getattr(net, f"W{L}") and view.params()[1] is getattr(net, f"b{L}")
        assert torch.equal(view.log_phi(view.input(u)), lp.detach())
    # pooling weights enter squared (non-negative): sign of W2 does not matter
    h = net.layer_input(u, 2)
    z = net.layer_output(h, 2)
    with torch.no_grad():
        net.W2.neg_()
    torch.testing.assert_close(net.layer_output(h, 2), z)
    with pytest.raises(ValueError, match="layer"):
        net.layer_input(u, 5)
    with pytest.raises(ValueError, match="layer must be one of"):
        net.layer(0)
    with pytest.raises(ValueError, match="D3"):
        ImageNetwork(D=40, K1=12, K2=8, D3=9)


def test_cnce_loss_is_log4_at_eps_zero():
    from cnce.losses import cnce_loss

    net = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3)
    u = torch.randn(50, 40)
    with torch.no_grad():
        lp = net.log_phi(u, 1)
    J = cnce_loss(lp, lp[:, None].expand(50, 6))
    assert abs(float(J) - LOG4) < 1e-6


# -- eps rule --------------------------------------------------------------------------------
def test_choose_eps_rule():
    J = lambda e: LOG4 * math.exp(-e)  # noqa: E731  (falls from 2 log 2 as eps grows)
    eps, trace = choose_eps_carry(J)
    assert 0.05 * LOG4 <= LOG4 - J(eps) and J(eps) >= 0.2 * LOG4
    assert trace[0][0] == 0.5 and len(trace) <= 20
    # too small everywhere: grows to the cap and stops
    eps, _ = choose_eps_carry(lambda e: LOG4, cap=4.0)
    assert eps == 4.0
    # too large at the start: bisects downwards
    eps, trace = choose_eps_carry(lambda e: LOG4 * math.exp(-20 * e))
    assert eps < 0.5 and 0.2 * LOG4 <= LOG4 * math.exp(-20 * eps) <= 0.95 * LOG4
    with pytest.raises(ValueError, match="eps0"):
        choose_eps_carry(J, eps0=0)


# -- training: resume, NCE -----------------------------------------------------------------
def _tiny(optimizer="adam"):
    return replace(get_config("quick"), name="tiny", D=40, K1=10, K2=8, D3=6, K3=5, K4=3, n_whiten=800, patch=8,
                   eps_n=100, n_patches=(200, 200, 200, 200), meta_iters=(3, 2, 1, 1), steps=3, batch=100,
                   optimizer=optimizer, compare_K1=4)


def _source():
    rng = np.random.default_rng(0)
    imgs = [np.cumsum(np.cumsum(rng.standard_normal((60, 60)), 0), 1) for _ in range(2)]
    return D.PatchSource([(im - im.mean()) / im.std() for im in imgs], size=8)


def test_train_resume_matches_uninterrupted(tmp_path, monkeypatch):
    cfg = _tiny("adam")
    full = train(cfg, out=tmp_path / "full", layers=(1, 2, 3, 4), source=_source(), progress=False)
    assert {k: len(v) for k, v in full["history"].items()} == {"1": 3, "2": 2, "3": 1, "4": 1}

    import cnce.images.recipe as T  # the trainer runs each meta-iteration through the recipe

    real, calls = T.run_meta_iteration, {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # interrupted during layer 1's third meta-iteration
        return real(*a, **k)

    monkeypatch.setattr(T, "run_meta_iteration", flaky)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, out=tmp_path / "resumed", layers=(1, 2, 3, 4), source=_source(), progress=False)
    assert len(load_state(tmp_path / "resumed")["history"]["1"]) == 2
    monkeypatch.setattr(T, "run_meta_iteration", real)
    resumed = train(cfg, out=tmp_path / "resumed", layers=(1, 2, 3, 4), source=_source(), progress=False)
    for k, v in full["network"].items():
        torch.testing.assert_close(resumed["network"][k], v, rtol=1e-4, atol=1e-5)
    net, wh = network_from_state(resumed)
    assert wh.D == 40 and net.sizes["K1"] == 10
    assert (tmp_path / "resumed" / "provenance.json").is_file()
    # a different config in the same folder is refused
    with pytest.raises(ValueError, match="different config"):
        train(replace(cfg, kappa=2), out=tmp_path / "resumed", layers=(1,), source=_source(), progress=False)


def test_train_lbfgs_one_layer(tmp_path):
    st = train(replace(_tiny("lbfgs"), meta_iters=(2, 1, 1, 1)), out=tmp_path, layers=(1,), source=_source(),
               progress=False)
    h = st["history"]["1"]
    assert len(h) == 2 and all(math.isfinite(r["loss"]) and r["train_loss"] <= r["loss"] + 1e-6 for r in h[:1])
    assert "1" not in st["opt"]  # a finished layer keeps no optimiser state


def test_train_nce_and_snapshots(tmp_path):
    cfg = _tiny().for_comparison()
    st = train(cfg, out=tmp_path, layers=(1,), method="nce", source=_source(), snapshots=True, progress=False)
    assert sorted(st["snapshots"]) == [0, 1, 2, 3]
    assert st["snapshots"][0].shape == (4, 40)
    assert all(math.isfinite(r["loss"]) for r in st["history"]["1"])
    assert st["nce_c"]["1"] != 0.0


def test_train_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="config"):
        train("huge", out=tmp_path)
    with pytest.raises(ValueError, match="method"):
        train(_tiny(), out=tmp_path, method="mle", source=_source())
    with pytest.raises(ValueError, match="layers"):
        train(_tiny(), out=tmp_path, layers=(2, 1), source=_source())
    with pytest.raises(ValueError, match="layer 2 needs layer 1"):
        train(_tiny(), out=tmp_path / "x", layers=(2,), source=_source(), progress=False)


def test_cli_layers_parsing():
    from cnce.images.cli import parse_layers

    assert parse_layers("1-4") == (1, 2, 3, 4)
    assert parse_layers("1,2") == (1, 2)
    with pytest.raises(ValueError, match="layers"):
        parse_layers("0-9")
    with pytest.raises(ValueError, match="layers"):
        parse_layers("a")


# -- probes and plots ------------------------------------------------------------------------
def test_fit_gabor_recovers_parameters():
    from cnce.images.probes import fit_gabor, gabor

    f = gabor(32, 13.0, 18.0, 0.7, 0.15, 0.4, 3.5, 1.3)
    fit = fit_gabor(f + 0.01 * np.random.default_rng(0).standard_normal(f.shape))
    assert fit.r2 > 0.98
    assert abs(fit.freq - 0.15) < 0.01 and abs(fit.theta - 0.7) < 0.05
    assert abs(fit.x0 - 13) < 0.5 and abs(fit.y0 - 18) < 0.5
    noise = np.random.default_rng(1).standard_normal((32, 32))
    assert fit_gabor(noise).r2 < 0.3


def test_gabor_jacobian_matches_central_differences():
    from cnce.images.probes import gabor, gabor_jacobian

    p = np.array([13.0, 18.0, 0.7, 0.15, 0.4, 3.5, 1.3, 0.8])
    J = gabor_jacobian(32, p)
    assert J.shape == (32 * 32, 8)
    h = 1e-5
    for i in range(8):
        d = np.zeros(8)
        d[i] = h
        numeric = (gabor(32, *(p + d)) - gabor(32, *(p - d))).ravel() / (2 * h)
        np.testing.assert_allclose(J[:, i], numeric, atol=1e-6, err_msg=f"parameter {i}")


def test_probe_top_patches_and_plots():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cnce.images import plots, probes

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 64))
    wh = D.Whitener.fit(X - X.mean(1, keepdims=True), 40)
    net = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3)
    net.fit_whitening2(torch.rand(100, 8))
    probe = probes.GaborProbe(size=8, freqs=(0.25, 0.125), n_orient=4, n_phase=2)
    resp = probes.probe_layer(net, wh, probe, layer=3)
    assert [r.shape for r in resp] == [(5, 1, 4), (5, 1, 4)] or resp[0].shape[0] == 5
    idx, val = probes.top_patches(net, X, wh, layer=4, k=3)
    assert idx.shape == (3, 3) and np.all(val[:, 0] >= val[:, 1])
    feats = wh.dewhiten(net.W1.detach()).reshape(-1, 8, 8).numpy()
    figs = [
        plots.plot_mosaic({"a": feats, "b": feats}),
        plots.plot_pooling([0, 1], (net.W2.detach() ** 2).numpy(), feats),
        plots.plot_space_orientation(resp, probe, ncol=5),
        plots.plot_layer4([0], (net.W4.detach() ** 2).numpy(), resp, probe, X, idx, n_patches=3),
        plots.plot_comparison({"cnce": {0: feats[:4], 1: feats[:4]}, "nce": {0: feats[:4], 1: feats[:4]}}, [0, 1]),
        plots.plot_photos([rng.random((30, 40)), rng.random((20, 20)), rng.random((10, 30))], ["a", "b", "c"], ncol=2),
    ]
    assert figs[-1].get_figwidth() == pytest.approx(PAGE_WIDTH)
    for f in figs:
        plt.close(f)
    assert [len(s) for s in plots.pooled_units(np.array([[1.0, 0, 0, 0], [1, 1, 1, 1]]))] == [1, 4]


def test_fastica_recovers_sources_and_gabor_summary():
    from cnce.images.probes import fastica, gabor, gabor_summary, fit_gabors

    rng = np.random.default_rng(0)
    S = rng.laplace(size=(5000, 4))
    A = np.linalg.qr(rng.standard_normal((4, 4)))[0]  # orthogonal mixing: the data stay white
    X = torch.as_tensor(S / S.std(0) @ A.T)
    W = fastica(X, 4, seed=1).double()
    M = (W @ torch.as_tensor(A)).abs()  # a signed permutation when the sources are recovered
    assert torch.all(M.max(1).values > 0.98)
    with pytest.raises(ValueError, match="K"):
        fastica(X, 5)
    feats = np.stack([gabor(16, 8, 8, th, 0.2, 0.0, 2.5) for th in (0.0, np.pi / 2)])
    s = gabor_summary(fit_gabors(feats), 16)
    assert s["gabor_like"] == 1.0 and s["median_r2"] > 0.95
    assert s["orient_0"] == 0.5 and s["orient_90"] == 0.5 and abs(s["freq_q50"] - 0.2) < 0.01


def test_start_pooling_layer_continues_the_layer_below():
    from cnce.images.recipe import start_pooling_layer

    net = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, seed=0)
    with torch.no_grad():
        net.b1.copy_(torch.linspace(-3, -1, 12))
    start_pooling_layer(net.layer(2), seed=1)
    q = net.W2.detach() ** 2
    pick = q.argmax(1)
    assert len(set(pick.tolist())) == 8 and torch.all(q.max(1).values == 1.0)
    torch.testing.assert_close(net.b2.detach(), net.b1.detach()[pick])
    assert torch.all(q.sum(1) - 1 < 0.05)  # the rest of the pooling starts small but non-zero
    with pytest.raises(ValueError, match="layer"):
        start_pooling_layer(net.layer(3), seed=0)


def test_page_fontsize_keeps_text_readable_when_the_page_shrinks_a_figure():
    """A figure wider than the page is shown shrunk to it; its text grows by the same factor."""
    from cnce.images.plots import page_fontsize

    assert page_fontsize(PAGE_WIDTH) == 10.5 and page_fontsize(PAGE_WIDTH / 2) == 10.5
    assert page_fontsize(2 * PAGE_WIDTH) == pytest.approx(21.0)
    assert page_fontsize(1.5 * PAGE_WIDTH, 10) * PAGE_WIDTH / (1.5 * PAGE_WIDTH) == pytest.approx(10)
