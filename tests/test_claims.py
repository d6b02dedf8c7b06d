"""The claims ledger's statistics (``cnce.experiments.claims``) on tables with known answers; the
rules and the ledger itself: ``tests/test_ledger.py``."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cnce.experiments import claims


def table(study="gaussian", curves=(("cnce", 2, 4.0), ("cnce", 10, 2.0), ("nce", 2, 1.0), ("nce", 10, 1.0), ("mle", None, 1.0)),
          Ns=(100, 1000, 10000), S=60, sigma=0.3, seed=0, shared=False, eps=0.5):
    """Errors ``c / N`` times log-normal scatter (natural-log sd ``sigma``): slope -1, known
    ratios. ``shared``: one scatter per simulation for every curve (perfectly paired)."""
    rng = np.random.default_rng(seed)
    z_sim = rng.standard_normal(S)
    rows = []
    for method, kappa, c in curves:
        for N in Ns:
            z = z_sim if shared else rng.standard_normal(S)
            for sim in range(S):
                rows.append({"study": study, "method": method, "kappa": kappa, "N": N, "sim": sim,
                             "error": c / N * math.exp(sigma * z[sim]), "eps": eps if method == "cnce" else np.nan})
    df = pd.DataFrame(rows)
    df["kappa"] = df["kappa"].astype("Int64")
    return df


def test_log10_medians_point_and_replicates():
    df = table()
    m = claims.log10_medians(df, n_boot=200)
    assert m.reps.shape == (len(m.keys), 200) and len(m.keys) == 15
    g = df[(df.method == "cnce") & (df.kappa == 2) & (df.N == 100)]
    i = np.flatnonzero(m.select(method="cnce", kappa=2) & (m.keys.N == 100).to_numpy())[0]
    assert m.point[i] == pytest.approx(math.log10(g.error.median()), rel=1e-12)
    assert m.select(kappa=None).sum() == 3  # MLE
    with pytest.raises(ValueError, match="n_boot"):
        claims.log10_medians(df, n_boot=1)
    with pytest.raises(ValueError, match="simulations 0..59"):
        claims.log10_medians(df.drop(index=5), n_boot=10)


def test_bootstrap_standard_error_of_a_log_median_matches_theory():
    """For log-normal errors the log of the sample median has standard deviation
    sqrt(pi / 2) sigma / sqrt(S) (natural log) for large S; the bootstrap SE agrees within 30 %."""
    S, sigma = 400, 0.5
    df = table(curves=(("mle", None, 1.0),), Ns=(1000,), S=S, sigma=sigma)
    m = claims.log10_medians(df, n_boot=2000, seed=1)
    theory = math.sqrt(math.pi / 2) * sigma / math.sqrt(S) / math.log(10)
    assert m.reps[0].std(ddof=1) == pytest.approx(theory, rel=0.3)


def test_slope_and_log_ratio_recover_known_values():
    m = claims.log10_medians(table(S=200), n_boot=500)
    s = claims.slope(m, "gaussian", "cnce", 10)
    assert s.lo <= -1 <= s.hi and abs(s.value + 1) < 0.05 and s.se > 0
    r = claims.log_ratio(m, "gaussian", ("cnce", 2), ("mle", None))
    assert r.lo <= math.log10(4) <= r.hi
    assert claims.log_ratio(m, "gaussian", ("cnce", 2), ("cnce", 10)).value == pytest.approx(math.log10(2), abs=0.06)
    with pytest.raises(ValueError, match="no curve points"):
        claims.slope(m, "gaussian", "sm", None)


def test_resampling_is_paired_across_curves():
    """With the same scatter for every curve, the log ratio of two curves is exact in every
    bootstrap replicate (the draw of simulations is shared), so its SE is zero."""
    m = claims.log10_medians(table(shared=True), n_boot=300)
    r = claims.log_ratio(m, "gaussian", ("cnce", 2), ("cnce", 10))
    assert r.value == pytest.approx(math.log10(2), abs=1e-12) and r.se < 1e-12


def test_count_above():
    df = pd.DataFrame({"error": [0.1] * 90 + [5.0] * 10})
    c = claims.count_above(df, 1.0, n_boot=2000)
    assert c.value == 10 and c.lo < 10 < c.hi and c.se == pytest.approx(math.sqrt(100 * 0.1 * 0.9), rel=0.15)


def _eps_grid(study, N, S, medians: dict, seed=1):
    """An eps experiment's CNCE rows: setting -> median error (log-normal scatter, shared per sim)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(S)
    rows = []
    for setting, c in medians.items():
        for n in N:
            for sim in range(S):
                rows.append({"study": study, "method": "cnce", "kappa": 10, "N": n, "sim": sim, "eps_setting": setting,
                             "error": c / n * math.exp(0.3 * z[sim]), "eps": 1.0})
    d = pd.DataFrame(rows)
    d["kappa"] = d["kappa"].astype("Int64")
    return d


def test_ring_best_eps_finds_the_best_multiple_of_the_grid():
    """NCE 3x CNCE at the heuristic's eps, but CNCE at 3x the heuristic's eps is 10 times more
    accurate still: NCE 30x there."""
    S, Ns = 100, (500, 5000)
    fig = table("ring-authors", curves=(("cnce", 10, 1.0), ("nce", 10, 3.0), ("mle", None, 0.5)), Ns=Ns, S=S, shared=True)
    eps = _eps_grid("eps-ring-authors", Ns, S, {"default": 1.0, "x3": 0.1, "x0.3": 2.0})
    best = claims.ring_best_eps(fig, eps, n_boot=300)
    assert list(best["table"].best_factor) == [3.0, 3.0]
    assert best["mean_best"].value == pytest.approx(math.log10(30), abs=0.1)
    assert best["mean_default"].value == pytest.approx(math.log10(3), abs=0.1)
    with pytest.raises(ValueError, match="n_boot"):
        claims.ring_best_eps(fig, eps, n_boot=1)


def test_slope_bend_is_zero_for_a_straight_line_and_signed_for_a_bent_one():
    """Errors like 1/N: no bend; errors like 1/N up to N = 1000 and flat beyond: the upper
    half's slope is shallower, a positive bend."""
    d = table(curves=(("cnce", 2, 1.0),), Ns=(100, 300, 1000, 3000, 10000), S=200, shared=True)
    m = claims.log10_medians(d, n_boot=200)
    assert abs(claims.slope_bend(m, "gaussian", "cnce", 2).value) < 1e-9
    bent = d.copy()
    bent.loc[bent.N > 1000, "error"] = bent.loc[bent.N > 1000, "error"] * bent.loc[bent.N > 1000, "N"] / 1000
    b = claims.slope_bend(claims.log10_medians(bent, n_boot=200), "gaussian", "cnce", 2)
    assert b.value > 0.5 and b.lo > 0
    with pytest.raises(ValueError, match="three or more N"):
        claims.slope_bend(claims.log10_medians(table(Ns=(100, 1000)), n_boot=10), "gaussian", "cnce", 2)


def test_gap_change_is_paired_and_signed():
    """NCE 4x CNCE at kappa 2 and 2x at kappa 10: the gap shrinks by log10(2) in every replicate."""
    d = table(curves=(("cnce", 2, 1.0), ("cnce", 10, 1.0), ("nce", 2, 4.0), ("nce", 10, 2.0)), shared=True)
    m = claims.log10_medians(d, n_boot=200)
    ch = claims.gap_change(m, "gaussian", (("nce", 2), ("cnce", 2)), (("nce", 10), ("cnce", 10)))
    assert ch.value == pytest.approx(math.log10(2), abs=1e-9) and ch.se < 1e-9


def test_eps0_check_is_exact_and_deterministic():
    a = claims.eps0_check(S=3, N=50, seed=1)
    assert a["worst"] < 1e-12 and set(a["deviations"]) == {"gaussian", "ica", "ring", "lognormal", "bernoulli"}
    assert a == claims.eps0_check(S=3, N=50, seed=1)


def test_score_matching_limit_rejects_bad_noise():
    with pytest.raises(ValueError, match="noise"):
        claims.score_matching_limit(N=10, noise="gaussian")
