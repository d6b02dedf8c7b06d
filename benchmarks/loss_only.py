"""The loss-only pass that the eps heuristic runs (``cnce._fused.loss_all``), before and after a
change to ``cnce/_fused.py``: an old copy of the module (path as the first argument, e.g. ``git show
c262aad:cnce/_fused.py > /tmp/old_fused.py``) against the current one on identical inputs, one
thread, alternating; whether the losses are bitwise equal.

    .venv/bin/python -m benchmarks.loss_only /tmp/old_fused.py [OUT_JSON]
"""
from benchmarks.machine import machine_info, single_thread_env

single_thread_env()  # before numpy loads (this module only ever runs as a command)

import importlib.util
import json
import statistics
import sys
import time

import numba
import numpy as np
import torch

from cnce import _fused as new
from cnce.models import ICA, Gaussian
from cnce.noise import draw_base

spec = importlib.util.spec_from_file_location("old_fused", sys.argv[1])
old = importlib.util.module_from_spec(spec)
sys.modules["old_fused"] = old  # numba's cache re-imports it by name
spec.loader.exec_module(old)
OUT = sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results/loss-only.json"
numba.set_num_threads(1)
rows = []
for name, model, N in (("gaussian", Gaussian(), 5000), ("gaussian", Gaussian(), 20000), ("ica", ICA(), 5000)):
    S, K = 4, 10
    g = torch.Generator().manual_seed(0)
    th = model.random_params(S, g)
    x = model.sample(th, N, g)
    base = draw_base(model, S, N, K, g)
    th0 = model.init_params(S, g)
    X, XI, T = x.numpy(), base.numpy(), model.to_free(th0).numpy()
    prm = np.full((S, 1), 0.4)
    kind, a = new.KERNELS[name], float(model.abs_projection_coef or 0.0)
    lo = old.loss_all(kind, X, XI, prm, T, a=a, threads=1)
    ln = new.loss_all(kind, X, XI, prm, T, a=a, threads=1)
    to, tn = [], []
    for _ in range(9):
        t0 = time.perf_counter()
        old.loss_all(kind, X, XI, prm, T, a=a, threads=1)
        to.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        new.loss_all(kind, X, XI, prm, T, a=a, threads=1)
        tn.append(time.perf_counter() - t0)
    mo, mn = statistics.median(to) / S * 1e3, statistics.median(tn) / S * 1e3
    r = dict(kernel=name, N=N, kappa=K, S=S, old_ms_per_sim=mo, new_ms_per_sim=mn, old_over_new=mo / mn,
             bitwise_equal=bool(np.array_equal(lo, ln)), max_rel_diff=float(np.max(np.abs(lo - ln) / np.abs(lo))))
    rows.append(r)
    print(json.dumps(r), flush=True)
json.dump(dict(machine=machine_info(1), old=sys.argv[1], rows=rows), open(OUT, "w"), indent=1)
