"""One constraint system: typed validators for arguments, options and settings.

A constraint says what a value must be (``Integer(lo=1)``, ``Real(lo=0)``, ``Real(lo=0, hi=1,
lo_open=True)``, ``Boolean()``, ``OneOf("a", "b")``, any of them ``| None``) and checks it in one
place, in the spirit of ``torch.distributions.constraints`` and scikit-learn's parameter
validation: ``validate(value, constraint, name)`` returns the value or raises an error naming the
argument, the value and what is accepted, in one wording everywhere (``"<name> must be an integer
>= 1; got True"``). A value of the wrong type (a ``bool`` for a count, a string for a number)
raises :class:`InvalidArgument`, which is both :class:`~cnce.errors.InputError` (a
``ValueError``) and :class:`~cnce.errors.InputTypeError` (a ``TypeError``); a value of the right
type out of range raises :class:`~cnce.errors.InputError`.

:func:`validate_fields` checks a settings dataclass against a mapping ``field -> constraint``
(``FitOptions``, ``NewtonSettings``, ``LBFGSSettings``, ...).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from .errors import InputError, InputTypeError

__all__ = ["Constraint", "Integer", "Real", "Boolean", "OneOf", "Nullable", "InvalidArgument", "validate",
           "validate_fields", "is_integer", "is_real"]


class InvalidArgument(InputError, InputTypeError):
    """An argument of a type that is not accepted (both a ``ValueError`` and a ``TypeError``)."""


def _is_bool(v) -> bool:
    """A Python or numpy ``bool`` (numpy's is told by its type, without importing numpy)."""
    return isinstance(v, bool) or (type(v).__module__ == "numpy" and type(v).__name__ in ("bool_", "bool"))


def is_integer(v) -> bool:
    """An integer that is not a ``bool`` (Python or numpy)."""
    return isinstance(v, numbers.Integral) and not _is_bool(v)


def is_real(v) -> bool:
    """A real number that is not a ``bool`` (Python or numpy)."""
    return isinstance(v, numbers.Real) and not _is_bool(v)


class Constraint:
    """What a value must be: :meth:`type_ok` (its type), :meth:`value_ok` (its range), :attr:`want`
    (the words of the error message)."""

    want: str = "a value"

    def type_ok(self, v) -> bool:
        return True

    def value_ok(self, v) -> bool:
        return True

    def __or__(self, other):
        if other is None:
            return Nullable(self)
        return NotImplemented

    def check(self, v, name: str, *, note: str = ""):
        """``v`` if it satisfies the constraint, else the error naming ``name``."""
        msg = f"{name} must be {self.want}{note}; got {v!r}"
        if not self.type_ok(v):
            raise InvalidArgument(msg)
        if not self.value_ok(v):
            raise InputError(msg)
        return v


def _bound(lo, hi, lo_open, hi_open) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:g}" if isinstance(lo, float) else f"{'>' if lo_open else '>='} {lo}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi:g}" if isinstance(hi, float) else f"{'<' if hi_open else '<='} {hi}")
    return " and ".join(parts)


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (not a ``bool``) with optional bounds ``lo <= v <= hi``."""

    lo: int | None = None
    hi: int | None = None

    @property
    def want(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"an integer in [{self.lo}, {self.hi}]"
        b = _bound(self.lo, self.hi, False, False)
        return "an integer" + (f" {b}" if b else "")

    def type_ok(self, v) -> bool:
        return is_integer(v)

    def value_ok(self, v) -> bool:
        return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)


@dataclass(frozen=True)
class Real(Constraint):
    """A finite real number (not a ``bool``; ``nan`` and ``inf`` refused) with optional bounds,
    open or closed: ``Real(lo=0)`` is ``>= 0``, ``Real(lo=0, lo_open=True)`` is ``> 0``."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    finite: bool = True  #: ``False``: ``nan`` and ``inf`` accepted (without bounds)

    @property
    def want(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"a number in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        b = _bound(self.lo, self.hi, self.lo_open, self.hi_open)
        return ("a finite number" if self.finite else "a real number") + (f" {b}" if b else "")

    def type_ok(self, v) -> bool:
        return is_real(v)

    def value_ok(self, v) -> bool:
        if not self.finite and self.lo is None and self.hi is None:
            return True
        if not math.isfinite(v):
            return False
        if self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo):
            return False
        return self.hi is None or not (v >= self.hi if self.hi_open else v > self.hi)


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (Python or numpy; not 0 or 1)."""

    want: str = "True or False"

    def type_ok(self, v) -> bool:
        return _is_bool(v)


@dataclass(frozen=True, init=False)
class OneOf(Constraint):
    """One of the given values (compared with ``==``; a value of another type is refused)."""

    values: tuple

    def __init__(self, *values):
        object.__setattr__(self, "values", tuple(values))

    @property
    def want(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def type_ok(self, v) -> bool:
        return any(type(v) is type(c) or (isinstance(v, str) and isinstance(c, str)) for c in self.values)

    def value_ok(self, v) -> bool:
        return v in self.values


@dataclass(frozen=True)
class Nullable(Constraint):
    """``None`` or a value satisfying ``inner`` (written ``inner | None``)."""

    inner: Constraint

    @property
    def want(self) -> str:
        return self.inner.want

    def check(self, v, name: str, *, note: str = ""):
        if v is None:
            return v
        return self.inner.check(v, name, note=note + " or None")


def validate(value, constraint: Constraint, name: str, *, note: str = ""):
    """``value`` if it satisfies ``constraint``; else :class:`InvalidArgument` (wrong type) or
    :class:`~cnce.errors.InputError` (out of range) naming ``name``, the value and what is
    accepted (``note`` is added to what is accepted, e.g. ``" (0 = all points)"``)."""
    return constraint.check(value, name, note=note)


def validate_fields(obj, spec: dict[str, Constraint], *, prefix: str | None = None,
                    notes: dict[str, str] | None = None) -> None:
    """Validate the fields of ``obj`` named in ``spec``; errors name ``<prefix>.<field>``
    (``prefix``: the class name by default; ``""``: the field alone)."""
    prefix = type(obj).__name__ if prefix is None else prefix
    for field, c in spec.items():
        c.check(getattr(obj, field), f"{prefix}.{field}" if prefix else field, note=(notes or {}).get(field, ""))
