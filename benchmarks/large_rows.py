"""Memory and time of one fit on many rows: ``python -m benchmarks.large_rows --rows 1e6 1e7``.

The case of issue 44: ``Gaussian(dim=2)``, one data set of N rows, CNCE with kappa = 10 and the
heuristic's eps, on the compiled CPU backend (``compiled``; files written before the rename say ``fused``) and the torch backend. Each fit runs in
its own process, so its peak resident memory (``ru_maxrss``) is its own; the torch backend runs
twice: at the default ``memory_budget_gb`` (where one simulation's features exceed the budget,
the torch path streams the rows in chunks within it: :mod:`cnce.backends.streaming`; before
that, :func:`cnce.fit` refused such a fit) and with the budget raised so that it stores every
pair's features at once (unchunked). ``--raised-budget 0`` leaves the unchunked run out.
Writes ``benchmarks/results/large-rows<tag>.json``. Not a test: a measurement, on whatever
machine runs it (the load average is recorded beside the numbers).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
import torch
import cnce
from cnce.models import Gaussian
rows, backend, budget = int(float(sys.argv[1])), sys.argv[2], sys.argv[3]
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x = torch.randn(rows, 2, generator=g, dtype=torch.float64)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
out = {"rows": rows, "backend": backend, "budget_gb": budget, "data_mb": x.numel() * 8 / 2**20}
try:
    with cnce.option_context(**({} if budget == "default" else {"memory_budget_gb": float(budget)})):
        r = cnce.fit(Gaussian(dim=2), x, kappa=10, backend=backend, threads=1, progress=30)
    out.update(status="ok", converged=bool(r.converged), n_iter=int(r.n_iter), theta=r.theta.tolist(),
               eps=float(r.eps), row_chunk=r.info.get("row_chunk"))
except Exception as exc:
    out.update(status=type(exc).__name__, error=str(exc))
out["seconds"] = round(time.perf_counter() - t0, 2)
out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
out["rss_before_fit_mb"] = round(base / 1024, 1)
print(json.dumps(out))
"""


def run_one(rows: float, backend: str, budget: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", CHILD, str(rows), backend, budget], stdout=subprocess.PIPE, text=True,
                       env=env)  # stderr (the fit's progress line) passes through
    if p.returncode != 0:
        return {"rows": rows, "backend": backend, "budget_gb": budget, "status": "crashed",
                "returncode": p.returncode}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.large_rows", description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", default=["1e6"], help="row counts (default 1e6; the issue's case is 1e7)")
    ap.add_argument("--backends", nargs="+", default=["compiled", "torch"])
    ap.add_argument("--raised-budget", default="64", help="memory_budget_gb for the torch run that is let through")
    ap.add_argument("--tag", default="")
    args = ap.parse_args(argv)
    results = []
    for rows in args.rows:
        for backend in args.backends:
            budgets = ["default"] + ([args.raised_budget] if backend == "torch" and float(args.raised_budget) > 0 else [])
            for budget in budgets:
                r = run_one(rows, backend, budget)
                print(json.dumps(r), flush=True)
                results.append(r)
    from benchmarks.machine import ROOT, machine_info

    out = ROOT / "benchmarks" / "results" / f"large-rows{args.tag}.json"
    out.write_text(json.dumps({"suite": "large_rows", "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "load_average": os.getloadavg(), "machine": machine_info(1), "results": results},
                              indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
