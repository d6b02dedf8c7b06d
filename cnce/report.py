"""Numbers in the book's prose come from the run: :func:`glue` puts a formatted value into a
notebook page's markdown (myst-nb's ``glue``; the page writes ``{glue:text}`name```, another
page ``{glue:text}`notebooks/NN_name::name```). A key that no cell glued fails the strict
book build, so a sentence cannot keep a number that the run no longer produces.

:func:`t_interval` is the one Student-t interval that pages and results tables state;
:func:`seed_interval` the project's rule over seeds (t-interval from three seeds, the range
for two)."""
from __future__ import annotations

import math

__all__ = ["glue", "badge_html", "BADGES", "t_interval", "seed_interval"]


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
