"""Compile the CPU kernels ahead of use: ``python -m cnce compile``.

numba compiles a kernel of :mod:`cnce._fused` the first time a process calls it and caches the
machine code on disk (``cnce/__pycache__``, or ``NUMBA_CACHE_DIR``), for the CPU it compiled
for. A fresh clone has no cache, so its first fits spend minutes compiling, and processes that
start together (the book's notebook kernels, pytest-xdist workers) each compile the same
kernels at once. :func:`compile_kernels` fills the cache in one process first; the others then
load it in well under a second.
"""
from __future__ import annotations

import sys
import time

__all__ = ["compile_kernels", "kernels_cached", "announce_compile", "register"]

_announced = False


def kernels_cached() -> bool | None:
    """Whether numba's disk cache holds the compiled Newton driver of :mod:`cnce._fused` for
    the current source (``None`` where that cannot be told, e.g. another numba version)."""
    try:
        from . import _fused

        return bool(_fused._drive._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - numba's private cache API: not knowing is not an error
        return None


def announce_compile(file=None) -> None:
    """Say once per process, on stderr, that the first compiled fit compiles the kernels (numba
    writes no word of it, and a first run otherwise sits at 0 % for minutes)."""
    global _announced
    if _announced:
        return
    _announced = True
    if kernels_cached() is False:
        print("[cnce] compiling the CPU kernels for this machine (numba; about 3-4 minutes on 2 cores, once: the "
              "result is cached on disk). `python -m cnce compile` does this ahead of time.",
              file=file or sys.stderr, flush=True)


def compile_kernels(*, progress=None) -> dict[str, float]:
    """Compile every kernel into numba's cache now.

    Runs one small fit through :func:`cnce.fit` on the compiled backend for every registered
    model and every method it declares a kernel for (``compiled_kernels``): CNCE with eps
    chosen by the heuristic and with eps given, NCE, maximum likelihood. That reaches every
    compiled entry point with the argument types that real fits pass. ``progress``: a callable
    given one line per model and method. Returns the seconds per ``"model/method"`` (the first
    one carries most of the compilation: the Newton solver is shared); empty where numba is not
    installed."""
    import torch

    from . import _fused
    from .fit import NOISE_METHODS, fit
    from .models import registered

    seconds: dict[str, float] = {}
    if not _fused.available():
        return seconds
    for name, cls in sorted(registered().items()):
        for method in sorted(cls.compiled_kernels):
            g = torch.Generator().manual_seed(0)
            model = cls.build(2, g)
            x = model.sample(model.random_params(2, g), 40, generator=g).to(torch.float64)
            t0 = time.perf_counter()
            for kw in ([{"eps": "auto"}, {"eps": 0.5}] if method == "cnce" else [{}]):
                if method in NOISE_METHODS:
                    kw["kappa"] = 3
                fit(model, x, method, seed=0, threads=1, backend="compiled", max_iter=2, **kw)
            seconds[f"{name}/{method}"] = time.perf_counter() - t0
            if progress is not None:
                progress(f"{name}/{method}: {seconds[f'{name}/{method}']:.1f} s")
    return seconds


def _cmd_compile(args) -> int:
    try:
        import numba

        target = numba.config.CPU_NAME or "this CPU"
    except ImportError:
        target = "this CPU"
    t0 = time.perf_counter()
    done = compile_kernels(progress=lambda line: print(f"[compile] {line}", file=sys.stderr, flush=True))
    if not done:
        print("[compile] numba is not installed: nothing to compile", file=sys.stderr)
    else:
        print(f"[compile] {len(done)} kernels ready in numba's cache for {target} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add the ``compile`` sub-command to the ``python -m cnce`` parser."""
    p = subparsers.add_parser(
        "compile", help="compile the CPU kernels into numba's cache now (a fresh clone otherwise compiles them "
                        "during its first fits, in every process that starts before the cache exists)")
    p.set_defaults(func=_cmd_compile)
