"""How well a PCA whitening fitted on n patches whitens patches it has not seen (notebook 06).

    .venv/bin/python scripts/check_whitening.py [--out data/checks/whitening-sample.json]

For the bundled photographs, 32 x 32 patches and D = 600 (the paper's sizes), fit the whitening
(:class:`cnce.images.data.Whitener`) on n = 50,000 patches (our earlier ``paper`` run) and on
n = 400,000 (the authors' ``DataProcessor.m``), then whiten 100,000 unseen patches and report
the eigenvalues of their covariance: 1 everywhere for a perfect whitening. Seeds 0-2.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from cnce import provenance
from cnce.images.draws import Stream, stream_seed, whitener_seed
from cnce.images.train import make_source


def held_out_spectrum(src, n_fit: int, D: int, seed: int, n_test: int = 100_000) -> dict:
    src.fit_whitener(n_fit, D, whitener_seed(seed))
    U = src.draw(n_test, stream_seed(seed, 0, 0, Stream.WHITEN_CHECK)).double()
    lam = torch.linalg.eigvalsh(torch.cov(U.T)).numpy()[::-1]
    order = src.whitener.lam.numpy()
    return dict(n_fit=n_fit, seed=seed, eig_max=float(lam[0]), eig_min=float(lam[-1]),
                eig_p99=float(np.percentile(lam, 99)), eig_p1=float(np.percentile(lam, 1)),
                # held-out variance of the last 100 retained components (smallest eigenvalues of the fit)
                tail_variance=float(U[:, -100:].var(0).mean()), head_variance=float(U[:, :100].var(0).mean()),
                retained=float(src.whitener.retained), fit_lam_last=float(order[-1]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="data/checks/whitening-sample.json")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(2)
    git = provenance.git_state()  # the code this run imported (later edits do not count)
    src, desc = make_source(None, patch=32)
    rows = []
    t = time.time()
    for seed in range(args.seeds):
        for n in (50_000, 400_000):
            rows.append(held_out_spectrum(src, n, 600, seed))
            print(rows[-1], f"{time.time() - t:.0f} s", flush=True)
    res = dict(data=desc, D=600, n_test=100_000, rows=rows, git=git, seconds=round(time.time() - t, 1))
    provenance.atomic_write_text(args.out, json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
