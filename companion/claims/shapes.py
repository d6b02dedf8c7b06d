"""Two rule shapes that several claims share, as functions a declaration's ``compute`` calls.

* :func:`parts_verdict`: a statement with several parts that must all hold (Gabor-like =
  localised AND oriented AND band-pass; layer 2 pools by position AND orientation AND
  frequency);
* :func:`existence_verdict`: a statement about one unit the paper shows ("a fourth-layer unit
  is a corner detector"), tested as existence: at least one unit like it beyond what a null
  (shuffled or random network) gives, with the share of such units reported beside it.

Each returns ``(verdict, why)``, as the rules of :mod:`companion.claims.synthetic` do; their
known-answer tests are in ``tests/test_ledger.py``.
"""
from __future__ import annotations

__all__ = ["parts_verdict", "existence_verdict"]


def parts_verdict(parts: dict) -> tuple[str, str]:
    """``parts``: part name -> that part's verdict (a word of :data:`companion.claims.VERDICTS`).
    "reproduced": every part reproduced; "not testable here": no part testable; "not
    reproduced": no tested part reproduced or partly; "partly reproduced": otherwise. The why
    names the parts that fall short."""
    if not parts:
        raise ValueError("parts must name at least one part")
    tested = {k: v for k, v in parts.items() if v != "not testable here"}
    short = [k for k, v in parts.items() if v != "reproduced"]
    if not tested:
        return "not testable here", "no part can be tested: " + ", ".join(parts)
    if not short:
        return "reproduced", ""
    if not any(v in ("reproduced", "partly reproduced") for v in tested.values()):
        return "not reproduced", "no part holds: " + ", ".join(f"{k} {v}" for k, v in parts.items())
    return "partly reproduced", "not every part holds: " + ", ".join(f"{k} {parts[k]}" for k in short)


def existence_verdict(count: int, null_count: float, *, p_value: float | None = None, alpha: float = 0.05,
                      testable: bool = True, reason: str = "") -> tuple[str, str]:
    """A statement about one shown unit, tested as existence. ``count``: units like it in the
    learned network; ``null_count``: the count the null gives (e.g. its 95 % quantile);
    ``p_value``: the probability under the null of at least ``count`` (when known);
    ``testable``: ``False`` when the measure's positive control fails (``reason`` says why).
    "reproduced": at least one unit, more than the null (and ``p_value`` below ``alpha`` when
    given); "partly reproduced": some units, but not beyond the null; "not reproduced": none;
    "not testable here": the measure cannot certify. The share of such units belongs in the
    record's ``numbers["share"]`` beside the verdict."""
    if not testable:
        return "not testable here", reason or "the measure's positive control fails"
    if count < 1:
        return "not reproduced", "no unit like the one shown"
    beyond = count > null_count and (p_value is None or p_value < alpha)
    if beyond:
        return "reproduced", ""
    return "partly reproduced", f"{count} such units, not more than the null gives ({null_count:g})"
