"""A fit's progress line: shown on stderr once a fit has run a few seconds, never for short fits.

:func:`cnce.fit` opens one :class:`FitProgress` per call (``progress=True``: after
:data:`DELAY` seconds; a number: after that many seconds; ``False``: none) and hands it to the
backend in :class:`~cnce.backends.FitProblem`. The backends only *report* into it:

* the phase (``"noise"``, ``"eps"`` for the heuristic's search, ``"newton"``, ``"lbfgs"``, ...);
* how many simulations are done and how many of them converged;
* the torch path's Newton iteration and the simulations still iterating (its Python loop calls
  back once per iteration);
* the compiled kernels' passes over the data (:mod:`cnce.backends.compiled` runs the Newton
  kernels in a worker thread and :meth:`FitProgress.watch` reads the output arrays the kernels
  fill in place: reading them changes nothing in what the kernels compute).

A daemon thread draws the line (tqdm) once per second after the delay, so a backend that sits
inside one long compiled call still shows the elapsed time and its counters. Nothing is created
for a fit that ends before the delay. tqdm's ``TQDM_DISABLE`` environment (the golden notebooks'
environment sets it) silences the line as it does every other bar.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable

__all__ = ["DELAY", "FitProgress", "NO_PROGRESS", "settle"]

#: seconds a fit runs before its progress line appears (``cnce.fit(progress=True)``)
DELAY = 5.0
#: seconds between two refreshes of the line
INTERVAL = 1.0


def settle(progress) -> float | None:
    """``fit``'s ``progress`` argument as a delay in seconds (``None``: no line)."""
    from ..errors import InputError

    if progress is True:
        return DELAY
    if progress is False:
        return None
    if isinstance(progress, (int, float)) and not isinstance(progress, bool) and progress >= 0:
        return float(progress)
    raise InputError(f"progress must be True (a line after {DELAY:g} s), False (none) or a number of seconds "
                     f">= 0 after which the line appears; got {progress!r}")


class FitProgress:
    """One fit's progress line (see the module's docstring). Use as a context manager;
    :meth:`update` and :meth:`watch` may be called from any thread."""

    def __init__(self, desc: str, total: int, delay: float = DELAY, interval: float = INTERVAL):
        self.desc, self.total, self.delay, self.interval = desc, int(total), float(delay), float(interval)
        self._fields: dict = {}
        self._poll: Callable[[], dict] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar = None
        self._thread: threading.Thread | None = None
        self._t0 = time.monotonic()

    # ------------------------------------------------------------------ reporting (backends)
    def update(self, **fields) -> None:
        """Set counters: ``phase``, ``done`` (simulations finished), ``converged``,
        ``iteration``, ``active``, ``passes`` ... (later values replace earlier ones)."""
        with self._lock:
            self._fields.update(fields)

    def watch(self, poll: Callable[[], dict] | None) -> None:
        """Read ``poll()`` (a dict of counters) at each refresh; ``None`` stops reading."""
        with self._lock:
            self._poll = poll

    @property
    def shown(self) -> bool:
        """Whether the line has appeared."""
        return self._bar is not None

    # ------------------------------------------------------------------ drawing
    def __enter__(self) -> "FitProgress":
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="cnce-fit-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._bar is not None:
            self._draw()  # the final counters
            self._bar.close()

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            self._draw()
            if self._stop.wait(self.interval):
                return

    def _state(self) -> dict:
        with self._lock:
            fields, poll = dict(self._fields), self._poll
        if poll is not None:
            try:
                fields.update(poll())
            except Exception:  # a report must never break the fit
                pass
        return fields

    def _draw(self) -> None:
        fields = self._state()
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.desc, unit="sim", file=sys.stderr, leave=False,
                             mininterval=0, miniters=0)
            self._bar.start_t = time.time() - (time.monotonic() - self._t0)  # elapsed from the fit's start
        done = fields.pop("done", None)
        if done is not None:
            self._bar.n = int(done)
        self._bar.set_postfix({k: _fmt(v) for k, v in fields.items() if v is not None}, refresh=False)
        self._bar.refresh()


def _fmt(v):
    if hasattr(v, "dtype") and hasattr(v, "sum"):  # a mask (the torch path's active simulations)
        return int(v.sum())
    if isinstance(v, float):
        return f"{v:.4g}"
    return v


class _NoProgress:
    """The progress of a fit called with ``progress=False``: reports go nowhere."""

    shown = False

    def update(self, **fields) -> None:
        pass

    def watch(self, poll) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def close(self) -> None:
        pass


#: the no-op progress (``progress=False``)
NO_PROGRESS = _NoProgress()
