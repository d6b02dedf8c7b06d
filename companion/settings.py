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

:data:`DEBT` listed, per page, the typed numbers that still waited to be glued; it may only
shrink, and it is empty (issue 42: the image pages 06, 06a and their data page, and page 08,
glue their measured numbers and declare their settings below).
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
        *_image_settings(),
        *_energy_network_settings(),
    )


#: the image pages: page 06, its appendix 06a, the data page
_P06, _P06A, _IMG_DATA = "notebooks/06_*", "notebooks/06a_*", "book/image-data.md"

#: Photographs inside other packages' wheels that book/image-data.md surveys (not used by the
#: book): (width, height) as the file in the wheel named on that page has it. Facts of those
#: files, found by reading them once, not results of this project's code; the page's table
#: types them, and its megapixel sums are computed here from them.
SURVEY_SIZES = {"skimage brick": (512, 512), "matplotlib grace_hopper": (600, 512),
                "sklearn china": (640, 427), "sklearn flower": (640, 427), "pywt ascent": (512, 512)}
#: the versions of the wheels that survey read (book/image-data.md, its table)
SURVEY_VERSIONS = {"scikit-image": "0.26.0", "matplotlib": "3.11.2", "scikit-learn": "1.9.1", "PyWavelets": "1.9.0"}


def _mpx(*names) -> str:
    return f"{sum(SURVEY_SIZES[n][0] * SURVEY_SIZES[n][1] for n in names) / 1e6:.2g}"


def _image_settings() -> tuple[Setting, ...]:
    """The settings of the image model's pages (Section 4, Supp. D): the configurations, probes
    and measure settings read from ``cnce.images``, the paper's and the authors' code's facts."""
    from cnce.images.configs import CONFIGS, ImageConfig
    from cnce.images.data import IML_SHAPE
    from cnce.images.layer_claims import CHANCE
    from cnce.images.pack import DEBIAN_PHOTOS
    from cnce.images.probes import AUTHORS_FREQS, EXTENDED_FREQS, AuthorsProbe

    paper, demo = CONFIGS["paper"], CONFIGS["demo"]
    probe = AuthorsProbe()
    h, w = IML_SHAPE
    widest = max((s.size for s in DEBIAN_PHOTOS if s.size), key=lambda s: s[0] * s[1])
    cfg = "cnce.images.configs.CONFIGS"
    return (
        # -- the configurations (paper Supp. D.1, Table 1; the authors' code where the paper is silent)
        Setting(_value(paper.patch), "patch side (32 x 32 pixels)", f"{cfg}['paper'].patch; paper Supp. D.1",
                (_P06, _IMG_DATA)),
        Setting(_value(paper.patch ** 2), "pixels of a patch (32 x 32), the dimensions before the PCA",
                f"{cfg}['paper'].patch ** 2", (_IMG_DATA,)),
        Setting(_value(paper.D), "D = 600 PCA dimensions; 600 first-layer units (K1)",
                f"{cfg}['paper'].D and .K1; paper Supp. D.1, Table 1", (_P06, _IMG_DATA)),
        Setting(_value(demo.D), "D = 200 of the CPU configurations; 200 second-layer units (K2)",
                f"{cfg}['demo'].D, {cfg}['paper'].K2; paper Table 1", (_P06, _IMG_DATA)),
        Setting("200", "the earlier FastICA control's 200 filters and at most 200 iterations",
                "the failed control of earlier versions of notebooks/06_image_model.py (git history), which the "
                "page describes", (_P06,)),
        Setting("20000", "the earlier FastICA control's 20,000 patches",
                "the failed control of earlier versions of notebooks/06_image_model.py (git history)", (_P06,)),
        Setting(_value(paper.K3), "60 third-layer units (K3); the authors' probe's 60 distinct orientations",
                f"{cfg}['paper'].K3; cnce.images.probes.AuthorsProbe.n_orient", (_P06, _P06A)),
        Setting(_value(paper.K4), "30 fourth-layer units (K4)", f"{cfg}['paper'].K4; paper Table 1", (_P06A,)),
        Setting(_value(paper.main_set[0]), "the authors' layer-1 main set (200,000 patches)",
                f"{cfg}['paper'].main_set; authors' run_L1_training.m", (_P06,)),
        Setting(_value(paper.n_patches[0]), "patches per layer-1 meta-iteration (100,000); the whitening check's "
                "100,000 unseen patches", f"{cfg}['paper'].n_patches; scripts/check_whitening.py", (_P06,)),
        Setting(_value(paper.epoch[0]), "layer 1 draws a new main set at meta-iterations 1, 20 and 40",
                f"{cfg}['paper'].epoch; authors' CNCEstimator.m newEpoch", (_P06,)),
        Setting(_value(paper.meta_iters[0]), "40 layer-1 meta-iterations (the third main set is drawn at the 40th)",
                f"{cfg}['paper'].meta_iters; authors' run_L1_training.m", (_P06,)),
        Setting(_value(paper.n_whiten), "patches for the PCA whitening in the authors' code (400,000); the layer-3 "
                "PCA's samples", f"{cfg}['paper'].n_whiten, .n_whiten3; authors' DataProcessor.m", (_P06,)),
        Setting(_value(ImageConfig.n_whiten), "the earlier `paper` run's PCA sample (50,000 patches)",
                "cnce.images.configs.ImageConfig.n_whiten (the default it ran with)", (_P06,)),
        Setting(_value(CONFIGS["paper-l3-ensemble"].whiten3_samples()), "the earlier layer-3 PCA's samples",
                f"{cfg}['paper-l3-ensemble'].whiten3_samples()", (_P06,)),
        Setting(_value(paper.eps_base), "the authors' eps rule restarts from 0.5 at every meta-iteration",
                f"{cfg}['paper'].eps_base; authors' NoiseProcessor.m", (_P06,)),
        Setting("0.75", "eps of the paper's figure of noise patches", "paper Fig. 4", (_P06,)),
        Setting(_value(CONFIGS["paper-adam"].batch), "Adam minibatches of 100; the supplement's 100 first-layer "
                "units of the CNCE/NCE comparison", f"{cfg}['paper-adam'].batch, {cfg}['paper'].compare_K1; "
                "paper Supp. D.2", (_P06, _P06A)),
        Setting(_value(demo.n_patches[0]), "patches per layer-1 meta-iteration of `demo`", f"{cfg}['demo'].n_patches",
                (_P06,)),
        Setting(_value(CONFIGS["demo-authors"].main_set[0]), "`demo`'s main sets (40,000 patches)",
                f"{cfg}['demo-authors'].main_set", (_P06,)),
        Setting("11", "the supplement's CNCE/NCE comparison after 11 meta-iterations",
                "paper Supp. D.2; cnce.images.d2.faster_claim(meta=11)", (_P06,)),
        # -- the probes and measures
        Setting(_value(probe.steps + 1), "the authors' probe's 121 orientations over a full turn",
                "cnce.images.probes.AuthorsProbe.steps; authors' code (M = 120)", (_P06, _P06A)),
        *(Setting(f"{f:.2f}", "an end of a probe's frequency range (cycles/pixel)",
                  "cnce.images.probes.AUTHORS_FREQS / EXTENDED_FREQS", (_P06,))
          for f in sorted({AUTHORS_FREQS[0], AUTHORS_FREQS[-1], EXTENDED_FREQS[0], EXTENDED_FREQS[-1]})),
        Setting(_value(round(100 * CHANCE)), "5 % by chance: the share of a null that passes a threshold set at "
                "its 95 % quantile", "cnce.images.layer_claims.CHANCE", (_P06,)),
        Setting(_value(round(100 * (1 - CHANCE))), "the 95 % quantile of a null (1 - CHANCE); 95 % t intervals",
                "cnce.images.layer_claims.CHANCE; cnce.report.t_interval(level=0.95)", (_P06,)),
        Setting("90", "the share of a unit's weight that counts (90 %, as in the paper; 50 % the second setting); "
                "the 90th percentile of a spread", "paper Supp. D.3; scripts/image_settings.py (mass 0.9 and 0.5)",
                (_P06, _P06A)),
        Setting("10", "the 10th percentile of a spread", "notebooks/06_image_model.py (octaves)", (_P06,)),
        # -- the paper's data (van Hateren) and the photographs
        Setting("11", "the paper's eleven van Hateren images", "paper Supp. D.1; the authors' code", (_IMG_DATA,)),
        Setting(_value(w), "width of a van Hateren image (1536 x 1024)", "cnce.images.data.IML_SHAPE", (_IMG_DATA,)),
        Setting(_value(h), "height of a van Hateren image (1536 x 1024); also the patch's 1024 pixels",
                "cnce.images.data.IML_SHAPE", (_IMG_DATA,)),
        Setting(_value(w // 2), "a van Hateren image halved by the authors (768 x 512)",
                "cnce.images.data.IML_SHAPE; authors' code (nearest-neighbour halving)", (_IMG_DATA,)),
        Setting(_value(h // 2), "a van Hateren image halved by the authors (768 x 512); 512 x 512 images of the "
                "survey", "cnce.images.data.IML_SHAPE; SURVEY_SIZES", (_IMG_DATA,)),
        Setting("16", "van Hateren's camera data are linear 16-bit images", "van Hateren and van der Schaaf (1998)",
                (_IMG_DATA,)),
        Setting("12", "of the 16 bits, 12 are used", "van Hateren and van der Schaaf (1998), as the page states",
                (_IMG_DATA,)),
        Setting("601", "the ITU-R BT.601 grey weights (a standard's name)", "ITU-R Recommendation BT.601; Pillow's 'L'",
                (_IMG_DATA,)),
        Setting("256", "SHA-256 (a hash's name)", "FIPS 180-4", (_IMG_DATA,)),
        *(Setting(_value(v), "the largest size a Debian wallpaper of the photo pack ships (2560 x 1600)",
                  "cnce.images.pack.DEBIAN_PHOTOS (sizes checked when the pack is built)", (_IMG_DATA,))
          for v in widest),
        # -- the survey of other wheels' photographs (book/image-data.md, its last table)
        *(Setting(v.rsplit(".", 1)[0], f"{pkg} {v}, the wheel the survey read", "book/image-data.md (survey)",
                  (_IMG_DATA,)) for pkg, v in SURVEY_VERSIONS.items()),
        *(Setting(_value(x), "a size of a photograph in another package's wheel (survey)",
                  "companion.settings.SURVEY_SIZES", (_IMG_DATA,))
          for x in sorted({x for s in SURVEY_SIZES.values() for x in s})),
        Setting("2014", "the Middlebury 2014 stereo data set (a name)", "skimage.data.stereo_motorcycle's docstring",
                (_IMG_DATA,)),
        Setting("2.0", "Creative Commons Attribution 2.0 (a licence's name)", "scikit-learn's datasets/images/README.txt",
                (_IMG_DATA,)),
        Setting(_mpx("pywt ascent", "matplotlib grace_hopper", "skimage brick"), "megapixels the survey's best "
                "candidates would add", "companion.settings.SURVEY_SIZES", (_IMG_DATA,)),
        Setting(_mpx("sklearn china", "sklearn flower"), "megapixels of scikit-learn's two photographs",
                "companion.settings.SURVEY_SIZES", (_IMG_DATA,)),
    )


def _energy_network_settings() -> tuple[Setting, ...]:
    """The settings of page 08 (energy networks)."""
    from cnce.nn.objectives import DSM_SIGMA

    return (
        Setting(_value(DSM_SIGMA), "DSM's default sigma (data scales)", "cnce.nn.objectives.DSM_SIGMA",
                ("notebooks/08_*",)),
        Setting("0.8", "the slope of the known-answer log-density 0.8 u_1 that the normaliser check must fail",
                "notebooks/08_energy_networks.py (the check's inputs)", ("notebooks/08_*",)),
        Setting("1000", "points drawn in the samples figure", "notebooks/08_energy_networks.py (figure)",
                ("notebooks/08_*",)),
        Setting("2018", "year of the paper (Ceylan and Gutmann 2018)", "book/references.bib", ("notebooks/08_*",)),
    )


SETTINGS: tuple[Setting, ...] = _settings()

#: page -> the numbers its prose still types that are neither settings nor glued. Empty since
#: issue 42's last pages (06, 06a, 08, book/image-data.md) were glued; it may only shrink.
DEBT: dict[str, frozenset[str]] = {}


def allowed(page: str) -> dict[str, list[Setting]]:
    """``{number: the settings that allow it}`` for ``page`` (a path relative to the repository)."""
    out: dict[str, list[Setting]] = {}
    for s in SETTINGS:
        if any(fnmatch.fnmatch(page, pat) for pat in s.pages):
            out.setdefault(s.number, []).append(s)
    return out
