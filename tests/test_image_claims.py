"""Known-answer tests of the layer-2 to layer-4 claim measures (cnce.images.layer_claims) and of
the result type and interval rules (cnce.images.verdicts): hand-built pooling units that pool
by one property must be found to, random pooling must not, and inputs without the spread a
frequency claim needs must say "not testable here" with the number."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cnce.images import layer_claims as LC
from cnce.images import verdicts as V

TORCH_THREADS = 2


# -- interval rules -------------------------------------------------------------------------------
def test_seed_interval_rules():
    m, ci, rule = V.seed_interval([0.5, 0.6, 0.7])
    assert m == pytest.approx(0.6) and "2 degrees of freedom" in rule
    from scipy import stats
    h = stats.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert ci == pytest.approx((0.6 - h, 0.6 + h))
    m, ci, rule = V.seed_interval([0.9, 0.98, 0.99], share=True)
    assert ci[1] == 1.0 and ci[0] >= 0  # clipped: a share's interval never passes 1
    m, ci, rule = V.seed_interval([0.4, 0.7])
    assert ci == (0.4, 0.7) and rule == "range of 2 seeds"
    m, ci, rule = V.seed_interval([0.3])
    assert ci == (0.3, 0.3) and "one seed" in rule
    with pytest.raises(ValueError, match="values"):
        V.seed_interval([])


def test_unit_interval_and_share_interval():
    v, ci, rule, per = V.unit_interval([np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], bool)], share=True)
    assert v == pytest.approx(0.2) and 0 <= ci[0] < 0.2 < ci[1] <= 1 and "Wilson" in rule and per == [0.2]
    v, ci, rule, per = V.unit_interval([np.ones(5), np.zeros(5), np.ones(5)], share=True)
    assert "2 degrees of freedom" in rule and ci == (0.0, 1.0)
    assert V.share_interval(0, 10)[0] == 0 and V.share_interval(10, 10)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="k <= n"):
        V.share_interval(11, 10)


def test_measured_prints_uniformly():
    r = V.Measured("claim", "share", 0.5, {"chance": 0.05}, (0.4, 0.6), "range of 2 seeds", "supported")
    assert "0.50 [0.40, 0.60]" in str(r) and r.testable and r.row()["baseline: chance"] == 0.05
    n = V.not_testable("claim", "share", "spread 0.3 octaves")
    assert not n.testable and "not testable here" in str(n) and "0.3 octaves" in n.verdict
    t = V.results_table([r, n])
    assert list(t["claim"]) == ["claim", "claim"] and t["interval"].iloc[1] is None


# -- pooling: hand-built units ----------------------------------------------------------------------
def _layer1(K=120, seed=0, octaves=2.0):
    """K first-layer units: 12 orientations x 5 frequencies (``octaves`` apart end to end) x 2
    positions."""
    rng = np.random.default_rng(seed)
    ori = np.repeat(np.arange(12) * np.pi / 12, K // 12)
    freq = np.tile(0.1 * 2 ** np.linspace(0, octaves, 5), K // 5)[:K]
    x, y = rng.uniform(2, 30, K), rng.uniform(2, 30, K)
    return {"orientation": ori, "frequency": freq, "x": x, "y": y}


def _pool_by(props, key, n_units=40, size=6, seed=0):
    """Pooling weights whose every unit pools ``size`` units alike in ``key``."""
    rng = np.random.default_rng(seed)
    K = len(props["orientation"])
    q = np.zeros((n_units, K))
    for j in range(n_units):
        c = rng.integers(K)
        if key == "position":
            d = np.hypot(props["x"] - props["x"][c], props["y"] - props["y"][c])
        elif key == "orientation":
            d = np.abs(np.angle(np.exp(2j * (props["orientation"] - props["orientation"][c]))))
        else:
            d = np.abs(np.log2(props["frequency"] / props["frequency"][c])) + 1e-3 * rng.random(K)
        idx = np.argsort(d + 1e-9 * rng.random(K))[:size]
        q[j, idx] = rng.uniform(0.5, 1.0, size)
    return q


@pytest.mark.parametrize("key", ["position", "orientation", "frequency"])
def test_pooling_claim_finds_the_property_pooled_by(key):
    p = _layer1()
    q = _pool_by(p, key)
    r = LC.pooling_claim(q, p, key, n_random=100)
    assert r.testable and r.value > 0.8 and r.verdict.startswith("supported"), str(r)
    assert r.baselines["random pooling"] < 0.15 and r.baselines["shuffled properties"] < 0.15
    assert "Wilson" in r.rule and r.n_seeds == 1


def test_random_pooling_is_not_supported():
    p = _layer1()
    q = LC.permute_rows(_pool_by(p, "orientation"), seed=5)
    for key, r in LC.pooling_claims(q, p, n_random=100).items():
        assert r.value < 0.2 and r.verdict.startswith("not supported"), (key, str(r))


def test_pooling_claim_not_testable_without_an_octave():
    p = _layer1(octaves=0.5)
    r = LC.pooling_claim(_pool_by(p, "frequency"), p, "frequency", n_random=50)
    assert not r.testable and "0.50 octaves" in r.not_testable and math.isnan(r.value)
    # two seeds: the range
    p2 = [_layer1(seed=s) for s in (0, 1)]
    r2 = LC.pooling_claim([_pool_by(x, "orientation", seed=s) for s, x in enumerate(p2)], p2, "orientation", n_random=50)
    assert r2.rule == "range of 2 seeds" and r2.n_seeds == 2 and r2.interval[1] <= 1
    with pytest.raises(ValueError, match="prop"):
        LC.pooling_claim(np.ones((2, 3)), p, "colour")
    with pytest.raises(ValueError, match="one entry per seed"):
        LC.pooling_claim([np.ones((2, 3))] * 2, p, "position")


def test_orientation_across_frequency_on_hand_built_layer4():
    rng = np.random.default_rng(0)
    K3 = 60
    ori = np.repeat(np.arange(6) * np.pi / 6, 10)
    freq = np.tile([0.1, 0.15, 0.2, 0.3, 0.45], 12)
    props = {"orientation": ori, "frequency": freq, "x": rng.uniform(4, 28, K3), "y": rng.uniform(4, 28, K3)}
    q = np.zeros((30, K3))
    for j in range(30):
        same = np.flatnonzero(ori == ori[(j * 10) % K3])
        q[j, rng.choice(same, 5, replace=False)] = 1.0  # one orientation, several frequencies
    r = LC.orientation_across_frequency_claim(q, props, n_random=100)
    assert r.testable and r.value > 0.8 and r.verdict.startswith("supported"), str(r)
    assert r.baselines["random pooling"] < 0.2
    # one orientation but one frequency only: not "across frequencies"
    q1 = np.zeros((30, K3))
    for j in range(30):
        q1[j, np.flatnonzero((ori == ori[(j * 10) % K3]) & (freq == 0.2))] = 1.0
    r1 = LC.orientation_across_frequency_claim(q1, props, n_random=100)
    assert r1.value < 0.1
    narrow = dict(props, frequency=np.where(freq > 0.25, 0.25, 0.25))
    assert not LC.orientation_across_frequency_claim(q, narrow).testable


def test_contour_claim_supported_only_with_contours():
    from cnce.images import probes
    from cnce.images.contours import arc_points, energy_detector, line_points

    p = probes.AuthorsProbe(freqs=(0.2, 0.25))
    fns = []
    for a in np.linspace(0, np.pi, 6, endpoint=False):
        pts, ang = line_points((15.5, 15.5), a, 16, 2.0)
        fns.append(energy_detector(32, pts, ang, 0.25))
    for s in (-2.6, -2.0):
        pts, ang = arc_points((15.5, 26.0), 12, s, s + 2.0, 2.0)
        fns.append(energy_detector(32, pts, ang, 0.25))
    rng = np.random.default_rng(0)
    import torch
    Ws = [torch.as_tensor(rng.standard_normal((1024, 4)), dtype=torch.float32) for _ in range(24)]
    fn = lambda X: np.concatenate([f(X) for f in fns], 1)  # noqa: E731
    fr = lambda X: np.concatenate([((X - X.mean(1, keepdim=True)) @ W).pow(2).sum(1, keepdim=True).numpy() for W in Ws], 1)  # noqa: E731
    resp, bank = probes.probe_function(fn, p), probes.probe_function(fr, p)
    # the null distribution: 40 draws of 8 random units each, from a bank of 24 random detectors
    draws = [[b[idx] for b in bank] for idx in (rng.choice(24, 8, replace=False) for _ in range(40))]
    resp_r = draws[0]
    r = LC.contour_claim(resp, draws, p, n_perm=40)
    assert r.value == 1.0 and r.baselines["random layer-3 weights"] == 0 and r.verdict.startswith("supported"), str(r)
    assert r.extra["bent share"][0] == pytest.approx(2 / 8) and r.extra["n_perm"] == 40
    assert r.extra["null quantiles"]["random layer-3 weights"][0]["q95"] == 0.0
    assert r.extra["p_per_seed"][0] == pytest.approx(1 / 41)
    # one draw of the null cannot make a verdict: its p-value is at least 1/2
    r1 = LC.contour_claim(resp, resp_r, p, n_perm=40)
    assert r1.verdict.startswith("not supported") and r1.extra["p_per_seed"][0] >= 0.5
    r0 = LC.contour_claim(resp_r, draws, p, n_perm=40)
    assert r0.value == 0 and r0.verdict.startswith("not supported")
    # the positive control must pass first: controls that are no contours make the claim untestable
    rc = LC.contour_claim(resp, draws, p, resp_control=resp_r, n_perm=40)
    assert not rc.testable and "0 of 8" in rc.not_testable and "positive control fails" in rc.not_testable
    assert rc.extra["positive control"]["passed"] == 0.0
    ok = LC.contour_claim(resp, draws, p, resp_control=resp, n_perm=40)
    assert ok.testable and ok.extra["positive control"]["passed"] == 1.0
    with pytest.raises(ValueError, match="kind"):
        LC.contour_claim(resp, resp_r, p, kind="blob")


def test_claims_from_networks_smoke():
    from cnce.images import probes
    from cnce.images.data import Whitener
    from cnce.images.network import ImageNetwork

    X = np.random.default_rng(0).standard_normal((400, 16 * 16))
    wh = Whitener.fit(X - X.mean(1, keepdims=True), 24)
    nets = [(ImageNetwork(D=24, K1=20, K2=12, D3=8, K3=6, K4=4, seed=s), wh) for s in (0, 1)]
    out = LC.claims_from_networks(nets, probes.AuthorsProbe(size=16, freqs=(0.15, 0.25)), n_random=20)
    assert set(out["results"]) == {"layer 2 position", "layer 2 orientation", "layer 2 frequency", "layer 3 contours",
                                   "layer 4 orientation across frequencies", "layer 4 corners"}
    for r in out["results"].values():
        assert isinstance(r, V.Measured) and (not r.testable or r.rule == "range of 2 seeds")
    assert len(out["responses"]["layer 3"]) == 2 and out["responses"]["layer 4"][0][1].shape[0] == 4
    with pytest.raises(ValueError, match="networks"):
        LC.claims_from_networks([])


@pytest.mark.slow
def test_contour_controls_in_the_committed_network_pass():
    """The positive control: layer-3 units fitted to ideal contour fields inside the committed
    paper-size network score as contours (most of them), before the measure may judge the
    learned units."""
    import torch

    from cnce.images import probes, runs
    from cnce.images.contours import contour_properties

    state = runs.load_state(runs.weights_dir() / "paper")
    net, wh = runs.network_from_state(state)
    p = probes.AuthorsProbe()
    with torch.no_grad():
        resp, r2 = LC.contour_controls(net, wh, p, n_lines=4, n_arcs=1)
    props = contour_properties(resp, p)
    assert len(r2) == 5 and min(r2) > 0.6
    assert props["contour"].mean() >= 0.6 and props["steps"].min() >= 2


@pytest.mark.slow
def test_corner_controls_pass_when_layer_3_has_arms():
    """The layer-4 positive control can pass: once layer 3 holds units fitted to straight arms
    from the centre, layer-4 pooling fits L-shaped fields well and scores corners."""
    import copy

    import torch

    from cnce.images import probes, runs
    from cnce.images.contours import contour_properties

    net, wh = runs.network_from_state(runs.load_state(runs.weights_dir() / "paper"))
    p = probes.AuthorsProbe()
    A = LC._flat(LC._layer3_inputs(net, wh, p, 4096))
    c, arm = np.array([15.5, 15.5]), 12.0
    T = []
    for k in range(8):
        b = k * np.pi / 4
        pts = c + np.linspace(0, arm, 13)[:, None] * np.array([math.cos(b), math.sin(b)])
        t = LC._curve_target(p, pts, np.full(13, b % np.pi), 2.0)
        T.append(t - t.mean())
    W = np.linalg.lstsq(A, np.stack(T, 1), rcond=None)[0].T
    arms = copy.deepcopy(net)
    with torch.no_grad():
        arms.W3[:8] = torch.tensor(W / np.linalg.norm(W, axis=1, keepdims=True), dtype=torch.float32) * net.W3.norm(dim=1).mean()
    resp, r2 = LC.corner_controls(arms, wh, p)
    assert min(r2) > 0.6
    assert contour_properties(resp, p)["corner"].mean() >= 0.5


def test_permutation_p_and_null_summary_known_answers():
    null = np.arange(100) / 100  # 0.00 ... 0.99
    assert LC.permutation_p(1.0, null) == pytest.approx(1 / 101)
    assert LC.permutation_p(0.5, null) == pytest.approx(51 / 101)
    assert LC.permutation_p(-1.0, null) == 1.0
    s = LC.null_summary(null)
    assert s["n"] == 100 and s["mean"] == pytest.approx(0.495) and s["q05"] < s["q50"] < s["q95"]
    with pytest.raises(ValueError, match="null"):
        LC.permutation_p(0.1, [])


def test_pooling_nulls_are_distributions_with_about_five_percent_mean():
    p = _layer1()
    r = LC.pooling_claim(_pool_by(p, "orientation"), p, "orientation", n_random=100, n_perm=100)
    q = r.extra["null quantiles"]["random pooling"][0]
    assert r.extra["n_perm"] == 100 and q["n"] == 100
    assert 0.0 < q["mean"] < 0.12 and q["q05"] <= q["mean"] <= q["q95"]  # about the 5 % a coherence test gives by chance
    assert r.extra["p_per_seed"][0] == pytest.approx(1 / 101)  # no draw reaches the learned share
    with pytest.raises(ValueError, match="n_perm"):
        LC.pooling_claim(_pool_by(p, "orientation"), p, "orientation", n_perm=0)


def _m(word, value=0.5):
    from cnce.images.verdicts import Measured, not_testable

    if word == "untestable":
        return not_testable("c", "m", "too narrow")
    return Measured(claim="c", measure="m", value=value, interval=(value - 0.1, value + 0.1), verdict=f"{word}: {value}")


def test_over_settings_agrees_or_names_the_deciding_setting():
    assert LC.over_settings({"a": _m("supported"), "b": _m("supported")}).verdict.startswith("reproduced")
    assert LC.over_settings({"a": _m("not supported"), "b": _m("contradicted")}).verdict.startswith("not reproduced")
    mixed = LC.over_settings({"a": _m("supported"), "b": _m("not supported")}, why="the range")
    assert mixed.verdict.startswith("partly: depends on the setting, supported under a, not under b (the range)")
    one = LC.over_settings({"a": _m("not supported"), "b": _m("untestable")})
    assert one.verdict.startswith("not reproduced under every testable setting (b not testable)")
    assert not LC.over_settings({"a": _m("untestable")}).testable
    from cnce.images.claims import badge

    assert badge(mixed) == "partly reproduced" and badge(one) == "not reproduced"


def test_pooled_count_and_sparsity_known_answers():
    q = np.array([[1.0, 0, 0, 0], [1, 1, 1, 1], [8, 1, 1, 0]])
    assert LC.pooled_count(q, 0.9).tolist() == [1, 4, 2]
    rng = np.random.default_rng(0)
    sparse = [np.where(rng.random((50, 600)) < 0.02, 1.0, 1e-6) for _ in range(3)]
    dense = [rng.random((50, 600)) for _ in range(3)]
    r = LC.sparsity_claim(sparse, {"dense": dense})
    assert r.verdict.startswith("supported") and r.value < 20 and r.extra["null quantiles"]["dense"]["q05"] > 400
    assert LC.sparsity_claim(dense, {"dense": dense}).verdict.startswith("not supported")


def test_grating_index_known_answers():
    from cnce.images import data, measures

    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((4000, 256)), dtype=torch.float32)
    wh = data.Whitener.fit(X, 200)
    yy, xx = np.mgrid[0:16, 0:16]
    env = np.exp(-((xx - 7.5) ** 2 + (yy - 7.5) ** 2) / (2 * 3.0**2))
    gab = np.stack([measures.grating(16, th, 0.25) * env for th in (0.4, 1.3)])
    t = measures.grating_tuning(measures.project_to_whitened(gab, wh), wh)
    assert np.all(t["osi"] > 0.8) and np.allclose(t["frequency"], 0.25)
    assert np.allclose(t["orientation"], [0.4, 1.3], atol=0.1)
    blob = measures.difference_of_gaussians(16, 8)
    assert np.median(measures.grating_tuning(measures.project_to_whitened(blob, wh), wh)["osi"]) < 0.3
    with pytest.raises(ValueError, match="n_orient"):
        measures.grating_tuning(torch.zeros(1, 200), wh, n_orient=2)
