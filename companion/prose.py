"""The text of every page of the book, as the checks of its prose read it.

* :func:`book_pages` -- the pages: every notebook under ``notebooks/`` and every ``book/*.md``
  (the claims page, ``book/claims.py``, is a notebook too).
* :func:`prose` -- a page's prose as written: a notebook's markdown cells, a Markdown page's
  text (``{{ key }}`` substitutions and ``<!-- generated: ... -->`` blocks still unfilled).
* :func:`rendered` -- a Markdown page as the book shows it: the book extension's
  substitutions and generated blocks filled from the files they read (``book/_ext/cnce_book.py``),
  without running Sphinx.
* :func:`typed_numbers` -- the numbers typed in a text: outside glue roles (``{glue:text}``),
  substitutions (``{{ key }}``), code, links' addresses, and references to equations,
  figures, sections, notebooks and lines of code.
* :func:`named_commits` -- the commit ids (7 to 40 hex digits after the word "commit" or in
  a commit's link) that a text names.
"""
from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["book_pages", "prose", "rendered", "typed_numbers", "named_commits", "markdown_cells", "book_extension"]


def book_pages(root: Path = ROOT) -> list[str]:
    """Every page of the book, relative to ``root``: ``notebooks/*.py`` and ``book/*.md``,
    ``book/claims.py``."""
    pages = sorted(p for p in (root / "notebooks").glob("*.py"))
    pages += sorted((root / "book").glob("*.md")) + sorted((root / "book").glob("*.py"))
    return [str(p.relative_to(root)) for p in pages]


def markdown_cells(path: Path) -> list[str]:
    """The markdown cells of a Jupytext percent-format notebook, without the comment marks."""
    cells, cur, md = [], [], False
    for line in Path(path).read_text().split("\n"):
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


def prose(page: str, root: Path = ROOT) -> str:
    """The prose of ``page`` as written (see the module's docstring)."""
    path = root / page
    if path.suffix == ".py":
        return "\n\n".join(markdown_cells(path))
    return path.read_text()


@lru_cache(maxsize=None)
def book_extension():
    """The book's Sphinx extension module (``book/_ext/cnce_book.py``)."""
    spec = importlib.util.spec_from_file_location("cnce_book_ext_prose", ROOT / "book" / "_ext" / "cnce_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@lru_cache(maxsize=None)
def substitutions() -> dict[str, str]:
    """The ``{{ key }}`` values the book extension computes from the repository's files."""
    import yaml

    ext = book_extension()
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text()) or {}
    url = ((cfg.get("repository") or {}).get("url")) or ""
    config = SimpleNamespace(html_theme_options={"repository_url": url}, myst_substitutions={})
    for name in ("_repo_substitutions", "_e2e_substitutions", "_cost_substitutions", "_authors_code_substitutions",
                 "_ledger_substitutions", "_staleness_substitutions"):
        fn = getattr(ext, name, None)
        if fn is not None:
            fn(None, config)
    return {k: str(v) for k, v in config.myst_substitutions.items()}


_SUB = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")


def rendered(page: str, root: Path = ROOT) -> str:
    """A Markdown page with the extension's substitutions and generated blocks filled in (a
    notebook: its markdown cells; their glued values are in the executed notebooks)."""
    text = prose(page, root)
    if not page.endswith(".md"):
        return text
    ext = book_extension()
    subs = substitutions()
    for mark, fill in ((getattr(ext, "MARK", None), lambda: ext._summarize().render(include_notes=False,
                                                                                      include_history=False)),
                       (getattr(ext, "BOOK_MARK", None), ext.book_times_markdown),
                       (getattr(ext, "COSTS_MARK", None), ext.costs_markdown)):
        if mark and mark in text:
            text = text.replace(mark, fill())

    def sub(m):
        if m.group(1) not in subs:
            raise KeyError(f"{page}: substitution {m.group(1)!r} is not defined by the book extension")
        return subs[m.group(1)]

    return _SUB.sub(sub, text)


# --- typed numbers --------------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ROLE = re.compile(r"\{(?:glue:text|glue:any|glue:figure|glue:math|glue|doc|cite|cite:p|cite:t|ref|numref|term|eq|"
                   r"download)\}`[^`]*`")
_CODE = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"<?https?://[^\s>)]+>?")
_HTML_TAG = re.compile(r"<[^>]+>")
_DIRECTIVE_OPTION = re.compile(r"^\s*:[a-z-]+:.*$", re.M)
_ANCHOR = re.compile(r"^\s*\([A-Za-z0-9_-]+\)=\s*$", re.M)
#: references: "Eq. (13)", "Eqs. 52-59", "Fig. 2a-b", "Supp. Fig. 3", "Section 3.2", "Table 1",
#: notebook and page numbers ("notebook 06", "pages 02-05"), lines of code ("lines 17 and 41-45")
_REF = re.compile(
    r"\b(?:Supp\.\s+)?(?:Eqs?\.|Figs?\.|Sections?|Sec\.|Supp\.(?:\s+Fig\.)?|Supplementary|Tables?|Theorem|"
    r"[Nn]otebooks?|[Pp]ages?|[Ll]ines?|[Rr]ows?|[Ii]tems?|[Ii]ssues?|[Ss]teps?)"
    r"\s*\(?\[?[0-9A-Z][0-9a-z.\-\u2013]*\]?(?:\s*(?:and|,|or|to)\s*\[?[0-9][0-9a-z.\-\u2013]*\]?)*\)?")
_TAG = re.compile(r"\\(?:qquad|tag)\s*\{?\(?\d+\)?\}?")  # equation numbers written into display math
_SUBSCRIPT = re.compile(r"_\{?\d+\}?")  # notation: \log_{10}, x_1
_NUMBER = re.compile(r"(?<![A-Za-z_\\\d.])\d+(?:(?:,\d{3})+|(?:[ \u202f\u2009]\d{3})+)?(?:\.\d+)?(?![\d])")
_PERCENT = re.compile(r"^\s*(?:%|\\%|percent)")


def strip_unchecked(text: str) -> str:
    """``text`` without what is not typed prose: code, comments, glue roles, cross-references,
    substitutions, links' addresses, HTML tags, directive options and references."""
    for pat in (_FENCE, _COMMENT, _ROLE, _SUB, _CODE, _LINK_TARGET, _URL, _HTML_TAG, _DIRECTIVE_OPTION, _ANCHOR,
                _REF, _TAG, _SUBSCRIPT):
        text = pat.sub(" ", text)
    return text


def normalise(number: str) -> str:
    """``"20 000"``, ``"20,000"`` -> ``"20000"``."""
    return re.sub(r"[ ,\u202f\u2009](?=\d{3}\b)", "", number)


def typed_numbers(text: str) -> list[str]:
    """The numbers typed in ``text`` (normalised, in order of appearance): every number of two
    or more characters ("10", "0.5", "20 000"), and single digits followed by "%" (a share);
    other single digits ("2 log 2", exponents, "three or 3 seeds") are not counted."""
    text = strip_unchecked(text)
    out = []
    for m in _NUMBER.finditer(text):
        tok = normalise(m.group(0))
        if len(tok) > 1 or _PERCENT.match(text[m.end():]):
            out.append(tok)
    return out


# --- commits --------------------------------------------------------------------------------

_COMMIT = re.compile(r"(?i)\bcommits?\b[^.\n]{0,40}?\b([0-9a-f]{7,40})\b|\bat\s+`?([0-9a-f]{7,40})`?\b|"
                     r"\b([0-9a-f]{7,40})\s+\((?:clean|dirty)")
_LINK = re.compile(r"\[[^\]]*\]\(https?://[^)]*\)|<?https?://[^\s>)]+>?")


def named_commits(text: str) -> list[str]:
    """The commit ids of this repository that ``text`` names: 7 to 40 hex digits after
    "commit(s)" (all digits: exactly 7 or 40), or with at least one letter and one digit after
    "at" or before "(clean"/"(dirty". Links to
    addresses (another repository's commit, such as the authors' code at its linked commit) are
    left out: they name their own repository."""
    ids = []
    for m in _COMMIT.finditer(_LINK.sub(" ", text)):
        h = next(g for g in m.groups() if g)
        # after "commit", an id may be all digits (9557313); elsewhere it needs a letter and a digit
        if (m.group(1) and len(h) >= 7 and re.search(r"[a-f]", h, re.I)) or \
                (m.group(1) and h.isdigit() and len(h) in (7, 40)) or \
                (re.search(r"[a-f]", h, re.I) and re.search(r"\d", h)):
            ids.append(h)
    return ids
