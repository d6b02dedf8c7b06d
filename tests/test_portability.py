"""Results that do not depend on the CPU, the thread count or how the kernels were compiled.

* The golden notebooks pass on a generic x86-64 with two threads: that is the default nbval
  pass itself (``tests/golden/conftest.py``; the kernels compile for a generic x86-64 without
  AVX or FMA into a cache of their own, torch runs its baseline kernels), and the book build's
  notebooks (this CPU, one thread) are compared with the goldens after it
  (``tests/golden/test_book_matches_goldens.py``). ``-m slow`` adds the other two pairs here:
  generic CPU with one thread, native CPU with two.
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

from companion.process_env import generic_cpu_env
from companion.paths import REPO_ROOT

ROOT = REPO_ROOT
GOLDENS = sorted(str(p) for p in (ROOT / "tests" / "golden").glob("*.ipynb"))


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "ATEN_"))}
    env.update(extra)
    env["PYTHONHASHSEED"] = "0"
    return env


@pytest.mark.slow
@pytest.mark.parametrize("cpu, threads", [("generic", 1), ("native", 2)], ids=["generic-1-thread", "native-2-threads"])
def test_goldens_other_cpus_and_threads(cpu, threads):
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not book",
           "--golden-cpu", cpu, "--golden-threads", str(threads), *GOLDENS]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env({}), capture_output=True, text=True, timeout=3600)
    tail = "\n".join(proc.stdout.splitlines()[-60:])
    assert proc.returncode == 0, f"golden notebooks fail on the {cpu} CPU with {threads} threads:\n{tail}"


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
    """A class of its own, so that pytest-xdist's ``--dist loadscope`` (scripts/test.sh) may run
    it beside the slow tests of this module. The generic-CPU fit loads the kernels from the
    generic cache that ``scripts/test.sh`` compiles first (``python -m cnce compile --cpu
    generic``); run alone, it compiles them there."""

    def test_ica_mle_same_whether_compiled_afresh_or_cached(self, tmp_path):
        cache = tmp_path / "numba-cache"  # empty: the first process compiles, the second loads
        fresh = _fit_mle(tmp_path, "fresh", cache, {})
        assert any(cache.rglob("*.nbc")), "the first process should have written numba's cache"
        warm = _fit_mle(tmp_path, "warm", cache, {}, threads=2)
        gen = generic_cpu_env()
        generic = _fit_mle(tmp_path, "generic", Path(gen["NUMBA_CACHE_DIR"]), gen)
        assert fresh == warm, "a freshly compiled kernel and the cached one end at different estimates"
        assert fresh == generic, "the generic-CPU build ends at different estimates"
