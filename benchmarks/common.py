"""What the benchmark suites share: timing, the test problems, the command line and the result
file. Importing it loads numpy and torch: a suite run as a command calls
:func:`benchmarks.machine.single_thread_env` before it imports this module.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch

from benchmarks.machine import ROOT, machine_info
from cnce.noise import draw_base

#: where every suite writes ``<suite><tag>.json`` (rendered by :mod:`companion.speed`)
RESULTS = ROOT / "benchmarks" / "results"


def median(xs):
    return float(statistics.median(xs))


def timed(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return ts, out


def problem(model, S, N, kappa, seed=0):
    g = torch.Generator().manual_seed(seed)
    th = model.random_params(S, g)
    th0 = model.init_params(S, g)
    x = model.sample(th, N, g)
    base = draw_base(model, S, N, kappa, g)
    return th, th0, x, base


def heuristic_case(model, S, N, kappa, seed=0):
    """Data, torch noise base and start of an eps-heuristic benchmark, with the numpy views the
    compiled loss takes: ``x, base, X, XI, P0, a``."""
    g = torch.Generator().manual_seed(seed)
    x = model.sample(model.random_params(S, g), N, generator=g)
    base = draw_base(model, S, N, kappa, generator=g)
    psi0 = model.to_free(model.init_params(S, g))
    return x, base, x.numpy(), base.numpy(), psi0.numpy(), float(model.abs_projection_coef or 0.0)


def softplus(z):
    return np.logaddexp(0.0, z)


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def parser(doc: str) -> argparse.ArgumentParser:
    """A suite's command line, with the options every suite takes."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1, help="torch threads (and the threads the suite's runs get)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tag", default="", help="suffix of the result file")
    return p


def add_problem_arguments(p: argparse.ArgumentParser) -> None:
    """Options of the suites that compare ``cnce.fit`` with a per-simulation scipy loop."""
    p.add_argument("--sims", type=int, default=100)
    p.add_argument("--kappa", type=int, default=10)
    p.add_argument("--naive-sims", type=int, default=20,
                   help="simulations the scipy loop runs (time per simulation is compared; errors on these)")


def run_suite(name: str, bench, p: argparse.ArgumentParser, argv=None) -> None:
    """Parse the options, run ``bench(args)`` and write ``RESULTS/<name><tag>.json`` with the
    machine, the settings, the results, the load average at the end and the seconds taken."""
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    info = machine_info(args.threads)
    print("machine:", json.dumps(info), flush=True)
    t0 = time.perf_counter()
    res = bench(args)
    write(name + args.tag, dict(machine=info, settings=dict(vars(args)), results=res,
                                load_average_end=list(os.getloadavg()), seconds=time.perf_counter() - t0))


def write(name, payload):
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
