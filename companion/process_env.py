"""The environment that notebook kernels and other child processes run under: thread counts
(:func:`thread_env`), the goldens' and the book's settings (:data:`GOLDEN_ENV`), a stand-in for
another x86-64 CPU (:func:`generic_cpu_env`), and the one place that sets them
(:func:`deterministic_env`). The batch reruns and goldens (:mod:`companion.reruns`), the book build
(:mod:`companion.book`) and ``python -m companion compile-generic`` (:mod:`cnce.precompile`) import
them from here.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Mapping

from .paths import REPO_ROOT

__all__ = ["GOLDEN_ENV", "deterministic_env", "generic_cpu_env", "thread_env"]


def thread_env(threads: int) -> dict[str, str]:
    """The environment that gives a notebook kernel ``threads`` BLAS/OpenMP threads."""
    return {k: str(int(threads)) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


#: Environment the golden notebooks are generated and checked under, and the book is built
#: under (kernel processes inherit it): one CPU thread for reproducible floating point, no
#: GPU (device="auto" resolves to the CPU everywhere), fixed hashing, and no progress bars
#: (their timings differ between runs). Idle OpenMP threads sleep instead of spinning
#: (``OMP_WAIT_POLICY``; no effect on results): where a kernel runs on more threads than the
#: machine has free cores (the test suite's check with two threads, beside the book build and
#: another worker on two cores), spinning threads take the cores from the working ones
#: (notebook 08 measured 426 s instead of 76 s).
GOLDEN_ENV: dict[str, str] = {
    **thread_env(1),
    "PYTHONHASHSEED": "0",
    "TQDM_DISABLE": "1",
    "CUDA_VISIBLE_DEVICES": "",
    "OMP_WAIT_POLICY": "PASSIVE",
}


def generic_cpu_env(root: str | os.PathLike | None = None) -> dict[str, str]:
    """The environment that stands in for another x86-64 CPU than this one: numba compiles
    for a generic x86-64 (no AVX, no FMA) into a cache of its own (``runs/numba-cache/generic``,
    kept between runs; git ignores ``runs/``), and torch runs its baseline kernels. The golden
    notebooks are checked under it (``tests/golden/conftest.py``); ``scripts/test.sh`` compiles
    the kernels for it first (``python -m cnce compile``)."""
    root = Path(root) if root is not None else REPO_ROOT
    return {"NUMBA_CPU_NAME": "generic", "ATEN_CPU_CAPABILITY": "default",
            "NUMBA_CACHE_DIR": str(root / "runs" / "numba-cache" / "generic")}


@contextlib.contextmanager
def deterministic_env(extra: Mapping[str, str] | None = None) -> Iterator[None]:
    """Temporarily set environment variables, inherited by the processes started inside.

    This is the one place where ``cnce`` touches the process environment: notebook kernels
    (papermill, nbval, jupyter-book) run in child processes, and thread counts and hash
    seeds (:data:`GOLDEN_ENV`) reach them only through their environment. The library itself
    reads no environment variable; its settings are :class:`cnce.FitOptions`."""
    from unittest import mock

    with mock.patch.dict(os.environ, dict(extra or {})):
        yield
