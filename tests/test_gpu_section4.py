"""The one-call GPU script of Section 4 (scripts/gpu_section4.py), run on the CPU at tiny sizes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_gpu_script_runs_its_queue_and_packs_at_most_eight_files(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(ROOT / "scripts" / "gpu_section4.py"), "--out", str(out), "--work", str(work),
           "--budget", "900", "--device", "cpu", "--bases", "smoke", "smoke", "--ica-n", "2000", "--ica-iters", "20",
           "--workers", "2", "--seeds", "2", "--commit", "test"]
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, timeout=1500)
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and {"results.json", "ablation-paper.pt", "ablation-demo.pt", "ica.pt", "d2.pt"} <= set(files)
    res = json.loads((out / "results.json").read_text())
    cells = {n for n in res["runs"] if n.startswith("demo/")}
    assert len(cells) == 12  # 3 optimisers x 2 schedules x 2 seeds
    rec = res["runs"]["demo/cg-main/s0"]["history"]["1"][-1]
    assert {"train_loss", "loss_fresh_noise", "loss_unseen", "oriented", "eps", "line_searches"} <= set(rec)
    assert all(s["git_commit"] == "test" for s in res["runs"]["demo/cg-main/s0"]["sessions"])
    abl = torch.load(out / "ablation-demo.pt", weights_only=False)
    assert len(abl["W1"]) == 12 and "s0" in abl["whitener"]
    # a second call on the same work folder finds every job done and changes nothing
    before = (out / "results.json").read_text()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, timeout=600)
    assert json.loads((out / "results.json").read_text())["runs"].keys() == json.loads(before)["runs"].keys()
