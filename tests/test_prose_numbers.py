"""Numbers in notebook prose come from the run: a result is inserted with myst-nb's
``glue`` (``{glue:text}`name```), which the strict book build checks, never typed by hand.

This test lists the numbers that the markdown cells of notebooks 00-05 and of the claims page
still type by hand (outside glue roles, inline code, and references such as "Eq. 15" or
"Fig. 2a-b") and compares them with the allowed ones below: settings of the experiments and
quotes of the paper, each with its reason. A new typed number fails the test: glue it from the
run, or, if it is a setting or a quote, add it here with the reason. Single digits are not
listed (exponents, "2 log 2", slopes of theoretical rates)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_ROLE = re.compile(r"\{(?:glue:text|glue|doc|cite|ref)\}`[^`]*`")
_CODE = re.compile(r"`[^`]*`")
_REF = re.compile(
    r"\b(?:Supp\.\s+)?(?:Eqs?\.|Figs?\.|Sections?|Sec\.|Supp\.(?:\s+Fig\.)?|Supplementary|Table|Theorem)"
    r"\s*\(?[0-9A-Z][0-9a-z.\-]*(?:\s*(?:and|,)\s*[0-9][0-9a-z.\-]*)*\)?")
_TAG = re.compile(r"\\qquad\s*\(\d+\)")  # equation numbers written into display math
_NUMBER = re.compile(r"(?<![A-Za-z_\\])\d+(?:[.,]\d+)*")

#: file -> {typed number: why it may stay typed}
ALLOWED = {
    "notebooks/00_quickstart.py": {
        "15": "the 5-D Gaussian's free parameters (a fact of the model)",
    },
    "notebooks/01_theory.py": {
        "0.1": "the heuristic's 10 % band and the authors' 0.1 x randn initialisation (settings)",
        "1.2": "the heuristic's growth factor (setting of the authors' rule)",
        "10": "10 % band, 10 noise points per data point, factor 10 per decade of a 1/eps rate",
        "100": "factor 100 per decade of the eps^2 rate (theory)",
        "1000": "the heuristic's cap (setting)",
        "12": "the figure's y-axis cut at -12 (plot setting)",
        "20": "Newton tolerance 1e-20 (setting)",
        "500": "the heuristic's step limit (setting)",
    },
    "notebooks/02_consistency.py": {
        "0.1": "quantile plotted, as in the paper",
        "0.9": "quantile plotted, as in the paper",
        "10": "condition number bound of the demixing matrices (setting)",
        "100": "the paper's '13 of 100' and '7 of 100' (quote)",
        "13": "the paper's 13 stuck MLE fits (quote)",
        "15": "the 5-D Gaussian's free parameters (a fact of the model)",
        "95": "95 % bootstrap intervals (setting)",
    },
    "notebooks/03_cnce_vs_nce.py": {
        "0.1": "quantile plotted, as in the paper",
        "0.9": "quantile plotted, as in the paper",
        "10": "kappa >= 10, the range the verdict looks at (setting)",
        "1000": "N >= 1000 taken as the paper's 'large N' (setting)",
        "2012": "year of a cited paper",
        "95": "95 % bootstrap intervals (setting)",
    },
    "notebooks/04_ring.py": {
        "0.1": "the authors' truncation of the radius (setting)",
        "0.25": "the verdict's band 10^(+-0.25) around one decade (setting)",
        "0.5": "sigma of the Fig. 1 ring (setting)",
        "1.5": "largest sigma of the experiments (setting)",
        "10": "kappa = 10 and the paper's 'order of magnitude' (setting, quote)",
        "20000": "points drawn for the radius figure (setting)",
        "5000": "model samples of the Fig. 1 noise (setting)",
        "95": "95 % bootstrap intervals (setting)",
    },
    "notebooks/05_supplementary.py": {
        "0.1": "quantile plotted, as in the paper",
        "0.2": "the fixed flip probability of study bernoulli-eps0.2 (setting)",
        "0.9": "quantile plotted, as in the paper",
        "10": "the log-normal constant's start C0 = -10 (setting)",
        "1000": "the heuristic's cap (setting)",
        "95": "95 % bootstrap intervals (setting)",
    },
    "book/claims.py": {
        "10": "a difference of 1 in log10 is a factor of 10 (definition)",
        "100": "simulations per point of the committed runs (setting)",
        "2000": "bootstrap resamples (setting)",
        "95": "95 % bootstrap intervals (setting)",
    },
}


def markdown_cells(path: Path) -> list[str]:
    """The markdown cells of a Jupytext percent-format notebook, without the comment marks."""
    cells, cur, md = [], [], False
    for line in path.read_text().split("\n"):
        if line.startswith("# %%"):
            if md and cur:
                cells.append("\n".join(cur))
            cur, md = [], "[markdown]" in line
            continue
        if md:
            cur.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    if md and cur:
        cells.append("\n".join(cur))
    return cells


def typed_numbers(text: str) -> set[str]:
    """Numbers of two or more characters typed in ``text`` outside glue roles, inline code and
    references to equations, figures and sections."""
    text = _TAG.sub(" ", _REF.sub(" ", _CODE.sub(" ", _ROLE.sub(" ", text))))
    return {t for t in _NUMBER.findall(text) if len(t) > 1}


def test_typed_numbers_finds_a_typed_result_and_skips_glue_and_references():
    assert typed_numbers("NCE's error is 3.4 times CNCE's, 0.53 decades") == {"3.4", "0.53"}
    assert typed_numbers("NCE's error is {glue:text}`authors_nce_gm` times CNCE's") == set()
    assert typed_numbers("the noise of Eq. (13), Eqs. 52-59, Fig. 2a-b, Supp. Eq. 46, Section 3.2") == set()
    assert typed_numbers("slope 2 and `python -m companion batch 02 04`") == set()
    assert typed_numbers(r"$$G = 0 \qquad (9)$$ with 5000 samples") == {"5000"}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_no_result_typed_by_hand_in_notebook_prose(name):
    found = set().union(*(typed_numbers(c) for c in markdown_cells(ROOT / name)))
    extra = found - set(ALLOWED[name])
    assert not extra, (f"{name}: numbers typed in the prose: {sorted(extra)}. Insert a result from the run "
                       "(cnce.report.glue and {glue:text}`name`), or, for a setting or a quote of the paper, "
                       "add it to ALLOWED in this test with the reason.")


def test_every_notebook_is_covered_up_to_the_supplementary_page():
    listed = {n for n in ALLOWED if n.startswith("notebooks/")}
    assert listed == {str(p.relative_to(ROOT)) for p in sorted((ROOT / "notebooks").glob("0[0-5]_*.py"))}
