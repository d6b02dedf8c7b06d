"""Numbers in the book's prose come from the run: :func:`glue` puts a formatted value into a
notebook page's markdown (myst-nb's ``glue``; the page writes ``{glue:text}`name```, another
page ``{glue:text}`notebooks/NN_name::name```). A key that no cell glued fails the strict
book build, so a sentence cannot keep a number that the run no longer produces.

:func:`t_interval` is the one Student-t interval that pages and results tables state;
:func:`seed_interval` the project's rule over seeds (t-interval from three seeds, the range
for two)."""
from __future__ import annotations

import math

__all__ = ["glue", "badge_html", "BADGES", "t_interval", "seed_interval", "SeedInterval"]


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


class SeedInterval(tuple):
    """The interval over seeds of :func:`seed_interval`: the tuple ``(mean, lo, hi, kind)``
    (``kind``: ``"t"`` for three or more values, ``"range"`` for two, ``"one"``, ``"none"`` for
    no values), with the ``level`` and the number of values ``n``."""

    def __new__(cls, mean: float, lo: float, hi: float, kind: str, *, level: float = 0.95, n: int = 0):
        self = super().__new__(cls, (mean, lo, hi, kind))
        self.level, self.n = level, n
        return self

    mean = property(lambda self: self[0])
    lo = property(lambda self: self[1])
    hi = property(lambda self: self[2])
    kind = property(lambda self: self[3])

    @property
    def ci(self) -> tuple[float, float]:
        """``(lo, hi)``; ``(mean, mean)`` for one value (a point, stated with :attr:`rule`)."""
        return (self.mean, self.mean) if self.kind == "one" else (self.lo, self.hi)

    @property
    def rule(self) -> str:
        """The rule in words, as results tables state it."""
        if self.kind == "t":
            return f"{round(100 * self.level)} % t-interval over {self.n} seeds, {self.n - 1} degrees of freedom"
        return {"range": "range of 2 seeds", "one": "one seed: no interval over seeds", "none": "no seeds"}[self.kind]


def seed_interval(values, level: float = 0.95, *, share: bool = False, empty: bool = False) -> SeedInterval:
    """``(mean, lo, hi, kind)`` over per-seed ``values`` by the project's rule, the one interval
    over seeds of the library: the Student-t interval of :func:`t_interval` (``kind="t"``) for
    three or more values, the range ``(min, max)`` for two (``"range"``: two seeds are too few
    for a t-interval), NaN bounds for one (``"one"``). ``share``: the values are shares, the
    bounds clipped to ``[0, 1]``. No values: ``ValueError``, or with ``empty`` NaN and
    ``"none"``. The result also states its rule in words (:attr:`SeedInterval.rule`)."""
    import numpy as np

    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 and empty:
        return SeedInterval(math.nan, math.nan, math.nan, "none", level=level)
    if v.size == 2:
        m, lo, hi, kind = float(v.mean()), float(v.min()), float(v.max()), "range"
    else:
        m, lo, hi = t_interval(v, level)
        kind = "t" if v.size >= 3 else "one"
    if share and kind != "one":
        lo, hi = max(0.0, lo), min(1.0, hi)
    return SeedInterval(m, lo, hi, kind, level=level, n=int(v.size))


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
