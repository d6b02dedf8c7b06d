"""The book's promise that its pages can be rerun from what it ships (issue 42, item 6).

The book build writes two archives into ``_build/html/downloads/`` (``build_archives`` of the
book's extension): the sources (package, companion, notebooks, book, tests, committed results
and checks) and the committed image-model runs (``data/weights``). This test builds them as the
book does, unpacks them into an empty folder and, from that folder alone (working directory
there, ``PYTHONPATH`` pointing at it, nothing read from this checkout):

* executes one synthetic page at quick scale (``python -m companion batch 00``, the quickstart);
* loads every committed run under ``data/weights`` (each ``.pt`` and ``.json``), the image
  claims' measures that page 06 reads (``data/checks/image-claims.json``), the committed
  paper-scale tables, and the claims ledger that the claims page renders, which must be as
  current against the shipped declarations, code and inputs as it is in this checkout
  (``companion.claims.ledger.stale``); no training.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ext():
    spec = importlib.util.spec_from_file_location("cnce_book_ext_rerun", ROOT / "book" / "_ext" / "cnce_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: Run inside the unpacked tree: load every committed run and the data the claims page reads.
_LOAD_ALL = r"""
import json, sys
from pathlib import Path
import cnce
tree = Path.cwd().resolve()
assert Path(cnce.__file__).resolve().is_relative_to(tree), cnce.__file__
from cnce.images import runs
from cnce.images import claims as image_claims
from cnce.experiments import claims
assert runs.weights_dir().resolve() == tree / "data" / "weights", runs.weights_dir()
loaded = []
for f in sorted(runs.weights_dir().rglob("*")):
    rel = f.relative_to(runs.weights_dir())
    if f.name == "state.pt":
        st = runs.load_state(f.parent)
        runs.network_from_state(st)
    elif f.suffix == ".pt":
        runs.load_pt(str(rel))
    elif f.suffix == ".json":
        json.loads(f.read_text())
    else:
        continue
    loaded.append(str(rel))
measured, tables, meta = image_claims.load_measured(tree / "data" / "checks" / "image-claims.json")
results, used = claims.committed_results(0)
import companion
assert Path(companion.__file__).resolve().is_relative_to(tree), companion.__file__
from companion.claims import ledger
rows = ledger.records()  # what the claims page renders
stale = ledger.stale()  # the ledger matches the shipped declarations, code and inputs
print(json.dumps({"loaded": loaded, "measured": len(measured), "studies": sorted(results), "claims": len(rows),
                  "stale": stale}))
"""


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    """The archives as the book ships them, unpacked into an empty folder."""
    ext = _ext()
    dl = tmp_path_factory.mktemp("downloads")
    written = ext.build_archives(dl)
    assert set(written) == {ext.ARCHIVE, ext.ARCHIVE_WEIGHTS}
    dest = tmp_path_factory.mktemp("reader")
    assert not any(dest.iterdir())
    for path in written.values():
        with zipfile.ZipFile(path) as z:
            z.extractall(dest)
    return dest / ext.ARCHIVE_FOLDER, written


def _reuse_compiled_kernels(tree: Path) -> None:
    """This checkout's compiled numba kernels for the unpacked copy of the same ``_fused.py``
    (numba keys its cache by the source's time stamp; compiling afresh would cost the test about
    a minute of CPU and test nothing of the archive). A reader's first run compiles them."""
    src, dst = ROOT / "cnce" / "_fused.py", tree / "cnce" / "_fused.py"
    cache = ROOT / "cnce" / "__pycache__"
    if not cache.is_dir() or src.read_bytes() != dst.read_bytes():
        return
    (dst.parent / "__pycache__").mkdir(exist_ok=True)
    for f in cache.glob("_fused.*.nb[ci]"):
        shutil.copy2(f, dst.parent / "__pycache__" / f.name)
    st = src.stat()
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def _env(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CNCE_RESULTS_DIR")}
    env["PYTHONPATH"] = str(tree)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_the_archives_hold_every_committed_run(unpacked):
    tree, written = unpacked
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "data/weights", "data/results", "data/checks", "data/claims"],
                             capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: the committed files cannot be listed")
    missing = [f for f in tracked.stdout.split() if not (tree / f).is_file()]
    assert not missing, f"committed data that the book does not ship: {missing[:10]}"


def test_every_committed_run_loads_from_the_unpacked_archives_alone(unpacked):
    tree, _ = unpacked
    proc = subprocess.run([sys.executable, "-c", _LOAD_ALL], cwd=tree, env=_env(tree), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "paper/state.pt" in out["loaded"] and "ica/paper.pt" in out["loaded"]
    assert out["measured"] > 0 and "gaussian" in out["studies"]
    # the archives add no staleness: the unpacked ledger is as current as this checkout's
    # (whose own currency tests/test_ledger.py checks)
    from companion.claims import ledger

    assert out["claims"] > 0 and out["stale"] == ledger.stale(), (out["stale"], ledger.stale())


@pytest.mark.timeout(600)
def test_a_synthetic_page_executes_from_the_unpacked_archives_alone(unpacked, tmp_path):
    tree, _ = unpacked
    _reuse_compiled_kernels(tree)
    out = tmp_path / "batch"
    proc = subprocess.run([sys.executable, "-m", "companion", "batch", "00", "--out", str(out)], cwd=tree,
                          env=_env(tree), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    summary = json.loads((out / "summary.json").read_text())
    rows = summary if isinstance(summary, list) else summary.get("notebooks", summary.get("rows", []))
    assert rows and all(r.get("status") == "ok" for r in rows), summary
    executed = list(out.rglob("00_*.ipynb"))
    assert executed, "no executed notebook"
    # the kernel imported the unpacked package, not this checkout's
    nb = json.loads(executed[0].read_text())
    assert nb["cells"], "empty notebook"
