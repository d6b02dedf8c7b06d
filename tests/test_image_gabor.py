"""Known answers of layer 1's Gabor-like test (localised AND oriented AND band-pass):
:func:`cnce.images.measures.localisation_index`, :func:`~cnce.images.measures.bandpass_index`,
:func:`~cnce.images.measures.gabor_like` and the claim's rule
:func:`cnce.images.layer_claims.gabor_claim`."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cnce.images import layer_claims as LC
from cnce.images import measures as M
from cnce.images.probes import gabor

N = 32
K = 120


def _known():
    th = np.linspace(0, np.pi, K, endpoint=False)
    rng = np.random.default_rng(3)
    return {"Gabor": gabor(N, rng.uniform(12, 20, K), rng.uniform(12, 20, K), th, 0.15, rng.uniform(0, 6, K), 3.0),
            "plane wave": np.stack([M.grating(N, t, f) for t, f in zip(th, np.linspace(0.08, 0.3, K))]),
            "Gaussian blob": M.gaussian_blobs(N, K, seed=1),
            "white noise": M.white_noise(N, K, seed=2)}


@pytest.fixture(scope="module")
def thresholds():
    """Thresholds from nulls of pixel noise (95 % quantiles), one per setting."""
    out = {}
    for name, s in M.GABOR_SETTINGS.items():
        nulls = {"white noise": M.gabor_parts(M.white_noise(N, 200, seed=10), radius=s["radius"], octaves=s["octaves"]),
                 "localised noise": M.gabor_parts(M.localised_noise(N, 200, seed=11), radius=s["radius"],
                                                  octaves=s["octaves"])}
        out[name] = M.gabor_thresholds(nulls)
    return out


# (localised, oriented, band-pass) of each constructed input
EXPECTED = {"Gabor": (True, True, True), "plane wave": (False, True, True),
            "Gaussian blob": (True, False, False), "white noise": (False, False, False)}


@pytest.mark.parametrize("setting", list(M.GABOR_SETTINGS))
def test_each_part_on_known_inputs(setting, thresholds):
    s = M.GABOR_SETTINGS[setting]
    for name, f in _known().items():
        flags = M.gabor_like(M.gabor_parts(f, radius=s["radius"], octaves=s["octaves"]), thresholds[setting], size=N,
                             f_max=s["f_max"])
        want = EXPECTED[name]
        for part, w in zip(M.GABOR_PARTS, want):
            share = float(flags[part].mean())
            assert (share >= 0.9) if w else (share <= 0.1), (setting, name, part, share)
        g = float(flags["Gabor-like"].mean())
        assert (g >= 0.9) if all(want) else (g <= 0.1), (setting, name, g)


def test_localisation_index_values():
    # a filter inside one disc holds all its energy there; a plane wave about the disc's area share
    dot = np.zeros((N, N))
    dot[10, 12] = 1.0
    assert M.localisation_index(dot, 1 / 8)[0] == pytest.approx(1.0)
    wave = M.grating(N, 0.3, 0.2)
    area = np.pi * (N / 8) ** 2 / N**2
    assert M.localisation_index(wave, 1 / 8)[0] == pytest.approx(area, rel=0.35)
    with pytest.raises(ValueError, match="radius"):
        M.localisation_index(dot, 0.6)


def test_bandpass_index_peak_and_low_pass():
    peak, share = M.bandpass_index(M.grating(N, 0.5, 0.25), 1.0)
    assert peak[0] == pytest.approx(0.25, abs=0.02) and share[0] > 0.9
    peak, share = M.bandpass_index(M.gaussian_blobs(N, 5, seed=0), 1.0)
    assert np.all(peak == 0) and np.all(share == 0)  # low-pass: the power peaks at DC
    with pytest.raises(ValueError, match="octaves"):
        M.bandpass_index(M.grating(N, 0.5, 0.25), 0.0)


def test_band_pass_needs_the_peak_away_from_nyquist(thresholds):
    setting = next(iter(M.GABOR_SETTINGS))
    s = M.GABOR_SETTINGS[setting]
    fine = np.stack([M.grating(N, t, 0.49) for t in np.linspace(0, np.pi, 10, endpoint=False)])
    flags = M.gabor_like(M.gabor_parts(fine, radius=s["radius"], octaves=s["octaves"]), thresholds[setting], size=N,
                         f_max=s["f_max"])
    assert not flags["band-pass"].any()


def _table(learned: float, *, bank=1.0, ica=0.8, init=0.0, noise=0.01) -> pd.DataFrame:
    rows = []
    for s in M.GABOR_SETTINGS:
        for name, g in (("learned", learned), ("Gabor bank", bank), ("FastICA", ica), ("initialisation", init),
                        ("white noise", 0.0), ("localised noise", noise), ("isotropic DoG", 0.0), ("Gaussian blobs", 0.0)):
            rows.append({"setting": s, "units": name, "localised": 1.0, "oriented": max(g, 0.05), "band-pass": g,
                         "Gabor-like": g, "threshold localisation": 0.1, "threshold osi": 0.4, "threshold band_share": 0.8})
    return pd.DataFrame(rows).set_index(["setting", "units"])


def test_gabor_claim_gives_each_verdict():
    s = next(iter(M.GABOR_SETTINGS))
    yes = LC.gabor_claim([_table(0.6), _table(0.55), _table(0.7)], s, n_units=600)
    assert yes.verdict.startswith("supported") and yes.value == pytest.approx(0.6167, abs=1e-3)
    assert yes.extra["parts per seed"]["band-pass"] == [0.6, 0.55, 0.7]
    no = LC.gabor_claim([_table(0.6), _table(0.45), _table(0.7)], s)
    assert no.verdict.startswith("not supported")
    # a positive control that fails its own test certifies nothing
    bad = LC.gabor_claim([_table(0.6, bank=0.3), _table(0.6), _table(0.6)], s)
    assert not bad.testable and "Gabor bank" in bad.not_testable
    # a negative control that passes certifies nothing either
    bad = LC.gabor_claim([_table(0.6, init=0.2), _table(0.6), _table(0.6)], s)
    assert not bad.testable and "initialisation" in bad.not_testable
    both = LC.over_settings({k: LC.gabor_claim([_table(0.6)] * 3, k) for k in M.GABOR_SETTINGS})
    assert both.verdict.startswith("reproduced under every setting")
