"""Tiny image-model runs with each optimiser (L-BFGS, their CG, Adam), all four layers, saved
for a bitwise comparison between two trees (a refactoring of the trainer must not move a bit):

    PYTHONPATH=<old tree> python benchmarks/image_train_bitwise.py run /tmp/old.pt
    PYTHONPATH=.          python benchmarks/image_train_bitwise.py run /tmp/new.pt
    python benchmarks/image_train_bitwise.py compare /tmp/old.pt /tmp/new.pt

``run`` imports whatever ``cnce`` the path gives (so an old tree runs its own trainer).
"""
import sys
import tempfile
from dataclasses import replace

import numpy as np
import torch


def _source():
    from cnce.images.data import PatchSource

    rng = np.random.default_rng(0)
    imgs = [np.cumsum(np.cumsum(rng.standard_normal((60, 60)), 0), 1) for _ in range(2)]
    return PatchSource([(im - im.mean()) / im.std() for im in imgs], size=8)


def run(path):
    from cnce.images.configs import get_config
    from cnce.images.train import train

    out = {}
    for opt in ("lbfgs", "cg", "adam"):
        base = dict(name="tiny", D=40, K1=10, K2=8, D3=6, K3=5, K4=3, n_whiten=800, patch=8, eps_n=100,
                    n_patches=(200, 200, 200, 200), main_set=(400, 400, 200, 200), epoch=(2, 2, 2, 2),
                    meta_iters=(2, 1, 1, 1), steps=3, chunk=64, compare_K1=4, optimizer=opt)
        if opt == "adam":
            base["main_set"] = None
        with tempfile.TemporaryDirectory() as d:
            st = train(replace(get_config("smoke"), **base), out=d, source=_source(), progress=False, device="cpu")
        out[opt] = {"network": st["network"], "whitener": st["whitener"],
                    "eps": {L: [r["eps"] for r in h] for L, h in st["history"].items()},
                    "loss": {L: [r["loss"] for r in h] for L, h in st["history"].items()}}
    torch.save(out, path)


def compare(pa, pb) -> bool:
    a, b = torch.load(pa), torch.load(pb)
    same = True
    for opt in a:
        net = a[opt]["network"].keys() == b[opt]["network"].keys() and all(
            torch.equal(a[opt]["network"][k], b[opt]["network"][k]) for k in a[opt]["network"])
        hist = a[opt]["eps"] == b[opt]["eps"] and a[opt]["loss"] == b[opt]["loss"]
        print(f"{opt}: network bitwise equal {net}, eps and losses equal {hist}")
        same &= net and hist
    return same


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2])
    else:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
