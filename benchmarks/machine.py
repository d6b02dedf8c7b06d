"""The machine a benchmark ran on, for the result files: importing this module changes nothing.

``single_thread_env()`` is the one explicit step the benchmark scripts take before numpy and
torch load: one BLAS/OpenMP thread unless the caller's environment says otherwise (on a busy
2-core machine two threads spin-wait).
"""
from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def single_thread_env() -> None:
    """Set one BLAS/OpenMP thread where the environment does not name a count (call it first)."""
    for v in THREAD_VARIABLES:
        os.environ.setdefault(v, "1")


def git(*args) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _proc_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info(threads: int) -> dict:
    """CPU, cores, memory, load, library versions, GPU and commit, now."""
    import numpy as np
    import torch

    mem = _proc_field("/proc/meminfo", "MemTotal")
    return dict(
        date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        cpu=_proc_field("/proc/cpuinfo", "model name") or platform.processor(),
        cores=os.cpu_count(),
        memory_gib=None if mem is None else round(int(mem.split()[0]) / 2**20, 1),
        load_average=list(os.getloadavg()),
        python=platform.python_version(),
        torch=torch.__version__,
        numpy=np.__version__,
        torch_threads=threads,
        gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        git_commit=git("rev-parse", "HEAD"),
    )
