"""Tests of the image-model measures (cnce.images.measures) on synthetic filters whose answer is
known: gratings, Gabor functions, isotropic differences of Gaussians, localised white noise."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cnce.images import measures as M
from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork
from cnce.images.probes import GaborProbe, gabor

TORCH_THREADS = 2  # torch's threads in this module's tests (tests/conftest.py)
N = 32


def _angle_diff(a, b):
    d = abs(a - b) % math.pi
    return min(d, math.pi - d)


# -- layer 1: orientation selectivity, preferred frequency, position ---------------------------
@pytest.mark.parametrize("theta,freq", [(0.0, 0.125), (0.6, 0.2), (2.0, 0.3125)])
def test_grating_is_fully_oriented_at_its_frequency(theta, freq):
    p = M.filter_properties(M.grating(N, theta, freq))
    assert p.osi[0] > 0.9  # the patch border leaks a little power into other orientations
    assert abs(p.frequency[0] - freq) <= 1 / (4 * N) + 1e-12
    assert _angle_diff(p.orientation[0], theta) < math.radians(3)


def test_gabor_oriented_with_its_orientation_frequency_and_centre():
    th = np.array([0.0, 0.5, 1.2, 2.5])
    fr = np.array([0.1, 0.15, 0.2, 0.25])
    G = gabor(N, [12.0, 20.0, 16.0, 9.0], [10.0, 18.0, 16.0, 22.0], th, fr, 0.3, 1.0 / fr, 1.0)
    p = M.filter_properties(G)
    assert np.all(p.osi > 0.7)
    assert np.all(np.abs(p.frequency - fr) / fr < 0.1)
    assert all(_angle_diff(a, b) < math.radians(5) for a, b in zip(p.orientation, th))
    np.testing.assert_allclose(p.x, [12, 20, 16, 9], atol=1.0)
    np.testing.assert_allclose(p.y, [10, 18, 16, 22], atol=1.0)


def test_isotropic_dog_has_no_orientation_and_its_analytic_peak():
    s, r = 2.0, 1.6
    yy, xx = np.mgrid[0:N, 0:N] - 15.5
    r2 = xx**2 + yy**2
    dog = np.exp(-0.5 * r2 / s**2) / s**2 - np.exp(-0.5 * r2 / (r * s) ** 2) / (r * s) ** 2
    p = M.filter_properties(dog)
    assert p.osi[0] < 0.05
    # power ~ (exp(-2 pi^2 s^2 f^2) - exp(-2 pi^2 r^2 s^2 f^2))^2 peaks at
    f_star = math.sqrt(math.log(r**2) / (2 * math.pi**2 * s**2 * (r**2 - 1)))
    assert abs(p.frequency[0] - f_star) < 0.01
    # the generator: isotropic at every centre and width
    assert np.all(M.filter_properties(M.difference_of_gaussians(N, 50, seed=3)).osi < 0.1)


def test_localised_noise_lies_between_dog_and_gabor():
    noise = M.filter_properties(M.localised_noise(N, 300, seed=0)).osi
    th = np.linspace(0, np.pi, 40, endpoint=False)
    gab = M.filter_properties(gabor(N, 16, 16, th, 0.2, 0.0, 5.0)).osi
    dog = M.filter_properties(M.difference_of_gaussians(N, 300, seed=1)).osi
    assert np.median(dog) < 0.05 < np.median(noise) < 0.45 < np.quantile(gab, 0.05)
    assert np.quantile(noise, 0.95) < gab.min()


def _one_over_f_whitener(n: int, D: int, n_samples: int, seed: int = 0) -> Whitener:
    """A whitening fitted on Gaussian patches with a 1/f amplitude spectrum (natural-image-like
    second-order statistics), keeping the ``D`` coarsest components."""
    rng = np.random.default_rng(seed)
    k = np.fft.fftfreq(n)
    amp = 1 / np.maximum(np.hypot(*np.meshgrid(k, k, indexing="ij")), 1 / n)
    X = np.real(np.fft.ifft2(amp * np.fft.fft2(rng.standard_normal((n_samples, n, n))))).reshape(n_samples, -1)
    return Whitener.fit(X - X.mean(1, keepdims=True), D)


def test_measures_survive_whitening_projection():
    """Gabors, noise and DoGs passed through a whitening fitted on 1/f-like (natural-image-like)
    patches keep their ordering in the receptive fields and in the features."""
    n = 16
    wh = _one_over_f_whitener(n, 120, 4000)
    th = np.linspace(0, np.pi, 30, endpoint=False)
    pats = {"gabor": gabor(n, 8, 8, th, 0.2, 0.0, 4.0), "noise": M.localised_noise(n, 200, sigma=(1.5, 3), seed=0),
            "dog": M.difference_of_gaussians(n, 200, sigma=(1, 2), seed=0)}
    med = {}
    for name, P in pats.items():
        W = M.project_to_whitened(P, wh)
        imgs = M.unit_images(W, wh)
        assert imgs["receptive fields"].shape == (len(P), n, n)
        # the receptive field is the projection of the pattern onto the retained components
        proj = (torch.as_tensor(P.reshape(len(P), -1), dtype=torch.float32) @ wh.V) @ wh.V.T
        np.testing.assert_allclose(imgs["receptive fields"].reshape(len(P), -1), proj.numpy(), atol=1e-4)
        med[name] = {pic: float(np.median(M.filter_properties(v).osi)) for pic, v in imgs.items()}
    for pic in ("receptive fields", "features"):
        assert med["dog"][pic] < med["noise"][pic] < med["gabor"][pic]
        assert med["gabor"][pic] > 0.6


def test_octave_spread_and_summary():
    assert M.octave_spread([0.05] * 5 + [0.2] * 5, lo=0, hi=100) == pytest.approx(2.0)
    assert M.octave_spread(np.full(10, 0.1)) == 0.0
    with pytest.raises(ValueError, match="freqs"):
        M.octave_spread([0.1, 0.0])
    p = M.filter_properties(np.stack([M.grating(N, 0.0, f) for f in (0.0625, 0.125, 0.25)]))
    s = M.summarise_filters(p, oriented=0.5)
    assert s["n"] == 3 and s["oriented_share"] == 1.0 and s["freq_p50"] == pytest.approx(0.125)


def test_filter_properties_bad_input():
    with pytest.raises(ValueError, match="filters"):
        M.filter_properties(np.zeros((3, 4, 5)))
    with pytest.raises(ValueError, match="pad"):
        M.filter_properties(np.zeros((4, 4)), pad=0)


def test_layer1_table_orders_gabors_noise_and_dog():
    n = 16
    rng = np.random.default_rng(0)
    wh = _one_over_f_whitener(n, 150, 2000)
    th = rng.uniform(0, np.pi, 100)
    fr = rng.uniform(0.1, 0.35, 100)
    G = gabor(n, rng.uniform(5, 11, 100), rng.uniform(5, 11, 100), th, fr, 0.0, 1 / fr)
    weights = {"learned": M.project_to_whitened(G, wh), **M.baseline_weights(wh, 100, seed=0)}
    table, props = M.layer1_table(weights, wh)
    rf = table.loc["receptive fields"]
    assert rf.loc["learned", "oriented_share"] > 0.9
    assert rf.loc["localised noise", "oriented_share"] == pytest.approx(0.05, abs=0.011)
    assert rf.loc["isotropic DoG", "osi_median"] < rf.loc["localised noise", "osi_median"] < rf.loc["learned", "osi_median"]
    assert rf.loc["learned", "octaves"] > 1.0  # frequencies drawn over 1.8 octaves
    assert len(props["learned", "features"]) == 100
    with pytest.raises(ValueError, match="reference"):
        M.layer1_table({"learned": weights["learned"]}, wh)


# -- pooling ------------------------------------------------------------------------------------
def test_pooled_sets_selection():
    q = np.array([[5.0, 0, 0, 0, 1], [1, 1, 1, 1, 1], [0, 0, 3, 1, 0]])
    sets = M.pooled_sets(q, max_units=3, mass=0.9)
    assert [list(s) for s in sets] == [[0, 4], [0, 1, 2], [2, 3]]
    with pytest.raises(ValueError, match="q"):
        M.pooled_sets(-q)
    with pytest.raises(ValueError, match="mass"):
        M.pooled_sets(q, mass=0)


def test_pooling_coherence_detects_alike_sets_and_not_random_ones():
    rng = np.random.default_rng(0)
    K_below = 200
    orient = rng.uniform(0, np.pi, K_below)
    freq = 2.0 ** rng.uniform(-5, -1, K_below)
    x, y = rng.uniform(0, 32, K_below), rng.uniform(0, 32, K_below)
    q = np.zeros((40, K_below))
    # units 0-19 pool the 8 units closest in orientation to a random one (but random in freq/position)
    for j in range(20):
        d = np.abs(orient - orient[j]) % np.pi
        near = np.argsort(np.minimum(d, np.pi - d))[:8]
        q[j, near] = rng.uniform(0.5, 1, 8)
    # units 20-39 pool 8 random units; unit 39 is dominated by one weight
    for j in range(20, 40):
        q[j, rng.choice(K_below, 8, replace=False)] = rng.uniform(0.5, 1, 8)
    q[39, q[39].argmax()] = 100.0
    df = M.pooling_coherence(q, orient, freq, x, y, n_random=300, seed=1)
    alike, rand = df.iloc[:20], df.iloc[20:39]
    assert (alike["orientation_rank"] < 0.05).all()
    assert alike["orientation"].max() < 15 and 40 < alike["orientation_random"].mean() < 50
    assert (rand["orientation_rank"] < 0.05).mean() < 0.25
    assert 0.2 < rand["position_rank"].median() < 0.8
    assert df.loc[39, "n_pooled"] == 1 and df.loc[39, "top_share"] > 0.9 and np.isnan(df.loc[39, "orientation"])
    s = M.summarise_pooling(df)
    assert s["with_2_or_more"] == 39 and s["orientation_coherent_share"] > 0.5
    with pytest.raises(ValueError, match="length"):
        M.pooling_coherence(q, orient[:5], freq, x, y)


# -- layers 3 and 4 ----------------------------------------------------------------------------
def test_so_rf_properties_on_known_fields():
    probe = GaborProbe(size=32, n_orient=12)
    th = probe.orientations
    resp = []
    for fr in probe.freqs:
        n_pos = len(probe.positions(fr))
        r = np.zeros((3, n_pos, len(th)))
        r[0] = np.exp(np.cos(2 * (th - th[3])) * 4)[None, :]  # one orientation everywhere
        r[1] = rng_r = np.random.default_rng(int(fr * 1000)).random((n_pos, len(th)))  # no structure
        r[2] = 1.0 if fr == probe.freqs[-1] else 0.0  # one frequency only, all orientations
        resp.append(r)
    p = M.so_rf_properties(resp, probe)
    assert p["orientation_coherence"][0] > 0.8 and _angle_diff(p["orientation"][0], th[3]) < 1e-6
    assert p["orientation_coherence"][1] < 0.3 and p["orientation_coherence"][2] < 0.05
    assert p["frequency_share"][2] == pytest.approx(1.0) and p["frequency"][2] == probe.freqs[-1]
    assert p["frequency_share"][0] == pytest.approx(1 / 3, abs=1e-6)
    assert abs(p["x"][0] - 15.5) < 1e-6 and p["extent"][0] > 5
    del rng_r
    with pytest.raises(ValueError, match="resp"):
        M.so_rf_properties(resp[:2], probe)
    t = M.so_rf_table({"a": p, "b": p})
    assert list(t.index) == ["a", "b"] and "orientation_coherence" in t.columns


def test_random_layer_keeps_norms_and_weight_distributions():
    net = ImageNetwork(D=40, K1=12, K2=8, D3=6, K3=5, K4=3, seed=0)
    r3 = M.random_layer(net, 3, seed=1)
    torch.testing.assert_close(r3.W3.norm(dim=1), net.W3.norm(dim=1))
    assert not torch.allclose(r3.W3, net.W3)
    torch.testing.assert_close(r3.W1, net.W1)
    r4 = M.random_layer(net, 4, seed=1)
    torch.testing.assert_close(r4.W4.sort(dim=1).values, net.W4.sort(dim=1).values)
    assert not torch.equal(r4.W4, net.W4)
    with pytest.raises(ValueError, match="layer"):
        M.random_layer(net, 0)


# -- runs ---------------------------------------------------------------------------------------
def test_initial_network(tmp_path):
    from dataclasses import replace

    from cnce.images.configs import get_config

    cfg = replace(get_config("quick"), D=40, K1=12, K2=8, D3=6, K3=5, K4=3)
    state = {"config": cfg.to_dict(), "sizes": cfg.sizes(), "seed": 3}
    torch.testing.assert_close(M.initial_network(state).W1, ImageNetwork(**cfg.network_kwargs(), seed=3).W1)
    # a run saved before the initialisation was an option started from orthonormal rows
    legacy = {"config": {k: v for k, v in cfg.to_dict().items() if k not in ("init", "l3_nonlinearity")},
              "sizes": cfg.sizes(), "seed": 3}
    W = M.initial_network(legacy).W1
    torch.testing.assert_close(W @ W.T, torch.eye(12), atol=1e-5, rtol=0)


def test_layer1_monitor_counts_gabors_as_oriented_and_noise_not():
    wh = _one_over_f_whitener(16, 150, 2000)
    G = gabor(16, 8, 8, np.linspace(0, np.pi, 10, endpoint=False), 0.2, 0.0, 4.0)
    Wg = M.project_to_whitened(G, wh)
    thr = M.osi_threshold(wh, K=200)
    assert 0 < thr < 1
    assert M.oriented_share(Wg, wh, thr) == 1.0
    noise = M.project_to_whitened(M.localised_noise(16, 200, seed=5), wh)
    assert M.oriented_share(noise, wh, thr) < 0.15  # about 5 % by construction
    mon = M.Layer1Monitor(K_noise=200)
    net = ImageNetwork(D=150, K1=10, K2=4, D3=3, K3=2, K4=2)
    net.W1.data.copy_(Wg)
    rec = mon(net, 1, wh)
    assert rec["oriented"] == 1.0 and rec["osi_threshold"] == pytest.approx(thr)
    assert mon(net, 2, wh) == {}


def test_analysis_sizes():
    assert M.analysis_sizes("quick")["n_gabor"] > 0
    with pytest.raises(ValueError, match="scale"):
        M.analysis_sizes("huge")


def test_measure_plots():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cnce.images import plots

    th = np.linspace(0, np.pi, 12, endpoint=False)
    p = M.filter_properties(gabor(N, 16, 16, th, 0.2, 0.0, 5.0))
    props = {(s, pic): p for s in ("learned", "localised noise") for pic in ("receptive fields", "features")}
    q = np.random.default_rng(0).random((5, 12))
    df = M.pooling_coherence(q, p.orientation, p.frequency, p.x, p.y, n_random=5)
    probe = GaborProbe(size=32)
    resp = [np.random.default_rng(0).random((4, len(probe.positions(f)), probe.n_orient)) for f in probe.freqs]
    so = M.so_rf_properties(resp, probe)
    from cnce.images import runs

    rec = [dict(meta=m, eps=0.5, loss=1.0, train_loss=0.4, loss_fresh_noise=0.5, loss_unseen=0.6, oriented=0.3,
                seconds=1.0) for m in range(3)]
    res = {"runs": {f"paper/{o}-{s}/s{k}": {"history": {"1": rec}} for o in ("cg", "adam") for s in ("main", "fresh")
                    for k in range(2)}}
    res["runs"].update({f"d2/{v}/s{k}": {"history": {"1": rec}} for v in ("cnce", "nce") for k in range(2)})
    for f in (plots.plot_layer1_measures(props, thresholds={"receptive fields": 0.5, "features": 0.5}),
              plots.plot_pooling_coherence({"layer 2": df, "layer 4": df}),
              plots.plot_so_coherence({"learned": so, "random": so}),
              plots.plot_ablation({"a": runs.ablation_table(res, "paper"), "b": runs.ablation_table(res, "paper")}),
              plots.plot_memorisation({"x": rec, "y": rec}),
              plots.plot_d2_curves(runs.d2_records(res)),
              plots.plot_layer4([0, 1], np.random.default_rng(0).random((2, 4)), resp, probe,
                                np.random.default_rng(0).random((20, 1024)), np.arange(16).reshape(2, 8)),
              plots.plot_top_patches(np.random.default_rng(0).random((20, 64)), np.arange(12).reshape(3, 4), title="t")):
        plt.close(f)
    # every pooled set at one frequency (spreads all zero, as for layer 4 on the book's run):
    # that panel is left out, with no matplotlib warning about identical limits on the page
    flat = df.assign(frequency=0.0, frequency_random=0.0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots.plot_pooling_coherence({"layer 4": flat})
    full = plots.plot_pooling_coherence({"layer 4": df})
    assert len([a for a in fig.axes if a.get_visible()]) == len([a for a in full.axes if a.get_visible()]) - 1
    plt.close(fig)
