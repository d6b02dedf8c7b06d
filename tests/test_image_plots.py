"""The image chapter's drawings (cnce.images.plots): known-answer checks of the
space-orientation icons and the layout of the appendix figures. Small and fast."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from cnce.images import plots, probes  # noqa: E402
from cnce.plotting import PAGE_WIDTH  # noqa: E402


def _bar_direction(stimulus: np.ndarray) -> np.ndarray:
    """Unit vector (x right, y down) along the bars of a grating-like image: perpendicular to
    the wave vector at the peak of its Fourier amplitude."""
    n = stimulus.shape[0]
    F = np.abs(np.fft.fft2(stimulus - stimulus.mean()))
    ky, kx = np.unravel_index(np.argmax(F), F.shape)
    fx, fy = (kx if kx <= n // 2 else kx - n), (ky if ky <= n // 2 else ky - n)
    v = np.array([-fy, fx], dtype=float)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("probe", [probes.GaborProbe(size=32, freqs=(0.25,), n_orient=12, n_phase=1),
                                   probes.AuthorsProbe(size=32, freqs=(0.25,))], ids=["ours", "authors"])
@pytest.mark.parametrize("k", [1, 3, 8])
def test_polar_curve_lies_along_the_bars_of_the_preferred_stimulus(probe, k):
    """A unit that responds only to stimulus orientation k: its icon's longest radius points
    along that stimulus' bars, read off the stimulus image itself (not from the angle convention)."""
    f = probe.freqs[0]
    n_pos = len(probe.positions(f))
    r = np.zeros((n_pos, len(probe.orientations)))
    r[:, k] = 1.0
    segs, alphas = plots._so_segments([r], probe)
    assert len(segs) == n_pos and alphas == [1.0] * n_pos
    x, y = probe.positions(f)[0]
    d = segs[0] - np.array([x, y])
    far = d[np.argmax(np.hypot(*d.T))]
    far = far / np.linalg.norm(far)
    if isinstance(probe, probes.AuthorsProbe):
        stim = probe.stimuli(f, np.array([k]))[0]
    else:
        stim = probe.stimuli(f)[0, k, 0]
    assert abs(far @ _bar_direction(stim)) > 0.97


def test_authors_probe_circles_have_the_envelope_radius():
    probe = probes.AuthorsProbe(size=32, freqs=(0.1, 0.25))
    resp = [np.ones((len(probe.positions(f)), probe.n_orient)) for f in probe.freqs]
    segs, _ = plots._so_segments(resp, probe)
    n0 = len(probe.positions(0.1))
    for seg, f in ((segs[0], 0.1), (segs[n0], 0.25)):
        c = seg[:-1].mean(0)
        assert np.allclose(np.hypot(*(seg - c).T), probe.sigma(f), rtol=1e-6)
    assert probe.sigma(0.1) > probe.sigma(0.25)  # lower frequency, larger circle


def test_mosaic_figure_has_no_blank_band():
    tiles = np.random.default_rng(0).standard_normal((48, 8, 8))
    fig = plots.plot_mosaic({"features": tiles}, ncol=12, size=6.8)
    w, h = fig.get_size_inches()
    assert h < 0.5 * w  # a 12 x 4 mosaic: the figure is as wide as its aspect, not square
    plt.close(fig)


def _pool_table(freq_zero: bool):
    rng = np.random.default_rng(1)
    n = 20
    df = pd.DataFrame({"n_pooled": rng.integers(2, 6, n), "top_share": rng.random(n)})
    for name in ("orientation", "frequency", "position"):
        zero = freq_zero and name == "frequency"
        df[name] = 0.0 if zero else rng.random(n)
        df[f"{name}_random"] = 0.0 if zero else rng.random(n)
    return df


def test_pooling_coherence_leaves_out_an_empty_spread():
    flat = _pool_table(freq_zero=True)
    assert plots.degenerate_spreads(flat) == ["frequency"]
    assert plots.degenerate_spreads(_pool_table(freq_zero=False)) == []
    fig = plots.plot_pooling_coherence({"layer 4": flat})
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert titles == ["orientation spread", "position spread", "largest weight"]
    plt.close(fig)


def test_meta_iteration_ticks_are_whole_numbers():
    hist = [dict(meta=m, train_loss=0.5, loss_fresh_noise=0.6, loss_unseen=0.7) for m in range(3)]
    fig = plots.plot_memorisation({"a: run one": hist, "b: run two": hist})
    fig.canvas.draw()
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks)
    assert not any(ax.get_legend() for ax in fig.axes)  # the legend sits below the panels
    plt.close(fig)


def test_appendix_canvases():
    rng = np.random.default_rng(0)
    probe = probes.AuthorsProbe(size=16)
    K3, K4, n = 6, 3, 16
    resp3 = [rng.random((K3, len(probe.positions(f)), probe.n_orient)) for f in probe.freqs]
    X = rng.standard_normal((50, n * n))
    top3 = np.argsort(-rng.random((K3, 50)), 1)[:, :4]
    val4 = np.sort(rng.random((K4, 7)), 1)[:, ::-1]
    top4 = np.argsort(-rng.random((K4, 50)), 1)[:, :7]
    q4 = rng.random((K4, K3)) ** 4
    f3 = plots.plot_layer3_units(resp3, probe, range(K3), X, top3, n_patches=4)
    f4 = plots.plot_layer4_units(range(K4), q4, resp3, probe, X, top4, val4, per_row=5)
    for fig in (f3, f4):
        assert len(fig.axes) == 1 and fig.get_figwidth() == pytest.approx(PAGE_WIDTH)
        plt.close(fig)
    snaps = {m: {i: rng.standard_normal((9, 8, 8)) for i in range(3)} for m in ("cnce", "nce")}
    fig = plots.plot_d2_snapshots(snaps, [0, 1, 2], ncol=3)
    assert len(fig.axes) == 6 and fig.axes[0].get_title() == "CNCE"
    plt.close(fig)
    fig = plots.plot_comparison(snaps, [0, 2], ncol=3, names={"cnce": "CNCE", "nce": "NCE"})
    assert [ax.get_title() for ax in fig.axes] == ["initial", "meta-it. 2", "", ""]
    plt.close(fig)


def test_icons_in_the_authors_convention_keep_the_best_frequency_and_the_sign():
    import numpy as np

    from cnce.images import plots

    rng = np.random.default_rng(0)
    resp = [rng.normal(size=(2, 5, 8)) * s for s in (0.5, 2.0, 1.0)]  # frequency 1 is the strongest for both units
    resp[1][0, 2, 3] = 5.0
    resp[1][0, 4, 1] = -10.0
    icons = plots.icon_responses(resp)
    assert [len(p) for p in icons[0]] == [0, 2, 0]  # curves at the best frequency only
    (pos, cpos), (neg, cneg) = icons[0][1]
    assert cpos == plots.POSITIVE and cneg == plots.NEGATIVE
    assert neg.max() == 1.0 and neg[4, 1] == 1.0 and pos[2, 3] == 0.5  # divided by the largest |response|
    assert np.all((pos == 0) | (neg == 0))
    overlay = plots.icon_responses(resp, "overlay")
    assert all(len(p) == 1 for p in overlay[0])
    with pytest.raises(ValueError, match="convention"):
        plots.icon_responses(resp, "median")
