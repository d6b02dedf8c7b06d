"""Backends of :func:`cnce.fit`: each solves fit problems behind the same small interface.

A backend is a module with

* ``NAME``: the name :func:`cnce.fit` accepts as ``backend=`` (and reports in ``res.info``);
* ``supports(problem, options) -> str | None``: ``None`` if it can solve ``problem``
  (a :class:`~cnce.backends.problem.FitProblem`), else the reason it cannot;
* ``solve(problem, options) -> FitResult``.

:mod:`~cnce.backends.compiled` (the numba kernels of :mod:`cnce._fused`, CPU) serves the
models and methods that declare a compiled kernel; :mod:`~cnce.backends.torch` (batched
tensors, CPU or GPU) serves every problem. Both minimise the same objectives, defined
readably in :mod:`cnce.losses` (the tests check each backend against it on the same inputs).
"""
from __future__ import annotations

from . import compiled, torch as torch_backend
from .problem import FitProblem

__all__ = ["FitProblem", "BACKENDS", "choose"]

#: name -> backend module, in the order ``backend="auto"`` tries them
BACKENDS = {compiled.NAME: compiled, torch_backend.NAME: torch_backend}


def choose(problem: FitProblem, options, backend: str = "auto"):
    """The backend module that solves ``problem``: the first that supports it for ``"auto"``,
    else the named one (``ValueError`` with its reason where it does not apply)."""
    if backend == "auto":
        for mod in BACKENDS.values():
            if mod.supports(problem, options) is None:
                return mod
        raise AssertionError("the torch backend supports every problem")  # pragma: no cover
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {('auto', *BACKENDS)}; got {backend!r}")
    mod = BACKENDS[backend]
    why = mod.supports(problem, options)
    if why is not None:
        raise ValueError(f"backend={backend!r} does not apply: {why}")
    return mod
