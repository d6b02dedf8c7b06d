"""Results that do not depend on the CPU, the thread count or how the kernels were compiled.

* The golden notebooks pass when numba compiles for a generic x86-64 CPU (no AVX, no FMA:
  ``NUMBA_CPU_NAME=generic``, with a cache folder of its own) and torch runs its baseline
  kernels (``ATEN_CPU_CAPABILITY=default``), with two threads instead of the goldens' one.
  This stands in for a CPU other than the one that wrote the goldens. The default run checks
  generic CPU with 2 threads; ``-m slow`` adds generic with 1 thread and native with 2.
* The ICA maximum-likelihood fit, whose non-smooth loss makes L-BFGS amplify the last bit of a
  sum, ends at the same estimate bit for bit in a process that compiles the kernels afresh,
  in one that loads them from numba's cache, and on the generic CPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cnce.batch import repo_root

ROOT = repo_root()
GOLDENS = sorted(str(p) for p in (ROOT / "tests" / "golden").glob("*.ipynb"))

GENERIC_CPU = {"NUMBA_CPU_NAME": "generic", "ATEN_CPU_CAPABILITY": "default"}


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "ATEN_"))}
    env.update(extra)
    env["PYTHONHASHSEED"] = "0"
    return env


def _run_goldens(cpu: dict[str, str], threads: int, cache: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--golden-threads", str(threads),
           *GOLDENS]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env({**cpu, "NUMBA_CACHE_DIR": str(cache)}),
                          capture_output=True, text=True, timeout=3600)
    tail = "\n".join(proc.stdout.splitlines()[-60:])
    assert proc.returncode == 0, f"golden notebooks fail with {cpu or 'the native CPU'}, {threads} threads:\n{tail}"


def _cache(name: str) -> Path:
    # kept between runs (runs/ is ignored by git): a fresh clone compiles once
    path = ROOT / "runs" / "numba-cache" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_goldens_on_a_generic_cpu_with_two_threads():
    _run_goldens(GENERIC_CPU, 2, _cache("generic"))


@pytest.mark.slow
@pytest.mark.parametrize("cpu, threads", [(GENERIC_CPU, 1), ({}, 2)], ids=["generic-1-thread", "native-2-threads"])
def test_goldens_other_cpus_and_threads(cpu, threads):
    _run_goldens(cpu, threads, _cache("generic" if cpu else "native-test"))


_MLE_SCRIPT = """
import json, sys, torch
import cnce
from cnce.models import ICA
g = torch.Generator().manual_seed(3)
m = ICA()
theta = m.random_params(6, generator=g)
out = {}
for N in (100, 1000):
    x = m.sample(theta, N, generator=g)
    r = cnce.fit(m, x, method="mle", seed=1, threads=int(sys.argv[2]))
    out[N] = [r.theta.tolist(), r.n_iter.tolist()]
json.dump(out, open(sys.argv[1], "w"))
"""


def _fit_mle(tmp_path: Path, name: str, cache: Path, cpu: dict[str, str], threads: int = 1) -> dict:
    script = tmp_path / "fit_mle.py"
    script.write_text(_MLE_SCRIPT)
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, str(script), str(out), str(threads)], cwd=tmp_path,
                          env=_env({**cpu, "NUMBA_CACHE_DIR": str(cache)}), capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


class TestCompiledAfresh:
    """A class of its own: pytest-xdist's ``--dist loadscope`` (scripts/test.sh) can then run it
    on another worker than the generic-CPU golden pass of this module."""

    def test_ica_mle_same_whether_compiled_afresh_or_cached(self, tmp_path):
        cache = tmp_path / "numba-cache"  # empty: the first process compiles, the second loads
        fresh = _fit_mle(tmp_path, "fresh", cache, {})
        assert any(cache.rglob("*.nbc")), "the first process should have written numba's cache"
        warm = _fit_mle(tmp_path, "warm", cache, {}, threads=2)
        generic = _fit_mle(tmp_path, "generic", tmp_path / "generic-cache", GENERIC_CPU)
        assert fresh == warm, "a freshly compiled kernel and the cached one end at different estimates"
        assert fresh == generic, "the generic-CPU build ends at different estimates"
