"""Numbers in the book's prose come from the run: :func:`glue` puts a formatted value into a
notebook page's markdown (myst-nb's ``glue``; the page writes ``{glue:text}`name```, another
page ``{glue:text}`notebooks/NN_name::name```). A key that no cell glued fails the strict
book build, so a sentence cannot keep a number that the run no longer produces.

:func:`t_interval` is the one Student-t interval that pages and results tables state;
:func:`seed_interval` the project's rule over seeds (t-interval from three seeds, the range
for two)."""
from __future__ import annotations

import math

__all__ = ["glue", "glue_verdict", "verdict_html", "badge_html", "BADGES", "t_interval", "seed_interval"]


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the mean of ``values`` (e.g. one number per seed) and its ``level``
    Student-t interval, ``mean -+ t(0.5 + level / 2, n - 1) * sd / sqrt(n)``.

    One value: ``(value, nan, nan)``: no spread can be stated, and a NaN cannot be mistaken for a
    zero-width interval. No values, or a level outside (0, 1): ``ValueError``. (With two seeds the
    project's pages state the range instead of this interval.)"""
    import numpy as np
    from scipy import stats

    if not (isinstance(level, float) and 0 < level < 1):
        raise ValueError(f"level must be a float in (0, 1); got {level!r}")
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ValueError("values must not be empty")
    m = float(v.mean())
    if v.size < 2:
        return m, math.nan, math.nan
    h = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - h, m + h


def seed_interval(values, level: float = 0.95) -> tuple[float, float, float, str]:
    """``(mean, lo, hi, kind)`` over per-seed ``values`` by the project's rule: the Student-t
    interval of :func:`t_interval` (``kind="t"``) for three or more values, the range
    ``(min, max)`` for two (``"range"``: two seeds are too few for a t-interval), NaN bounds for
    one (``"one"``). No values: ``ValueError``."""
    import numpy as np

    v = np.asarray(values, dtype=float).ravel()
    if v.size == 2:
        return float(v.mean()), float(v.min()), float(v.max()), "range"
    m, lo, hi = t_interval(v, level)
    return m, lo, hi, ("t" if v.size >= 3 else "one")


class _Text:
    """Displays as exactly ``text`` (a plain ``str`` would show its quotes)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def glue(name: str, value, fmt: str = "{}") -> str:
    """Glue ``fmt.format(value)`` (a ``str`` value as it is) under ``name``; returns the text.

    Outside a notebook, or without myst-nb, only the text is returned."""
    text = value if isinstance(value, str) else fmt.format(value)
    try:
        from myst_nb import glue as _glue
    except ImportError:  # pragma: no cover - myst-nb is pinned in the book's environment
        return text
    _glue(name, _Text(text), display=False)
    return text


# --- verdict blocks --------------------------------------------------------------------------

#: The CSS class of each verdict badge (colours in ``_static/cnce.css``); what each verdict means
#: is defined once, in the claims ledger (``companion.claims.VERDICTS``).
BADGES = {
    "reproduced": "reproduced",
    "partly reproduced": "partly",
    "not reproduced": "not-reproduced",
    "not testable here": "not-testable",
    "beyond the paper": "beyond",
}


def badge_html(verdict: str) -> str:
    """``verdict`` (a key of :data:`BADGES`) as a coloured badge: ``<span class="cnce-badge ...">``."""
    import html

    if verdict not in BADGES:
        raise ValueError(f"verdict must be one of {list(BADGES)}; got {verdict!r}")
    return f'<span class="cnce-badge cnce-badge-{BADGES[verdict]}">{html.escape(verdict)}</span>'


def verdict_html(question: str, items, note: str | None = None, title: str = "Verdict") -> str:
    """The verdict block of a results page as HTML: the question, then one line per claim with
    its badge and the deciding number. ``items``: ``(verdict, statement)`` pairs, or
    ``(verdict, statement, label)`` triples (``label`` is printed in bold before the
    statement). ``note``: an optional last line. Text is escaped; ``question`` and ``note``
    may carry simple inline HTML (``<em>``, ``<a href>``) and are not escaped."""
    import html

    lines = []
    for it in items:
        verdict, statement, *label = it
        lead = f"<strong>{html.escape(label[0])}</strong>: " if label and label[0] else ""
        lines.append(f"<li>{badge_html(verdict)} {lead}{html.escape(statement)}</li>")
    out = [f'<div class="admonition cnce-verdict"><p class="admonition-title">{html.escape(title)}</p>',
           f'<p class="cnce-question">{question}</p>', f'<ul class="cnce-verdict-items">{"".join(lines)}</ul>']
    if note:
        out.append(f'<p class="cnce-verdict-note">{note}</p>')
    out.append("</div>")
    return "".join(out)


class _Markdown(_Text):
    """Displays as ``text`` in a text/markdown output (myst-nb's ``glue:md`` renders it)."""

    def _repr_markdown_(self) -> str:
        return self.text


def glue_verdict(name: str, question: str, items, note: str | None = None, title: str = "Verdict") -> None:
    """Glue a verdict block (:func:`verdict_html`) of free ``items`` under ``name`` as Markdown.
    Returns nothing, so that a call at the end of a cell prints nothing.

    A claim's verdict is the claims ledger's, not a page's: a results page renders its block
    from the ledger with ``companion.claims.render.glue_verdict_block(page, question)`` (pages
    01-05 and 07 do). This function remains for the pages whose claims are not yet declared in
    the ledger (06, 08); it defines no claim.

    The page shows it where its markdown says (usually right under the title, so that the
    computation can stay further down)::

        ```{glue:md} verdict
        :format: myst
        ```

    The block is an ``admonition cnce-verdict`` (styled by ``_static/cnce.css``; the browser
    test ``tests/test_browser.py`` checks it is on screen within the first 900 px)."""
    text = verdict_html(question, items, note, title)
    try:
        from myst_nb import glue as _glue
    except ImportError:  # pragma: no cover
        return None
    _glue(name, _Markdown(text), display=False)
    return None
