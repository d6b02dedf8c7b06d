"""The eps heuristic with and without ``active_only`` (J evaluated only for the simulations
still searching), in one process on the compiled loss, one thread: same eps, time per call,
and the number of per-simulation evaluations. Also the fit with the chosen eps, to give the
heuristic's cost as a fraction of the fit's.

    .venv/bin/python -m benchmarks.eps_active [REPEATS] [OUT_JSON]
"""
import json
import statistics
import sys
import time

import numpy as np
import torch

import cnce
from cnce import _fused
from cnce.eps import choose_eps
from cnce.models import ICA, Gaussian
from benchmarks.common import heuristic_case
from benchmarks.machine import machine_info

REP = int(sys.argv[1]) if len(sys.argv) > 1 else 5
OUT = sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results/eps-active.json"
machine = machine_info(1)
rows = []
for model, kind, S, N, K in ((Gaussian(), _fused.GAUSSIAN, 100, 5000, 10), (ICA(), _fused.ICA, 20, 5000, 10)):
    x, base, X, XI, P0, a = heuristic_case(model, S, N, K)
    counts = {"full": 0, "active_only": 0}

    def J_full(e):
        counts["full"] += e.numel()
        return torch.from_numpy(_fused.loss_all(kind, X, XI, e.numpy()[:, None], P0, a=a, threads=1))

    def J_sub(e, sims):
        counts["active_only"] += e.numel()
        e_all = np.zeros(S)
        e_all[sims.numpy()] = e.numpy()
        return torch.from_numpy(_fused.loss_all(kind, X, XI, e_all[:, None], P0, a=a, threads=1, sims=sims.numpy()))

    e1, e2 = choose_eps(J_full, x), choose_eps(J_sub, x, active_only=True)  # warm-up (compile)
    same = bool(torch.equal(e1, e2))
    n_full, n_sub = counts["full"], counts["active_only"]
    t_full, t_sub = [], []
    for _ in range(REP):
        t0 = time.perf_counter(); choose_eps(J_full, x); t_full.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); choose_eps(J_sub, x, active_only=True); t_sub.append(time.perf_counter() - t0)
    fit_t = []
    for _ in range(max(2, REP // 2)):
        t0 = time.perf_counter()
        cnce.fit(model, x, method="cnce", kappa=K, eps=e1, noise_base=base, theta0=model.from_free(torch.from_numpy(P0)), backend="compiled", threads=1)
        fit_t.append(time.perf_counter() - t0)
    mf, ms, mfit = statistics.median(t_full), statistics.median(t_sub), statistics.median(fit_t)
    row = dict(model=type(model).__name__, S=S, N=N, kappa=K, same_eps=same, evaluations_full=n_full, evaluations_active_only=n_sub,
               heuristic_full_ms_per_sim=mf / S * 1e3, heuristic_active_only_ms_per_sim=ms / S * 1e3, speedup=mf / ms,
               fit_ms_per_sim=mfit / S * 1e3, heuristic_over_fit_full=mf / mfit, heuristic_over_fit_active_only=ms / mfit)
    rows.append(row)
    print(json.dumps(row), flush=True)
json.dump(dict(machine=machine, repeats=REP, rows=rows), open(OUT, "w"), indent=1)
