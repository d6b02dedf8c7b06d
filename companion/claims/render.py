"""The ledger rendered: each page's verdict block, the claims table and the tally.

Everything here reads ``data/claims/ledger.json`` (:mod:`companion.claims.ledger`); nothing
computes a claim. A results page shows its verdict block with one call (at the end of a
hidden cell; its markdown holds ``{glue:md} verdict`` under the title)::

    from companion.claims.render import glue_verdict_block
    glue_verdict_block("02_consistency", "Does CNCE's error fall as N grows ...?")

Each line of the block carries ``data-claim="<id>"`` and links to the claim's row on the claims
page (``claims.html#claim-<id>``), so a test can check that every verdict shown is a ledger
record (``tests/test_ledger.py``).
"""
from __future__ import annotations

import html

from cnce.report import badge_html

from . import OURS, PAGES, PAPER, VERDICTS, tally
from . import ledger as _ledger

__all__ = ["verdict_block_html", "glue_verdict_block", "claims_table_html", "tally_html", "glue_numbers", "anchor_id",
           "code_files", "DOWNLOADS"]

#: where the built book keeps copies of the source files (the book extension copies the code
#: files of :func:`code_files` there), relative to the book's root
DOWNLOADS = "downloads"


def _module_path(dotted: str) -> str:
    """``cnce/experiments/claims.py`` for ``cnce.experiments.claims`` or one of its functions."""
    from pathlib import Path

    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        rel = Path(*parts[:n])
        if (_ledger.ROOT / rel.with_suffix(".py")).is_file():
            return str(rel.with_suffix(".py"))
        if (_ledger.ROOT / rel / "__init__.py").is_file():
            return str(rel / "__init__.py")
    raise ValueError(f"code must name a module of this repository (or a function in one); got {dotted!r}")


def code_files(rows=None, path=None) -> list[str]:
    """The repository paths of the code the ledger's rows name (their measures and the modules
    that declare them): the book ships copies under :data:`DOWNLOADS` and the claims table links them."""
    rows = rows if rows is not None else _ledger.records(path=path)
    return sorted({_module_path(r[k]) for r in rows for k in ("code", "declared_in")})


def anchor_id(heading: str) -> str:
    """The HTML id Sphinx gives a section with this heading (docutils' ``make_id``); ``""`` stays ``""``."""
    if not heading:
        return ""
    from docutils.nodes import make_id

    return make_id(heading)


def _page_href(page: str, prefix: str) -> str:
    return f"{prefix}notebooks/{page}.html"


def verdict_block_html(page: str, question: str, note: str | None = None, *, ids=None, title: str = "Verdict",
                       claims_href: str = "../book/claims.html", path=None) -> str:
    """The verdict block of ``page`` from the ledger: the question, then one line per claim
    shown on the page (``ids``: these, in this order) with its badge, title and deciding
    number (and, for a paper claim not reproduced, the one-line why), each linked to its row of
    the claims table."""
    rows = _ledger.records(page, path) if ids is None else [_ledger.record(i, path) for i in ids]
    if not rows:
        raise ValueError(f"the ledger holds no claim shown on page {page!r}")
    lines = []
    for r in rows:
        rec = r["record"]
        why = (f' <span class="cnce-why">(why: {html.escape(rec["why"])})</span>'
               if r["kind"] == PAPER and rec["verdict"] != "reproduced" and rec["why"] else "")
        lines.append(f'<li data-claim="{html.escape(r["id"])}">{badge_html(rec["verdict"])} '
                     f'<strong><a href="{html.escape(claims_href)}#claim-{html.escape(r["id"])}">{html.escape(r["title"])}'
                     f'</a></strong>: {html.escape(rec["short"])}{why}</li>')
    out = [f'<div class="admonition cnce-verdict"><p class="admonition-title">{html.escape(title)}</p>',
           f'<p class="cnce-question">{question}</p>', f'<ul class="cnce-verdict-items">{"".join(lines)}</ul>']
    if note:
        out.append(f'<p class="cnce-verdict-note">{note}</p>')
    out.append("</div>")
    return "".join(out)


class _Markdown:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    def _repr_markdown_(self):
        return self.text


def glue_verdict_block(page: str, question: str, note: str | None = None, *, ids=None, name: str = "verdict",
                       title: str = "Verdict", path=None) -> None:
    """Glue :func:`verdict_block_html` under ``name`` (myst-nb) and print one line per claim
    (its id, verdict and deciding number), so that the page's output shows what the block says.
    ``note``: defaults to where the numbers come from."""
    if note is None:
        note = ('From the claims ledger (<code>data/claims/ledger.json</code>, computed from the committed results), as '
                'on the <a href="../book/claims.html">claims page</a>; intervals and details there.')
    text = verdict_block_html(page, question, note, ids=ids, title=title, path=path)
    for r in (_ledger.records(page, path) if ids is None else [_ledger.record(i, path) for i in ids]):
        print(f"{r['id']}: {r['record']['verdict']}; {r['record']['short']}")
    try:
        from myst_nb import glue
    except ImportError:  # pragma: no cover
        return None
    glue(name, _Markdown(text), display=False)
    return None


def glue_numbers(id: str, prefix: str | None = None, path=None) -> dict:
    """Glue every number a claim's record offers (``numbers``) as ``<prefix>_<name>`` (default
    prefix: the id with ``_`` for ``-``); returns them."""
    from cnce.report import glue

    rec = _ledger.record(id, path)["record"]
    prefix = prefix or id.replace("-", "_")
    return {k: glue(f"{prefix}_{k}", str(v)) for k, v in rec["numbers"].items()}


def tally_html(rows=None, href: str = "", path=None) -> str:
    """One line: the paper's claims counted by verdict (each count linked to its rows,
    ``{href}#claim-<id>``) and, apart, our questions."""
    rows = rows if rows is not None else _ledger.records(path=path)
    t = tally([{"id": r["id"], "kind": r["kind"], "verdict": r["record"]["verdict"]} for r in rows])
    num = {r["id"]: i for i, r in enumerate(rows, start=1)}

    def links(ids):
        return ", ".join(f'<a href="{html.escape(href)}#claim-{i}">{num[i]}</a>' for i in ids)

    n_paper = sum(len(v) for v in t[PAPER].values())
    parts = [f"{badge_html(v)} <b>{len(ids)}</b>" + (f" (rows {links(ids)})" if ids else "") for v, ids in t[PAPER].items()]
    ours = t[OURS]
    return (f'<span class="cnce-tally"><b>{n_paper} claims of the paper:</b> ' + " &middot; ".join(parts)
            + f"; and <b>{len(ours)} questions of ours</b>" + (f" (rows {links(ours)})" if ours else "") + "</span>")


def claims_table_html(rows=None, *, page_prefix: str = "../", path=None) -> str:
    """The claims table: one row per claim, numbered, with its badge, the deciding number
    (click: the paper's statement, the rule, every number), the "why" in one line where a
    paper claim is not reproduced, a link to the page section that shows it and one to the
    code that computes it. The paper's claims and our questions in two tables."""
    rows = rows if rows is not None else _ledger.records(path=path)
    head = ("<table class=\"claims\"><thead><tr><th>#</th><th>claim</th><th>we measure (click: the paper's claim, the "
            "rule, all numbers)</th><th>verdict</th><th>why, where not reproduced</th><th>shown on, code</th>"
            "</tr></thead><tbody>")

    def tr(i, r):
        # one line a row (the table scans in two screens): long texts end in an ellipsis, in full in
        # the cell's tooltip and, for the measured column, in its details
        rec = r["record"]
        href = _page_href(r["page"], page_prefix) + (f"#{anchor_id(r['anchor'])}" if r["anchor"] else "")
        code = (f'<a href="{page_prefix}{DOWNLOADS}/{_module_path(r["code"])}" title="{html.escape(r["code"])}">code</a>')
        rule = (f'<a href="{page_prefix}{DOWNLOADS}/{_module_path(r["declared_in"])}">'
                f'<code>{html.escape(r["declared_in"])}</code></a>')
        why = rec["why"] if rec["verdict"] != "reproduced" and r["kind"] == PAPER else ""
        title = f'{r["title"]} ({r["section"]})'
        return (f'<tr id="claim-{html.escape(r["id"])}"><td>{i}</td>'
                f'<td><span class="one-line" title="{html.escape(title)}"><b>{html.escape(r["title"])}</b></span></td>'
                f"<td><details><summary title=\"{html.escape(rec['short'])}\">{html.escape(rec['short'])}</summary><div>"
                f"<b>Where</b>: {html.escape(r['section'])}.<br><b>The paper</b> (in our words): "
                f"{html.escape(r['paper'])}.<br><b>Rule</b> ({rule}): {html.escape(r['rule'])}.<br><b>Measured</b>: "
                f"{html.escape(rec['measured'])}<br><b>Data</b>: {html.escape(r['data'])}"
                + (f"<br><b>Why</b>: {html.escape(why)}" if why else "") + "</div></details></td>"
                f"<td>{badge_html(rec['verdict'])}</td>"
                f'<td><span class="one-line" title="{html.escape(why)}">{html.escape(why)}</span></td>'
                f'<td><a href="{html.escape(href)}">{html.escape(PAGES[r["page"]])}</a> · {code}</td></tr>')

    numbered = list(enumerate(rows, start=1))
    paper = [(i, r) for i, r in numbered if r["kind"] == PAPER]
    ours = [(i, r) for i, r in numbered if r["kind"] == OURS]
    return (f"<p><b>Claims of the paper</b> ({len(paper)}):</p>{head}{''.join(tr(i, r) for i, r in paper)}</tbody></table>"
            f"<p><b>Questions of ours</b> ({len(ours)}; the paper does not ask them, so they carry no verdict):</p>"
            f"{head}{''.join(tr(i, r) for i, r in ours)}</tbody></table>")


def verdict_definitions_html() -> str:
    """The verdict words and what each means (:data:`companion.claims.VERDICTS`), as a list."""
    from . import QUESTION

    items = [f"<li>{badge_html(v)} {html.escape(d)}</li>" for v, d in VERDICTS.items()]
    items.append(f"<li>{badge_html(QUESTION)} a question of ours that the paper does not ask: the row reports what "
                 "we measure, with no verdict, and it is counted apart from the paper's claims</li>")
    return "<ul>" + "".join(items) + "</ul>"
