"""No measured number is typed into the book's prose (issue 42, item 2).

Every page of the book is checked: the markdown cells of every notebook (``notebooks/*.py``,
the claims page ``book/claims.py``) and every ``book/*.md`` page. A number in a page's prose
must be one of

* a glued output of the page's run (``{glue:text}`name```; the strict book build fails on a
  name the run did not glue), or a ``{{ key }}`` substitution that the book extension computes
  from a committed file (a Markdown page has no kernel): these are not typed, so not read here;
* a setting, a quote of the paper or a fact of a model declared once in
  :data:`companion.settings.SETTINGS`, with its source, for the pages that type it (values that
  live in the package are read from it there);
* a number of a page's declared debt (:data:`companion.settings.DEBT`), which may only shrink
  and is empty now.

What is not prose is not read: code, glue roles, substitutions, links' addresses, references
to equations, figures, sections, notebooks and lines of code (``companion.prose.typed_numbers``).
Single digits are not counted ("2 log 2", exponents) unless they are a share ("5 %").
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from companion import prose, settings

ROOT = Path(__file__).resolve().parents[1]
PAGES = prose.book_pages(ROOT)


def check(page: str, text: str) -> list[str]:
    """The numbers typed in ``text`` (the prose of ``page``) that no declared setting of that
    page and no debt of it allows."""
    ok = set(settings.allowed(page)) | set(settings.DEBT.get(page, ()))
    return sorted(set(n for n in prose.typed_numbers(text) if n not in ok))


# --- the check itself, on pages with a known answer --------------------------------------------

def test_typed_numbers_finds_a_typed_result_and_skips_glue_code_and_references():
    assert prose.typed_numbers("NCE's error is 3.4 times CNCE's, 0.53 decades") == ["3.4", "0.53"]
    assert prose.typed_numbers("NCE's error is {glue:text}`authors_nce_gm` times CNCE's") == []
    assert prose.typed_numbers("the run took {{ e2e_all_s }} s") == []
    assert prose.typed_numbers("the noise of Eq. (13), Eqs. 52-59, Fig. 2a-b, Supp. Eq. 46, Section 3.2") == []
    assert prose.typed_numbers("slope 2 and `python -m companion batch 02 04`, notebooks 02-05, lines 17 and 41-45") == []
    assert prose.typed_numbers(r"$$G = 0 \qquad (9)$$ with 5000 samples, $\log_{10}$") == ["5000"]
    assert prose.typed_numbers("[code](https://github.com/a/b/blob/39c6d4f/x.m#L17-L45) at 20 000 and 50,000") == \
        ["20000", "50000"]
    assert prose.typed_numbers("5 % of the units, 3 seeds") == ["5"]


def test_a_page_with_a_typed_measured_number_fails_and_one_with_glue_and_settings_passes():
    typed = ("The authors' recipe orients 87 % of layer 1, with 100 simulations per point and N up to "
             "20 000.")
    assert check("book/reproduce.md", typed) == ["87"]
    glued = ("The authors' recipe orients {glue:text}`recipe_oriented:s` % of layer 1, "
             "{{ e2e_rows_differ }} rows differ, with 100 simulations per point and N up to 20 000.")
    assert check("book/reproduce.md", glued) == []
    # a setting is allowed only on the pages it is declared for
    assert check("book/api.md", "with 100 simulations per point") == ["100"]


def test_every_setting_names_its_source_and_pages_that_exist():
    assert settings.SETTINGS, "no settings declared"
    for s in settings.SETTINGS:
        assert s.number == prose.normalise(s.number) and s.source and s.meaning and s.pages, s
        assert any(p for pat in s.pages for p in PAGES if fnmatch.fnmatch(p, pat)), s


def test_settings_read_from_the_package_follow_it():
    from cnce.eps import EpsRule
    from cnce.experiments.configs import SCALES

    nums = {s.number: s for s in settings.SETTINGS}
    assert str(SCALES["paper"].n_sims) in nums and str(SCALES["paper"].N_max) in nums
    assert f"{EpsRule().grow:g}" in nums and f"{EpsRule().cap:g}" in nums
    from cnce.images.configs import CONFIGS
    from cnce.images.probes import AuthorsProbe

    image = {s.number for s in settings.SETTINGS if "notebooks/06_*" in s.pages}
    assert {str(CONFIGS["paper"].D), str(CONFIGS["paper"].patch), str(AuthorsProbe().steps + 1)} <= image


# --- every page ----------------------------------------------------------------------------------

def test_every_page_of_the_book_is_checked():
    toc_pages = {p.stem for p in (ROOT / "notebooks").glob("*.py")} | {p.stem for p in (ROOT / "book").glob("*.md")}
    assert {Path(p).stem for p in PAGES} >= toc_pages
    assert "book/claims.py" in PAGES and "notebooks/08_energy_networks.py" in PAGES


@pytest.mark.parametrize("page", PAGES)
def test_no_measured_number_typed_in_the_prose(page):
    extra = check(page, prose.prose(page, ROOT))
    assert not extra, (f"{page}: numbers typed in the prose: {extra}. Insert a result from the run "
                       "(myst-nb glue and {glue:text}`name`; in a book/*.md page a {{ key }} substitution of the "
                       "book extension), or, for a setting or a quote of the paper, declare it in "
                       "companion/settings.py with its source and this page.")


def test_the_debt_only_shrinks():
    """A number of a page's debt that the page no longer types must leave the debt (issue 42
    emptied it: every page's numbers are glued or declared settings)."""
    for page, debt in settings.DEBT.items():
        found = set(prose.typed_numbers(prose.prose(page, ROOT)))
        stale = sorted(n for n in debt if n not in found or n in settings.allowed(page))
        assert not stale, f"{page}: no longer typed or now a declared setting, remove from DEBT: {stale}"
    assert settings.DEBT == {}, "DEBT may only shrink, and it is empty: glue the number or declare the setting"


def test_the_bundled_photographs_sizes_are_not_typed_as_settings():
    """The data page's survey sizes are settings of that page alone; the sizes of the photographs
    the book trains on are glued from page 06 (known answer: typed, they fail elsewhere)."""
    assert check("notebooks/06_image_model.py", "photographs of 451 x 300 to 640 x 427 pixels") == ["300", "427",
                                                                                                  "451", "640"]
