"""Backends of :func:`cnce.fit`: each solves fit problems behind the same small interface.

A backend is a module with

* ``NAME``: the name :func:`cnce.fit` accepts as ``backend=`` (and reports in ``res.info``);
* ``supports(model, method, noise, device, dtype, form) -> str | None``: ``None`` if it can
  solve such a fit in the formulation ``form`` (:func:`~cnce.backends.plan.formulation`), else
  the reason it cannot;
* ``solve(problem) -> FitResult``: ``problem`` is a :class:`~cnce.backends.problem.FitProblem`,
  settled by :func:`cnce.fit` (:mod:`cnce.backends.plan`); the backend only reads it.

:mod:`~cnce.backends.compiled` (the numba kernels of :mod:`cnce._fused`, CPU) serves the
models and methods that declare a compiled kernel; :mod:`~cnce.backends.torch` (batched
tensors, CPU or GPU) serves every problem. Both minimise the same objectives, defined
readably in :mod:`cnce.losses` (the tests check each backend against it on the same inputs).
"""
from __future__ import annotations

from . import compiled, plan, torch as torch_backend
from .problem import FitProblem
from ..errors import InputError

__all__ = ["FitProblem", "BACKENDS", "RENAMED", "backend_name", "choose", "plan"]

#: name -> backend module, in the order ``backend="auto"`` tries them
BACKENDS = {compiled.NAME: compiled, torch_backend.NAME: torch_backend}
#: earlier names still accepted, with a ``DeprecationWarning``: the compiled backend was
#: ``"fused"`` (its kernels live in :mod:`cnce._fused`, a module name kept because renaming the
#: file would invalidate numba's cache of compiled kernels).
RENAMED = {"fused": compiled.NAME}


def backend_name(backend):
    """``backend`` with an earlier name (:data:`RENAMED`) replaced by the current one, warning."""
    if isinstance(backend, str) and backend in RENAMED:
        import warnings

        warnings.warn(f"backend={backend!r} is now called backend={RENAMED[backend]!r}", DeprecationWarning, stacklevel=3)
        return RENAMED[backend]
    return backend


def choose(model, method, noise, device, dtype, form: str, backend: str = "auto"):
    """The backend module that solves the fit in the formulation ``form``: the first that
    supports it for ``"auto"``, else the named one (``ValueError`` with its reason where it
    does not apply)."""
    args = (model, method, noise, device, dtype, form)
    if backend == "auto":
        for mod in BACKENDS.values():
            if mod.supports(*args) is None:
                return mod
        raise AssertionError("the torch backend supports every problem")  # pragma: no cover
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {('auto', *BACKENDS)}; got {backend!r}")
    mod = BACKENDS[backend]
    why = mod.supports(*args)
    if why is not None:
        raise InputError(f"backend={backend!r} does not apply: {why}")
    return mod
