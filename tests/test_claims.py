"""The claims page's statistics (``cnce.experiments.claims``) on tables with known answers."""
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


def test_claims_table_verdicts():
    """NCE 10x worse than CNCE on the Gaussian (the paper finds it better): not reproduced; a
    Bernoulli study whose eps is 1 everywhere: CNCE = MLE, not testable; ring with NCE 10x
    CNCE: reproduced; CNCE's ratio to MLE falling with kappa: reproduced."""
    res = {
        "gaussian": table("gaussian", curves=(("cnce", 2, 4.0), ("cnce", 10, 2.0), ("nce", 2, 40.0), ("nce", 10, 20.0), ("mle", None, 1.0))),
        "bernoulli": table("bernoulli", curves=(("cnce", 2, 1.0), ("cnce", 10, 1.0), ("mle", None, 1.0)), eps=1.0, shared=True),
        "ring-authors": table("ring-authors", curves=(("cnce", 10, 1.0), ("nce", 10, 10.0), ("mle", None, 1.0))),
    }
    t = claims.claims_table(res, n_boot=300).set_index("claim")
    assert set(t.verdict) <= set(claims.VERDICTS)
    assert t.loc["Consistency (gaussian)", "verdict"] == "reproduced"
    assert t.loc["CNCE approaches MLE as kappa grows (gaussian)", "verdict"] == "reproduced"
    assert t.loc["NCE against CNCE (gaussian)", "verdict"] == "not reproduced"
    assert t.loc["CNCE approaches MLE as kappa grows (bernoulli)", "verdict"] == "not testable here"
    assert t.loc["Ring model: CNCE beats NCE (authors' data generator, as in the paper)", "verdict"] == "reproduced"
    assert (t.page.isin(["02_consistency", "03_cnce_vs_nce", "04_ring", "05_supplementary"])).all()


def test_consistency_rule_tests_the_slope_and_reports_the_rate():
    """Errors like 1/N: reproduced, -1 inside the intervals. Errors like N^-1.5: reproduced (the
    error falls) but the row says the intervals miss -1, and by about 0.5. Errors that do not
    fall with N: not reproduced."""
    def scaled(power):
        d = table(curves=(("cnce", 2, 1.0), ("cnce", 10, 1.0), ("mle", None, 1.0)), S=200)
        d["error"] = d["error"] * d["N"] ** (1 + power)  # c / N -> c N^power
        return d

    rows = {p: claims.claims_table({"gaussian": scaled(p)}, n_boot=300).set_index("claim").loc["Consistency (gaussian)"]
            for p in (-1.0, -1.5, 0.0)}
    assert rows[-1.0].verdict == "reproduced" and "inside every interval" in rows[-1.0].short
    assert rows[-1.5].verdict == "reproduced" and "steeper than 1/N (slope -1) in 2 of 2" in rows[-1.5].short
    assert 0.4 < rows[-1.5].stats["rate_miss"] < 0.5
    assert rows[0.0].verdict == "not reproduced"


def test_bernoulli_at_eps_one_is_not_testable_and_the_fixed_eps_run_decides():
    """A Bernoulli study whose heuristic chose eps = 1 (CNCE = MLE) cannot test consistency;
    the fixed-eps study with errors like 1/N gives the verdict."""
    res = {"bernoulli": table("bernoulli", curves=(("cnce", 2, 1.0), ("cnce", 10, 1.0), ("mle", None, 1.0)), eps=1.0),
           "bernoulli-eps0.2": table("bernoulli-eps0.2", curves=(("cnce", 2, 3.0), ("cnce", 10, 1.5), ("mle", None, 1.0)),
                                     eps=0.2)}
    t = claims.claims_table(res, n_boot=300).set_index("claim")
    assert t.loc["Consistency (bernoulli)", "verdict"] == "not testable here"
    assert "eps = 1 in 100% of the fits" in t.loc["Consistency (bernoulli)", "short"]
    assert t.loc["Consistency (bernoulli, fixed eps = 0.2)", "verdict"] == "reproduced"
    assert t.loc["CNCE approaches MLE as kappa grows (bernoulli, fixed eps = 0.2)", "verdict"] == "reproduced"


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


def test_ring_row_shows_cnce_at_the_best_eps_and_says_when_the_verdict_depends_on_eps():
    """NCE 3x CNCE at the heuristic's eps (partly reproduced), but CNCE at 3x the heuristic's eps
    is 10 times more accurate still: NCE 30x, and the same rule gives 'reproduced' there."""
    S, Ns = 100, (500, 5000)
    fig = table("ring-authors", curves=(("cnce", 10, 1.0), ("nce", 10, 3.0), ("mle", None, 0.5)), Ns=Ns, S=S, shared=True)
    eps = _eps_grid("eps-ring-authors", Ns, S, {"default": 1.0, "x3": 0.1, "x0.3": 2.0})
    best = claims.ring_best_eps(fig, eps, n_boot=300)
    assert list(best["table"].best_factor) == [3.0, 3.0]
    assert best["mean_best"].value == pytest.approx(math.log10(30), abs=0.1)
    assert best["mean_default"].value == pytest.approx(math.log10(3), abs=0.1)
    r = claims.claims_table({"ring-authors": fig, "eps-ring-authors": eps}, n_boot=300).set_index("claim").loc[
        "Ring model: CNCE beats NCE (authors' data generator, as in the paper)"]
    assert r.verdict == "partly reproduced" and r.stats["verdict_at_best"] == "reproduced"
    assert "the verdict depends on eps" in r.short
    with pytest.raises(ValueError, match="n_boot"):
        claims.ring_best_eps(fig, eps, n_boot=1)


def test_score_matching_row_known_answers():
    """The theorem holds with moment-matched antithetic noise (reproduced); with independent
    draws the ratio diverges like 1/eps in a finite sample, so the same rule must fail."""
    good = claims.score_matching_row(claims.score_matching_limit(N=200, seed=0))
    bad = claims.score_matching_row(claims.score_matching_limit(N=200, seed=0, noise="independent"))
    assert good.verdict == "reproduced" and "Gaussian model only" in good.short
    assert bad.verdict == "not reproduced"
    with pytest.raises(ValueError, match="noise"):
        claims.score_matching_limit(N=10, noise="gaussian")


def test_claim_rows_from_other_modules_join_the_table_and_the_tally():
    extra = claims.ClaimRow("Image model: layer 1", "Gabor-like first-layer features", "80 % oriented", "80 % oriented",
                            "beyond the paper", "06_image_model")
    t = claims.claims_table({"gaussian": table()}, n_boot=100, extra_rows=[extra])
    assert t.iloc[-1].claim == "Image model: layer 1" and list(t.columns) == list(claims.COLUMNS)
    counts = claims.tally(t)
    assert sum(len(v) for v in counts.values()) == len(t) and counts["beyond the paper"] == [len(t)]
    line = claims.tally_html(t, href="book/claims.html")
    assert f'href="book/claims.html#claim-{len(t)}"' in line and f"{len(t)} claims" in line
    with pytest.raises(ValueError, match="verdict"):
        claims.ClaimRow("x", "p", "m", "s", "agrees", "02_consistency")
    with pytest.raises(ValueError, match="page"):
        claims.ClaimRow("x", "p", "m", "s", "reproduced", "99_nowhere")
    with pytest.raises(ValueError, match="unique"):
        claims.claims_table({"gaussian": table()}, n_boot=100, extra_rows=[extra, extra])
    with pytest.raises(TypeError, match="ClaimRow"):
        claims.claims_table({"gaussian": table()}, n_boot=100, extra_rows=[extra.as_dict()])


# --- the claims page and the results pages agree --------------------------------------------

import html as _html  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(scope="module")
def committed():
    results, _ = claims.committed_results(0)
    if not results:
        pytest.skip("no committed paper-scale results")
    return results, claims.claims_table(results, n_boot=2000, seed=0)


def _outputs(nb_path: Path) -> list[str]:
    """Every text output of a golden notebook: printed streams, and each display's markdown or
    plain text (glued values are displays whose keys carry myst-nb's record prefix)."""
    out = []
    for cell in json.loads(nb_path.read_text())["cells"]:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
                continue
            data = o.get("data", {})
            for key in ("text/markdown", "text/plain"):
                hits = [v for k, v in data.items() if k.endswith(key)]
                if hits:
                    out.append("".join(hits[0]) if isinstance(hits[0], list) else hits[0])
                    break
    return out


def _verdict_block(nb_path: Path) -> str | None:
    blocks = [t for t in _outputs(nb_path) if 'class="admonition cnce-verdict"' in t and t.startswith("<div")]
    return blocks[0] if blocks else None


@pytest.mark.parametrize("page", sorted(claims.PAGE_STUDIES))
def test_page_claims_are_the_claims_pages_rows(page, committed):
    """A page's verdict rows are computed from its studies alone; they equal the claims page's."""
    _, table = committed
    mine = claims.page_claims(page, seed=0)
    theirs = table[table.page == page].reset_index(drop=True)
    assert len(mine) == len(theirs) > 0
    for col in ("claim", "measured", "short", "verdict"):
        assert mine[col].tolist() == theirs[col].tolist(), f"{page}: column {col} differs from the claims page"


@pytest.mark.parametrize("page", sorted(claims.PAGE_STUDIES))
def test_golden_verdict_block_matches_claims_page(page, committed):
    """The verdict block that the notebook glued (its golden copy) states the claims page's
    verdicts and numbers: a page and the claims page cannot print different numbers for one claim."""
    _, table = committed
    nb = next(GOLDEN.glob(f"{page}.ipynb"))
    block = _verdict_block(nb)
    assert block, f"{nb.name}: no glued 'verdict' block"
    for r in table[table.page == page].itertuples():
        assert _html.escape(r.short) in block, f"{nb.name}: the verdict block lacks {r.claim!r}: {r.short!r}"
        assert f">{r.verdict}</span>" in block, f"{nb.name}: the verdict block lacks the verdict {r.verdict!r}"


def test_supplementary_page_quotes_the_claims_numbers(committed):
    """Notebook 05's bullets (log-normal, Bernoulli) quote the claims page's intervals."""
    _, table = committed
    printed = "\n".join(_outputs(GOLDEN / "05_supplementary.ipynb"))
    for study, name in [("lognormal", "lognormal"), ("bernoulli", "bernoulli"),
                        ("bernoulli-eps0.2", "bernoulli, fixed eps = 0.2")]:
        r = table[table.claim == f"CNCE approaches MLE as kappa grows ({name})"].iloc[0]
        first, last, change = (r.stats[k].fmt() for k in ("first", "last", "change"))
        assert (f"{study}: log10(CNCE / MLE) at the smallest kappa: {first}, at the largest: {last}; "
                f"change {change}") in printed, f"05 prints other numbers than the claims page for {study}"
        assert first in r.measured and change in r.measured


def test_ring_page_words_follow_the_interval(committed):
    """Page 04 says what its interval shows ('more accurate', not 'at least as accurate')."""
    _, table = committed
    shown = _outputs(GOLDEN / "04_ring.ipynb")
    est = table[table.claim == "Ring model: CNCE beats NCE (exact sampler of the model)"].iloc[0].stats["log10_ratio"]
    want = "more accurate than" if est.hi < 0 else "less accurate than" if est.lo > 0 else "about as accurate as"
    assert est.fmt() in shown and want in shown
    assert "at least as accurate as" not in shown


def test_verdict_words_have_badges():
    from cnce.report import BADGES, badge_html, verdict_html

    assert set(BADGES) == set(claims.VERDICTS)
    assert "cnce-badge-beyond" in badge_html("beyond the paper")
    with pytest.raises(ValueError):
        badge_html("agrees")
    block = verdict_html("Q?", [("reproduced", "slope -1.05 < 0", "Consistency")])
    assert 'class="admonition cnce-verdict"' in block and "slope -1.05 &lt; 0" in block
