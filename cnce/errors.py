"""The errors ``cnce`` raises on purpose, in three families.

* :class:`InputError` / :class:`InputTypeError` -- an argument the caller gave is wrong (a value
  out of range, a type that is not accepted). They subclass :class:`ValueError` /
  :class:`TypeError`, so ``except ValueError`` keeps working; :class:`InputDtypeError` (data of a
  refused type or dtype) is both. The message names the argument,
  the value (or its type) and what is accepted. The command line exits 2 on them.
* :class:`ResultsError` -- stored results cannot be used as they are: a corrupt or truncated
  table (:class:`CorruptResultsError`), a table of another scale than asked
  (:class:`WrongScaleError`), a table without its provenance record
  (:class:`MissingProvenanceError`), cells not stored yet (:class:`IncompleteResultsError`). The message names the file and what to do.
* :class:`RunError` -- a run could not finish: interrupted (:class:`RunInterrupted`), no space
  left or a folder that cannot be written (:class:`StorageError`), a run that would record
  results from uncommitted code (:class:`DirtyTreeError`), training that diverged
  (:class:`TrainingError`). What finished before is kept.

The command line prints one ``error:`` line and exits 2 for input errors and 1 for results and
run errors; anything else is a bug and shows its traceback. Every class here derives from
:class:`CnceError`.
"""
from __future__ import annotations

__all__ = ["CnceError", "InputError", "InputTypeError", "InputDtypeError", "ResultsError", "CorruptResultsError", "WrongScaleError",
           "MissingProvenanceError", "IncompleteResultsError", "RunError", "RunInterrupted", "StorageError", "DirtyTreeError", "TrainingError",
           "exit_code"]


class CnceError(Exception):
    """Base of every error ``cnce`` raises on purpose."""


# ---------------------------------------------------------------------------------- input
class InputError(CnceError, ValueError):
    """An argument's value is not accepted (the message names the argument, value and what is accepted)."""


class InputTypeError(CnceError, TypeError):
    """An argument's type is not accepted (the message names the argument, its type and what is accepted)."""


class InputDtypeError(InputTypeError, ValueError):
    """Data of a type or dtype that is not accepted (strings, objects, complex numbers, booleans for a
    continuous model, ...). A ``TypeError``, and also a ``ValueError`` because these were
    ``ValueError`` before the hierarchy existed (as numpy's ``AxisError`` is both)."""


# -------------------------------------------------------------------------------- results
class ResultsError(CnceError):
    """Stored results cannot be used as they are (the message names the file and what to do)."""


class CorruptResultsError(ResultsError, ValueError):
    """A results or provenance file exists but cannot be read as a valid table (truncated rows included)."""


class WrongScaleError(ResultsError):
    """A results folder holds another scale (or seed) than the run asked for."""


class MissingProvenanceError(ResultsError):
    """A results table has no provenance record beside it."""


class IncompleteResultsError(ResultsError, ValueError):
    """Cells a caller asked for are not stored (yet); the message says which and how to compute
    them. A ``ValueError`` too, as it was before the hierarchy existed."""


# ------------------------------------------------------------------------------------ run
class RunError(CnceError):
    """A run could not finish; what finished before it is kept."""


class RunInterrupted(RunError):
    """The run was interrupted (Ctrl-C, SIGTERM); finished cells are stored."""


class StorageError(RunError, OSError):
    """A result could not be written: no space left, a read-only folder, or a path that is not a folder."""


class DirtyTreeError(RunError):
    """A run would record committed results from code with uncommitted changes."""


class TrainingError(RunError):
    """Training diverged or collapsed (the message names the likely cause; the last good checkpoint is kept)."""


def exit_code(exc: BaseException) -> int | None:
    """The command line's exit status for ``exc``: 2 for input errors, 1 for results and run
    errors, ``None`` for anything else (a bug: show the traceback)."""
    if isinstance(exc, (InputError, InputTypeError)):
        return 2
    if isinstance(exc, (ResultsError, RunError)):
        return 1
    return None
