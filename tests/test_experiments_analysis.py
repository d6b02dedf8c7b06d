"""Summaries and the shared figure style, on a synthetic results table with known answers."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from cnce import plotting
from cnce.experiments import analysis


def synthetic(seed=0):
    """Errors ~ c/N times log-normal scatter: slope -1; NCE 10x CNCE; MLE half of CNCE."""
    rng = np.random.default_rng(seed)
    rows = []
    for method, kappa, c in [("cnce", 2, 4.0), ("cnce", 10, 2.0), ("nce", 2, 40.0), ("nce", 10, 20.0), ("mle", None, 1.0)]:
        for N in (100, 1000, 10000):
            for sim in range(50):
                rows.append({"study": "toy", "method": method, "kappa": kappa, "N": N, "sim": sim,
                             "error": c / N * np.exp(0.3 * rng.standard_normal()),
                             "converged": True, "iterations": 5, "grad_norm": 1e-10, "init_loss": 2.0, "loss": 1.0})
    df = pd.DataFrame(rows)
    df["kappa"] = df["kappa"].astype("Int64")
    return df


def test_quantile_summary_orders_quantiles_and_keeps_mle():
    s = analysis.quantile_summary(synthetic())
    assert (s.q10 <= s["median"]).all() and (s["median"] <= s.q90).all()
    assert s.kappa.isna().sum() == 3 and (s.n == 50).all()
    np.testing.assert_allclose(s.log10_median, np.log10(s["median"]))


def test_slopes_recover_minus_one():
    sl = analysis.fit_slopes(synthetic())
    assert len(sl) == 5
    np.testing.assert_allclose(sl.slope, -1.0, atol=0.05)


def test_ratio_and_stuck_counts():
    r = analysis.method_ratio(synthetic(), "nce", "cnce")
    np.testing.assert_allclose(np.median(r.ratio), 10.0, rtol=0.2)
    df = synthetic()
    df.loc[(df.method == "mle") & (df.sim < 3), "error"] = 5.0
    st = analysis.stuck_counts(df, threshold=1.0)
    assert st[st.method == "mle"].stuck.tolist() == [3, 3, 3]
    assert st[st.method != "mle"].stuck.sum() == 0
    with pytest.raises(ValueError, match="threshold"):
        analysis.stuck_counts(df, threshold=0)


def test_error_plot_draws_median_and_bands_and_validates():
    fig, axes = plotting.figure(2)
    df = synthetic()
    plotting.error_plot(axes[0, 0], df)
    assert len(axes[0, 0].lines) == 5 * 3  # median + two dashed quantiles per curve
    plotting.error_plot(axes[0, 1], df[df.N == 1000], x="kappa", bands="fill")
    with pytest.raises(ValueError, match="x must be"):
        plotting.error_plot(axes[0, 0], df, x="eps")
    with pytest.raises(ValueError, match="bands"):
        plotting.error_plot(axes[0, 0], df, bands="shaded")
    assert plotting.curve_style("mle")["color"] == "black"
    assert plotting.curve_style("cnce", 2)["color"] != plotting.curve_style("cnce", 60)["color"]
    assert plotting.curve_style("cnce", 2, by_kappa=False)["color"] == plotting.METHOD_COLORS["cnce"]


def test_page_figures_fit_the_page_and_tell_curves_apart():
    """The moved figure functions: no figure is wider than the page body (so it is shown at its
    natural size), panels come two a row, and several kappa of CNCE get distinct colours while
    a single CNCE curve keeps the method's colour."""
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    df = synthetic()
    three = pd.concat([df.assign(study=s) for s in ("a", "b", "c")])
    fig = plotting.consistency_figure(three[three.method != "nce"], {"a": "A", "b": "B", "c": "C"})
    assert fig.get_size_inches()[0] <= plotting.PAGE_WIDTH + 1e-9
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert len(visible) == 3 and fig.axes[3].get_legend() is not None  # the spare place holds the legend
    medians = [ln for ln in visible[0].lines if ln.get_linestyle() == "-" and ln.get_marker() not in (None, "None", "")]
    colours = {mcolors.to_hex(ln.get_color()) for ln in medians}
    assert len(colours) == len(medians) == 3  # MLE and CNCE at two kappa: three distinct colours
    plt.close(fig)
    toy = df.assign(study="gaussian")
    fig = plotting.experiments.nce_vs_n_figure(toy, "gaussian", [2, 10], panel="c")
    assert fig.get_size_inches()[0] <= plotting.PAGE_WIDTH + 1e-9 and len(fig.legends) == 1
    cn = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("CNCE")]
    assert cn and mcolors.to_hex(cn[0].get_color()) == mcolors.to_hex(plotting.METHOD_COLORS["cnce"])
    plt.close(fig)
    fig = plotting.experiments.kappa_sweep_figure(toy[toy.N == 1000], 1000, [2, 10])
    assert len(fig.legends) == 1
    plt.close(fig)
