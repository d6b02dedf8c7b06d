"""ICA maximum likelihood (issue 17): could the compiled L-BFGS stop earlier?

The fit (``cnce._fused.ica_mle_all``) stops when the relative loss decrease stays below
``ftol = 1e-14`` for 5 iterations; it takes a median 200-340 iterations. The CNCE and NCE fits of
ICA stop at the statistical threshold ``FitOptions.stat_ftol * n_params / N`` instead. This
runs that threshold (and one ten times smaller, and patience 3) against the default on the
same problems, alternating in one process, one thread: time and iterations per simulation,
the largest change in loss, the largest relative change of a simulation's squared error and
the relative change of the median squared error.

    python benchmarks/ica_mle_stop.py [S] [N,N,...] [OUT_JSON]
"""
from run import machine_info  # benchmarks/run.py; first: it sets one BLAS/OpenMP thread before numpy loads

import json
import sys
import time

import numpy as np
import torch

from cnce import _fused
from cnce.models import ICA

S = int(sys.argv[1]) if len(sys.argv) > 1 else 50
NS = [int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "1000,5000,20000").split(",")]
OUT = sys.argv[3] if len(sys.argv) > 3 else "benchmarks/results/ica-mle-stop.json"
model = ICA()
a = float(model.abs_projection_coef)
P = model.n_params
rows = []
for N in NS:
    g = torch.Generator().manual_seed(7)
    th, th0 = model.random_params(S, g), model.init_params(S, g)
    X = model.sample(th, N, g).numpy()
    P0 = model.to_free(th0).numpy()
    variants = {"default (ftol 1e-14, patience 5)": {},
                "stat_ftol 1e-5, patience 5": dict(ftol=1e-5 * P / N),
                "stat_ftol 1e-5, patience 3": dict(ftol=1e-5 * P / N, patience=3),
                "stat_ftol 1e-6, patience 5": dict(ftol=1e-6 * P / N)}
    times = {k: [] for k in variants}
    outs = {}
    for rep in range(2):
        for k, kw in variants.items():
            t0 = time.perf_counter()
            outs[k] = _fused.ica_mle_all(X, P0, a=a, threads=1, **kw)
            times[k].append(time.perf_counter() - t0)
    ref = outs["default (ftol 1e-14, patience 5)"]
    err_ref = model.error(model.from_free(torch.tensor(ref["psi"])), th).numpy()
    for k in variants:
        o = outs[k]
        err = model.error(model.from_free(torch.tensor(o["psi"])), th).numpy()
        r = dict(N=N, S=S, variant=k, ms_per_sim=min(times[k]) / S * 1e3, iterations_median=float(np.median(o["n_iter"])),
                 converged=int(o["converged"].sum()), loss_minus_default_max=float((o["loss"] - ref["loss"]).max()),
                 sq_error_max_rel_change=float(np.max(np.abs(err - err_ref) / err_ref)),
                 median_sq_error_rel_change=float(abs(np.median(err) - np.median(err_ref)) / np.median(err_ref)))
        rows.append(r)
        print(json.dumps(r), flush=True)
json.dump(dict(machine=machine_info(1), rows=rows), open(OUT, "w"), indent=1)
