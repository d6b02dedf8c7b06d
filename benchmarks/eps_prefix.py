"""The eps heuristic decided on a prefix of the data (``FitOptions.eps_prefix``) against the
authors' rule on all points, in one process on the compiled loss, one thread: how many
simulations end at a different eps, how many J evaluations on the prefix and on all points
it takes, and the time per simulation.

    .venv/bin/python -m benchmarks.eps_prefix [REPEATS] [OUT_JSON]
"""
import json
import statistics
import sys
import time

import numpy as np
import torch

from cnce import _fused
from cnce.eps import choose_eps
from cnce.models import ICA, Gaussian
from cnce.options import FitOptions
from benchmarks.common import heuristic_case
from benchmarks.machine import machine_info

REP = int(sys.argv[1]) if len(sys.argv) > 1 else 5
OUT = sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results/eps-prefix.json"
VARIANTS = [(1, 0.0), (16, 0.0), (16, 2.0), (16, 4.0), (4, 4.0)]  # (eps_prefix, eps_margin)
machine = machine_info(1)
rows = []
cases = [(Gaussian(), _fused.GAUSSIAN, 100, N, 10) for N in (1000, 5000, 20000)] + [(ICA(), _fused.ICA, 20, 5000, 10)]
for model, kind, S, N, K in cases:
    x, base, X, XI, P0, a = heuristic_case(model, S, N, K)
    pairs = {}

    def J(e, sims, n_data=None):
        n = N if n_data is None else n_data
        key = "all" if n == N else "prefix"
        pairs[key] = pairs.get(key, 0) + len(sims)
        e_all = np.zeros(S)
        e_all[sims.numpy()] = e.numpy()
        return torch.from_numpy(_fused.loss_all(kind, X, XI, e_all[:, None], P0, a=a, threads=1, sims=sims.numpy(),
                                                n_data=n_data))

    def heuristic(pf, mg):
        prefix, margin = FitOptions(eps_prefix=pf, eps_margin=mg).eps_prefix_settings(N, K)
        return choose_eps(J, x, active_only=True, prefix=prefix, margin=margin)

    ref = heuristic(1, 0.0)
    times = {v: [] for v in VARIANTS}
    out = {}
    for v in VARIANTS:
        pairs.clear()
        e = heuristic(*v)
        out[v] = dict(eps_prefix=v[0], eps_margin=v[1], differ=int((e != ref).sum()),
                      evaluations_all=pairs.get("all", 0), evaluations_prefix=pairs.get("prefix", 0))
    for _ in range(REP):  # alternating, so that every variant sees the same load
        for v in VARIANTS:
            t0 = time.perf_counter()
            heuristic(*v)
            times[v].append(time.perf_counter() - t0)
    for v in VARIANTS:
        out[v]["ms_per_sim"] = statistics.median(times[v]) / S * 1e3
        out[v]["speedup_vs_all_points"] = statistics.median(times[VARIANTS[0]]) / statistics.median(times[v])
    row = dict(model=type(model).__name__, S=S, N=N, kappa=K, variants=list(out.values()))
    rows.append(row)
    print(json.dumps(row), flush=True)
json.dump(dict(machine=machine, repeats=REP, rows=rows), open(OUT, "w"), indent=1)
