"""The numbers that the book's prose may type: the paper's settings, the authors' code's
settings, the package's declared settings, quotes of the paper and facts of a model, each once,
with where it comes from and the pages that type it.

Every other number in a page's prose is inserted from a run (myst-nb ``{glue:text}`` in a
notebook; a ``{{ key }}`` substitution that the book extension computes from a committed file in
a ``book/*.md`` page; the claims ledger once it renders the pages), never typed.
``tests/test_prose_numbers.py`` checks every page against :func:`allowed`.

Where the value lives in the package (a configuration, a rule's default), it is read from there
(:func:`_value`), not typed again, so that a changed setting fails the check until the prose
follows it.

:data:`DEBT` lists, per page that this list's owner does not edit (the image pages 06 and 06a
and their data page, the energy-network page 08), the typed numbers that still wait to be
glued; it may only shrink.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

__all__ = ["Setting", "SETTINGS", "DEBT", "allowed"]


@dataclass(frozen=True)
class Setting:
    """A number that prose may type: ``number`` as the check reads it (thousands separators
    removed), what it is, where it comes from, and the pages (patterns) that type it."""

    number: str
    meaning: str
    source: str
    pages: tuple[str, ...]


def _value(x) -> str:
    """A setting read from the package, written as prose writes it (``1000.0`` -> ``"1000"``)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _band():
    from companion.claims.theory import BAND

    return BAND


def _settings() -> tuple[Setting, ...]:
    from cnce.eps import EpsRule
    from cnce.experiments.analysis import QUANTILES
    from cnce.experiments.configs import SCALES, STUDIES

    rule, paper = EpsRule(), SCALES["paper"]
    dim = dict(STUDIES["gaussian"].model_kwargs)["dim"]
    quantile_pages = ("notebooks/02_*", "notebooks/03_*", "notebooks/05_*", "notebooks/07_*")
    interval_pages = ("notebooks/02_*", "notebooks/03_*", "notebooks/04_*", "notebooks/05_*", "notebooks/07_*",
                      "notebooks/09_*", "book/claims.py", "book/intro.md")
    heuristic_pages = ("notebooks/01_*", "notebooks/05_*", "book/authors-code.md")
    return (
        # -- the package's declared settings, read from it
        Setting(_value(QUANTILES[0]), "lower quantile drawn (dashed), as in the paper's figures",
                "cnce.experiments.analysis.QUANTILES; paper Figs. 2-4", quantile_pages),
        Setting(_value(QUANTILES[2]), "upper quantile drawn (dashed), as in the paper's figures",
                "cnce.experiments.analysis.QUANTILES; paper Figs. 2-4", quantile_pages),
        Setting(_value(rule.grow), "the eps heuristic's growth factor",
                "cnce.eps.EpsRule.grow; authors' gNoise.m, lines 36-44", heuristic_pages),
        Setting(_value(rule.max_steps), "the eps heuristic's step limit",
                "cnce.eps.EpsRule.max_steps; authors' gNoise.m", heuristic_pages),
        Setting(_value(rule.cap), "the eps heuristic's cap (in data scales)",
                "cnce.eps.EpsRule.cap; authors' gNoise.m, line 38", heuristic_pages),
        Setting(_value(rule.near), "the eps heuristic's 'too close' band |1 - J/(2 log 2)| < 0.1",
                "cnce.eps.EpsRule.near; authors' gNoise.m", ("notebooks/01_*",)),
        Setting(_value(paper.n_sims), "simulations per point at the paper's scale",
                "cnce.experiments.configs.SCALES['paper'].n_sims; paper Section 5.1",
                ("book/reproduce.md", "book/claims.py", "notebooks/09_*")),
        Setting(_value(paper.N_max), "largest sample size N at the paper's scale",
                "cnce.experiments.configs.SCALES['paper'].N_max; paper Figs. 2-3", ("book/reproduce.md",)),
        # -- interval levels and resampling (the package's defaults)
        Setting("95", "95 % intervals (bootstrap over simulations, or t over seeds); also the 95th percentile "
                "of a noise baseline", "cnce.report.t_interval(level=0.95); cnce.experiments.claims (bootstrap)",
                interval_pages + ("book/differences.md",)),
        Setting("2000", "bootstrap resamples of the claims table", "book/claims.py: claims_table(n_boot=2000)",
                ("book/claims.py",)),
        # -- facts of a model and the paper's protocol
        Setting(_value(dim * (dim + 1) // 2), "free parameters of the Gaussian's precision matrix (D (D + 1) / 2)",
                "cnce.experiments.configs.STUDIES['gaussian'] (dim); paper Section 5.1",
                ("notebooks/00_*", "notebooks/02_*", "notebooks/09_*")),
        Setting("10", "kappa = 10 (the paper's ring and eps-rule settings), 10 % band, factor 10 per decade "
                "(log10), condition number bound 10, C0 = -10, 10 line searches per meta-iteration, the 10-D "
                "known-answer densities of the likelihood estimator",
                "paper Section 5 (kappa); cnce.eps.EpsRule.near (10 %); cnce.models.ica (condition number); "
                "cnce.models.lognormal (C0); authors' NCEstimator.m lines 750-760 (line searches); "
                "tests/test_nn_likelihood.py (dimensions)",
                ("notebooks/01_*", "notebooks/02_*", "notebooks/03_*", "notebooks/04_*", "notebooks/05_*",
                 "notebooks/07_*", "notebooks/08_*", "notebooks/09_*", "book/claims.py", "book/authors-code.md",
                 "book/differences.md", "book/speed.md")),
        Setting("100", "factor 100 per decade of an eps^2 rate (theory); 'of 100' fits (the paper's count)",
                "paper Section 3 (rates); paper Fig. 2b (13 of 100)",
                ("notebooks/01_*", "notebooks/02_*", "book/authors-code.md")),
        Setting("13", "the paper's 13 of 100 MLE fits in a local minimum (quote)", "paper Fig. 2b",
                ("notebooks/02_*", "book/authors-code.md")),
        Setting("12", "the theory figure's y-axis cut at -12 (plot setting)", "notebooks/01_theory.py (plot)",
                ("notebooks/01_*",)),
        Setting("20", "Newton tolerance 1e-20 (setting); main set redrawn every 20 meta-iterations (authors' code)",
                "cnce.theory (tolerance); authors' CNCEstimator.m newEpoch", ("notebooks/01_*", "book/authors-code.md")),
        Setting("40", "meta-iteration 40, when the third main set is drawn (authors' code)",
                "authors' CNCEstimator.m newEpoch", ("book/authors-code.md",)),
        Setting("50000", "patches per PCA batch (authors' DataProcessor.m) / our L-BFGS cell's PCA sample",
                "authors' DataProcessor.m generatePCAtransform; cnce.images.recipe",
                ("book/authors-code.md", "book/differences.md")),
        Setting("400000", "patches for the PCA whitening, eight batches of 50,000 (authors' code)",
                "authors' DataProcessor.m generatePCAtransform", ("book/differences.md",)),
        Setting("30", "the authors' code clips G at +-30", "authors' cnce_loss.m line 17, nce_loss.m lines 44-52",
                ("book/authors-code.md", "book/differences.md")),
        Setting("6000", "iterations of the authors' quasi-Newton fits", "authors' config_consistency.m",
                ("book/authors-code.md", "book/differences.md")),
        Setting(_value(STUDIES["bernoulli-eps0.2"].cnce_eps), "the fixed flip probability of study bernoulli-eps0.2",
                "cnce.experiments.configs.STUDIES['bernoulli-eps0.2'].cnce_eps", ("notebooks/05_*", "book/differences.md")),
        Setting("0.1", "truncation of the authors' ring radius", "cnce.models.ring (radial='authors')",
                ("notebooks/04_*", "book/differences.md")),
        Setting("0.5", "sigma of the Fig. 1 ring", "paper Fig. 1; notebooks/04_ring.py", ("notebooks/04_*",)),
        Setting("1.5", "largest sigma of the ring experiments", "paper Fig. 3; cnce.experiments.configs",
                ("notebooks/04_*",)),
        Setting("0.25", "the verdict's band 10^(+-0.25) around one decade", "notebooks/04_ring.py (rule)",
                ("notebooks/04_*",)),
        Setting("5000", "model samples that fit the Fig. 1 NCE noise", "notebooks/04_ring.py (figure)",
                ("notebooks/04_*",)),
        Setting("20000", "points drawn for the radius figure", "notebooks/04_ring.py (figure)", ("notebooks/04_*",)),
        Setting("1000", "N >= 1000, the paper's 'large N'", "paper Section 5.1", ("notebooks/03_*",)),
        Setting("0.05", "low end of the probe's extended frequency range (cycles/pixel)", "cnce.images.probes",
                ("book/differences.md",)),
        Setting("0.45", "high end of the probe's extended frequency range (cycles/pixel)", "cnce.images.probes",
                ("book/differences.md",)),
        Setting("16", "van Hateren's camera data are linear 16-bit images", "van Hateren and van der Schaaf (1998)",
                ("book/differences.md",)),
        *(Setting(_value(b), "the band in which a nominal 95 % interval's coverage counts as as claimed",
                  "companion.claims.theory.BAND (issue 47: 0.93-0.97)", ("notebooks/09_*",)) for b in _band()),
        Setting("50", "the sparsity measure's second setting: the share of a unit's weight that counts (50 %)",
                "scripts/image_settings.py (mass 0.9 and 0.5)", ("notebooks/06_*",)),
        Setting("25", "patches shown per unit, as the authors' Supp. D.3-D.4 figures show", "paper Supp. D.3-D.4",
                ("notebooks/06a_*",)),
        # -- citations, versions, hardware names
        Setting("2012", "year of a cited paper (Gutmann and Hyvärinen 2012)", "book/references.bib",
                ("notebooks/03_*",)),
        Setting("3.10", "the oldest Python the package supports", "pyproject.toml requires-python",
                ("book/reproduce.md",)),
        Setting("64", "x86-64, the generic processor the goldens' kernels are built for", "cnce.kernel_env",
                ("book/reproduce.md",)),
        Setting("15", "the 15-minute load average (machine record)", "benchmarks.machine", ("notebooks/07_*",)),
    )


SETTINGS: tuple[Setting, ...] = _settings()

#: page -> the numbers its prose still types that are neither settings nor glued (issue 42's
#: remaining debt, on pages whose owners glue them: 06/06a and book/image-data.md (Section 4),
#: 08 (energy networks)). A number removed from a page must be removed here (the test says so).
DEBT: dict[str, frozenset[str]] = {
    "notebooks/06_image_model.py": frozenset({
        "0.05", "0.10", "0.25", "0.45", "0.5", "0.75", "1.1", "10", "100", "100000", "11", "121", "150000", "20",
        "20000", "200", "200000", "30", "32", "40", "40000", "400000", "48", "5", "50000", "60", "600", "90", "95"}),
    "notebooks/06a_image_appendix.py": frozenset({"100", "121", "30", "60", "90"}),
    "notebooks/08_energy_networks.py": frozenset({"0.1", "0.8", "1000", "2018"}),
    "book/image-data.md": frozenset({
        "0.26", "0.55", "0.8", "1.7", "1.9", "1024", "11", "12", "1536", "16", "1600", "2.0", "200", "2014", "256",
        "2560", "3.11", "32", "427", "512", "600", "601", "640", "768"}),
}


def allowed(page: str) -> dict[str, list[Setting]]:
    """``{number: the settings that allow it}`` for ``page`` (a path relative to the repository)."""
    out: dict[str, list[Setting]] = {}
    for s in SETTINGS:
        if any(fnmatch.fnmatch(page, pat) for pat in s.pages):
            out.setdefault(s.number, []).append(s)
    return out
