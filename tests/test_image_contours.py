"""Known-answer tests of the authors' probe (cnce.images.probes.AuthorsProbe) and of the contour
and corner measures (cnce.images.contours) on hand-built units: energy detectors of Gabor
filters along a straight line, an arc and an L, probed end to end; random and blob-like units
must not pass."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cnce.images import contours as C
from cnce.images import probes
from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork

TORCH_THREADS = 2


# -- the authors' probe --------------------------------------------------------------------------
def test_authors_probe_values():
    p = probes.AuthorsProbe()
    assert p.freqs == pytest.approx((0.10, 0.15, 0.20, 0.25))
    # b = 1.4 octaves: sigma = 0.416 wavelengths ("about 0.42")
    assert p.sigma(0.1) * 0.1 == pytest.approx(0.4161, abs=1e-4)
    assert len(p.theta) == 121 and p.theta[-1] == pytest.approx(2 * np.pi) and p.n_orient == 60
    # grids N = max(2, ceil(32 / (2 sigma))): 4, 6, 8, 10; first location sigma - 1 (0-based)
    assert [p.grid(f)[0] for f in p.freqs] == [4, 6, 8, 10]
    pos = p.positions(0.1)
    assert pos.shape == (16, 2) and pos[0, 0] == pytest.approx(p.sigma(0.1) - 1)
    assert pos[-1, 0] == pytest.approx(32 - p.sigma(0.1) - 1) and pos[1, 0] == pos[0, 0] and pos[1, 1] > pos[0, 1]
    assert p.n_stimuli() == (16 + 36 + 64 + 100) * 60
    e = probes.AuthorsProbe.extended()
    assert e.freqs[0] == pytest.approx(0.05) and e.freqs[-1] == pytest.approx(0.45) and len(e.freqs) == 9
    with pytest.raises(ValueError, match="steps"):
        probes.AuthorsProbe(steps=121)
    with pytest.raises(ValueError, match="freqs"):
        probes.AuthorsProbe(freqs=(0.6,))


def test_authors_stimuli_orientation_and_symmetry():
    p = probes.AuthorsProbe()
    S = p.stimuli(0.25)
    n_pos = len(p.positions(0.25))
    assert S.shape == (n_pos * 60, 32, 32)
    # theta = 0: horizontal stripes, the wave vector along y (90 degrees in image coordinates)
    for k in (0, 15, 30, 45):
        F = np.abs(np.fft.fft2(p.stimuli(0.25, np.array([55 * 60 + k]))[0]))
        ky, kx = np.unravel_index(np.argmax(F), F.shape)
        ang = math.atan2((ky if ky <= 16 else ky - 32), (kx if kx <= 16 else kx - 32)) % math.pi
        d = abs(ang - p.orientations[k]) % math.pi
        assert min(d, math.pi - d) < math.radians(8)
    # theta and theta + pi are the same stimulus; full_turn repeats the 60 distinct responses
    th = p.theta
    z = lambda t: np.sin(2 * np.pi * 0.25 * (np.sin(t) * 3.0 + np.cos(t) * 5.0) + np.pi / 2)  # noqa: E731
    assert z(th[7]) == pytest.approx(z(th[67]))
    r = np.arange(60.0)[None, None, :]
    full = p.full_turn(r)
    assert full.shape[-1] == 121 and full[0, 0, 60] == 0 and full[0, 0, 120] == 0 and full[0, 0, 61] == 1
    with pytest.raises(ValueError, match="distinct"):
        p.full_turn(np.zeros(121))


def test_probe_layers_chunks_agree_and_match_layer_outputs():
    torch.manual_seed(0)
    net = ImageNetwork(D=20, K1=12, K2=8, D3=6, K3=5, K4=3, seed=1)
    X = np.random.default_rng(0).standard_normal((500, 16 * 16))
    wh = Whitener.fit(X - X.mean(1, keepdims=True), 20)
    p = probes.AuthorsProbe(size=16, freqs=(0.15, 0.25))
    a = probes.probe_layers(net, wh, p, chunk=97)
    b = probes.probe_layers(net, wh, p, chunk=10_000)
    for L in (2, 3, 4):
        for x, y in zip(a[L], b[L]):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    assert a[3][1].shape == (5, len(p.positions(0.25)), 60) and (a[3][0] >= 0).all()
    # the same as the network's own layer outputs on those stimuli
    S = torch.as_tensor(p.stimuli(0.25).reshape(-1, 256), dtype=torch.float32)
    u = wh.transform(S - S.mean(1, keepdim=True))
    with torch.no_grad():
        for L in (2, 3, 4):
            z = net.layer_output(net.layer_input(u, L), L).numpy()
            np.testing.assert_allclose(a[L][1], z.reshape(-1, 60, z.shape[1]).transpose(2, 0, 1), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="layers"):
        probes.probe_layers(net, wh, p, layers=(1,))
    with pytest.raises(ValueError, match="size"):
        probes.probe_layers(net, wh, probes.AuthorsProbe(size=32))


# -- contours and corners on hand-built units -------------------------------------------------------
@pytest.fixture(scope="module")
def hand_built():
    """Hand-built units probed with the authors' probe."""
    f = 0.25
    units = {}
    pts, ang = C.line_points((15.5, 15.5), 0.3, 16, 2.0)
    units["straight"] = C.energy_detector(32, pts, ang, f)
    pts, ang = C.line_points((15.5, 15.5), 1.9, 16, 2.0)
    units["straight2"] = C.energy_detector(32, pts, ang, f)
    pts, ang = C.arc_points((15.5, 26.0), 12, -2.6, -0.55, 2.0)
    units["bent"] = C.energy_detector(32, pts, ang, f)
    pts, ang = C.arc_points((15.5, 30.0), 16, -2.0, -1.05, 2.0)
    units["gentle"] = C.energy_detector(32, pts, ang, f)
    p1, a1 = C.line_points((12, 14), 0.0, 10, 2.0)
    p2, a2 = C.line_points((7, 19), np.pi / 2, 10, 2.0)
    units["corner"] = C.energy_detector(32, np.r_[p1, p2], np.r_[a1, a2], f)
    units["blob"] = C.energy_detector(32, np.repeat([[15.5, 15.5]], 12, 0), np.arange(12) * np.pi / 12, f)
    grid = np.array([[x, y] for x in range(4, 29, 4) for y in range(4, 29, 4)], float)
    units["texture"] = C.energy_detector(32, grid, np.full(len(grid), 0.5), f)
    rng = np.random.default_rng(0)
    for i in range(6):
        W = torch.as_tensor(rng.standard_normal((1024, 4)), dtype=torch.float32)
        units[f"random{i}"] = (lambda W: lambda X: (((X - X.mean(1, keepdim=True)) @ W) ** 2).sum(1, keepdim=True).numpy())(W)
    p = probes.AuthorsProbe()
    resp = probes.probe_function(lambda X: {k: u(X) for k, u in units.items()}, p, chunk=5000)
    names = list(units)
    stacked = [np.concatenate([resp[k][i] for k in names]) for i in range(len(p.freqs))]
    props = C.contour_properties(stacked, p)
    return names, props, stacked, p


def _get(hand_built, name):
    names, props, _, _ = hand_built
    i = names.index(name)
    return {k: v[i] for k, v in props.items()}


def test_straight_contour_detectors_score_as_straight_contours(hand_built):
    for name in ("straight", "straight2"):
        u = _get(hand_built, name)
        assert u["contour"] and u["straight"] and not u["bent"] and not u["corner"], (name, u)
        assert u["length_wavelengths"] >= 2.5 and abs(u["turning"]) < 15


def test_bent_contour_detectors_score_as_bent_contours(hand_built):
    u = _get(hand_built, "bent")
    assert u["contour"] and u["bent"] and abs(u["turning"]) >= 60 and u["corner"], u
    g = _get(hand_built, "gentle")
    assert g["contour"] and g["bent"] and not g["corner"] and 30 <= abs(g["turning"]) < 60, g


def test_corner_detector_is_corner_like(hand_built):
    u = _get(hand_built, "corner")
    assert u["corner"], u


def test_random_blob_and_texture_units_are_not_contours(hand_built):
    names, props, _, _ = hand_built
    for name in names:
        if name.startswith("random") or name in ("blob", "texture"):
            u = _get(hand_built, name)
            assert not u["contour"] and not u["corner"] and u["share"] < 0.3, (name, u)


def test_shuffled_locations_destroy_contours(hand_built):
    names, _, stacked, p = hand_built
    sh = C.contour_properties(C.shuffle_locations(stacked, seed=3), p)
    i = [names.index(n) for n in ("straight", "straight2", "bent", "gentle")]
    assert not sh["contour"][i].any()
    # the shuffle keeps every location's tuning, only moves it
    np.testing.assert_allclose(np.sort(C.shuffle_locations(stacked, 1)[0], axis=1), np.sort(stacked[0], axis=1))


def test_trace_curve_bad_input():
    p = probes.AuthorsProbe()
    with pytest.raises(ValueError, match="R must"):
        C.trace_curve(np.zeros((3, 3)), p.positions(0.25), p.edge_angles, 3.0)
    with pytest.raises(ValueError, match="one array per probe"):
        C.contour_properties([np.zeros((1, 16, 60))], p)
