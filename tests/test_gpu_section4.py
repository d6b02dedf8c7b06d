"""The one-call GPU script of Section 4 (scripts/gpu_section4.py), run on the CPU at tiny sizes."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def _photo_folder(path: Path) -> Path:
    """Three small greyscale photographs (crops of scikit-image's) as PNG files."""
    import skimage.data
    import skimage.io

    path.mkdir()
    for name in ("camera", "moon", "coins"):
        img = getattr(skimage.data, name)()
        skimage.io.imsave(path / f"{name}.png", np.ascontiguousarray(img[:200, :200]), check_contrast=False)
    return path


# the whole queue at smoke size takes about a minute of one core: the test command's budget cannot
# hold it (the script runs only when a GPU is lent); `scripts/test.sh -m slow` runs it
@pytest.mark.slow
def test_gpu_script_runs_its_queue_packs_at_most_eight_files_and_resumes(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "scripts" / "gpu_section4.py"), "--out", str(out), "--work", str(work),
           "--budget", "900", "--device", "cpu", "--scale", "smoke", "--images", str(_photo_folder(tmp_path / "photos")),
           "--workers", "2", "--commit", "test"]
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, timeout=900)
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and {"results.json", "log.txt", "runs-1.tar"} <= set(files)
    res = json.loads((out / "results.json").read_text())
    assert set(res["jobs"]) == {"shown/s2", "photos/s0", "photos/s1", "photos/s2", "pca/50k/s0", "pca/400k/s0",
                                "pca/50k/s1", "pca/400k/s1", "d2/s1", "d2/s2"}
    call = res["calls"][0]
    assert call["commit"] == "test" and len(call["driver_hash"]) == 64 and len(call["source_hash"]) == 64
    rec = res["runs"]["pca/50k/s0"]["history"]["1"][-1]
    assert {"train_loss", "loss_fresh_noise", "loss_unseen", "oriented", "eps"} <= set(rec)
    sess = res["runs"]["photos/s1"]["sessions"][0]
    assert sess["git_commit"] == "test" and sess["driver"]["path"] == "scripts/gpu_section4.py"
    members = {}
    for t in out.glob("runs-*.tar"):
        with tarfile.open(t) as tar:
            members.update({m.name: t for m in tar.getmembers()})
    assert {"shown-s2/state.pt", "photos-s0/state.pt", "pca-400k-s1/state.pt", "d2-s2.pt"} <= set(members)
    with tarfile.open(members["photos-s0/state.pt"]) as tar:
        st = torch.load(tar.extractfile("photos-s0/state.pt"), weights_only=False)
    assert st["config"]["l3_centre"] == "sample" and st["data"].startswith("photo pack")
    assert all(len(st["history"][str(L)]) == n for L, n in zip((1, 2, 3, 4), st["config"]["meta_iters"]))
    with tarfile.open(members["d2-s2.pt"]) as tar:
        d2 = torch.load(tar.extractfile("d2-s2.pt"), weights_only=False)
    assert set(d2["snapshots"]) == {"cnce", "nce-reset", "nce"} and "whitener" in d2
    assert len(d2["snapshots"]["cnce"]) == d2["config"]["meta_iters"][0] + 1  # the start and every meta-iteration
    # a second call on the same work folder finds every job done and changes nothing: the same
    # records of every run and job (not only the same names) and the same saved states, byte for byte
    import hashlib

    def states():
        """Each saved file's content hash and modification time: a job retrained deterministically
        would write the same bytes, but not at the same time."""
        return {p.relative_to(work).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
                for p in sorted((work / "runs").rglob("*")) if p.is_file()}

    before, saved = json.loads((out / "results.json").read_text()), states()
    assert saved and before["runs"] and before["jobs"]  # something to compare
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, timeout=600)
    after = json.loads((out / "results.json").read_text())
    assert after["runs"] == before["runs"] and after["jobs"] == before["jobs"]
    assert states() == saved
    # the l3-input round retrains layers 3-4 of the finished runs with the other layer-3 input
    subprocess.run(cmd + ["--round", "l3-input"], check=True, env=env, cwd=ROOT, timeout=600)
    res = json.loads((out / "results.json").read_text())
    assert {"l3/pack-ensemble/s0", "l3/pack-ensemble/s2", "l3/bundled-sample/s2"} <= set(res["jobs"])
    st = torch.load(work / "runs" / "l3-bundled-sample-s2" / "state.pt", weights_only=False)
    parent = torch.load(work / "runs" / "shown-s2" / "state.pt", weights_only=False)
    assert st["config"]["l3_centre"] == "sample" and st["branched_from"]["run"] == "runs/shown-s2"
    assert torch.equal(st["network"]["W1"], parent["network"]["W1"]) and not torch.equal(st["network"]["W3"], parent["network"]["W3"])
    assert all(len(st["history"][str(L)]) == n for L, n in zip((1, 2, 3, 4), st["config"]["meta_iters"]))
